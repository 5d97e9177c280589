//! Interactive shell sessions: a command attached to a pseudo-terminal that the model reads
//! and types into across calls (`pty_start`, `pty_send`, `pty_read`, `pty_list`,
//! `pty_end`).
//!
//! A session's command starts through the same isolation check, sandbox, reaper and
//! process-tree kill as `exec_shell` (it is `bash -c COMMAND` under `setsid --ctty`, so the
//! terminal is its controlling terminal and Ctrl-C reaches its foreground job as SIGINT).
//! What it prints is collected by one reader per session; every read returns the output
//! since the previous read, reduced by the terminal filter (escape sequences removed,
//! carriage-return overdraw resolved), with credentials masked, cut to the shell budget and
//! spilled once the session is over. A read's cost is bounded whatever the program printed
//! (see [`process::read_new`]; the capture keeps a rolling window of the newest output), so
//! `timeout_secs` bounds the call even under a flood. Sessions belong to the engine session: ending it (or
//! dropping the table) kills every one still running.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::exec::command_arg;
use super::process::{self, Io, Running, SharedOutput};
use super::scope_for;
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

/// Most interactive sessions running at once per engine session.
pub const MAX_PTY_SESSIONS: usize = 4;
/// Most sessions remembered (ended ones are forgotten oldest first).
const MAX_REMEMBERED: usize = 16;
/// Quiet period a read waits for when no pattern is given.
const DEFAULT_QUIET_MS: u64 = 500;
/// Longest quiet period accepted.
const MAX_QUIET_MS: u64 = 10_000;
/// Default and largest wait for a pattern or a quiet period, in seconds.
const DEFAULT_WAIT_SECS: u64 = 10;
const MAX_WAIT_SECS: u64 = 60;
/// Largest input one `pty_send` writes.
const MAX_INPUT_BYTES: usize = 64 * 1024;
/// How long a write may block on a program that does not read its terminal.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the reader is given to collect the last output once the command has exited.
const DRAIN_GRACE: Duration = Duration::from_millis(300);
/// The terminal's size (rows, columns).
const ROWS: u16 = 40;
const COLS: u16 = 160;
/// Bytes of new output `wait_for` filters and searches at a time (every new byte is
/// searched, in chunks of this size).
const SCAN_BYTES: usize = 64 * 1024;
/// Bytes before a chunk's start searched again with it, for a match across the boundary.
const SCAN_OVERLAP: usize = 4 * 1024;
/// Longest slice a wait sleeps before it checks whether the command exited.
const EXIT_POLL: Duration = Duration::from_millis(100);

/// The named keys `pty_send` accepts, with the bytes a terminal sends for each. `ctrl-a`
/// to `ctrl-z` are accepted besides these.
pub const NAMED_KEYS: &[(&str, &str)] = &[
    ("enter", "\r"),
    ("tab", "\t"),
    ("esc", "\x1b"),
    ("backspace", "\x7f"),
    ("up", "\x1b[A"),
    ("down", "\x1b[B"),
    ("right", "\x1b[C"),
    ("left", "\x1b[D"),
    ("home", "\x1b[H"),
    ("end", "\x1b[F"),
    ("pageup", "\x1b[5~"),
    ("pagedown", "\x1b[6~"),
    ("delete", "\x1b[3~"),
];

/// The bytes of one named key (`"ctrl-c"`, `"up"`), or `None` for a name not known.
pub fn key_bytes(name: &str) -> Option<Vec<u8>> {
    let lower = name.trim().to_ascii_lowercase();
    if let Some(letter) = lower
        .strip_prefix("ctrl-")
        .or_else(|| lower.strip_prefix("ctrl+"))
        .or_else(|| lower.strip_prefix("c-"))
        && let [b] = letter.as_bytes()
        && b.is_ascii_lowercase()
    {
        return Some(vec![b - b'a' + 1]);
    }
    NAMED_KEYS
        .iter()
        .find(|(n, _)| *n == lower)
        .map(|(_, bytes)| bytes.as_bytes().to_vec())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Exited(i32),
    Ended,
    /// bubblewrap could not set the sandbox up: the command never ran (its reason is in
    /// the output).
    SandboxFailed,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Exited(_) => "exited",
            State::Ended => "ended",
            State::SandboxFailed => "sandbox_failed",
        }
    }
}

