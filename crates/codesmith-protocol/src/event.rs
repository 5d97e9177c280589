//! Events flowing from the engine to a front end (`exec --json`, the terminal UI).

use serde::{Deserialize, Serialize};

use crate::{ApprovalRequest, ChangedFile, StopReason, ToolError, Usage};

/// One step of the model's plan (see [`Event::PlanUpdated`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// What the step does, one short sentence.
    pub step: String,
    /// Where it stands.
    pub status: StepStatus,
}

/// The status of a [`PlanStep`]: `pending`, `in_progress` or `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one step at a time).
    InProgress,
    /// Done.
    Completed,
}

impl StepStatus {
    /// The on-the-wire name (`pending`, `in_progress`, `completed`).
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Completed => "completed",
        }
    }

    /// The checkbox a line renderer shows for it: `[ ]`, `[>]` or `[x]`.
    pub fn mark(self) -> &'static str {
        match self {
            StepStatus::Pending => "[ ]",
            StepStatus::InProgress => "[>]",
            StepStatus::Completed => "[x]",
        }
    }
}

/// One event of a session, serialized as `{"type": "...", ...}` (one JSON line in `exec --json`).
///
/// Non-exhaustive: new kinds of event are added over time, so a front end matches the
/// ones it shows and ignores the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A session began or was resumed.
    SessionStarted {
        /// Session id (a safe path component).
        session_id: String,
        /// Provider name (`openai`, `anthropic`, `local`).
        provider: String,
        /// Model name.
        model: String,
        /// Canonical workspace path.
        workspace: String,
    },
    /// A model round started (1-based within the task).
    TurnStarted {
        /// Round number.
        turn: u32,
        /// Estimated input tokens of the request about to be sent (about four
        /// bytes of text per token), for context-fill displays.
        #[serde(default)]
        estimated_input_tokens: u64,
    },
    /// A piece of visible assistant text.
    AssistantText {
        /// The new text.
        delta: String,
    },
    /// A piece of thinking text.
    Thinking {
        /// The new text.
        delta: String,
    },
    /// The model asked for a tool call (after repair).
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments as parsed (or repaired) JSON.
        arguments: serde_json::Value,
    },
    /// A tool call finished. Front ends render the typed fields (`error`, `summary`,
    /// `changes`); `output` is what the model reads and is shown only as a whole.
    ToolResult {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// False when the tool refused or failed.
        ok: bool,
        /// The text the model will read.
        output: String,
        /// A success's full metadata (durations, full digests, paths, byte
        /// counts), of which the model's text keeps only what it acts on; a
        /// refusal's details (a stopped command's output so far under `output`);
        /// omitted when empty.
        #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
        meta: serde_json::Value,
        /// A refusal's code, message and hint (set exactly when `ok` is false);
        /// omitted on success.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ToolError>,
        /// A few words on a success for a person (`exit 0 · 1.2s`, `+3 -1`); omitted
        /// when there is nothing to say.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// The files a successful edit changed, with the diff the tool computed from
        /// the text before and after; omitted when the call changed no file.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changes: Vec<ChangedFile>,
        /// The `<external_content>` label the model's text is wrapped under
        /// (`docs.rs`, `mcp:github`): set for results from outside the workspace;
        /// omitted for local tools.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
    },
    /// A running call's latest output lines (a shell command's, as it runs), sent each
    /// time they change: at most 5 lines of at most 200 characters, secrets masked, not
    /// yet made safe for a terminal. For a person watching; the model reads only the
    /// result. The call's `tool_result` ends them.
    ToolOutput {
        /// Call id.
        id: String,
        /// The last lines, oldest first.
        lines: Vec<String>,
    },
    /// A request failed transiently and will be retried.
    Retry {
        /// 1-based retry attempt.
        attempt: u32,
        /// Wait before the retry, in milliseconds.
        wait_ms: u64,
        /// Why.
        reason: String,
    },
    /// A notice for the user (a stripped fake tool call, a recovered context, ...).
    Notice {
        /// Human-readable text.
        message: String,
    },
    /// A model round ended.
    TurnCompleted {
        /// Round number.
        turn: u32,
        /// Why the response ended.
        stop_reason: StopReason,
        /// Usage of this round.
        usage: Usage,
        /// True when the answer is a refusal (the provider marked the text
        /// as one, e.g. OpenAI's `refusal` field); omitted when false.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        refusal: bool,
    },
    /// The claim verifier's verdict on the final turn.
    Verdict(VerdictEvent),
    /// The model changed its plan with the `update_plan` tool (emitted only when the
    /// plan differs from the one before). The whole plan, in order.
    PlanUpdated {
        /// Why the plan changed, as the model said it; omitted when it gave no reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        explanation: Option<String>,
        /// The steps, in order (at most one `in_progress`).
        plan: Vec<PlanStep>,
    },
    /// An MCP server reported progress for a running tool call (each report also starts
    /// the call's idle timeout again).
    McpProgress {
        /// The server's configured name.
        server: String,
        /// The tool's registered name (`mcp__SERVER__TOOL`).
        tool: String,
        /// Progress so far, in the server's unit.
        progress: f64,
        /// The total, when the server knows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// The server's message (at most 500 bytes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A failure that ended the task.
    Error {
        /// Human-readable text saying what went wrong and what to do.
        message: String,
    },
    /// The `agent` tool call `call_id` started a subagent: a child engine with its own
    /// transcript, stored as the session `agent_id`.
    SubagentStarted {
        /// The child's id: its session id.
        agent_id: String,
        /// The parent's `agent` tool call that started it.
        call_id: String,
        /// Its type (`general`, `explore`, `plan`, `review`).
        agent_type: String,
        /// The short description the parent gave.
        description: String,
        /// Its depth below the foreground agent (1 for a child of the foreground).
        depth: u32,
    },
    /// One event of a running subagent, labelled with its id. A grandchild's events
    /// arrive wrapped twice (the child's id outside). A child's `retry` is its own: it
    /// never stands for the parent's request.
    Subagent {
        /// The child's id (its session id).
        agent_id: String,
        /// What happened in the child.
        event: Box<Event>,
    },
    /// A subagent ended; its answer is the `agent` call's result.
    SubagentFinished {
        /// The child's id (its session id).
        agent_id: String,
        /// How it ended (`completed`, `turn_limit`, `wall_time_limit`, `cancelled`,
        /// `too_many_failures`, `interrupted`, `failed`).
        status: String,
        /// Model rounds it used.
        turns: u32,
        /// Its total usage (already part of its `turn_completed` events; counted into the
        /// parent's task total).
        usage: Usage,
    },
    /// A tool call needs a person's yes: answer it with `Op::Approval { call_id, .. }`.
    /// The call waits until it is answered, withdrawn, or the engine is interrupted or
    /// shut down (then it counts as denied). A subagent's request comes at the top level
    /// (not wrapped in `subagent`), labelled with its `agent_id`.
    ApprovalRequested(ApprovalRequest),
    /// The approval request `call_id` no longer waits for an answer: what asked stopped
    /// waiting (an interrupt, a subagent past its wall time) or the engine was shut down.
    /// Nothing was run; a client takes the question down.
    ApprovalWithdrawn {
        /// The request's id.
        call_id: String,
    },
    /// The task a `user_task` submission started ended: the last event of that
    /// submission. An `error` event before it says what ended a `failed` task.
    TaskFinished {
        /// How it ended.
        status: TaskStatus,
        /// Model rounds used (0 when it never started).
        turns: u32,
        /// Total usage of the task (its rounds, child calls and subagents).
        usage: Usage,
    },
    /// The engine compacted the conversation while a task ran: before a request that
    /// would have passed the compaction threshold of the model's context window
    /// (`trigger: "threshold"`), or after the provider refused one as too long
    /// (`"context_length"`). The session file records the rewritten transcript. Token
    /// figures are the engine's count of the next request (the provider's reported usage
    /// plus an estimate of what was appended since, about four bytes per token).
    Compaction {
        /// `threshold` or `context_length`.
        trigger: String,
        /// The last step of the waterfall that ran: `clear_tool_results` (old tool
        /// results replaced by a stub), `summary` (older turns summarized) or `trim`
        /// (older turns dropped).
        stage: String,
        /// Tokens before.
        before: u64,
        /// Tokens after.
        after: u64,
        /// The model's context window in tokens (0 when unknown).
        #[serde(default)]
        window: u64,
        /// True when the context refilled within a few rounds of the previous compaction,
        /// so this one went straight to a summary and the model was told to read in pages.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        escalated: bool,
    },
    /// A `compact` submission ended: the last event of that submission. Token figures
    /// are estimates (about four bytes of text per token) over the whole transcript.
    CompactionFinished {
        /// What happened.
        outcome: CompactionOutcome,
        /// Messages folded away (or that would have been, for `discarded`).
        #[serde(default)]
        messages: usize,
        /// True when a model summary replaced them, false for a trim note.
        #[serde(default)]
        summary: bool,
        /// Estimated tokens of the transcript before.
        #[serde(default)]
        before: u64,
        /// Estimated tokens after (or that it would have had, for `discarded`).
        #[serde(default)]
        after: u64,
        /// Why it failed (`failed` only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A `restore` submission ended: the last event of that submission.
    RestoreFinished {
        /// The task whose snapshot was (or would be) restored.
        task: u32,
        /// True when the workspace was restored; false for a preview or a failure.
        applied: bool,
        /// What the restore changed, or would change (absent on failure).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        report: Option<RestoreReport>,
        /// Why it could not be done (absent on success).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The model ended its turn without tool calls.
    Completed,
    /// The round limit (`--max-turns`) was reached without the model finishing.
    TurnLimit,
    /// The loop guard ended the task after repeated failures.
    TooManyFailures,
    /// The stream was interrupted after content arrived; the partial answer is kept.
    Interrupted,
    /// The task's cancellation token fired (an interrupt, a signal, a shutdown): running
    /// tool calls were stopped, every call got a result, and the transcript records the
    /// interruption.
    Cancelled,
    /// An error ended the task (the `error` event before says what and what to do). The
    /// engine's own task result reports errors as `Err`, never with this status.
    Failed,
}

impl TaskStatus {
    /// The snake_case name used in events (`completed`, `turn_limit`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Completed => "completed",
            TaskStatus::TurnLimit => "turn_limit",
            TaskStatus::TooManyFailures => "too_many_failures",
            TaskStatus::Interrupted => "interrupted",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Failed => "failed",
        }
    }
}

