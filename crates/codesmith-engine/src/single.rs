//! One tool call outside a session: `codesmith tool` and the MCP server.
//!
//! The caller is the person (or the MCP host, which runs its own approval), so
//! nothing is asked; what the command policy refuses outright is still refused, and so
//! is whatever needs approval when the front end's [`CallPolicy`] says `never`.

use std::sync::Arc;

use codesmith_policy::{ApprovalMode, NetworkPolicy, Rules};
use codesmith_tools::{Registry, ToolContext, ToolOutcome};
use serde_json::Value;

use crate::approval::GateDecision;
use crate::approval::NoApprover;
use crate::finish::{FinishedResult, finish_outcome};
use crate::guard::LoopGuard;
use crate::runtime::Runtime;

/// The policy inputs of a call outside a session, resolved by the front end from the
/// same settings a session uses.
#[derive(Debug, Clone)]
pub struct CallPolicy {
    /// Exec-policy rules (user and project files, already merged).
    pub rules: Rules,
    /// Approval mode. Nobody is asked in a one-shot call: `auto` runs what would need
    /// approval; the other modes refuse it with `DENIED`.
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

/// One call's outcome outside a session, and the result the model reads of it.
#[derive(Debug, Clone)]
pub struct OneCall {
    /// The tool's outcome as it answered (`codesmith tool` prints its envelope).
    pub outcome: ToolOutcome,
    /// The finished result: the same text a session gives the model for this call
    /// (sanitized, noted, wrapped when external; digests kept, shortened), with the typed
    /// fields of its event.
    pub result: FinishedResult,
}

/// Runs the tool named exactly `name` with `args` under `policy` (see [`CallPolicy`]).
/// The call is cancelled through `ctx.cancel` (see [`codesmith_tools::call_tool`]).
///
/// Unknown names and non-object arguments are refused with `NOT_FOUND` and
/// `INVALID_ARGUMENTS` (the same refusals a session gives); a command the exec policy
/// denies, or a call that needs an approval nobody can give here, is refused with
/// `DENIED`.
pub async fn run_one(
    registry: &Registry,
    ctx: Arc<ToolContext>,
    policy: &CallPolicy,
    name: &str,
    args: Value,
) -> OneCall {
    let (outcome, label) = run(registry, ctx, policy, name, &args).await;
    OneCall {
        result: finish_outcome(outcome.clone(), &args, label, true),
        outcome,
    }
}

/// [`run_one`]'s outcome, with the tool's `<external_content>` label when the tool ran.
async fn run(
    registry: &Registry,
    ctx: Arc<ToolContext>,
    policy: &CallPolicy,
    name: &str,
    args: &Value,
) -> (ToolOutcome, Option<String>) {
    let Some(tool) = registry.get(name) else {
        let names = registry.names();
        let suggestions = match crate::repair::names::resolve_tool_name(name, &names) {
            crate::repair::names::NameResolution::Unknown { suggestions } => suggestions,
            crate::repair::names::NameResolution::Exact(n)
            | crate::repair::names::NameResolution::Repaired { to: n, .. } => vec![n],
        };
        let refusal = crate::dispatch::unknown_tool(name, &suggestions, &names);
        return (Err(refusal), None);
    };
    if !args.is_object() {
        return (Err(crate::dispatch::not_an_object(name, args)), None);
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
        ran_later: Vec::new(),
        shown: Vec::new(),
        early: Default::default(),
        hooks: Default::default(),
    };
    // Only what the tool answered is external content: a refusal of the gate is
    // CodeSmith's own, and a session does not wrap it either.
    match runtime.gate("", tool.as_ref(), args, &mut |_| {}).await {
        GateDecision::Run { .. } => (
            codesmith_tools::call_tool(tool.as_ref(), &runtime.ctx, args.clone()).await,
            tool.external_label(args),
        ),
        GateDecision::Refuse(refusal) => (Err(refusal), None),
    }
}
