//! `codesmith mcp`: CodeSmith's tools served over the Model Context Protocol on stdio.
//!
//! The server speaks MCP through the official Rust SDK (`rmcp`), newline-delimited
//! JSON-RPC on stdin/stdout, and offers exactly the tools of the registry it is given:
//! `tools/list` returns each tool's name, description and input schema, sorted by name
//! and byte-identical to what the agent's model sees; `tools/call` runs one call through
//! the same single-call path as `codesmith tool` (the command policy's hard refusals still
//! apply) and answers with the result envelope as text. A refusal is a tool error
//! (`isError: true`) whose text is the refusal envelope, so the caller sees the code,
//! message and hint. Nothing is written to stdout except protocol messages.

mod server;

use std::sync::Arc;

use codesmith_policy::Rules;
use codesmith_tools::{Registry, ToolContext};
use rmcp::ServiceExt;

use crate::args::WorkspaceArg;
use crate::exit::{Exit, usage};
use crate::setup;

/// `codesmith mcp [--workspace DIR]`: sets up the tools as `codesmith tool` does (user
/// config, `[network]` policy, exec-policy rules, sandbox) and serves them until the client
/// closes stdin. Setup warnings go to stderr; stdout carries only protocol messages.
///
/// Exit: 0 when stdin closes, 2 when the workspace, home, config, rules or sandbox are
/// unusable, 1 when the transport fails.
pub async fn run(args: WorkspaceArg) -> Exit {
    let (registry, ctx, rules) = match setup::one_shot(args.workspace.as_deref()) {
        Ok(parts) => parts,
        Err(e) => return usage(e),
    };
    match serve(registry, ctx, rules).await {
        Ok(()) => Exit::Ok,
        Err(e) => Exit::failed(e),
    }
}

/// Serves `registry` over MCP on stdin/stdout until the client closes stdin.
///
/// Every call runs against `ctx`, which should come from [`ToolContext::one_shot`]: an
/// MCP client has no session with the model's read-before-write history, so the writing
/// tools must accept `"force_fresh": true` (and `edit_file` a `sha256`) in place of a
/// prior read. Reads made over this connection still count for later writes, since the
/// context (and its freshness tracker) lives as long as the connection.
///
/// Each call goes through `codesmith_engine::run_one`: no approval is asked (the MCP host
/// runs its own), but a command that the exec policy (`rules` plus the built-in
/// classifier; `Rules::new()` for the classifier alone) refuses outright is refused with
/// `DENIED`.
///
/// Errors: the MCP handshake failed (e.g. stdin closed before `initialize`, or the
/// client asked for no protocol version this SDK supports), or the service task panicked.
pub async fn serve(registry: Registry, ctx: Arc<ToolContext>, rules: Rules) -> anyhow::Result<()> {
    let service = server::CodesmithServer::new(registry, ctx, rules)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("the MCP handshake on stdio failed: {e}"))?;
    service
        .waiting()
        .await
        .map_err(|e| anyhow::anyhow!("the MCP service stopped abnormally: {e}"))?;
    Ok(())
}
