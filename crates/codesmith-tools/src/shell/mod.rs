//! The shell tools: `exec_shell` (foreground, one `bash -c` per call) and the background
//! trio `task_shell_start` / `task_shell_poll` / `task_shell_cancel`.
//!
//! Every command runs through the session's [`crate::sandbox::Sandbox`], under a reaper of
//! its own (a child subreaper that dies with CodeSmith), in its own process group and with
//! a marker in its environment, so a timeout, a cancel, the end of the session or the death
//! of CodeSmith kills everything it started however it detached
//! ([`become_child_subreaper`]), with stdout and stderr merged. Output
//! over 30,000 bytes is cut to head + tail and spilled ([`crate::spill`]).

pub mod drift;
mod exec;
mod interactive;
mod live;
pub mod network;
mod process;
mod pty;
// The one module with `unsafe`: a process-setup hook between fork and exec cannot be
// written without it (see its documentation for what it may do there).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod reaper;
mod run_later;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod setup_tests;
mod table;
mod tasks;
pub(crate) mod tree;
mod typed;
pub mod wrap;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

pub use exec::{DEFAULT_TIMEOUT_SECS, ExecShell, MAX_TIMEOUT_SECS, start_dir};
pub use interactive::Interactive;
pub use live::{LIVE_INTERVAL, LIVE_LINE_CHARS, LIVE_LINES};
pub use pty::{
    MAX_PTY_SESSIONS, NAMED_KEYS, PtyEnd, PtyList, PtyListing, PtyRead, PtySend, PtyStart,
    PtyTable, key_bytes, terminal_input,
};
pub use tasks::{MAX_RUNNING_TASKS, TaskShellCancel, TaskShellPoll, TaskShellStart, TaskTable};
pub use tree::become_child_subreaper;
pub use typed::{TypedLine, Typing, reads_shell_commands, typing};

use crate::ToolContext;
use crate::sandbox::Scope;

/// The shell tools plus `retrieve_tool_result`: `exec_shell`, the interactive sessions
/// (`pty_end`, `pty_list`, `pty_read`, `pty_send`, `pty_start`), `retrieve_tool_result`,
/// `task_shell_cancel`, `task_shell_poll`, `task_shell_start`.
pub fn shell_tools() -> Vec<std::sync::Arc<dyn crate::Tool>> {
    vec![
        std::sync::Arc::new(ExecShell),
        std::sync::Arc::new(PtyEnd),
        std::sync::Arc::new(PtyList),
        std::sync::Arc::new(PtyRead),
        std::sync::Arc::new(PtySend),
        std::sync::Arc::new(PtyStart),
        std::sync::Arc::new(crate::spill::RetrieveToolResult),
        std::sync::Arc::new(TaskShellCancel),
        std::sync::Arc::new(TaskShellPoll),
        std::sync::Arc::new(TaskShellStart),
    ]
}

/// Shell state of one session: the working directory that `cd` moves, the background
/// tasks, and the drift probe's memory.
#[derive(Debug, Default)]
pub struct ShellSession {
    cwd: Mutex<Option<PathBuf>>,
    /// Background tasks started with `task_shell_start`.
    pub tasks: TaskTable,
    /// Interactive sessions started with `pty_start`.
    pub ptys: PtyTable,
    /// Which file drifts were already reported.
    pub drift: drift::DriftProbe,
}

impl ShellSession {
    /// The session directory: the last adopted `cd` target, or `workspace`.
    pub fn cwd(&self, workspace: &Path) -> PathBuf {
        let cwd = self.cwd.lock().unwrap_or_else(PoisonError::into_inner);
        cwd.clone().unwrap_or_else(|| workspace.to_path_buf())
    }

    /// Sets the session directory (the caller has checked it is inside the workspace).
    pub fn set_cwd(&self, dir: PathBuf) {
        *self.cwd.lock().unwrap_or_else(PoisonError::into_inner) = Some(dir);
    }
}

/// The sandbox scope for a command of `ctx` starting in `cwd`, after the isolation check
/// ([`crate::sandbox::Sandbox::admit`]): no scope, so no command, when `[sandbox] required`
/// is set and the backend does not isolate.
///
/// # Errors
/// `DENIED`, naming the two ways out (install bubblewrap; or `required = false` in the
/// user config).
pub(crate) fn scope_for(ctx: &ToolContext, cwd: &Path) -> Result<Scope, crate::Refusal> {
    ctx.sandbox.admit().map_err(|refusal| {
        crate::Refusal::new(
            crate::ErrorCode::Denied,
            format!(
                "Shell commands are refused: [sandbox] required = true, but the sandbox backend \
                 \"{}\" does not isolate commands on this host.",
                refusal.backend
            ),
            "Do not retry: tell the user. Two ways out: install bubblewrap (apt-get install \
             bubblewrap), or set required = false under [sandbox] in the user config \
             ($CODESMITH_HOME/config.toml).",
        )
        .with("backend", refusal.backend)
    })?;
    Ok(Scope {
        workspace: ctx.workspace.clone(),
        cwd: cwd.to_path_buf(),
        user_home: ctx.sandbox.user_home.clone(),
        codesmith_home: Some(ctx.home.clone()),
        network: ctx.sandbox.network,
        extra: {
            // The directories the user trusts for reading are offered read-only too.
            let mut extra = ctx.sandbox.extra.clone();
            extra.read.extend(ctx.trusted.roots());
            extra
        },
    })
}

/// Workspace-relative spelling of `abs` (`.` for the root).
pub(crate) fn rel(workspace: &Path, abs: &Path) -> String {
    match abs.strip_prefix(workspace) {
        Ok(r) if r.as_os_str().is_empty() => ".".to_string(),
        Ok(r) => r.to_string_lossy().into_owned(),
        Err(_) => abs.to_string_lossy().into_owned(),
    }
}
