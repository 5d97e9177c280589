//! Chat Completions SSE chunks → [`ProviderEvent`]s.
//!
//! What the OpenAI-compatible servers in the wild send, and how it is read:
//!
//! - Text in `delta.content`, as a string or as an array of typed parts
//!   (`{"type": "text", "text"}`, `{"type": "thinking", "thinking": [parts]}`
//!   as Mistral's reasoning models send); thinking in
//!   `delta.reasoning_content` (DeepSeek, vLLM, llama.cpp, Z.ai) or
//!   `delta.reasoning` (OpenRouter, Groq); a refusal in `delta.refusal`,
//!   which is answer text marked as a refusal.
//! - Tool-call deltas are keyed by their `index` and `id`: a new non-empty
//!   `id` at an index already in use starts a new call (servers that send
//!   every call at index 0) when it names a tool; a delta without `index` takes its position in
//!   the `tool_calls` array as the index. The first delta that names the tool
//!   yields [`ProviderEvent::ToolCallStart`]; argument fragments yield
//!   [`ProviderEvent::ToolCallDelta`]. `function.arguments` given as a JSON
//!   object or array (already parsed by the server) is taken as its JSON text.
//! - Usage is reported from whichever chunk carries it (the finish chunk, a
//!   usage-only chunk after it, an error chunk), as soon as it arrives, so a
//!   response cut short afterwards still reports what was billed. A figure
//!   that is not a token count is dropped with a notice (see `crate::usage`).
//! - `function.arguments` sent as a JSON object in a chunk that names a key
//!   twice ends the stream with an error: which value was meant is unknown.
//! - An `error` object (`"error": null` is no error) ends the stream with a
//!   [`ProviderError`] quoting the server's message.
//! - A response is complete only once the first choice carried a
//!   `finish_reason`: then `data: [DONE]`, or a clean end of the body (llama.cpp
//!   forks and some proxies never send `[DONE]`), ends it. `[DONE]` without any
//!   `finish_reason` proves only that the body ended, not that the answer did
//!   (a proxy that lost the upstream still closes with it): it ends the stream
//!   with a `Network` error, an interruption. A body that ends with neither is
//!   an interruption too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use codesmith_protocol::{StopReason, Usage};
use serde_json::Value;

use crate::provider::{ProviderError, ProviderErrorKind, ProviderEvent};
use crate::sse::{SseDecoder, parse_json};
use crate::taxonomy::error_from_stream;
use crate::usage::UsageReader;

/// Counter for ids of calls the server sent without one.
static GENERATED_IDS: AtomicU64 = AtomicU64::new(1);

/// One tool call being assembled; its position in `calls` is its ordinal.
#[derive(Debug, Default)]
struct CallState {
    id: Option<String>,
    /// The tool named when the call started.
    name: Option<String>,
    started: bool,
    pending_args: String,
}

impl CallState {
    /// Starts the call as `name` (generating an id when the wire gave
    /// none), then releases the arguments held back until now.
    fn start(&mut self, ordinal: usize, name: &str, out: &mut Vec<ProviderEvent>) {
        self.started = true;
        self.name = Some(name.to_string());
        let id = self
            .id
            .clone()
            .unwrap_or_else(|| format!("call_cs{}", GENERATED_IDS.fetch_add(1, Ordering::Relaxed)));
        out.push(ProviderEvent::ToolCallStart {
            index: ordinal,
            id,
            name: name.to_string(),
        });
        if !self.pending_args.is_empty() {
            out.push(ProviderEvent::ToolCallDelta {
                index: ordinal,
                arguments: std::mem::take(&mut self.pending_args),
            });
        }
    }
}

/// Decoder state for one Chat Completions stream.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    /// Calls in the order they began.
    calls: Vec<CallState>,
    /// Wire index (or array position) → the ordinal of the call now at it.
    by_index: HashMap<u64, usize>,
    finish_reason: Option<String>,
    terminated: bool,
    usage: UsageReader,
    /// A call renamed after it started (set while decoding a delta, reported by `event`).
    renamed: Option<String>,
    /// True once the user was told that content after the finish was ignored.
    told_late: bool,
}

