//! Early start of read-only tools: while a response still streams, a call whose
//! arguments have become complete JSON ([`codesmith_providers::StreamNotice::CallReady`])
//! starts at once when it is safe to run before the response is known whole: a tool that
//! only reads, is parallel-safe, answers from the workspace (no network, no external
//! label), and that the gate would run without asking. Nothing else starts early. The
//! call still passes every gate in dispatch as usual; only its execution is replaced by
//! the result already computed (when its final arguments are the same). A response that
//! turns out cut off (truncated at the token cap, or interrupted) discards every early
//! result; a read-only call leaves no work to undo.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use codesmith_tools::{Capability, Tool, ToolOutcome};
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::approval::Requirement;
use crate::runtime::Runtime;

/// One call started early: the arguments it started with, the read record of its own
/// context (adopted by the session only when its result is used), and its task.
type Started = (
    Value,
    Arc<codesmith_tools::fs::freshness::FreshnessTracker>,
    JoinHandle<ToolOutcome>,
);

/// Calls started early in the current response, by call id, and whether an earlier call
/// of the response was not eligible (from then on nothing starts early: a read must not
/// overtake a write, a command or anything else that may change what it reads).
#[derive(Debug, Default)]
pub(crate) struct EarlyStarts(Mutex<HashMap<String, Started>>, AtomicBool);

impl EarlyStarts {
    /// Starts `name(arguments)` as call `id` when it is eligible (see the module
    /// documentation) and every earlier call of the response was too (calls are offered
    /// in the response's order). Returns whether it started.
    pub(crate) fn offer(rt: &Runtime, id: &str, name: &str, arguments: Value) -> bool {
        if rt.early.1.load(Ordering::SeqCst) {
            return false;
        }
        let Some(tool) = rt.tools.get(name) else {
            rt.early.1.store(true, Ordering::SeqCst);
            return false;
        };
        if !eligible(rt, tool.as_ref(), &arguments) {
            rt.early.1.store(true, Ordering::SeqCst);
            return false;
        }
        // Its reads are recorded apart: a discarded result must not count as a read the
        // model saw (a later write would pass the freshness check on it).
        let ctx = rt.ctx.with_own_freshness();
        let reads = Arc::clone(&ctx.freshness);
        let args = arguments.clone();
        let handle =
            tokio::spawn(
                async move { codesmith_tools::call_tool(tool.as_ref(), &ctx, args).await },
            );
        let mut map = rt.early.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, _, old)) = map.insert(id.to_string(), (arguments, reads, handle)) {
            old.abort();
        }
        true
    }

    /// The early result of call `id` when it was started with exactly `args` (waiting
    /// for it to finish); `None` otherwise (a call started with other arguments is
    /// dropped).
    /// The reads it made join the session's record (`session`) only then.
    pub(crate) async fn take(
        &self,
        id: &str,
        args: &Value,
        session: &codesmith_tools::fs::freshness::FreshnessTracker,
    ) -> Option<ToolOutcome> {
        let entry = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        let (started_with, reads, handle) = entry?;
        if &started_with != args {
            handle.abort();
            return None;
        }
        let outcome = handle.await.ok()?;
        session.adopt(&reads);
        Some(outcome)
    }

    /// Drops every early call not taken (a cut-off response, or calls dispatch did not
    /// run). Returns how many were dropped.
    pub(crate) fn discard(&self) -> usize {
        self.1.store(false, Ordering::SeqCst);
        let drained: Vec<_> = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .collect();
        for (_, (_, _, handle)) in &drained {
            handle.abort();
        }
        drained.len()
    }
}

/// True for a call that may start before its response is known whole.
fn eligible(rt: &Runtime, tool: &dyn Tool, args: &Value) -> bool {
    tool.capability() == Capability::ReadOnly
        && tool.supports_parallel()
        && tool.external_label(args).is_none()
        && tool.name() != crate::subagent::AGENT_TOOL
        && matches!(
            rt.requirement(tool, args),
            Requirement::Auto { concurrent: true }
        )
}