#[derive(Debug)]
struct Session {
    command: String,
    running: Running,
    writer: pty_process::OwnedWritePty,
    reader: Option<JoinHandle<()>>,
    notify: Arc<Notify>,
    cursor: usize,
    state: State,
    reported_final: bool,
    killed: String,
    /// Output bytes the capture dropped before `wait_for` could search them, since the
    /// last report (the report says so, then this restarts at 0).
    unsearched: usize,
    /// What the shell reading the terminal holds of the text typed so far.
    typed: super::TypedLine,
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.state == State::Running {
            self.running.kill_tree();
        }
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
    }
}

impl super::table::Entry for Session {
    fn is_running(&self) -> bool {
        self.state == State::Running
    }
}

/// The interactive sessions of one engine session. Dropping the table kills every
/// session still running.
#[derive(Debug)]
pub struct PtyTable(super::table::Table<Session>);

impl Default for PtyTable {
    fn default() -> Self {
        PtyTable(super::table::Table::new("pty-", MAX_REMEMBERED))
    }
}

/// One line of [`PtyTable::list`]: a session's id, command and status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtyListing {
    /// `pty-N`.
    pub id: String,
    /// The command line it was started with.
    pub command: String,
    /// `running`, `exited` or `ended`.
    pub status: &'static str,
}

impl PtyTable {
    fn get(&self, id: &str) -> Option<Arc<tokio::sync::Mutex<Session>>> {
        self.0.get(id)
    }

    fn running_count(&self) -> usize {
        self.0.running_count()
    }

    fn insert(&self, session: Session) -> String {
        self.0.insert(session)
    }

    /// Every remembered session, oldest first (a session busy in a call shows as running).
    pub fn list(&self) -> Vec<PtyListing> {
        self.0
            .entries()
            .into_iter()
            .map(|(id, s)| {
                let (command, status) = match s.try_lock() {
                    Ok(s) => (s.command.clone(), s.state.as_str()),
                    Err(_) => (String::from("(busy)"), "running"),
                };
                PtyListing {
                    id,
                    command,
                    status,
                }
            })
            .collect()
    }

    /// The start command of session `id` and what its shell holds of the text typed into
    /// it ([`super::typing`] follows each input); `None` for an id not known. A session
    /// busy in another call counts as not followed.
    pub fn typed_line(&self, id: &str) -> Option<(String, super::TypedLine)> {
        let session = self.get(id)?;
        Some(match session.try_lock() {
            Ok(s) => (s.command.clone(), s.typed.clone()),
            Err(_) => (
                String::new(),
                super::TypedLine::Lost("the session is busy in another call"),
            ),
        })
    }

    /// Ends every session still running (its whole process tree is killed) and forgets
    /// them all. Returns how many were running.
    pub fn end_all(&self) -> usize {
        let mut ended = 0;
        for session in self.0.take_all() {
            if let Ok(mut s) = session.try_lock()
                && s.state == State::Running
            {
                s.running.kill_tree();
                s.state = State::Ended;
                ended += 1;
            }
        }
        ended
    }
}

fn unknown_session(id: &str) -> Refusal {
    Refusal::new(
        ErrorCode::NotFound,
        format!("There is no interactive session {id:?} in this session."),
        "Use the id pty_start returned (e.g. \"pty-1\"); pty_list names the sessions.",
    )
    .with("id", id)
}

fn id_arg(args: &Value) -> Result<&str, Refusal> {
    args.get("id").and_then(Value::as_str).ok_or_else(|| {
        Refusal::new(
            ErrorCode::InvalidArguments,
            "The \"id\" argument is missing.",
            "Pass the id pty_start returned, e.g. {\"id\": \"pty-1\"}.",
        )
    })
}

/// What a read waits for before it answers.
#[derive(Debug)]
enum Until {
    /// Output matching this pattern (in the reduced text since the previous read).
    Pattern(regex::Regex),
    /// No new output for this long.
    Quiet(Duration),
}

