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
}

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

    fn decode_call(&mut self, position: u64, call: &Value, out: &mut Vec<ProviderEvent>) {
        let index = call
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position);
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
