//! The remote providers and `complete()` against the scripted model server:
//! both dialects, every injected fault.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use codesmith_protocol::{Message, StopReason, ToolSpec, Usage};
use codesmith_providers::{
    AnthropicConfig, AnthropicProvider, AssistantResponse, ChatRequest, CompleteOptions,
    OpenAiConfig, OpenAiProvider, Provider, ProviderError, ProviderErrorKind, StreamNotice,
    complete,
};
use codesmith_testkit::{Fault, Finish, Scripted, ScriptedServer};
use serde_json::json;

const KEY: &str = "sk-test-0123456789abcdef";

fn request(max_tokens: Option<u32>) -> ChatRequest {
    ChatRequest {
        model: "scripted-model".into(),
        system: "You are a test.".into(),
        messages: vec![Message::user_text("hello")],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_tokens,
        temperature: None,
        stop: vec![],
        prompt_cache_key: None,
    }
}

/// Millisecond-scale retry and watchdog settings.
fn fast() -> CompleteOptions {
    CompleteOptions {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(100),
        idle_timeout: Duration::from_millis(800),
        idle_timeout_per_retry: Duration::from_millis(100),
        ..CompleteOptions::default()
    }
}

fn openai(server: &ScriptedServer) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig::new(server.base_url(), Some(KEY.into()))).unwrap()
}

fn anthropic(server: &ScriptedServer) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig::new(server.url(), Some(KEY.into()))).unwrap()
}

struct Run {
    result: Result<AssistantResponse, ProviderError>,
    notices: Vec<StreamNotice>,
}

impl Run {
    fn ok(&self) -> &AssistantResponse {
        match &self.result {
            Ok(r) => r,
            Err(e) => panic!("expected a response, got {:?}: {}", e.kind, e.message),
        }
    }

    fn err(&self) -> &ProviderError {
        match &self.result {
            Ok(r) => panic!("expected an error, got {r:?}"),
            Err(e) => e,
        }
    }

    fn retries(&self) -> Vec<(u32, u64, String)> {
        self.notices
            .iter()
            .filter_map(|n| match n {
                StreamNotice::Retry {
                    attempt,
                    wait_ms,
                    reason,
                } => Some((*attempt, *wait_ms, reason.clone())),
                _ => None,
            })
            .collect()
    }

