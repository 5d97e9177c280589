//! Approvals: who says yes when a call needs a person's consent.
//!
//! The policy crate decides *whether* a call needs approval; this module asks
//! an [`Approver`] (the terminal UI, or nobody in `exec`) and remembers the
//! answers for the session. A denial fingerprints the exact input; an approval
//! fingerprints the canonical prefix, so approving `cargo build` covers
//! `cargo build --release`.

use async_trait::async_trait;

/// What the person is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// Tool name.
    pub tool: String,
    /// What will happen (the command, the URL, the paths).
    pub summary: String,
    /// Why approval is needed (the classifier's reason).
    pub reason: String,
    /// Whether an "always" grant may be offered (never for a dangerous command).
    pub can_persist: bool,
}

/// The person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run this call only.
    Once,
    /// Run this and matching calls for the rest of the session.
    Session,
    /// Persist a grant for this workspace.
    Always,
    /// Do not run it.
    Deny,
}

/// Something that can answer approval requests.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Asks about one call.
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer;
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
