//! The regression-only syntax check.
//!
//! A write is refused only when the old content parsed and the new content does not. A
//! file that was already broken, and a new file, always pass, so a broken workspace can
//! still be repaired. Checked formats: Rust (`syn::parse_file`, full syntax), TOML and
//! JSON; `Cargo.lock` is exempt; an empty Rust file is valid.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};

use sha2::{Digest, Sha256};

use super::boundaries::{ContainerKind, item_containers};
use super::delimiters::{self, Problem};
use crate::{ErrorCode, Refusal};

/// Longest offending line quoted in a refusal, in characters.
const MAX_QUOTED_CHARS: usize = 200;

/// Most changed lines quoted in a refusal.
const MAX_QUOTED_LINES: usize = 8;

/// A checked language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// `.rs`, parsed with `syn`.
    Rust,
    /// `.toml`, parsed with `toml`.
    Toml,
    /// `.json`, parsed with `serde_json`.
    Json,
}

impl Lang {
    /// The language's name as used in refusals.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Toml => "TOML",
            Lang::Json => "JSON",
        }
    }
}

/// The checked language of `path` by extension; `None` for other files and `Cargo.lock`.
pub fn checked_language(path: &Path) -> Option<Lang> {
    if path.file_name().is_some_and(|n| n == "Cargo.lock") {
        return None;
    }
    match path.extension()?.to_str()? {
        "rs" => Some(Lang::Rust),
        "toml" => Some(Lang::Toml),
        "json" => Some(Lang::Json),
        _ => None,
    }
}

/// Where and why a parse failed. `line` and `column` are 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseFailure {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// The parser's message, without any location suffix.
    pub message: String,
}

/// Parses `text` as `lang`.
pub fn check(lang: Lang, text: &str) -> Result<(), ParseFailure> {
    match lang {
        Lang::Rust => check_rust(text),
        Lang::Toml => check_toml(text),
        Lang::Json => check_json(text),
    }
}

fn check_rust(text: &str) -> Result<(), ParseFailure> {
    let result = syn::parse_file(text).map(|_| ()).map_err(|e| {
        let start = e.span().start();
        ParseFailure {
            line: start.line.max(1),
            // proc-macro2 columns are 0-based (with span-locations).
            column: start.column + 1,
            message: e.to_string(),
        }
    });
    // With span-locations, every parse adds its line table to a thread-local source map
    // that is never shrunk; no span outlives this function, so drop it.
    proc_macro2::extra::invalidate_current_thread_spans();
    result
}

fn check_toml(text: &str) -> Result<(), ParseFailure> {
    match text.parse::<toml::Table>() {
        Ok(_) => Ok(()),
        Err(e) => {
            let (line, column) = match e.span() {
                Some(span) => line_col_at(text, span.start),
                None => (1, 1),
            };
            Err(ParseFailure {
                line,
                column,
                message: e.message().trim().to_string(),
            })
        }
    }
}

fn check_json(text: &str) -> Result<(), ParseFailure> {
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Ok(_) => Ok(()),
        Err(e) => {
            let full = e.to_string();
            // serde_json appends " at line L column C"; strip it so the location is
            // stated once.
            let message = match full.rfind(" at line ") {
                Some(i) => full[..i].to_string(),
                None => full,
            };
            Err(ParseFailure {
                line: e.line().max(1),
                column: e.column().max(1),
                message,
            })
        }
    }
}

/// 1-based (line, column in characters) of byte offset `at` in `text`.
fn line_col_at(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The check itself. `old` is the current content (`None` for a new file); `new` is the
/// content about to be written. `rel` names the file in the refusal.
///
/// Errors: `PARSE_REJECTED` when `old` parsed as the file's language and `new` does not.
/// The refusal names the cause where it is: a bracket left unclosed is reported where it
/// was opened (with the closer that came before its own, if any), a stray closer where it
/// stands, an unterminated string where it starts; otherwise the parser's own location and
/// message. It always names and quotes the lines the edit changed (at most 8, each cut at a
/// character boundary after 200 characters), quotes the cause's line when it lies
/// elsewhere, says the file was NOT modified, and the hint says what to fix there.
/// Details: `path`, `language`, `line` and `column` (1-based, of the cause),
/// `changed_lines` (`[first, last]`), `parser_line`, `parser_column`.
pub fn check_edit(path: &Path, rel: &str, old: Option<&str>, new: &str) -> Result<(), Refusal> {
    let Some(lang) = checked_language(path) else {
        return Ok(());
    };
    let Some(old) = old else {
        return Ok(());
    };
    if lang == Lang::Rust && rust_edit_is_neutral(old, new) {
        return Ok(());
    }
    if !parses(lang, old) {
        return Ok(());
    }
    match check(lang, new) {
        Ok(()) => {
            remember_valid(lang, new);
            Ok(())
        }
        Err(f) => Err(reject(rel, lang, old, new, &f)),
    }
}

/// Texts recently seen to parse, keyed by language and SHA-256, so the content written by
/// one checked edit need not be parsed again as the "old" side of the next.
const VALID_CACHE: usize = 32;

type ValidCache = Mutex<VecDeque<(Lang, [u8; 32])>>;

fn valid_cache() -> &'static ValidCache {
    static CACHE: OnceLock<ValidCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(VecDeque::with_capacity(VALID_CACHE)))
}

