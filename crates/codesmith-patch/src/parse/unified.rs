//! Unified diffs (`diff -u`, `git diff`): several files, creation from and deletion to
//! `/dev/null`, git renames, `\ No newline at end of file`.
//!
//! Line counts in `@@` headers are used to end a hunk, but a miscounted hunk (common in model
//! output) keeps going while the following lines still look like hunk lines.

use super::{Line, cut};
use crate::error::{ParseError, ParseErrorKind as K};
use crate::model::{FileOp, Hunk, HunkLine, ModeChange, Patch, PatchFormat};

/// Numbers parsed from `@@ -a,b +c,d @@`.
#[derive(Debug, Clone, Copy)]
struct Numbers {
    /// 0-based index where the old side starts (for `b == 0`, the line after which to insert).
    old_start: usize,
    old_count: usize,
    new_count: usize,
}

pub(crate) fn looks_unified(lines: &[Line<'_>]) -> bool {
    lines
        .windows(2)
        .any(|w| is_file_header_pair(w[0].raw, w[1].raw))
        || lines.iter().any(|l| l.raw.starts_with("diff --git "))
}

fn is_file_header_pair(a: &str, b: &str) -> bool {
    a.starts_with("--- ") && b.starts_with("+++ ")
}

/// For a hunk header with numbers, `Some(0-based old start)`; `None` for anything else.
pub(crate) fn numbers_in_header(t: &str) -> Option<Option<usize>> {
    parse_numbers(t).ok().flatten().map(|n| Some(n.old_start))
}

/// `Ok(None)` for a header without numbers (`@@`, `@@ @@`), `Err` for malformed numbers.
fn parse_numbers(t: &str) -> Result<Option<Numbers>, ()> {
    let rest = t.strip_prefix("@@").ok_or(())?.trim_start();
    if !rest.starts_with('-') {
        return Ok(None);
    }
    let mut parts = rest.split_whitespace();
    let old = parts.next().ok_or(())?.strip_prefix('-').ok_or(())?;
    let new = parts.next().ok_or(())?.strip_prefix('+').ok_or(())?;
    let (old_line, old_count) = range(old)?;
    let (_, new_count) = range(new)?;
    let old_start = if old_count == 0 {
        old_line
    } else {
        old_line.saturating_sub(1)
    };
    Ok(Some(Numbers {
        old_start,
        old_count,
        new_count,
    }))
}

fn range(s: &str) -> Result<(usize, usize), ()> {
    let (a, b) = match s.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let a = a.parse().map_err(|_| ())?;
    let b = match b {
        Some(b) => b.parse().map_err(|_| ())?,
        None => 1,
    };
    Ok((a, b))
}

/// A path from a `---`/`+++` line: timestamp cut at the tab, quotes removed; `None` for
/// `/dev/null`.
fn header_path(rest: &str) -> Option<&str> {
    let p = rest.split('\t').next().unwrap_or(rest).trim();
    let p = p
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(p);
    (p != "/dev/null").then_some(p)
}

/// Drops git's `a/` and `b/` prefixes when the headers use them.
fn strip_ab<'a>(old: Option<&'a str>, new: Option<&'a str>) -> (Option<&'a str>, Option<&'a str>) {
    let git_style =
        old.is_none_or(|p| p.starts_with("a/")) && new.is_none_or(|p| p.starts_with("b/"));
    if !git_style {
        return (old, new);
    }
    (
        old.map(|p| p.strip_prefix("a/").unwrap_or(p)),
        new.map(|p| p.strip_prefix("b/").unwrap_or(p)),
    )
}

