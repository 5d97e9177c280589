//! One MCP server connection (rmcp's client side), over stdio or streamable HTTP,
//! restarted once after a crash.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use codesmith_policy::NetworkPolicy;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use super::config::{Launch, McpServerConfig, TransportKind};
use super::http;
use crate::fetch::resolve::SystemResolver;
use crate::host_programs::{self, HostProgram};

/// What a server offered at start-up: one entry per tool, as the server sent it.
pub type RawTools = Vec<Value>;

/// Why a call did not produce a result.
#[derive(Debug)]
pub enum CallError {
    /// The server is not running and could not be (re)started; the text says why.
    Down(String),
    /// No answer within the tool timeout (the request was cancelled at the server).
    Timeout,
    /// The server answered with a JSON-RPC error; the text is its message.
    Protocol(String),
    /// The connection broke during the call.
    Closed,
}

struct Conn {
    service: Option<RunningService<RoleClient, ()>>,
    restarts_left: u8,
}

/// How the connection is made, with everything resolved from the user's environment.
enum Link {
    Stdio {
        env: std::collections::BTreeMap<String, String>,
        launch: Launch,
        workspace: std::path::PathBuf,
    },
    Http {
        url: String,
        headers: std::collections::BTreeMap<String, String>,
        token: Option<String>,
        network: NetworkPolicy,
    },
}

/// A configured MCP server and its (lazily restarted) connection.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    link: Link,
    conn: Mutex<Conn>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .finish()
    }
}

impl McpServer {
    /// Starts `config` as server `name` for `workspace` (a stdio server as
    /// [`McpServerConfig::launch`] allows, refusing one that would load code from the
    /// workspace), bounded by the start-up timeout, and lists its tools. `${VAR}` in `env` and
    /// `headers`, and the bearer token, come from `lookup`; an HTTP server's URL must pass
    /// `network`'s deny list and the checks in [`http`].
    ///
    /// Errors: a readable reason (keys of both transports, unset `${VAR}`, a refused URL,
    /// spawn failure, handshake failure or time-out) for the start-up notice; secrets
    /// the server was given are redacted from it.
    pub async fn start(
        name: &str,
        config: &McpServerConfig,
        workspace: &Path,
        lookup: &(dyn Fn(&str) -> Option<String> + Sync),
        network: &NetworkPolicy,
    ) -> Result<(Arc<McpServer>, RawTools), String> {
        let link = match config.transport()? {
            TransportKind::Stdio => {
                let env = config.resolved_env(lookup)?;
                let launch = config.launch(name, workspace, &env)?;
                Link::Stdio {
                    env,
                    launch,
                    workspace: workspace.to_path_buf(),
                }
            }
            TransportKind::Http(url) => Link::Http {
                url,
                headers: config.resolved_headers(lookup)?,
                token: config.bearer_token(lookup)?,
                network: network.clone(),
            },
        };
        let server = Arc::new(McpServer {
            name: name.to_string(),
            config: config.clone(),
            link,
            conn: Mutex::new(Conn {
                service: None,
                restarts_left: 1,
            }),
        });
        let service = server.connect().await?;
        let tools = tokio::time::timeout(config.startup_timeout(), service.list_all_tools())
            .await
            .map_err(|_| {
                format!(
                    "no tool list within {}s",
                    config.startup_timeout().as_secs()
                )
            })?
            .map_err(|e| server.redact(&format!("listing its tools failed: {e}")))?;
        let raw = tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect();
        server.conn.lock().await.service = Some(service);
        Ok((server, raw))
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
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
    async fn connect(&self) -> Result<RunningService<RoleClient, ()>, String> {
        let limit = self.config.startup_timeout();
        match tokio::time::timeout(limit, self.connect_unbounded()).await {
            Ok(result) => result.map_err(|e| self.redact(&e)),
            Err(_) => Err(format!("no MCP handshake within {}s", limit.as_secs())),
        }
    }

    async fn connect_unbounded(&self) -> Result<RunningService<RoleClient, ()>, String> {
        let handshake =
            |e: rmcp::service::ClientInitializeError| format!("the MCP handshake failed: {e}");
        match &self.link {
            Link::Stdio {
                env,
                launch,
                workspace,
            } => {
                let mut cmd = tokio::process::Command::from(host_programs::host_command(
                    HostProgram::McpServer,
                    &launch.program,
                    workspace,
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
                let (transport, _) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("`{}` could not be started: {e}", self.config.command))?;
                ().serve(transport).await.map_err(handshake)
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
                let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(http::header_map(headers, token.is_some())?);
                if let Some(token) = token {
                    cfg = cfg.auth_header(token.clone());
                }
                let transport = StreamableHttpClientTransport::with_client(client, cfg);
                ().serve(transport).await.map_err(handshake)
            }
        }
    }

    /// The live peer, restarting the server once if it has stopped.
    async fn peer(&self) -> Result<Peer<RoleClient>, CallError> {
        let mut conn = self.conn.lock().await;
        if let Some(service) = &conn.service
            && !service.is_closed()
        {
            return Ok(service.peer().clone());
        }
        conn.service = None;
        if conn.restarts_left == 0 {
            return Err(CallError::Down(
                "it stopped and was already restarted once".into(),
            ));
        }
        conn.restarts_left -= 1;
        let service = self.connect().await.map_err(CallError::Down)?;
        let peer = service.peer().clone();
        conn.service = Some(service);
        Ok(peer)
    }

    /// Calls `tool` with `args`, bounded by the tool timeout. Dropping the returned future
    /// (a cancelled turn) or running out of time sends `notifications/cancelled` to the
    /// server (rmcp cancels abandoned requests).
    ///
    /// Returns the `CallToolResult` as JSON.
    pub async fn call(&self, tool: &str, args: Map<String, Value>) -> Result<Value, CallError> {
        let peer = self.peer().await?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let limit = self.config.tool_timeout();
        match tokio::time::timeout(limit, peer.call_tool(params)).await {
            Err(_) => Err(CallError::Timeout),
            Ok(Ok(result)) => serde_json::to_value(result).map_err(|_| CallError::Closed),
            Ok(Err(ServiceError::McpError(e))) => Err(CallError::Protocol(self.redact(&e.message))),
            Ok(Err(ServiceError::Timeout { .. })) => Err(CallError::Timeout),
            Ok(Err(_)) => {
                // The transport failed: the connection may not know it is closed yet, so
                // drop it; the next call reconnects (the one restart).
                self.conn.lock().await.service = None;
                Err(CallError::Closed)
            }
        }
    }
}
