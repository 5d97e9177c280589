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

/// Most bytes of output kept in memory per command: the first half of it from the start
/// (so a finished command's spilled output begins where the command began) and a rolling
/// window of the newest half (so a long-running session's latest output stays readable).
/// What falls between is counted and named by an "N bytes omitted" marker. The bound also
/// bounds the one pass that masks credentials in a finished command's spilled output.
const MAX_CAPTURE: usize = 8 * 1024 * 1024;
/// Bytes kept from the start of the output.
const HEAD_KEEP: usize = MAX_CAPTURE / 2;
/// Newest bytes kept past [`HEAD_KEEP`] (a rolling window).
const WINDOW: usize = MAX_CAPTURE / 2;
/// How far the window may grow past [`WINDOW`] before its oldest bytes are dropped (the
/// move is paid once per this many bytes).
const WINDOW_SLACK: usize = WINDOW / 8;

/// Output collected from stdout and stderr, in arrival order: the first [`HEAD_KEEP`]
/// bytes and a rolling window of the newest [`WINDOW`] bytes, with the count of the bytes
/// dropped between them. Offsets are absolute (bytes since the command started), so a
/// reader's cursor stays valid as the window moves.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    head: Vec<u8>,
    window: Vec<u8>,
    /// Offset of `window[0]`; the bytes from `head.len()` to here were dropped.
    window_start: usize,
}

/// A bounded read of captured output (see [`Captured::read`]): the first bytes of the span
/// read, how many bytes between were left out, and its last bytes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Slice {
    /// The span's first bytes (lossy UTF-8); the whole span when nothing was left out.
    pub(crate) head: String,
    /// Bytes between `head` and `tail` not returned (dropped from memory or over the
    /// read's limits).
    pub(crate) omitted: usize,
    /// The span's last bytes (lossy UTF-8); empty when nothing was left out.
    pub(crate) tail: String,
    /// Where the next read starts: the end of the span, less an incomplete trailing
    /// character a later read completes.
    pub(crate) next: usize,
}

