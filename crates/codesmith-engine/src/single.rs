//! One tool call outside a session: `codesmith tool` and the MCP server.
//!
//! The caller is the person (or the MCP host, which runs its own approval), so
//! nothing is asked; what the command policy refuses outright is still refused, and so
//! is whatever needs approval when the front end's [`CallPolicy`] says `never`.

use std::sync::Arc;

use codesmith_policy::{ApprovalMode, NetworkPolicy, Rules};
use codesmith_tools::{ErrorCode, Refusal, Registry, ToolContext, ToolOutcome};
use serde_json::Value;

use crate::approval::NoApprover;
use crate::gate::GateDecision;
use crate::guard::LoopGuard;
use crate::runtime::Runtime;

/// The policy inputs of a call outside a session, resolved by the front end from the
/// same settings a session uses.
#[derive(Debug, Clone)]
pub struct CallPolicy {
    /// Exec-policy rules (user and project files, already merged).
    pub rules: Rules,
    /// Approval mode. Nobody is asked in a one-shot call: `auto` runs what would need
    /// approval; `suggest` and `never` refuse it with `DENIED`.
    pub approval: ApprovalMode,
    /// The `[network]` policy (which hosts `fetch_url` may reach without approval).
    pub network: NetworkPolicy,
}

impl CallPolicy {
    /// `rules` in `auto` mode under the default network policy: only the exec policy's
    /// hard refusals apply.
    pub fn auto(rules: Rules) -> Self {
        CallPolicy {
            rules,
            approval: ApprovalMode::Auto,
            network: NetworkPolicy::default(),
        }
    }
}

/// Runs the tool named exactly `name` with `args` under `policy` (see [`CallPolicy`]).
/// The call is cancelled through `ctx.cancel` (see [`codesmith_tools::call_tool`]).
///
/// Unknown names and non-object arguments are refused with `NOT_FOUND` and
/// `INVALID_ARGUMENTS`; a command the exec policy denies, or a call that needs an
/// approval nobody can give here, is refused with `DENIED`.
pub async fn run_one(
    registry: &Registry,
    ctx: Arc<ToolContext>,
    policy: &CallPolicy,
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
        mode: policy.approval,
        rules: Arc::new(policy.rules.clone()),
        network: Arc::new(policy.network.clone()),
        verify: Default::default(),
        snapshots: Default::default(),
        delegation: None,
        delegated: Vec::new(),
    };
    match runtime.gate("", tool.as_ref(), &args, &mut |_| {}).await {
        GateDecision::Run { .. } => {
            codesmith_tools::call_tool(tool.as_ref(), &runtime.ctx, args).await
        }
        GateDecision::Refuse(refusal) => Err(refusal),
    }
}
