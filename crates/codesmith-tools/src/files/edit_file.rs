//! `edit_file`: exact-match replacement in one call, with tolerant fallbacks and an anchor
//! mode.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::lock::path_lock;
use crate::fs::text::{
    LineEnding, TextFile, convert_line_endings, load_bytes, not_text, sha256_hex,
};
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::args::{check_fresh, invalid, parse};
use super::closest::closest_line;
use super::commit::commit_text;
use super::matching::{Found, Span, Strategy, line_of, locate, reindent};

const EXAMPLE: &str = r#"{"path": "src/lib.rs", "search": "let x = 1;", "replace": "let x = 2;"}"#;

const DESCRIPTION: &str = "Replace text in an existing file in one call. Use this instead of sed -i, awk, \
perl -pi or rewriting the whole file with write_file. `search` must match the file exactly once: copy it \
verbatim from a read_file result (without the `N│ ` line-number prefixes), with enough surrounding lines \
to be unique. If it matches several places, pass occurrence=N (1-based) for one of them or \
replace_all=true for all (not both). If the exact text is not found, the tool retries ignoring leading \
whitespace, then with typographic quotes/dashes/non-breaking spaces folded to ASCII, then with copied \
line-number prefixes stripped; each retry must still be unique, the rest of the file keeps its bytes, and \
the result says which retry matched. For a long block, pass search_start and search_end (its first and \
last lines) instead of search: the block from the unique start line through the first end line after it \
is replaced. The file must have been read in this session (or, in one-shot use, pass the sha256 \
read_file showed; its first 12 hex digits suffice, and the result shows the new one so edits chain). CRLF files stay CRLF; Rust/TOML/JSON that parsed \
before must still parse.\n\
Examples: {\"path\": \"src/lib.rs\", \"search\": \"let x = 1;\", \"replace\": \"let x = 2;\"} (copy the \
text verbatim from a prior read_file result); {\"path\": \"src/lib.rs\", \"search_start\": \"fn old() {\", \
\"search_end\": \"}\", \"replace\": \"fn new() {}\"}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    search: Option<String>,
    replace: String,
    #[serde(default)]
    replace_all: bool,
    occurrence: Option<i64>,
    search_start: Option<String>,
    search_end: Option<String>,
    sha256: Option<String>,
    #[serde(default)]
    force_fresh: bool,
}

/// The `edit_file` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct EditFile;

#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &'static str {
        "edit_file"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Workspace-relative file path."},
                "search": {"type": "string", "description": "Exact text to replace, copied from read_file output without line numbers."},
                "replace": {"type": "string", "description": "Replacement text."},
                "replace_all": {"type": "boolean", "description": "Replace every match (not with occurrence)."},
                "occurrence": {"type": "integer", "minimum": 1, "description": "Replace only the N-th match, 1-based (not with replace_all)."},
                "search_start": {"type": "string", "description": "Anchor mode: first line of the block to replace (with search_end, without search)."},
                "search_end": {"type": "string", "description": "Anchor mode: last line of the block to replace."},
                "sha256": {"type": "string", "description": "Expected SHA-256 of the whole file, or its first 12 or more hex digits (from read_file meta or a previous edit)."}
            },
            "required": ["path", "replace"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::WritesFiles
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let args: Args = parse("edit_file", args, EXAMPLE)?;
        let mode = validate(&args)?;
        edit(ctx, &args, mode)
    }
}

/// What to replace.
enum Mode<'a> {
    Search(&'a str),
    Anchors(&'a str, &'a str),
}

/// Which matches to replace.
#[derive(Clone, Copy)]
pub(super) enum Pick {
    Unique,
    Nth(usize),
    All,
}

