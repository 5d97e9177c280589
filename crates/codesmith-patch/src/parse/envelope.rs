//! The `*** Begin Patch` envelope. Marker lines are recognised with surrounding spaces trimmed;
//! hunk lines are taken verbatim after their one-character prefix.

use super::{Line, cut};
use crate::error::{ParseError, ParseErrorKind as K};
use crate::model::{FileOp, Hunk, HunkLine, Patch, PatchFormat};

pub(crate) const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const EOF_MARK: &str = "*** End of File";

const HUNK_HINT: &str = "Inside a hunk every line starts with one character: a space (unchanged context), `-` (removed) or `+` (added); start each hunk with `@@` (optionally `@@ text of a line above the change`).";

/// Whether a trimmed line starts a new file section or ends the patch.
fn is_section_marker(t: &str) -> bool {
    t == END || t == BEGIN || t.starts_with(ADD) || t.starts_with(DELETE) || t.starts_with(UPDATE)
}

pub(crate) fn parse(lines: &[Line<'_>]) -> Result<Patch, ParseError> {
    let begin = lines
        .iter()
        .position(|l| l.raw.trim() == BEGIN)
        .unwrap_or(0);
    let Some(end) = lines.iter().rposition(|l| l.raw.trim() == END) else {
        let last = lines.last().map_or(1, |l| l.no);
        return Err(ParseError::new(
            K::MissingEnd,
            last,
            "`*** Begin Patch` is never closed by `*** End Patch` (the patch may have been cut off)",
            "Send the whole patch again, ending with a line `*** End Patch`.",
        ));
    };
    let body = &lines[begin + 1..end.max(begin + 1)];
    let mut p = Parser { lines: body, i: 0 };
    let mut ops = Vec::new();
    while let Some(line) = p.peek() {
        let t = line.raw.trim();
        if t.is_empty() || t == BEGIN || t == END {
            p.i += 1;
        } else if let Some(rest) = t.strip_prefix(ADD) {
            p.i += 1;
            let path = path_of(rest, &line)?;
            ops.push(p.add_file(path)?);
        } else if let Some(rest) = t.strip_prefix(DELETE) {
            p.i += 1;
            ops.push(FileOp::Delete {
                path: path_of(rest, &line)?,
            });
        } else if let Some(rest) = t.strip_prefix(UPDATE) {
            p.i += 1;
            let path = path_of(rest, &line)?;
            ops.push(p.update_file(path, line)?);
        } else {
            return Err(unknown_header(&line));
        }
    }
    if ops.is_empty() {
        let no = lines.get(begin).map_or(1, |l| l.no);
        return Err(ParseError::new(
            K::Empty,
            no,
            "the patch holds no file operation",
            "Put at least one `*** Update File:`, `*** Add File:` or `*** Delete File:` section between `*** Begin Patch` and `*** End Patch`.",
        ));
    }
    Ok(Patch {
        format: PatchFormat::Envelope,
        ops,
        modes: Vec::new(),
    })
}

fn unknown_header(line: &Line<'_>) -> ParseError {
    ParseError::new(
        K::UnknownHeader,
        line.no,
        format!("expected a file header, found {:?}", cut(line.raw.trim())),
        "Each section starts with `*** Update File: path`, `*** Add File: path` or `*** Delete File: path`.",
    )
}

fn path_of(rest: &str, line: &Line<'_>) -> Result<String, ParseError> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(ParseError::new(
            K::MissingPath,
            line.no,
            format!("{:?} names no file", line.raw.trim()),
            "Write the workspace-relative path after the colon.",
        ));
    }
    Ok(path.to_string())
}

