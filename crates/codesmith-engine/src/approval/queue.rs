//! The approver of a spawned engine: each request becomes an `approval_requested` event,
//! and the asking tool call waits for the matching `Op::Approval`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use codesmith_protocol::{ApprovalAnswer, ApprovalRequest, Event};
use tokio::sync::{mpsc, oneshot};

use super::Approver;

/// A person's answer as the queue carries it: the answer and, for a "no", the reason
/// they gave, if any.
type Reply = (ApprovalAnswer, Option<String>);

/// The approval requests waiting for an answer, by `call_id`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pending(Arc<Mutex<HashMap<String, oneshot::Sender<Reply>>>>);

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Reply>>> {
        // A panic while holding this lock cannot leave the map half-changed.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a request under `call_id`, or under `call_id#N` when that id waits
    /// already; returns the id used and the receiver of the answer.
    fn register(&self, call_id: &str) -> (String, oneshot::Receiver<Reply>) {
        let (tx, rx) = oneshot::channel();
        let mut map = self.lock();
        let mut id = call_id.to_string();
        let mut n = 2;
        while id.is_empty() || map.contains_key(&id) {
            id = format!("{call_id}#{n}");
            n += 1;
        }
        map.insert(id.clone(), tx);
        (id, rx)
    }

    /// Answers `call_id`; false when no request waits under it.
    pub(crate) fn answer(
        &self,
        call_id: &str,
        answer: ApprovalAnswer,
        reason: Option<String>,
    ) -> bool {
        match self.lock().remove(call_id) {
            Some(tx) => tx.send((answer, reason)).is_ok(),
            None => false,
        }
    }

    /// Resolves every waiting request as denied (their askers withdraw them).
    pub(crate) fn deny_all(&self) {
        self.lock().clear();
    }

    fn forget(&self, call_id: &str) {
        self.lock().remove(call_id);
    }
}

/// The approver of a spawned engine: each request becomes an event, and the asking tool
/// call waits for the matching [`Op::Approval`].
pub(crate) struct QueueApprover {
    pub(crate) events: mpsc::UnboundedSender<Event>,
    pub(crate) pending: Pending,
}

/// Withdraws a request that ends without an answer, however it ends (the asking future
/// dropped by a cancellation, or its entry denied by an interrupt).
struct Waiting<'a> {
    approver: &'a QueueApprover,
    call_id: String,
    answered: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.approver.pending.forget(&self.call_id);
            let _ = self.approver.events.send(Event::ApprovalWithdrawn {
                call_id: std::mem::take(&mut self.call_id),
            });
        }
    }
}

#[async_trait]
impl Approver for QueueApprover {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.ask_with_reason(request).await.0
    }

    async fn ask_with_reason(&self, request: &ApprovalRequest) -> Reply {
        let (call_id, answer) = self.pending.register(&request.call_id);
        let mut waiting = Waiting {
            approver: self,
            call_id,
            answered: false,
        };
        let mut request = request.clone();
        request.call_id = waiting.call_id.clone();
        if self.events.send(Event::ApprovalRequested(request)).is_err() {
            // Nobody reads the events: nobody can answer.
            waiting.answered = true;
            self.pending.forget(&waiting.call_id);
            return (ApprovalAnswer::Deny, None);
        }
        match answer.await {
            Ok(reply) => {
                waiting.answered = true;
                reply
            }
            Err(_) => (ApprovalAnswer::Deny, None),
        }
    }

    fn interactive(&self) -> bool {
        true
    }
}
