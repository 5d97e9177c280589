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

use codesmith_engine::CallPolicy;
use codesmith_tools::{Registry, ToolContext};
use rmcp::ServiceExt;

use crate::args::{McpArgs, McpCommand, WorkspaceArg};
use crate::exit::{Exit, usage};
use crate::setup;
use crate::shutdown::{self, Shutdown, StopSignal};

/// `codesmith mcp [--workspace DIR]`: sets up the tools as `codesmith tool` does (the
/// resolved settings: `[network]` policy, exec-policy rules, approval mode, the tightened
/// sandbox) and serves them until the client closes stdin. Setup warnings go to stderr; stdout carries only protocol messages.
///
/// Exit: 0 when stdin closes, 2 when the workspace, home, config, rules or sandbox are
/// unusable, 1 when the transport fails, 128 + the signal after SIGINT, SIGTERM or SIGHUP.
pub(crate) async fn run(args: McpArgs) -> Exit {
    match args.command {
        Some(McpCommand::List { json }) => return list(args.workspace, json).await,
        Some(McpCommand::Login { name }) => return login(args.workspace, &name).await,
        None => {}
    }
    let args = args.workspace;
    let (registry, ctx, policy) = match setup::one_shot(args.workspace.as_deref()) {
        Ok(parts) => parts,
        Err(e) => return usage(e),
    };
    let shutdown = match Shutdown::listen(StopSignal::ALL) {
        Ok(s) => s,
        Err(e) => return Exit::failed(anyhow::anyhow!("cannot listen for signals: {e}")),
    };
    // The language servers the calls started do not outlive the connection.
    let lsp = ctx.lsp.clone();
    let served = serve(registry, ctx, policy, &shutdown).await;
    if let Some(lsp) = lsp {
        lsp.shutdown().await;
    }
    match served {
        Ok(()) => match shutdown.caught() {
            Some(signal) => shutdown::exit(
                signal,
                "running tool calls were cancelled and their commands killed with everything \
                 they started",
            ),
            None => Exit::Ok,
        },
        Err(e) => Exit::failed(e),
    }
}

/// How long running calls may take to stop after a stop signal before the server closes.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(4);

/// Serves `registry` over MCP on stdin/stdout until the client closes stdin.
///
/// Every call runs against `ctx`, which should come from [`ToolContext::one_shot`]: an
/// MCP client has no session with the model's read-before-write history, so the writing
/// tools must accept `"force_fresh": true` (and `edit_file` a `sha256`) in place of a
/// prior read. Reads made over this connection still count for later writes, since the
/// context (and its freshness tracker) lives as long as the connection.
///
/// Each call goes through `codesmith_engine::run_one` under `policy`: no approval is asked
/// (the MCP host runs its own), but a command that the exec policy (its rules plus the
/// built-in classifier) refuses outright is refused with `DENIED`, and so is a call that
/// needs approval when the mode is `never`.
///
/// A stop signal (`shutdown`) cancels every running call (a shell command is killed with
/// its whole tree, and the call answers `CANCELLED`), waits for them (at most 4 s), and
/// closes the server; the handshake, if still waiting, is abandoned.
///
/// Errors: the MCP handshake failed (e.g. stdin closed before `initialize`, or the
/// client asked for no protocol version this SDK supports), or the service task panicked.
pub(crate) async fn serve(
    registry: Registry,
    ctx: Arc<ToolContext>,
    policy: CallPolicy,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let server = server::CodesmithServer::new(registry, ctx, policy).stop_on(shutdown.token());
    let running = server.running_calls();
    let service = tokio::select! {
        service = server.serve(rmcp::transport::stdio()) => {
            service.map_err(|e| anyhow::anyhow!("the MCP handshake on stdio failed: {e}"))?
        }
        _ = shutdown.requested() => return Ok(()),
    };
    let close = service.cancellation_token();
    let stop = shutdown.token();
    let closer = tokio::spawn(async move {
        stop.cancelled().await;
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        while running.load(std::sync::atomic::Ordering::SeqCst) > 0
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        // Time for the service to write the calls' answers before it closes.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        close.cancel();
    });
    let done = service.waiting().await;
    closer.abort();
    done.map_err(|e| anyhow::anyhow!("the MCP service stopped abnormally: {e}"))?;
    Ok(())
}

