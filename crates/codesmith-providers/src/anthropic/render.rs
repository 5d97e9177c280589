//! Neutral request → Messages API body.
//!
//! Thinking blocks are dropped: the transcript keeps thinking as plain text
//! without the vendor's signature (seed 002, "Takeover"), and the API
//! rejects a thinking block whose signature is missing or foreign. Empty
//! text blocks are skipped (the API rejects them), and so is a message left
//! with no blocks. Tool results come first in their user message, as the
//! API requires.

use codesmith_protocol::{ContentBlock, Message, Role};
use serde_json::{Map, Value, json};

use crate::provider::ChatRequest;

/// Renders `request` as a streaming Messages body.
///
/// With `cache_prompt`, the system prompt is sent as one text block marked
/// `cache_control: ephemeral`, so the byte-stable tools and system prompt
/// form a cached prefix; the marker never moves between requests.
pub(crate) fn render_request(
    request: &ChatRequest,
    default_max_tokens: u32,
    cache_prompt: bool,
) -> Value {
    let messages: Vec<Value> = request.messages.iter().filter_map(render_message).collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert(
        "max_tokens".into(),
        json!(request.max_tokens.unwrap_or(default_max_tokens)),
    );
    if !request.system.is_empty() {
        let system = if cache_prompt {
            json!([{"type": "text", "text": request.system,
                    "cache_control": {"type": "ephemeral"}}])
        } else {
            json!(request.system)
        };
        body.insert("system".into(), system);
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"name": t.name, "description": t.description, "input_schema": t.input_schema})
            })
            .collect();
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

fn render_message(message: &Message) -> Option<Value> {
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
                r.insert("content".into(), json!(result.content));
                if result.is_error {
                    r.insert("is_error".into(), json!(true));
                }
                results.push(Value::Object(r));
            }
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
    use codesmith_protocol::{ContentBlock, Message, Role, ToolCall, ToolResult};
    use serde_json::json;

    use super::*;

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
                        }),
                    ],
                },
            ],
            tools: vec![],
            max_tokens: None,
            temperature: None,
            stop: vec!["END".into()],
        };
        let cached = render_request(&request, 1234, true);
        assert_eq!(
            cached["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(cached["system"][0]["text"], json!("sys"));
        let body = render_request(&request, 1234, false);
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
}
