//! End to end: the real SmolLM2 model behind the `Provider` trait.
//! Skipped when `CODESMITH_SKIP_LOCAL_MODEL=1`; otherwise the model is fetched
//! once into the test home (see `common::test_home`).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use codesmith_local::LocalProvider;
use codesmith_protocol::{
    ContentBlock, Message, Role, StopReason, ToolCall, ToolResult, ToolSpec, Usage,
};
use codesmith_providers::{ChatRequest, Provider, ProviderEvent};
use futures::StreamExt;

/// Upper bound for one response on a loaded two-core machine.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(120);

struct Response {
    message: Message,
    usage: Usage,
    stop_reason: StopReason,
}

async fn run(provider: &LocalProvider, request: &ChatRequest) -> Response {
    let mut stream = provider.stream(request).await.unwrap();
    let mut text = String::new();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut usage = None;
    let mut stop_reason = None;
    while let Some(event) = tokio::time::timeout(RESPONSE_TIMEOUT, stream.next())
        .await
        .unwrap()
    {
        assert!(stop_reason.is_none(), "event after Completed");
        match event.unwrap() {
            ProviderEvent::TextDelta(delta) => text.push_str(&delta),
            ProviderEvent::ToolCallStart { index, id, name } => {
                assert_eq!(index, calls.len());
                calls.push(ToolCall {
                    id,
                    name,
                    arguments: String::new(),
                });
            }
            ProviderEvent::ToolCallDelta { index, arguments } => {
                calls[index].arguments.push_str(&arguments)
            }
            ProviderEvent::Usage(u) => usage = Some(u),
            ProviderEvent::Completed {
                stop_reason: reason,
            } => stop_reason = reason,
            ProviderEvent::ThinkingDelta(_) => panic!("the local model has no thinking channel"),
            ProviderEvent::RefusalDelta(_) => panic!("the local model sends no refusals"),
            ProviderEvent::Notice(n) => panic!("the local model reports no wire faults: {n}"),
            ProviderEvent::KeepAlive => {}
        }
    }
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(ContentBlock::Text { text });
    }
    content.extend(calls.into_iter().map(ContentBlock::ToolCall));
    Response {
        message: Message {
            role: Role::Assistant,
            content,
        },
        usage: usage.expect("usage reported"),
        stop_reason: stop_reason.expect("stream completed"),
    }
}

