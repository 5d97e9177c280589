//! Scripted turns rendered as SSE events in each dialect.

use serde_json::{Value, json};

use crate::script::{Finish, Scripted};

/// The wire dialect, chosen by the endpoint that was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAI Chat Completions (`POST …/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST …/messages`).
    Anthropic,
}

/// One SSE event as text, and whether it carries content.
#[derive(Debug, Clone)]
pub(crate) struct SseEvent {
    pub(crate) text: String,
    pub(crate) content: bool,
    pub(crate) terminal: bool,
}

impl SseEvent {
    fn data(value: &Value, content: bool) -> Self {
        SseEvent {
            text: format!("data: {value}\n\n"),
            content,
            terminal: false,
        }
    }

    fn named(name: &str, value: &Value, content: bool) -> Self {
        SseEvent {
            text: format!("event: {name}\ndata: {value}\n\n"),
            content,
            terminal: false,
        }
    }
}

/// Renders `turn` as the full SSE event list for `dialect`.
pub(crate) fn render(turn: &Scripted, dialect: Dialect) -> Vec<SseEvent> {
    match dialect {
        Dialect::OpenAi => openai(turn),
        Dialect::Anthropic => anthropic(turn),
    }
}

/// Renders `turn` as one non-streamed JSON response body for `dialect`.
pub(crate) fn render_whole(turn: &Scripted, dialect: Dialect) -> String {
    let (input, output) = usage_of(turn, 1);
    let finish = turn.effective_finish();
    match dialect {
        Dialect::OpenAi => {
            let calls: Vec<Value> = turn
                .tool_calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            let mut message = json!({"role": "assistant",
                                     "content": if turn.text.is_empty() { Value::Null } else { json!(turn.text) }});
            if !turn.thinking.is_empty() {
                message["reasoning_content"] = json!(turn.thinking);
            }
            if !calls.is_empty() {
                message["tool_calls"] = Value::Array(calls);
            }
            json!({"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
                   "model": "scripted",
                   "choices": [{"index": 0, "message": message, "finish_reason": openai_finish(&finish)}],
                   "usage": {"prompt_tokens": input, "completion_tokens": output,
                             "total_tokens": input + output}})
            .to_string()
        }
        Dialect::Anthropic => {
            let mut content = Vec::new();
            if !turn.thinking.is_empty() {
                content.push(json!({"type": "thinking", "thinking": turn.thinking,
                                    "signature": "scripted-signature"}));
            }
            if !turn.text.is_empty() {
                content.push(json!({"type": "text", "text": turn.text}));
            }
            for c in &turn.tool_calls {
                let input: Value = serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                content
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            json!({"id": "msg_scripted", "type": "message", "role": "assistant",
                   "model": "scripted", "content": content,
                   "stop_reason": anthropic_stop(&finish), "stop_sequence": null,
                   "usage": {"input_tokens": input, "output_tokens": output}})
            .to_string()
        }
    }
}

fn openai_finish(finish: &Finish) -> Value {
    match finish {
        Finish::Stop => json!("stop"),
        Finish::ToolCalls => json!("tool_calls"),
        Finish::Length => json!("length"),
        Finish::ContentFilter => json!("content_filter"),
        Finish::Omitted => Value::Null,
        Finish::Other(s) => json!(s),
    }
}

fn anthropic_stop(finish: &Finish) -> Value {
    match finish {
        Finish::Stop => json!("end_turn"),
        Finish::ToolCalls => json!("tool_use"),
        Finish::Length => json!("max_tokens"),
        Finish::ContentFilter => json!("refusal"),
        Finish::Omitted => Value::Null,
        Finish::Other(s) => json!(s),
    }
}

fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// The visible text's deltas: cut at [`Scripted::cut_text_at`]'s offsets when it
/// set any, else every `chunk_chars` characters.
fn text_pieces(turn: &Scripted) -> Vec<String> {
    if turn.text_cuts.is_empty() {
        return pieces(&turn.text, turn.chunk_chars);
    }
    let text = &turn.text;
    let mut cuts: Vec<usize> = turn
        .text_cuts
        .iter()
        .copied()
        .filter(|&at| at > 0 && at < text.len() && text.is_char_boundary(at))
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.push(text.len());
    let mut start = 0;
    let mut out = Vec::new();
    for end in cuts {
        out.push(text[start..end].to_string());
        start = end;
    }
    out.retain(|p| !p.is_empty());
    out
}

fn usage_of(turn: &Scripted, content_events: usize) -> (u64, u64) {
    turn.usage.unwrap_or((10, content_events.max(1) as u64))
}

fn openai(turn: &Scripted) -> Vec<SseEvent> {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
               "model": "scripted", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut out = vec![SseEvent::data(
        &chunk(json!({"role": "assistant"}), Value::Null),
        false,
    )];
    for p in pieces(&turn.thinking, turn.chunk_chars) {
        out.push(SseEvent::data(
            &chunk(json!({"reasoning_content": p}), Value::Null),
            true,
        ));
    }
    for p in text_pieces(turn) {
        out.push(SseEvent::data(
            &chunk(json!({"content": p}), Value::Null),
            true,
        ));
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        let head = json!({"tool_calls": [{"index": i, "id": call.id, "type": "function",
                          "function": {"name": call.name, "arguments": ""}}]});
        out.push(SseEvent::data(&chunk(head, Value::Null), true));
        for p in pieces(&call.arguments, turn.chunk_chars) {
            let d = json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]});
            out.push(SseEvent::data(&chunk(d, Value::Null), true));
        }
    }
    let finish = openai_finish(&turn.effective_finish());
    if !finish.is_null() {
        out.push(SseEvent::data(&chunk(json!({}), finish), false));
    }
    let content_events = out.iter().filter(|e| e.content).count();
    let (input, output) = usage_of(turn, content_events);
    let usage = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
                       "model": "scripted", "choices": [],
                       "usage": {"prompt_tokens": input, "completion_tokens": output,
                                 "total_tokens": input + output}});
    out.push(SseEvent::data(&usage, false));
    out.push(SseEvent {
        text: "data: [DONE]\n\n".to_string(),
        content: false,
        terminal: true,
    });
    out
}

