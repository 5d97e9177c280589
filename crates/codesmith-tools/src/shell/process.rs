//! Spawning a shell command in its own process group and capturing its output.
//!
//! On Linux every command runs under its own reaper ([`super::reaper`]), which holds
//! everything the command starts however it detached, reports the shell's exit status on a
//! pipe, and takes the tree down when CodeSmith tells it to or dies. Every command also
//! carries a unique marker in its environment, a second way to find what it started (see
//! [`super::tree`]).

use std::ffi::OsString;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use super::tree;
use crate::sandbox::{GitGuard, Sandbox, Scope};

/// Most bytes kept in memory per command; beyond it only a rolling tail is kept.
const MAX_CAPTURE: usize = 32 * 1024 * 1024;
/// Size of the rolling tail kept past [`MAX_CAPTURE`].
const OVERFLOW_TAIL: usize = 64 * 1024;

/// Output collected from stdout and stderr, in arrival order.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    data: Vec<u8>,
    dropped: usize,
    tail: Vec<u8>,
}

impl Captured {
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if self.dropped == 0 && self.data.len() + chunk.len() <= MAX_CAPTURE {
            self.data.extend_from_slice(chunk);
            return;
        }
        self.dropped += chunk.len();
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * OVERFLOW_TAIL {
            let cut = self.tail.len() - OVERFLOW_TAIL;
            self.tail.drain(..cut);
        }
    }

    /// Bytes received so far (kept or not): grows with every chunk.
    pub(crate) fn len(&self) -> usize {
        self.data.len() + self.dropped
    }

    /// Text from byte `from` on (lossy UTF-8), ending before an incomplete trailing
    /// character unless `finished`. Returns the text and the new cursor.
    pub(crate) fn text_from(&self, from: usize, finished: bool) -> (String, usize) {
        let bytes = self.data.get(from..).unwrap_or(&[]);
        let end = if finished {
            bytes.len()
        } else {
            complete_len(bytes)
        };
        let mut text = String::from_utf8_lossy(&bytes[..end]).into_owned();
        if finished && self.dropped > 0 {
            text.push_str(&format!(
                "\n[... more than {MAX_CAPTURE} bytes of output; the rest was not kept except \
                 this tail ...]\n"
            ));
            text.push_str(&String::from_utf8_lossy(&self.tail));
        }
        (text, from + end)
    }
}

/// Length of `bytes` without a UTF-8 sequence cut off at the end (a later read completes
/// it).
fn complete_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let b = bytes[len - back];
        if b < 0x80 {
            return len;
        }
        if b >= 0xC0 {
            let width = match b {
                0xF0.. => 4,
                0xE0.. => 3,
                _ => 2,
            };
            return if back < width { len - back } else { len };
        }
    }
    len
}

/// Shared handle on a command's captured output.
pub(crate) type SharedOutput = Arc<Mutex<Captured>>;

/// Locks captured output, recovering from a poisoned lock (the buffer has no invariant a
/// panicking reader could break).
pub(crate) fn lock(out: &SharedOutput) -> std::sync::MutexGuard<'_, Captured> {
    out.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running command.
#[derive(Debug)]
pub(crate) struct Running {
    /// The command's top process: its reaper on Linux, else the shell itself.
    pub(crate) child: Child,
    /// The pid of `child`, also its process group.
    pgid: Option<i32>,
    /// Where the reaper reports the shell's wait status (`None`: `child` is the shell).
    status_pipe: Option<tokio::net::unix::pipe::Receiver>,
    /// The shell's exit status, once known.
    exit: Option<ExitStatus>,
    /// The value of [`tree::MARKER_ENV`] every process of this command inherits.
    marker: String,
    /// When the shell started (clock ticks after boot): older processes cannot be its own.
    since: u64,
    /// True once `child` was reaped (its pid may be reused after that).
    reaped: bool,
    /// True once the tree was swept after the shell had been reaped: nothing is left.
    swept: bool,
    pub(crate) output: SharedOutput,
    readers: Vec<JoinHandle<()>>,
    pub(crate) started: Instant,
    /// Undoes git redirections the command created, once it is over.
    guard: GitGuard,
    /// Tells bubblewrap's own failure apart from the command's exit status.
    setup: crate::sandbox::SetupReport,
}

