//! The result envelope every tool answers with.

use serde::Serialize;
use serde_json::{Map, Value, json};

/// Typed refusal codes. Serialized in SCREAMING_SNAKE_CASE (`NOT_FOUND`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The named path does not exist.
    NotFound,
    /// The file to create exists already.
    AlreadyExists,
    /// The search text was not found.
    NoMatch,
    /// The search text matched more than once.
    AmbiguousMatch,
    /// The path resolves outside the workspace.
    OutsideWorkspace,
    /// The file changed on disk since it was read.
    StaleRead,
    /// The file must be read before it is edited or overwritten.
    NotRead,
    /// The syntax gate refused the new content.
    ParseRejected,
    /// A patch hunk did not apply.
    PatchFailed,
    /// The arguments are missing, mistyped or contradictory.
    InvalidArguments,
    /// The input or file exceeds a limit.
    TooLarge,
    /// Policy or approval refused the call.
    Denied,
    /// The call ran out of time.
    Timeout,
    /// The caller cancelled the call while it ran (an MCP `notifications/cancelled`, an
    /// interrupt); what it started was stopped.
    Cancelled,
    /// The tool exists but cannot be used now (its MCP server is down, or the server
    /// offered it in a form the registry does not accept).
    Unavailable,
    /// An external tool (an MCP server) ran the call and reported an error.
    ToolError,
    /// A host-level cause; never carries host detail.
    Internal,
}

/// A typed refusal the model can act on.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The code.
    pub code: ErrorCode,
    /// What happened, from the caller's own request, with workspace-relative paths.
    pub message: String,
    /// What to do next.
    pub hint: String,
    /// Structured facts. The message is always copied in under `message`.
    pub details: Map<String, Value>,
}

impl Refusal {
    /// A refusal with no structured details beyond the message.
    pub fn new(code: ErrorCode, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Refusal {
            code,
            message: message.into(),
            hint: hint.into(),
            details: Map::new(),
        }
    }

    /// Adds one structured detail.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_string(), value.into());
        self
    }

    /// The generic internal refusal: no host detail leaves the process.
    pub fn internal() -> Self {
        Refusal::new(
            ErrorCode::Internal,
            "The tool failed for a reason outside the request.",
            "Try again; if it keeps failing, continue another way and tell the user.",
        )
    }
}

/// A successful tool result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// What the model reads (usually a string, sometimes an object).
    pub output: Value,
    /// Facts about the result (digest, truncation, counts, ...).
    pub meta: Map<String, Value>,
}

impl ToolOutput {
    /// An output with no meta.
    pub fn new(output: impl Into<Value>) -> Self {
        ToolOutput {
            output: output.into(),
            meta: Map::new(),
        }
    }

    /// Adds one meta entry.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.meta.insert(key.to_string(), value.into());
        self
    }
}

/// The outcome of a tool call.
pub type ToolOutcome = Result<ToolOutput, Refusal>;

/// Serializes an outcome into the envelope the model reads.
pub fn envelope_json(outcome: &ToolOutcome) -> Value {
    match outcome {
        Ok(out) => json!({"ok": true, "output": out.output, "meta": out.meta}),
        Err(refusal) => {
            let mut details = refusal.details.clone();
            details.insert("message".into(), Value::String(refusal.message.clone()));
            json!({"ok": false, "error": {
                "code": refusal.code,
                "message": refusal.message,
                "hint": refusal.hint,
                "details": details,
            }})
        }
    }
}
