//! Applying one file's hunks to its text, in memory.

use crate::error::HunkFailure;
use crate::matcher::{self, Found, Haystack, MatchLevel, Seek};
use crate::model::{Hunk, HunkLine};
use crate::text::{Doc, DocLine, Eol};

/// How one hunk landed in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkReport {
    /// 1-based index of the hunk within its file section.
    pub hunk: usize,
    /// 1-based line of the original file where the hunk's first old line matched (for a pure
    /// addition: the line it was inserted before).
    pub line: usize,
    /// Matched line minus the line the header stated, when it stated one.
    pub offset: Option<isize>,
    /// How loosely the lines had to be compared.
    pub level: MatchLevel,
}

/// Applies `hunks` to `content` (the text of `path`), returning the new text and how each hunk
/// landed. Context lines keep the file's own bytes; added lines take the file's dominant line
/// ending; a missing final newline stays missing unless the last line was replaced or added.
pub(crate) fn apply_hunks(
    path: &str,
    content: &str,
    hunks: &[Hunk],
) -> Result<(String, Vec<HunkReport>), Box<HunkFailure>> {
    let doc = Doc::parse(content);
    let texts = doc.texts();
    let hay = Haystack::new(&texts);
    let mut cursor = 0usize;
    let mut offset = 0isize;
    let mut edits: Vec<(usize, usize, &[HunkLine])> = Vec::new();
    let mut reports = Vec::new();
    for (k, hunk) in hunks.iter().enumerate() {
        let ctx = Ctx {
            path,
            index: k + 1,
            hunk,
            hay: &hay,
        };
        let mut last_anchor = None;
        for anchor in &hunk.anchors {
            let seek = Seek {
                cursor,
                expected: None,
                at_eof: false,
            };
            match matcher::locate(&hay, &[anchor.as_str()], seek) {
                Some(f) => {
                    last_anchor = Some(f.pos);
                    cursor = f.pos + 1;
                }
                None => return Err(ctx.failure(cursor, None, Some(anchor))),
            }
        }
        let expected = hunk
            .old_start
            .map(|s| usize::try_from(s as isize + offset).unwrap_or(0));
        if hunk.is_pure_addition() {
            let pos = match expected {
                Some(e) => e.clamp(cursor, texts.len()),
                None if !hunk.anchors.is_empty() => cursor,
                None => texts.len(),
            };
            edits.push((pos, 0, &hunk.lines));
            reports.push(report(k, pos, hunk.old_start, MatchLevel::Exact));
            cursor = pos;
            continue;
        }
        let seek = Seek {
            cursor,
            expected,
            at_eof: hunk.at_eof,
        };
        // Models often repeat the `@@` anchor line as the hunk's first context line; the
        // anchor line itself is then allowed to be part of the match.
        let retry = last_anchor.map(|a| Seek { cursor: a, ..seek });
        let located = locate_hunk(&hay, &hunk.lines, seek)
            .or_else(|| retry.and_then(|s| locate_hunk(&hay, &hunk.lines, s)));
        let Some((found, body)) = located else {
            return Err(ctx.failure(cursor, expected, None));
        };
        let len = old_len(body);
        edits.push((found.pos, len, body));
        reports.push(report(k, found.pos, hunk.old_start, found.level));
        if let Some(s) = hunk.old_start {
            offset = found.pos as isize - s as isize;
        }
        cursor = found.pos + len;
    }
    Ok((rebuild(&doc, &edits).render(), reports))
}

fn report(k: usize, pos: usize, stated: Option<usize>, level: MatchLevel) -> HunkReport {
    HunkReport {
        hunk: k + 1,
        line: pos + 1,
        offset: stated.map(|s| pos as isize - s as isize),
        level,
    }
}

fn old_len(body: &[HunkLine]) -> usize {
    body.iter()
        .filter(|l| !matches!(l, HunkLine::Add { .. }))
        .count()
}

fn old_lines(body: &[HunkLine]) -> Vec<&str> {
    body.iter()
        .filter_map(|l| match l {
            HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
            HunkLine::Add { .. } => None,
        })
        .collect()
}

