//! Approvals: who says yes when a call needs a person's consent.
//!
//! The policy crate decides *whether* a call needs approval; this module asks
//! an [`Approver`] and remembers the answers for the session. Front ends answer
//! through the engine's queues ([`crate::Engine::spawn`]): a request becomes an
//! `approval_requested` event and the answer an `Op::Approval`. The request and
//! answer types are the protocol's ([`ApprovalRequest`], [`ApprovalAnswer`]).
//!
//! A denial fingerprints the exact input; an approval fingerprints the
//! canonical prefix, so approving `cargo build` covers `cargo build --release`.

use async_trait::async_trait;

pub(crate) use codesmith_protocol::{ApprovalAnswer, ApprovalRequest};

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
