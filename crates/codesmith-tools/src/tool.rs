//! The tool trait.

use async_trait::async_trait;
use serde_json::Value;

use crate::{ErrorCode, Refusal, ToolContext, ToolOutcome};

/// What a tool can do to the world; with the approval mode it sets the call's approval
/// requirement (see the engine's `approval` module: in the default `auto-edit` mode a
/// workspace write runs, code and untrusted network calls ask).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Capability {
    /// Reads the workspace only.
    ReadOnly,
    /// Writes files inside the workspace.
    WritesFiles,
    /// Reaches the network.
    Network,
    /// Runs arbitrary code.
    ExecutesCode,
}

/// Where a tool comes from, which approval keys and hints follow instead of its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolOrigin {
    /// Built into CodeSmith.
    Builtin,
    /// One tool of one MCP server.
    Mcp {
        /// The server's name in `[mcp_servers.NAME]`.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// Offered by the skills mechanism (the `skill` tool).
    Skill,
}

/// Why an MCP tool is or is not trusted to only read: the two facts its capability
/// follows from (read-only only when both hold), which an approval refusal names instead
/// of guessing which one is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpTrust {
    /// The user marked the tool's server `trusted = true`.
    pub server_trusted: bool,
    /// The tool declares `annotations.readOnlyHint: true`.
    pub read_only_hint: bool,
}

impl McpTrust {
    /// [`Capability::ReadOnly`] when the server is trusted and the tool declares
    /// readOnlyHint; otherwise [`Capability::Network`], which asks for approval.
    pub fn capability(self) -> Capability {
        if self.server_trusted && self.read_only_hint {
            Capability::ReadOnly
        } else {
            Capability::Network
        }
    }
}

/// One tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's name (snake_case, unique in a registry).
    fn name(&self) -> &'static str;
    /// Byte-stable description for the model: when to use it, what to use it
    /// instead of, and one or two call examples.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object. Must be byte-stable.
    fn input_schema(&self) -> Value;
    /// What the tool can do to the world.
    fn capability(&self) -> Capability;
    /// Where the tool comes from (default: built in). An MCP tool names its server and
    /// its tool here, so nothing splits its registered name back apart.
    fn origin(&self) -> ToolOrigin {
        ToolOrigin::Builtin
    }
    /// For an MCP tool, whether its server is trusted and it declares readOnlyHint (what
    /// its capability follows from); `None` for every other tool.
    fn mcp_trust(&self) -> Option<McpTrust> {
        None
    }
    /// True when calls may run concurrently with other parallel-safe read-only calls.
    fn supports_parallel(&self) -> bool {
        false
    }
    /// True when the tool watches [`ToolContext::cancel`] itself (to stop what it started
    /// and report it); otherwise [`call_tool`] abandons the call when the token fires.
    fn handles_cancel(&self) -> bool {
        false
    }
    /// The `<external_content>` label of this call's result when what it returns comes
    /// from outside the workspace (such evidence is data, never instructions), `None` for
    /// a local tool. Every front end that finishes a result asks here, so the wrapper
    /// follows the tool, never a list of names. See [`crate::trust`].
    ///
    /// By default a [`Capability::Network`] tool is external, labelled with its own name
    /// (fail closed: a network tool that names no source is still wrapped), and any other
    /// tool is local. A tool that answers from elsewhere while only reading (a trusted
    /// MCP server's) says so here.
    fn external_label(&self, _args: &Value) -> Option<String> {
        (self.capability() == Capability::Network).then(|| crate::trust::clean_label(self.name()))
    }
    /// The URL a [`Capability::Network`] call will reach, which the network policy and the
    /// approval gate judge by its host: by default the call's own `url` argument
    /// (`fetch_url`); a tool that reaches a fixed endpoint (`web_search`'s backend) names
    /// that. `None`: the call names no URL and is refused by the tool itself.
    fn network_url(&self, args: &Value) -> Option<String> {
        args.get("url").and_then(Value::as_str).map(str::to_string)
    }
    /// Called by the engine when a task of the session `ctx` belongs to ends (finished,
    /// stopped or cancelled): a tool that keeps a process alive between calls (the `rlm`
    /// REPL) ends that session's here, and only that session's. Default: nothing.
    fn task_ended(&self, _ctx: &ToolContext) {}
    /// Runs one call with already-parsed arguments.
    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome;
}

