//! The one shutdown path of every front end (`exec`, the UI, `tool`, `mcp`): a signal
//! that asks CodeSmith to stop (`SIGINT`, `SIGTERM`, `SIGHUP`) cancels the running work
//! through a [`CancellationToken`], so a running shell command is killed with everything it
//! started, every tool call gets a result, and the session is closed and synced; the front
//! end then exits with 128 + the signal number (130, 143, 129), as shells report it.
//!
//! A `SIGKILL` cannot be caught: then the commands die with their reapers, whose
//! parent-death signal fires (see `codesmith_tools::shell`), and the session's torn tail
//! is repaired when it is next opened. While the front end winds down (a few seconds at
//! most), further signals of the same kinds are absorbed.

use std::sync::{Arc, OnceLock};

use codesmith_tools::CancellationToken;
use tokio::signal::unix::{SignalKind, signal};

use crate::exit::Exit;

/// A signal that asks a front end to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopSignal {
    /// `SIGINT` (Ctrl-C at a terminal in line mode, `kill -INT`): exit 130.
    Interrupt,
    /// `SIGTERM` (`kill`, a service manager): exit 143.
    Terminate,
    /// `SIGHUP` (the terminal went away): exit 129.
    Hangup,
}

impl StopSignal {
    /// Every stop signal.
    pub(crate) const ALL: &'static [StopSignal] = &[
        StopSignal::Interrupt,
        StopSignal::Terminate,
        StopSignal::Hangup,
    ];

    /// The signal's name, e.g. `SIGTERM`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
            StopSignal::Hangup => "SIGHUP",
        }
    }

    /// 128 + the signal number.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            StopSignal::Interrupt => 130,
            StopSignal::Terminate => 143,
            StopSignal::Hangup => 129,
        }
    }

    fn kind(self) -> SignalKind {
        match self {
            StopSignal::Interrupt => SignalKind::interrupt(),
            StopSignal::Terminate => SignalKind::terminate(),
            StopSignal::Hangup => SignalKind::hangup(),
        }
    }
}

/// Listeners for stop signals, installed before the front end starts its work.
#[derive(Debug, Clone)]
pub(crate) struct Shutdown {
    token: CancellationToken,
    caught: Arc<OnceLock<StopSignal>>,
}

impl Shutdown {
    /// Listens for `signals` (from then on they no longer end the process at once); the
    /// first one cancels [`Shutdown::token`].
    ///
    /// # Errors
    /// A listener could not be installed (no signal support in this runtime).
    pub(crate) fn listen(signals: &[StopSignal]) -> std::io::Result<Self> {
        let token = CancellationToken::new();
        let caught = Arc::new(OnceLock::new());
        for &sig in signals {
            let mut stream = signal(sig.kind())?;
            let token = token.clone();
            let caught = caught.clone();
            tokio::spawn(async move {
                if stream.recv().await.is_some() {
                    let _ = caught.set(sig);
                    token.cancel();
                }
                // Keep the listener, so that later signals are absorbed, not fatal.
                while stream.recv().await.is_some() {}
            });
        }
        Ok(Shutdown { token, caught })
    }

    /// The token cancelled by the first stop signal: pass it to the running work.
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// The stop signal caught, if any.
    pub(crate) fn caught(&self) -> Option<StopSignal> {
        self.caught.get().copied()
    }

    /// Waits for the first stop signal.
    pub(crate) async fn requested(&self) -> StopSignal {
        self.token.cancelled().await;
        self.caught().unwrap_or(StopSignal::Terminate)
    }
}

/// How a front end ends after `sig`: `what` (what was stopped and what to do next) on
/// stderr, and exit 128 + the signal.
pub(crate) fn exit(sig: StopSignal, what: &str) -> Exit {
    eprintln!("codesmith: interrupted by {}: {what}", sig.name());
    Exit::Code(std::process::ExitCode::from(sig.exit_code()))
}
