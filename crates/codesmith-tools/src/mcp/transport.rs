//! The stdio transport of an MCP server: newline-delimited JSON-RPC over the child's
//! stdin and stdout, with its stderr kept.
//!
//! rmcp's own child-process transport drops a line it cannot use (one over its length
//! limit, or one that is not JSON, such as a lone surrogate escape `\udcff`) and goes
//! on reading, so the call waiting for that line waits out its whole timeout and is
//! reported as "did not answer in time". This transport instead records a
//! [`TransportFault`] naming the cause (the size, or the position and the parser's
//! complaint) for the request the line answered, and hands rmcp an error response for
//! it, so the call fails at once with that cause. The request is found by the line's
//! `"id"` (searched at the line's start and end when the line is too long to parse);
//! when no id can be read, every request still waiting fails with the fault, since any
//! of them may have been the one answered. Line framing survives both faults, so the
//! connection goes on; when the stream itself ends, rmcp sees the end and the
//! connection is re-established on the next call.
//!
//! Besides, the transport hands each `tools/list` answer to [`Wire::note_tool_list`]
//! (which tools run only as tasks, a field rmcp's typed tool drops), and keeps the last
//! [`STDERR_RING`] bytes of the server's stderr for the messages that say why a server
//! did not start or stopped.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ErrorCode, ErrorData, JsonRpcError, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

/// Longest message accepted from a server, in bytes (16 MiB, as rmcp's default).
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// How much of a server's stderr is kept: its last 64 KiB.
pub const STDERR_RING: usize = 64 * 1024;
/// How much of the kept stderr a message quotes: its last 2,000 bytes.
pub const STDERR_TAIL: usize = 2_000;
/// How many bytes at each end of an over-long line are kept to find its id.
const ID_WINDOW: usize = 4_096;

/// Why a server's answer could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportFault {
    /// The message was longer than [`MAX_MESSAGE`].
    Oversized {
        /// Its length in bytes, when it was read to its end (a stdio line is); `None`
        /// when reading stopped at the limit (an HTTP answer is not read past it).
        bytes: Option<usize>,
    },
    /// The message is not valid JSON-RPC: `detail` is the parser's complaint, `position`
    /// the byte offset in the message where it stopped.
    Undecodable {
        /// The parser's complaint.
        detail: String,
        /// Byte offset in the message (0-based).
        position: usize,
        /// The message's length in bytes, when known (an HTTP body rmcp read is not
        /// measured).
        bytes: Option<usize>,
    },
    /// The answer to this one request could not be used for a reason of the exchange,
    /// not of the connection: an HTTP status or content type other than a JSON-RPC
    /// answer, an SSE answer of an unknown event type, an answer to a request this
    /// stream does not carry, a stream that ended unanswered. `detail` names it.
    Unusable {
        /// What was wrong, in words (the status, the type, what the stream did).
        detail: String,
    },
}

impl std::fmt::Display for TransportFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransportFault::Oversized { bytes } => {
                write!(
                    f,
                    "its answer exceeded the {} MiB ({MAX_MESSAGE} bytes) a message may have",
                    MAX_MESSAGE / (1024 * 1024)
                )?;
                match bytes {
                    Some(bytes) => write!(f, ": it was {bytes} bytes"),
                    None => write!(f, "; the rest of it was not read"),
                }
            }
            TransportFault::Undecodable {
                detail,
                position,
                bytes,
            } => match bytes {
                Some(bytes) => write!(
                    f,
                    "its answer ({bytes} bytes) could not be decoded at byte {position}: {detail}"
                ),
                None => write!(
                    f,
                    "its answer could not be decoded at byte {position}: {detail}"
                ),
            },
            TransportFault::Unusable { detail } => {
                write!(f, "its answer could not be used: {detail}")
            }
        }
    }
}

impl TransportFault {
    /// The fault for `raw`, a message the parser rejected with `e`.
    pub fn undecodable(raw: &[u8], e: &serde_json::Error) -> TransportFault {
        let position = position_of(raw, e.line(), e.column());
        let detail = e.to_string();
        let detail = match detail.find(" at line ") {
            Some(i) => detail[..i].to_string(),
            None => detail,
        };
        TransportFault::Undecodable {
            detail,
            position,
            bytes: Some(raw.len()),
        }
    }

