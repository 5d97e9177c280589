//! One MCP server connection (rmcp's client side), over stdio or streamable HTTP,
//! restarted once after a crash.
//!
//! A call's timeout (`tool_timeout_secs`) is an idle timeout: each progress notification
//! for the call starts it again, while a hard ceiling (`tool_max_secs`) still bounds the
//! whole call. When the server's tool list changes (`notifications/tools/list_changed`),
//! the tools are listed again: new ones are appended to the catalogue of every registry
//! the server's tools were registered into ([`crate::LateTools`]), removed ones answer
//! that the server removed them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock, Weak};

use codesmith_policy::NetworkPolicy;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientRequest, ProgressNotificationParam, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use super::config::{Launch, McpServerConfig, TransportKind};
use super::events::EventSender;
use super::handler::Client;
use super::http;
use super::transport::{StdioTransport, TransportFault, Wire};
use super::{McpEvent, schema};
use crate::fetch::resolve::SystemResolver;
use crate::host_programs::{self, HostProgram};
use crate::{LateTools, Tool};

/// What a server offered at start-up: one entry per tool, as the server sent it.
pub type RawTools = Vec<Value>;

/// Why a call did not produce a result.
#[derive(Debug)]
pub enum CallError {
    /// The server is not running and could not be (re)started; the text says why.
    Down(String),
    /// No answer, and no progress, within the tool timeout (the request was cancelled at
    /// the server).
    Timeout,
    /// The call ran past the hard ceiling although it reported progress (cancelled too);
    /// the ceiling in seconds.
    Ceiling(u64),
    /// The server answered with a JSON-RPC error; the text is its message.
    Protocol(String),
    /// The answer could not be used (too large, or not decodable); the connection goes on.
    Transport(TransportFault),
    /// The connection broke during the call; how the process ended and the tail of its
    /// stderr, when known.
    Closed(Option<String>),
    /// The server no longer offers the tool (it said its tool list changed).
    Removed,
}

type Service = RunningService<RoleClient, Client>;

struct Conn {
    service: Option<Service>,
    wire: Option<Arc<Wire>>,
    restarts_left: u8,
}

/// How the connection is made, with everything resolved from the user's environment.
enum Link {
    Stdio {
        env: BTreeMap<String, String>,
        launch: Launch,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        token: Option<String>,
        network: NetworkPolicy,
    },
}

/// A configured MCP server and its (lazily restarted) connection.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    link: Link,
    workspace: PathBuf,
    /// The CodeSmith home (OAuth tokens).
    home: PathBuf,
    conn: Mutex<Conn>,
    me: Weak<McpServer>,
    /// Where notices, progress and logs go (from the first message of the handshake).
    events: EventSender,
    /// Running calls: progress token key → remote tool name.
    calls: StdMutex<BTreeMap<String, String>>,
    /// Remote names of the tools the server offers now.
    offered: StdMutex<BTreeSet<String>>,
    /// Remote names of the tools registered in this session (offered now or before).
    registered: StdMutex<BTreeSet<String>>,
    /// Registries the server's tools were registered into.
    late: StdMutex<Vec<LateTools>>,
    /// How tools the server adds later enter (as its start-up tools did).
    late_policy: StdMutex<LatePolicy>,
    /// How many tools the server added after it started.
    late_count: AtomicUsize,
    /// Whether a re-listing is asked for and whether the one task that lists runs.
    relist: StdMutex<Relist>,
    /// How many re-listings finished (see [`McpServer::request_relist`]).
    relisted: tokio::sync::watch::Sender<u64>,
    /// The same for the prompts (see [`McpServer::request_prompt_relist`]).
    prompt_relist: StdMutex<Relist>,
    /// How many re-listings of the prompts finished.
    prompts_relisted: tokio::sync::watch::Sender<u64>,
    /// The prompts the server offers now (as listed at start, then after each
    /// `notifications/prompts/list_changed`).
    prompts: StdMutex<Vec<Value>>,
    /// What the server said at the handshake (first connection).
    about: OnceLock<About>,
}

/// The state of re-listing the tools: a storm of `notifications/tools/list_changed`
/// leaves at most one listing running and one pending.
#[derive(Debug, Default)]
struct Relist {
    /// A listing is asked for and has not started yet.
    pending: bool,
    /// The task that lists runs.
    running: bool,
    /// Listings started so far.
    started: u64,
}

/// What a server said about itself at its first handshake.
#[derive(Debug, Clone, Default)]
pub struct About {
    /// Its `instructions`, at most [`MAX_INSTRUCTIONS`] bytes.
    pub instructions: Option<String>,
    /// Whether it offers resources.
    pub resources: bool,
    /// Its prompts, as listed at start (empty when it offers none).
    pub prompts: Vec<Value>,
}

/// Longest server `instructions` taken into the system prompt, in bytes.
pub const MAX_INSTRUCTIONS: usize = 4_096;

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .finish()
    }
}

fn guard<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(&token.0).unwrap_or_default()
}

/// Sends `notifications/cancelled` for a request whose caller went away (a cancelled
/// turn dropped the call's future), unless disarmed.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let param = CancelledNotificationParam::new(
                    Some(id),
                    Some("the call was cancelled".into()),
                );
                let _ = peer
                    .send_notification(CancelledNotification::new(param).into())
                    .await;
            });
        }
    }
}

