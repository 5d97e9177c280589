//! Messages API SSE events → [`ProviderEvent`]s.
//!
//! `message_start` and `message_delta` carry usage (the latter cumulative
//! output tokens and the `stop_reason`), reported as soon as it arrives so
//! that a response cut short still reports what was billed; content blocks
//! stream text, thinking and tool-use input (`input_json_delta`); a
//! `server_tool_use` block is a tool the server ran itself, reported as a
//! notice and never a call to run here, and a tool block whose input comes
//! both whole at its start and in deltas gets arguments that do not parse. The
//! terminal signal is `message_stop` after a `message_delta` that carried a
//! `stop_reason`, which emits [`ProviderEvent::Completed`]; a body that ends
//! without `message_stop` is an interruption, even after a `message_delta`
//! with a stop reason, and a `message_stop` that no stop reason preceded ends
//! the stream with a `Network` error (nothing says the answer finished). A
//! usage figure that is not a token count is dropped with a notice (see
//! `crate::usage`); a tool block's `input` object that names a key twice
//! ends the stream with an error. `ping` becomes [`ProviderEvent::KeepAlive`];
//! unknown event types are skipped (the API may add event types); `error`
//! events (`overloaded_error` mid-stream, ...) become a [`ProviderError`]
//! quoting the API's message.

use std::collections::HashMap;

use codesmith_protocol::{StopReason, Usage};
use serde_json::Value;

use crate::provider::{ProviderError, ProviderErrorKind, ProviderEvent};
use crate::sse::{SseDecoder, parse_json};
use crate::taxonomy::error_from_stream;
use crate::usage::UsageReader;

#[derive(Debug)]
struct ToolBlock {
    ordinal: usize,
    got_input: bool,
    initial_input: String,
}

/// Decoder state for one Messages stream.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    tools: HashMap<u64, ToolBlock>,
    usage: Usage,
    saw_usage: bool,
    stop_reason: Option<String>,
    terminated: bool,
    reader: UsageReader,
}

impl SseDecoder for AnthropicDecoder {
    fn event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        if self.terminated || data.trim().is_empty() {
            return Ok(());
        }
        let value = parse_json("anthropic", data, Self::carries_arguments)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event)
            .to_string();
        match kind.as_str() {
            "message_start" => {
                if let Some(usage) = value.pointer("/message/usage") {
                    self.merge_usage(usage, out);
                    out.push(ProviderEvent::Usage(self.usage));
                }
            }
            "content_block_start" => self.block_start(&value, out),
            "content_block_delta" => self.block_delta(&value, out),
            "content_block_stop" => self.block_stop(&value, out),
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
                    self.merge_usage(usage, out);
                    out.push(ProviderEvent::Usage(self.usage));
                }
            }
            "message_stop" => {
                self.terminated = true;
                if self.stop_reason.is_none() {
                    return Err(ProviderError::new(
                        ProviderErrorKind::Network,
                        "anthropic: the stream ended with message_stop but no message_delta carried a \
                         stop_reason, so the response cannot be proven complete (interrupted upstream)",
                    ));
                }
                if self.stop_reason.as_deref() == Some("refusal") {
                    out.push(ProviderEvent::RefusalDelta(String::new()));
                }
                out.push(ProviderEvent::Completed {
                    stop_reason: self.stop_reason.as_deref().map(map_stop_reason),
                });
            }
            "error" => {
                let error_type = value
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let message = value
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)");
                return Err(error_from_stream("anthropic", error_type, message));
            }
            // The server is alive while the model thinks: that resets the idle timeout.
            "ping" => out.push(ProviderEvent::KeepAlive),
            _ => {}
        }
        Ok(())
    }

    fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Only `message_stop` proves a Messages response finished.
    fn end_of_body(&mut self, _out: &mut Vec<ProviderEvent>) {}

    fn decode_whole(body: &Value) -> Result<Vec<ProviderEvent>, ProviderError> {
        if body.get("type").and_then(Value::as_str) == Some("error") {
            let error_type = body
                .pointer("/error/type")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let message = body
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)");
            return Err(error_from_stream("anthropic", error_type, message));
        }
        let mut out = Vec::new();
        let blocks = body.get("content").and_then(Value::as_array);
        let mut ordinal = 0;
        for block in blocks.into_iter().flatten() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => push_text(block.get("text"), &mut out, ProviderEvent::TextDelta),
                Some("thinking") => {
                    push_text(
                        block.get("thinking"),
                        &mut out,
                        ProviderEvent::ThinkingDelta,
                    );
                }
                Some("tool_use") => {
                    let field = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
                    out.push(ProviderEvent::ToolCallStart {
                        index: ordinal,
                        id: field("id").to_string(),
                        name: field("name").to_string(),
                    });
                    let input = block.get("input").map(Value::to_string);
                    out.push(ProviderEvent::ToolCallDelta {
                        index: ordinal,
                        arguments: input.unwrap_or_else(|| "{}".to_string()),
                    });
                    ordinal += 1;
                }
                _ => {}
            }
        }
        if let Some(usage) = body.get("usage") {
            let mut decoder = AnthropicDecoder::default();
            decoder.merge_usage(usage, &mut out);
            out.push(ProviderEvent::Usage(decoder.usage));
        }
        let stop_reason = body.get("stop_reason").and_then(Value::as_str);
        if stop_reason == Some("refusal") {
            out.push(ProviderEvent::RefusalDelta(String::new()));
        }
        out.push(ProviderEvent::Completed {
            stop_reason: stop_reason.map(map_stop_reason),
        });
        Ok(out)
    }

    /// A tool block's `input` object: in `content_block_start` (normally
    /// `{}`), or every block of a whole response.
    fn carries_arguments(value: &Value) -> bool {
        value.pointer("/content_block/input").is_some()
            || value
                .get("content")
                .and_then(Value::as_array)
                .is_some_and(|blocks| blocks.iter().any(|b| b.get("input").is_some()))
    }
}