/// What a compaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionOutcome {
    /// Older messages were replaced by a summary or a trim note.
    Compacted,
    /// The replacement would not have been smaller; the session is unchanged.
    Discarded,
    /// The session is still too short; nothing was changed.
    NothingToCompact,
    /// It was interrupted; the session is unchanged (a compaction writes last).
    Interrupted,
    /// It failed (see `error`); the session is unchanged.
    Failed,
}

/// What a restore changes (or, in a preview, would change). Paths are relative to the
/// workspace, `/`-separated, sorted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreReport {
    /// Session id.
    pub session: String,
    /// The task whose snapshot is restored (1-based over the session).
    pub task: u32,
    /// The snapshot commit in the side repository.
    pub commit: String,
    /// Files changed since the snapshot, rewritten to their old content.
    pub restored: Vec<String>,
    /// Files created since the snapshot, removed.
    pub removed: Vec<String>,
    /// Files deleted since the snapshot, brought back.
    pub recreated: Vec<String>,
    /// The commit holding the workspace as it was just before the restore (`None` in a
    /// preview).
    pub backup: Option<String>,
}

impl RestoreReport {
    /// True when the workspace already matches the snapshot.
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.removed.is_empty() && self.recreated.is_empty()
    }
}

/// A claim-verifier verdict, as emitted to front ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictEvent {
    /// `verified_pass`, `verified_fail`, `verify_error` or `unsubstantiated`.
    pub verdict: String,
    /// The claim text that was matched.
    pub claim: String,
    /// The replayed command, if any.
    pub command: Option<String>,
    /// The replay's exit code, if it ran.
    pub exit_code: Option<i32>,
}

/// Where a producer of events puts them, one at a time, as they happen: the engine's
/// loop and everything it calls take `&mut EventSink<'_>` (a closure that may borrow for
/// `'a`). The engine's handle forwards what it receives onto its event queue; a one-shot
/// caller may pass a closure.
pub type EventSink<'a> = dyn FnMut(Event) + Send + 'a;
