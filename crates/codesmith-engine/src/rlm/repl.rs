//! The resident Python process of one RLM session: found by probing, started through the
//! shell's sandbox and reaper ([`codesmith_tools::shell::Interactive`]), spoken to in JSON
//! lines (the protocol is described at the top of `driver.py`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use codesmith_tools::shell::Interactive;
use codesmith_tools::{ErrorCode, Refusal, ToolContext};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// The driver the REPL runs (`python -I -u -c DRIVER`).
const DRIVER: &str = include_str!("driver.py");

/// The names probed for an interpreter, in order.
pub const PYTHON_NAMES: [&str; 2] = ["python3", "python"];

/// Longest protocol line read from the driver (bytes): the driver keeps at most 8 Mi
/// characters of printed output per round, which JSON escaping can at most make six times
/// longer.
const MAX_LINE: u64 = 64 << 20;

/// Most characters of the driver's own text (a stray message, its stderr) one error shows:
/// whatever the round's code makes the process say, the model and the terminal get a
/// bounded, screened excerpt.
pub(super) const REPORT_CHARS: usize = 2_000;

/// How long a process that closed its pipe is given to exit and finish its stderr.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// How long the driver may take to start and report ready.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The first of [`PYTHON_NAMES`] found as an executable file in one of the directories of
/// `path_var` (a `PATH` value); `None` when there is none.
pub fn find_python(path_var: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    PYTHON_NAMES.iter().find_map(|name| {
        std::env::split_paths(path_var)
            .map(|dir| dir.join(name))
            .find(|p| {
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    })
}

/// The refusal when no interpreter was found.
pub(super) fn missing_python() -> Refusal {
    Refusal::new(
        ErrorCode::Unavailable,
        "The rlm tool needs Python 3, and neither `python3` nor `python` was found on PATH.",
        "Do not retry: do the work with the other tools, and tell the user that rlm needs \
         Python 3 (for example `apt-get install python3`, `brew install python`, or a python3 \
         on PATH).",
    )
    .with("probed", json!(PYTHON_NAMES))
}

/// One message of the driver, read from its stdout.
pub(super) type Message = Value;

/// A running REPL.
#[derive(Debug)]
pub(super) struct Repl {
    process: Interactive,
    reader: BufReader<tokio::process::ChildStdout>,
    /// Rounds begun so far: each `exec` carries its number and its `done` must echo it.
    rounds: u64,
    /// The interpreter that runs it.
    pub python: PathBuf,
}

/// Why talking to the REPL failed.
#[derive(Debug)]
pub(super) enum ReplError {
    /// The process ended or closed its pipe; the text is the tail of its stderr.
    Exited(String),
    /// The driver sent something that is not a protocol message.
    Protocol(String),
}

impl std::fmt::Display for ReplError {
    /// The text is the process's own (its stderr, what it sent), so it is shown screened
    /// and cut to [`REPORT_CHARS`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplError::Exited(tail) if tail.is_empty() => write!(f, "the Python process ended"),
            ReplError::Exited(tail) => write!(f, "the Python process ended: {}", report(tail)),
            ReplError::Protocol(what) => {
                write!(f, "the Python process broke the protocol: {}", report(what))
            }
        }
    }
}

/// `text` as an error may show it: terminal controls removed, then cut to [`REPORT_CHARS`].
pub(super) fn report(text: &str) -> String {
    super::cap_text(&codesmith_policy::screen_text(text), REPORT_CHARS)
}