/// The wait of a call: `wait_for` (a regular expression), `quiet_ms` and `timeout_secs`.
fn wait_args(args: &Value) -> Result<(Until, Duration), Refusal> {
    let timeout = match args.get("timeout_secs") {
        None | Some(Value::Null) => DEFAULT_WAIT_SECS,
        Some(v) => match v.as_u64() {
            Some(s) if s <= MAX_WAIT_SECS => s,
            _ => {
                return Err(Refusal::new(
                    ErrorCode::InvalidArguments,
                    format!(
                        "timeout_secs must be a whole number of seconds from 0 to 60, not {v}."
                    ),
                    "Omit it for the 10 s default, or pass e.g. {\"timeout_secs\": 30}.",
                ));
            }
        },
    };
    let until = match args.get("wait_for").and_then(Value::as_str) {
        Some(pattern) if !pattern.is_empty() => {
            let re = regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| {
                    Refusal::new(
                        ErrorCode::InvalidArguments,
                        format!("wait_for is not a valid regular expression: {e}."),
                        "Pass a regular expression (Rust syntax), e.g. {\"wait_for\": \"\\\\? $\"}, \
                         or plain text with its special characters escaped.",
                    )
                    .with("wait_for", pattern)
                })?;
            Until::Pattern(re)
        }
        _ => {
            let ms = match args.get("quiet_ms") {
                None | Some(Value::Null) => DEFAULT_QUIET_MS,
                Some(v) => match v.as_u64() {
                    Some(ms) if (1..=MAX_QUIET_MS).contains(&ms) => ms,
                    _ => {
                        return Err(Refusal::new(
                            ErrorCode::InvalidArguments,
                            format!(
                                "quiet_ms must be a whole number of milliseconds from 1 to \
                                 10000, not {v}."
                            ),
                            "Omit it for the 500 ms default, or pass e.g. {\"quiet_ms\": 2000}.",
                        ));
                    }
                },
            };
            Until::Quiet(Duration::from_millis(ms))
        }
    };
    Ok((until, Duration::from_secs(timeout)))
}

/// Why a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Matched,
    Quiet,
    Exited,
    TimedOut,
    Cancelled,
}

impl Stop {
    fn as_str(self) -> &'static str {
        match self {
            Stop::Matched => "matched",
            Stop::Quiet => "quiet",
            Stop::Exited => "exited",
            Stop::TimedOut => "timed_out",
            Stop::Cancelled => "cancelled",
        }
    }
}

/// Copies the terminal's output into `output` until end of file (every process holding
/// the terminal has exited) and wakes the waiting call after each chunk.
async fn pump(mut reader: pty_process::OwnedReadPty, output: SharedOutput, notify: Arc<Notify>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                process::lock(&output).push(&buf[..n]);
                notify.notify_one();
            }
        }
    }
    notify.notify_one();
}

/// Waits for `until`, the command's exit, `limit` or the call's cancellation.
async fn wait(ctx: &ToolContext, session: &mut Session, until: &Until, limit: Duration) -> Stop {
    let started = Instant::now();
    let deadline = started + limit;
    let mut last_len = process::lock(&session.running.output).len();
    let mut last_output = started;
    // Where the pattern search has looked up to: each check filters only the output that
    // arrived since the previous one (and a little before it, for a match across the
    // boundary), so a flood cannot make one check cost more than a bounded amount.
    let mut scanned: Option<usize> = None;
    // The end of the previous chunk searched, searched again before the next one.
    let mut carry = String::new();
    loop {
        if session.state == State::Running
            && let Some(status) = session.running.try_status()
        {
            if let Some(reader) = session.reader.as_mut() {
                let _ = tokio::time::timeout(DRAIN_GRACE, reader).await;
                session.reader = None;
            }
            session.running.kill_tree();
            let (full, _) = process::lock(&session.running.output).text_from(0, true);
            session.state = match session.running.setup_failure(status, &full) {
                Some(_) => State::SandboxFailed,
                None => State::Exited(process::exit_code(status)),
            };
        }
        if session.state != State::Running {
            return Stop::Exited;
        }
        let len = process::lock(&session.running.output).len();
        let now = Instant::now();
        if len != last_len {
            last_len = len;
            last_output = now;
        }
        let quiet_until = match until {
            Until::Pattern(re) => {
                if scanned != Some(len) {
                    // Every byte that arrived since the previous check is searched once,
                    // chunk by chunk, each after the end of the one before (a match
                    // across the boundary is found); bytes the capture dropped before
                    // they could be searched are counted and reported.
                    let mut from = scanned.unwrap_or(session.cursor).max(session.cursor);
                    let output = process::lock(&session.running.output);
                    loop {
                        let (text, lost, next) = output.chunk(from, SCAN_BYTES);
                        if lost > 0 {
                            session.unsearched += lost;
                            carry.clear();
                        }
                        if next == from {
                            break;
                        }
                        from = next;
                        let hay = format!("{carry}{text}");
                        if re.is_match(&codesmith_policy::screen_text(&hay)) {
                            return Stop::Matched;
                        }
                        let cut = (0..=text.len().saturating_sub(SCAN_OVERLAP))
                            .rev()
                            .find(|i| text.is_char_boundary(*i))
                            .unwrap_or(0);
                        carry = text[cut..].to_string();
                    }
                    drop(output);
                    scanned = Some(from);
                }
                deadline
            }
            Until::Quiet(quiet) => {
                if now >= last_output + *quiet {
                    return Stop::Quiet;
                }
                last_output + *quiet
            }
        };
        if now >= deadline {
            return Stop::TimedOut;
        }
        let nap = quiet_until.min(deadline).saturating_duration_since(now);
        let nap = nap.min(EXIT_POLL);
        tokio::select! {
            () = session.notify.notified() => {}
            () = tokio::time::sleep(nap) => {}
            () = ctx.cancel.cancelled() => return Stop::Cancelled,
        }
    }
}