struct Parser<'s, 'a> {
    lines: &'s [Line<'a>],
    i: usize,
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.i).copied()
    }

    fn add_file(&mut self, path: String) -> Result<FileOp, ParseError> {
        let mut out: Vec<String> = Vec::new();
        let mut blanks = 0usize;
        let mut final_newline = true;
        while let Some(line) = self.peek() {
            if is_section_marker(line.raw.trim()) {
                break;
            }
            if let Some(text) = line.raw.strip_prefix('+') {
                // Bare empty lines between `+` lines are blank lines the model forgot to prefix.
                out.extend(std::iter::repeat_n(String::new(), blanks));
                blanks = 0;
                out.push(text.to_string());
            } else if line.raw.is_empty() {
                blanks += 1;
            } else if line.raw.starts_with('\\') && !out.is_empty() {
                final_newline = false;
            } else {
                return Err(ParseError::new(
                    K::BadAddLine,
                    line.no,
                    format!(
                        "line {:?} in `*** Add File: {path}` does not start with `+`",
                        cut(line.raw)
                    ),
                    "Prefix every line of a new file with `+`, blank lines too.",
                ));
            }
            self.i += 1;
        }
        Ok(FileOp::Add {
            path,
            lines: out,
            final_newline,
        })
    }

    fn update_file(&mut self, path: String, header: Line<'_>) -> Result<FileOp, ParseError> {
        let mut move_to = None;
        if let Some(line) = self.peek()
            && let Some(rest) = line.raw.trim().strip_prefix(MOVE)
        {
            move_to = Some(path_of(rest, &line)?);
            self.i += 1;
        }
        let mut hunks = Vec::new();
        while let Some(line) = self.peek() {
            let t = line.raw.trim();
            if is_section_marker(t) {
                break;
            }
            if t.is_empty() {
                self.i += 1;
                continue;
            }
            let starts_hunk =
                t.starts_with("@@") || (hunks.is_empty() && line.raw.starts_with([' ', '-', '+']));
            if !starts_hunk {
                return Err(if t.starts_with("***") {
                    unknown_header(&line)
                } else {
                    ParseError::new(
                        K::BadHunkLine,
                        line.no,
                        format!(
                            "unexpected line {:?} in `*** Update File: {path}`",
                            cut(line.raw)
                        ),
                        HUNK_HINT,
                    )
                });
            }
            hunks.push(self.hunk(&path)?);
        }
        if hunks.is_empty() && move_to.is_none() {
            return Err(ParseError::new(
                K::EmptyUpdate,
                header.no,
                format!("`*** Update File: {path}` has no hunk"),
                "Follow the header with at least one `@@` hunk of ` `, `-` and `+` lines (or use `*** Delete File:`).",
            ));
        }
        Ok(FileOp::Update {
            path,
            move_to,
            hunks,
        })
    }

    fn hunk(&mut self, path: &str) -> Result<Hunk, ParseError> {
        let start = self.peek().map_or(0, |l| l.no);
        let mut hunk = Hunk {
            patch_line: start,
            anchors: Vec::new(),
            old_start: None,
            at_eof: false,
            lines: Vec::new(),
        };
        // One or more `@@` lines; each carries an optional anchor line to find first.
        while let Some(line) = self.peek() {
            let Some(rest) = line.raw.trim().strip_prefix("@@") else {
                break;
            };
            if !hunk.lines.is_empty() {
                break;
            }
            self.i += 1;
            if let Some(start) = super::unified::numbers_in_header(line.raw.trim()) {
                hunk.old_start = start;
            } else {
                // `@@ @@` (a unified header without numbers) carries no anchor.
                let anchor = rest.trim();
                if !anchor.is_empty() && anchor != "@@" {
                    hunk.anchors.push(anchor.to_string());
                }
            }
        }
        while let Some(line) = self.peek() {
            let t = line.raw.trim();
            if is_section_marker(t) || line.raw.starts_with("@@") {
                break;
            }
            self.i += 1;
            if t == EOF_MARK {
                hunk.at_eof = true;
                break;
            }
            match line.raw.chars().next() {
                None => hunk.lines.push(HunkLine::Context(String::new())),
                Some(' ') => hunk
                    .lines
                    .push(HunkLine::Context(line.raw[1..].to_string())),
                Some('-') => hunk.lines.push(HunkLine::Remove(line.raw[1..].to_string())),
                Some('+') => hunk.lines.push(HunkLine::Add {
                    text: line.raw[1..].to_string(),
                    no_newline: false,
                }),
                Some('\\') => mark_no_newline(&mut hunk.lines),
                Some(_) => {
                    return Err(ParseError::new(
                        K::BadHunkLine,
                        line.no,
                        format!(
                            "line {:?} in a hunk of {path} starts with none of ' ', '-', '+'",
                            cut(line.raw)
                        ),
                        HUNK_HINT,
                    ));
                }
            }
        }
        if hunk.lines.is_empty() {
            return Err(ParseError::new(
                K::EmptyHunk,
                start,
                format!("a hunk of {path} has no lines"),
                HUNK_HINT,
            ));
        }
        Ok(hunk)
    }
}

/// `\ No newline at end of file` after an added line: that line ends the file unterminated.
pub(crate) fn mark_no_newline(lines: &mut [HunkLine]) {
    if let Some(HunkLine::Add { no_newline, .. }) = lines.last_mut() {
        *no_newline = true;
    }
}
