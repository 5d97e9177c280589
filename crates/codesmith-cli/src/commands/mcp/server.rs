//! The MCP server handler: the tool catalogue and single tool calls.

use std::sync::Arc;

use codesmith_engine::CallPolicy;
use codesmith_tools::{CancellationToken, Capability, Registry, ToolContext};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, Implementation, JsonObject, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
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
pub(super) struct CodesmithServer {
    registry: Registry,
    ctx: Arc<ToolContext>,
    policy: Arc<CallPolicy>,
    catalogue: Arc<Vec<Tool>>,
    /// Cancelled when the server is told to stop: every running call is cancelled too.
    stop: CancellationToken,
    /// Calls running now.
    running: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Debug for CodesmithServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodesmithServer")
            .field("tools", &self.registry)
            .finish_non_exhaustive()
    }
}

impl CodesmithServer {
    /// A server for `registry`, running every call against `ctx` under `policy`: commands
    /// that tools with [`Capability::ExecutesCode`] would run are checked against its exec
    /// policy first, and what the policy refuses outright (or, in `never` mode, what would
    /// need approval) is refused with `DENIED`.
    pub(super) fn new(registry: Registry, ctx: Arc<ToolContext>, policy: CallPolicy) -> Self {
        let catalogue = Arc::new(catalogue(&registry));
        CodesmithServer {
            registry,
            ctx,
            policy: Arc::new(policy),
            catalogue,
            stop: CancellationToken::new(),
            running: Arc::default(),
        }
    }

    /// Cancels every running call when `stop` is cancelled (a stop signal, see
    /// `crate::shutdown`). By default, nothing but the host cancels a call.
    pub(super) fn stop_on(mut self, stop: CancellationToken) -> Self {
        self.stop = stop;
        self
    }

    /// How many calls are running now.
    pub(super) fn running_calls(&self) -> Arc<std::sync::atomic::AtomicUsize> {
        self.running.clone()
    }

    /// Runs one call and shapes it as an MCP tool result: text content holding what a
    /// model in a session would read of it ([`codesmith_engine::finish_outcome`]: the
    /// sanitized envelope, the sanitizer's note, the `<external_content>` wrapper of a
    /// network-origin result), `isError` set when the tool refused. Missing arguments
    /// are `{}`. `cancel` is the request's token: when the host cancels the request
    /// (`notifications/cancelled`), a running shell command is killed with its whole tree
    /// and any other call is abandoned where it waits; rmcp then sends no response, as the
    /// protocol requires.
    pub(super) async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        use std::sync::atomic::Ordering;
        let args = Value::Object(arguments.unwrap_or_default());
        // The call stops when the host cancels it or the server is told to stop.
        let token = self.stop.child_token();
        let forward = {
            let token = token.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = cancel.cancelled() => token.cancel(),
                    () = token.cancelled() => {}
                }
            })
        };
        self.running.fetch_add(1, Ordering::SeqCst);
        let ctx = Arc::new(self.ctx.with_cancel(token));
        let done = codesmith_engine::run_one(&self.registry, ctx, &self.policy, name, args).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        forward.abort();
        // The host's model reads this: finished as in a session (sanitized: NFKC; bidi
        // controls, zero-width, Tag-block and private-use characters stripped; a success
        // lean, with digests shortened; a refusal the whole typed envelope; external
        // content wrapped).
        // A command that ran and exited non-zero failed, though the tool call itself
        // succeeded: the caller sees `isError: true` (the text keeps the exit code).
        let failed_command = done
            .result
            .meta
            .get("exit_code")
            .and_then(Value::as_i64)
            .is_some_and(|code| code != 0);
        let text = vec![ContentBlock::text(done.result.text)];
        match done.result.ok && !failed_command {
            true => CallToolResult::success(text),
            false => CallToolResult::error(text),
        }
    }
}

/// Methods this server answers: one arriving unread has params that do not fit.
const STANDARD_METHODS: &[&str] = &["initialize", "ping", "tools/list", "tools/call"];

/// The registry's specs as MCP tools, in name order.
fn catalogue(registry: &Registry) -> Vec<Tool> {
    registry
        .specs()
        .into_iter()
        .map(|spec| {
            let capability = registry.get(&spec.name).map(|t| t.capability());
            let schema = mcp_schema(spec.input_schema, capability);
            let mut tool = Tool::new(spec.name.clone(), spec.description, schema);
            let read_only = capability == Some(Capability::ReadOnly);
            if read_only {
                tool.annotations = Some(ToolAnnotations::new().read_only(true));
            }
            tool
        })
        .collect()
}