/// The session's status and its output since the previous read; once the session is
/// over, the first report spills the whole output.
fn report(ctx: &ToolContext, id: &str, session: &mut Session, stop: Option<Stop>) -> ToolOutput {
    let finished = session.state != State::Running;
    let first_final = finished && !session.reported_final;
    let (capped, reference) = process::read_new(
        &ctx.home,
        &session.running.output,
        &mut session.cursor,
        finished,
        first_final,
    );
    session.reported_final |= first_final;
    let mut out = ToolOutput::new(capped.text)
        .with("id", id)
        .with("status", session.state.as_str());
    if let Some(stop) = stop {
        out = out.with("waited", stop.as_str());
    }
    match session.state {
        State::Exited(code) => out = out.with("exit_code", code),
        State::SandboxFailed => {
            let (full, _) = process::lock(&session.running.output).text_from(0, true);
            let failure = crate::sandbox::SetupFailure::from_output(&full);
            out = out
                .with("error_code", crate::ErrorCode::SandboxFailed.as_str())
                .with("sandbox", failure.message);
        }
        State::Ended if !session.killed.is_empty() => {
            out = out.with("killed", session.killed.clone());
        }
        _ => {}
    }
    if capped.omitted > 0 {
        out = out
            .with("truncated", true)
            .with("omitted_bytes", capped.omitted);
    }
    if let Some(r) = reference {
        out = out.with("ref", r);
    }
    if session.unsearched > 0 {
        out = out
            .with("wait_for_unsearched_bytes", session.unsearched)
            .with(
                "wait_for_note",
                format!(
                    "{} bytes of output arrived faster than they could be kept and were not \
                 searched for wait_for: the pattern may have been printed in them.",
                    session.unsearched
                ),
            );
        session.unsearched = 0;
    }
    out.with(
        "duration_ms",
        session.running.started.elapsed().as_millis() as u64,
    )
}

