//! Neutral request → Chat Completions body.
//!
//! Rendering is a pure function of the request and the vendor, so the same
//! history always gives the same bytes (prefix-cache discipline).
//!
//! Images travel as `image_url` content parts holding `data:` URIs. A `tool` message
//! carries text only, so a result's images follow as one user-role message right after
//! the results of that turn, each introduced by the call id it belongs to; a model
//! configured with `images = false` reads a short text in their place.

use codesmith_protocol::{ContentBlock, ImagePart, Message, Role};
use serde_json::{Map, Value, json};

use super::{REASONING_PLACEHOLDER, ReasoningReplay, Vendor};
use crate::provider::ChatRequest;

/// Renders `request` as a streaming Chat Completions body for `vendor`,
/// replaying thinking as `reasoning_content` as `replay` decides.
pub(crate) fn render_request(
    request: &ChatRequest,
    vendor: Vendor,
    replay: ReasoningReplay,
    send_cache_key: bool,
    images: bool,
) -> Value {
    let replay = replays_reasoning(request, vendor, replay);
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        match message.role {
            Role::User => render_user(message, images, &mut messages),
            Role::Assistant => messages.push(render_assistant(message, replay)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = request.max_tokens {
        let key = match vendor {
            Vendor::OpenAi => "max_completion_tokens",
            Vendor::DeepSeek | Vendor::Generic => "max_tokens",
        };
        body.insert(key.into(), json!(max));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if !request.stop.is_empty() {
        body.insert("stop".into(), json!(request.stop));
    }
    if send_cache_key && let Some(key) = &request.prompt_cache_key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Value::Object(body)
}

/// Whether tool rounds carry `reasoning_content` (see [`ReasoningReplay`]).
/// Under `Auto` the decision is a function of the transcript, so the same
/// history always renders the same bytes.
fn replays_reasoning(request: &ChatRequest, vendor: Vendor, replay: ReasoningReplay) -> bool {
    match replay {
        ReasoningReplay::Always => true,
        ReasoningReplay::Never => false,
        ReasoningReplay::Auto => match vendor {
            Vendor::DeepSeek => true,
            Vendor::OpenAi => false,
            Vendor::Generic => request.messages.iter().any(|m| {
                m.role == Role::Assistant
                    && m.content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::Thinking { text } if !text.is_empty()))
            }),
        },
    }
}

/// A user message: tool results first (as `tool` messages, which must follow
/// the assistant's calls directly), then one user message holding the results' images
/// (each after a line naming its call), the text and any attached images, if any.
fn render_user(message: &Message, images: bool, out: &mut Vec<Value>) {
    let mut parts: Vec<Value> = Vec::new();
    let mut texts = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::ToolResult(result) => {
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": result.call_id,
                    "content": result.content,
                }));
                if !result.images.is_empty() {
                    parts.push(text_part(format!(
                        "The result of tool call {} carries {} image(s):",
                        result.call_id,
                        result.images.len()
                    )));
                    parts.extend(result.images.iter().map(|p| image_part(p, images)));
                }
            }
            ContentBlock::Text { text } => texts.push(text.as_str()),
            ContentBlock::Image(part) => {
                if !texts.is_empty() {
                    parts.push(text_part(texts.join("\n")));
                    texts.clear();
                }
                parts.push(image_part(part, images));
            }
            // A user turn carries neither thinking nor calls; nothing to send.
            ContentBlock::Thinking { .. } | ContentBlock::ToolCall(_) => {}
        }
    }
    if parts.is_empty() {
        if !texts.is_empty() {
            out.push(json!({"role": "user", "content": texts.join("\n")}));
        }
        return;
    }
    if !texts.is_empty() {
        parts.push(text_part(texts.join("\n")));
    }
    out.push(json!({"role": "user", "content": parts}));
}

/// A `text` content part.
fn text_part(text: String) -> Value {
    json!({"type": "text", "text": text})
}

/// An `image_url` content part for `part` (a `data:` URI), or the text part sent in its
/// place.
fn image_part(part: &ImagePart, images: bool) -> Value {
    match crate::image::omitted(part, images) {
        Some(text) => text_part(text),
        None => json!({"type": "image_url", "image_url": {"url": crate::image::data_uri(part)}}),
    }
}