pub(crate) fn parse(lines: &[Line<'_>]) -> Result<Patch, ParseError> {
    let mut ops = Vec::new();
    let mut i = 0;
    let mut rename: (Option<String>, Option<String>) = (None, None);
    let mut modes = Vec::new();
    // The new-side path of the current `diff --git a/x b/y` section.
    let mut git_path: Option<String> = None;
    while i < lines.len() {
        let raw = lines[i].raw;
        if let Some(rest) = raw.strip_prefix("diff --git ") {
            flush_rename(&mut rename, &mut ops);
            git_path = rest.rsplit_once(" b/").map(|(_, b)| b.trim().to_string());
            i += 1;
        } else if let Some(mode) = raw
            .strip_prefix("new file mode ")
            .or_else(|| raw.strip_prefix("new mode "))
        {
            let executable = match mode.trim() {
                "100755" => true,
                "100644" => false,
                other => {
                    return Err(ParseError::new(
                        K::BadFileHeader,
                        lines[i].no,
                        format!("file mode {other} is not one this tool can set"),
                        "Use `100644` (regular) or `100755` (executable); symbolic links and \
                         submodules cannot be made with a patch.",
                    ));
                }
            };
            if let Some(path) = &git_path {
                modes.push(ModeChange {
                    path: path.clone(),
                    executable,
                });
            }
            i += 1;
        } else if let Some(from) = raw.strip_prefix("rename from ") {
            rename.0 = Some(from.trim().to_string());
            i += 1;
        } else if let Some(to) = raw.strip_prefix("rename to ") {
            rename.1 = Some(to.trim().to_string());
            i += 1;
        } else if i + 1 < lines.len() && is_file_header_pair(raw, lines[i + 1].raw) {
            rename = (None, None);
            let (op, next) = file_section(lines, i)?;
            ops.push(op);
            i = next;
        } else if raw.starts_with("@@") {
            return Err(ParseError::new(
                K::BadFileHeader,
                lines[i].no,
                "hunk before any `--- `/`+++ ` file header",
                "Start each file with `--- a/path` and `+++ b/path` lines before its `@@` hunks.",
            ));
        } else {
            // Preamble: `index …`, mode lines, commit text.
            i += 1;
        }
    }
    flush_rename(&mut rename, &mut ops);
    if ops.is_empty() && modes.is_empty() {
        let no = lines.first().map_or(1, |l| l.no);
        return Err(ParseError::new(
            K::Empty,
            no,
            "the diff holds no file change",
            "Include `--- a/path`, `+++ b/path` and at least one `@@` hunk per file.",
        ));
    }
    Ok(Patch {
        format: PatchFormat::Unified,
        ops,
        modes,
    })
}

/// A git rename without content change has no `---`/`+++` lines.
fn flush_rename(rename: &mut (Option<String>, Option<String>), ops: &mut Vec<FileOp>) {
    if let (Some(from), Some(to)) = std::mem::take(rename) {
        ops.push(FileOp::Update {
            path: from,
            move_to: Some(to),
            hunks: Vec::new(),
        });
    }
}

fn file_section(lines: &[Line<'_>], at: usize) -> Result<(FileOp, usize), ParseError> {
    let old = header_path(&lines[at].raw[4..]);
    let new = header_path(&lines[at + 1].raw[4..]);
    let (old, new) = strip_ab(old, new);
    let mut i = at + 2;
    let mut hunks = Vec::new();
    while i < lines.len() && lines[i].raw.starts_with("@@") {
        let (hunk, next) = hunk(lines, i)?;
        hunks.push(hunk);
        i = next;
    }
    let op = match (old, new) {
        (None, None) => {
            return Err(ParseError::new(
                K::BadFileHeader,
                lines[at].no,
                "both `---` and `+++` name /dev/null",
                "Name the file on at least one side.",
            ));
        }
        (None, Some(path)) => {
            let mut out = Vec::new();
            let mut final_newline = true;
            for l in hunks.iter().flat_map(|h| &h.lines) {
                if let HunkLine::Add { text, no_newline } = l {
                    out.push(text.clone());
                    final_newline = !no_newline;
                }
            }
            FileOp::Add {
                path: path.to_string(),
                lines: out,
                final_newline,
            }
        }
        (Some(path), None) => FileOp::Delete {
            path: path.to_string(),
        },
        (Some(path), Some(dest)) => {
            let move_to = (path != dest).then(|| dest.to_string());
            if hunks.is_empty() && move_to.is_none() {
                return Err(ParseError::new(
                    K::EmptyUpdate,
                    lines[at].no,
                    format!("the diff for {path} has no `@@` hunk"),
                    "Follow the `---`/`+++` lines with at least one `@@ -l,n +l,n @@` hunk.",
                ));
            }
            FileOp::Update {
                path: path.to_string(),
                move_to,
                hunks,
            }
        }
    };
    Ok((op, i))
}

fn hunk(lines: &[Line<'_>], at: usize) -> Result<(Hunk, usize), ParseError> {
    let header = lines[at];
    let numbers = parse_numbers(header.raw.trim()).map_err(|()| {
        ParseError::new(
            K::BadHunkHeader,
            header.no,
            format!("malformed hunk header {:?}", cut(header.raw)),
            "Write hunk headers as `@@ -start,count +start,count @@` (or a bare `@@`).",
        )
    })?;
    let mut hunk = Hunk {
        patch_line: header.no,
        anchors: Vec::new(),
        old_start: numbers.map(|n| n.old_start),
        at_eof: false,
        lines: Vec::new(),
    };
    let (mut old_seen, mut new_seen) = (0usize, 0usize);
    let mut i = at + 1;
    while i < lines.len() {
        let raw = lines[i].raw;
        let counts_done =
            numbers.is_some_and(|n| old_seen >= n.old_count && new_seen >= n.new_count);
        let next = lines.get(i + 1).map_or("", |l| l.raw);
        if raw.starts_with("@@") || raw.starts_with("diff --git ") || is_file_header_pair(raw, next)
        {
            break;
        }
        match raw.chars().next() {
            Some('\\') => super::envelope::mark_no_newline(&mut hunk.lines),
            None if counts_done => break,
            None => {
                hunk.lines.push(HunkLine::Context(String::new()));
                (old_seen, new_seen) = (old_seen + 1, new_seen + 1);
            }
            Some(' ') => {
                hunk.lines.push(HunkLine::Context(raw[1..].to_string()));
                (old_seen, new_seen) = (old_seen + 1, new_seen + 1);
            }
            Some('-') => {
                hunk.lines.push(HunkLine::Remove(raw[1..].to_string()));
                old_seen += 1;
            }
            Some('+') => {
                hunk.lines.push(HunkLine::Add {
                    text: raw[1..].to_string(),
                    no_newline: false,
                });
                new_seen += 1;
            }
            Some(_) => break,
        }
        i += 1;
    }
    if hunk.lines.is_empty() {
        return Err(ParseError::new(
            K::EmptyHunk,
            header.no,
            format!("hunk {:?} has no lines", cut(header.raw)),
            "Follow each `@@` header with its ` `, `-` and `+` lines.",
        ));
    }
    Ok((hunk, i))
}
