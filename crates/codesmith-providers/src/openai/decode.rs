//! Chat Completions SSE chunks → [`ProviderEvent`]s.
//!
//! Tool-call deltas are assembled by their `index`: the first delta that
//! names the tool yields [`ProviderEvent::ToolCallStart`], argument fragments
//! yield [`ProviderEvent::ToolCallDelta`]. The terminal signal is `[DONE]`
//! (after the chunk carrying `finish_reason` and the usage chunk); only then
//! are the usage and [`ProviderEvent::Completed`] emitted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use codesmith_protocol::{StopReason, Usage};
use serde_json::Value;

use crate::provider::{ProviderError, ProviderEvent};
use crate::sse::{SseDecoder, parse_json};
use crate::taxonomy::error_from_stream;

/// Counter for ids of calls the server sent without one.
static GENERATED_IDS: AtomicU64 = AtomicU64::new(1);

#[derive(Debug, Default)]
struct CallState {
    ordinal: usize,
    id: Option<String>,
    started: bool,
    pending_args: String,
}

/// Decoder state for one Chat Completions stream.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    calls: HashMap<u64, CallState>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    terminated: bool,
    last_key: Option<u64>,
}

/// Keys for calls sent without an `index` start here (far from real indexes).
const UNINDEXED_BASE: u64 = 1 << 32;

impl SseDecoder for OpenAiDecoder {
    fn event(&mut self, _event: &str, data: &str) -> Result<Vec<ProviderEvent>, ProviderError> {
        let data = data.trim();
        if data.is_empty() || self.terminated {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.terminated = true;
            let mut out = Vec::new();
            if let Some(usage) = self.usage.take() {
                out.push(ProviderEvent::Usage(usage));
            }
            out.push(ProviderEvent::Completed {
                stop_reason: self.finish_reason.as_deref().map(map_finish_reason),
            });
            return Ok(out);
        }
        let chunk = parse_json("openai", data)?;
        if let Some(error) = chunk.get("error") {
            return Err(stream_error(error));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(parse_usage(usage));
        }
        let mut out = Vec::new();
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(out);
        };
        if let Some(delta) = choice.get("delta") {
            self.decode_delta(delta, &mut out);
        }
        if let Some(reason) = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
        {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(out)
    }

    fn is_terminated(&self) -> bool {
        self.terminated
    }

    fn decode_whole(body: &Value) -> Result<Vec<ProviderEvent>, ProviderError> {
        if let Some(error) = body.get("error") {
            return Err(stream_error(error));
        }
        let mut out = Vec::new();
        let message = body.pointer("/choices/0/message");
        if let Some(message) = message {
            let mut decoder = OpenAiDecoder::default();
            decoder.decode_delta(message, &mut out);
        }
        if let Some(usage) = body.get("usage").filter(|u| !u.is_null()) {
            out.push(ProviderEvent::Usage(parse_usage(usage)));
        }
        let reason = body
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty());
        out.push(ProviderEvent::Completed {
            stop_reason: reason.map(map_finish_reason),
        });
        Ok(out)
    }
}

