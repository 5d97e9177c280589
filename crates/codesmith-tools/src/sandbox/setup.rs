//! Telling bubblewrap's own failure apart from the command's exit status.
//!
//! bubblewrap exits with status 1 when it cannot set the sandbox up (a namespace it cannot
//! create, a mount that fails, a directory it cannot enter), which is also what many
//! commands exit with. It reports on its `--json-status-fd` one JSON document
//! `{ "exit-code": N }` when, and only when, the command it executed has exited (bubblewrap
//! 0.5 and later; Debian 12 ships 0.8): a bwrap that ends with no such document never ran
//! the command. [`SetupReport`] reads that pipe once the status is known; [`SetupFailure`]
//! is what the caller reports instead of an exit code, quoting bubblewrap's message.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::ExitStatus;

/// The read end of bubblewrap's `--json-status-fd` pipe for one command (see the module
/// documentation), or nothing for a launch that does not go through bubblewrap.
///
/// Keep it until the process has ended: bubblewrap writes to this pipe while it sets up,
/// and a closed read end kills it there (`SIGPIPE`), leaving its half-made sandbox waiting.
#[derive(Debug, Default)]
pub struct SetupReport {
    /// Non-blocking read end; `None` without bubblewrap.
    pipe: Option<std::fs::File>,
    /// What was read so far (a few hundred bytes at most: bwrap writes two short lines).
    seen: Vec<u8>,
}

impl SetupReport {
    /// A report over `read`, the read end of the pipe handed to `--json-status-fd`.
    ///
    /// # Errors
    /// The pipe cannot be made non-blocking.
    pub(crate) fn over(read: OwnedFd) -> std::io::Result<Self> {
        let flags = rustix::fs::fcntl_getfl(&read)?;
        rustix::fs::fcntl_setfl(&read, flags | rustix::fs::OFlags::NONBLOCK)?;
        Ok(SetupReport {
            pipe: Some(std::fs::File::from(read)),
            seen: Vec::new(),
        })
    }

    /// True when the process that executed bubblewrap ended with `status` without having
    /// run the command: it exited (not killed by a signal) with a non-zero code and never
    /// reported the command's exit code. False for a launch without bubblewrap, and for a
    /// bwrap killed by a signal (a timeout, a cancellation), whose command may have run.
    /// Reads only what bubblewrap wrote before exiting; never blocks.
    pub fn failed(&mut self, status: ExitStatus) -> bool {
        let Some(pipe) = self.pipe.as_mut() else {
            return false;
        };
        let mut buf = [0u8; 512];
        while self.seen.len() < 4096 {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => self.seen.extend_from_slice(&buf[..n]),
            }
        }
        let ran = self
            .seen
            .windows(b"\"exit-code\"".len())
            .any(|w| w == b"\"exit-code\"");
        !ran && status.code().is_some_and(|c| c != 0)
    }
}

/// Why a sandboxed command did not run: bubblewrap's own message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupFailure {
    /// bubblewrap's lines (`bwrap: …`) from the command's output, or a stand-in when it
    /// printed none there.
    pub message: String,
    /// True when the cause is a passing shortage (`EAGAIN`, `ENOSPC`, `EINTR`: a process
    /// or namespace limit reached on a busy machine), worth one more try.
    pub transient: bool,
}

/// The error texts (`strerror`) of the shortages that pass: `EAGAIN`, `ENOSPC`, `EINTR`.
const TRANSIENT: [&str; 3] = [
    "Resource temporarily unavailable",
    "No space left on device",
    "Interrupted system call",
];

impl SetupFailure {
    /// The failure as told by `output` (what the command's process printed: bubblewrap
    /// writes its complaint there, each line starting with `bwrap: `).
    pub fn from_output(output: &str) -> Self {
        let lines: Vec<&str> = output
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("bwrap: "))
            .take(4)
            .collect();
        let message = if lines.is_empty() {
            "bwrap exited before starting the command and printed no reason".to_string()
        } else {
            lines.join("; ")
        };
        let transient = TRANSIENT.iter().any(|t| message.contains(t));
        SetupFailure { message, transient }
    }

    /// The refusal a tool returns for it (`SANDBOX_FAILED`): bubblewrap's message, that the
    /// command did not run, and what to do.
    pub fn refusal(&self) -> crate::Refusal {
        let hint = if self.transient && self.message.contains("Resource temporarily unavailable") {
            format!(
                "A limit was reached on a busy machine (for a root CodeSmith, the processes of \
                 the sandbox's user, uid {}, across every sandboxed command on the host count \
                 against {}). Nothing ran: run the command again in a moment; if it keeps \
                 failing, tell the user to stop other sandboxed work or run `codesmith doctor`.",
                super::SANDBOX_UID,
                super::limits::MAX_PROCESSES,
            )
        } else if self.transient {
            "A limit was reached on a busy machine. Nothing ran: run the command again in a \
             moment; if it keeps failing, tell the user to run `codesmith doctor`."
                .to_string()
        } else {
            "Nothing ran. Do not retry: tell the user, who can check the sandbox with \
             `codesmith doctor`."
                .to_string()
        };
        crate::Refusal::new(
            crate::ErrorCode::SandboxFailed,
            format!(
                "The sandbox (bubblewrap) could not be set up, so the command did not run: {}.",
                self.message
            ),
            hint,
        )
        .with("sandbox", self.message.clone())
        .with("transient", self.transient)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bwraps_lines_are_quoted_and_shortages_are_transient() {
        let f = SetupFailure::from_output(
            "noise\nbwrap: Creating new namespace failed: Resource temporarily unavailable\n",
        );
        assert_eq!(
            f.message,
            "bwrap: Creating new namespace failed: Resource temporarily unavailable"
        );
        assert!(f.transient);
        let f = SetupFailure::from_output("bwrap: Can't find source path /x: No such file\n");
        assert!(!f.transient);
        let r = f.refusal();
        assert_eq!(r.code, crate::ErrorCode::SandboxFailed);
        assert!(
            r.message.contains("Can't find source path /x"),
            "{}",
            r.message
        );
        assert!(SetupFailure::from_output("").message.contains("no reason"));
    }
}
