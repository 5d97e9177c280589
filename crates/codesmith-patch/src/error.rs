//! Typed errors: a parse error points at a line of the patch; an apply error names the file and
//! hunk and shows what was expected next to what the file holds.

use std::fmt;

/// Why a patch text could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The text holds no file operation at all.
    Empty,
    /// Neither a `*** Begin Patch` envelope nor a unified diff header was found.
    NotAPatch,
    /// `*** Begin Patch` without a closing `*** End Patch` (often a truncated reply).
    MissingEnd,
    /// A `***` line that is not one of the known headers.
    UnknownHeader,
    /// A file header without a path.
    MissingPath,
    /// `*** Update File:` (or a unified file header) followed by no hunk.
    EmptyUpdate,
    /// A hunk marker with no lines after it.
    EmptyHunk,
    /// A line inside a hunk that starts with none of ` `, `-`, `+`.
    BadHunkLine,
    /// An `@@` header whose line numbers do not parse.
    BadHunkHeader,
    /// A line in `*** Add File:` that does not start with `+`.
    BadAddLine,
    /// A unified `---` header without its `+++` partner (or the reverse).
    BadFileHeader,
}

/// A patch text that could not be parsed. `line` is 1-based in the text as given (before any
/// heredoc or fence was stripped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("patch line {line}: {message}")]
pub struct ParseError {
    /// What went wrong, as a category.
    pub kind: ParseErrorKind,
    /// 1-based line number in the patch text.
    pub line: usize,
    /// What went wrong, quoting the offending line.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl ParseError {
    pub(crate) fn new(
        kind: ParseErrorKind,
        line: usize,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        ParseError {
            kind,
            line,
            message: message.into(),
            hint: hint.into(),
        }
    }
}

/// A hunk that could not be located in its file. `Display` gives the diagnostic (what was
/// expected, what the file holds); the advice is in [`HunkFailure::hint`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkFailure {
    /// The file (the path as written in the patch).
    pub path: String,
    /// 1-based index of the hunk within its file section.
    pub hunk: usize,
    /// 1-based line of the hunk in the patch text.
    pub patch_line: usize,
    /// When the hunk's `@@ header` anchor line was the part not found, that anchor.
    pub missing_anchor: Option<String>,
    /// The first lines (at most 4) the hunk expected to find.
    pub expected: Vec<String>,
    /// 1-based line of the file where the hunk came closest to matching.
    pub best_guess_line: usize,
    /// The file's lines around the best guess (2 lines either side of the expected span's
    /// preview), as `(1-based line number, text)`.
    pub actual: Vec<(usize, String)>,
    /// What to do about it.
    pub hint: String,
}

impl fmt::Display for HunkFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.missing_anchor {
            Some(anchor) => writeln!(
                f,
                "hunk {} of {} (patch line {}): the @@ line {:?} was not found in the file",
                self.hunk, self.path, self.patch_line, anchor
            )?,
            None => writeln!(
                f,
                "hunk {} of {} (patch line {}): its context and removed lines were not found in the file",
                self.hunk, self.path, self.patch_line
            )?,
        }
        writeln!(f, "expected (first {} lines):", self.expected.len())?;
        for line in &self.expected {
            writeln!(f, "    {line}")?;
        }
        if self.actual.is_empty() {
            return write!(f, "the file is empty");
        }
        write!(f, "the file near line {}:", self.best_guess_line)?;
        for (n, line) in &self.actual {
            write!(f, "\n{n:>6}│ {line}")?;
        }
        Ok(())
    }
}

/// Why a patch could not be planned against the current files.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The patch text did not parse; nothing was looked at.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// An update or delete names a file that does not exist (or is not a regular text file).
    #[error("{path}: file not found, so it cannot be {action}")]
    NotFound {
        /// The path as written in the patch.
        path: String,
        /// `updated`, `deleted` or `moved`.
        action: &'static str,
    },
    /// A path is empty, absolute or climbs out with `..`.
    #[error("{path:?}: {reason}")]
    InvalidPath {
        /// The path as written in the patch.
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A hunk did not match.
    #[error("{0}")]
    HunkFailed(Box<HunkFailure>),
}

impl PatchError {
    /// What to do next, for the model.
    pub fn hint(&self) -> String {
        match self {
            PatchError::Parse(e) => e.hint.clone(),
            PatchError::NotFound { .. } => {
                "Check the path (list the directory); to create a file use `*** Add File:` or a diff from /dev/null.".to_string()
            }
            PatchError::InvalidPath { .. } => {
                "Use a path relative to the workspace root, without `..`.".to_string()
            }
            PatchError::HunkFailed(h) => h.hint.clone(),
        }
    }
}