impl McpServer {
    /// Starts `config` as server `name` for `workspace` (a stdio server as
    /// [`McpServerConfig::launch`] allows, refusing one that would load code from the
    /// workspace), bounded by the start-up timeout, and lists its tools. `${VAR}` in `env` and
    /// `headers`, and the bearer token, come from `lookup`; an HTTP server's URL must pass
    /// `network`'s deny list and the checks in [`http`].
    ///
    /// Tools the server marks as runnable only as tasks are left out (CodeSmith does not
    /// run tasks); their names are returned beside the tools.
    ///
    /// What the server reports (logs, progress, tool-list changes) goes to `events` from
    /// its first message on, so nothing it sends during start-up is lost.
    ///
    /// Errors: a readable reason (keys of both transports, unset `${VAR}`, a refused URL,
    /// spawn failure, handshake failure or time-out, with the tail of the server's stderr)
    /// for the start-up notice; secrets the server was given are redacted from it.
    pub async fn start(
        name: &str,
        config: &McpServerConfig,
        workspace: &Path,
        home: &Path,
        lookup: &(dyn Fn(&str) -> Option<String> + Sync),
        network: &NetworkPolicy,
        events: &EventSender,
    ) -> Result<(Arc<McpServer>, RawTools, Vec<String>), String> {
        let link = match config.transport()? {
            TransportKind::Stdio => {
                let env = config.resolved_env(lookup)?;
                let launch = config.launch(name, workspace, &env)?;
                Link::Stdio { env, launch }
            }
            TransportKind::Http(url) => Link::Http {
                url,
                headers: config.resolved_headers(lookup)?,
                token: config.bearer_token(lookup)?,
                network: network.clone(),
            },
        };
        let server = Arc::new_cyclic(|me| McpServer {
            name: name.to_string(),
            config: config.clone(),
            link,
            workspace: workspace.to_path_buf(),
            home: home.to_path_buf(),
            conn: Mutex::new(Conn {
                service: None,
                wire: None,
                restarts_left: 1,
            }),
            me: me.clone(),
            events: events.clone(),
            calls: StdMutex::default(),
            offered: StdMutex::default(),
            registered: StdMutex::default(),
            late: StdMutex::default(),
            late_policy: StdMutex::default(),
            late_count: AtomicUsize::new(0),
            relist: StdMutex::default(),
            relisted: tokio::sync::watch::Sender::new(0),
            prompt_relist: StdMutex::default(),
            prompts_relisted: tokio::sync::watch::Sender::new(0),
            prompts: StdMutex::default(),
            about: OnceLock::new(),
        });
        let (service, wire) = server.connect().await?;
        let listed =
            tokio::time::timeout(config.startup_timeout(), list_tools(service.peer())).await;
        let tools = match listed {
            Err(_) => {
                return Err(format!(
                    "no tool list within {}s",
                    config.startup_timeout().as_secs()
                ));
            }
            Ok(Err(e)) => {
                let why = server.redact(&format!("listing its tools failed: {e}"));
                return Err(with_stderr(why, wire.as_deref()).await);
            }
            Ok(Ok(listed)) => {
                server.note_cut("tools", listed.cut);
                listed.items
            }
        };
        let info = service.peer().peer_info();
        let mut about = About {
            instructions: info
                .as_ref()
                .and_then(|i| i.instructions.as_deref())
                .filter(|t| !t.trim().is_empty())
                .map(|t| {
                    let safe = codesmith_policy::terminal_safe(t);
                    let t = crate::sanitize::sanitize_text(&safe).0;
                    super::tool::clip(&t, MAX_INSTRUCTIONS).to_string()
                }),
            resources: info
                .as_ref()
                .is_some_and(|i| i.capabilities.resources.is_some()),
            prompts: Vec::new(),
        };
        if info
            .as_ref()
            .is_some_and(|i| i.capabilities.prompts.is_some())
        {
            let listed =
                tokio::time::timeout(config.startup_timeout(), list_prompts(service.peer())).await;
            if let Ok(Ok(listed)) = listed {
                server.note_cut("prompts", listed.cut);
                about.prompts = listed
                    .items
                    .iter()
                    .filter_map(|p| serde_json::to_value(p).ok())
                    .collect();
            }
        }
        *guard(&server.prompts) = about.prompts.clone();
        let _ = server.about.set(about);
        let (raw, tasks_only) = offered_tools(&tools, wire.as_deref());
        {
            let names: BTreeSet<String> = raw
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
                .collect();
            *guard(&server.offered) = names.clone();
            *guard(&server.registered) = names;
        }
        let mut conn = server.conn.lock().await;
        conn.service = Some(service);
        conn.wire = wire;
        drop(conn);
        Ok((server, raw, tasks_only))
    }