fn wait_schema() -> serde_json::Map<String, Value> {
    let v = json!({
        "wait_for": {"type": "string", "description": "Regular expression to wait for in the new output (e.g. a prompt such as \"\\\\? $\" or \">>> $\"). Without it the call waits for a quiet period."},
        "quiet_ms": {"type": "integer", "minimum": 1, "maximum": MAX_QUIET_MS, "description": "Milliseconds without new output that end the wait when no wait_for is given (default 500)."},
        "timeout_secs": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_SECS, "description": "Longest wait in seconds (default 10, max 60); the output so far is returned then."}
    });
    match v {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// `pty_start {command, cwd?, wait_for?, quiet_ms?, timeout_secs?}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PtyStart;

const START_DESCRIPTION: &str = "Start a command attached to a terminal (an interactive \
session: bash -c COMMAND in the session's working directory, same sandbox and approval as \
exec_shell) and return its id with the output it printed until it went quiet or printed \
wait_for. Use it for programs that ask questions or keep a prompt: installers that prompt, \
REPLs (python3, node), `npm init`, test runners in watch mode. Answer with pty_send, read more \
with pty_read, stop with pty_end (pty_list names them). At most 4 run at once; all end with the \
session. Examples: {\"command\": \"python3 setup.py\", \"wait_for\": \"name\\\\? $\"}; \
{\"command\": \"python3 -q\", \"wait_for\": \">>> $\"}.";

#[async_trait]
impl Tool for PtyStart {
    fn name(&self) -> &'static str {
        "pty_start"
    }

    fn description(&self) -> &'static str {
        START_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        let mut properties = wait_schema();
        properties.insert(
            "command".into(),
            json!({"type": "string", "description": "The bash command line to run attached to a terminal."}),
        );
        properties.insert(
            "cwd".into(),
            json!({"type": "string", "description": "Workspace-relative directory to start in (default: the session directory)."}),
        );
        json!({
            "type": "object",
            "properties": properties,
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ExecutesCode
    }

    fn handles_cancel(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let command = command_arg(&args)?;
        let (until, limit) = wait_args(&args)?;
        let start = super::exec::start_dir(ctx, args.get("cwd"))?;
        if ctx.shell.ptys.running_count() >= MAX_PTY_SESSIONS {
            return Err(Refusal::new(
                ErrorCode::TooLarge,
                format!("{MAX_PTY_SESSIONS} interactive sessions are already running."),
                "End one with pty_end (pty_list names them), then start again.",
            ));
        }
        let scope = scope_for(ctx, &start)?;
        let (primary, pts) = pty_process::open().map_err(|e| start_refused(&e))?;
        primary
            .resize(pty_process::Size::new(ROWS, COLS))
            .map_err(|e| start_refused(&e))?;
        // The command gets the only copy of the secondary side: once everything it started
        // has exited, the reader sees end of file.
        let secondary = std::os::fd::AsFd::as_fd(&pts)
            .try_clone_to_owned()
            .map_err(|e| start_refused(&e))?;
        drop(pts);
        // `setsid --ctty` makes the terminal the command's controlling terminal inside the
        // sandbox's own session, so Ctrl-C and Ctrl-Z reach its foreground job as signals.
        let argv = vec![
            "setsid".into(),
            "--ctty".into(),
            "--wait".into(),
            "bash".into(),
            "-c".into(),
            command.into(),
        ];
        let (running, _) =
            process::spawn_argv(&ctx.sandbox, &scope, argv, &start, Io::Terminal(secondary))
                .map_err(|e| process::start_refused(&e))?;
        let (read_half, writer) = primary.into_split();
        let notify = Arc::new(Notify::new());
        let reader = tokio::spawn(pump(read_half, running.output.clone(), notify.clone()));
        let id = ctx.shell.ptys.insert(Session {
            command: command.to_string(),
            running,
            writer,
            reader: Some(reader),
            notify,
            cursor: 0,
            state: State::Running,
            reported_final: false,
            killed: String::new(),
            unsearched: 0,
            typed: super::TypedLine::Clear,
        });
        let session = ctx.shell.ptys.get(&id).ok_or_else(Refusal::internal)?;
        let mut session = session.lock().await;
        let stop = wait(ctx, &mut session, &until, limit).await;
        Ok(report(ctx, &id, &mut session, Some(stop)))
    }
}

fn start_refused(e: &dyn std::fmt::Display) -> Refusal {
    Refusal::new(
        ErrorCode::Internal,
        format!("No terminal could be opened for the command: {e}."),
        "Run it with exec_shell instead (with its answers piped in, e.g. `printf 'y\\n' | CMD`), \
         or tell the user.",
    )
}

/// `pty_send {id, text?, keys?, wait_for?, quiet_ms?, timeout_secs?}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PtySend;

const SEND_DESCRIPTION: &str = "Type into an interactive session started with pty_start: \
`text` first (a \\n ends a line, like Enter), then `keys` in order (enter, tab, esc, backspace, \
up, down, left, right, home, end, pageup, pagedown, delete, ctrl-a .. ctrl-z: ctrl-c \
interrupts, ctrl-d ends input). Returns the output since the last read, after it went quiet or \
printed wait_for. Examples: {\"id\": \"pty-1\", \"text\": \"Alice\\n\"}; {\"id\": \"pty-1\", \
\"keys\": [\"ctrl-c\"]}; {\"id\": \"pty-2\", \"text\": \"print(6*7)\\n\", \"wait_for\": \">>> $\"}.";

/// The bytes a `pty_send` call types (text, then keys), or the refusal naming what was not
/// understood. `None` when the call types nothing.
///
/// # Errors
/// `INVALID_ARGUMENTS` for a key not in [`NAMED_KEYS`] (nor `ctrl-a`..`ctrl-z`), a
/// non-string text or key, or input over 64 KiB.
pub fn terminal_input(args: &Value) -> Result<Option<Vec<u8>>, Refusal> {
    let mut bytes = Vec::new();
    match args.get("text") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => bytes.extend_from_slice(text.as_bytes()),
        Some(other) => {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                format!("text must be a string, not {other}."),
                "Pass the characters to type as one string, e.g. {\"text\": \"yes\\n\"}.",
            ));
        }
    }
    match args.get("keys") {
        None | Some(Value::Null) => {}
        Some(Value::Array(keys)) => {
            for key in keys {
                let name = key.as_str().unwrap_or_default();
                let Some(k) = key_bytes(name) else {
                    return Err(Refusal::new(
                        ErrorCode::InvalidArguments,
                        format!("{key} is not a key pty_send knows."),
                        "Use one of enter, tab, esc, backspace, up, down, left, right, home, end, \
                         pageup, pagedown, delete, or ctrl-a .. ctrl-z; put other characters in \
                         text.",
                    )
                    .with("key", key.clone()));
                };
                bytes.extend_from_slice(&k);
            }
        }
        Some(other) => {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                format!("keys must be a list of key names, not {other}."),
                "Pass e.g. {\"keys\": [\"ctrl-c\"]}.",
            ));
        }
    }
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(Refusal::new(
            ErrorCode::TooLarge,
            format!(
                "The input is {} bytes; one pty_send writes at most {MAX_INPUT_BYTES}.",
                bytes.len()
            ),
            "Write a file with write_file and have the program read it, or send the input in \
             parts.",
        ));
    }
    Ok((!bytes.is_empty()).then_some(bytes))
}

