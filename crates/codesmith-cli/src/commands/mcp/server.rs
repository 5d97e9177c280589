//! The MCP server handler: the tool catalogue and single tool calls.

use std::sync::Arc;

use codesmith_policy::Rules;
use codesmith_tools::{Capability, Registry, ToolContext, envelope_json};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

/// The one-line instructions sent in the `initialize` answer.
const INSTRUCTIONS: &str = "CodeSmith's workspace tools: each call answers with a JSON envelope \
     ({\"ok\": true, \"output\", \"meta\"} or {\"ok\": false, \"error\": {code, message, hint}}); \
     writing tools take \"force_fresh\": true in place of a prior read.";

/// Serves one registry and one tool context over MCP.
///
/// The catalogue is built once at construction: the registry's specs in name order, each
/// with its byte-stable description and input schema, plus a read-only hint for tools that
/// only read the workspace.
#[derive(Clone)]
pub struct CodesmithServer {
    registry: Registry,
    ctx: Arc<ToolContext>,
    rules: Arc<Rules>,
    catalogue: Arc<Vec<Tool>>,
}

impl std::fmt::Debug for CodesmithServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodesmithServer")
            .field("tools", &self.registry)
            .finish_non_exhaustive()
    }
}

impl CodesmithServer {
    /// A server for `registry`, running every call against `ctx`; commands that tools with
    /// [`Capability::ExecutesCode`] would run are checked against `rules` (the exec policy)
    /// first, and what the policy refuses outright is refused with `DENIED`.
    pub fn new(registry: Registry, ctx: Arc<ToolContext>, rules: Rules) -> Self {
        let catalogue = Arc::new(catalogue(&registry));
        CodesmithServer {
            registry,
            ctx,
            rules: Arc::new(rules),
            catalogue,
        }
    }

    /// Runs one call and shapes its envelope as an MCP tool result: text content holding
    /// the envelope JSON, `isError` set when the tool refused. Missing arguments are `{}`.
    pub async fn call(&self, name: &str, arguments: Option<JsonObject>) -> CallToolResult {
        let args = Value::Object(arguments.unwrap_or_default());
        let ctx = Arc::clone(&self.ctx);
        let outcome = codesmith_engine::run_one(&self.registry, ctx, &self.rules, name, args).await;
        let text = vec![ContentBlock::text(envelope_json(&outcome).to_string())];
        match outcome {
            Ok(_) => CallToolResult::success(text),
            Err(_) => CallToolResult::error(text),
        }
    }
}

/// The registry's specs as MCP tools, in name order.
fn catalogue(registry: &Registry) -> Vec<Tool> {
    registry
        .specs()
        .into_iter()
        .map(|spec| {
            let schema = match spec.input_schema {
                Value::Object(map) => map,
                _ => JsonObject::from_iter([("type".to_string(), Value::String("object".into()))]),
            };
            let mut tool = Tool::new(spec.name.clone(), spec.description, schema);
            let read_only = registry
                .get(&spec.name)
                .is_some_and(|t| t.capability() == Capability::ReadOnly);
            if read_only {
                tool.annotations = Some(ToolAnnotations::new().read_only(true));
            }
            tool
        })
        .collect()
}

impl ServerHandler for CodesmithServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("codesmith", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.catalogue.as_ref().clone(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.catalogue.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(self.call(&request.name, request.arguments).await.into())
    }
}