/// What an MCP caller may send beyond the model's schema: a caller here has no
/// read history between calls, so the writing tools also accept `force_fresh`
/// (the same one-shot rule as `codesmith tool`). The model's own catalogue
/// never shows it.
pub(crate) const FORCE_FRESH_DOC: &str = "Stand in for a prior read_file of this file (an MCP caller has no \
read history between calls). The write still fails if the file changed in a way the arguments do not expect.";

/// The model's schema, plus `force_fresh` for tools that write files.
pub(crate) fn mcp_schema(schema: Value, capability: Option<Capability>) -> JsonObject {
    let mut map = match schema {
        Value::Object(map) => map,
        _ => JsonObject::from_iter([("type".to_string(), Value::String("object".into()))]),
    };
    if capability == Some(Capability::WritesFiles)
        && let Some(Value::Object(props)) = map.get_mut("properties")
    {
        props.insert(
            "force_fresh".to_string(),
            serde_json::json!({"type": "boolean", "description": FORCE_FRESH_DOC}),
        );
    }
    map
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

    /// A request rmcp could not read as one it knows. A standard method lands here when
    /// its params do not fit (`tools/call` with `arguments` that are not an object): that
    /// is invalid params (-32602), not an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if STANDARD_METHODS.contains(&request.method.as_str()) {
            let why = match request.method.as_str() {
                "tools/call" => "`params` must be an object with a string `name` and, when \
                                 given, an object `arguments`"
                    .to_string(),
                m => format!("the params of `{m}` do not fit its schema"),
            };
            return Err(ErrorData::invalid_params(why, None));
        }
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("unknown method `{}`", request.method),
            None,
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.catalogue.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // An unknown tool is a protocol error (invalid params), as the specification has
        // it, not a tool result.
        if self.get_tool(&request.name).is_none() {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; tools/list names the tools this server offers",
                    request.name
                ),
                None,
            ));
        }
        Ok(self
            .call(&request.name, request.arguments, context.ct)
            .await
            .into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn server(workspace: &std::path::Path) -> CodesmithServer {
        let mut registry = Registry::new();
        for tool in codesmith_tools::files::file_tools() {
            registry.register(tool);
        }
        let ctx = ToolContext::one_shot(workspace.to_path_buf(), workspace.join(".home"));
        CodesmithServer::new(
            registry,
            Arc::new(ctx),
            CallPolicy::auto(codesmith_policy::Rules::new()),
        )
    }

    fn envelope(result: &CallToolResult) -> Value {
        assert_eq!(result.content.len(), 1);
        let text = result.content[0].as_text().unwrap();
        serde_json::from_str(&text.text).unwrap()
    }

    #[test]
    fn the_catalogue_is_the_registry_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let server = server(dir.path());
        let specs = server.registry.specs();
        assert_eq!(server.catalogue.len(), specs.len());
        for (tool, spec) in server.catalogue.iter().zip(&specs) {
            assert_eq!(tool.name, spec.name);
            assert_eq!(tool.description.as_deref(), Some(spec.description.as_str()));
            let capability = server.registry.get(&spec.name).map(|t| t.capability());
            assert_eq!(
                Value::Object((*tool.input_schema).clone()),
                Value::Object(mcp_schema(spec.input_schema.clone(), capability))
            );
            if capability == Some(Capability::WritesFiles) {
                assert!(
                    tool.input_schema["properties"].get("force_fresh").is_some(),
                    "{}",
                    tool.name
                );
            }
        }
        let hint = |name: &str| {
            let tool = server.get_tool(name).unwrap();
            tool.annotations.and_then(|a| a.read_only_hint)
        };
        assert_eq!(hint("read_file"), Some(true));
        assert_eq!(hint("write_file"), None);
    }

    #[tokio::test]
    async fn successes_are_lean_and_refusals_carry_the_envelope() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().canonicalize().unwrap();
        let server = server(&workspace);
        let args = serde_json::json!({"path": "a.txt", "content": "x\n"});
        let ok = server
            .call(
                "write_file",
                args.as_object().cloned(),
                CancellationToken::new(),
            )
            .await;
        assert_eq!(ok.is_error, Some(false));
        // A success is the lean text, with the short digest a one-shot edit_file takes.
        let text = &ok.content[0].as_text().unwrap().text;
        assert!(
            !text.starts_with('{') && text.contains(r#""sha256":""#) && !text.contains("\"ok\""),
            "{text}"
        );
        assert_eq!(
            std::fs::read_to_string(workspace.join("a.txt")).unwrap(),
            "x\n"
        );

        let missing = server
            .call("read_file", None, CancellationToken::new())
            .await;
        assert_eq!(missing.is_error, Some(true));
        assert_eq!(envelope(&missing)["error"]["code"], "INVALID_ARGUMENTS");
    }
}