fn validate(args: &Args) -> Result<Mode<'_>, Refusal> {
    let mode = match (&args.search, &args.search_start, &args.search_end) {
        (Some(s), None, None) => Mode::Search(s),
        (None, Some(a), Some(b)) => Mode::Anchors(a, b),
        (Some(_), _, _) => {
            return Err(invalid(
                "search cannot be combined with search_start/search_end.",
                "Pass either search, or search_start and search_end together.",
            ));
        }
        (None, None, None) => {
            return Err(invalid(
                "edit_file needs search (or search_start and search_end).",
                format!("Call it like this: {EXAMPLE}"),
            ));
        }
        (None, _, _) => {
            return Err(invalid(
                "search_start and search_end must be given together.",
                "Pass search_start and search_end together, or neither (and use search).",
            ));
        }
    };
    match mode {
        Mode::Search("") => {
            return Err(invalid(
                "search is empty.",
                "Copy the exact text to replace from a read_file result.",
            ));
        }
        Mode::Search(s) if s == args.replace => {
            return Err(invalid(
                "search and replace are identical, so the edit would change nothing.",
                "Put the new text in replace; if the file is already right, no edit is needed.",
            ));
        }
        Mode::Anchors(a, b) if a.trim().is_empty() || b.trim().is_empty() => {
            return Err(invalid(
                "search_start and search_end must not be blank.",
                "Copy the first and last lines of the block from a read_file result.",
            ));
        }
        _ => {}
    }
    if args.replace_all && args.occurrence.is_some() {
        return Err(invalid(
            "replace_all and occurrence cannot be used together.",
            "Pass replace_all=true to replace every match, or occurrence=N for one match.",
        ));
    }
    if let Some(n) = args.occurrence
        && n < 1
    {
        return Err(invalid(
            format!("occurrence={n} is not valid; it counts matches from 1."),
            "Pass occurrence=1 for the first match, 2 for the second, and so on.",
        ));
    }
    Ok(mode)
}

fn pick(args: &Args) -> Pick {
    match (args.replace_all, args.occurrence) {
        (true, _) => Pick::All,
        (false, Some(n)) => Pick::Nth(n.max(1) as usize),
        (false, None) => Pick::Unique,
    }
}

fn edit(ctx: &ToolContext, args: &Args, mode: Mode<'_>) -> ToolOutcome {
    crate::files::args::allow_force_fresh(
        ctx,
        args.force_fresh,
        "Read the file with read_file first, then edit it.",
    )?;
    let path = ctx.resolve_for_write(&args.path)?;
    let lock = path_lock(&path.abs);
    let _guard = lock.lock();
    let file = checked_file(ctx, &path, args.sha256.as_deref(), args.force_fresh)?;
    let file = &file;
    let replace = convert_line_endings(&args.replace, file.ending);
    let (found, replace) = match mode {
        Mode::Search(s) => search_mode(&file.text, s, &replace, file.ending, &path.rel)?,
        Mode::Anchors(a, b) => anchor_mode(&file.text, a, b, file.ending, &path.rel, args)?,
    };
    let spans = select(
        &found.spans,
        pick(args),
        &path.rel,
        matches!(mode, Mode::Anchors(..)),
    )?;
    let new_text = splice(&file.text, &spans, &replace);
    if new_text == file.text {
        return Err(invalid(
            "The replacement leaves the file unchanged.",
            "Check that replace contains the new text you intend.",
        ));
    }
    let first_line = line_of(&file.text, spans[0].0);
    let report = commit_text(ctx, &path, Some(file), &new_text, None)?;
    let mut msg = format!(
        "Edited \"{}\": replaced {} {} starting at line {first_line}.",
        path.rel,
        spans.len(),
        if spans.len() == 1 { "match" } else { "matches" }
    );
    for note in [
        found.strategy.note().map(String::from),
        report.formatted_note().map(String::from),
    ]
    .into_iter()
    .flatten()
    {
        msg.push(' ');
        msg.push_str(&note);
    }
    let change =
        report
            .diff
            .clone()
            .into_change(&path.rel, codesmith_protocol::ChangeKind::Modified, None);
    Ok(ToolOutput::new(msg)
        .with_changes([change])
        .with("path", path.rel.as_str())
        .with("sha256", report.sha256.as_str())
        .with("replacements", spans.len())
        .with("first_line", first_line)
        .with("match", found.strategy.id())
        .with("formatted", report.formatted))
}