    /// The JSON-RPC error answering request `id` in place of the answer that could not
    /// be used: what the transport hands rmcp, so the call fails at once.
    pub fn answer(&self, id: RequestId) -> RxJsonRpcMessage<RoleClient> {
        let error = ErrorData::new(ErrorCode::INTERNAL_ERROR, self.to_string(), None);
        JsonRpcMessage::Error(JsonRpcError::new(Some(id), error))
    }
}

/// State the transport shares with the connection that owns it.
#[derive(Debug, Default)]
pub struct Wire {
    /// Requests sent and not answered yet: the id's JSON text → the method.
    pending: Mutex<BTreeMap<String, String>>,
    /// Faults recorded for requests (by the id's JSON text), taken by the caller.
    faults: Mutex<BTreeMap<String, TransportFault>>,
    /// Remote names of tools the last `tools/list` marked as runnable only as tasks.
    tasks_only: Mutex<BTreeSet<String>>,
    /// The server's stderr, last [`STDERR_RING`] bytes.
    stderr: Mutex<VecDeque<u8>>,
    /// How the process ended, once it did.
    exit: Mutex<Option<String>>,
    /// Set when stderr reached its end.
    stderr_done: tokio::sync::Notify,
    stderr_closed: std::sync::atomic::AtomicBool,
    /// Set when the server said its tool list changed, until the tools are listed again.
    tools_changed: std::sync::atomic::AtomicBool,
    /// Set when the server said its prompt list changed, until the prompts are listed
    /// again.
    prompts_changed: std::sync::atomic::AtomicBool,
    /// Lines on stdout that are not JSON-RPC, skipped so far.
    stray: std::sync::atomic::AtomicU64,
    /// Where a skipped line is reported (see [`Wire::on_stray`]).
    stray_sink: OnceLock<Sink>,
    /// Where a log notification is handed as it is read (see [`Wire::on_log`]).
    log_sink: OnceLock<LogSinkBox>,
}

struct LogSinkBox(LogSink);

impl std::fmt::Debug for LogSinkBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogSink")
    }
}

/// Receives a server's log notification (`notifications/message`) at the moment the
/// transport reads it, so log lines keep the order the server sent them in and precede the
/// answer that follows them.
#[allow(deprecated)] // Logging is marked deprecated in rmcp (SEP-2577); servers still send it.
pub type LogSink = Box<dyn Fn(&rmcp::model::LoggingMessageNotificationParam) + Send + Sync>;

struct Sink(StraySink);

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StraySink")
    }
}

/// Receives a stray stdout line: its number (1 for the first) and its text (at most
/// [`STRAY_SHOWN`] bytes, lossily decoded).
pub type StraySink = Box<dyn Fn(u64, &str) + Send + Sync>;

/// Most stray lines reported to the sink per connection; later ones are only counted.
pub const MAX_STRAY_REPORTED: u64 = 100;

/// Most bytes of a stray line reported.
pub const STRAY_SHOWN: usize = 300;

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The key of a request id.
pub fn id_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

impl Wire {
    /// Sets where stray stdout lines (not JSON-RPC, answering no request) are reported:
    /// the first [`MAX_STRAY_REPORTED`] of them. Only the first call counts.
    pub fn on_stray(&self, sink: StraySink) {
        let _ = self.stray_sink.set(Sink(sink));
    }

    /// Sets where log notifications are handed as they are read (in the order the server
    /// sent them, before any answer read after them). Only the first call counts.
    pub fn on_log(&self, sink: LogSink) {
        let _ = self.log_sink.set(LogSinkBox(sink));
    }