    /// Whether this server's transport hands its log messages on in order (stdio).
    pub(super) fn logs_in_order(&self) -> bool {
        matches!(self.link, Link::Stdio { .. })
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// Appends tools the server adds later to `registry`'s catalogue too.
    pub fn add_registry(&self, registry: LateTools) {
        guard(&self.late).push(registry);
    }

    /// Sets how tools the server adds later enter the catalogue: deferred when its
    /// start-up tools were (`defer`), else resident while `room` (the MCP tools the
    /// session may still hold resident under `mcp_defer_threshold`, shared by every
    /// server) lasts, deferred after.
    pub(crate) fn set_late_policy(&self, defer: bool, room: Arc<AtomicUsize>) {
        *guard(&self.late_policy) = LatePolicy { defer, room };
    }

    /// Hands `event` on: logs to the log file, what the user sees to the front end's
    /// queue (see [`super::events`] for what gives way when it is full).
    pub(super) fn emit(&self, event: McpEvent) {
        self.events.send(event);
    }

    /// A progress notification: an [`McpEvent::Progress`] for the call it belongs to.
    /// Tells the user a listing of `what` was cut ([`Listed::cut`]), as a warning.
    fn note_cut(&self, what: &str, cut: Option<String>) {
        if let Some(cut) = cut {
            self.emit(McpEvent::Log {
                server: self.name.clone(),
                level: "warning".into(),
                text: format!("listing its {what}: {cut}"),
            });
        }
    }

    pub(super) fn progress(&self, p: ProgressNotificationParam) {
        let Some(tool) = guard(&self.calls)
            .get(&token_key(&p.progress_token))
            .cloned()
        else {
            return;
        };
        self.emit(McpEvent::Progress {
            server: self.name.clone(),
            tool: schema::qualified_name(&self.name, &tool),
            progress: p.progress,
            total: p.total,
            message: p.message.map(|m| super::tool::clip(&m, 500).to_string()),
        });
    }

    /// The secrets this server was given (bearer token, header values), for redaction.
    fn secrets(&self) -> Vec<String> {
        match &self.link {
            Link::Stdio { .. } => Vec::new(),
            Link::Http { headers, token, .. } => {
                headers.values().cloned().chain(token.clone()).collect()
            }
        }
    }

    /// `text` without the secrets this server was given (see [`http::redact`]).
    fn redact(&self, text: &str) -> String {
        http::redact(text, &self.secrets())
    }

    /// Connects (spawn or HTTP handshake), the whole of it bounded by the start-up timeout.
    async fn connect(&self) -> Result<(Service, Option<Arc<Wire>>), String> {
        let limit = self.config.startup_timeout();
        let wire = Some(Arc::new(Wire::default()));
        let stdio = matches!(self.link, Link::Stdio { .. });
        if let Some(w) = wire.as_ref().filter(|_| stdio) {
            // Stray stdout lines: the first one shown to the user, every one (up to the
            // wire's bound) in mcp.log.
            let events = self.events.clone();
            let name = self.name.clone();
            w.on_stray(Box::new(move |n, line| {
                let (level, text) = if n == 1 {
                    (
                        "warning",
                        format!(
                            "its stdout carried a line that is not JSON-RPC (skipped; further \
                             ones are logged to mcp.log): {line}"
                        ),
                    )
                } else {
                    ("debug", format!("stray stdout line {n} skipped: {line}"))
                };
                events.send(McpEvent::Log {
                    server: name.clone(),
                    level: level.into(),
                    text,
                });
            }));
        }
        if let Some(w) = wire.as_ref().filter(|_| stdio) {
            // Log messages in the order the server sent them, each before the answer
            // read after it.
            let events = self.events.clone();
            let name = self.name.clone();
            w.on_log(Box::new(move |params| {
                events.send(super::handler::log_event(&name, params));
            }));
        }
        let result = tokio::time::timeout(limit, self.connect_unbounded(wire.clone())).await;
        let why = match result {
            Ok(Ok(service)) => return Ok((service, wire)),
            Ok(Err(e)) => self.redact(&e),
            Err(_) => format!("no MCP handshake within {}s", limit.as_secs()),
        };
        Err(with_stderr(why, wire.as_deref()).await)
    }

    async fn connect_unbounded(&self, wire: Option<Arc<Wire>>) -> Result<Service, String> {
        let handshake =
            |e: rmcp::service::ClientInitializeError| format!("the MCP handshake failed: {e}");
        let handler = Client {
            server: self.me.clone(),
            workspace: self.workspace.clone(),
        };
        match &self.link {
            Link::Stdio { env, launch } => {
                let mut cmd = tokio::process::Command::from(host_programs::host_command(
                    HostProgram::McpServer,
                    &launch.program,
                    &self.workspace,
                ));
                // Like every command CodeSmith starts, the server does not inherit this
                // process's secrets; only what the user passes in `env` reaches it.
                for name in crate::sandbox::secret_env_names() {
                    if !name.to_str().is_some_and(|n| env.contains_key(n)) {
                        cmd.env_remove(name);
                    }
                }
                cmd.args(&self.config.args)
                    .envs(env)
                    .current_dir(&launch.cwd)
                    .env("PWD", &launch.cwd);
                match &launch.path {
                    Some(path) => cmd.env("PATH", path),
                    None => cmd.env_remove("PATH"),
                };
                let transport = StdioTransport::spawn(cmd, wire.unwrap_or_default())
                    .map_err(|e| format!("`{}` could not be started: {e}", self.config.command))?;
                handler.serve(transport).await.map_err(handshake)
            }
            Link::Http {
                url,
                headers,
                token,
                network,
            } => {
                let endpoint = http::check_endpoint(
                    url,
                    self.config.allows_plain_http(),
                    network,
                    &SystemResolver,
                )
                .await?;
                let client = http::client_for(&endpoint, self.config.startup_timeout())?;
                let wire = wire.unwrap_or_default();
                let limits = http::response_limits();
                let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(http::header_map(headers, token.is_some())?)
                    .max_json_response_size(limits.max_json_response_size)
                    .max_sse_event_size(limits.max_sse_event_size);
                if let Some(token) = token {
                    cfg = cfg.auth_header(token.clone());
                }
                // OAuth tokens from `codesmith mcp login`, unless a static credential is
                // configured: bound to this URL, refreshed when they expire.
                let static_auth = token.is_some()
                    || headers
                        .keys()
                        .any(|k| k.eq_ignore_ascii_case("authorization"));
                let oauth_http = (!static_auth).then(|| {
                    super::oauth::OAuthHttp::for_endpoint(
                        endpoint,
                        self.config.allows_plain_http(),
                        network,
                    )
                });
                let oauth = match &oauth_http {
                    Some(http) => {
                        super::oauth::stored_manager(&self.home, &self.name, url, http).await?
                    }
                    None => None,
                };
                // A refresh that failed during the handshake: why its request failed
                // (rmcp says only "Request failed").
                let oauth_cause = |e: String| match &oauth_http {
                    Some(http) => http.explain(e),
                    None => e,
                };
                let login_hint = |e: String| {
                    let lower = e.to_ascii_lowercase();
                    if lower.contains("auth") || lower.contains("401") {
                        format!(
                            "{e}; if the server uses OAuth, run `codesmith mcp login {}` (in a \
                             terminal: it prints the URL to open and waits)",
                            self.name
                        )
                    } else {
                        e
                    }
                };
                match oauth {
                    Some(manager) => {
                        let authed = rmcp::transport::AuthClient::new(
                            http::Guarded::new(client, wire),
                            manager,
                        );
                        let transport = StreamableHttpClientTransport::with_client(authed, cfg);
                        handler
                            .serve(transport)
                            .await
                            .map_err(handshake)
                            .map_err(oauth_cause)
                            .map_err(login_hint)
                    }
                    None => {
                        let transport = StreamableHttpClientTransport::with_client(
                            http::Guarded::new(client, wire),
                            cfg,
                        );
                        handler
                            .serve(transport)
                            .await
                            .map_err(handshake)
                            .map_err(login_hint)
                    }
                }
            }
        }
    }

    /// The live peer and its wire, restarting the server once if it has stopped.
    async fn peer(&self) -> Result<(Peer<RoleClient>, Option<Arc<Wire>>), CallError> {
        let mut conn = self.conn.lock().await;
        if let Some(service) = &conn.service
            && !service.is_closed()
        {
            return Ok((service.peer().clone(), conn.wire.clone()));
        }
        conn.service = None;
        if conn.restarts_left == 0 {
            return Err(CallError::Down(
                "it stopped and was already restarted once".into(),
            ));
        }
        conn.restarts_left -= 1;
        let (service, wire) = self.connect().await.map_err(CallError::Down)?;
        let peer = service.peer().clone();
        conn.service = Some(service);
        conn.wire = wire.clone();
        Ok((peer, wire))
    }

    /// The CodeSmith home this server was started with (where spilled output goes).
    pub(super) fn home(&self) -> &Path {
        &self.home
    }

    /// What the server said about itself at its first handshake, with the prompts it
    /// offers now.
    pub fn about(&self) -> About {
        let mut about = self.about.get().cloned().unwrap_or_default();
        about.prompts = guard(&self.prompts).clone();
        about
    }

    /// One request other than a tool call (`resources/list`, `resources/read`,
    /// `prompts/get`), bounded by the tool timeout, with the call's error kinds.
    async fn request<T, F, Fut>(&self, what: &str, make: F) -> Result<T, CallError>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let (peer, wire) = self.peer().await?;
        match tokio::time::timeout(self.config.tool_timeout(), make(peer)).await {
            Err(_) | Ok(Err(ServiceError::Timeout { .. })) => Err(CallError::Timeout),
            Ok(Ok(v)) => Ok(v),
            Ok(Err(ServiceError::McpError(e))) => {
                // An answer the transport could not use was answered with its fault.
                match wire.as_ref().and_then(|w| w.take_fault_named(&e.message)) {
                    Some(fault) => Err(CallError::Transport(fault)),
                    None => Err(CallError::Protocol(self.redact(&e.message))),
                }
            }
            Ok(Err(e)) => Err(self.failed(e, what, wire.as_deref()).await),
        }
    }

