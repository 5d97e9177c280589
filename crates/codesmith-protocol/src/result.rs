//! The typed outcome of a tool call, as front ends read it next to the model's text.

use serde::{Deserialize, Serialize};

/// Typed refusal codes. Serialized in SCREAMING_SNAKE_CASE (`NOT_FOUND`, ...).
///
/// Non-exhaustive: a front end shows an unknown code by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The named path does not exist.
    NotFound,
    /// The file to create exists already.
    AlreadyExists,
    /// The search text was not found.
    NoMatch,
    /// The search text matched more than once.
    AmbiguousMatch,
    /// The path resolves outside the workspace.
    OutsideWorkspace,
    /// The file changed on disk since it was read.
    StaleRead,
    /// The file must be read before it is edited or overwritten.
    NotRead,
    /// The syntax check refused the new content.
    ParseRejected,
    /// A patch hunk did not apply.
    PatchFailed,
    /// The arguments are missing, mistyped or contradictory.
    InvalidArguments,
    /// The input or file exceeds a limit.
    TooLarge,
    /// Policy or approval refused the call.
    Denied,
    /// The call ran out of time.
    Timeout,
    /// The caller cancelled the call while it ran (an MCP `notifications/cancelled`, an
    /// interrupt); what it started was stopped.
    Cancelled,
    /// The tool exists but cannot be used now (its MCP server is down, or the server
    /// offered it in a form the registry does not accept).
    Unavailable,
    /// An external tool (an MCP server) ran the call and reported an error.
    ToolError,
    /// The sandbox could not be set up (bubblewrap failed before the command started), so
    /// the command did not run; the message quotes the sandbox's own reason.
    SandboxFailed,
    /// A host-level cause; never carries host detail.
    Internal,
}

impl ErrorCode {
    /// The wire name (`NOT_FOUND`), as the model reads it in a refusal envelope.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::NoMatch => "NO_MATCH",
            ErrorCode::AmbiguousMatch => "AMBIGUOUS_MATCH",
            ErrorCode::OutsideWorkspace => "OUTSIDE_WORKSPACE",
            ErrorCode::StaleRead => "STALE_READ",
            ErrorCode::NotRead => "NOT_READ",
            ErrorCode::ParseRejected => "PARSE_REJECTED",
            ErrorCode::PatchFailed => "PATCH_FAILED",
            ErrorCode::InvalidArguments => "INVALID_ARGUMENTS",
            ErrorCode::TooLarge => "TOO_LARGE",
            ErrorCode::Denied => "DENIED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::ToolError => "TOOL_ERROR",
            ErrorCode::SandboxFailed => "SANDBOX_FAILED",
            ErrorCode::Internal => "INTERNAL",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused or failed call, as data: what the model reads in the envelope's `error`
/// object, without its structured `details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolError {
    /// The code.
    pub code: ErrorCode,
    /// What happened (sanitized like the model's text).
    pub message: String,
    /// What to do next.
    pub hint: String,
}

/// How an edit changed one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeKind {
    /// The file did not exist before.
    Created,
    /// The file's text changed in place (a whole-file overwrite included).
    Modified,
    /// The file was removed.
    Deleted,
    /// The file was moved to [`ChangedFile::moved_to`] (its text may have changed too).
    Moved,
}

/// One file an edit changed, with the diff its tool computed from the text before and
/// after the write (codex's `PatchApplyBegin { changes }` carries the same facts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    /// Workspace-relative path (the source of a move).
    pub path: String,
    /// What happened to it.
    pub kind: ChangeKind,
    /// The destination of a move, workspace-relative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
    /// Unified-diff hunks without file headers: `@@ -a,b +c,d @@` lines, then lines
    /// starting with ` ` (context), `-` or `+`, each ending in `\n` (a line ends at `\n`
    /// only; its own `\r\n` is written `\n`, any other CR stays in it). Empty when the text
    /// did not change (a pure move). Cut at a line boundary after
    /// [`ChangedFile::DIFF_LIMIT`] bytes (over all the files of one event), with `truncated` set.
    pub diff: String,
    /// True when `diff` was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl ChangedFile {
    /// Most bytes of diff carried by one event (64 KiB), over all its files together: the
    /// counts stay exact beyond.
    pub const DIFF_LIMIT: usize = 64 * 1024;

    /// Cuts the diffs of one event's `changes` to [`ChangedFile::DIFF_LIMIT`] bytes in
    /// all, in order, each at a line boundary (setting `truncated`), so a small patch that
    /// deletes or rewrites a thousand files cannot make an event of a thousand full diffs.
    pub fn fit_to_event(changes: &mut [ChangedFile]) {
        let mut left = Self::DIFF_LIMIT;
        for change in changes {
            if change.diff.len() > left {
                let keep = change
                    .diff
                    .split_inclusive('\n')
                    .scan(0usize, |used, line| {
                        *used += line.len();
                        (*used <= left).then_some(line.len())
                    })
                    .sum();
                change.diff.truncate(keep);
                change.truncated = true;
            }
            left -= change.diff.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_limit_holds_over_all_files_of_one_event() {
        let file = |i: usize| ChangedFile {
            path: format!("f{i}"),
            kind: ChangeKind::Deleted,
            moved_to: None,
            added: 0,
            removed: 5000,
            diff: "-0123456789\n".repeat(5000),
            truncated: false,
        };
        let mut changes: Vec<ChangedFile> = (0..100).map(file).collect();
        ChangedFile::fit_to_event(&mut changes);
        let total: usize = changes.iter().map(|c| c.diff.len()).sum();
        assert!(total <= ChangedFile::DIFF_LIMIT, "{total}");
        assert!(!changes[0].truncated && changes[1].truncated && changes[99].truncated);
        assert!(
            changes
                .iter()
                .all(|c| c.diff.is_empty() || c.diff.ends_with('\n'))
        );
        assert_eq!(changes[99].removed, 5000, "counts stay exact");
    }
}
