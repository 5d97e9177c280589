//! The submission queue: what a front end asks a running engine to do.
//!
//! A front end and the engine talk through two typed queues, as codex-rs does with its
//! `Submission`/`Op`/`Event` pair (SQ/EQ): the front end sends [`Submission`]s, and the
//! engine answers with [`crate::Event`]s. Ops that start work ([`Op::UserTask`],
//! [`Op::Compact`], [`Op::Restore`]) run one at a time, in the order they arrive; while one
//! runs, the engine still reads the queue, so [`Op::Interrupt`] and [`Op::Approval`] act at
//! once. Every op that starts work ends with exactly one closing event
//! ([`crate::Event::TaskFinished`], [`crate::Event::CompactionFinished`],
//! [`crate::Event::RestoreFinished`]), and closing events come in the order of their
//! submissions, also for work that never started (interrupted, or refused because too
//! much waited), so a client knows when to stop reading and which submission ended.

use serde::{Deserialize, Serialize};

/// One entry of the submission queue: an [`Op`] and the id the client gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    /// The client's id for this submission (the engine's handle numbers them from 1).
    pub id: u64,
    /// What to do.
    pub op: Op,
}

/// What a front end asks the engine to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Op {
    /// Run a task: append `text` as the user's message and run model rounds until the
    /// model ends its turn without tool calls, a limit stops it, or it is interrupted.
    /// Events: `turn_started`, the round's text, tool calls and results, `turn_completed`
    /// for each round, `approval_requested` for each call that needs a person, then one
    /// `task_finished` (preceded by `error` when an error ended it).
    UserTask {
        /// The task as the user typed it.
        text: String,
    },
    /// Run `command` as the user's own `exec_shell` call (`!cmd` in the UI): through the
    /// same gate as the model's calls (approval mode, exec policy, sandbox, approval
    /// questions), never around it. No model round runs; the command and its result are
    /// recorded in the transcript, so the model reads them with the next task. Events:
    /// `tool_call`, `approval_requested` when it needs a person, `tool_result`, then one
    /// `task_finished`.
    UserShell {
        /// The command line as the user typed it (without the `!`).
        command: String,
    },
    /// Stop the running work: the task's cancellation token fires, running tool calls are
    /// stopped (a shell command with its whole process tree), every tool call gets a
    /// result and the turn is closed in the transcript; pending approval requests are
    /// withdrawn (`approval_withdrawn`) and count as denied. Submissions queued behind it
    /// that have not started are dropped, each with its closing event, which comes after
    /// the running work's own closing event. With nothing running, it does nothing.
    Interrupt,
    /// Answer the pending approval request `call_id` (the id of its `approval_requested`
    /// event). An id that no request is waiting under (answered already, withdrawn, never
    /// asked) changes nothing and is reported with a `notice`.
    Approval {
        /// The request's id.
        call_id: String,
        /// The answer.
        answer: ApprovalAnswer,
        /// Why, for a [`ApprovalAnswer::Deny`]: the person's words, which reach the model
        /// in the call's refusal. Ignored for other answers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Summarise the session's older messages now (`/compact`). Events: one
    /// `compaction_finished`.
    Compact,
    /// Put the workspace back as it was before task `task` of this session, from the
    /// snapshot taken before that task's first write. `apply: false` only reports what
    /// would change; `apply: true` restores and records the restore in the transcript.
    /// Events: one `restore_finished`.
    Restore {
        /// The task number (1-based over the session, as its snapshots record it).
        task: u32,
        /// False: preview only.
        apply: bool,
    },
    /// Stop the engine: as [`Op::Interrupt`], then the engine's loop ends and the event
    /// queue closes after the last event. Dropping every sender of the queue does the same.
    Shutdown,
}

/// A person's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run this call only.
    Once,
    /// Run this and matching calls for the rest of the session.
    Session,
    /// Persist a grant for this workspace (offered only when `can_persist`).
    Always,
    /// Do not run it.
    Deny,
}

/// What a person is asked about one tool call (the `approval_requested` event).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The id to answer with ([`Op::Approval`]): the tool call's id, prefixed with the
    /// subagent's id and `/` for a subagent's call, and suffixed `#N` when another request
    /// is already waiting under the same id. Unique among waiting requests.
    pub call_id: String,
    /// The subagent that asks (its session id), `None` for the foreground agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Tool name.
    pub tool: String,
    /// What will happen (the command, the URL, the paths).
    pub summary: String,
    /// Why approval is needed (the classifier's reason; for a subagent it starts by
    /// naming the subagent).
    pub reason: String,
    /// Whether an "always" grant may be offered (never for a dangerous command).
    pub can_persist: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, TaskStatus, Usage};

    #[test]
    fn ops_and_the_queue_events_have_a_stable_json_shape() {
        let op = Op::Approval {
            call_id: "agent-1/c7".into(),
            answer: ApprovalAnswer::Session,
            reason: None,
        };
        let text = serde_json::to_string(&op).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"type":"approval","call_id":"agent-1/c7","answer":"session"}"#
        );
        assert_eq!(serde_json::from_str::<Op>(&text).ok(), Some(op));
        let asked = Event::ApprovalRequested(ApprovalRequest {
            call_id: "c1".into(),
            agent_id: None,
            tool: "exec_shell".into(),
            summary: "make".into(),
            reason: "runs code".into(),
            can_persist: true,
        });
        assert_eq!(
            serde_json::to_string(&asked).unwrap_or_default(),
            r#"{"type":"approval_requested","call_id":"c1","tool":"exec_shell","summary":"make","reason":"runs code","can_persist":true}"#
        );
        let done = Event::TaskFinished {
            status: TaskStatus::TurnLimit,
            turns: 3,
            usage: Usage::default(),
        };
        let text = serde_json::to_string(&done).unwrap_or_default();
        assert!(
            text.starts_with(r#"{"type":"task_finished","status":"turn_limit","turns":3,"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Event>(&text).ok(), Some(done));
        assert_eq!(TaskStatus::TooManyFailures.as_str(), "too_many_failures");
    }
}