impl Drop for Running {
    /// A command dropped while anything of it still runs (a cancelled call, a session
    /// that ends) takes its whole tree with it, and leaves no git redirection behind.
    fn drop(&mut self) {
        if !self.swept {
            self.kill_tree();
        }
        let _ = self.guard.finish();
    }
}

/// Starts `bash -c script` under the sandbox in `cwd`, in a new process group, with stdin
/// closed and stdout/stderr captured.
pub(crate) fn spawn(
    sandbox: &Sandbox,
    scope: &Scope,
    script: &str,
    cwd: &Path,
) -> std::io::Result<Running> {
    let argv: Vec<OsString> = vec!["bash".into(), "-c".into(), script.into()];
    spawn_argv(sandbox, scope, argv, cwd, Io::Captured).map(|(running, _)| running)
}

/// What a started process's stdin, stdout and stderr are connected to.
#[derive(Debug)]
pub(crate) enum Io {
    /// stdin closed; stdout and stderr captured together.
    Captured,
    /// stdin and stdout are pipes handed back to the caller; stderr captured.
    Piped,
    /// All three are this pseudo-terminal's secondary side (the caller keeps the primary).
    Terminal(std::os::fd::OwnedFd),
}

/// The pipes of a process started with `piped` set: what the harness writes to its stdin
/// and reads from its stdout.
pub(crate) type Pipes = Option<(tokio::process::ChildStdin, tokio::process::ChildStdout)>;

/// The refusal for a command that could not be started: names why (a sandbox that cannot
/// be set up for this workspace says what to change there).
pub(crate) fn start_refused(e: &std::io::Error) -> crate::Refusal {
    crate::Refusal::new(
        crate::ErrorCode::Internal,
        format!("The command could not be started: {e}."),
        "Fix what the message names, then run the command again; if it is outside the \
         workspace, tell the user.",
    )
}

/// Starts `argv` under the sandbox in `cwd`, in a new process group, under its own reaper.
/// `io` says where its standard streams go: [`Io::Captured`] closes stdin and captures
/// stdout with stderr; [`Io::Piped`] hands stdin and stdout back to the caller (a resident
/// interpreter the harness talks to) and captures stderr; [`Io::Terminal`] attaches all
/// three to a pseudo-terminal whose primary side the caller reads (nothing is captured
/// here).
pub(crate) fn spawn_argv(
    sandbox: &Sandbox,
    scope: &Scope,
    argv: Vec<OsString>,
    cwd: &Path,
    io: Io,
) -> std::io::Result<(Running, Pipes)> {
    let piped = matches!(io, Io::Piped);
    let marker = tree::new_marker();
    let guard = GitGuard::before(scope, sandbox.backend.isolates());
    if argv.is_empty() {
        return Err(std::io::Error::other("empty command line"));
    }
    let launch = sandbox.backend.launch(argv, scope)?;
    let mut cmd = Command::new(launch.program());
    // On Linux the reaper is forked first (its hook runs before the launch's own set-up,
    // which then happens in the command's process only).
    #[cfg(target_os = "linux")]
    let pipe = {
        use std::os::fd::AsRawFd;
        let pipe = super::reaper::StatusPipe::new()?;
        super::reaper::install(&mut cmd, pipe.write.as_raw_fd());
        pipe
    };
    let setup = launch.configure(cmd.as_std_mut())?;
    match io {
        Io::Terminal(secondary) => {
            cmd.stdin(Stdio::from(secondary.try_clone()?))
                .stdout(Stdio::from(secondary.try_clone()?))
                .stderr(Stdio::from(secondary))
                .env("TERM", "xterm");
        }
        Io::Piped => {
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        }
        Io::Captured => {
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        }
    }
    cmd.current_dir(cwd)
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env(tree::MARKER_ENV, &marker);
    // On Linux the reaper moves itself into a group of its own, after naming itself (see
    // `reaper::install`); elsewhere the command leads a new group.
    #[cfg(not(target_os = "linux"))]
    cmd.process_group(0);
    #[cfg(not(target_os = "linux"))]
    cmd.kill_on_drop(true);
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    #[cfg(target_os = "linux")]
    let status_pipe = {
        drop(pipe.write);
        Some(tokio::net::unix::pipe::Receiver::from_owned_fd(pipe.read)?)
    };
    #[cfg(not(target_os = "linux"))]
    let status_pipe = None;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let since = tree::start_time(pgid);
    let output: SharedOutput = Arc::default();
    let mut readers = Vec::with_capacity(2);
    let pipes = if piped {
        child.stdin.take().zip(child.stdout.take())
    } else {
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(pump(out, output.clone())));
        }
        None
    };
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(pump(err, output.clone())));
    }
    let running = Running {
        child,
        pgid,
        status_pipe,
        exit: None,
        marker,
        since,
        reaped: false,
        swept: false,
        output,
        readers,
        started,
        guard,
        setup,
    };
    Ok((running, pipes))
}