    /// The error of a request `what` that failed with `e`, other than a timeout or an
    /// error the server answered with. Only the transport ending (the process exited,
    /// its pipe closed, the HTTP session is gone: rmcp's service has stopped) is the
    /// server stopping, which drops the connection so the next call restarts it (the
    /// one restart). Any other failure (an answer of the wrong shape, a cancelled
    /// request) fails this request alone, named, and the connection goes on.
    async fn failed(&self, e: ServiceError, what: &str, wire: Option<&Wire>) -> CallError {
        let ended = matches!(
            e,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        ) || self
            .conn
            .lock()
            .await
            .service
            .as_ref()
            .is_none_or(|s| s.is_closed());
        if ended {
            self.conn.lock().await.service = None;
            return self.closed(wire).await;
        }
        CallError::Protocol(match e {
            ServiceError::UnexpectedResponse => {
                format!("the server answered {what} with something that is not a {what} result")
            }
            other => format!("{what} failed: {}", self.redact(&other.to_string())),
        })
    }

    /// The server's resources (`resources/list`, page by page under
    /// [`list_capped`]'s caps), as it described them, with why the list was cut, if it was.
    ///
    /// Errors: as [`McpServer::call`].
    pub async fn list_resources(&self) -> Result<Listed<Value>, CallError> {
        let listed = self
            .request("resources/list", |peer| async move {
                list_capped(|p| {
                    let peer = &peer;
                    async move {
                        peer.list_resources(p)
                            .await
                            .map(|r| (r.resources, r.next_cursor))
                    }
                })
                .await
            })
            .await?;
        Ok(Listed {
            items: listed
                .items
                .iter()
                .filter_map(|r| serde_json::to_value(r).ok())
                .collect(),
            cut: listed.cut,
        })
    }

