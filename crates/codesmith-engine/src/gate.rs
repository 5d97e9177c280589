//! The approval gate: whether a prepared call runs, asks, or is refused.

use codesmith_tools::{Capability, ErrorCode, Refusal, Tool};
use serde_json::Value;

use crate::approval::{ApprovalAnswer, ApprovalRequest};
use crate::runtime::Runtime;

/// The gate's verdict on one call.
#[derive(Debug)]
pub(crate) enum GateDecision {
    /// Run it.
    Run,
    /// Do not run it; the refusal says why and what to do.
    Refuse(Refusal),
}

/// The policy's view of one call before anybody is asked.
#[derive(Debug, Clone)]
pub(crate) enum Requirement {
    /// Runs without asking.
    Auto,
    /// Needs a person's yes.
    Ask {
        /// What is asked about.
        request: ApprovalRequest,
        /// Fingerprint an approval covers (the canonical prefix).
        prefix: String,
        /// Fingerprint a denial covers (the exact input).
        input: String,
    },
    /// Refused by policy whatever anyone says.
    Deny(Refusal),
}

impl Runtime {
    /// Decides whether `tool` may run with `args`, asking the approver when needed.
    pub(crate) async fn gate(&mut self, tool: &dyn Tool, args: &Value) -> GateDecision {
        match self.requirement(tool, args) {
            Requirement::Auto => GateDecision::Run,
            Requirement::Deny(refusal) => GateDecision::Refuse(refusal),
            Requirement::Ask {
                request,
                prefix,
                input,
            } => self.ask(request, &prefix, &input).await,
        }
    }

    async fn ask(&mut self, request: ApprovalRequest, prefix: &str, input: &str) -> GateDecision {
        if self.approvals.is_denied(input) {
            return GateDecision::Refuse(denied(
                &request,
                "It was already denied in this session.",
                false,
            ));
        }
        if self.approvals.is_approved(prefix) {
            return GateDecision::Run;
        }
        if !self.approver.interactive() {
            return GateDecision::Refuse(denied(
                &request,
                "Nobody is present to approve it in this run.",
                true,
            ));
        }
        match self.approver.ask(&request).await {
            ApprovalAnswer::Once => GateDecision::Run,
            ApprovalAnswer::Session | ApprovalAnswer::Always => {
                self.approvals.approve(prefix);
                GateDecision::Run
            }
            ApprovalAnswer::Deny => {
                self.approvals.deny(input);
                GateDecision::Refuse(denied(&request, "The user declined it.", false))
            }
        }
    }

    /// What policy requires for this call, before anybody is asked.
    pub(crate) fn requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        match tool.capability() {
            Capability::ReadOnly | Capability::WritesFiles => Requirement::Auto,
            Capability::ExecutesCode => self.shell_requirement(tool, args),
            Capability::Network => self.network_requirement(tool, args),
        }
    }
}

/// The DENIED refusal for a call that needed approval and did not get it.
pub(crate) fn denied(request: &ApprovalRequest, why: &str, headless: bool) -> Refusal {
    let hint = if headless {
        "Do not retry it and do not work around it with another tool. Continue without it, or tell the user \
         it needs approval: rerun with `--approval auto`, or add an allow rule to the exec policy."
    } else {
        "Do not retry it and do not work around it with another tool; continue without it or ask the user."
    };
    Refusal::new(
        ErrorCode::Denied,
        format!(
            "`{}` was not run: {} {}",
            request.summary, request.reason, why
        ),
        hint,
    )
    .with("tool", request.tool.clone())
}
