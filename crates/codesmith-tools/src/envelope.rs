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
    /// The syntax check refused the new content.
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

/// Hex digits of a SHA-256 digest shown to the model: enough to tell file
/// versions apart, and what `edit_file` accepts at the least.
pub const SHA256_PREFIX_LEN: usize = 12;

/// Meta keys that are bookkeeping for the event stream and the transcript's
/// metadata, never sent to the model: it knows the path it asked for, and the
/// duration and byte counts change nothing it does next.
const BOOKKEEPING: &[&str] = &[
    "duration_ms",
    "path",
    "bytes",
    "total_bytes",
    "shown",
    "files_with_matches",
];

/// The text of a result the model reads, from an envelope built by
/// [`envelope_json`] (already sanitized by the caller).
///
/// A refusal stays the whole typed envelope (code, message, hint, details).
/// A success is its output (a string as is, anything else as compact JSON;
/// `(no output)` when empty), followed by one `[meta] {...}` line holding only
/// the facts the model acts on: truncation and continuation hints, a non-zero
/// `exit_code` (a zero one only when `keep_exit_code`, for test and build
/// commands), digests cut to [`SHA256_PREFIX_LEN`] hex digits when
/// `keep_digests` (one-shot front ends, where `edit_file` takes a digest as its
/// freshness proof; a session tracks freshness itself). Bookkeeping
/// (durations, paths, byte and shown counts) and facts that report nothing
/// (`false`, `0`) are left out, so a tool states a flag as the news (`true`
/// when something needs attention), never as an all-clear that is `false`
/// exactly when it matters.
pub fn model_text(envelope: &Value, keep_exit_code: bool, keep_digests: bool) -> String {
    if envelope["ok"] != Value::Bool(true) {
        return envelope.to_string();
    }
    let mut text = match &envelope["output"] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    if text.is_empty() {
        text.push_str("(no output)");
    }
    let mut kept = Map::new();
    for (key, value) in envelope["meta"].as_object().into_iter().flatten() {
        let nothing = *value == Value::Bool(false) || value.as_i64() == Some(0);
        if BOOKKEEPING.contains(&key.as_str())
            || (nothing && !(key == "exit_code" && keep_exit_code))
            || (!keep_digests && key.ends_with("sha256"))
        {
            continue;
        }
        kept.insert(key.clone(), shorten_digests(key, value));
    }
    if !kept.is_empty() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[meta] ");
        text.push_str(&Value::Object(kept).to_string());
    }
    text
}

/// `sha256` values (also inside arrays of objects, as `apply_patch` reports
/// files) cut to [`SHA256_PREFIX_LEN`] hex digits.
fn shorten_digests(key: &str, value: &Value) -> Value {
    match value {
        Value::String(s)
            if key.ends_with("sha256") && s.len() > SHA256_PREFIX_LEN && s.is_ascii() =>
        {
            Value::String(s[..SHA256_PREFIX_LEN].to_string())
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| shorten_digests(key, v)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), shorten_digests(k, v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod lean_tests {
    use super::*;

    #[test]
    fn successes_are_lean_and_refusals_keep_their_envelope() {
        let ok: ToolOutcome = Ok(ToolOutput::new(Value::String("1\n".into()))
            .with("exit_code", 0)
            .with("duration_ms", 12)
            .with("truncated", false));
        assert_eq!(model_text(&envelope_json(&ok), false, false), "1\n");
        assert_eq!(
            model_text(&envelope_json(&ok), true, false),
            "1\n[meta] {\"exit_code\":0}"
        );
        let failed: ToolOutcome = Ok(ToolOutput::new(Value::String(String::new()))
            .with("exit_code", 2)
            .with("sha256", "0123456789abcdef0123"));
        assert_eq!(
            model_text(&envelope_json(&failed), false, true),
            "(no output)\n[meta] {\"exit_code\":2,\"sha256\":\"0123456789ab\"}"
        );
        let refusal: ToolOutcome = Err(Refusal::new(ErrorCode::NoMatch, "m", "h").with("k", 1));
        let env = envelope_json(&refusal);
        assert_eq!(model_text(&env, false, false), env.to_string());
    }
}
