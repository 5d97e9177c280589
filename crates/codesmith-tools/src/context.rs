//! Per-session state shared by tool calls.

use std::path::PathBuf;
use std::sync::Arc;

use crate::Refusal;
use crate::fs::freshness::FreshnessTracker;
use crate::fs::paths::{ResolvedPath, resolve};

/// What a tool call may know about its session: the workspace root and the
/// CodeSmith home. Session-scoped trackers (freshness, shell cwd) live here too.
#[derive(Debug)]
pub struct ToolContext {
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// `$CODESMITH_HOME` (spill files, audit log, approvals).
    pub home: PathBuf,
    /// Files read in this session (read-before-write gate). Shared, so clones of a
    /// session's context see one tracker.
    pub freshness: Arc<FreshnessTracker>,
    /// One-shot mode (`codesmith tool`): read-before-write state cannot survive between
    /// invocations, so writing tools accept `"force_fresh": true` (and `edit_file` a
    /// matching `sha256`) in place of a prior read. Off by default; never on for a model
    /// session.
    pub force_fresh_allowed: bool,
    /// Shell state: the working directory `cd` moves, background tasks, drift memory.
    pub shell: crate::shell::ShellSession,
    /// The sandbox shell commands run under (default: none, which does not isolate).
    pub sandbox: crate::sandbox::Sandbox,
}

impl ToolContext {
    /// A context for `workspace` (canonicalized by the caller) and `home`.
    pub fn new(workspace: PathBuf, home: PathBuf) -> Self {
        ToolContext {
            workspace,
            home,
            freshness: Arc::new(FreshnessTracker::new()),
            force_fresh_allowed: false,
            shell: crate::shell::ShellSession::default(),
            sandbox: crate::sandbox::Sandbox::none(),
        }
    }

    /// The context for one `codesmith tool` invocation: like [`ToolContext::new`], with
    /// [`ToolContext::force_fresh_allowed`] on.
    pub fn one_shot(workspace: PathBuf, home: PathBuf) -> Self {
        ToolContext {
            force_fresh_allowed: true,
            ..ToolContext::new(workspace, home)
        }
    }

    /// The same context with shell commands running under `sandbox`.
    pub fn with_sandbox(mut self, sandbox: crate::sandbox::Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Resolves a model-supplied path inside the workspace (three-stage containment, see
    /// [`crate::fs::paths::resolve`]). Errors: `OUTSIDE_WORKSPACE`, `INVALID_ARGUMENTS`,
    /// `INTERNAL`.
    pub fn resolve(&self, model_path: &str) -> Result<ResolvedPath, Refusal> {
        resolve(&self.workspace, model_path)
    }
}
