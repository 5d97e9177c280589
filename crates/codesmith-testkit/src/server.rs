//! The HTTP/1.1 server that plays the script.
//!
//! Hand-rolled on tokio so faults are exact: every response closes its
//! connection (`connection: close`), and an SSE body is delimited by the
//! close itself, so a dropped stream looks to the client like a clean end
//! of body without the terminal signal.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::script::{Fault, FaultKind, Reply, Scripted};
use crate::sse::{Dialect, render, render_whole};

/// Largest request the server reads (headers plus body): 32 MiB.
const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers with lower-cased names, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::String` holding the raw text when it
    /// is not JSON).
    pub body: Value,
    /// The raw body bytes, as text (for byte-for-byte prefix assertions).
    pub raw_body: String,
}

impl RecordedRequest {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    cache: Mutex<Option<crate::cache::PromptCache>>,
    cache_usage: Mutex<Vec<crate::CacheUsage>>,
    /// Requests with a larger body are refused as too long (see [`ScriptedServer::refuse_over`]).
    refuse_over: Mutex<Option<usize>>,
    /// How many requests were refused as too long.
    refused: Mutex<usize>,
    /// Standing replies: a request whose body contains the text gets the turn, and the
    /// script is left as it is (see [`ScriptedServer::answer_when`]).
    standing: Mutex<Vec<(String, Scripted)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A scripted model server on `127.0.0.1` (random port).
///
/// It serves `POST …/chat/completions` (OpenAI SSE) and `POST …/messages`
/// (Anthropic SSE), answering each request with the next [`Reply`] of its
/// script and recording every request. When the script is exhausted it
/// answers HTTP 500 with a message saying so, so a runaway loop shows up.
/// The server stops when dropped.
///
/// ```no_run
/// # async fn demo() {
/// use codesmith_testkit::{Fault, Scripted, ScriptedServer};
/// let server = ScriptedServer::start().await;
/// server.push(Fault::status(429).retry_after(1));
/// server.push(Scripted::tool_call("id1", "read_file", r#"{"path":"a"}"#));
/// server.push(Scripted::text("done"));
/// let base = server.base_url(); // http://127.0.0.1:PORT/v1
/// // ... run the client against `base` ...
/// assert_eq!(server.requests().len(), 3);
/// # }
/// ```
#[derive(Debug)]
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl ScriptedServer {
    /// Binds `127.0.0.1:0` and starts serving on the current tokio runtime.
    ///
    /// # Panics
    /// When no local port can be bound (a broken test machine).
    #[allow(clippy::expect_used)]
    pub async fn start() -> ScriptedServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("scripted server: cannot bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("scripted server: no local address");
        let shared = Arc::new(Shared::default());
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        ScriptedServer { addr, shared, task }
    }

    /// Appends a reply (a [`Scripted`] turn or a [`Fault`]) to the script.
    pub fn push(&self, reply: impl Into<Reply>) -> &Self {
        lock(&self.shared.script).push_back(reply.into());
        self
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1` (what
    /// `--base-url` takes). The Anthropic client accepts it too.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The root URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// The bodies of every request received so far, in order.
    pub fn request_bodies(&self) -> Vec<Value> {
        lock(&self.shared.requests)
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }

    /// Answers Anthropic requests by the rules of Anthropic's prompt cache
    /// (see [`crate::CacheUsage`]): `message_start` then reports
    /// `cache_read_input_tokens` and `cache_creation_input_tokens`, with
    /// `min_tokens` as the minimum cacheable prefix.
    pub fn enable_prompt_cache(&self, min_tokens: u64) -> &Self {
        *lock(&self.shared.cache) = Some(crate::cache::PromptCache::new(min_tokens));
        self
    }

    /// The prompt-cache usage of every Anthropic request answered with the
    /// cache enabled, in order.
    pub fn cache_usage(&self) -> Vec<crate::CacheUsage> {
        lock(&self.shared.cache_usage).clone()
    }

    /// Refuses every request whose body is longer than `bytes` the way OpenAI refuses a
    /// request over the model's context window (HTTP 400, `context_length_exceeded`,
    /// "This model's maximum context length is …"), without consuming the script.
    pub fn refuse_over(&self, bytes: usize) -> &Self {
        *lock(&self.shared.refuse_over) = Some(bytes);
        self
    }

    /// How many requests [`ScriptedServer::refuse_over`] refused.
    pub fn refused(&self) -> usize {
        *lock(&self.shared.refused)
    }

    /// Answers every request whose body contains `marker` with `turn`, leaving the script
    /// as it is: for requests whose number is not known in advance (a compaction's
    /// summary request, found by a phrase of its instructions).
    pub fn answer_when(&self, marker: impl Into<String>, turn: Scripted) -> &Self {
        lock(&self.shared.standing).push((marker.into(), turn));
        self
    }

    /// Replies still queued.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let _ = handle(stream, shared).await;
        });
    }
}

async fn handle(mut stream: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    let Some(request) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let dialect = if request.path.ends_with("/chat/completions") {
        Some(Dialect::OpenAi)
    } else if request.path.ends_with("/messages") {
        Some(Dialect::Anthropic)
    } else {
        None
    };
    let served = {
        let mut requests = lock(&shared.requests);
        requests.push(request.clone());
        requests.len()
    };
    let Some(dialect) = dialect else {
        let body = error_body(&format!(
            "scripted server: no endpoint at {}; use …/chat/completions or …/messages",
            request.path
        ));
        return write_plain(&mut stream, 404, None, &body).await;
    };
    if lock(&shared.refuse_over).is_some_and(|max| request.raw_body.len() > max) {
        *lock(&shared.refused) += 1;
        let body = json!({"error": {
            "message": format!(
                "This model's maximum context length is {} tokens. However, your messages resulted in {} tokens.",
                lock(&shared.refuse_over).unwrap_or(0) / 4,
                request.raw_body.len() / 4
            ),
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }})
        .to_string();
        return write_plain(&mut stream, 400, None, &body).await;
    }
    let standing = lock(&shared.standing)
        .iter()
        .find(|(marker, _)| request.raw_body.contains(marker.as_str()))
        .map(|(_, turn)| turn.clone());
    if let Some(turn) = standing {
        return play_turn(&mut stream, &turn, dialect).await;
    }
    let reply = lock(&shared.script).pop_front();
    match reply {
        Some(Reply::Turn(mut turn)) => {
            if dialect == Dialect::Anthropic
                && let Some(cache) = lock(&shared.cache).as_mut()
            {
                let usage = cache.serve(&request.body);
                lock(&shared.cache_usage).push(usage);
                turn.cache = Some(usage);
            }
            play_turn(&mut stream, &turn, dialect).await
        }
        Some(Reply::Fault(fault)) => play_fault(&mut stream, &fault).await,
        None => {
            let body = error_body(&format!(
                "scripted server: script exhausted (request {served} has no scripted reply)"
            ));
            write_plain(&mut stream, 500, None, &body).await
        }
    }
}

async fn play_turn(
    stream: &mut TcpStream,
    turn: &Scripted,
    dialect: Dialect,
) -> std::io::Result<()> {
    if turn.stall_before_ms > 0 {
        tokio::time::sleep(Duration::from_millis(turn.stall_before_ms)).await;
    }
    if turn.whole {
        return write_plain(stream, 200, None, &render_whole(turn, dialect)).await;
    }
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await?;
    if let Some(body) = &turn.raw {
        write_pieces(stream, body.as_bytes(), turn.write_bytes).await?;
        return stream.shutdown().await;
    }
    let mut content_sent = 0usize;
    let mut pace = pacer(turn.pace_ms);
    for event in render(turn, dialect) {
        if event.terminal && turn.omit_terminal {
            break;
        }
        if let Some(pace) = pace.as_mut() {
            pace.tick().await;
        }
        write_pieces(stream, event.text.as_bytes(), turn.write_bytes).await?;
        if event.content {
            content_sent += 1;
            if turn.drop_after == Some(content_sent) {
                break;
            }
            if let Some((after, ms)) = turn.stall_after
                && after == content_sent
            {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
        }
    }
    stream.shutdown().await
}

/// The clock of a paced turn: the first tick is immediate, the next ones
/// `ms` apart; a missed tick delays the schedule instead of bursting.
fn pacer(ms: u64) -> Option<tokio::time::Interval> {
    if ms == 0 {
        return None;
    }
    let mut interval = tokio::time::interval(Duration::from_millis(ms));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    Some(interval)
}

async fn write_pieces(stream: &mut TcpStream, bytes: &[u8], size: usize) -> std::io::Result<()> {
    if size == 0 {
        stream.write_all(bytes).await?;
        return stream.flush().await;
    }
    for piece in bytes.chunks(size) {
        stream.write_all(piece).await?;
        stream.flush().await?;
    }
    Ok(())
}

async fn play_fault(stream: &mut TcpStream, fault: &Fault) -> std::io::Result<()> {
    match fault.kind {
        FaultKind::Status(status) => {
            let body = fault
                .body
                .clone()
                .unwrap_or_else(|| error_body(&format!("scripted HTTP {status}")));
            write_plain(stream, status, fault.retry_after.as_deref(), &body).await
        }
        FaultKind::Hang(ms) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            stream.shutdown().await
        }
        FaultKind::Close => stream.shutdown().await,
    }
}

fn error_body(message: &str) -> String {
    json!({"error": {"message": message, "type": "scripted_error"}}).to_string()
}

async fn write_plain(
    stream: &mut TcpStream,
    status: u16,
    retry_after: Option<&str>,
    body: &str,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reason(status),
        body.len()
    );
    if let Some(value) = retry_after {
        head.push_str(&format!("retry-after: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await?;
    stream.shutdown().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Scripted",
    }
}

/// Reads one request (headers, then a `content-length` body).
/// `Ok(None)` when the client closed or sent something unreadable.
async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<RecordedRequest>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_REQUEST_BYTES {
            return Ok(None);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_REQUEST_BYTES);
    let mut body = buf[header_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    let raw_body = String::from_utf8_lossy(&body).to_string();
    let body = serde_json::from_str(&raw_body).unwrap_or_else(|_| Value::String(raw_body.clone()));
    Ok(Some(RecordedRequest {
        path,
        headers,
        body,
        raw_body,
    }))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
