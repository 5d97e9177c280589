//! Neutral request → Messages API body.
//!
//! Thinking blocks are dropped: the transcript keeps thinking as plain text
//! without the vendor's signature, and the API
//! rejects a thinking block whose signature is missing or foreign. Empty
//! text blocks are skipped (the API rejects them), and so is a message left
//! with no blocks. Tool results come first in their user message, as the
//! API requires. Images travel as `image` blocks (base64 source): a result's images
//! inside its `tool_result`, a person's attached images in place; a model configured
//! with `images = false` reads a short text in their place.

use codesmith_protocol::{ContentBlock, ImagePart, Message, Role, ToolResult};
use serde_json::{Map, Value, json};

use crate::provider::ChatRequest;

/// Smallest prefix, in tokens, that Anthropic caches for `model`: 2,048 for
/// Haiku-class models, 1,024 for Sonnet- and Opus-class ones (Anthropic's
/// prompt-caching documentation). A marker on a shorter prefix is ignored by
/// the API, so none is placed there.
pub(super) fn min_cacheable_tokens(model: &str) -> u64 {
    if model.to_ascii_lowercase().contains("haiku") {
        2048
    } else {
        1024
    }
}

/// A generous token estimate of `bytes` of prompt: 3 bytes per token (real
/// text and JSON average more), so a prefix that could reach the minimum
/// cacheable length is never left without its marker.
fn generous_tokens(bytes: usize) -> u64 {
    bytes.div_ceil(3) as u64
}

/// Renders `request` as a streaming Messages body.
///
/// With `cache_prompt`, rolling prompt-cache breakpoints (`cache_control:
/// ephemeral`; the API allows four, three are used) are placed where the prefix
/// reaches [`min_cacheable_tokens`]:
/// - the system prompt, sent as one text block (it closes the byte-stable
///   tool catalogue and system prompt, which precede the messages);
/// - the last content block of the previous request's newest message (the
///   user message before the latest assistant message), so the API finds the
///   cache entry the previous request wrote however many blocks the latest
///   tool batch added (its lookback from a breakpoint spans about 20 blocks,
///   per Anthropic's prompt-caching documentation);
/// - the last content block of the latest message, which writes the entry
///   the next request reads.
///
/// Only the markers move between requests: every content byte stays as it was,
/// so each request remains a byte-extension of the previous one.
pub(crate) fn render_request(
    request: &ChatRequest,
    default_max_tokens: u32,
    cache_prompt: bool,
    images: bool,
) -> Value {
    let mut messages: Vec<Value> = request
        .messages
        .iter()
        .filter_map(|m| render_message(m, images))
        .collect();
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert(
        "max_tokens".into(),
        json!(request.max_tokens.unwrap_or(default_max_tokens)),
    );
    if !request.system.is_empty() {
        let system = if cache_prompt {
            let mut block = json!({"type": "text", "text": request.system});
            let prefix = serialized_len(&tools) + request.system.len();
            if generous_tokens(prefix) >= min_cacheable_tokens(&request.model) {
                block["cache_control"] = json!({"type": "ephemeral"});
            }
            json!([block])
        } else {
            json!(request.system)
        };
        body.insert("system".into(), system);
    }
    if cache_prompt {
        let base = serialized_len(&tools) + request.system.len();
        mark_message_tails(&mut messages, base, min_cacheable_tokens(&request.model));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if !request.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(request.stop));
    }
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

/// Bytes of `values` serialized (an estimate's input; unserializable counts 0).
fn serialized_len(values: &[Value]) -> usize {
    values
        .iter()
        .map(|v| serde_json::to_vec(v).map_or(0, |b| b.len()))
        .sum()
}

