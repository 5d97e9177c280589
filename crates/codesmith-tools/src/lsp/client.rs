//! One language server: a resident process started in the sandbox
//! ([`crate::shell::Interactive`]: the shell's allowlist, network off) and spoken to in
//! JSON-RPC 2.0 over its stdin and stdout with LSP's `Content-Length` framing.
//!
//! A reader task takes every message the server sends: responses go to the request
//! waiting for them, `textDocument/publishDiagnostics` is kept per document (with a
//! count, so a caller can wait for the first publication after its change), and requests
//! from the server are answered at once (`workspace/configuration` with one `null` per
//! item, anything else with `null`), so a server never waits on us.

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lsp_types::Diagnostic;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, oneshot};

use crate::ToolContext;
use crate::shell::Interactive;

/// Largest message read from a server: 64 MB (a workspace-symbol answer of a big
/// project); a larger `Content-Length` ends the connection.
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// Diagnostics the server last published for one document.
#[derive(Debug, Default, Clone)]
pub(crate) struct Published {
    /// How many publications arrived for the document.
    pub(crate) count: u64,
    /// The document version the last one names, when it names one.
    pub(crate) version: Option<i32>,
    /// The diagnostics.
    pub(crate) diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Default)]
struct Shared {
    pending: HashMap<i64, oneshot::Sender<Result<Value, String>>>,
    published: HashMap<String, Published>,
    closed: Option<String>,
}

/// A running language server.
#[derive(Debug)]
pub(crate) struct LspClient {
    process: Arc<tokio::sync::Mutex<Interactive>>,
    shared: Arc<Mutex<Shared>>,
    changed: Arc<Notify>,
    next_id: Mutex<i64>,
    /// Open documents and their versions.
    open: Mutex<HashMap<String, i32>>,
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LspClient {
    /// Starts `argv` in the sandbox under `ctx` and runs the `initialize` handshake for
    /// `root` (a `file://` URI), bounded by `timeout`.
    pub(crate) async fn start(
        ctx: &ToolContext,
        argv: Vec<OsString>,
        root: &str,
        timeout: Duration,
    ) -> Result<LspClient, String> {
        let mut process = Interactive::spawn(ctx, argv).map_err(|r| r.message)?;
        let stdout = process
            .take_stdout()
            .ok_or_else(|| "its stdout could not be read".to_string())?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let changed = Arc::new(Notify::new());
        let process = Arc::new(tokio::sync::Mutex::new(process));
        let client = LspClient {
            process: Arc::clone(&process),
            shared: Arc::clone(&shared),
            changed: Arc::clone(&changed),
            next_id: Mutex::new(1),
            open: Mutex::new(HashMap::new()),
        };
        tokio::spawn(read_loop(stdout, shared, changed, process));
        let params = json!({
            // The server runs in its own PID namespace, where this process's id names
            // nothing: a server that watches its parent would exit at once.
            "processId": null,
            "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": "workspace"}],
            "capabilities": {
                "textDocument": {
                    "synchronization": {"didSave": true},
                    "publishDiagnostics": {"relatedInformation": false, "versionSupport": true},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "definition": {}, "references": {},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true}
                },
                "workspace": {"configuration": true, "workspaceFolders": true, "symbol": {}}
            },
            "clientInfo": {"name": "codesmith"}
        });
        client.request("initialize", params, timeout).await?;
        client.notify("initialized", json!({})).await?;
        Ok(client)
    }

    async fn write(&self, message: &Value) -> Result<(), String> {
        write_to(&self.process, message).await
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Value) -> Result<(), String> {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    /// Sends a request and waits at most `timeout` for its result.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        let id = {
            let mut next = self
                .next_id
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *next += 1;
            *next
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut shared = lock(&self.shared);
            if let Some(why) = &shared.closed {
                return Err(why.clone());
            }
            shared.pending.insert(id, tx);
        }
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let answer = tokio::select! {
            answer = rx => answer.unwrap_or_else(|_| Err("the server stopped".to_string())),
            () = tokio::time::sleep(timeout) => Err(format!(
                "it did not answer {method} within {:.1} s",
                timeout.as_secs_f64()
            )),
        };
        lock(&self.shared).pending.remove(&id);
        answer
    }

    /// Opens `uri` with `text`, or sends its whole new text when it is open already;
    /// returns the publication count before the change (see [`LspClient::wait_published`])
    /// and the new version.
    pub(crate) async fn sync(
        &self,
        uri: &str,
        language_id: &str,
        text: &str,
    ) -> Result<(u64, i32), String> {
        let before = self.published(uri).map_or(0, |p| p.count);
        let version = {
            let mut open = self
                .open
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let next = open.get(uri).map_or(1, |v| v + 1);
            open.insert(uri.to_string(), next);
            next
        };
        if version == 1 {
            self.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": language_id, "version": version, "text": text}}),
            )
            .await?;
        } else {
            self.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
            )
            .await?;
            self.notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": uri}}),
            )
            .await?;
        }
        Ok((before, version))
    }

    /// The diagnostics last published for `uri`.
    pub(crate) fn published(&self, uri: &str) -> Option<Published> {
        lock(&self.shared).published.get(uri).cloned()
    }

    /// Waits, at most `timeout`, for a publication for `uri` after the `before`-th one
    /// (and, when it names a version, for `version` or later); then a short while longer
    /// for a follow-up (servers that publish syntax and semantic results apart). `None`
    /// when none came in time.
    pub(crate) async fn wait_published(
        &self,
        uri: &str,
        before: u64,
        version: i32,
        timeout: Duration,
    ) -> Option<Published> {
        let deadline = tokio::time::Instant::now() + timeout;
        let fresh = |p: &Published| p.count > before && p.version.is_none_or(|v| v >= version);
        loop {
            let notified = self.changed.notified();
            if let Some(p) = self.published(uri).filter(fresh) {
                // A follow-up within 300 ms replaces it.
                let settle = tokio::time::Instant::now() + Duration::from_millis(300);
                let count = p.count;
                loop {
                    let notified = self.changed.notified();
                    if self.published(uri).is_some_and(|q| q.count > count) {
                        break;
                    }
                    let until = settle.min(deadline);
                    if tokio::time::timeout_at(until, notified).await.is_err() {
                        break;
                    }
                }
                return self.published(uri);
            }
            if lock(&self.shared).closed.is_some() {
                return None;
            }
            let step = (tokio::time::Instant::now() + Duration::from_millis(50)).min(deadline);
            if tokio::time::timeout_at(step, notified).await.is_err()
                && tokio::time::Instant::now() >= deadline
            {
                return None;
            }
        }
    }

    /// Why the connection ended, once it has.
    pub(crate) fn closed(&self) -> Option<String> {
        lock(&self.shared).closed.clone()
    }

    /// `shutdown`, then `exit`, each bounded; then the process tree is killed.
    pub(crate) async fn shutdown(&self) {
        if self.closed().is_none() {
            let _ = self
                .request("shutdown", Value::Null, Duration::from_millis(500))
                .await;
            let _ = self.notify("exit", Value::Null).await;
            let mut process = self.process.lock().await;
            process.settle(Duration::from_millis(300)).await;
            process.kill();
        } else {
            self.process.lock().await.kill();
        }
    }
}