/// Locates a hunk body; when that fails and it ends in blank context lines (often an artifact
/// of how the patch was written), tries again without them.
fn locate_hunk<'h>(
    hay: &Haystack<'_>,
    body: &'h [HunkLine],
    seek: Seek,
) -> Option<(Found, &'h [HunkLine])> {
    let mut body = body;
    loop {
        if let Some(f) = matcher::locate(hay, &old_lines(body), seek) {
            return Some((f, body));
        }
        match body.split_last() {
            Some((HunkLine::Context(s), rest)) if s.trim().is_empty() && old_len(rest) > 0 => {
                body = rest;
            }
            _ => return None,
        }
    }
}

fn rebuild(doc: &Doc, edits: &[(usize, usize, &[HunkLine])]) -> Doc {
    let mut out: Vec<DocLine> = Vec::with_capacity(doc.lines.len());
    let mut prev = 0;
    for &(pos, len, body) in edits {
        out.extend_from_slice(&doc.lines[prev..pos]);
        let mut at = pos;
        for line in body {
            match line {
                HunkLine::Context(_) => {
                    out.push(doc.lines[at].clone());
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add { text, no_newline } => out.push(DocLine {
                    text: text.clone(),
                    eol: if *no_newline { Eol::None } else { doc.eol },
                }),
            }
        }
        prev = pos + len;
    }
    out.extend_from_slice(&doc.lines[prev..]);
    Doc {
        bom: doc.bom,
        lines: out,
        eol: doc.eol,
    }
}

struct Ctx<'a> {
    path: &'a str,
    index: usize,
    hunk: &'a Hunk,
    hay: &'a Haystack<'a>,
}

impl Ctx<'_> {
    fn failure(
        &self,
        cursor: usize,
        expected: Option<usize>,
        anchor: Option<&String>,
    ) -> Box<HunkFailure> {
        let old = old_lines(&self.hunk.lines);
        let pattern: Vec<&str> = match anchor {
            Some(a) => vec![a.as_str()],
            None => old,
        };
        let near = expected.unwrap_or(cursor);
        let guess = matcher::best_guess(self.hay.lines(), &pattern, near);
        let from = guess.saturating_sub(2);
        let to = (guess + pattern.len().min(4) + 2).min(self.hay.lines().len());
        let actual = (from..to)
            .map(|i| (i + 1, self.hay.lines()[i].to_string()))
            .collect();
        Box::new(HunkFailure {
            path: self.path.to_string(),
            hunk: self.index,
            patch_line: self.hunk.patch_line,
            missing_anchor: anchor.cloned(),
            expected: pattern.iter().take(4).map(|s| s.to_string()).collect(),
            best_guess_line: guess + 1,
            actual,
            hint: self.hint(&pattern, cursor, guess),
        })
    }

    fn hint(&self, pattern: &[&str], cursor: usize, guess: usize) -> String {
        if self.hay.lines().is_empty() {
            return format!(
                "{} is empty: add lines with a hunk of only `+` lines, or rewrite the file.",
                self.path
            );
        }
        if cursor > 0 {
            let from_start = Seek {
                cursor: 0,
                expected: None,
                at_eof: false,
            };
            if let Some(f) = matcher::locate(self.hay, pattern, from_start)
                && f.pos < cursor
            {
                return format!(
                    "These lines exist at line {} of {}, before where the previous hunk ended: list hunks in the order their lines appear in the file.",
                    f.pos + 1,
                    self.path
                );
            }
        }
        let copies = matcher::count(self.hay, pattern, cursor);
        if copies > 1 {
            return format!(
                "These lines occur {copies} times in {} after the previous hunk and the @@ line number does not single one out (a copy is accepted more than {} lines away from the stated line only when it is unique): add unchanged lines around the change that differ between the copies, or correct the line numbers.",
                self.path,
                matcher::MAX_FUZZ
            );
        }
        format!(
            "Read {} again around line {} and copy the unchanged lines exactly as they are now (or regenerate this hunk from the current text); a hunk must match the file, give or take whitespace.",
            self.path,
            guess + 1
        )
    }
}
