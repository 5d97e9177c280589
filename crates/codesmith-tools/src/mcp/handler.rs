//! CodeSmith's side of an MCP connection: who it says it is, what it offers the server
//! (the workspace as the one root), and what it does with the server's notifications and
//! requests.
//!
//! - `initialize` names CodeSmith and its version, and declares the roots capability
//!   (with `listChanged`) and nothing else.
//! - `roots/list` answers the workspace, and only it.
//! - Sampling (`sampling/createMessage`) is refused: a server may not spend the session's
//!   model. Elicitation is declined: nobody is asked for input on a server's behalf. Each
//!   answer carries a sentence the server can show.
//! - Progress becomes [`McpEvent::Progress`] (the call's idle timeout is reset by rmcp,
//!   see [`super::client`]); log messages become [`McpEvent::Log`];
//!   `notifications/tools/list_changed` asks for the tools to be listed again (coalesced:
//!   one listing at a time, at most one pending, see [`McpServer::request_relist`]);
//!   `notifications/prompts/list_changed` the same for the prompts
//!   ([`McpServer::request_prompt_relist`]).

#![allow(deprecated)] // Roots, sampling and logging are marked deprecated in rmcp (SEP-2577).

use std::path::PathBuf;
use std::sync::Weak;

use rmcp::ErrorData;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode, Implementation,
    ListRootsResult, LoggingMessageNotificationParam, MetaObject, ProgressNotificationParam, Root,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde_json::{Value, json};

use super::McpEvent;
use super::client::McpServer;

/// What a sampling request is answered.
pub const SAMPLING_REFUSED: &str = "CodeSmith does not run sampling requests: an MCP server may \
     not use the session's model. Return your result to the caller instead.";
/// Why an elicitation is declined (sent in the answer's `_meta`).
pub const ELICITATION_DECLINED: &str = "CodeSmith does not ask its user for input on an MCP \
     server's behalf; the request was declined. Take what you need as tool arguments.";

/// The handler of one connection.
#[derive(Debug, Clone)]
pub struct Client {
    pub(super) server: Weak<McpServer>,
    pub(super) workspace: PathBuf,
}

/// The `initialize` parameters: CodeSmith's name and version, the roots capability.
pub fn client_info() -> ClientConfig {
    let capabilities: ClientCapabilities =
        serde_json::from_value(json!({"roots": {"listChanged": true}})).unwrap_or_default();
    let mut implementation = Implementation::new("codesmith", env!("CARGO_PKG_VERSION"));
    implementation.title = Some("CodeSmith".to_string());
    ClientConfig::new(capabilities, implementation)
}

/// The workspace as a `file://` root.
pub fn workspace_root(workspace: &std::path::Path) -> Root {
    let uri = url::Url::from_directory_path(workspace)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{}", workspace.display()));
    let name = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workspace".into());
    Root::new(uri).with_name(name)
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        client_info()
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(vec![workspace_root(&self.workspace)]))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if let Some(server) = self.server.upgrade() {
            server.emit(McpEvent::Log {
                server: server.name().to_string(),
                level: "warning".into(),
                text: "asked to use the model (sampling); refused".into(),
            });
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            SAMPLING_REFUSED,
            None,
        ))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let mut meta = serde_json::Map::new();
        meta.insert("message".into(), Value::String(ELICITATION_DECLINED.into()));
        let mut result = ElicitResult::new(ElicitationAction::Decline);
        result.meta = Some(MetaObject(meta));
        Ok(result)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(server) = self.server.upgrade() {
            server.progress(params);
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        // Over stdio the transport hands log messages on as it reads them, in order.
        if server.logs_in_order() {
            return;
        }
        server.emit(log_event(server.name(), &params));
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            server.announced(false).await;
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            server.announced(true).await;
        }
    }
}

/// The event for a server's log notification: its level (`info` when unreadable) and its
/// text (`LOGGER: DATA`, at most 2,000 characters).
pub(super) fn log_event(server: &str, params: &LoggingMessageNotificationParam) -> McpEvent {
    let level = serde_json::to_value(params.level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "info".into());
    let data = match &params.data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let text = match &params.logger {
        Some(logger) => format!("{logger}: {data}"),
        None => data,
    };
    McpEvent::Log {
        server: server.to_string(),
        level,
        text: super::tool::clip(&text, 2_000).to_string(),
    }
}
