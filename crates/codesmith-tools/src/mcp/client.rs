//! One MCP server connection over stdio (rmcp's client side), restarted once after a crash.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use super::config::McpServerConfig;

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

/// A configured MCP server and its (lazily restarted) connection.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    env: std::collections::BTreeMap<String, String>,
    cwd: std::path::PathBuf,
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
    /// Starts `config` as server `name` in `workspace` (its default cwd), bounded by the
    /// start-up timeout, and lists its tools.
    ///
    /// Errors: a readable reason (unset `${VAR}`, spawn failure, handshake failure or
    /// time-out) for the start-up notice.
    pub async fn start(
        name: &str,
        config: &McpServerConfig,
        workspace: &Path,
        lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<(Arc<McpServer>, RawTools), String> {
        let env = config.resolved_env(lookup)?;
        let cwd = match &config.cwd {
            Some(c) if c.is_absolute() => c.clone(),
            Some(c) => workspace.join(c),
            None => workspace.to_path_buf(),
        };
        let server = Arc::new(McpServer {
            name: name.to_string(),
            config: config.clone(),
            env,
            cwd,
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
            .map_err(|e| format!("listing its tools failed: {e}"))?;
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

    async fn connect(&self) -> Result<RunningService<RoleClient, ()>, String> {
        let mut cmd = tokio::process::Command::new(&self.config.command);
        cmd.args(&self.config.args)
            .envs(&self.env)
            .current_dir(&self.cwd);
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("`{}` could not be started: {e}", self.config.command))?;
        let limit = self.config.startup_timeout();
        match tokio::time::timeout(limit, ().serve(transport)).await {
            Ok(Ok(service)) => Ok(service),
            Ok(Err(e)) => Err(format!("the MCP handshake failed: {e}")),
            Err(_) => Err(format!("no MCP handshake within {}s", limit.as_secs())),
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
            Ok(Err(ServiceError::McpError(e))) => Err(CallError::Protocol(e.message.to_string())),
            Ok(Err(ServiceError::Timeout { .. })) => Err(CallError::Timeout),
            Ok(Err(_)) => Err(CallError::Closed),
        }
    }
}
