//! The per-session runtime that tool dispatch works against: the tools, their
//! context, the loop guard, approvals and the policy inputs.

use std::sync::Arc;

use codesmith_policy::{ApprovalMode, Decision, NetworkDecision, NetworkPolicy, Rules};
use codesmith_tools::{ErrorCode, Refusal, Registry, Tool, ToolContext};
use serde_json::Value;

use codesmith_tools::approvals::{ApprovalStore, Grant, SessionApprovals, shell_grant};

use crate::approval::{ApprovalRequest, Approver};
use crate::gate::Requirement;
use crate::guard::LoopGuard;

/// Everything tool dispatch needs for one session.
pub(crate) struct Runtime {
    pub(crate) tools: Registry,
    pub(crate) ctx: Arc<ToolContext>,
    pub(crate) guard: LoopGuard,
    pub(crate) approvals: SessionApprovals,
    pub(crate) approver: Arc<dyn Approver>,
    pub(crate) mode: ApprovalMode,
    pub(crate) rules: Arc<Rules>,
    pub(crate) network: Arc<NetworkPolicy>,
    /// Persistent "always" grants (`$CODESMITH_HOME/approvals.toml`); `None` outside sessions.
    pub(crate) store: Option<Arc<ApprovalStore>>,
    /// Verification commands run in the current task (the claim verifier's evidence).
    pub(crate) verify: crate::verify::Observed,
    /// The running turn and its snapshot (taken before the first write).
    pub(crate) snapshots: crate::snapshot::TurnSnapshots,
}

impl Runtime {
    /// The requirement for a tool that executes code: the command policy
    /// (classifier + exec-policy rules + approval mode) decides.
    pub(crate) fn shell_requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        let Some(command) = args.get("command").and_then(Value::as_str) else {
            // No command: the tool's own validation reports the missing field.
            return Requirement::Auto;
        };
        let workspace = self.ctx.workspace.to_string_lossy();
        let eval = codesmith_policy::decide(command, &workspace, &self.rules, self.mode);
        match eval.decision {
            Decision::Allow => Requirement::Auto,
            Decision::AskUser => Requirement::Ask {
                request: ApprovalRequest {
                    tool: tool.name().to_string(),
                    summary: command.to_string(),
                    reason: eval.reason.clone(),
                    can_persist: eval.grant_persistable(),
                },
                prefix: codesmith_policy::approval_fingerprint(command, &workspace),
                input: codesmith_policy::denial_fingerprint(command),
                grant: shell_grant(command, &workspace),
                level: eval.level,
            },
            Decision::Deny => Requirement::Deny(
                Refusal::new(
                    ErrorCode::Denied,
                    format!("The command policy refused this command: {}.", eval.reason.trim_end_matches('.')),
                    "Do not retry it or rephrase it to get around the policy. Use a safer command that does only \
                     what the task needs, or explain to the user why it is needed.",
                )
                .with("level", eval.level.as_str())
                .with("tool", tool.name()),
            ),
        }
    }

    /// The requirement for a network tool: the network policy's decision for
    /// the URL's host. `prompt` asks (an approval covers the host); `deny` is
    /// left to the tool, which refuses at execution naming the gate.
    pub(crate) fn network_requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        let Some(url) = args.get("url").and_then(Value::as_str) else {
            return Requirement::Auto;
        };
        let host = codesmith_tools::trust::label_for_url(url);
        match self.network.decide(&host) {
            NetworkDecision::Allow | NetworkDecision::Deny => Requirement::Auto,
            NetworkDecision::Prompt if self.mode == ApprovalMode::Auto => Requirement::Auto,
            NetworkDecision::Prompt => Requirement::Ask {
                request: ApprovalRequest {
                    tool: tool.name().to_string(),
                    summary: format!("fetch {url}"),
                    reason: format!("The network policy asks before contacting {host}."),
                    can_persist: true,
                },
                prefix: format!("host:{host}"),
                input: format!("url:{url}"),
                grant: Some(Grant::url_host(&host)),
                level: codesmith_policy::SafetyLevel::RequiresApproval,
            },
        }
    }
}