impl SseDecoder for OpenAiDecoder {
    fn event(
        &mut self,
        _event: &str,
        data: &str,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() || self.terminated {
            return Ok(());
        }
        if data == "[DONE]" {
            if self.finish_reason.is_none() {
                self.terminated = true;
                return Err(ProviderError::new(
                    ProviderErrorKind::Network,
                    "openai: the stream ended with [DONE] but no choice carried a finish_reason, so the \
                     response cannot be proven complete (interrupted upstream)",
                ));
            }
            self.complete(out);
            return Ok(());
        }
        let chunk = parse_json("openai", data, Self::carries_arguments)?;
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let usage = self.parse_usage(usage, out);
            out.push(ProviderEvent::Usage(usage));
        }
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(error));
        }
        // Only the first choice (`index` 0) is the answer: a request asks for one, and a
        // server that sends others must not add calls to it.
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| {
                choices
                    .iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            })
        else {
            return Ok(());
        };
        // A finished choice is final: deltas after its `finish_reason` (a late call, an
        // argument rewritten after the fact) are ignored, and the first finish reason stands.
        if let Some(reason) = &self.finish_reason {
            if !self.told_late && choice.get("delta").is_some_and(carries_content) {
                self.told_late = true;
                out.push(ProviderEvent::Notice(format!(
                    "openai sent more text or tool calls after the answer's finish_reason `{}`; a \
                     finished answer is final, so that part was ignored",
                    codesmith_policy::visible_line(reason, 32)
                )));
            }
            return Ok(());
        }
        if let Some(delta) = choice.get("delta") {
            self.decode_delta(delta, out);
        }
        if let Some(what) = self.renamed.take() {
            self.terminated = true;
            return Err(ProviderError::new(
                ProviderErrorKind::Internal,
                format!(
                    "openai: {what}; which tool was meant cannot be known, so the call was not used"
                ),
            ));
        }
        if let Some(reason) = finish_reason(choice) {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(())
    }

    fn is_terminated(&self) -> bool {
        self.terminated
    }

    fn end_of_body(&mut self, out: &mut Vec<ProviderEvent>) {
        if self.finish_reason.is_some() && !self.terminated {
            self.complete(out);
        }
    }

    fn decode_whole(body: &Value) -> Result<Vec<ProviderEvent>, ProviderError> {
        let mut out = Vec::new();
        let mut decoder = OpenAiDecoder::default();
        if let Some(usage) = body.get("usage").filter(|u| u.is_object()) {
            let usage = decoder.parse_usage(usage, &mut out);
            out.push(ProviderEvent::Usage(usage));
        }
        if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(error));
        }
        let choice = body.pointer("/choices/0");
        if let Some(message) = choice.and_then(|c| c.get("message")) {
            decoder.decode_delta(message, &mut out);
        }
        decoder.start_nameless_calls(&mut out);
        out.push(ProviderEvent::Completed {
            stop_reason: choice.and_then(finish_reason).map(map_finish_reason),
        });
        Ok(out)
    }

    /// A chunk's (or whole message's) `function.arguments` given as a JSON
    /// value rather than text.
    fn carries_arguments(value: &Value) -> bool {
        let parsed = |calls: Option<&Value>| {
            calls.and_then(Value::as_array).is_some_and(|calls| {
                calls.iter().any(|c| {
                    c.pointer("/function/arguments")
                        .is_some_and(|a| !a.is_string() && !a.is_null())
                })
            })
        };
        value
            .get("choices")
            .and_then(Value::as_array)
            .is_some_and(|choices| {
                choices.iter().any(|c| {
                    parsed(c.pointer("/delta/tool_calls"))
                        || parsed(c.pointer("/message/tool_calls"))
                })
            })
    }
}

/// A choice's non-empty `finish_reason`.
fn finish_reason(choice: &Value) -> Option<&str> {
    choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
}

/// A non-empty string field.
fn non_empty_str<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