/// Marks the last block of the latest message and of the previous request's
/// newest message (the message before the latest assistant message), when
/// the prefix up to it can be cached. `base` is the byte size of what precedes
/// the messages (tools and system prompt).
fn mark_message_tails(messages: &mut [Value], base: usize, min_tokens: u64) {
    let Some(latest) = messages.len().checked_sub(1) else {
        return;
    };
    let previous = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .filter(|&i| i < latest)
        .and_then(|i| i.checked_sub(1));
    let mut prefix = base;
    for (i, message) in messages.iter_mut().enumerate() {
        prefix += serde_json::to_vec(&message["content"]).map_or(0, |b| b.len());
        if (i == latest || Some(i) == previous)
            && generous_tokens(prefix) >= min_tokens
            && let Some(last) = message["content"]
                .as_array_mut()
                .and_then(|blocks| blocks.last_mut())
        {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
    }
}

/// An `image` block for `part`, or the text block sent in its place.
fn image_block(part: &ImagePart, images: bool) -> Value {
    match crate::image::omitted(part, images) {
        Some(text) => json!({"type": "text", "text": text}),
        None => json!({"type": "image", "source": {
            "type": "base64",
            "media_type": part.media_type,
            "data": crate::image::base64(part),
        }}),
    }
}

/// A `tool_result`'s `content`: its text alone, or, when it carries images, a list of
/// its text block and then one block per image.
fn result_content(result: &ToolResult, images: bool) -> Value {
    if result.images.is_empty() {
        return json!(result.content);
    }
    let mut blocks = Vec::with_capacity(result.images.len() + 1);
    if !result.content.is_empty() {
        blocks.push(json!({"type": "text", "text": result.content}));
    }
    blocks.extend(result.images.iter().map(|part| image_block(part, images)));
    Value::Array(blocks)
}

fn render_message(message: &Message, images: bool) -> Option<Value> {
    let mut results = Vec::new();
    let mut blocks = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                blocks.push(json!({"type": "text", "text": text}));
            }
            ContentBlock::Text { .. } | ContentBlock::Thinking { .. } => {}
            ContentBlock::ToolCall(call) => blocks.push(json!({
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": tool_input(&call.arguments),
            })),
            ContentBlock::ToolResult(result) => {
                let mut r = Map::new();
                r.insert("type".into(), json!("tool_result"));
                r.insert("tool_use_id".into(), json!(result.call_id));
                r.insert("content".into(), result_content(result, images));
                if result.is_error {
                    r.insert("is_error".into(), json!(true));
                }
                results.push(Value::Object(r));
            }
            ContentBlock::Image(part) => blocks.push(image_block(part, images)),
        }
    }
    results.extend(blocks);
    if results.is_empty() {
        return None;
    }
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    Some(json!({"role": role, "content": results}))
}