fn key(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

fn remember_valid(lang: Lang, text: &str) {
    let k = (lang, key(text));
    let mut cache = valid_cache().lock().unwrap_or_else(PoisonError::into_inner);
    if !cache.contains(&k) {
        if cache.len() == VALID_CACHE {
            cache.pop_front();
        }
        cache.push_back(k);
    }
}

/// True when `text` parses as `lang` (answered from the cache when possible).
fn parses(lang: Lang, text: &str) -> bool {
    let k = (lang, key(text));
    if valid_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&k)
    {
        return true;
    }
    let ok = check(lang, text).is_ok();
    if ok {
        remember_valid(lang, text);
    }
    ok
}

/// True when replacing `old` by `new` cannot change whether the file parses: the edit lies
/// between two item boundaries of the innermost container holding it (the file, a module,
/// an `impl` or a `trait` body), and the old and new sections there both parse on their own
/// as that container's items. Then `new` parses exactly when `old` did, and the check passes either
/// way without parsing the whole file (see [`super::boundaries`]).
pub fn rust_edit_is_neutral(old: &str, new: &str) -> bool {
    let (start, old_end, _) = changed_region(old, new);
    let Some(containers) = item_containers(old) else {
        return false;
    };
    // The innermost item container (file or inline module body) holding the whole change.
    let Some(c) = containers
        .iter()
        .filter(|c| c.body.0 <= start && old_end <= c.body.1)
        .min_by_key(|c| c.body.1 - c.body.0)
    else {
        return false;
    };
    let b1 = c
        .bounds
        .iter()
        .rev()
        .find(|&&b| b <= start)
        .copied()
        .unwrap_or(c.body.0);
    let b2 = c
        .bounds
        .iter()
        .find(|&&b| b >= old_end)
        .copied()
        .unwrap_or(c.body.1);
    let delta = new.len() as isize - old.len() as isize;
    let n2 = (b2 as isize + delta) as usize;
    if n2 < b1 || n2 > new.len() || !new.is_char_boundary(n2) || !new.is_char_boundary(b1) {
        return false;
    }
    if (b2 - b1) * 2 > old.len() {
        // The section is most of the file: the whole-file path, whose old side is often
        // cached, is cheaper.
        return false;
    }
    let (old_mid, new_mid) = (&old[b1..b2], &new[b1..n2]);
    // Whole-file constructs that are only valid at the start of a file.
    let file_level = |s: &str| s.contains("#!") || s.contains("//!") || s.contains("/*!");
    if b1 > 0 && (file_level(old_mid) || file_level(new_mid)) {
        return false;
    }
    section_parses(c.kind, old_mid) && section_parses(c.kind, new_mid)
}

/// True when `section` parses on its own as the contents of a container of `kind`: items
/// for the file or a module, associated items inside `impl _ { … }`, trait items inside
/// `trait _ { … }`.
fn section_parses(kind: ContainerKind, section: &str) -> bool {
    let wrap = |open: &str| check_rust(&format!("{open}{section}\n}}")).is_ok();
    match kind {
        ContainerKind::File | ContainerKind::Module => check_rust(section).is_ok(),
        ContainerKind::Impl => wrap("impl _S {\n"),
        ContainerKind::Trait => wrap("trait _T {\n"),
    }
}