/// The file at `path` as text, after the freshness check every editor shares: its `sha256`
/// (a prefix of at least [`crate::SHA256_PREFIX_LEN`] hex digits) when one is passed, else
/// a read in this session (unless `force_fresh`, which the caller has allowed).
///
/// # Errors
/// `INVALID_ARGUMENTS` for a `sha256` that is not a digest, `STALE_READ` when it does not
/// match, `NOT_READ`/`STALE_READ` from the session's read record, and the file's own load
/// and decoding refusals.
pub(super) fn checked_file(
    ctx: &ToolContext,
    path: &crate::fs::paths::ResolvedPath,
    sha256: Option<&str>,
    force_fresh: bool,
) -> Result<TextFile, Refusal> {
    let bytes = load_bytes(path)?;
    let digest = sha256.map(|_| sha256_hex(&bytes));
    let file = TextFile::decode_owned(bytes).map_err(|e| not_text(&path.rel, &e))?;
    if let Some(expected) = sha256
        && (expected.len() < crate::SHA256_PREFIX_LEN
            || !expected.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(Refusal::new(
            ErrorCode::InvalidArguments,
            format!(
                "sha256 {expected:?} is not a digest: pass at least its first {} hex digits.",
                crate::SHA256_PREFIX_LEN
            ),
            format!(
                "Pass the sha256 read_file reported for \"{}\", or read the file first.",
                path.rel
            ),
        )
        .with("path", path.rel.as_str()));
    }
    match (sha256, &digest) {
        (Some(expected), Some(actual))
            if !actual
                .get(..expected.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(expected)) =>
        {
            return Err(Refusal::new(
                ErrorCode::StaleRead,
                format!("\"{}\" does not have the sha256 you passed; it changed since you read it.", path.rel),
                format!("Call read_file with path=\"{}\" again and base the edit on its current content.", path.rel),
            )
            .with("path", path.rel.as_str())
            .with("expected_sha256", expected)
            .with("actual_sha256", actual.as_str()));
        }
        (Some(_), _) => {}
        (None, _) if force_fresh => {}
        (None, _) => check_fresh(ctx, &path.abs, &path.rel)?,
    }
    Ok(file)
}

/// Text the model sent, in the file's line ending.
pub(super) fn in_ending(text: &str, ending: LineEnding) -> String {
    convert_line_endings(text, ending)
}

fn search_mode(
    hay: &str,
    search: &str,
    replace: &str,
    ending: LineEnding,
    rel: &str,
) -> Result<(Found, String), Refusal> {
    let needle = in_ending(search, ending);
    let found = locate(hay, &needle, replace)
        .or_else(|| {
            // A file with mixed endings: try the text exactly as sent.
            (needle != search)
                .then(|| locate(hay, search, replace))
                .flatten()
        })
        .ok_or_else(|| no_match(rel, "search").with_closest(hay, search))?;
    let mut replace = found
        .stripped_replace
        .clone()
        .unwrap_or_else(|| replace.to_string());
    if found.strategy == Strategy::LeadingWhitespace
        && found.spans.len() == 1
        && let Some(r) = reindent(&needle, &hay[found.spans[0].0..found.spans[0].1], &replace)
    {
        replace = r;
    }
    Ok((found, replace))
}