fn tools() -> Vec<ToolSpec> {
    let spec = |name: &str, description: &str, schema: serde_json::Value| ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
    };
    vec![
        spec(
            "list_dir",
            "List a directory.",
            serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        ),
        spec(
            "read_file",
            "Read a text file.",
            serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_model_streams_and_reuses_its_cache() {
    if common::skip_real_model("real_model_streams_and_reuses_its_cache") {
        return;
    }
    let provider = LocalProvider::new(common::test_home());
    let mut request = ChatRequest {
        model: "smollm2-135m-instruct".into(),
        system: "You are CodeSmith, a coding agent working in /tmp/demo.".into(),
        messages: vec![Message::user_text(
            "Read the README.md file of the project.",
        )],
        tools: tools(),
        max_tokens: Some(64),
        temperature: None,
        stop: Vec::new(),
        prompt_cache_key: None,
    };
    let estimate = provider.estimate_input_tokens(&request).unwrap();
    let first = run(&provider, &request).await;
    assert!(first.usage.input_tokens > 50);
    // The context-fill estimate shown before the first answer is close to the real input.
    let real = first.usage.input_tokens as f64;
    assert!(
        (estimate as f64) > real * 0.6 && (estimate as f64) < real * 1.6,
        "estimated {estimate} input tokens, the model read {real}"
    );
    assert!(first.usage.output_tokens >= 1 && first.usage.output_tokens <= 64);
    assert!(
        !first.message.content.is_empty(),
        "the model said something"
    );
    let calls: Vec<&ToolCall> = first.message.tool_calls().collect();
    match first.stop_reason {
        StopReason::ToolUse => assert!(!calls.is_empty()),
        StopReason::EndTurn => assert!(calls.is_empty()),
        StopReason::MaxTokens => assert_eq!(first.usage.output_tokens, 64),
        other => panic!("unexpected stop reason {other:?}"),
    }
    eprintln!(
        "first response ({:?}): {:?}",
        first.stop_reason, first.message.content
    );

    // The next request extends the history: only its new tokens are prefilled.
    request.messages.push(first.message.clone());
    let reply = match calls.first() {
        Some(call) => Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult {
                call_id: call.id.clone(),
                content: "# Demo\nA tiny demo project.".into(),
                is_error: false,
                images: Vec::new(),
            })],
        },
        None => Message::user_text("Thanks. Now say hello."),
    };
    request.messages.push(reply);
    request.max_tokens = Some(8);
    let second = run(&provider, &request).await;
    let previous = first.usage.input_tokens + first.usage.output_tokens;
    assert!(
        second.usage.cached_input_tokens + 1 >= previous,
        "second turn reused {} of {} earlier tokens",
        second.usage.cached_input_tokens,
        previous
    );
    assert!(second.usage.input_tokens > second.usage.cached_input_tokens);
    assert!(second.usage.output_tokens <= 8);

    // A diverging history falls back to a full prefill and still works.
    let fresh = ChatRequest {
        messages: vec![Message::user_text("What is 2 + 2?")],
        max_tokens: Some(3),
        tools: Vec::new(),
        ..request.clone()
    };
    let third = run(&provider, &fresh).await;
    assert_eq!(third.usage.cached_input_tokens, 0);
    assert!(third.usage.output_tokens <= 3);
    if third.usage.output_tokens == 3 {
        assert_eq!(third.stop_reason, StopReason::MaxTokens);
    }

    // History that differs from what was generated (an edited answer) still
    // reuses the cache up to the end of the previous prompt.
    let mut edited = fresh.clone();
    edited
        .messages
        .push(Message::assistant_text("An edited answer."));
    edited.messages.push(Message::user_text("And 3 + 3?"));
    let fourth = run(&provider, &edited).await;
    assert_eq!(fourth.usage.cached_input_tokens, third.usage.input_tokens);
}

#[tokio::test]
async fn a_missing_gguf_path_is_a_clear_error() {
    let provider = LocalProvider::new(std::env::temp_dir().join("codesmith-local-no-home"));
    let request = ChatRequest {
        model: "/nonexistent/model.gguf".into(),
        system: String::new(),
        messages: vec![Message::user_text("hi")],
        tools: Vec::new(),
        max_tokens: Some(4),
        temperature: None,
        stop: Vec::new(),
        prompt_cache_key: None,
    };
    let mut stream = provider.stream(&request).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
        .unwrap();
    let err = first.unwrap_err();
    assert!(
        err.message.contains("/nonexistent/model.gguf"),
        "{}",
        err.message
    );
    assert!(err.message.contains("--model PATH"), "{}", err.message);
}