/// The changed region: common prefix length, and the ends of the differing parts in `old`
/// and `new` (byte offsets on character boundaries).
fn changed_region(old: &str, new: &str) -> (usize, usize, usize) {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let mut p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    while !old.is_char_boundary(p) {
        p -= 1;
    }
    let max_s = a.len().min(b.len()) - p;
    let mut s = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_s)
        .take_while(|(x, y)| x == y)
        .count();
    while !old.is_char_boundary(a.len() - s) || !new.is_char_boundary(b.len() - s) {
        s -= 1;
    }
    (p, a.len() - s, b.len() - s)
}

fn reject(rel: &str, lang: Lang, old: &str, new: &str, f: &ParseFailure) -> Refusal {
    let (start, old_end, new_end) = changed_region(old, new);
    // The changed lines of the new text (a pure deletion: the line where it happened).
    let first = line_col_at(new, start).0;
    let last = if new_end > start {
        line_col_at(new, new_end - 1).0
    } else {
        first
    };
    // Bracket analysis only when it is trustworthy: the old text's brackets paired up.
    let problem = delimiters::find(lang, old, (0, 0))
        .is_none()
        .then(|| delimiters::find(lang, new, (start, new_end)))
        .flatten()
        .map(|p| stray_quote(p, &old[start..old_end], new, (start, new_end)))
        .map(|p| {
            delimiters::opened_by_edit(lang, old, new, (start, old_end, new_end), p).unwrap_or(p)
        });
    let (cause, hint, (line, column)) = match problem {
        Some(p) => {
            let (cause, hint) = describe(new, &p);
            (cause, hint, line_col_at(new, p.at()))
        }
        None => (
            format!("line {}, column {}: {}", f.line, f.column, f.message),
            format!(
                "Fix the syntax at line {}, column {} ({}) and send the change again.",
                f.line, f.column, f.message
            ),
            (f.line, f.column),
        ),
    };
    let lines: Vec<&str> = new.lines().collect();
    let quote = |n: usize| {
        let text = lines.get(n - 1).copied().unwrap_or("");
        format!(
            "{n:>6}│ {}\n",
            cut_chars(text.trim_end_matches('\r'), MAX_QUOTED_CHARS)
        )
    };
    let mut message = format!(
        "The edit to \"{rel}\" was refused: the file was valid {} before, but the new content \
         does not parse.\nCause: {cause}.\n",
        lang.name()
    );
    message.push_str(&if first == last {
        format!("The edit changed line {first}:\n")
    } else {
        format!("The edit changed lines {first}-{last}:\n")
    });
    let shown_last = last.min(first + MAX_QUOTED_LINES - 1);
    for n in first..=shown_last {
        message.push_str(&quote(n));
    }
    if shown_last < last {
        message.push_str(&format!("   … {} more changed lines\n", last - shown_last));
    }
    if line < first || line > shown_last {
        message.push_str(&format!("The cause is at line {line}:\n"));
        message.push_str(&quote(line));
    }
    if problem.is_some() {
        message.push_str(&format!(
            "(The parser gave up at line {}, column {}: {}.)\n",
            f.line, f.column, f.message
        ));
    }
    message.push_str("The file was NOT modified.");
    Refusal::new(ErrorCode::ParseRejected, message, hint)
        .with("path", rel)
        .with("language", lang.name())
        .with("line", line)
        .with("column", column)
        .with("changed_lines", serde_json::json!([first, last]))
        .with("parser_line", f.line)
        .with("parser_column", f.column)
}

/// An unterminated string found after the edit, when the edit changed the number of `"`:
/// the lexer paired the edit's quote with a later one, so the string really starts at the
/// edit's first `"`.
fn stray_quote(p: Problem, old_part: &str, new: &str, (start, end): (usize, usize)) -> Problem {
    let quotes = |s: &str| s.matches('"').count();
    let new_part = &new[start..end];
    match p {
        Problem::Unterminated {
            at, closer: "\"", ..
        } if at >= end && quotes(old_part) % 2 != quotes(new_part) % 2 => {
            match new_part.find('"') {
                Some(i) => Problem::Unterminated {
                    what: "string literal",
                    at: start + i,
                    closer: "\"",
                },
                None => p,
            }
        }
        _ => p,
    }
}