#[async_trait]
impl Tool for PtySend {
    fn name(&self) -> &'static str {
        "pty_send"
    }

    fn description(&self) -> &'static str {
        SEND_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        let mut properties = wait_schema();
        properties.insert(
            "id".into(),
            json!({"type": "string", "description": "The id pty_start returned."}),
        );
        properties.insert(
            "text".into(),
            json!({"type": "string", "description": "Characters to type; \\n ends a line."}),
        );
        properties.insert(
            "keys".into(),
            json!({"type": "array", "items": {"type": "string"}, "description": "Keys to press after the text, in order (e.g. [\"ctrl-c\"], [\"up\", \"enter\"])."}),
        );
        json!({
            "type": "object",
            "properties": properties,
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ExecutesCode
    }

    fn handles_cancel(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let id = id_arg(&args)?;
        let input = terminal_input(&args)?;
        let (until, limit) = wait_args(&args)?;
        let session = ctx.shell.ptys.get(id).ok_or_else(|| unknown_session(id))?;
        let mut session = session.lock().await;
        if let Some(bytes) = input {
            if session.state != State::Running {
                return Err(Refusal::new(
                    ErrorCode::Unavailable,
                    format!(
                        "The interactive session {id} is {}; nothing was typed.",
                        session.state.as_str()
                    ),
                    "Read its last output with pty_read, or start the command again with \
                     pty_start.",
                )
                .with("id", id)
                .with("status", session.state.as_str()));
            }
            let written = tokio::time::timeout(WRITE_TIMEOUT, async {
                session.writer.write_all(&bytes).await?;
                session.writer.flush().await
            })
            .await;
            let typed = std::mem::take(&mut session.typed);
            session.typed = match written {
                Ok(Ok(())) => super::typing(&typed, &args).after,
                _ => super::TypedLine::Lost("a write to the terminal failed part way"),
            };
            match written {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(Refusal::new(
                        ErrorCode::Internal,
                        format!("Typing into {id} failed: {e}."),
                        "Read its output with pty_read; end it with pty_end if it is stuck.",
                    )
                    .with("id", id));
                }
                Err(_) => {
                    return Err(Refusal::new(
                        ErrorCode::Timeout,
                        format!(
                            "The program in {id} did not read its input within 5 s; part of it \
                             may have been typed."
                        ),
                        "Read its output with pty_read to see what it is doing, or end it with \
                         pty_end.",
                    )
                    .with("id", id));
                }
            }
        }
        let stop = wait(ctx, &mut session, &until, limit).await;
        Ok(report(ctx, id, &mut session, Some(stop)))
    }
}