    /// Reads the resource `uri` (`resources/read`): the `ReadResourceResult` as JSON.
    ///
    /// Errors: as [`McpServer::call`].
    pub async fn read_resource(&self, uri: &str) -> Result<Value, CallError> {
        let params = rmcp::model::ReadResourceRequestParams::new(uri);
        let read = self
            .request("resources/read", |peer| async move {
                peer.read_resource(params).await
            })
            .await?;
        serde_json::to_value(read).map_err(|_| CallError::Closed(None))
    }

    /// Gets the prompt `name` with `arguments` (`prompts/get`): the `GetPromptResult` as
    /// JSON.
    ///
    /// Errors: as [`McpServer::call`].
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, CallError> {
        let mut params = rmcp::model::GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params = params.with_arguments(arguments);
        }
        let got = self
            .request("prompts/get", |peer| async move {
                peer.get_prompt(params).await
            })
            .await?;
        serde_json::to_value(got).map_err(|_| CallError::Closed(None))
    }

    /// Closes the connection, waiting at most `limit`: an HTTP session is ended with
    /// `DELETE` (as the streamable-HTTP transport asks of a client that leaves), a stdio
    /// server's stdin is closed.
    pub async fn close(&self, limit: std::time::Duration) {
        let service = self.conn.lock().await.service.take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(limit).await;
        }
    }

    /// Whether the server still offers `tool` (its remote name).
    pub fn offers(&self, tool: &str) -> bool {
        guard(&self.offered).contains(tool)
    }

    /// Calls `tool` with `args`. The tool timeout is an idle timeout that each progress
    /// notification restarts, under the hard ceiling of `tool_max_secs`. Dropping the
    /// returned future (a cancelled turn) or running out of time sends
    /// `notifications/cancelled` to the server.
    ///
    /// Returns the `CallToolResult` as JSON.
    pub async fn call(&self, tool: &str, args: Map<String, Value>) -> Result<Value, CallError> {
        if !self.offers(tool) {
            return Err(CallError::Removed);
        }
        let started = std::time::Instant::now();
        let (peer, wire) = self.peer().await?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let idle = self.config.tool_timeout();
        let ceiling = self.config.tool_ceiling();
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(idle);
        options.reset_timeout_on_progress = true;
        options.max_total_timeout = Some(ceiling);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match peer.send_request_with_option(request, options).await {
            Ok(h) => h,
            Err(_) => return Err(self.closed(wire.as_deref()).await),
        };
        let id = handle.id.clone();
        let key = token_key(&handle.progress_token);
        guard(&self.calls).insert(key.clone(), tool.to_string());
        let mut cancel = CancelOnDrop {
            peer: peer.clone(),
            id: Some(id.clone()),
        };
        let answer = handle.await_response().await;
        cancel.id = None;
        guard(&self.calls).remove(&key);
        let fault = wire.as_ref().and_then(|w| w.take_fault(&id));
        let outcome = match (answer, fault) {
            (_, Some(fault)) => Err(CallError::Transport(fault)),
            (answer, None) => self.outcome(answer, idle, ceiling, wire.as_deref()).await,
        };
        // A tool-list change the server announced during the call is taken in before
        // the result is handed on, so a tool it added is callable from the next turn; but
        // the wait is bounded by what is left of the call's ceiling (and one listing's
        // start-up timeout): the listing goes on in the background, never holding the
        // call past `tool_max_secs` whatever the server does.
        // A listing already running (the notification started it while the call was
        // in flight) is waited for the same way. A prompt-list change likewise, so a
        // prompt the server added is a slash command once the call has returned.
        let tools = self.due_listing(
            Listing::Tools,
            wire.as_ref().is_some_and(|w| w.take_tools_changed()),
        );
        let prompts = self.due_listing(
            Listing::Prompts,
            wire.as_ref().is_some_and(|w| w.take_prompts_changed()),
        );
        if tools.is_some() || prompts.is_some() {
            let left = ceiling
                .saturating_sub(started.elapsed())
                .min(self.config.startup_timeout());
            let wait = |which, target: Option<u64>| async move {
                if let Some(target) = target {
                    self.await_listing(which, target, left).await;
                }
            };
            futures::future::join(wait(Listing::Tools, tools), wait(Listing::Prompts, prompts))
                .await;
        }
        outcome
    }

    /// The number of the listing of `which` a call returning now must wait for: a new
    /// one when the server announced a change (`changed`), else the one running, if any.
    fn due_listing(&self, which: Listing, changed: bool) -> Option<u64> {
        let running = {
            let r = guard(self.listing(which).0);
            r.running
                .then_some(if r.pending { r.started + 1 } else { r.started })
        };
        match running {
            Some(started) if !changed => Some(started),
            _ if changed => Some(self.request_listing(which)),
            _ => None,
        }
    }

    /// The state and the finished-count of the listings of `which`.
    fn listing(&self, which: Listing) -> (&StdMutex<Relist>, &tokio::sync::watch::Sender<u64>) {
        match which {
            Listing::Tools => (&self.relist, &self.relisted),
            Listing::Prompts => (&self.prompt_relist, &self.prompts_relisted),
        }
    }

    /// What a tool call's answer (with no transport fault recorded for it) makes.
    async fn outcome(
        &self,
        answer: Result<ServerResult, ServiceError>,
        idle: std::time::Duration,
        ceiling: std::time::Duration,
        wire: Option<&Wire>,
    ) -> Result<Value, CallError> {
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                serde_json::to_value(result).map_err(|_| CallError::Closed(None))
            }
            Ok(_) => Err(CallError::Protocol(
                "the server answered tools/call with something other than a tool result".into(),
            )),
            Err(ServiceError::McpError(e)) => Err(CallError::Protocol(self.redact(&e.message))),
            Err(ServiceError::Timeout { timeout }) if timeout == ceiling && ceiling != idle => {
                Err(CallError::Ceiling(ceiling.as_secs()))
            }
            Err(ServiceError::Timeout { .. }) => Err(CallError::Timeout),
            Err(e) => Err(self.failed(e, "tools/call", wire).await),
        }
    }

    async fn closed(&self, wire: Option<&Wire>) -> CallError {
        let Some(wire) = wire else {
            return CallError::Closed(None);
        };
        let tail = wire.stderr_tail().await;
        let exit = wire.exit();
        let text = match (exit, tail) {
            (None, None) => return CallError::Closed(None),
            (Some(e), None) => e,
            (None, Some(t)) => format!("its stderr ends with:\n{t}"),
            (Some(e), Some(t)) => format!("{e}; its stderr ends with:\n{t}"),
        };
        CallError::Closed(Some(self.redact(&text)))
    }

    /// Asks for the tools to be listed again (after `notifications/tools/list_changed`),
    /// in the background: however many times it is asked, one task lists, one listing at
    /// a time, and at most one more listing is pending behind the running one. Returns
    /// the number of the listing that will see the change (for
    /// [`McpServer::await_relist`]).
    pub fn request_relist(&self) -> u64 {
        self.request_listing(Listing::Tools)
    }

    /// Asks for the prompts to be listed again (after
    /// `notifications/prompts/list_changed`), coalesced as
    /// [`McpServer::request_relist`] does for the tools: the slash commands
    /// ([`super::McpStart::prompt_commands`]) follow, and the user is told what changed.
    /// Returns the number of the listing that will see the change.
    pub fn request_prompt_relist(&self) -> u64 {
        self.request_listing(Listing::Prompts)
    }

    /// The server announced that its tool list (`prompts`: its prompt list) changed: a
    /// listing is asked for. Over stdio the transport marked the change as it read it,
    /// and the mark is taken once, by this or by the call that returns after it (see
    /// [`McpServer::call`]), so one announcement asks for one listing.
    pub(super) async fn announced(&self, prompts: bool) {
        let which = if prompts {
            Listing::Prompts
        } else {
            Listing::Tools
        };
        if self.logs_in_order() {
            let wire = self.conn.lock().await.wire.clone();
            let taken = wire.is_some_and(|w| match which {
                Listing::Tools => w.take_tools_changed(),
                Listing::Prompts => w.take_prompts_changed(),
            });
            if !taken {
                return;
            }
        }
        self.request_listing(which);
    }

    fn request_listing(&self, which: Listing) -> u64 {
        let (state, _) = self.listing(which);
        let (spawn, target) = {
            let mut r = guard(state);
            r.pending = true;
            let spawn = !r.running;
            r.running = true;
            // The next listing to start covers this request.
            (spawn, r.started + 1)
        };
        if spawn {
            match self.me.upgrade() {
                Some(me) => {
                    tokio::spawn(async move { me.relist_worker(which).await });
                }
                None => guard(state).running = false,
            }
        }
        target
    }

    /// Waits (at most `limit`) until listing number `target` (from
    /// [`McpServer::request_relist`]) has finished.
    pub async fn await_relist(&self, target: u64, limit: std::time::Duration) {
        self.await_listing(Listing::Tools, target, limit).await;
    }

    async fn await_listing(&self, which: Listing, target: u64, limit: std::time::Duration) {
        let mut done = self.listing(which).1.subscribe();
        let _ = tokio::time::timeout(limit, done.wait_for(|n| *n >= target)).await;
    }

    /// The one task that lists: runs listings while one is pending, then ends.
    async fn relist_worker(&self, which: Listing) {
        let (state, finished) = self.listing(which);
        loop {
            let number = {
                let mut r = guard(state);
                if !r.pending {
                    r.running = false;
                    return;
                }
                r.pending = false;
                r.started += 1;
                r.started
            };
            match which {
                Listing::Tools => self.relist_once().await,
                Listing::Prompts => self.relist_prompts_once().await,
            }
            finished.send_replace(number);
        }
    }

    /// The live peer and its wire for a listing of `which` (none when the connection is
    /// down: a listing never restarts the server), with the change mark of `which`
    /// cleared: the listing starting now covers every change announced so far.
    async fn listing_peer(&self, which: Listing) -> Option<(Peer<RoleClient>, Option<Arc<Wire>>)> {
        let conn = self.conn.lock().await;
        let peer = match &conn.service {
            Some(s) if !s.is_closed() => s.peer().clone(),
            _ => return None,
        };
        if let Some(w) = &conn.wire {
            match which {
                Listing::Tools => w.take_tools_changed(),
                Listing::Prompts => w.take_prompts_changed(),
            };
        }
        Some((peer, conn.wire.clone()))
    }

    /// Lists the prompts again (every page): the slash commands follow; the user is told
    /// which commands were added and removed. Bounded by the start-up timeout; a listing
    /// that fails or times out changes nothing.
    async fn relist_prompts_once(&self) {
        let Some((peer, _)) = self.listing_peer(Listing::Prompts).await else {
            return;
        };
        let listed = tokio::time::timeout(self.config.startup_timeout(), list_prompts(&peer)).await;
        let Ok(Ok(listed)) = listed else {
            return;
        };
        self.note_cut("prompts", listed.cut);
        let now: Vec<Value> = listed
            .items
            .iter()
            .filter_map(|p| serde_json::to_value(p).ok())
            .collect();
        // The slash commands the prompts make (names that make no command are skipped,
        // as in the command list).
        let commands = |prompts: &[Value]| -> BTreeSet<String> {
            prompts
                .iter()
                .filter_map(|p| p.get("name").and_then(Value::as_str))
                .map(|n| schema::qualified_name(&self.name, n))
                .filter(|c| schema::is_valid_name(c))
                .map(|c| format!("/{c}"))
                .collect()
        };
        let before = commands(&guard(&self.prompts));
        let after = commands(&now);
        *guard(&self.prompts) = now;
        let added: Vec<String> = after.difference(&before).cloned().collect();
        let removed: Vec<String> = before.difference(&after).cloned().collect();
        if !added.is_empty() || !removed.is_empty() {
            self.emit(McpEvent::PromptsChanged {
                server: self.name.clone(),
                added,
                removed,
            });
        }
    }

    /// Lists the tools again: new tools are appended to every registry's catalogue,
    /// removed ones answer that the server removed them; the user is told what changed.
    /// Bounded by the start-up timeout; a listing that fails or times out changes nothing.
    async fn relist_once(&self) {
        let Some((peer, wire)) = self.listing_peer(Listing::Tools).await else {
            return;
        };
        let listed = tokio::time::timeout(self.config.startup_timeout(), list_tools(&peer)).await;
        let Ok(Ok(listed)) = listed else {
            return;
        };
        self.note_cut("tools", listed.cut);
        let tools = listed.items;
        let Some(me) = self.me.upgrade() else {
            return;
        };
        let mut now = BTreeSet::new();
        let mut added = Vec::new();
        let mut refused = Vec::new();
        let mut over_cap = 0usize;
        let trusted = self.config.is_trusted();
        let policy = guard(&self.late_policy).clone();
        let (offered, _) = offered_tools(&tools, wire.as_deref());
        for raw in &offered {
            let Some(name) = raw.get("name").and_then(Value::as_str) else {
                continue;
            };
            now.insert(name.to_string());
            if guard(&self.registered).contains(name) {
                continue;
            }
            guard(&self.registered).insert(name.to_string());
            // Each added name lives for the session: their number is bounded.
            if self.late_count.fetch_add(1, Ordering::Relaxed) >= MAX_LATE_TOOLS {
                over_cap += 1;
                continue;
            }
            let entry = super::entry(&me, trusted, raw, None);
            let tool: Arc<dyn Tool> = Arc::new(entry);
            // The start-up rule: resident while the session holds at most
            // `mcp_defer_threshold` MCP tools, deferred after (or when the server's tools
            // are deferred).
            let defer = policy.defer
                || policy
                    .room
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| r.checked_sub(1))
                    .is_err();
            let registries = guard(&self.late).clone();
            let mut why = None;
            let mut took = false;
            for r in &registries {
                match r.add(tool.clone(), defer) {
                    Ok(_) => took = true,
                    Err(e) => why = why.or(Some(e)),
                }
            }
            if took || registries.is_empty() {
                added.push(tool.name().to_string());
            } else {
                if !defer {
                    policy.room.fetch_add(1, Ordering::Relaxed);
                }
                refused.push(format!(
                    "`{}` not added: {}",
                    codesmith_policy::visible_controls(name),
                    why.unwrap_or_default()
                ));
            }
        }
        if over_cap > 0 {
            refused.push(format!(
                "{over_cap} more tools not added: a server may add at most {MAX_LATE_TOOLS} \
                 tools after it started; a new session lists them all"
            ));
        }
        if !refused.is_empty() {
            let text = refused.join("; ");
            self.emit(McpEvent::Log {
                server: self.name.clone(),
                level: "warning".into(),
                text: super::tool::clip(&text, 1500).to_string(),
            });
        }
        let removed: Vec<String> = guard(&self.offered)
            .difference(&now)
            .map(|r| schema::qualified_name(&self.name, r))
            .collect();
        *guard(&self.offered) = now;
        if !added.is_empty() || !removed.is_empty() {
            self.emit(McpEvent::ToolsChanged {
                server: self.name.clone(),
                added,
                removed,
            });
        }
    }
}