/// The cause sentence and the hint for a bracket problem in `new`.
fn describe(new: &str, p: &Problem) -> (String, String) {
    let at = |off: usize| {
        let (l, c) = line_col_at(new, off);
        format!("line {l}, column {c}")
    };
    match *p {
        Problem::Unclosed {
            open,
            at: o,
            cut_by,
        } => {
            let close = closer_for(open);
            let cause = match cut_by {
                Some((c, where_)) => format!(
                    "unclosed `{open}` at {}; the `{c}` at {} comes before its `{close}`",
                    at(o),
                    at(where_)
                ),
                None => format!(
                    "unclosed `{open}` at {}; the text ends before its `{close}`",
                    at(o)
                ),
            };
            let hint = format!(
                "Add the missing `{close}` for the `{open}` opened at {} (or remove that `{open}`), \
                 then send the change again.",
                at(o)
            );
            (cause, hint)
        }
        Problem::OpenedByEdit { open, at: o, outer } => {
            let close = closer_for(open);
            (
                format!(
                    "unclosed `{open}` at {}, opened by this edit: the `{close}` after it now \
                     closes it, which leaves the `{open}` at {} without its `{close}`",
                    at(o),
                    at(outer)
                ),
                format!(
                    "Add the `{close}` for the `{open}` this edit opened at {} (or remove that \
                     `{open}`), then send the change again.",
                    at(o)
                ),
            )
        }
        Problem::Unexpected { close, at: o } => (
            format!(
                "unexpected `{close}` at {}: no `{}` is open there",
                at(o),
                opener_for(close)
            ),
            format!(
                "Remove the `{close}` at {} (or add the `{}` it should close), then send the \
                 change again.",
                at(o),
                opener_for(close)
            ),
        ),
        Problem::Unterminated {
            what,
            at: o,
            closer,
        } => (
            format!("unterminated {what} starting at {}", at(o)),
            format!(
                "End the {what} that starts at {} with `{closer}`, then send the change again.",
                at(o)
            ),
        ),
    }
}