/// The API wants `input` as an object: the arguments read by the shared
/// strict reader when they are one, else `{}` (a malformed or ambiguous call
/// was already answered with a refusal).
fn tool_input(arguments: &str) -> Value {
    match codesmith_protocol::parse_arguments(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use codesmith_protocol::{ContentBlock, Message, Role, ToolCall, ToolResult};
    use serde_json::json;

    use super::*;

    /// Most `cache_control` breakpoints one request may carry (the API rejects more).
    const MAX_CACHE_BREAKPOINTS: usize = 4;

    #[test]
    fn renders_blocks_and_drops_thinking() {
        let request = ChatRequest {
            model: "claude".into(),
            system: "sys".into(),
            messages: vec![
                Message::user_text("hi"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentBlock::Thinking { text: "hmm".into() },
                        ContentBlock::Text {
                            text: String::new(),
                        },
                        ContentBlock::ToolCall(ToolCall {
                            id: "t1".into(),
                            name: "read_file".into(),
                            arguments: r#"{"path":"a"}"#.into(),
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        ContentBlock::Text {
                            text: "also".into(),
                        },
                        ContentBlock::ToolResult(ToolResult {
                            call_id: "t1".into(),
                            content: "nope".into(),
                            is_error: true,
                            images: Vec::new(),
                        }),
                    ],
                },
            ],
            tools: vec![],
            max_tokens: None,
            temperature: None,
            stop: vec!["END".into()],
            prompt_cache_key: None,
        };
        let cached = render_request(&request, 1234, true, true);
        // Far below the minimum cacheable length: the block form, but no marker anywhere.
        assert_eq!(cached["system"], json!([{"type": "text", "text": "sys"}]));
        assert!(!cached.to_string().contains("cache_control"));
        let body = render_request(&request, 1234, false, true);
        assert_eq!(body["max_tokens"], json!(1234));
        assert_eq!(body["system"], json!("sys"));
        assert_eq!(body["stop_sequences"], json!(["END"]));
        let m = &body["messages"];
        assert_eq!(m[0]["content"], json!([{"type": "text", "text": "hi"}]));
        assert_eq!(
            m[1]["content"],
            json!([{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}])
        );
        assert_eq!(m[2]["content"][0]["type"], json!("tool_result"));
        assert_eq!(m[2]["content"][0]["is_error"], json!(true));
        assert_eq!(m[2]["content"][1], json!({"type": "text", "text": "also"}));
    }

    fn turn(i: usize) -> [Message; 2] {
        [
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolCall(ToolCall {
                    id: format!("c{i}"),
                    name: "read_file".into(),
                    arguments: format!(r#"{{"path":"f{i}"}}"#),
                })],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult(ToolResult {
                    call_id: format!("c{i}"),
                    content: "x".repeat(900),
                    is_error: false,
                    images: Vec::new(),
                })],
            },
        ]
    }

    fn markers(body: &Value) -> Vec<String> {
        let mut out = Vec::new();
        if body["system"][0].get("cache_control").is_some() {
            out.push("system".to_string());
        }
        for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
            for (j, b) in m["content"].as_array().unwrap().iter().enumerate() {
                if b.get("cache_control").is_some() {
                    out.push(format!("{i}.{j}"));
                }
            }
        }
        out
    }

    #[test]
    fn breakpoints_roll_with_the_conversation_and_only_markers_change() {
        let mut request = ChatRequest {
            model: "claude-sonnet-4-5".into(),
            system: "s".repeat(4000),
            messages: vec![Message::user_text("task")],
            tools: vec![],
            max_tokens: None,
            temperature: None,
            stop: vec![],
            prompt_cache_key: None,
        };
        let strip = |v: &Value| {
            v.to_string()
                .replace(r#""cache_control":{"type":"ephemeral"},"#, "")
        };
        let first = render_request(&request, 100, true, true);
        assert_eq!(markers(&first), ["system", "0.0"]);
        request.messages.extend(turn(1));
        let second = render_request(&request, 100, true, true);
        assert_eq!(markers(&second), ["system", "0.0", "2.0"]);
        request.messages.extend(turn(2));
        let third = render_request(&request, 100, true, true);
        // The previous tail and the new one; the older marker has moved on.
        assert_eq!(markers(&third), ["system", "2.0", "4.0"]);
        assert!(markers(&third).len() <= MAX_CACHE_BREAKPOINTS);
        // Without the markers, each body's messages extend the previous ones byte for byte.
        let (a, b) = (strip(&second["messages"]), strip(&third["messages"]));
        assert!(b.starts_with(a.trim_end_matches(']')), "{a}\n{b}");
    }

    #[test]
    fn haiku_needs_the_longer_minimum() {
        assert_eq!(min_cacheable_tokens("claude-haiku-4-5"), 2048);
        assert_eq!(min_cacheable_tokens("claude-opus-4-1"), 1024);
        let request = ChatRequest {
            model: "claude-haiku-4-5".into(),
            system: "s".repeat(4000), // about 1,333 generous tokens: enough for Sonnet, not Haiku
            messages: vec![Message::user_text("task")],
            tools: vec![],
            max_tokens: None,
            temperature: None,
            stop: vec![],
            prompt_cache_key: None,
        };
        assert!(markers(&render_request(&request, 100, true, true)).is_empty());
        let sonnet = ChatRequest {
            model: "claude-sonnet-4-5".into(),
            ..request
        };
        assert_eq!(
            markers(&render_request(&sonnet, 100, true, true)),
            ["system", "0.0"]
        );
    }
}
