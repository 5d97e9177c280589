//! Events flowing from the engine to a front end (`exec --json`, the terminal UI).

use serde::{Deserialize, Serialize};

use crate::{ChangedFile, StopReason, ToolError, Usage};

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
        /// counts), of which the model's text keeps only what it acts on;
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