/// Most items one listing (tools, prompts or resources) takes from a server.
pub const MAX_LISTED_ITEMS: usize = 1000;
/// Most pages one listing asks a server for.
pub const MAX_LISTED_PAGES: usize = 100;
/// Most bytes (as JSON) the items of one listing may hold together: one message's limit.
pub const MAX_LISTED_BYTES: usize = super::transport::MAX_MESSAGE;

/// What a listing collected, page by page.
#[derive(Debug)]
pub struct Listed<T> {
    /// The items, in the server's order.
    pub items: Vec<T>,
    /// Why the listing stopped before the server's last page, in words (`None` when
    /// it listed everything).
    pub cut: Option<String>,
}

/// Collects a listing by following `nextCursor` from the first page (`page` asks for
/// one), stopping at [`MAX_LISTED_ITEMS`] items, [`MAX_LISTED_BYTES`] bytes of them,
/// [`MAX_LISTED_PAGES`] pages, or a cursor the server gave before, whichever comes first
/// (then [`Listed::cut`] says which): memory stays bounded whatever the server pages.
///
/// Errors: the first page's or a later page's failure, as rmcp reports it.
async fn list_capped<T, F, Fut>(mut page: F) -> Result<Listed<T>, ServiceError>
where
    T: serde::Serialize,
    F: FnMut(Option<rmcp::model::PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut bytes = 0usize;
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LISTED_PAGES {
        let params = cursor
            .take()
            .map(|c| rmcp::model::PaginatedRequestParams::default().with_cursor(Some(c)));
        let (got, next) = page(params).await?;
        for item in got {
            bytes = bytes.saturating_add(serde_json::to_vec(&item).map_or(0, |v| v.len()));
            if items.len() == MAX_LISTED_ITEMS || bytes > MAX_LISTED_BYTES {
                let cut = format!(
                    "the list was cut at {} items ({MAX_LISTED_ITEMS} items or {} MiB at most)",
                    items.len(),
                    MAX_LISTED_BYTES / (1024 * 1024)
                );
                return Ok(Listed {
                    items,
                    cut: Some(cut),
                });
            }
            items.push(item);
        }
        match next {
            None => return Ok(Listed { items, cut: None }),
            Some(c) if !seen.insert(c.clone()) => {
                let cut = format!(
                    "the list was cut at {} items: the server gave the same page cursor twice",
                    items.len()
                );
                return Ok(Listed {
                    items,
                    cut: Some(cut),
                });
            }
            Some(c) => cursor = Some(c),
        }
    }
    let cut = format!(
        "the list was cut at {} items after {MAX_LISTED_PAGES} pages",
        items.len()
    );
    Ok(Listed {
        items,
        cut: Some(cut),
    })
}