async fn pump(mut pipe: impl AsyncRead + Unpin, output: SharedOutput) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lock(&output).push(&buf[..n]),
        }
    }
}

impl Running {
    /// Kills everything this command started, however it detached: its process group
    /// and every process carrying its marker (see [`super::tree`]). Returns what was
    /// killed; after the shell has exited this kills only what it left behind.
    pub(crate) fn kill_tree(&mut self) -> tree::KillReport {
        let root = self.pgid.filter(|_| !self.reaped);
        let holds = self.status_pipe.is_some();
        // The sweep kills the group and the reaper's descendants (and so can name what it
        // killed); it leaves a reaper alive, so that nothing orphaned during the sweep
        // escapes it.
        let report = tree::kill_tree(root, holds, &self.marker, self.since);
        if let Some(pgid) = root {
            use nix::sys::signal::{Signal, kill, killpg};
            let pid = nix::unistd::Pid::from_raw(pgid);
            if holds {
                // The reaper kills what may be left under it, reaps it all and exits.
                let _ = kill(pid, Signal::SIGTERM);
            } else {
                // The backstop where `/proc` cannot be read.
                let _ = killpg(pid, Signal::SIGKILL);
                let _ = self.child.start_kill();
            }
        }
        if self.reaped || (holds && self.exit.is_some()) {
            self.swept = true;
        }
        report
    }

    /// Waits for the shell to exit, at most `limit`; `None` on timeout.
    pub(crate) async fn wait_for(&mut self, limit: Duration) -> Option<ExitStatus> {
        if let Some(status) = self.exit {
            return Some(status);
        }
        let status = tokio::time::timeout(limit, self.shell_exit())
            .await
            .ok()
            .flatten();
        if status.is_some() {
            self.exit = status;
            self.undo_git_redirects();
        }
        status
    }

    /// The shell's exit status: from the reaper's report, or (without a reaper, or when
    /// the reaper died without reporting) from the top process itself.
    async fn shell_exit(&mut self) -> Option<ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        if let Some(pipe) = &self.status_pipe {
            let mut raw = [0u8; 4];
            let mut got = 0;
            while got < raw.len() {
                if pipe.readable().await.is_err() {
                    break;
                }
                match pipe.try_read(&mut raw[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => break,
                }
            }
            if got == raw.len() {
                return Some(ExitStatus::from_raw(i32::from_ne_bytes(raw)));
            }
        }
        let status = self.child.wait().await.ok()?;
        self.reaped = true;
        Some(status)
    }