impl Repl {
    /// Starts the driver under `python` in `ctx`'s sandbox without network, with its address
    /// space limited to `memory_bytes` (`ulimit -v`, i.e. `RLIMIT_AS`, soft and hard, set
    /// before Python starts), and waits for it to report ready.
    ///
    /// # Errors
    /// The isolation check's `DENIED`; `INTERNAL` when it cannot start or does not report ready.
    pub(super) async fn start(
        ctx: &ToolContext,
        python: &Path,
        memory_bytes: u64,
        max_batch: usize,
    ) -> Result<Repl, Refusal> {
        let kib = (memory_bytes / 1024).max(1);
        let script = format!(
            "ulimit -v {kib} || {{ echo 'codesmith: could not limit memory' >&2; exit 125; }}; \
             export CODESMITH_RLM_MAX_BATCH={max_batch}; exec \"$@\""
        );
        let argv: Vec<OsString> = vec![
            "bash".into(),
            "-c".into(),
            script.into(),
            "codesmith-rlm".into(),
            python.as_os_str().to_os_string(),
            "-I".into(),
            "-u".into(),
            "-c".into(),
            DRIVER.into(),
        ];
        let mut process = Interactive::spawn(ctx, argv)?;
        let stdout = process.take_stdout().ok_or_else(Refusal::internal)?;
        let mut repl = Repl {
            process,
            reader: BufReader::new(stdout),
            rounds: 0,
            python: python.to_path_buf(),
        };
        match tokio::time::timeout(START_TIMEOUT, repl.recv()).await {
            Ok(Ok(m)) if m["op"] == "ready" => Ok(repl),
            Ok(Ok(m)) => Err(start_failed(&format!("unexpected first message {m}"))),
            Ok(Err(e)) => Err(start_failed(&e.to_string())),
            Err(_) => Err(start_failed(&format!(
                "it did not report ready within {} s",
                START_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Sends one message.
    ///
    /// # Errors
    /// [`ReplError::Exited`] when the pipe is closed.
    pub(super) async fn send(&mut self, message: &Value) -> Result<(), ReplError> {
        let mut line = message.to_string();
        line.push('\n');
        self.write_raw(line.as_bytes()).await
    }

    /// Writes `bytes` as they are (the body of a load).
    async fn write_raw(&mut self, bytes: &[u8]) -> Result<(), ReplError> {
        let stdin = &mut self.process.stdin;
        let sent = async {
            stdin.write_all(bytes).await?;
            stdin.flush().await
        }
        .await;
        match sent {
            Ok(()) => Ok(()),
            Err(_) => Err(self.exited().await),
        }
    }

    /// Reads one message (at most [`MAX_LINE`] bytes).
    ///
    /// # Errors
    /// [`ReplError::Exited`] at end of file; [`ReplError::Protocol`] for a line that is not
    /// a JSON object with an `op`, or is too long.
    pub(super) async fn recv(&mut self) -> Result<Message, ReplError> {
        let mut line = Vec::new();
        let n = (&mut self.reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| ReplError::Protocol(e.to_string()))?;
        if n == 0 {
            return Err(self.exited().await);
        }
        if !line.ends_with(b"\n") {
            return Err(ReplError::Protocol(format!(
                "a line longer than {MAX_LINE} bytes"
            )));
        }
        let value: Value = serde_json::from_slice(&line)
            .map_err(|e| ReplError::Protocol(format!("not JSON ({e})")))?;
        if value.get("op").and_then(Value::as_str).is_none() {
            return Err(ReplError::Protocol("a message without \"op\"".into()));
        }
        Ok(value)
    }

    /// Binds `name` to `value` (a string, or an object of strings: a dict in Python) in the
    /// REPL, with `meta` under `inputs[name]`. The text travels as raw bytes after the
    /// message line, so its size in the pipe and in Python is its own, however many control
    /// characters JSON would have escaped.
    ///
    /// # Errors
    /// As [`Repl::send`] and [`Repl::recv`].
    pub(super) async fn load(
        &mut self,
        name: &str,
        value: &Value,
        meta: Value,
    ) -> Result<(), ReplError> {
        let mut parts = Vec::new();
        let mut bodies: Vec<&str> = Vec::new();
        match value {
            Value::Object(map) => {
                for (key, text) in map {
                    let text = text.as_str().unwrap_or_default();
                    parts.push(json!([key, text.len()]));
                    bodies.push(text);
                }
            }
            other => {
                let text = other.as_str().unwrap_or_default();
                parts.push(json!([null, text.len()]));
                bodies.push(text);
            }
        }
        self.send(&json!({"op": "load", "name": name, "meta": meta, "parts": parts}))
            .await?;
        for body in bodies {
            self.write_raw(body.as_bytes()).await?;
        }
        match self.recv().await? {
            m if m["op"] == "ready" => Ok(()),
            m => Err(ReplError::Protocol(format!(
                "expected ready, got {}",
                m["op"]
            ))),
        }
    }

    /// The number of the round about to begin.
    pub(super) fn next_round(&mut self) -> u64 {
        self.rounds += 1;
        self.rounds
    }

    /// Kills the process with its whole tree; returns how many processes were killed.
    pub(super) fn kill(&mut self) -> usize {
        self.process.kill()
    }

    async fn exited(&mut self) -> ReplError {
        self.process.settle(EXIT_GRACE).await;
        let err = self.process.stderr_text();
        let tail: String = err
            .lines()
            .rev()
            .take(6)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        ReplError::Exited(tail)
    }
}

fn start_failed(why: &str) -> Refusal {
    Refusal::new(
        ErrorCode::Internal,
        format!("The Python REPL did not start: {}.", report(why)),
        "Tell the user; `codesmith doctor` checks the sandbox.",
    )
}
