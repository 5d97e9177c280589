//! Per-session state shared by tool calls.

use std::path::PathBuf;

/// What a tool call may know about its session: the workspace root and the
/// CodeSmith home. Session-scoped trackers (freshness, shell cwd) live here too.
#[derive(Debug)]
pub struct ToolContext {
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// `$CODESMITH_HOME` (spill files, audit log, approvals).
    pub home: PathBuf,
}

impl ToolContext {
    /// A context for `workspace` (canonicalized by the caller) and `home`.
    pub fn new(workspace: PathBuf, home: PathBuf) -> Self {
        ToolContext { workspace, home }
    }
}