/// `pty_read {id, wait_for?, quiet_ms?, timeout_secs?}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PtyRead;

const READ_DESCRIPTION: &str = "Read what an interactive session printed since the last \
read, after it went quiet or printed wait_for (typing nothing). Use it to wait for a slow \
program. Examples: {\"id\": \"pty-1\"}; {\"id\": \"pty-1\", \"wait_for\": \"Done\", \
\"timeout_secs\": 60}.";

#[async_trait]
impl Tool for PtyRead {
    fn name(&self) -> &'static str {
        "pty_read"
    }

    fn description(&self) -> &'static str {
        READ_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        let mut properties = wait_schema();
        properties.insert(
            "id".into(),
            json!({"type": "string", "description": "The id pty_start returned."}),
        );
        json!({
            "type": "object",
            "properties": properties,
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ReadOnly
    }

    fn handles_cancel(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let id = id_arg(&args)?;
        let (until, limit) = wait_args(&args)?;
        let session = ctx.shell.ptys.get(id).ok_or_else(|| unknown_session(id))?;
        let mut session = session.lock().await;
        let stop = wait(ctx, &mut session, &until, limit).await;
        Ok(report(ctx, id, &mut session, Some(stop)))
    }
}

/// `pty_list {}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PtyList;

const LIST_DESCRIPTION: &str = "List this session's interactive sessions (id, status, \
command), running ones and the last ended ones. Example: {}.";

#[async_trait]
impl Tool for PtyList {
    fn name(&self) -> &'static str {
        "pty_list"
    }

    fn description(&self) -> &'static str {
        LIST_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    fn capability(&self) -> Capability {
        Capability::ReadOnly
    }

    async fn call(&self, ctx: &ToolContext, _args: Value) -> ToolOutcome {
        let listing = ctx.shell.ptys.list();
        let text = if listing.is_empty() {
            "No interactive sessions.".to_string()
        } else {
            listing
                .iter()
                .map(|l| format!("{} {} {}", l.id, l.status, l.command))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let sessions: Vec<Value> = listing
            .iter()
            .map(|l| json!({"id": l.id, "status": l.status, "command": l.command}))
            .collect();
        Ok(ToolOutput::new(text).with("sessions", sessions).with(
            "running",
            listing.iter().filter(|l| l.status == "running").count(),
        ))
    }
}

/// `pty_end {id}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PtyEnd;

const END_DESCRIPTION: &str = "End an interactive session: everything it started is killed, \
and the output since the last read is returned. Ending one that already exited just reports \
its final state. Example: {\"id\": \"pty-1\"}.";

#[async_trait]
impl Tool for PtyEnd {
    fn name(&self) -> &'static str {
        "pty_end"
    }

    fn description(&self) -> &'static str {
        END_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"id": {"type": "string", "description": "The id pty_start returned."}},
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ExecutesCode
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let id = id_arg(&args)?;
        let session = ctx.shell.ptys.get(id).ok_or_else(|| unknown_session(id))?;
        let mut session = session.lock().await;
        if session.state == State::Running {
            let killed = session.running.kill_tree();
            let _ = session.running.wait_for(Duration::from_secs(2)).await;
            if let Some(reader) = session.reader.as_mut() {
                let _ = tokio::time::timeout(DRAIN_GRACE, reader).await;
                session.reader = None;
            }
            session.killed = killed.describe();
            session.state = State::Ended;
        }
        Ok(report(ctx, id, &mut session, None))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_the_bytes_a_terminal_sends() {
        assert_eq!(key_bytes("ctrl-c"), Some(vec![3]));
        assert_eq!(key_bytes("Ctrl-D"), Some(vec![4]));
        assert_eq!(key_bytes("up"), Some(b"\x1b[A".to_vec()));
        assert_eq!(key_bytes("enter"), Some(b"\r".to_vec()));
        assert_eq!(key_bytes("ctrl-1"), None);
        assert_eq!(key_bytes("f13"), None);
    }

    #[test]
    fn input_is_text_then_keys_and_an_unknown_key_is_refused() {
        let args = json!({"text": "y", "keys": ["enter", "ctrl-d"]});
        assert_eq!(terminal_input(&args).unwrap(), Some(b"y\r\x04".to_vec()));
        assert_eq!(terminal_input(&json!({"id": "pty-1"})).unwrap(), None);
        let err = terminal_input(&json!({"keys": ["hyper"]})).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
    }
}