impl OpenAiDecoder {
    fn decode_delta(&mut self, delta: &Value, out: &mut Vec<ProviderEvent>) {
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta.get(key).and_then(Value::as_str) {
                if !text.is_empty() {
                    out.push(ProviderEvent::ThinkingDelta(text.to_string()));
                }
                break;
            }
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            out.push(ProviderEvent::TextDelta(text.to_string()));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, call) in calls.iter().enumerate() {
                self.decode_call(position as u64, call, out);
            }
        }
    }

    /// The key of the call a delta belongs to: its wire `index`, or, for
    /// servers that omit it, the call with the same `id` (a new call when
    /// the id is new), else the last call seen, else the array position.
    fn call_key(&self, position: u64, call: &Value) -> u64 {
        if let Some(index) = call.get("index").and_then(Value::as_u64) {
            return index;
        }
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        if let Some(id) = id {
            let known = self
                .calls
                .iter()
                .find(|(_, c)| c.id.as_deref() == Some(id))
                .map(|(k, _)| *k);
            return known.unwrap_or(UNINDEXED_BASE + self.calls.len() as u64);
        }
        self.last_key.unwrap_or(position)
    }

    fn decode_call(&mut self, position: u64, call: &Value, out: &mut Vec<ProviderEvent>) {
        let index = self.call_key(position, call);
        self.last_key = Some(index);
        let next_ordinal = self.calls.len();
        let state = self.calls.entry(index).or_insert_with(|| CallState {
            ordinal: next_ordinal,
            ..CallState::default()
        });
        if let Some(id) = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            state.id.get_or_insert_with(|| id.to_string());
        }
        let function = call.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let args = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if !state.started {
            state.pending_args.push_str(args);
            if let Some(name) = name {
                state.started = true;
                let id = state.id.clone().unwrap_or_else(|| {
                    format!("call_cs{}", GENERATED_IDS.fetch_add(1, Ordering::Relaxed))
                });
                out.push(ProviderEvent::ToolCallStart {
                    index: state.ordinal,
                    id,
                    name: name.to_string(),
                });
                if !state.pending_args.is_empty() {
                    out.push(ProviderEvent::ToolCallDelta {
                        index: state.ordinal,
                        arguments: std::mem::take(&mut state.pending_args),
                    });
                }
            }
        } else if !args.is_empty() {
            out.push(ProviderEvent::ToolCallDelta {
                index: state.ordinal,
                arguments: args.to_string(),
            });
        }
    }
}

/// Maps a wire `finish_reason` to a stop reason.
pub(crate) fn map_finish_reason(reason: &str) -> StopReason {
    match reason {
        "stop" | "end_turn" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_string()),
    }
}

/// Reads `prompt_tokens`, `completion_tokens` and the cached-prompt count
/// (`prompt_tokens_details.cached_tokens`, or DeepSeek's `prompt_cache_hit_tokens`).
fn parse_usage(usage: &Value) -> Usage {
    let num = |ptr: &str| usage.pointer(ptr).and_then(Value::as_u64);
    Usage {
        input_tokens: num("/prompt_tokens").unwrap_or(0),
        output_tokens: num("/completion_tokens").unwrap_or(0),
        cached_input_tokens: num("/prompt_tokens_details/cached_tokens")
            .or_else(|| num("/prompt_cache_hit_tokens"))
            .unwrap_or(0),
    }
}

fn stream_error(error: &Value) -> ProviderError {
    let kind = error
        .get("type")
        .or_else(|| error.get("code"))
        .and_then(Value::as_str)
        .unwrap_or("error");
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string());
    error_from_stream("openai", kind, &message)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn feed(decoder: &mut OpenAiDecoder, delta: &str) -> Vec<ProviderEvent> {
        let chunk = format!(r#"{{"choices":[{{"index":0,"delta":{delta}}}]}}"#);
        decoder.event("message", &chunk).unwrap()
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let mut d = OpenAiDecoder::default();
        let a = r#"{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}"#;
        let b = r#"{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{\"x\":1}"}}]}"#;
        let mut events = feed(&mut d, a);
        events.extend(feed(&mut d, b));
        let starts: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::ToolCallStart { index, id, .. } => Some((*index, id.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(starts, vec![(0, "a".to_string()), (1, "b".to_string())]);
    }

    #[test]
    fn arguments_before_the_name_are_held_back() {
        let mut d = OpenAiDecoder::default();
        let first = feed(
            &mut d,
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"p\""}}]}"#,
        );
        assert!(first.is_empty());
        let second = feed(
            &mut d,
            r#"{"tool_calls":[{"index":0,"function":{"name":"read_file","arguments":":1}"}}]}"#,
        );
        assert!(
            matches!(&second[0], ProviderEvent::ToolCallStart { name, .. } if name == "read_file")
        );
        assert_eq!(
            second[1],
            ProviderEvent::ToolCallDelta {
                index: 0,
                arguments: r#"{"p":1}"#.to_string()
            }
        );
    }
}