fn anchor_mode(
    hay: &str,
    start: &str,
    end: &str,
    ending: LineEnding,
    rel: &str,
    args: &Args,
) -> Result<(Found, String), Refusal> {
    let start_needle = in_ending(start.trim_end_matches(['\n', '\r']), ending);
    let end_needle = in_ending(end.trim_end_matches(['\n', '\r']), ending);
    let starts = locate(hay, &start_needle, "").ok_or_else(|| no_match(rel, "search_start"))?;
    let chosen = select(&starts.spans, pick_anchor(args), rel, true)?;
    let (s0, s1) = chosen[0];
    let tail = &hay[s1..];
    let ends = locate(tail, &end_needle, "").ok_or_else(|| no_match(rel, "search_end"))?;
    let (_, e1) = ends.spans[0];
    let block_start = hay[..s0].rfind('\n').map_or(0, |i| i + 1);
    let mut block_end = s1 + e1;
    block_end += hay[block_end..]
        .find('\n')
        .map_or(hay.len() - block_end, |i| i);
    if hay[..block_end].ends_with('\r') {
        block_end -= 1;
    }
    let strategy = if starts.strategy == Strategy::Exact {
        ends.strategy
    } else {
        starts.strategy
    };
    let replace = args.replace.trim_end_matches(['\n', '\r']);
    let replace = in_ending(replace, ending);
    Ok((
        Found {
            strategy,
            spans: vec![(block_start, block_end)],
            stripped_replace: None,
        },
        replace,
    ))
}

/// In anchor mode `occurrence` picks the start anchor; `replace_all` is not meaningful.
fn pick_anchor(args: &Args) -> Pick {
    match args.occurrence {
        Some(n) => Pick::Nth(n.max(1) as usize),
        None => Pick::Unique,
    }
}

pub(super) fn select(
    spans: &[Span],
    pick: Pick,
    rel: &str,
    anchor: bool,
) -> Result<Vec<Span>, Refusal> {
    let count = spans.len();
    match pick {
        Pick::All => Ok(spans.to_vec()),
        Pick::Unique if count == 1 => Ok(spans.to_vec()),
        Pick::Unique => {
            let what = if anchor { "search_start" } else { "search" };
            let ways = if anchor {
                format!("pass occurrence=N (1..={count}) to pick one start line, or quote a more specific search_start")
            } else {
                format!(
                    "pass replace_all=true to replace every occurrence, or occurrence=N (1..={count}) \
                     to replace a specific one"
                )
            };
            Err(Refusal::new(
                ErrorCode::AmbiguousMatch,
                format!("The {what} text matched {count} locations in \"{rel}\"; {ways}."),
                format!(
                    "Add surrounding lines to make the text unique, or {}.",
                    if anchor { "pass occurrence=N" } else { "pass replace_all=true or occurrence=N" }
                ),
            )
            .with("path", rel)
            .with("matches", count)
            .with("valid_occurrences", format!("1..={count}")))
        }
        Pick::Nth(n) if n <= count => Ok(vec![spans[n - 1]]),
        Pick::Nth(n) => Err(invalid(
            format!("occurrence={n} was asked for, but the text matched only {count} time(s) in \"{rel}\"."),
            format!("Pass occurrence=N with N in 1..={count}."),
        )
        .with("path", rel)
        .with("matches", count)),
    }
}

fn splice(hay: &str, spans: &[Span], replace: &str) -> String {
    let mut out = String::with_capacity(hay.len() + replace.len() * spans.len());
    let mut at = 0;
    for &(s, e) in spans {
        out.push_str(&hay[at..s]);
        out.push_str(replace);
        at = e;
    }
    out.push_str(&hay[at..]);
    out
}

/// Adds the nearest line to a `NO_MATCH` refusal, when there is one.
pub(super) trait WithClosest {
    fn with_closest(self, hay: &str, needle: &str) -> Self;
}

impl WithClosest for Refusal {
    fn with_closest(mut self, hay: &str, needle: &str) -> Self {
        if let Some((n, text)) = closest_line(hay, needle) {
            self.hint = format!("The most similar line is line {n}: `{text}`. {}", self.hint);
            self = self.with("closest_line", n).with("closest_text", text);
        }
        self
    }
}

pub(super) fn no_match(rel: &str, field: &str) -> Refusal {
    Refusal::new(
        ErrorCode::NoMatch,
        format!(
            "The {field} text was not found in \"{rel}\", not even ignoring leading whitespace, \
             folding typographic punctuation or stripping line-number prefixes."
        ),
        format!(
            "Call read_file with path=\"{rel}\" and copy the text exactly as it appears now \
             (without the `N│ ` prefixes)."
        ),
    )
    .with("path", rel)
    .with("field", field)
}