    /// Waits for the shell to exit or for `cancel`; `None` when cancelled first.
    pub(crate) async fn wait_or_cancel(
        &mut self,
        limit: Duration,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<ExitStatus>, Cancelled> {
        tokio::select! {
            status = self.wait_for(limit) => Ok(status),
            () = cancel.cancelled() => Err(Cancelled),
        }
    }

    /// Exit status if the shell has exited, without waiting.
    pub(crate) fn try_status(&mut self) -> Option<ExitStatus> {
        if self.exit.is_some() {
            return self.exit;
        }
        let status = match &self.status_pipe {
            Some(pipe) => {
                use std::os::unix::process::ExitStatusExt;
                let mut raw = [0u8; 4];
                // The 4-byte report is written at once, below PIPE_BUF: it arrives whole.
                match pipe.try_read(&mut raw) {
                    Ok(4) => Some(ExitStatus::from_raw(i32::from_ne_bytes(raw))),
                    Ok(_) => self.reap_top(),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
                    Err(_) => self.reap_top(),
                }
            }
            None => self.reap_top(),
        };
        if status.is_some() {
            self.exit = status;
            self.undo_git_redirects();
        }
        status
    }

    /// The top process's status if it has exited, without waiting.
    fn reap_top(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().ok().flatten();
        self.reaped |= status.is_some();
        status
    }

    /// Removes the git redirections the command created (see [`GitGuard`]) and says so in
    /// its output.
    fn undo_git_redirects(&mut self) {
        for (path, err) in self.guard.finish() {
            let note = match err {
                None => format!(
                    "\ncodesmith: removed {} that the command created (it would redirect git's configuration and hooks)\n",
                    path.display()
                ),
                Some(e) => format!(
                    "\ncodesmith: could not remove {} that the command created: {e}\n",
                    path.display()
                ),
            };
            lock(&self.output).push(note.as_bytes());
        }
    }

    /// Waits (at most `grace`) for the output pipes to reach end of file. Processes left in
    /// the background may hold them open; their later output is then not collected.
    /// Returns true when all output was collected.
    ///
    /// Once the shell has exited and its output is complete, the rest of `grace` is also
    /// given to the reaper to find its tree empty and exit: a process that was ending on its
    /// own (the PID 1 of a sandbox winding down after its command) is not a leftover.
    pub(crate) async fn drain(&mut self, grace: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + grace;
        for reader in &mut self.readers {
            if tokio::time::timeout_at(deadline, &mut *reader)
                .await
                .is_err()
            {
                return false;
            }
        }
        self.readers.clear();
        if self.status_pipe.is_some()
            && self.exit.is_some()
            && !self.reaped
            && let Ok(Ok(_)) = tokio::time::timeout_at(deadline, self.child.wait()).await
        {
            self.reaped = true;
        }
        true
    }
}

/// The wait ended because the call was cancelled.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cancelled;

impl Running {
    /// When the command never ran because bubblewrap could not set the sandbox up (see
    /// [`crate::sandbox::SetupReport`]), why, quoting bubblewrap's message from `output`
    /// (what the command's process printed); `None` when `status` is the command's own.
    /// Every path that reports a sandboxed command's end asks this first.
    pub(crate) fn setup_failure(
        &mut self,
        status: ExitStatus,
        output: &str,
    ) -> Option<crate::sandbox::SetupFailure> {
        self.setup
            .failed(status)
            .then(|| crate::sandbox::SetupFailure::from_output(output))
    }
}

/// Exit code of a status: the code, or 128 + signal when killed by a signal.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::complete_len;

    #[test]
    fn incomplete_trailing_char_waits_for_the_next_read() {
        let e = "é".as_bytes();
        assert_eq!(complete_len(b"ab"), 2);
        assert_eq!(complete_len(&[b'a', e[0]]), 1);
        assert_eq!(complete_len(&[b'a', e[0], e[1]]), 3);
        let euro = "€".as_bytes();
        assert_eq!(complete_len(&euro[..2]), 0);
    }
}