impl OpenAiDecoder {
    /// Reads `prompt_tokens`, `completion_tokens` and the cached-prompt count
    /// (`prompt_tokens_details.cached_tokens`, or DeepSeek's
    /// `prompt_cache_hit_tokens`); an invalid figure counts as absent and
    /// adds a notice to `out`.
    fn parse_usage(&mut self, usage: &Value, out: &mut Vec<ProviderEvent>) -> Usage {
        let mut num = |ptr: &str| self.usage.count("openai", usage, ptr, out);
        let input_tokens = num("/prompt_tokens").unwrap_or(0);
        let output_tokens = num("/completion_tokens").unwrap_or(0);
        let cached = num("/prompt_tokens_details/cached_tokens");
        let hits = num("/prompt_cache_hit_tokens");
        Usage {
            input_tokens,
            output_tokens,
            cached_input_tokens: cached.or(hits).unwrap_or(0),
            cache_write_input_tokens: 0,
        }
    }

    fn complete(&mut self, out: &mut Vec<ProviderEvent>) {
        self.terminated = true;
        self.start_nameless_calls(out);
        if self.calls.is_empty()
            && self.finish_reason.as_deref().map(map_finish_reason) == Some(StopReason::ToolUse)
        {
            out.push(ProviderEvent::Notice(
                "openai ended the answer with finish_reason `tool_calls` but sent no tool call; \
                 the turn ends without one"
                    .to_string(),
            ));
        }
        out.push(ProviderEvent::Completed {
            stop_reason: self.finish_reason.as_deref().map(map_finish_reason),
        });
    }

    /// A call whose deltas never named a tool (an empty or missing `name`)
    /// is still a call the model made: it is started with an empty name so
    /// that the model is told there is no such tool, instead of the call
    /// vanishing without a word.
    fn start_nameless_calls(&mut self, out: &mut Vec<ProviderEvent>) {
        for (ordinal, state) in self.calls.iter_mut().enumerate() {
            if state.started {
                continue;
            }
            state.start(ordinal, "", out);
        }
    }

    /// Decodes a streamed `delta` or a whole `message`.
    fn decode_delta(&mut self, delta: &Value, out: &mut Vec<ProviderEvent>) {
        if let Some(text) = ["reasoning_content", "reasoning"]
            .iter()
            .find_map(|key| delta.get(*key).and_then(Value::as_str))
            .filter(|t| !t.is_empty())
        {
            out.push(ProviderEvent::ThinkingDelta(text.to_string()));
        }
        match delta.get("content") {
            Some(Value::String(text)) if !text.is_empty() => {
                out.push(ProviderEvent::TextDelta(text.clone()));
            }
            Some(Value::Array(parts)) => decode_parts(parts, false, out),
            _ => {}
        }
        if let Some(text) = non_empty_str(delta, "refusal") {
            out.push(ProviderEvent::RefusalDelta(text.to_string()));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, call) in calls.iter().enumerate() {
                self.decode_call(position as u64, call, out);
            }
        }
    }

    /// The ordinal of the call a tool-call delta belongs to, creating the
    /// call when the delta starts one. The index is the wire `index`, else
    /// the delta's position in the array. A known `id` names its call; a new
    /// `id` at an index in use starts a new call when the delta names a tool
    /// (a server that sends every call at index 0), and is a continuation of
    /// the call there otherwise (a proxy that sends a fresh id per chunk).
    fn call_for(&mut self, position: u64, call: &Value) -> usize {
        let index = call
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position);
        let id = non_empty_str(call, "id");
        let at_index = self.by_index.get(&index).copied();
        let ordinal = match id {
            Some(id) => {
                let known = self.calls.iter().position(|c| c.id.as_deref() == Some(id));
                let names_a_tool = call
                    .get("function")
                    .and_then(|f| non_empty_str(f, "name"))
                    .is_some();
                match (known, at_index) {
                    (Some(ordinal), _) => ordinal,
                    (None, Some(ordinal)) if self.calls[ordinal].id.is_none() || !names_a_tool => {
                        ordinal
                    }
                    (None, _) => self.new_call(),
                }
            }
            None => at_index.unwrap_or_else(|| self.new_call()),
        };
        self.by_index.insert(index, ordinal);
        ordinal
    }

    fn new_call(&mut self) -> usize {
        self.calls.push(CallState::default());
        self.calls.len() - 1
    }

    fn decode_call(&mut self, position: u64, call: &Value, out: &mut Vec<ProviderEvent>) {
        let ordinal = self.call_for(position, call);
        let state = &mut self.calls[ordinal];
        if let Some(id) = non_empty_str(call, "id") {
            state.id.get_or_insert_with(|| id.to_string());
        }
        let function = call.get("function");
        let name = function.and_then(|f| non_empty_str(f, "name"));
        let args = function
            .and_then(|f| f.get("arguments"))
            .map(arguments_text)
            .unwrap_or_default();
        if !state.started {
            state.pending_args.push_str(&args);
            if let Some(name) = name {
                state.start(ordinal, name, out);
            }
        } else if let Some(renamed) = name.filter(|n| state.name.as_deref() != Some(*n)) {
            // Servers may repeat a call's name in later deltas; a different name is a
            // different call glued onto this one, and running either would be a guess.
            let started = state.name.as_deref().unwrap_or_default();
            self.renamed = Some(format!(
                "a tool call that started as `{}` was later named `{}`",
                codesmith_policy::visible_line(started, 64),
                codesmith_policy::visible_line(renamed, 64)
            ));
        } else if !args.is_empty() {
            out.push(ProviderEvent::ToolCallDelta {
                index: ordinal,
                arguments: args,
            });
        }
    }
}