/// Every tool of `peer`, under [`list_capped`]'s caps.
async fn list_tools(peer: &Peer<RoleClient>) -> Result<Listed<rmcp::model::Tool>, ServiceError> {
    list_capped(|p| async move { peer.list_tools(p).await.map(|r| (r.tools, r.next_cursor)) }).await
}

/// Every prompt of `peer`, under [`list_capped`]'s caps.
async fn list_prompts(
    peer: &Peer<RoleClient>,
) -> Result<Listed<rmcp::model::Prompt>, ServiceError> {
    list_capped(|p| async move {
        peer.list_prompts(p)
            .await
            .map(|r| (r.prompts, r.next_cursor))
    })
    .await
}

/// The definitions of `tools` (a listing, either transport) that CodeSmith offers, and
/// the remote names of those it leaves out because the server runs them only as tasks
/// (`execution.taskSupport = "required"`, noted from the raw answer in `wire`; CodeSmith
/// does not run tasks). Start-up and every re-listing split a listing here.
fn offered_tools(tools: &[rmcp::model::Tool], wire: Option<&Wire>) -> (Vec<Value>, Vec<String>) {
    let mut offered = Vec::new();
    let mut tasks_only = Vec::new();
    for t in tools {
        if wire.is_some_and(|w| w.is_tasks_only(&t.name)) {
            tasks_only.push(t.name.to_string());
        } else if let Ok(v) = serde_json::to_value(t) {
            offered.push(v);
        }
    }
    (offered, tasks_only)
}

/// What a server lists again after it announced a change.
#[derive(Debug, Clone, Copy)]
enum Listing {
    Tools,
    Prompts,
}

/// Most tools one server may add after it started, in one session.
pub const MAX_LATE_TOOLS: usize = 1000;

/// How a server's later tools enter the catalogue (see [`McpServer::set_late_policy`]).
#[derive(Debug, Clone)]
struct LatePolicy {
    defer: bool,
    room: Arc<AtomicUsize>,
}

impl Default for LatePolicy {
    fn default() -> Self {
        LatePolicy {
            defer: false,
            room: Arc::new(AtomicUsize::new(super::DEFAULT_DEFER_THRESHOLD)),
        }
    }
}

/// `why` with how the process ended and the tail of its stderr, when it wrote any.
async fn with_stderr(why: String, wire: Option<&Wire>) -> String {
    let Some(wire) = wire else {
        return why;
    };
    let tail = wire.stderr_tail().await;
    let why = match wire.exit() {
        Some(exit) => format!("{why} ({exit})"),
        None => why,
    };
    match tail {
        Some(tail) => format!("{why}; its stderr ends with:\n{tail}"),
        None => why,
    }
}
