//! Approval, in one room: whether a tool call runs, asks a person, or is refused, who
//! answers, and what an answer covers.
//!
//! - [`requirement`](self) (`requirement.rs`): what the policy and the approval mode
//!   ([`codesmith_policy::ApprovalMode`], the ladder `read-only` → `suggest` → `auto-edit`
//!   → `auto`, and `never`) require of one call before anybody is asked, per capability
//!   and [`codesmith_tools::ToolOrigin`].
//! - `gate.rs`: the approval gate that asks the [`Approver`], consults the session's
//!   answers and the persistent grants, and turns a "no" into the model's refusal.
//! - [`ApprovalKey`] (`key.rs`): the one typed key every answer and grant is stored under
//!   (shell prefixes, an exact compound, an HTTP client's hosts, a URL host, write paths,
//!   an MCP server's tool, …).
//! - `memory.rs` (the session's answers) and [`ApprovalStore`] (`store.rs`, the "always"
//!   grants in `$CODESMITH_HOME/approvals.toml`).
//! - [`Approver`], [`NoApprover`] and the queue approver (`queue.rs`): front ends answer
//!   through the engine's queues ([`crate::Engine::spawn`]): a request becomes an
//!   `approval_requested` event and the answer an `Op::Approval`.
//!
//! Approval mode `never` overrides every grant: neither the session's answers nor the
//! store are consulted in that mode, since nothing reaches the question.

mod gate;
mod key;
mod memory;
mod queue;
mod requirement;
mod store;

use async_trait::async_trait;

pub(crate) use codesmith_protocol::{ApprovalAnswer, ApprovalRequest};
pub(crate) use gate::GateDecision;
pub use key::ApprovalKey;
pub(crate) use memory::SessionApprovals;
pub(crate) use queue::{Pending, QueueApprover};
pub(crate) use requirement::Requirement;
pub use store::{APPROVALS_FILE, ApprovalError, ApprovalStore, StoredGrant};

/// The runtime event added after the task's text while the approval mode is `read-only`,
/// telling the model it is planning. Byte-stable (the same bytes every time, so the
/// provider's prompt cache holds across tasks).
pub const PLAN_MODE_NOTE: &str = "<runtime_event type=\"plan_mode\">Approval mode is \
read-only (plan mode): you may read files and run commands that only read; every file write \
and every other command is refused. Investigate, then present your plan: record its steps \
with update_plan and end your turn with the plan as your answer. The user accepts it (and \
switches to a mode that lets you carry it out) or asks you to keep planning.</runtime_event>";

/// Something that can answer approval requests.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Asks about one call.
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer;
    /// Asks about one call; a "no" may come with the person's reason, which the model
    /// then reads in the refusal. Default: [`Approver::ask`] without a reason.
    async fn ask_with_reason(&self, request: &ApprovalRequest) -> (ApprovalAnswer, Option<String>) {
        (self.ask(request).await, None)
    }
    /// True when a person can answer (false for `exec`, where nobody is there).
    fn interactive(&self) -> bool;
}

/// The approver for `codesmith exec`: nobody is there, so every request is denied.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoApprover;

#[async_trait]
impl Approver for NoApprover {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Deny
    }

    fn interactive(&self) -> bool {
        false
    }
}