impl AnthropicDecoder {
    fn block_start(&mut self, value: &Value, out: &mut Vec<ProviderEvent>) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        let Some(block) = value.get("content_block") else {
            return;
        };
        match block.get("type").and_then(Value::as_str) {
            Some("server_tool_use") => {
                let name = block.get("name").and_then(Value::as_str).unwrap_or("?");
                out.push(ProviderEvent::Notice(format!(
                    "anthropic ran its own server tool `{name}`; CodeSmith does not run it"
                )));
            }
            Some("tool_use") => {
                let ordinal = self.tools.len();
                let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let initial_input = block
                    .get("input")
                    .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
                    .map(Value::to_string)
                    .unwrap_or_else(|| "{}".to_string());
                self.tools.insert(
                    index,
                    ToolBlock {
                        ordinal,
                        got_input: false,
                        initial_input,
                    },
                );
                out.push(ProviderEvent::ToolCallStart {
                    index: ordinal,
                    id: id.to_string(),
                    name: name.to_string(),
                });
            }
            Some("text") => push_text(block.get("text"), out, ProviderEvent::TextDelta),
            Some("thinking") => push_text(block.get("thinking"), out, ProviderEvent::ThinkingDelta),
            _ => {}
        }
    }

    fn block_delta(&mut self, value: &Value, out: &mut Vec<ProviderEvent>) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        let Some(delta) = value.get("delta") else {
            return;
        };
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => push_text(delta.get("text"), out, ProviderEvent::TextDelta),
            Some("thinking_delta") => {
                push_text(delta.get("thinking"), out, ProviderEvent::ThinkingDelta);
            }
            Some("input_json_delta") => {
                let fragment = delta
                    .get("partial_json")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if let Some(tool) = self.tools.get_mut(&index)
                    && !fragment.is_empty()
                {
                    if !tool.got_input && tool.initial_input != "{}" {
                        // Input given both whole at the start and in deltas:
                        // which one is meant is unknown, so both are kept and
                        // the call's arguments do not parse (it does not run).
                        out.push(ProviderEvent::ToolCallDelta {
                            index: tool.ordinal,
                            arguments: tool.initial_input.clone(),
                        });
                    }
                    tool.got_input = true;
                    out.push(ProviderEvent::ToolCallDelta {
                        index: tool.ordinal,
                        arguments: fragment.to_string(),
                    });
                }
            }
            // signature_delta, citations_delta: nothing the neutral transcript keeps.
            _ => {}
        }
    }

    /// A tool block that streamed no input (a call without arguments) gets
    /// the input from its start event, normally `{}`.
    fn block_stop(&mut self, value: &Value, out: &mut Vec<ProviderEvent>) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        if let Some(tool) = self.tools.get_mut(&index)
            && !tool.got_input
        {
            tool.got_input = true;
            out.push(ProviderEvent::ToolCallDelta {
                index: tool.ordinal,
                arguments: tool.initial_input.clone(),
            });
        }
    }

    /// Usage fields present in `usage` overwrite the stored ones (output
    /// tokens in `message_delta` are cumulative). Input includes cache reads
    /// and cache writes (the sum saturates). An invalid figure counts as
    /// absent and adds a notice to `out`.
    fn merge_usage(&mut self, usage: &Value, out: &mut Vec<ProviderEvent>) {
        let mut num = |key: &str| self.reader.count("anthropic", usage, key, out);
        let plain = num("/input_tokens");
        let read = num("/cache_read_input_tokens");
        let write = num("/cache_creation_input_tokens");
        let output = num("/output_tokens");
        if plain.is_some() || read.is_some() || write.is_some() {
            let total = plain
                .unwrap_or(0)
                .saturating_add(read.unwrap_or(0))
                .saturating_add(write.unwrap_or(0));
            if total > 0 || !self.saw_usage {
                self.usage.input_tokens = total;
                self.usage.cached_input_tokens = read.unwrap_or(0);
                self.usage.cache_write_input_tokens = write.unwrap_or(0);
            }
        }
        if let Some(output) = output {
            self.usage.output_tokens = output;
        }
        self.saw_usage = true;
    }
}

fn push_text(
    text: Option<&Value>,
    out: &mut Vec<ProviderEvent>,
    make: fn(String) -> ProviderEvent,
) {
    if let Some(text) = text.and_then(Value::as_str).filter(|t| !t.is_empty()) {
        out.push(make(text.to_string()));
    }
}

/// Maps a wire `stop_reason` to a stop reason. `refusal` is also reported
/// as an empty [`ProviderEvent::RefusalDelta`], which marks the response.
pub(crate) fn map_stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_string()),
    }
}