/// An assistant message: text, `tool_calls` with the raw argument strings,
/// and, on a tool round when `replay` is set, `reasoning_content`.
fn render_assistant(message: &Message, replay: bool) -> Value {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut calls = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text: t } => text.push_str(t),
            ContentBlock::Thinking { text: t } => thinking.push_str(t),
            ContentBlock::ToolCall(call) => calls.push(json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            })),
            // Results and images travel in user turns; never rendered from an assistant one.
            ContentBlock::ToolResult(_) | ContentBlock::Image(_) => {}
        }
    }
    let mut out = Map::new();
    out.insert("role".into(), json!("assistant"));
    let content = if text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        json!(text)
    };
    out.insert("content".into(), content);
    let has_calls = !calls.is_empty();
    if has_calls {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if replay && has_calls {
        let reasoning = if thinking.is_empty() {
            REASONING_PLACEHOLDER.to_string()
        } else {
            thinking
        };
        out.insert("reasoning_content".into(), json!(reasoning));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use codesmith_protocol::{ContentBlock, Message, Role, ToolCall, ToolResult, ToolSpec};
    use serde_json::json;

    use super::*;

    fn request() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            system: "sys".into(),
            messages: vec![
                Message::user_text("read a"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentBlock::Thinking {
                            text: String::new(),
                        },
                        ContentBlock::ToolCall(ToolCall {
                            id: "c1".into(),
                            name: "read_file".into(),
                            arguments: r#"{"path":"a"}"#.into(),
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult(ToolResult {
                        call_id: "c1".into(),
                        content: "ok".into(),
                        is_error: false,
                        images: Vec::new(),
                    })],
                },
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "Reads".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: Some(100),
            temperature: None,
            stop: vec![],
            prompt_cache_key: None,
        }
    }

    #[test]
    fn renders_roles_calls_and_results() {
        let body = render_request(
            &request(),
            Vendor::Generic,
            ReasoningReplay::Auto,
            true,
            true,
        );
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(body["max_tokens"], json!(100));
        let m = &body["messages"];
        assert_eq!(m[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(m[1], json!({"role": "user", "content": "read a"}));
        assert_eq!(m[2]["content"], json!(null));
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"],
            json!(r#"{"path":"a"}"#)
        );
        assert!(m[2].get("reasoning_content").is_none());
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "ok"})
        );
        assert_eq!(body["tools"][0]["type"], json!("function"));
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
    }

    #[test]
    fn deepseek_tool_rounds_carry_reasoning_content() {
        let body = render_request(
            &request(),
            Vendor::DeepSeek,
            ReasoningReplay::Auto,
            true,
            true,
        );
        assert_eq!(
            body["messages"][2]["reasoning_content"],
            json!(REASONING_PLACEHOLDER)
        );
        let body = render_request(
            &request(),
            Vendor::OpenAi,
            ReasoningReplay::Auto,
            true,
            true,
        );
        assert_eq!(body["max_completion_tokens"], json!(100));
        assert!(body["messages"][2].get("reasoning_content").is_none());
    }

    #[test]
    fn reasoning_replay_follows_the_setting_and_the_transcript() {
        let mut req = request();
        let replayed = |req: &ChatRequest, vendor, replay| {
            render_request(req, vendor, replay, true, true)["messages"][2]
                .get("reasoning_content")
                .cloned()
        };
        // No thinking in the transcript: auto keeps a generic server clean.
        assert_eq!(replayed(&req, Vendor::Generic, ReasoningReplay::Auto), None);
        assert_eq!(
            replayed(&req, Vendor::Generic, ReasoningReplay::Always),
            Some(json!(REASONING_PLACEHOLDER))
        );
        assert_eq!(
            replayed(&req, Vendor::DeepSeek, ReasoningReplay::Never),
            None
        );
        // The server sent thinking: auto replays it, except to OpenAI itself.
        req.messages[1].content[0] = ContentBlock::Thinking {
            text: "plan".into(),
        };
        assert_eq!(
            replayed(&req, Vendor::Generic, ReasoningReplay::Auto),
            Some(json!("plan"))
        );
        assert_eq!(replayed(&req, Vendor::OpenAi, ReasoningReplay::Auto), None);
        assert_eq!("never".parse(), Ok(ReasoningReplay::Never));
        assert!("sometimes".parse::<ReasoningReplay>().is_err());
    }
}