fn closer_for(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

fn opener_for(close: char) -> char {
    match close {
        ')' => '(',
        ']' => '[',
        _ => '{',
    }
}

/// `s` cut after `max` characters (never inside a character), with `…` when cut.
pub fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rs() -> &'static Path {
        Path::new("src/lib.rs")
    }

    #[test]
    fn rust_regression_rejected_with_location() {
        let e = check_edit(
            rs(),
            "src/lib.rs",
            Some("fn a() {}\n"),
            "fn a() {}\nfn b( {}\n",
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::ParseRejected);
        assert!(e.message.contains("valid Rust"), "{}", e.message);
        assert!(e.message.contains("line 2"), "{}", e.message);
        assert!(e.message.contains("NOT modified"));
        assert!(e.message.contains("fn b( {}"));
        assert_eq!(e.details["line"], 2);
    }

    #[test]
    fn broken_new_and_exempt_files_pass() {
        assert!(check_edit(rs(), "x", Some("fn ("), "fn ((").is_ok());
        assert!(check_edit(rs(), "x", None, "fn (").is_ok());
        assert!(check_edit(Path::new("Cargo.lock"), "x", Some("a = 1"), "[[[").is_ok());
        assert!(check_edit(Path::new("a.py"), "x", Some("x=1"), "def (").is_ok());
        assert!(check_edit(rs(), "x", Some("fn a() {}"), "").is_ok());
    }

    #[test]
    fn toml_and_json() {
        let e = check_edit(
            Path::new("a.toml"),
            "a.toml",
            Some("a = 1\n"),
            "a = 1\nb = \n",
        )
        .unwrap_err();
        assert!(e.message.contains("valid TOML"));
        assert_eq!(e.details["line"], 2);
        let e = check_edit(Path::new("a.json"), "a.json", Some("{}"), "{\n\"a\": }").unwrap_err();
        assert!(e.message.contains("valid JSON"));
        assert_eq!(
            e.message.matches("line 2, column").count(),
            1,
            "{}",
            e.message
        );
        assert!(!e.message.contains(" at line "), "{}", e.message);
    }

    #[test]
    fn neutral_edits_skip_the_full_parse_but_stay_sound() {
        let old = "fn a() {}\nconst X: S = S {};\nfn b() { 1 }\n";
        assert!(rust_edit_is_neutral(old, &old.replace("{ 1 }", "{ 2 }")));
        // Removing a `;` after a struct literal: the section cut at the false boundary
        // does not parse alone, so the full check runs and refuses.
        let new = old.replace("S {};", "S {}");
        assert!(!rust_edit_is_neutral(old, &new));
        assert!(check_edit(rs(), "a.rs", Some(old), &new).is_err());
        // A broken new section is never neutral.
        assert!(!rust_edit_is_neutral(old, &old.replace("{ 1 }", "{ 1 ")));
        // Inner attributes mid-file are not neutral.
        assert!(!rust_edit_is_neutral(
            old,
            &old.replace("fn b()", "#![allow(x)]\nfn b()")
        ));
        // Inside an inline module: only the touched section is parsed, still sound.
        let m = "mod t {\n    fn a() {}\n    fn b() { 1 }\n}\n";
        assert!(rust_edit_is_neutral(m, &m.replace("{ 1 }", "{ 2 }")));
        assert!(!rust_edit_is_neutral(m, &m.replace("{ 1 }", "{ 1 ")));
        assert!(check_edit(rs(), "a.rs", Some(m), &m.replace("{ 1 }\n}", "{ 1 }\n")).is_err());
        assert!(!rust_edit_is_neutral(
            m,
            &m.replace("fn b()", "#![x]\nfn b()")
        ));
        // Broken old file: the neutral check may pass; the check passes anyway.
        let broken = "fn a( {}\nfn b() {}\n";
        assert!(check_edit(rs(), "a.rs", Some(broken), &broken.replace("b()", "c()")).is_ok());
    }

    const MAIN: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";

    #[test]
    fn a_brace_the_edit_opened_is_named_not_the_outermost_one() {
        let new = MAIN.replace("let x = 1;", "if ready {");
        let e = check_edit(Path::new("src/main.rs"), "src/main.rs", Some(MAIN), &new).unwrap_err();
        let m = &e.message;
        assert!(
            m.contains("Cause: unclosed `{` at line 2, column 14, opened by this edit"),
            "{m}"
        );
        assert!(
            m.contains("the `{` at line 1, column 11 without its `}`"),
            "{m}"
        );
        assert!(
            m.contains("The edit changed line 2:\n     2│     if ready {"),
            "{m}"
        );
        assert!(!m.contains("The cause is at line"), "{m}");
        assert!(e.hint.contains("opened at line 2, column 14"), "{}", e.hint);
        assert_eq!(e.details["line"], 2);
        // The same in JSON and TOML.
        let old = "{\n  \"a\": 1,\n  \"b\": [2]\n}\n";
        let new = old.replace("\"a\": 1,", "\"a\": {");
        let e = check_edit(Path::new("x.json"), "x.json", Some(old), &new).unwrap_err();
        assert!(
            e.message
                .contains("unclosed `{` at line 2, column 8, opened by this edit"),
            "{}",
            e.message
        );
        let old = "a = [\n  1,\n  2,\n]\n";
        let new = old.replace("  1,", "  [1,");
        let e = check_edit(Path::new("x.toml"), "x.toml", Some(old), &new).unwrap_err();
        assert!(
            e.message
                .contains("unclosed `[` at line 2, column 3, opened by this edit"),
            "{}",
            e.message
        );
    }

    #[test]
    fn an_unclosed_paren_is_reported_where_it_was_opened() {
        let new = MAIN.replace("let x = 1;", "let x = (1;");
        let e = check_edit(Path::new("src/main.rs"), "src/main.rs", Some(MAIN), &new).unwrap_err();
        let m = &e.message;
        assert!(
            m.contains("unclosed `(` at line 2, column 13; the `}` at line 4, column 1 comes before its `)`"),
            "{m}"
        );
        assert!(
            m.contains("The edit changed line 2:\n     2│     let x = (1;\n"),
            "{m}"
        );
        // The parser's own account is kept, but never as the only description.
        assert!(m.contains("The parser gave up at line 4"), "{m}");
        assert!(!m.contains("     4│ }"), "{m}");
        assert!(e.hint.contains("Add the missing `)`"), "{}", e.hint);
        assert!(e.hint.contains("line 2, column 13"), "{}", e.hint);
        assert_eq!(e.details["line"], 2);
        assert_eq!(e.details["column"], 13);
        assert_eq!(e.details["changed_lines"], serde_json::json!([2, 2]));
        assert_eq!(e.details["parser_line"], 4);
    }

    #[test]
    fn a_stray_closer_and_an_unterminated_string_are_named() {
        let new = MAIN.replace("let x = 1;", "let x = 1);");
        let e = check_edit(rs(), "a.rs", Some(MAIN), &new).unwrap_err();
        assert!(
            e.message
                .contains("unexpected `)` at line 2, column 14: no `(` is open there"),
            "{}",
            e.message
        );
        assert!(
            e.hint.contains("Remove the `)` at line 2, column 14"),
            "{}",
            e.hint
        );
        let new = MAIN.replace("let x = 1;", "let x = \"1;");
        let e = check_edit(rs(), "a.rs", Some(MAIN), &new).unwrap_err();
        assert!(
            e.message
                .contains("unterminated string literal starting at line 2, column 13"),
            "{}",
            e.message
        );
        assert!(e.hint.contains("with `\"`"), "{}", e.hint);
    }

    #[test]
    fn a_plain_syntax_error_names_the_changed_lines_and_the_parser_location() {
        let new = MAIN.replace("let x = 1;", "let x = 1 +;");
        let e = check_edit(rs(), "a.rs", Some(MAIN), &new).unwrap_err();
        assert!(e.message.contains("Cause: line 2, column"), "{}", e.message);
        assert!(
            e.message.contains("     2│     let x = 1 +;"),
            "{}",
            e.message
        );
        assert!(e.hint.contains("line 2"), "{}", e.hint);
        // A multi-line edit names its range; a cause outside it is quoted too.
        let old = "fn a() {}\nfn b() {}\nfn c() {}\n";
        let new = "fn a() {\nfn b() {}\nfn c() {}\n";
        let e = check_edit(rs(), "a.rs", Some(old), new).unwrap_err();
        assert!(
            e.message.contains("unclosed `{` at line 1, column 8"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("The edit changed line 1:"),
            "{}",
            e.message
        );
    }

    #[test]
    fn toml_and_json_letters_point_at_the_opening_bracket() {
        let old = "[dependencies]\nserde = { version = \"1\" }\nlog = \"0.4\"\n";
        let new = old.replace("\"1\" }", "\"1\"");
        let e = check_edit(Path::new("Cargo.toml"), "Cargo.toml", Some(old), &new).unwrap_err();
        assert!(
            e.message.contains("unclosed `{` at line 2, column 9"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("     2│ serde = { version = \"1\""),
            "{}",
            e.message
        );
        assert!(e.hint.contains("Add the missing `}`"), "{}", e.hint);
        let old = "{\n  \"a\": [1, 2],\n  \"b\": 3\n}\n";
        let new = old.replace("2],", "2,");
        let e = check_edit(Path::new("a.json"), "a.json", Some(old), &new).unwrap_err();
        assert!(
            e.message
                .contains("unclosed `[` at line 2, column 8; the `}` at line 4, column 1"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("The edit changed line 2:"),
            "{}",
            e.message
        );
    }

    #[test]
    fn an_edit_inside_a_long_impl_reparses_only_the_touched_item() {
        let items: String = (0..50)
            .map(|i| format!("    pub fn f{i}(&self) -> u32 {{ {i} }}\n"))
            .collect();
        let old = format!(
            "struct S;\nimpl S {{\n{items}}}\ntrait T {{\n    fn g(&self);\n    fn h(&self) {{}}\n}}\n"
        );
        assert!(rust_edit_is_neutral(&old, &old.replace("{ 7 }", "{ 8 }")));
        // Broken inside the impl: not neutral, and the full check refuses.
        let broken = old.replace("{ 7 }", "{ (7 }");
        assert!(!rust_edit_is_neutral(&old, &broken));
        assert!(check_edit(rs(), "a.rs", Some(&old), &broken).is_err());
        // Items only valid in a trait (no body) are checked as trait items...
        assert!(rust_edit_is_neutral(
            &old,
            &old.replace("fn g(&self);", "fn g2(&self);")
        ));
        // ... and never pass as associated items of an impl.
        let bodiless = old.replace("{ 7 }", "{ 7 }\n    fn k(&self);");
        assert!(!rust_edit_is_neutral(&old, &bodiless) || check(Lang::Rust, &bodiless).is_ok());
    }

    #[test]
    fn long_lines_cut_at_char_boundary() {
        let long = "é".repeat(300);
        let c = cut_chars(&long, 200);
        assert_eq!(c.chars().count(), 201);
        let old = "fn a() {}";
        let new = format!("fn a() {{ let s = \"{long}\" ");
        let e = check_edit(rs(), "a.rs", Some(old), &new).unwrap_err();
        assert!(e.message.contains('…'));
    }
}