#[test]
fn a_file_that_is_not_gguf_is_a_model_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake.gguf");
    std::fs::write(&path, b"not a gguf file").unwrap();
    let err = codesmith_local::LocalModel::load(&path).unwrap_err();
    assert!(
        matches!(err, codesmith_local::LocalError::Model { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("fake.gguf"));
}

/// The main job's shape on a workspace of its own: asked to list the crates, the
/// model first looks (a forced, constrained `list_dir`), then answers from the
/// listing, and the copy bias keeps its answer to names that are really there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_model_answers_from_a_listing_with_every_name_in_it() {
    if common::skip_real_model("real_model_answers_from_a_listing_with_every_name_in_it") {
        return;
    }
    let crates = [
        "alpha-core",
        "beta-cli",
        "gamma-net",
        "delta-store",
        "epsilon-ui",
    ];
    let workspace = tempfile::tempdir().unwrap();
    for name in crates {
        std::fs::create_dir_all(workspace.path().join("crates").join(name)).unwrap();
    }
    std::fs::write(workspace.path().join("Cargo.toml"), "[workspace]\n").unwrap();
    let provider = LocalProvider::new(common::test_home()).with_workspace(workspace.path());
    let mut request = ChatRequest {
        model: "smollm2-135m-instruct".into(),
        system: "You are CodeSmith, a coding assistant that uses tools to work on files.".into(),
        messages: vec![Message::user_text("List the crates in this repository.")],
        tools: tools(),
        max_tokens: Some(512),
        temperature: None,
        stop: Vec::new(),
        prompt_cache_key: None,
    };
    let first = run(&provider, &request).await;
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let call = first
        .message
        .tool_calls()
        .next()
        .expect("a first look")
        .clone();
    assert_eq!(call.name, "list_dir", "{call:?}");
    // The listing as list_dir writes it (workspace-relative, directories with `/`).
    let mut listing = String::from("Cargo.toml\ncrates/\n");
    for name in crates {
        listing.push_str(&format!("crates/{name}/\n"));
    }
    listing.push_str("[meta] {\"total_entries\":7}");
    request.messages.push(first.message.clone());
    request.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult(ToolResult {
            call_id: call.id.clone(),
            content: listing,
            is_error: false,
            images: Vec::new(),
        })],
    });
    let answer = run(&provider, &request).await;
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    assert_eq!(answer.message.tool_calls().count(), 0);
    let text = answer.message.text();
    eprintln!("answer: {text:?}");
    for name in crates {
        assert!(text.contains(name), "{name} missing from {text:?}");
    }
    assert!(!text.contains("tool_response"), "{text:?}");
}

/// Polls `done` every 10 ms for at most `limit`; true when it held in time.
async fn within(limit: Duration, done: impl Fn() -> bool) -> bool {
    let started = std::time::Instant::now();
    while !done() {
        if started.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_frees_the_model_promptly() {
    if common::skip_real_model("dropping_the_stream_frees_the_model_promptly") {
        return;
    }
    let provider = LocalProvider::new(common::test_home());
    let model = "smollm2-135m-instruct";
    tokio::task::block_in_place(|| provider.preload(model)).unwrap();
    // A long answer, dropped after its first text.
    let long = ChatRequest {
        model: model.into(),
        system: "You are a storyteller.".into(),
        messages: vec![Message::user_text(
            "Write a very long story about a dragon, with many chapters.",
        )],
        tools: Vec::new(),
        max_tokens: Some(1024),
        temperature: None,
        stop: Vec::new(),
        prompt_cache_key: None,
    };
    let mut stream = provider.stream(&long).await.unwrap();
    // Keep-alives may come first while the prompt is prefilled.
    let first = loop {
        match tokio::time::timeout(RESPONSE_TIMEOUT, stream.next()).await {
            Ok(Some(Ok(ProviderEvent::KeepAlive))) => continue,
            other => break other,
        }
    };
    assert!(matches!(first, Ok(Some(Ok(ProviderEvent::TextDelta(_))))));
    assert!(provider.is_generating(), "the story is still being written");
    drop(stream);
    assert!(
        within(Duration::from_secs(3), || !provider.is_generating()).await,
        "the model is still held 3 s after its stream was dropped"
    );

    // A tool call being written sends nothing until it closes; dropping its
    // stream stops it all the same.
    let look = ChatRequest {
        system: "You are CodeSmith, a coding agent working in /tmp/demo.".into(),
        messages: vec![Message::user_text(
            "Read the README.md file of the project.",
        )],
        tools: tools(),
        ..long.clone()
    };
    let stream = provider.stream(&look).await.unwrap();
    assert!(within(Duration::from_secs(3), || provider.is_generating()).await);
    drop(stream);
    assert!(
        within(Duration::from_secs(3), || !provider.is_generating()).await,
        "the model is still held 3 s after a tool call's stream was dropped"
    );
    // The model is free and whole: the next request is served.
    let short = ChatRequest {
        max_tokens: Some(8),
        ..long
    };
    let answer = run(&provider, &short).await;
    assert!(answer.usage.output_tokens >= 1);
}