/// True when a delta carries something the answer would show or run: text, thinking
/// or a tool call (a bare role or an empty string does not count).
fn carries_content(delta: &Value) -> bool {
    let text = |key: &str| {
        delta
            .get(key)
            .is_some_and(|v| v.as_str().is_none_or(|t| !t.is_empty()) && !v.is_null())
    };
    text("content")
        || text("reasoning_content")
        || text("reasoning")
        || delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|calls| !calls.is_empty())
}

/// `function.arguments` as text: a string fragment as sent; a JSON value
/// the server already parsed (object, array, ...) as its JSON text; `null`
/// as nothing.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Content given as an array of typed parts: `text` parts are answer text
/// (thinking text inside a `thinking` part), `thinking` parts hold a string
/// or nested parts. Other part types (images, audio) carry no text.
fn decode_parts(parts: &[Value], thinking: bool, out: &mut Vec<ProviderEvent>) {
    let emit = |text: &str, thinking: bool, out: &mut Vec<ProviderEvent>| {
        if !text.is_empty() {
            out.push(if thinking {
                ProviderEvent::ThinkingDelta(text.to_string())
            } else {
                ProviderEvent::TextDelta(text.to_string())
            });
        }
    };
    for part in parts {
        match part {
            Value::String(text) => emit(text, thinking, out),
            Value::Object(_) => match part.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(text) = part.get("text").and_then(Value::as_str) {
                        emit(text, thinking, out);
                    }
                }
                Some("thinking" | "reasoning") => {
                    match part.get("thinking").or_else(|| part.get("text")) {
                        Some(Value::String(text)) => emit(text, true, out),
                        Some(Value::Array(inner)) => decode_parts(inner, true, out),
                        _ => {}
                    }
                }
                _ => {}
            },
            _ => {}
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

/// The error for an `error` object: `{"message", "type" | "code"}` (the
/// code may be a number, as OpenRouter sends it), or a bare string.
fn stream_error(error: &Value) -> ProviderError {
    let kind = match error.get("type").or_else(|| error.get("code")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "error".to_string(),
    };
    let message = match error {
        Value::String(text) => text.clone(),
        _ => error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| error.to_string()),
    };
    error_from_stream("openai", &kind, &message)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn feed(decoder: &mut OpenAiDecoder, delta: &str) -> Vec<ProviderEvent> {
        let chunk = format!(r#"{{"choices":[{{"index":0,"delta":{delta}}}]}}"#);
        let mut out = Vec::new();
        decoder.event("message", &chunk, &mut out).unwrap();
        out
    }

    fn starts(events: &[ProviderEvent]) -> Vec<(usize, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::ToolCallStart { index, id, .. } => Some((*index, id.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let mut d = OpenAiDecoder::default();
        let a = r#"{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}"#;
        let b = r#"{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{\"x\":1}"}}]}"#;
        let mut events = feed(&mut d, a);
        events.extend(feed(&mut d, b));
        assert_eq!(
            starts(&events),
            vec![(0, "a".to_string()), (1, "b".to_string())]
        );
    }

    #[test]
    fn a_new_id_at_a_used_index_starts_a_new_call() {
        let mut d = OpenAiDecoder::default();
        let mut events = feed(
            &mut d,
            r#"{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"p\":"}}]}"#,
        );
        events.extend(feed(
            &mut d,
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}"#,
        ));
        events.extend(feed(
            &mut d,
            r#"{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{}"}}]}"#,
        ));
        events.extend(feed(
            &mut d,
            r#"{"tool_calls":[{"index":0,"id":"b","function":{"arguments":""}}]}"#,
        ));
        assert_eq!(
            starts(&events),
            vec![(0, "a".to_string()), (1, "b".to_string())]
        );
        let args = |i: usize| -> String {
            events
                .iter()
                .filter_map(|e| match e {
                    ProviderEvent::ToolCallDelta { index, arguments } if *index == i => {
                        Some(arguments.as_str())
                    }
                    _ => None,
                })
                .collect()
        };
        assert_eq!(args(0), r#"{"p":1}"#);
        assert_eq!(args(1), "{}");
    }

    #[test]
    fn deltas_without_index_or_id_follow_their_array_position() {
        let mut d = OpenAiDecoder::default();
        let mut events = feed(
            &mut d,
            r#"{"tool_calls":[{"id":"a","function":{"name":"f","arguments":""}},{"id":"b","function":{"name":"g","arguments":""}}]}"#,
        );
        events.extend(feed(
            &mut d,
            r#"{"tool_calls":[{"function":{"arguments":"{\"a\":1}"}},{"function":{"arguments":"{\"b\":2}"}}]}"#,
        ));
        assert!(events.contains(&ProviderEvent::ToolCallDelta {
            index: 0,
            arguments: r#"{"a":1}"#.into()
        }));
        assert!(events.contains(&ProviderEvent::ToolCallDelta {
            index: 1,
            arguments: r#"{"b":2}"#.into()
        }));
    }

    #[test]
    fn parsed_arguments_are_taken_as_json_text() {
        let mut d = OpenAiDecoder::default();
        let events = feed(
            &mut d,
            r#"{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":{"path":"o.txt"}}}]}"#,
        );
        assert_eq!(
            events[1],
            ProviderEvent::ToolCallDelta {
                index: 0,
                arguments: r#"{"path":"o.txt"}"#.into()
            }
        );
    }

    #[test]
    fn a_call_that_never_names_a_tool_is_still_reported() {
        let mut decoder = OpenAiDecoder::default();
        let mut out = Vec::new();
        let chunk = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
        decoder.event("message", chunk, &mut out).unwrap();
        decoder.event("message", "[DONE]", &mut out).unwrap();
        assert!(
            matches!(&out[0], ProviderEvent::ToolCallStart { id, name, .. } if id == "a" && name.is_empty()),
            "{out:?}"
        );
        assert!(
            matches!(&out[1], ProviderEvent::ToolCallDelta { arguments, .. } if arguments == "{}")
        );
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

    #[test]
    fn content_parts_refusals_and_null_errors_are_read() {
        let mut d = OpenAiDecoder::default();
        let events = feed(
            &mut d,
            r#"{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]},{"type":"text","text":"ok"}]}"#,
        );
        assert_eq!(
            events,
            vec![
                ProviderEvent::ThinkingDelta("hm".into()),
                ProviderEvent::TextDelta("ok".into())
            ]
        );
        let events = feed(&mut d, r#"{"content":null,"refusal":"no"}"#);
        assert_eq!(events, vec![ProviderEvent::RefusalDelta("no".into())]);
        let mut out = Vec::new();
        let chunk = r#"{"error":null,"choices":[{"index":0,"delta":{"content":"x"}}]}"#;
        d.event("message", chunk, &mut out).unwrap();
        assert_eq!(out, vec![ProviderEvent::TextDelta("x".into())]);
    }

    #[test]
    fn an_error_chunk_still_reports_its_usage() {
        let mut d = OpenAiDecoder::default();
        let mut out = Vec::new();
        let chunk = r#"{"error":{"code":400,"message":"Token limit reached"},"choices":[],"usage":{"prompt_tokens":43,"completion_tokens":10}}"#;
        let err = d.event("message", chunk, &mut out).unwrap_err();
        assert!(
            err.message.contains("Token limit reached"),
            "{}",
            err.message
        );
        assert!(err.message.contains("400"), "{}", err.message);
        assert_eq!(
            out,
            vec![ProviderEvent::Usage(Usage {
                input_tokens: 43,
                output_tokens: 10,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
            })]
        );
    }

    #[test]
    fn a_call_renamed_mid_stream_is_refused_and_a_repeated_name_is_not() {
        let mut d = OpenAiDecoder::default();
        feed(
            &mut d,
            r#"{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"path\""}}]}"#,
        );
        // The same name again (some servers repeat it in every delta) is fine.
        let same = feed(
            &mut d,
            r#"{"tool_calls":[{"index":0,"function":{"name":"read_file","arguments":":"}}]}"#,
        );
        assert_eq!(
            same,
            vec![ProviderEvent::ToolCallDelta {
                index: 0,
                arguments: ":".into()
            }]
        );
        let chunk = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"write_file","arguments":"\"x\"}"}}]}}]}"#;
        let mut out = Vec::new();
        let err = d.event("message", chunk, &mut out).unwrap_err();
        assert!(
            err.message
                .contains("started as `read_file` was later named `write_file`"),
            "{}",
            err.message
        );
        assert!(out.is_empty(), "{out:?}");
        assert!(d.is_terminated());
    }

    #[test]
    fn ignored_late_content_and_a_tool_use_finish_without_calls_are_told() {
        let mut d = OpenAiDecoder::default();
        let mut out = Vec::new();
        for chunk in [
            r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"late"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"later"}}]}"#,
        ] {
            d.event("message", chunk, &mut out).unwrap();
        }
        d.end_of_body(&mut out);
        let notices: Vec<&String> = out
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::Notice(n) => Some(n),
                _ => None,
            })
            .collect();
        assert_eq!(notices.len(), 2, "{out:?}");
        assert!(notices[0].contains("after the answer's finish_reason `tool_calls`"));
        assert!(notices[1].contains("sent no tool call"));
        assert!(!format!("{out:?}").contains("late"), "{out:?}");
    }

    #[test]
    fn nothing_after_the_finish_or_outside_the_first_choice_counts() {
        let mut decoder = OpenAiDecoder::default();
        let events = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"write_file","arguments":"{\"path\":\"safe.txt\""}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":",\"path\":\"evil.txt\"}"}},{"index":1,"id":"b","function":{"name":"exec_shell","arguments":"{}"}}]},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"exec_shell","arguments":"{}"}}]}}]}"#,
        ]
        .iter()
        .flat_map(|data| {
            let mut out = Vec::new();
            decoder.event("message", data, &mut out).unwrap();
            out
        })
        .collect::<Vec<_>>();
        assert_eq!(starts(&events).len(), 1, "{events:?}");
        let text = format!("{events:?}");
        assert!(!text.contains("evil.txt"), "{text}");
        assert_eq!(decoder.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn a_clean_end_after_finish_reason_completes_and_without_it_does_not() {
        let mut d = OpenAiDecoder::default();
        let mut out = Vec::new();
        d.event(
            "message",
            r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}"#,
            &mut out,
        )
        .unwrap();
        d.end_of_body(&mut out);
        assert_eq!(
            out.last(),
            Some(&ProviderEvent::Completed {
                stop_reason: Some(StopReason::EndTurn)
            })
        );
        let mut d = OpenAiDecoder::default();
        let mut out = Vec::new();
        d.event(
            "message",
            r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#,
            &mut out,
        )
        .unwrap();
        d.end_of_body(&mut out);
        assert_eq!(out, vec![ProviderEvent::TextDelta("hi".into())]);
    }
}
