//! Patch text → [`Patch`]: strip a wrapper, pick the syntax, parse it.

mod envelope;
mod unified;
mod unwrap;

use crate::error::{ParseError, ParseErrorKind};
use crate::model::Patch;

/// One line of the patch text with its 1-based number in the original text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    pub(crate) no: usize,
    pub(crate) raw: &'a str,
}

const FORMAT_HINT: &str = "Send either a unified diff (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@` hunks) or the envelope: `*** Begin Patch`, then `*** Update File: path` / `*** Add File: path` / `*** Delete File: path` sections, then `*** End Patch`.";

/// Parses a patch in either syntax. A heredoc wrapper (`apply_patch <<'EOF'` … `EOF`,
/// `cat <<EOF`), a Markdown code fence and surrounding blank lines are tolerated.
///
/// The envelope is chosen when a line reads `*** Begin Patch` (leading and trailing spaces
/// ignored); otherwise the text must hold a unified diff (`--- ` followed by `+++ `).
///
/// # Errors
/// A [`ParseError`] with the 1-based line, a message quoting the line, and a hint.
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    let all: Vec<Line<'_>> = text
        .split('\n')
        .enumerate()
        .map(|(i, raw)| Line {
            no: i + 1,
            raw: raw.strip_suffix('\r').unwrap_or(raw),
        })
        .collect();
    let lines = unwrap::strip_wrapper(&all);
    if lines.iter().all(|l| l.raw.trim().is_empty()) {
        return Err(ParseError::new(
            ParseErrorKind::Empty,
            1,
            "the patch is empty",
            FORMAT_HINT,
        ));
    }
    if lines.iter().any(|l| l.raw.trim() == envelope::BEGIN) {
        envelope::parse(lines)
    } else if unified::looks_unified(lines) {
        unified::parse(lines)
    } else {
        let first = lines.iter().find(|l| !l.raw.trim().is_empty());
        let (no, raw) = first.map_or((1, ""), |l| (l.no, l.raw));
        Err(ParseError::new(
            ParseErrorKind::NotAPatch,
            no,
            format!(
                "not a patch: no `*** Begin Patch` line and no `--- `/`+++ ` file header (first line: {:?})",
                cut(raw)
            ),
            FORMAT_HINT,
        ))
    }
}

/// Shortens a quoted line for a message (at a character boundary).
pub(crate) fn cut(s: &str) -> String {
    const MAX: usize = 120;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
