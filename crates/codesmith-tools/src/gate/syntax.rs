//! The regression-only syntax gate (seed 000).
//!
//! A write is refused only when the old content parsed and the new content does not. A
//! file that was already broken, and a new file, always pass, so a broken workspace can
//! still be repaired. Gated formats: Rust (`syn::parse_file`, full syntax), TOML and
//! JSON; `Cargo.lock` is exempt; an empty Rust file is valid.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};

use sha2::{Digest, Sha256};

use super::boundaries::item_containers;
use crate::{ErrorCode, Refusal};

/// Longest offending line quoted in a refusal, in characters.
const MAX_QUOTED_CHARS: usize = 200;

/// A gated language.
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

/// The gated language of `path` by extension; `None` for other files and `Cargo.lock`.
pub fn gated_language(path: &Path) -> Option<Lang> {
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
            // stated once (seed 000).
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

/// The gate itself. `old` is the current content (`None` for a new file); `new` is the
/// content about to be written. `rel` names the file in the refusal.
///
/// Errors: `PARSE_REJECTED` when `old` parsed as the file's language and `new` does not.
/// The refusal names the language, the 1-based line and column, quotes the offending line
/// (cut at a character boundary after 200 characters), and says the file was NOT modified.
/// Details: `path`, `language`, `line`, `column`.
pub fn gate(path: &Path, rel: &str, old: Option<&str>, new: &str) -> Result<(), Refusal> {
    let Some(lang) = gated_language(path) else {
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
        Err(f) => Err(reject(rel, lang, new, &f)),
    }
}

/// Texts recently seen to parse, keyed by language and SHA-256, so the content written by
/// one gated edit need not be parsed again as the "old" side of the next.
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
/// between two top-level item boundaries, and the old and new sections there both parse on
/// their own as items. Then `new` parses exactly when `old` did, and the gate passes either
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
    check_rust(old_mid).is_ok() && check_rust(new_mid).is_ok()
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

fn reject(rel: &str, lang: Lang, new: &str, f: &ParseFailure) -> Refusal {
    let line_text = new.lines().nth(f.line - 1).unwrap_or("");
    let quoted = cut_chars(line_text.trim_end_matches('\r'), MAX_QUOTED_CHARS);
    let message = format!(
        "The edit to \"{rel}\" was refused: the file was valid {} before, but the new content \
         does not parse (line {}, column {}: {}).\n{:>6}│ {}\nThe file was NOT modified.",
        lang.name(),
        f.line,
        f.column,
        f.message,
        f.line,
        quoted
    );
    Refusal::new(
        ErrorCode::ParseRejected,
        message,
        "Fix the syntax error at that line and send the change again.",
    )
    .with("path", rel)
    .with("language", lang.name())
    .with("line", f.line)
    .with("column", f.column)
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
        let e = gate(
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
        assert!(gate(rs(), "x", Some("fn ("), "fn ((").is_ok());
        assert!(gate(rs(), "x", None, "fn (").is_ok());
        assert!(gate(Path::new("Cargo.lock"), "x", Some("a = 1"), "[[[").is_ok());
        assert!(gate(Path::new("a.py"), "x", Some("x=1"), "def (").is_ok());
        assert!(gate(rs(), "x", Some("fn a() {}"), "").is_ok());
    }

    #[test]
    fn toml_and_json() {
        let e = gate(
            Path::new("a.toml"),
            "a.toml",
            Some("a = 1\n"),
            "a = 1\nb = \n",
        )
        .unwrap_err();
        assert!(e.message.contains("valid TOML"));
        assert_eq!(e.details["line"], 2);
        let e = gate(Path::new("a.json"), "a.json", Some("{}"), "{\n\"a\": }").unwrap_err();
        assert!(e.message.contains("valid JSON"));
        assert_eq!(e.message.matches("line 2").count(), 1, "{}", e.message);
        assert!(!e.message.contains(" at line "), "{}", e.message);
    }

    #[test]
    fn neutral_edits_skip_the_full_parse_but_stay_sound() {
        let old = "fn a() {}\nconst X: S = S {};\nfn b() { 1 }\n";
        assert!(rust_edit_is_neutral(old, &old.replace("{ 1 }", "{ 2 }")));
        // Removing a `;` after a struct literal: the section cut at the false boundary
        // does not parse alone, so the full gate runs and refuses.
        let new = old.replace("S {};", "S {}");
        assert!(!rust_edit_is_neutral(old, &new));
        assert!(gate(rs(), "a.rs", Some(old), &new).is_err());
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
        assert!(gate(rs(), "a.rs", Some(m), &m.replace("{ 1 }\n}", "{ 1 }\n")).is_err());
        assert!(!rust_edit_is_neutral(
            m,
            &m.replace("fn b()", "#![x]\nfn b()")
        ));
        // Broken old file: the neutral check may pass; the gate passes anyway.
        let broken = "fn a( {}\nfn b() {}\n";
        assert!(gate(rs(), "a.rs", Some(broken), &broken.replace("b()", "c()")).is_ok());
    }

    #[test]
    fn long_lines_cut_at_char_boundary() {
        let long = "é".repeat(300);
        let c = cut_chars(&long, 200);
        assert_eq!(c.chars().count(), 201);
        let old = "fn a() {}";
        let new = format!("fn a() {{ let s = \"{long}\" ");
        let e = gate(rs(), "a.rs", Some(old), &new).unwrap_err();
        assert!(e.message.contains('…'));
    }
}