impl Captured {
    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        if self.head.len() < HEAD_KEEP {
            let take = chunk.len().min(HEAD_KEEP - self.head.len());
            self.head.extend_from_slice(&chunk[..take]);
            self.window_start = self.head.len();
            chunk = &chunk[take..];
        }
        if chunk.is_empty() {
            return;
        }
        self.window.extend_from_slice(chunk);
        if self.window.len() > WINDOW + WINDOW_SLACK {
            let cut = self.window.len() - WINDOW;
            self.window.drain(..cut);
            self.window_start += cut;
        }
    }

    /// Bytes received so far (kept or not): grows with every chunk.
    pub(crate) fn len(&self) -> usize {
        self.window_start + self.window.len()
    }

    /// The kept bytes from `from` to `to` (absolute offsets; dropped bytes are skipped,
    /// so callers ask only for ranges the capture holds whole).
    fn collect(&self, from: usize, to: usize) -> Vec<u8> {
        let mut out = Vec::new();
        if from < self.head.len() {
            out.extend_from_slice(&self.head[from..to.min(self.head.len())]);
        }
        let start = self.window_start.max(from);
        if to > start {
            out.extend_from_slice(&self.window[start - self.window_start..to - self.window_start]);
        }
        out
    }

    /// The output from byte `from` on, at most `max_head` bytes of its start and
    /// `max_tail` bytes of its end (cut on character boundaries), with the count of what
    /// lies between. Bytes the capture dropped count as omitted. Unless `finished`, an
    /// incomplete trailing character is left for the next read. The cost is bounded by the
    /// limits, not by how much output arrived.
    pub(crate) fn read(
        &self,
        from: usize,
        max_head: usize,
        max_tail: usize,
        finished: bool,
    ) -> Slice {
        let end = self.len();
        let from = from.min(end);
        let has_gap = from < self.head.len() && self.window_start > self.head.len();
        // Bytes right after `from` that were dropped (a cursor that fell behind the window).
        let lost = if from >= self.head.len() {
            self.window_start.saturating_sub(from)
        } else {
            0
        };
        let start = from + lost;
        let keep_end = |bytes: &[u8]| {
            if finished {
                bytes.len()
            } else {
                complete_len(bytes)
            }
        };
        if !has_gap && lost == 0 && end - start <= max_head.saturating_add(max_tail) {
            let bytes = self.collect(start, end);
            let keep = keep_end(&bytes);
            return Slice {
                head: String::from_utf8_lossy(&bytes[..keep]).into_owned(),
                omitted: 0,
                tail: String::new(),
                next: start + keep,
            };
        }
        // The head part: the first bytes of the first kept run.
        let run_end = if start < self.head.len() {
            self.head.len()
        } else {
            end
        };
        let head_bytes = self.collect(start, run_end.min(start.saturating_add(max_head)));
        let head_len = complete_len(&head_bytes);
        let head_end = start + head_len;
        // The tail part: the last bytes, after the head part and past any gap.
        let mut tail_from = end.saturating_sub(max_tail).max(head_end);
        if has_gap {
            tail_from = tail_from.max(self.window_start);
        }
        let mut tail_bytes = self.collect(tail_from, end);
        let lead = tail_bytes
            .iter()
            .take(3)
            .take_while(|b| **b & 0xC0 == 0x80)
            .count();
        tail_bytes.drain(..lead);
        tail_from += lead;
        let keep = keep_end(&tail_bytes);
        Slice {
            head: String::from_utf8_lossy(&head_bytes[..head_len]).into_owned(),
            omitted: lost + (tail_from - head_end),
            tail: String::from_utf8_lossy(&tail_bytes[..keep]).into_owned(),
            next: tail_from + keep,
        }
    }

    /// Up to `max` kept bytes from `from` on, for a search that streams over the
    /// output: the text (lossy UTF-8, ending before an incomplete character), the count
    /// of bytes dropped right at `from` that it skipped, and where the next chunk starts
    /// (`from` itself when nothing new is complete yet).
    pub(crate) fn chunk(&self, from: usize, max: usize) -> (String, usize, usize) {
        let end = self.len();
        let from = from.min(end);
        let lost = if from >= self.head.len() {
            self.window_start.saturating_sub(from)
        } else {
            0
        };
        let start = from + lost;
        let run_end = if start < self.head.len() {
            self.head.len()
        } else {
            end
        };
        let bytes = self.collect(start, run_end.min(start.saturating_add(max)));
        let keep = complete_len(&bytes);
        let next = if keep == 0 && lost == 0 {
            from
        } else {
            start + keep
        };
        (
            String::from_utf8_lossy(&bytes[..keep]).into_owned(),
            lost,
            next,
        )
    }

    /// Text from byte `from` on (lossy UTF-8), ending before an incomplete trailing
    /// character unless `finished`; bytes the capture dropped are replaced by an "N bytes
    /// omitted" line. Returns the text and the new cursor.
    pub(crate) fn text_from(&self, from: usize, finished: bool) -> (String, usize) {
        let slice = self.read(from, MAX_CAPTURE, MAX_CAPTURE, finished);
        let mut text = slice.head;
        if slice.omitted > 0 {
            text.push_str(&omitted_line(slice.omitted, &capture_gap()));
        }
        text.push_str(&slice.tail);
        (text, slice.next)
    }
}

/// The line that stands for `bytes` of output left out, saying `why`.
fn omitted_line(bytes: usize, why: &str) -> String {
    format!("\n[... {bytes} bytes of output omitted: {why} ...]\n")
}

/// The line that ends a read which held back `bytes` of an escape sequence not yet
/// finished.
fn held_line(bytes: usize) -> String {
    format!(
        "\n[{bytes} bytes held back: an escape sequence the program started is not finished; \
         they show when it ends, or as text once {} bytes of it are open]\n",
        codesmith_policy::MAX_OPEN_SEQUENCE
    )
}

/// The line that stands for `bytes` of an escape sequence dropped because it stayed open
/// past [`codesmith_policy::MAX_OPEN_SEQUENCE`] bytes.
fn dropped_line(bytes: usize) -> String {
    format!(
        "\n[{bytes} bytes dropped: an escape sequence the program started did not end within \
         {} bytes; what follows is shown as text]\n",
        codesmith_policy::MAX_OPEN_SEQUENCE
    )
}

