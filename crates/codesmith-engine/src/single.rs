//! One tool call outside a session: `codesmith tool` and the MCP server.
//!
//! The caller is the person (or the MCP host, which runs its own approval), so
//! nothing is asked; but what the command policy refuses outright is still
//! refused.

use std::sync::Arc;

use codesmith_policy::{ApprovalMode, Rules};
use codesmith_tools::{ErrorCode, Refusal, Registry, ToolContext, ToolOutcome};
use serde_json::Value;

use crate::approval::NoApprover;
use crate::gate::GateDecision;
use crate::guard::LoopGuard;
use crate::runtime::Runtime;

/// Runs the tool named exactly `name` with `args`, applying the policy's hard refusals.
/// The call is cancelled through `ctx.cancel` (see [`codesmith_tools::call_tool`]).
///
/// Unknown names and non-object arguments are refused with `NOT_FOUND` and
/// `INVALID_ARGUMENTS`; a command the exec policy denies is refused with `DENIED`.
pub async fn run_one(
    registry: &Registry,
    ctx: Arc<ToolContext>,
    rules: &Rules,
    name: &str,
    args: Value,
) -> ToolOutcome {
    let Some(tool) = registry.get(name) else {
        return Err(Refusal::new(
            ErrorCode::NotFound,
            format!("There is no tool named `{name}`."),
            format!("Use one of: {}.", registry.names().join(", ")),
        ));
    };
    if !args.is_object() {
        return Err(Refusal::new(
            ErrorCode::InvalidArguments,
            format!("The arguments of `{name}` must be a JSON object."),
            "Pass the arguments as an object, e.g. {\"path\": \"src/main.rs\"}.",
        ));
    }
    let mut runtime = Runtime {
        tools: registry.clone(),
        ctx,
        guard: LoopGuard::default(),
        approvals: Default::default(),
        store: None,
        approver: Arc::new(NoApprover),
        mode: ApprovalMode::Auto,
        rules: Arc::new(rules.clone()),
        network: Arc::new(codesmith_policy::NetworkPolicy::default()),
        verify: Default::default(),
        snapshots: Default::default(),
        delegation: None,
        delegated: Vec::new(),
    };
    match runtime.gate(tool.as_ref(), &args, &mut |_| {}).await {
        GateDecision::Run { .. } => {
            codesmith_tools::call_tool(tool.as_ref(), &runtime.ctx, args).await
        }
        GateDecision::Refuse(refusal) => Err(refusal),
    }
}