/// Writes one framed message to the server's stdin.
async fn write_to(
    process: &tokio::sync::Mutex<Interactive>,
    message: &Value,
) -> Result<(), String> {
    let body = message.to_string();
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    let mut process = process.lock().await;
    process
        .stdin
        .write_all(frame.as_bytes())
        .await
        .map_err(|e| format!("the server's stdin closed ({e})"))?;
    process
        .stdin
        .flush()
        .await
        .map_err(|e| format!("the server's stdin closed ({e})"))
}

/// Reads frames until the stream ends, dispatching each.
async fn read_loop(
    stdout: tokio::process::ChildStdout,
    shared: Arc<Mutex<Shared>>,
    changed: Arc<Notify>,
    process: Arc<tokio::sync::Mutex<Interactive>>,
) {
    let mut reader = BufReader::new(stdout);
    let why = loop {
        match read_frame(&mut reader).await {
            Ok(Some(message)) => {
                if let Some(reply) = dispatch(message, &shared, &changed) {
                    // A request from the server is answered at once, so it never waits.
                    let _ = write_to(&process, &reply).await;
                }
            }
            Ok(None) => {
                // A server whose sandbox could not be set up never ran: say so, with
                // bubblewrap's reason, rather than that it closed its output.
                let mut process = process.lock().await;
                process.settle(Duration::from_millis(300)).await;
                break match process.sandbox_failure() {
                    Some(failure) => format!(
                        "the sandbox could not be set up, so the server never ran: {}",
                        failure.message
                    ),
                    None => "the server closed its output".to_string(),
                };
            }
            Err(e) => break e,
        }
    };
    let mut state = lock(&shared);
    state.closed = Some(why.clone());
    for (_, tx) in state.pending.drain() {
        let _ = tx.send(Err(why.clone()));
    }
    drop(state);
    changed.notify_waiters();
}

/// One framed message: headers up to an empty line, then `Content-Length` bytes of JSON.
async fn read_frame(
    reader: &mut BufReader<tokio::process::ChildStdout>,
) -> Result<Option<Value>, String> {
    let mut length = None;
    loop {
        let mut line = String::new();
        let n = reader
            .read_line(&mut line)
            .await
            .map_err(|e| format!("reading the server's output failed ({e})"))?;
        if n == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_MESSAGE {
        return Err(format!("the server sent a message of {length} bytes"));
    }
    let mut body = vec![0u8; length];
    reader
        .read_exact(&mut body)
        .await
        .map_err(|e| format!("reading the server's output failed ({e})"))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| format!("the server sent a message that is not JSON ({e})"))
}

/// Handles one message from the server; returns the reply a server request gets.
fn dispatch(message: Value, shared: &Mutex<Shared>, changed: &Notify) -> Option<Value> {
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").cloned();
    match (method, id) {
        (Some("textDocument/publishDiagnostics"), None) => {
            let params = &message["params"];
            let uri = params["uri"].as_str()?;
            let diagnostics: Vec<Diagnostic> =
                serde_json::from_value(params["diagnostics"].clone()).unwrap_or_default();
            let version = params["version"].as_i64().map(|v| v as i32);
            let mut state = lock(shared);
            let entry = state.published.entry(uri.to_string()).or_default();
            entry.count += 1;
            entry.version = version;
            entry.diagnostics = diagnostics;
            drop(state);
            changed.notify_waiters();
            None
        }
        (Some(method), Some(id)) => {
            // A request from the server: answered at once.
            let result = if method == "workspace/configuration" {
                let items = message["params"]["items"].as_array().map_or(0, Vec::len);
                Value::Array(vec![Value::Null; items])
            } else {
                Value::Null
            };
            Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
        }
        (None, Some(id)) => {
            let id = id.as_i64()?;
            let answer = match message.get("error") {
                Some(error) => Err(format!(
                    "it answered with an error: {}",
                    error["message"].as_str().unwrap_or("(no message)")
                )),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            if let Some(tx) = lock(shared).pending.remove(&id) {
                let _ = tx.send(answer);
            }
            None
        }
        _ => None,
    }
}
