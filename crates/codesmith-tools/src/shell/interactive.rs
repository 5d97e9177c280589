//! A resident process the harness talks to over its stdin and stdout: started through the
//! same isolation check, sandbox, reaper and process-tree kill as a shell command, but kept alive
//! between calls (the `rlm` tool's Python REPL).

use std::ffi::OsString;

use tokio::process::{ChildStdin, ChildStdout};

use super::process::{self, Running};
use crate::{ErrorCode, Refusal, ToolContext};

/// A process started by [`Interactive::spawn`]. Dropping it kills the process with its whole
/// tree (see [`Interactive::kill`]).
#[derive(Debug)]
pub struct Interactive {
    running: Running,
    /// The process's stdin: the harness writes requests here.
    pub stdin: ChildStdin,
    stdout: Option<ChildStdout>,
}

impl Interactive {
    /// Starts `argv` (program first) in the workspace root under `ctx`'s sandbox, after its
    /// isolation check ([`crate::sandbox::Sandbox::admit`]), always without network (whatever
    /// `[sandbox] network` says), with a marker in its environment, no secret environment
    /// variables, and its stderr captured (read with [`Interactive::stderr_text`]).
    ///
    /// # Errors
    /// `DENIED` when `[sandbox] required = true` and the backend does not isolate (naming
    /// the two ways out); `INTERNAL` when the process cannot be started.
    pub fn spawn(ctx: &ToolContext, argv: Vec<OsString>) -> Result<Self, Refusal> {
        let mut scope = super::scope_for(ctx, &ctx.workspace)?;
        scope.network = false;
        let (running, pipes) = process::spawn_argv(
            &ctx.sandbox,
            &scope,
            argv,
            &ctx.workspace,
            process::Io::Piped,
        )
        .map_err(|e| {
            Refusal::new(
                ErrorCode::Internal,
                format!("The process could not be started: {e}."),
                "Tell the user; check that the sandbox works (`codesmith doctor`).",
            )
        })?;
        let Some((stdin, stdout)) = pipes else {
            return Err(Refusal::internal());
        };
        Ok(Interactive {
            running,
            stdin,
            stdout: Some(stdout),
        })
    }

    /// The process's stdout, where the harness reads its answers (once; `None` after).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// What the process wrote to stderr so far (lossy UTF-8; bounded like a shell
    /// command's capture).
    pub fn stderr_text(&self) -> String {
        process::lock(&self.running.output).text_from(0, true).0
    }

    /// Kills the process and everything it started, however it detached (its reaper, its
    /// process group, every process carrying its marker). Returns how many processes were
    /// killed.
    pub fn kill(&mut self) -> usize {
        self.running.kill_tree().killed.len()
    }

    /// When the process has exited without ever running because bubblewrap could not set
    /// the sandbox up, why (quoting bubblewrap); `None` while it runs or when it ran.
    pub fn sandbox_failure(&mut self) -> Option<crate::sandbox::SetupFailure> {
        let status = self.running.try_status()?;
        let text = self.stderr_text();
        self.running.setup_failure(status, &text)
    }

    /// True once the process has exited (without waiting).
    pub fn exited(&mut self) -> bool {
        self.running.try_status().is_some()
    }

    /// Waits, at most `grace` in all, for the process to exit and for its stderr to be
    /// collected to the end, so that [`Interactive::stderr_text`] holds its last words (a
    /// traceback, `MemoryError`) when it has just closed its stdout. True when it exited.
    pub async fn settle(&mut self, grace: std::time::Duration) -> bool {
        let started = std::time::Instant::now();
        let exited = self.running.wait_for(grace).await.is_some();
        if exited {
            self.running
                .drain(grace.saturating_sub(started.elapsed()))
                .await;
        }
        exited
    }
}