    /// How many stray stdout lines were skipped.
    pub fn stray_lines(&self) -> u64 {
        self.stray.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Skips a line that is not JSON-RPC and names no request: it fails nothing.
    fn stray(&self, line: &[u8]) {
        let n = self
            .stray
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        if n <= MAX_STRAY_REPORTED
            && let Some(sink) = self.stray_sink.get()
        {
            let text = String::from_utf8_lossy(&line[..line.len().min(STRAY_SHOWN)]);
            (sink.0)(n, &text);
        }
    }

    /// Takes the fault recorded for request `id`, if any.
    pub fn take_fault(&self, id: &RequestId) -> Option<TransportFault> {
        guard(&self.faults).remove(&id_key(id))
    }

    /// Notes which tools `answer` (a JSON-RPC answer to `tools/list`, as the server sent
    /// it) marks as runnable only as tasks (`execution.taskSupport = "required"`), for
    /// [`Wire::is_tasks_only`]. Every transport hands its raw answers here, since rmcp's
    /// typed tool drops the field; a tool listed without the mark is forgotten.
    pub fn note_tool_list(&self, answer: &Value) {
        let Some(tools) = answer.pointer("/result/tools").and_then(Value::as_array) else {
            return;
        };
        let mut set = guard(&self.tasks_only);
        for t in tools {
            let required =
                t.pointer("/execution/taskSupport").and_then(Value::as_str) == Some("required");
            if let Some(name) = t.get("name").and_then(Value::as_str) {
                if required {
                    set.insert(name.to_string());
                } else {
                    set.remove(name);
                }
            }
        }
    }

    /// Whether the last `tools/list` marked `tool` as runnable only as a task.
    pub fn is_tasks_only(&self, tool: &str) -> bool {
        guard(&self.tasks_only).contains(tool)
    }

    /// The last [`STDERR_TAIL`] bytes of the server's stderr (from a line start when one
    /// falls in that window), secrets scrubbed, or `None` when it wrote nothing. Waits
    /// (at most 300 ms) for stderr to end when the process has ended, so its last words
    /// are in.
    pub async fn stderr_tail(&self) -> Option<String> {
        if guard(&self.exit).is_some()
            && !self.stderr_closed.load(std::sync::atomic::Ordering::SeqCst)
        {
            let _ =
                tokio::time::timeout(Duration::from_millis(300), self.stderr_done.notified()).await;
        }
        let ring = guard(&self.stderr);
        let bytes: Vec<u8> = ring.iter().copied().collect();
        drop(ring);
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim_end();
        if text.trim().is_empty() {
            return None;
        }
        let mut start = text.len().saturating_sub(STDERR_TAIL);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        let mut tail = &text[start..];
        if start > 0
            && let Some(nl) = tail.find('\n')
            && nl + 1 < tail.len()
        {
            tail = &tail[nl + 1..];
        }
        Some(codesmith_policy::scrub_secrets(tail).into_owned())
    }

    /// Whether the server said its tool list changed since [`Wire::take_tools_changed`].
    pub fn tools_changed(&self) -> bool {
        self.tools_changed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Clears the tool-list-changed mark (the tools are being listed again).
    pub fn take_tools_changed(&self) -> bool {
        self.tools_changed
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    /// Clears the prompt-list-changed mark (the prompts are being listed again).
    pub fn take_prompts_changed(&self) -> bool {
        self.prompts_changed
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    /// How the process ended (`exit status 3`), once it did.
    pub fn exit(&self) -> Option<String> {
        guard(&self.exit).clone()
    }

    fn push_stderr(&self, chunk: &[u8]) {
        let mut ring = guard(&self.stderr);
        ring.extend(chunk);
        let over = ring.len().saturating_sub(STDERR_RING);
        ring.drain(..over);
    }

    /// Records `fault` for request `id` (an HTTP answer that could not be used), for
    /// [`Wire::take_fault`].
    pub fn record_fault(&self, id: &RequestId, fault: TransportFault) {
        guard(&self.faults).insert(id_key(id), fault);
    }

    /// Takes the fault whose text is `message` (the error a request other than a tool
    /// call was answered with, whose id the caller does not see), if any.
    pub fn take_fault_named(&self, message: &str) -> Option<TransportFault> {
        let mut faults = guard(&self.faults);
        let key = faults
            .iter()
            .find(|(_, f)| f.to_string() == message)
            .map(|(k, _)| k.clone())?;
        faults.remove(&key)
    }

    fn fail(&self, id: &str, fault: &TransportFault) -> bool {
        if guard(&self.pending).remove(id).is_none() {
            return false;
        }
        guard(&self.faults).insert(id.to_string(), fault.clone());
        true
    }
}

/// A server process spoken to over its stdin and stdout.
pub struct StdioTransport {
    child: Child,
    reader: BufReader<ChildStdout>,
    writer: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    wire: Arc<Wire>,
    /// The line being read; with `partial`, what a read dropped mid-line (its future
    /// cancelled by a `select!`) had taken from the stream, so the next read goes on from
    /// there instead of losing the line's start.
    line: Vec<u8>,
    /// `Some((bytes read of the line so far, the moving tail kept past the cap))` while a
    /// line is only partly read; `None` when `line` is complete (or nothing was read).
    partial: Option<(usize, VecDeque<u8>)>,
    /// Error responses made for faults, delivered before reading on.
    queued: VecDeque<RxJsonRpcMessage<RoleClient>>,
    /// The server's pid, the marker in its environment and its start time: what the
    /// sweep at the end needs to find every process it started.
    tree: (Option<i32>, String, u64),
}

impl Drop for StdioTransport {
    /// Kills the server's whole process tree (the processes carrying its marker and
    /// their descendants, wherever they were re-parented), not only the server: what
    /// it forked does not outlive the session.
    fn drop(&mut self) {
        let (pid, marker, since) = &self.tree;
        let _ = self.child.start_kill();
        let _ = crate::shell::tree::kill_marked(*pid, marker, *since);
    }
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport").finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// Spawns `cmd` (stdin, stdout and stderr piped, marked in its environment like a
    /// shell command, its whole process tree killed when the transport is dropped) and
    /// starts keeping its stderr in `wire`.
    ///
    /// Errors: the spawn failed.
    pub fn spawn(mut cmd: tokio::process::Command, wire: Arc<Wire>) -> std::io::Result<Self> {
        let marker = crate::shell::tree::new_marker();
        cmd.env(crate::shell::tree::MARKER_ENV, &marker);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let pid = child.id().and_then(|p| i32::try_from(p).ok());
        let since = crate::shell::tree::start_time(pid);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the server's pipes were not set up"));
        };
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(keep_stderr(stderr, wire.clone()));
        }
        Ok(StdioTransport {
            child,
            reader: BufReader::with_capacity(64 * 1024, stdout),
            writer: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            wire,
            line: Vec::new(),
            partial: None,
            queued: VecDeque::new(),
            tree: (pid, marker, since),
        })
    }

    /// Reads one line into `self.line`. `Ok(None)` at the end of the stream,
    /// `Ok(Some(Err(fault)))` for a line over [`MAX_MESSAGE`] (then `self.line` holds its
    /// first and last [`ID_WINDOW`] bytes). Cancel-safe: dropped while waiting for bytes,
    /// it keeps what it consumed, and the next call finishes the same line.
    async fn read_line(&mut self) -> std::io::Result<Option<Result<(), usize>>> {
        if self.partial.is_none() {
            self.line.clear();
            self.partial = Some((0, VecDeque::new()));
        }
        loop {
            let available = self.reader.fill_buf().await?;
            let Some((total, tail)) = self.partial.as_mut() else {
                return Ok(None);
            };
            if available.is_empty() {
                self.partial = None;
                return Ok(None);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..take];
            *total += take;
            if *total <= MAX_MESSAGE {
                self.line.extend_from_slice(chunk);
            } else {
                if self.line.len() > ID_WINDOW {
                    // Keep the head; the rest of what was read becomes the moving tail.
                    let rest = self.line.split_off(ID_WINDOW);
                    tail.extend(rest);
                }
                tail.extend(chunk);
                let over = tail.len().saturating_sub(ID_WINDOW);
                tail.drain(..over);
            }
            self.reader.consume(take);
            if newline.is_some() {
                let (total, tail) = self.partial.take().unwrap_or_default();
                if total > MAX_MESSAGE {
                    self.line.push(b' ');
                    self.line.extend(tail);
                    return Ok(Some(Err(total)));
                }
                return Ok(Some(Ok(())));
            }
        }
    }

    /// Records `fault` for the request the line answered (or, without a readable id,
    /// for every waiting request) and queues an error response for each.
    fn fault(&mut self, fault: TransportFault, ids: &[String]) {
        let known: Vec<String> = ids
            .iter()
            .filter(|id| guard(&self.wire.pending).contains_key(*id))
            .cloned()
            .collect();
        // Without a readable id every waiting request may have been the one answered;
        // an id that answers nothing waiting (a cancelled request) fails nothing.
        let targets = if ids.is_empty() {
            guard(&self.wire.pending).keys().cloned().collect()
        } else {
            known
        };
        for key in targets {
            if !self.wire.fail(&key, &fault) {
                continue;
            }
            let Ok(id) = serde_json::from_str::<RequestId>(&key) else {
                continue;
            };
            self.queued.push_back(fault.answer(id));
        }
    }

    /// Notes what a message that parsed says about the transport's bookkeeping.
    #[allow(deprecated)] // Logging is marked deprecated in rmcp (SEP-2577).
    fn note_received(&self, line: &[u8], msg: &RxJsonRpcMessage<RoleClient>) {
        if let JsonRpcMessage::Notification(n) = msg
            && let rmcp::model::ServerNotification::LoggingMessageNotification(log) =
                &n.notification
            && let Some(sink) = self.wire.log_sink.get()
        {
            (sink.0)(&log.params);
        }
        if let JsonRpcMessage::Notification(n) = msg
            && matches!(
                n.notification,
                rmcp::model::ServerNotification::ToolListChangedNotification(_)
            )
        {
            self.wire
                .tools_changed
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        if let JsonRpcMessage::Notification(n) = msg
            && matches!(
                n.notification,
                rmcp::model::ServerNotification::PromptListChangedNotification(_)
            )
        {
            self.wire
                .prompts_changed
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let id = match msg {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let Some(id) = id else {
            return;
        };
        let method = guard(&self.wire.pending).remove(&id_key(id));
        if method.as_deref() == Some("tools/list") {
            let value: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
            self.wire.note_tool_list(&value);
        }
    }
}

async fn keep_stderr(mut stderr: ChildStderr, wire: Arc<Wire>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => wire.push_stderr(&buf[..n]),
        }
    }
    wire.stderr_closed
        .store(true, std::sync::atomic::Ordering::SeqCst);
    wire.stderr_done.notify_waiters();
}

/// The JSON-RPC ids a line names at its top level, searched as text (the line may not
/// parse): every `"id": <number or string>` not preceded by a backslash.
pub(super) fn ids_in(line: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(line);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("\"id\"") {
        let start = from + at;
        from = start + 4;
        if start > 0 && text.as_bytes()[start - 1] == b'\\' {
            continue;
        }
        let rest = text[from..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let rest = rest.trim_start();
        let value = if let Some(s) = rest.strip_prefix('"') {
            s.find('"').map(|end| format!("\"{}\"", &s[..end]))
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                .unwrap_or(rest.len());
            (end > 0).then(|| rest[..end].to_string())
        };
        out.extend(value);
    }
    out
}

/// Whether an unparsable line looks like a notification (a method and no id): it
/// answered no request, so no call fails for it.
fn looks_like_notification(line: &[u8], ids: &[String]) -> bool {
    ids.is_empty() && String::from_utf8_lossy(line).contains("\"method\"")
}

/// Whether a well-formed message that rmcp's types reject may be dropped silently:
/// a notification rmcp does not know (for compatibility, as rmcp's own transport does).
fn ignorable(value: &Value) -> bool {
    value.get("id").is_none() && value.get("method").is_some()
}

impl rmcp::transport::Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let wire = self.wire.clone();
        async move {
            let mut text = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            if let JsonRpcMessage::Request(r) = &item {
                let value: Value = serde_json::from_slice(&text).unwrap_or(Value::Null);
                let method = value["method"].as_str().unwrap_or("").to_string();
                guard(&wire.pending).insert(id_key(&r.id), method);
            }
            text.push(b'\n');
            let mut w = writer.lock().await;
            let Some(stdin) = w.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the server's stdin is closed",
                ));
            };
            stdin.write_all(&text).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if let Some(msg) = self.queued.pop_front() {
                return Some(msg);
            }
            match self.read_line().await {
                Ok(None) | Err(_) => {
                    let status =
                        tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await;
                    let text = match status {
                        Ok(Ok(s)) => match s.code() {
                            Some(code) => format!("exit status {code}"),
                            None => format!("{s}"),
                        },
                        _ => "its output ended".to_string(),
                    };
                    *guard(&self.wire.exit) = Some(text);
                    return None;
                }
                Ok(Some(Err(bytes))) => {
                    let ids = ids_in(&self.line);
                    if !looks_like_notification(&self.line, &ids) {
                        self.fault(TransportFault::Oversized { bytes: Some(bytes) }, &ids);
                    }
                }
                Ok(Some(Ok(()))) => {
                    let raw = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
                    let raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
                    if raw.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let raw = raw.to_vec();
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(&raw) {
                        Ok(msg) => {
                            self.note_received(&raw, &msg);
                            return Some(msg);
                        }
                        Err(e) => {
                            let value = serde_json::from_slice::<Value>(&raw).ok();
                            if value.as_ref().is_some_and(ignorable) {
                                continue;
                            }
                            let ids = match &value {
                                Some(v) => {
                                    v.get("id").map(|id| id.to_string()).into_iter().collect()
                                }
                                None => ids_in(&raw),
                            };
                            if value.is_none() && looks_like_notification(&raw, &ids) {
                                continue;
                            }
                            // A line that names no request (a progress bar, a log line
                            // printed to stdout) answered nothing: skipped and reported,
                            // never blamed on the requests in flight.
                            if ids.is_empty() {
                                self.wire.stray(&raw);
                                continue;
                            }
                            self.fault(TransportFault::undecodable(&raw, &e), &ids);
                        }
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.writer.lock().await.take());
        Ok(())
    }
}

/// The byte offset of serde's 1-based `line` and `column` in `text`.
fn position_of(text: &[u8], line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in text.split(|b| *b == b'\n').enumerate() {
        if i + 1 == line {
            return offset + column.saturating_sub(1);
        }
        offset += l.len() + 1;
    }
    column.saturating_sub(1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A read dropped mid-line (a `select!` that took another branch) loses nothing: the
    /// next read returns the whole line, its start included.
    #[tokio::test]
    async fn a_read_dropped_mid_line_keeps_what_it_took() {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg("printf '{\"jsonrpc\":\"2.0\",'; sleep 1; printf '\"id\":1,\"result\":{}}\\n'")
            .stdin(std::process::Stdio::null());
        let mut transport = StdioTransport::spawn(cmd, Arc::new(Wire::default())).unwrap();
        // The first half arrives, then the read is dropped while it waits for the rest.
        let dropped = tokio::time::timeout(Duration::from_millis(500), transport.read_line()).await;
        assert!(dropped.is_err(), "the line was not cut in two");
        let read = tokio::time::timeout(Duration::from_secs(10), transport.read_line())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read, Some(Ok(())));
        assert_eq!(
            String::from_utf8_lossy(&transport.line),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"
        );
    }

    #[test]
    fn ids_are_found_at_either_end_and_escaped_ones_skipped() {
        assert_eq!(ids_in(br#"{"jsonrpc":"2.0","id":7,"result":"#), ["7"]);
        assert_eq!(
            ids_in(br#"..."x"},"jsonrpc":"2.0","id":"a-1"}"#),
            ["\"a-1\""]
        );
        assert!(ids_in(br#"{"text":"{\"id\":3}"}"#).is_empty());
    }

    #[test]
    fn a_lone_surrogate_is_a_decode_error_with_a_position() {
        let line =
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\udcff"}]}}"#;
        let e = serde_json::from_slice::<Value>(line).unwrap_err();
        let at = position_of(line, e.line(), e.column());
        assert!(at > 60 && at < line.len(), "{at}: {e}");
    }
}