fn anthropic(turn: &Scripted) -> Vec<SseEvent> {
    let mut body = Vec::new();
    let mut index = 0usize;
    if !turn.thinking.is_empty() {
        body.push(SseEvent::named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "thinking", "thinking": ""}}),
            false,
        ));
        for p in pieces(&turn.thinking, turn.chunk_chars) {
            body.push(block_delta(
                index,
                json!({"type": "thinking_delta", "thinking": p}),
            ));
        }
        body.push(SseEvent::named(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "signature_delta", "signature": "scripted-signature"}}),
            false,
        ));
        body.push(block_stop(index));
        index += 1;
    }
    if !turn.text.is_empty() {
        body.push(SseEvent::named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
            false,
        ));
        for p in text_pieces(turn) {
            body.push(block_delta(index, json!({"type": "text_delta", "text": p})));
        }
        body.push(block_stop(index));
        index += 1;
    }
    for call in &turn.tool_calls {
        body.push(SseEvent::named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call.id, "name": call.name,
                                      "input": {}}}),
            true,
        ));
        for p in pieces(&call.arguments, turn.chunk_chars) {
            body.push(block_delta(
                index,
                json!({"type": "input_json_delta", "partial_json": p}),
            ));
        }
        body.push(block_stop(index));
        index += 1;
    }
    let content_events = body.iter().filter(|e| e.content).count();
    let (input, output) = usage_of(turn, content_events);
    let mut out = vec![
        SseEvent::named(
            "message_start",
            &json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message",
                    "role": "assistant", "model": "scripted", "content": [], "stop_reason": null,
                    "stop_sequence": null, "usage": anthropic_usage(turn, input)}}),
            false,
        ),
        SseEvent::named("ping", &json!({"type": "ping"}), false),
    ];
    out.extend(body);
    let stop = anthropic_stop(&turn.effective_finish());
    out.push(SseEvent::named(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": output}}),
        false,
    ));
    let mut stop_event = SseEvent::named("message_stop", &json!({"type": "message_stop"}), false);
    stop_event.terminal = true;
    out.push(stop_event);
    out
}

fn block_delta(index: usize, delta: Value) -> SseEvent {
    SseEvent::named(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        true,
    )
}

fn block_stop(index: usize) -> SseEvent {
    SseEvent::named(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
        false,
    )
}

/// `message_start` usage: the scripted input, or what the prompt-cache model computed.
fn anthropic_usage(turn: &Scripted, input: u64) -> Value {
    match &turn.cache {
        Some(c) => json!({"input_tokens": c.input_tokens,
                          "cache_read_input_tokens": c.cache_read_input_tokens,
                          "cache_creation_input_tokens": c.cache_creation_input_tokens,
                          "output_tokens": 1}),
        None => json!({"input_tokens": input, "output_tokens": 1}),
    }
}