/// The resolved settings for `mcp list` and `mcp login` (no model flags).
fn settings(args: &WorkspaceArg) -> anyhow::Result<crate::config::Settings> {
    crate::config::resolve(crate::config::Flags {
        workspace: args.workspace.as_deref(),
        model: &crate::config::NO_MODEL_FLAGS,
        max_turns: None,
    })
}

/// `codesmith mcp login NAME`: the OAuth authorization of an HTTP server (see
/// `codesmith_tools::mcp::oauth`). The URL goes to stderr; the wait is bounded
/// (`CODESMITH_MCP_LOGIN_WAIT_SECS`, default 300).
/// Exit: 0 when the tokens are stored, 1 when the flow failed, 2 for an unknown or
/// non-HTTP server.
async fn login(args: WorkspaceArg, name: &str) -> Exit {
    let settings = match settings(&args) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let Some(cfg) = settings.mcp_servers.get(name) else {
        return usage(anyhow::anyhow!(
            "no [mcp_servers.{name}] in config.toml; `codesmith mcp list` shows the servers"
        ));
    };
    let url = match cfg.transport() {
        Ok(codesmith_tools::mcp::config::TransportKind::Http(url)) => url,
        Ok(_) => {
            return usage(anyhow::anyhow!(
                "[mcp_servers.{name}] is a stdio server; OAuth applies to HTTP servers (`url`)"
            ));
        }
        Err(e) => return usage(anyhow::anyhow!("[mcp_servers.{name}]: {e}")),
    };
    let wait = std::env::var("CODESMITH_MCP_LOGIN_WAIT_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(
            codesmith_tools::mcp::oauth::LOGIN_WAIT,
            std::time::Duration::from_secs,
        );
    let mut show = |url: &str| {
        eprintln!("Open this URL in a browser to authorize CodeSmith at `{name}`:\n{url}");
        eprintln!(
            "Waiting for the authorization (at most {}s)…",
            wait.as_secs()
        );
    };
    let login = codesmith_tools::mcp::oauth::login(
        &settings.home,
        name,
        &url,
        cfg.allows_plain_http(),
        &settings.fetch.policy,
        wait,
        &mut show,
    );
    match login.await {
        Ok(path) => {
            eprintln!("Authorized; the tokens are stored in {}", path.display());
            Exit::Ok
        }
        Err(e) => Exit::failed(anyhow::anyhow!(
            "the authorization at `{name}` failed: {}",
            codesmith_policy::terminal_safe(&e)
        )),
    }
}

/// `codesmith mcp list [--json]`: starts each configured server as a session would and
/// prints its state (`running`, `failed` with the reason, `disabled`) and its tools.
/// Exit: 0 when every enabled server runs, 1 when one failed, 2 on a config error.
async fn list(args: WorkspaceArg, json: bool) -> Exit {
    let settings = match settings(&args) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let start = setup::mcp_servers(&settings).await;
    start.close().await;
    if json {
        let value =
            serde_json::json!({ "servers": start.servers, "prompts": start.prompt_commands() });
        println!("{value}");
    } else if start.servers.is_empty() {
        println!(
            "no MCP servers configured: add [mcp_servers.NAME] with command = \"...\" (stdio) or url = \"https://...\" (HTTP) to config.toml"
        );
    } else {
        // Tool names, reasons and a failed server's stderr tail are the server's
        // bytes: through the terminal filter.
        let safe = codesmith_policy::terminal_safe;
        for s in &start.servers {
            let name = safe(&s.name);
            match &s.error {
                Some(e) => println!("{name} ({}): {}", s.state, safe(e)),
                None => println!("{name} ({}): {} tools", s.state, s.tools.len()),
            }
            for t in &s.tools {
                match s.unavailable.get(t) {
                    Some(why) => println!("  {} (unavailable: {})", safe(t), safe(why)),
                    None => println!("  {}", safe(t)),
                }
            }
            for t in &s.tasks_only {
                println!(
                    "  {} (not offered: it runs only as a task)",
                    codesmith_policy::visible_controls(&safe(t))
                );
            }
            for p in start
                .prompt_commands()
                .iter()
                .filter(|p| p.server == s.name)
            {
                println!("  {} (prompt)", p.command);
            }
        }
    }
    if start.servers.iter().any(|s| s.error.is_some()) {
        Exit::Failed(None)
    } else {
        Exit::Ok
    }
}