/// Runs one call of `tool` under `ctx.cancel`, the single way every front end runs a
/// tool: a tool that [`Tool::handles_cancel`] stops its own work and reports it; any other
/// call is dropped where it waits (an HTTP request is aborted, nothing more is read or
/// written) and answered with a `CANCELLED` refusal. A call whose token fired before it
/// started does not run.
///
/// A call that panics (in its own future, or in blocking work it awaited and unwrapped)
/// ends as an `INTERNAL` refusal for that call alone: the turn, the run and the calls
/// running beside it go on. The panic itself is reported by the process's panic hook
/// (standard error, or the front end's log); the model reads no host detail of it.
pub async fn call_tool(tool: &dyn Tool, ctx: &ToolContext, args: Value) -> ToolOutcome {
    use futures::FutureExt as _;
    match std::panic::AssertUnwindSafe(call_tool_inner(tool, ctx, args))
        .catch_unwind()
        .await
    {
        Ok(outcome) => outcome,
        Err(_) => Err(panicked(tool.name())),
    }
}

/// The refusal for a call of `name` that panicked: an internal fault, not the request's.
fn panicked(name: &str) -> Refusal {
    Refusal::new(
        crate::ErrorCode::Internal,
        format!("The `{name}` tool failed inside CodeSmith (an internal fault, not your request)."),
        "Do not repeat this exact call; continue another way and tell the user the tool failed.",
    )
    .with("panicked", true)
}

/// The refusal for blocking work of a call of `name` that did not finish (`spawn_blocking`'s
/// join error): a panic there is the refusal [`call_tool`] gives for any panic of a call
/// (`INTERNAL`, `panicked`); work dropped before it ran, as the runtime shuts down, is
/// `CANCELLED`.
pub(crate) fn join_refusal(name: &str, e: &tokio::task::JoinError) -> Refusal {
    if e.is_panic() {
        return panicked(name);
    }
    Refusal::new(
        ErrorCode::Cancelled,
        format!("The {name} call was stopped before it finished: CodeSmith is shutting down."),
        "Call it again once CodeSmith runs again.",
    )
}

async fn call_tool_inner(tool: &dyn Tool, ctx: &ToolContext, args: Value) -> ToolOutcome {
    let started = std::time::Instant::now();
    if ctx.cancel.is_cancelled() {
        return Err(cancelled(tool.name(), None));
    }
    if tool.handles_cancel() {
        return tool.call(ctx, args).await;
    }
    let outcome = tokio::select! {
        outcome = tool.call(ctx, args) => outcome,
        () = ctx.cancel.cancelled() => Err(cancelled(tool.name(), Some(started.elapsed()))),
    };
    with_diagnostics(ctx, outcome).await
}

/// A write's outcome with the language servers' report on the files it changed appended
/// to its text (see [`crate::lsp::LspManager::after_write`]); anything else as it is. The
/// report waits at most the servers' timeout and is dropped when the call is cancelled.
async fn with_diagnostics(ctx: &ToolContext, outcome: ToolOutcome) -> ToolOutcome {
    let Some(lsp) = ctx.lsp.as_ref() else {
        return outcome;
    };
    let mut out = outcome?;
    if out.changes.is_empty() {
        return Ok(out);
    }
    let report = tokio::select! {
        report = lsp.after_write(ctx, &out.changes) => report,
        () = ctx.cancel.cancelled() => None,
    };
    if let Some(report) = report {
        match &mut out.output {
            Value::String(text) => {
                text.push('\n');
                text.push_str(&report);
            }
            _ => {
                out.meta.insert("diagnostics".into(), Value::String(report));
            }
        }
    }
    Ok(out)
}

/// The refusal of a cancelled call: `ran` is how long it had run (`None`: it never started).
pub fn cancelled(name: &str, ran: Option<std::time::Duration>) -> Refusal {
    let message = match ran {
        Some(ran) => format!(
            "The {name} call was cancelled after {:.1} s, before it finished; it was stopped \
             where it waited.",
            ran.as_secs_f64()
        ),
        None => format!("The {name} call was cancelled before it started; it did not run."),
    };
    let refusal = Refusal::new(
        ErrorCode::Cancelled,
        message,
        "Check what it changed, if anything, before calling it again.",
    );
    match ran {
        Some(ran) => refusal.with("elapsed_ms", ran.as_millis() as u64),
        None => refusal,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn blocking_work_that_panics_is_the_panic_refusal_naming_the_tool() {
        let e = tokio::task::spawn_blocking(|| panic!("walk bug"))
            .await
            .unwrap_err();
        let r = join_refusal("grep_files", &e);
        assert_eq!(r.code, ErrorCode::Internal);
        assert_eq!(r, panicked("grep_files"));
        assert!(r.message.contains("`grep_files`"), "{}", r.message);
        assert!(!r.message.contains("walk bug"), "{}", r.message);
    }

    #[tokio::test]
    async fn blocking_work_dropped_before_it_ran_is_cancelled() {
        let task = tokio::spawn(std::future::pending::<()>());
        task.abort();
        let e = task.await.unwrap_err();
        let r = join_refusal("list_dir", &e);
        assert_eq!(r.code, ErrorCode::Cancelled);
        assert!(r.message.contains("list_dir"), "{}", r.message);
    }
}