    fn streamed_text(&self) -> String {
        self.notices
            .iter()
            .filter_map(|n| match n {
                StreamNotice::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

async fn run(provider: &dyn Provider, req: &ChatRequest, opts: &CompleteOptions) -> Run {
    let mut notices = Vec::new();
    let mut sink = |n: StreamNotice| notices.push(n);
    let result = complete(provider, req, opts, &mut sink).await;
    Run { result, notices }
}

fn full_turn() -> Scripted {
    Scripted::text("Hello, wörld ✓ — ok")
        .with_thinking("thinking 🤔 hard")
        .with_tool_call("call_1", "read_file", r#"{"path":"src/ä.rs"}"#)
        .with_tool_call("call_2", "read_file", r#"{"path":"b"}"#)
        .usage(42, 17)
}

fn assert_full_turn(resp: &AssistantResponse) {
    assert_eq!(resp.text, "Hello, wörld ✓ — ok");
    assert_eq!(resp.thinking, "thinking 🤔 hard");
    assert_eq!(resp.tool_calls.len(), 2);
    assert_eq!(resp.tool_calls[0].call.id, "call_1");
    assert_eq!(resp.tool_calls[0].call.name, "read_file");
    assert_eq!(resp.tool_calls[0].call.arguments, r#"{"path":"src/ä.rs"}"#);
    assert_eq!(resp.tool_calls[0].parsed, Some(json!({"path": "src/ä.rs"})));
    assert_eq!(resp.tool_calls[1].call.id, "call_2");
    assert_eq!(resp.stop_reason, StopReason::ToolUse);
    assert_eq!(
        resp.usage,
        Usage {
            input_tokens: 42,
            output_tokens: 17,
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
        }
    );
    assert!(!resp.interrupted);
}

#[tokio::test]
async fn openai_decodes_text_thinking_tool_calls_and_usage() {
    let server = ScriptedServer::start().await;
    server.push(full_turn());
    let run = run(&openai(&server), &request(Some(100)), &fast()).await;
    assert_full_turn(run.ok());
    assert_eq!(run.streamed_text(), "Hello, wörld ✓ — ok");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent.body["model"], json!("scripted-model"));
    assert_eq!(
        sent.body["messages"][0],
        json!({"role": "system", "content": "You are a test."})
    );
    assert_eq!(
        sent.body["tools"][0]["function"]["name"],
        json!("read_file")
    );
}

#[tokio::test]
async fn anthropic_decodes_text_thinking_tool_calls_and_usage() {
    let server = ScriptedServer::start().await;
    server.push(full_turn());
    let run = run(&anthropic(&server), &request(Some(100)), &fast()).await;
    assert_full_turn(run.ok());
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.body["system"][0]["text"], json!("You are a test."));
    assert_eq!(sent.body["max_tokens"], json!(100));
    assert_eq!(
        sent.body["tools"][0]["input_schema"]["type"],
        json!("object")
    );
}

#[tokio::test]
async fn anthropic_accepts_a_base_url_with_v1() {
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("hi"));
    let provider = AnthropicProvider::new(AnthropicConfig::new(server.base_url(), None)).unwrap();
    assert_eq!(
        run(&provider, &request(None), &fast()).await.ok().text,
        "hi"
    );
    assert_eq!(server.requests()[0].path, "/v1/messages");
    assert_eq!(server.requests()[0].header("x-api-key"), None);
}

#[tokio::test]
async fn rate_limit_429_honours_retry_after() {
    let server = ScriptedServer::start().await;
    server.push(Fault::status(429).retry_after(1));
    server.push(Scripted::text("after the wait"));
    let started = Instant::now();
    let run = run(&openai(&server), &request(None), &fast()).await;
    assert_eq!(run.ok().text, "after the wait");
    let retries = run.retries();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].0, 1);
    assert_eq!(retries[0].1, 1000, "Retry-After: 1 means a 1000 ms wait");
    assert!(retries[0].2.contains("429"), "{}", retries[0].2);
    assert!(started.elapsed() >= Duration::from_millis(1000));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn status_503_then_success() {
    for anthropic_dialect in [false, true] {
        let server = ScriptedServer::start().await;
        server.push(Fault::status(503));
        server.push(Scripted::text("recovered"));
        let run = if anthropic_dialect {
            run(&anthropic(&server), &request(None), &fast()).await
        } else {
            run(&openai(&server), &request(None), &fast()).await
        };
        assert_eq!(run.ok().text, "recovered");
        assert_eq!(run.retries().len(), 1);
        assert!(run.retries()[0].2.contains("HTTP 503"));
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn unauthorized_401_fails_at_once_with_a_clear_scrubbed_message() {
    let server = ScriptedServer::start().await;
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-live-abcdef1234567890XYZ","type":"invalid_request_error"}}"#;
    server.push(Fault::status(401).body(body));
    server.push(Scripted::text("must not be reached"));
    let run = run(&openai(&server), &request(None), &fast()).await;
    let err = run.err();
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert_eq!(err.status, Some(401));
    assert!(err.message.contains("HTTP 401"), "{}", err.message);
    assert!(
        err.message.contains("Incorrect API key provided"),
        "{}",
        err.message
    );
    assert!(err.message.contains("API key"), "{}", err.message);
    assert!(
        !err.message.contains("sk-live"),
        "secret leaked: {}",
        err.message
    );
    assert!(err.message.contains("[REDACTED]"), "{}", err.message);
    assert!(run.retries().is_empty());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn context_length_400_fails_at_once() {
    let server = ScriptedServer::start().await;
    let body = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}"#;
    server.push(Fault::status(400).body(body));
    let run = run(&openai(&server), &request(None), &fast()).await;
    assert_eq!(run.err().kind, ProviderErrorKind::ContextLength);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retries_are_bounded() {
    let server = ScriptedServer::start().await;
    for _ in 0..4 {
        server.push(Fault::status(500));
    }
    server.push(Scripted::text("never"));
    let run = run(&openai(&server), &request(None), &fast()).await;
    let err = run.err();
    assert_eq!(err.kind, ProviderErrorKind::Internal);
    assert!(
        err.message.contains("gave up after 3 retries"),
        "{}",
        err.message
    );
    let attempts: Vec<u32> = run.retries().iter().map(|r| r.0).collect();
    assert_eq!(attempts, vec![1, 2, 3]);
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn stall_before_content_is_retried() {
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("too late").stall_before(2500));
    server.push(Scripted::text("on time"));
    let run = run(&openai(&server), &request(None), &fast()).await;
    let resp = run.ok();
    assert_eq!(resp.text, "on time");
    assert!(!resp.interrupted);
    assert_eq!(run.retries().len(), 1);
    assert!(
        run.retries()[0].2.contains("idle timeout"),
        "{}",
        run.retries()[0].2
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn stall_after_content_keeps_the_partial_answer() {
    for anthropic_dialect in [false, true] {
        let server = ScriptedServer::start().await;
        server.push(Scripted::text("abcdefghijkl").stall_after(2, 2500));
        server.push(Scripted::text("a retry must not happen"));
        let run = if anthropic_dialect {
            run(&anthropic(&server), &request(None), &fast()).await
        } else {
            run(&openai(&server), &request(None), &fast()).await
        };
        let resp = run.ok();
        assert_eq!(resp.text, "abcdef");
        assert!(resp.interrupted);
        assert_eq!(resp.stop_reason, StopReason::Interrupted);
        assert!(
            resp.interruption
                .as_deref()
                .unwrap()
                .contains("idle timeout")
        );
        assert!(run.retries().is_empty());
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn dropped_connection_without_terminal_signal_after_content_is_partial() {
    for anthropic_dialect in [false, true] {
        let server = ScriptedServer::start().await;
        server.push(Scripted::text("abcdefghi").drop_after(1));
        server.push(Scripted::text("a retry must not happen"));
        let run = if anthropic_dialect {
            run(&anthropic(&server), &request(None), &fast()).await
        } else {
            run(&openai(&server), &request(None), &fast()).await
        };
        let resp = run.ok();
        assert_eq!(resp.text, "abc");
        assert!(resp.interrupted);
        assert_eq!(resp.stop_reason, StopReason::Interrupted);
        assert!(run.retries().is_empty());
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn everything_but_the_terminal_signal_is_still_an_interruption() {
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("complete-looking").omit_terminal());
    let run = run(&anthropic(&server), &request(None), &fast()).await;
    let resp = run.ok();
    assert_eq!(resp.text, "complete-looking");
    assert!(resp.interrupted, "no message_stop means no clean end");
}

#[tokio::test]
async fn nothing_received_is_retried_transparently() {
    let server = ScriptedServer::start().await;
    server.push(Fault::close());
    server.push(Scripted::raw(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
    ));
    server.push(Fault::hang(2500));
    server.push(Scripted::text("third time lucky"));
    let run = run(&openai(&server), &request(None), &fast()).await;
    assert_eq!(run.ok().text, "third time lucky");
    assert_eq!(run.retries().len(), 3);
    assert_eq!(run.streamed_text(), "third time lucky");
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn length_finish_leaves_truncated_tool_call_unparsed() {
    for anthropic_dialect in [false, true] {
        let server = ScriptedServer::start().await;
        let partial = r#"{"command": "rm -rf /tmp/leg"#;
        server.push(
            Scripted::truncated_tool_call("c1", "exec_shell", partial).with_tool_call(
                "c2",
                "read_file",
                r#"{"path":"x"}"#,
            ),
        );
        let run = if anthropic_dialect {
            run(&anthropic(&server), &request(Some(64)), &fast()).await
        } else {
            run(&openai(&server), &request(Some(64)), &fast()).await
        };
        let resp = run.ok();
        assert_eq!(resp.stop_reason, StopReason::MaxTokens);
        assert!(!resp.interrupted);
        assert_eq!(resp.tool_calls[0].call.arguments, partial);
        assert_eq!(resp.tool_calls[0].parsed, None, "truncated marker");
        assert_eq!(resp.tool_calls[1].parsed, Some(json!({"path": "x"})));
    }
}

/// A streamed answer is finished only when the wire says how it stopped:
/// `[DONE]` without any `finish_reason`, or `message_stop` without a
/// `stop_reason`, is an interruption (the partial response is kept, never
/// retried). A whole, non-streamed body is complete JSON, so a stop reason it
/// omits is derived from what it holds.
#[tokio::test]
async fn a_stream_without_a_stop_reason_is_interrupted_and_a_whole_body_derives_one() {
    let server = ScriptedServer::start().await;
    server.push(Scripted::tool_call("c1", "read_file", "{}").finish(Finish::Omitted));
    server.push(Scripted::tool_call("c1", "read_file", "{}").finish(Finish::Omitted));
    server.push(Scripted::text("some").finish(Finish::Omitted));
    let cut = run(&openai(&server), &request(Some(50)), &fast()).await;
    let cut = cut.ok();
    assert!(cut.interrupted);
    assert_eq!(cut.stop_reason, StopReason::Interrupted);
    assert!(
        cut.interruption
            .as_deref()
            .unwrap()
            .contains("finish_reason"),
        "{cut:?}"
    );
    for provider in [&anthropic(&server) as &dyn Provider, &openai(&server)] {
        let cut = run(provider, &request(Some(50)), &fast()).await;
        assert!(cut.ok().interrupted, "{}: {:?}", provider.name(), cut.ok());
    }
    assert_eq!(server.requests().len(), 3, "nothing billed was retried");

    server.push(
        Scripted::tool_call("c1", "read_file", "{}")
            .finish(Finish::Omitted)
            .non_streaming(),
    );
    server.push(
        Scripted::text("long")
            .finish(Finish::Omitted)
            .usage(5, 50)
            .non_streaming(),
    );
    server.push(
        Scripted::text("short")
            .finish(Finish::Omitted)
            .usage(5, 3)
            .non_streaming(),
    );
    let provider = openai(&server);
    let first = run(&provider, &request(Some(50)), &fast()).await;
    assert_eq!(first.ok().stop_reason, StopReason::ToolUse);
    let second = run(&provider, &request(Some(50)), &fast()).await;
    assert_eq!(second.ok().stop_reason, StopReason::MaxTokens);
    let third = run(&provider, &request(Some(50)), &fast()).await;
    assert_eq!(third.ok().stop_reason, StopReason::EndTurn);
    assert!(!third.ok().interrupted);
}

#[tokio::test]
async fn an_anthropic_refusal_is_marked_and_a_content_filter_is_not() {
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("I won't.").finish(Finish::ContentFilter));
    server.push(Scripted::text("filtered").finish(Finish::ContentFilter));
    let refused = run(&anthropic(&server), &request(None), &fast()).await;
    assert_eq!(refused.ok().text, "I won't.");
    assert!(refused.ok().refusal);
    assert_eq!(refused.streamed_text(), "I won't.");
    let filtered = run(&openai(&server), &request(None), &fast()).await;
    assert_eq!(filtered.ok().stop_reason, StopReason::ContentFilter);
    assert!(!filtered.ok().refusal);
}

#[tokio::test]
async fn exhausted_script_is_a_clear_error() {
    let server = ScriptedServer::start().await;
    let opts = CompleteOptions {
        max_retries: 0,
        ..fast()
    };
    let run = run(&openai(&server), &request(None), &opts).await;
    let err = run.err();
    assert_eq!(err.status, Some(500));
    assert!(err.message.contains("script exhausted"), "{}", err.message);
}

#[tokio::test]
async fn deepseek_dialect_replays_reasoning_on_tool_rounds() {
    use codesmith_protocol::{ContentBlock, Role, ToolCall, ToolResult};
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("done"));
    let mut config = OpenAiConfig::new(server.base_url(), None);
    config.vendor = codesmith_providers::Vendor::DeepSeek;
    let provider = OpenAiProvider::new(config).unwrap();
    let mut req = request(None);
    req.messages.push(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        })],
    });
    req.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult(ToolResult {
            call_id: "c1".into(),
            content: "text".into(),
            is_error: false,
            images: Vec::new(),
        })],
    });
    assert_eq!(run(&provider, &req, &fast()).await.ok().text, "done");
    let body = &server.request_bodies()[0];
    assert_eq!(
        body["messages"][2]["reasoning_content"],
        json!("(reasoning omitted)")
    );
    assert_eq!(body["messages"][3]["role"], json!("tool"));
}

#[tokio::test]
async fn the_providers_own_key_never_appears_in_errors() {
    let server = ScriptedServer::start().await;
    server.push(Fault::status(403).body("key 'tiny-key' may not use this model"));
    let provider =
        AnthropicProvider::new(AnthropicConfig::new(server.url(), Some("tiny-key".into())))
            .unwrap();
    let run = run(&provider, &request(None), &fast()).await;
    let err = run.err();
    assert_eq!(err.kind, ProviderErrorKind::Authorization);
    assert!(!err.message.contains("tiny-key"), "{}", err.message);
    assert!(
        err.message.contains("may not use this model"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn non_streaming_answers_are_decoded_too() {
    for anthropic_dialect in [false, true] {
        let server = ScriptedServer::start().await;
        server.push(full_turn().non_streaming());
        let run = if anthropic_dialect {
            run(&anthropic(&server), &request(Some(100)), &fast()).await
        } else {
            run(&openai(&server), &request(Some(100)), &fast()).await
        };
        assert_full_turn(run.ok());
    }
}

/// An Anthropic Messages body from `events` (`(type, data)` pairs).
fn anthropic_body(events: &[(&str, serde_json::Value)]) -> String {
    events
        .iter()
        .map(|(kind, data)| format!("event: {kind}\ndata: {data}\n\n"))
        .collect()
}

fn anthropic_tool_stream(start_input: serde_json::Value, partial: &[&str]) -> String {
    let mut events = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block":
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": start_input}}),
        ),
    ];
    for p in partial {
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": p}}),
        ));
    }
    events.push((
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    anthropic_body(&events)
}

/// A key named twice in a call's arguments leaves them unparsed (the
/// truncation and ambiguity marker the engine reads) in both dialects, and
/// input sent already parsed with a key named twice ends the stream.
#[tokio::test]
async fn arguments_naming_a_key_twice_are_never_read_last_wins() {
    let server = ScriptedServer::start().await;
    server.push(Scripted::raw(anthropic_tool_stream(
        json!({}),
        &[r#"{"path": "a.txt", "#, r#""path": "b.txt"}"#],
    )));
    server.push(Scripted::tool_call(
        "c1",
        "read_file",
        r#"{"path":"a.txt","nested":{"x":1,"x":2}}"#,
    ));
    server.push(Scripted::raw(
        anthropic_tool_stream(json!({}), &[]).replace(
            r#""input":{}"#,
            r#""input":{"path":"a.txt","path":"b.txt"}"#,
        ),
    ));
    let first = run(&anthropic(&server), &request(None), &fast()).await;
    let call = &first.ok().tool_calls[0];
    assert_eq!(call.parsed, None, "{call:?}");
    assert_eq!(call.call.arguments, r#"{"path": "a.txt", "path": "b.txt"}"#);
    assert_eq!(first.ok().stop_reason, StopReason::ToolUse);
    let second = run(&openai(&server), &request(None), &fast()).await;
    assert_eq!(second.ok().tool_calls[0].parsed, None);
    let once = CompleteOptions {
        max_retries: 0,
        ..fast()
    };
    let third = run(&anthropic(&server), &request(None), &once).await;
    assert!(
        third.err().message.contains("duplicate key `path`"),
        "{}",
        third.err().message
    );
}

fn notices(run: &Run) -> Vec<String> {
    run.notices
        .iter()
        .filter_map(|n| match n {
            StreamNotice::Notice(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Usage figures that are not token counts are not counted, the valid ones
/// are kept, and the user is told which field was wrong, in both dialects.
#[tokio::test]
async fn invalid_usage_figures_are_dropped_with_a_notice_naming_the_field() {
    let server = ScriptedServer::start().await;
    let openai_chunk = |usage: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}], "usage": usage})
        )
    };
    server.push(Scripted::raw(format!(
        "{}data: [DONE]\n\n",
        openai_chunk(json!({"prompt_tokens": -3, "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 1.5}, "prompt_cache_hit_tokens": 2}))
    )));
    server.push(Scripted::raw(format!(
        "{}data: [DONE]\n\n",
        openai_chunk(json!({"prompt_tokens": 9007199254740993_u64, "completion_tokens": "7"}))
    )));
    server.push(Scripted::raw(anthropic_body(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 18446744073709551615_u64,
                "cache_read_input_tokens": 4, "cache_creation_input_tokens": 3, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": "\u{1b}[31m12"}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])));
    let first = run(&openai(&server), &request(None), &fast()).await;
    assert_eq!(
        first.ok().usage,
        Usage {
            input_tokens: 0,
            output_tokens: 7,
            cached_input_tokens: 2,
            cache_write_input_tokens: 0,
        }
    );
    let said = notices(&first).join("\n");
    assert!(
        said.contains("`usage.prompt_tokens` as a negative number"),
        "{said}"
    );
    assert!(
        said.contains("`usage.prompt_tokens_details.cached_tokens` as not a whole number"),
        "{said}"
    );
    let second = run(&openai(&server), &request(None), &fast()).await;
    assert_eq!(second.ok().usage.input_tokens, 0);
    let said = notices(&second).join("\n");
    assert!(
        said.contains("`usage.prompt_tokens` as a number above 2^53"),
        "{said}"
    );
    assert!(
        said.contains("`usage.completion_tokens` as a string"),
        "{said}"
    );
    let third = run(&anthropic(&server), &request(None), &fast()).await;
    assert_eq!(
        third.ok().usage,
        Usage {
            input_tokens: 7,
            output_tokens: 1,
            cached_input_tokens: 4,
            cache_write_input_tokens: 3,
        }
    );
    let said = notices(&third).join("\n");
    assert!(said.contains("`usage.input_tokens`"), "{said}");
    assert!(said.contains("`usage.output_tokens` as a string"), "{said}");
    assert!(
        !said.contains('\u{1b}'),
        "the bad value is never quoted: {said}"
    );
}

/// The key variables follow the base URL's host only: a `deepseek` in the userinfo,
/// path or query of another host's URL never routes `DEEPSEEK_API_KEY` there, and
/// userinfo in front of DeepSeek's own host does not hide it.
#[test]
fn key_vars_follow_the_host_never_userinfo_path_or_query() {
    use codesmith_providers::openai_key_vars;
    let openai_only: &[&str] = &["OPENAI_API_KEY"];
    let deepseek: &[&str] = &["DEEPSEEK_API_KEY", "OPENAI_API_KEY"];
    assert_eq!(
        openai_key_vars("http://deepseek:x@127.0.0.1:9/v1"),
        openai_only
    );
    assert_eq!(
        openai_key_vars("http://127.0.0.1:9/deepseek/v1"),
        openai_only
    );
    assert_eq!(
        openai_key_vars("http://127.0.0.1:9/v1?deepseek=1"),
        openai_only
    );
    assert_eq!(
        openai_key_vars("https://user:sk-secret@api.deepseek.com/v1"),
        deepseek
    );
    assert_eq!(openai_key_vars("https://api.deepseek.com./v1"), deepseek);
}
