//! The result envelope every tool answers with.

use codesmith_protocol::{ChangedFile, ToolError};
use serde_json::{Map, Value, json};

/// The refusal codes are the protocol's: the event a front end reads carries the same
/// code the model reads in the envelope.
pub use codesmith_protocol::ErrorCode;

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

    /// The refusal as a front end reads it: code, message and hint, without the details.
    pub fn to_error(&self) -> ToolError {
        ToolError {
            code: self.code,
            message: self.message.clone(),
            hint: self.hint.clone(),
        }
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
    /// The files the call changed, with the diffs the tool computed (edits only; the
    /// model never reads these, front ends show them).
    pub changes: Vec<ChangedFile>,
}

impl ToolOutput {
    /// An output with no meta.
    pub fn new(output: impl Into<Value>) -> Self {
        ToolOutput {
            output: output.into(),
            meta: Map::new(),
            changes: Vec::new(),
        }
    }

    /// Adds the changes of the files the call wrote.
    pub fn with_changes(mut self, changes: impl IntoIterator<Item = ChangedFile>) -> Self {
        self.changes.extend(changes);
        self
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

/// The refusal in the text of a stored result (a resumed transcript keeps only what the
/// model read, and a refusal's text is its whole envelope, see [`model_text`]); `None`
/// when the text is not a refusal envelope (read inside the `<external_content>` wrapper of
/// a network-origin result, [`crate::trust::external_body`]). Only this module knows the envelope's
/// shape: front ends showing history ask here instead of parsing it themselves.
pub fn stored_refusal(text: &str) -> Option<ToolError> {
    let first = crate::trust::external_body(text).lines().next()?;
    let envelope: Value = serde_json::from_str(first).ok()?;
    if envelope.get("ok") != Some(&Value::Bool(false)) {
        return None;
    }
    let error = envelope.get("error")?;
    let field = |k: &str| {
        error
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    Some(ToolError {
        code: serde_json::from_value(error.get("code")?.clone()).ok()?,
        message: field("message"),
        hint: field("hint"),
    })
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
    // Whether the call started while its response streamed: the same result either way.
    "started_early",
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