/// Why a command's kept output has a gap.
fn capture_gap() -> String {
    format!(
        "only the first {} MiB and the newest {} MiB of a command's output are kept",
        HEAD_KEEP >> 20,
        WINDOW >> 20
    )
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

/// Raw bytes a read of a running session or task looks at from the start and from the end
/// of the new output: enough to fill the shell budget after the terminal filter, and a
/// bound on each read's cost however much output arrived since the last one.
const READ_HEAD: usize = 2 * crate::spill::HEAD_BYTES;
const READ_TAIL: usize = 2 * crate::spill::TAIL_BYTES;

/// Bytes of a session's or task's output saved for `retrieve_tool_result` when it is over:
/// its first and its last (a flood in between is counted, not saved, so the one pass that
/// masks credentials in it stays short).
const SPILL_HEAD: usize = 512 * 1024;
const SPILL_TAIL: usize = 512 * 1024;

/// The output since `*cursor` as a read of an interactive session or background task
/// shows it, and moves the cursor past it. At most [`READ_HEAD`] bytes of its start and
/// [`READ_TAIL`] of its end are filtered (the rest is counted in the "N bytes omitted"
/// marker); credentials are masked; unless `finished`, an escape sequence still being
/// written waits for the next read. With `spill`, the output is saved for
/// `retrieve_tool_result` when the shown text is cut (its first [`SPILL_HEAD`] and last
/// [`SPILL_TAIL`] bytes, with a line counting what lies between).
pub(crate) fn read_new(
    home: &Path,
    output: &SharedOutput,
    cursor: &mut usize,
    finished: bool,
    spill: bool,
) -> (crate::spill::Capped, Option<String>) {
    let mut slice = lock(output).read(*cursor, READ_HEAD, READ_TAIL, finished);
    if !finished {
        let last = if slice.omitted > 0 {
            &mut slice.tail
        } else {
            &mut slice.head
        };
        if let Some(open) = codesmith_policy::unfinished_sequence_start(last)
            && !last[open..].contains('\u{FFFD}')
        {
            let held = last.len() - open;
            slice.next -= held;
            last.truncate(open);
            last.push_str(&held_line(held));
        } else if let Some(open) = last.rfind('\x1b')
            && last.len() - open > codesmith_policy::MAX_OPEN_SEQUENCE
        {
            // A sequence still open after MAX_OPEN_SEQUENCE bytes will not end: its
            // start is dropped, and what follows it shows as text.
            let mut cut = open + codesmith_policy::MAX_OPEN_SEQUENCE;
            while !last.is_char_boundary(cut) {
                cut -= 1;
            }
            if codesmith_policy::unfinished_sequence_start(&last[open..cut]) == Some(0) {
                last.replace_range(open..cut, &dropped_line(cut - open));
            }
        }
    }
    *cursor = slice.next;
    let full = spill.then(|| {
        let kept = lock(output).read(0, SPILL_HEAD, SPILL_TAIL, true);
        let mut full = kept.head;
        if kept.omitted > 0 {
            full.push_str(&omitted_line(
                kept.omitted,
                "a session's saved output keeps its first and last 512 KiB",
            ));
        }
        full.push_str(&kept.tail);
        codesmith_policy::scrub_secrets(&full).into_owned()
    });
    let head = codesmith_policy::scrub_secrets(&slice.head);
    let tail = codesmith_policy::scrub_secrets(&slice.tail);
    crate::spill::cap_parts(home, &head, slice.omitted, &tail, full.as_deref())
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_unterminated_escape_sequence_is_held_with_a_note_then_dropped_past_its_bound() {
        let home = tempfile::tempdir().unwrap();
        let output: SharedOutput = Arc::default();
        let mut cursor = 0;
        lock(&output).push(b"before\n\x1b]0;");
        let (read, _) = read_new(home.path(), &output, &mut cursor, false, false);
        assert!(read.text.starts_with("before\n"), "{:?}", read.text);
        assert!(read.text.contains("4 bytes held back"), "{:?}", read.text);
        assert_eq!(cursor, 7);
        // Lines keep coming and the title never ends: held (and said) up to the bound.
        lock(&output).push(b"line 1 SECRETLINE\n");
        let (read, _) = read_new(home.path(), &output, &mut cursor, false, false);
        assert!(read.text.contains("22 bytes held back"), "{:?}", read.text);
        assert!(!read.text.contains("SECRETLINE"));
        assert_eq!(cursor, 7);
        let filler = "x".repeat(codesmith_policy::MAX_OPEN_SEQUENCE);
        lock(&output).push(format!("{filler}\nline 2 AFTER\n").as_bytes());
        let (read, _) = read_new(home.path(), &output, &mut cursor, false, false);
        assert!(read.text.contains("4096 bytes dropped"), "{:?}", read.text);
        assert!(read.text.contains("line 2 AFTER"), "{:?}", read.text);
        assert!(!read.text.contains("held back"), "{:?}", read.text);
        assert_eq!(cursor, lock(&output).len());
        // A sequence that ends is stripped, with no note.
        lock(&output).push(b"\x1b]0;title\x07done\n");
        let (read, _) = read_new(home.path(), &output, &mut cursor, false, false);
        assert_eq!(read.text, "done\n");
    }

    /// `n` bytes of the line `tag\n` repeated.
    fn lines(tag: u8, n: usize) -> Vec<u8> {
        [tag, b'\n'].repeat(n / 2)
    }

    #[test]
    fn past_the_cap_the_newest_output_stays_readable_and_the_gap_is_counted() {
        let mut c = Captured::default();
        c.push(&lines(b'h', HEAD_KEEP));
        let mut cursor = c.len();
        // A running reader keeps up for a while, then falls behind a long flood.
        c.push(&lines(b'a', 1024));
        let first = c.read(cursor, 2000, 2000, false);
        assert_eq!((first.head.len(), first.omitted), (1024, 0));
        cursor = first.next;
        let flood = 3 * WINDOW;
        for _ in 0..flood / (1 << 20) {
            c.push(&lines(b'b', 1 << 20));
        }
        c.push(b"newest line\n");
        let total = HEAD_KEEP + 1024 + flood + 12;
        assert_eq!(c.len(), total);
        assert!(
            c.head.len() + c.window.len() <= HEAD_KEEP + WINDOW + WINDOW_SLACK,
            "memory stays bounded"
        );
        let read = c.read(cursor, 100, 100, false);
        assert!(read.tail.ends_with("b\nnewest line\n"), "{:?}", read.tail);
        assert_eq!(
            read.head.len() + read.omitted + read.tail.len(),
            total - cursor
        );
        assert!(
            read.omitted > flood - WINDOW,
            "the dropped bytes are counted"
        );
        assert_eq!(read.next, total);
        // Nothing new: an empty read, not the old output again.
        assert_eq!(c.read(read.next, 100, 100, false).head, "");
        // The whole text keeps the start, names the gap and ends with the newest output.
        let (full, _) = c.text_from(0, true);
        assert!(full.starts_with("h\nh\n"));
        let gap = total - HEAD_KEEP - c.window.len();
        assert!(
            full.contains(&format!("[... {gap} bytes of output omitted")),
            "gap {gap}"
        );
        assert!(full.ends_with("newest line\n"));
    }

    #[test]
    fn a_read_costs_its_limits_not_the_output_since_the_last_read() {
        let mut c = Captured::default();
        c.push(&[b'x'; 10_000]);
        c.push("é".as_bytes());
        c.push(&[b'y'; 10]);
        c.push(&"€".as_bytes()[..2]);
        let r = c.read(0, 100, 13, false);
        assert_eq!(r.head, "x".repeat(100));
        assert_eq!(r.tail, "y".repeat(10), "cut on a character boundary");
        assert_eq!(
            r.omitted,
            10_000 - 100 + 2,
            "the half character counts as omitted"
        );
        assert_eq!(r.next, 10_000 + 2 + 10, "the incomplete euro waits");
        let whole = c.read(0, 20_000, 0, true);
        assert_eq!((whole.omitted, whole.tail.as_str()), (0, ""));
        assert!(whole.head.ends_with("y\u{FFFD}"));
    }

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
