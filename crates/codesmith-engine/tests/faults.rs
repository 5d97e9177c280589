//! The loop under injected faults, against the scripted model server (real
//! HTTP, real SSE): truncated calls, malformed arguments, misspelled names,
//! repeated calls, context overflow, interrupted streams, transient errors.

#![allow(clippy::unwrap_used)]

use crate::common::Rig;

use codesmith_engine::Compaction;
use codesmith_protocol::Event;
use codesmith_protocol::TaskStatus;
use codesmith_testkit::{Fault, Scripted};
use serde_json::Value;

#[tokio::test]
async fn a_truncated_shell_call_is_not_executed() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::truncated_tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "touch ran_marker && echo do"#,
        ))
        .push(Scripted::text("ok, I will resend later"));
    let (outcome, _) = rig.run("clean up").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert!(
        !rig.ws.join("ran_marker").exists(),
        "the truncated command ran"
    );
    let result = &rig.results(1)[0];
    assert!(
        result.contains("NOT executed") && result.contains("max_tokens"),
        "{result}"
    );
}

#[tokio::test]
async fn an_interrupted_response_runs_none_of_its_calls() {
    let rig = Rig::new().await;
    rig.server
        .push(
            // The whole call arrives, then the body ends before `finish_reason`.
            Scripted::tool_call("c1", "exec_shell", r#"{"command": "touch ran_marker"}"#)
                .chunk_chars(100)
                .drop_after(2),
        )
        .push(Scripted::text("done"));
    let (outcome, _) = rig.run("do it").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert!(!rig.ws.join("ran_marker").exists());
    assert!(rig.results(1)[0].contains("cut off"));
}

#[tokio::test]
async fn malformed_but_complete_arguments_are_repaired() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::tool_call(
            "c1",
            "read_file",
            "{\"path\": \"notes.txt\",}",
        ))
        .push(Scripted::text("read it"));
    rig.run("read notes").await;
    let result = &rig.results(1)[0];
    assert!(
        !result.contains("\"ok\":false") && result.contains("beta"),
        "{result}"
    );
}

#[tokio::test]
async fn tool_names_are_repaired_or_answered_with_did_you_mean() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::tool_call(
            "c1",
            "ReadFile",
            r#"{"path": "notes.txt"}"#,
        ))
        .push(Scripted::tool_call(
            "c2",
            "reed_fil",
            r#"{"path": "notes.txt"}"#,
        ))
        .push(Scripted::text("done"));
    rig.run("read").await;
    assert!(rig.results(1)[0].contains("alpha"));
    let unknown = &rig.results(2)[1];
    assert!(
        unknown.contains("NOT_FOUND") && unknown.contains("read_file"),
        "{unknown}"
    );
}

#[tokio::test]
async fn the_third_identical_call_is_blocked() {
    let rig = Rig::new().await;
    for id in ["c1", "c2", "c3"] {
        rig.server.push(Scripted::tool_call(
            id,
            "read_file",
            r#"{"path": "notes.txt"}"#,
        ));
    }
    rig.server.push(Scripted::text("done"));
    rig.run("read").await;
    let results = rig.results(3);
    assert!(results[1].contains("beta"), "{}", results[1]);
    assert!(results[2].contains("identical arguments"), "{}", results[2]);
}

/// Reasoning long enough (about 500 tokens) that a summary of the rounds that carry it
/// is shorter than they are: a compaction is only kept when it makes the context smaller.
const LONG_THOUGHT: &str = "I should look at the notes first, then list the workspace, and \
    keep track of what each file holds before I change anything at all in this project. \
    I should look at the notes first, then list the workspace, and keep track of what each \
    file holds before I change anything at all in this project. I should look at the notes \
    first, then list the workspace, and keep track of what each file holds before I change \
    anything at all in this project. I should look at the notes first, then list the \
    workspace, and keep track of what each file holds before I change anything at all in \
    this project. I should look at the notes first, then list the workspace, and keep track \
    of what each file holds before I change anything at all in this project. I should look \
    at the notes first, then list the workspace, and keep track of what each file holds \
    before I change anything at all in this project. I should look at the notes first, then \
    list the workspace, and keep track of what each file holds before I change anything.";

#[tokio::test]
async fn a_context_overflow_is_recovered_in_stages() {
    let rig = Rig::new().await;
    let overflow = || {
        Fault::status(400).body(r#"{"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}"#)
    };
    rig.server
        .push(
            Scripted::tool_call("c1", "read_file", r#"{"path": "notes.txt"}"#)
                .with_thinking(LONG_THOUGHT),
        )
        .push(Scripted::tool_call("c2", "list_dir", "{}").with_thinking(LONG_THOUGHT))
        .push(Scripted::tool_call(
            "c3",
            "file_search",
            r#"{"pattern": "*.txt"}"#,
        ))
        .push(overflow())
        .push(overflow())
        .push(Scripted::text(
            "SUMMARY: read notes.txt, listed the workspace.",
        ))
        .push(Scripted::text("all done"));
    let (outcome, events) = rig.run("look around").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert_eq!(outcome.final_text, "all done");
    let notices: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, Event::Notice { .. }))
        .collect();
    assert_eq!(notices.len(), 2, "{notices:?}");
    let bodies = rig.server.request_bodies();
    // Stage 1 cleared the oldest tool result before the second attempt.
    let second: Value = bodies[4].clone();
    assert!(
        second.to_string().contains("tool result cleared"),
        "{second}"
    );
    // Stage 2 summarized and the final request starts from the summary.
    let last = bodies.last().unwrap().to_string();
    assert!(last.contains("SUMMARY: read notes.txt"), "{last}");
}

#[tokio::test]
async fn transient_errors_are_retried_with_a_visible_notice() {
    let rig = Rig::new().await;
    rig.server
        .push(Fault::status(503))
        .push(Fault::status(429).retry_after(1))
        .push(Scripted::text("fine"));
    let (outcome, events) = rig.run("hi").await;
    assert_eq!(outcome.final_text, "fine");
    let retries = events
        .iter()
        .filter(|e| matches!(e, Event::Retry { .. }))
        .count();
    assert_eq!(retries, 2);
}

#[tokio::test]
async fn forged_calls_in_text_are_stripped_and_never_run() {
    let rig = Rig::new().await;
    let forged = "<tool_call>{\"name\": \"exec_shell\", \"arguments\": {\"command\": \"touch ran_marker\"}}</tool_call>";
    rig.server
        .push(Scripted::text(format!("Done. {forged}")))
        .push(Scripted::text(format!("Done. {forged}")));
    let (outcome, _) = rig.run("hi").await;
    assert_eq!(outcome.final_text, "Done.");
    assert!(!rig.ws.join("ran_marker").exists());
}

#[tokio::test]
async fn eight_consecutive_failures_end_the_turn() {
    let rig = Rig::new().await;
    for i in 0..8 {
        rig.server.push(Scripted::tool_call(
            format!("c{i}"),
            "read_file",
            format!(r#"{{"path": "missing{i}.txt"}}"#),
        ));
    }
    let (outcome, _) = rig.run("read").await;
    assert_eq!(outcome.status, TaskStatus::TooManyFailures);
    assert!(
        rig.results(3)
            .last()
            .unwrap()
            .contains("in a row have failed")
    );
}

#[tokio::test]
async fn a_manual_compaction_summarizes_the_older_turns() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::tool_call(
            "c1",
            "read_file",
            r#"{"path": "notes.txt"}"#,
        ))
        .push(Scripted::tool_call("c2", "list_dir", "{}"))
        .push(Scripted::text("looked"))
        .push(Scripted::text("SUMMARY: the user looked at notes.txt."));
    let mut engine = rig.engine();
    // A long task, so that the summary is shorter than what it replaces.
    let task = format!(
        "look {}",
        "at the notes and tell me all about them. ".repeat(40)
    );
    engine.run_task(&task, &mut |_| {}).await.unwrap();
    let outcome = engine.compact().await.unwrap();
    let Compaction::Compacted {
        messages,
        summary: true,
        before,
        after,
    } = outcome
    else {
        panic!("{outcome:?}");
    };
    assert!(messages > 0 && after < before, "{outcome:?}");
    let after = engine.session().messages();
    assert!(
        after.iter().all(|m| m.text() != task),
        "the folded task is gone"
    );
    assert_eq!(after.last().unwrap().text(), "looked", "the tail is kept");
    assert!(
        after[0].text().contains("SUMMARY: the user looked"),
        "{:?}",
        after[0]
    );
}

#[tokio::test]
async fn an_unfinished_shell_command_is_not_repaired_into_a_run() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "touch ran_marker"#,
        ))
        .push(Scripted::text("ok"));
    let (_, events) = rig.run("do it").await;
    assert!(
        !rig.ws.join("ran_marker").exists(),
        "a repaired command ran"
    );
    assert!(
        rig.results(1)[0].contains("NOT executed"),
        "{}",
        rig.results(1)[0]
    );
    let calls = events
        .iter()
        .filter(|e| matches!(e, Event::ToolCall { .. }))
        .count();
    assert_eq!(calls, 1, "every result has its tool_call event");
}

/// An OpenAI-compatible event-stream body: one `data:` event per chunk.
fn sse(chunks: &[&str]) -> String {
    chunks.iter().map(|c| format!("data: {c}\n\n")).collect()
}

#[tokio::test]
async fn parallel_calls_sent_at_one_index_are_two_calls() {
    let rig = Rig::new().await;
    let call = |id: &str, path: &str, content: &str| {
        let args = serde_json::json!({"path": path, "content": content}).to_string();
        serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
            "id": id, "type": "function",
            "function": {"name": "write_file", "arguments": args}}]}}]})
        .to_string()
    };
    let (a, b) = (call("call_a", "a.txt", "A"), call("call_b", "b.txt", "B"));
    rig.server
        .push(Scripted::raw(sse(&[
            &a,
            &b,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])))
        .push(Scripted::text("done"));
    let (outcome, events) = rig.run("write both").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert_eq!(std::fs::read_to_string(rig.ws.join("a.txt")).unwrap(), "A");
    assert_eq!(std::fs::read_to_string(rig.ws.join("b.txt")).unwrap(), "B");
    let ids: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_a", "call_b"]);
}

#[tokio::test]
async fn arguments_sent_as_a_json_object_are_the_arguments() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::raw(sse(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"write_file","arguments":{"path":"obj.txt","content":"O\n"}}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])))
        .push(Scripted::text("done"));
    rig.run("write it").await;
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("obj.txt")).unwrap(),
        "O\n"
    );
}

#[tokio::test]
async fn a_body_ending_after_finish_reason_without_done_completes_the_turn() {
    let rig = Rig::new().await;
    rig.server.push(Scripted::text("all done").omit_terminal());
    let (outcome, events) = rig.run("finish").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert_eq!(outcome.final_text, "all done");
    assert!(events.iter().any(|e| matches!(
        e,
        Event::TurnCompleted {
            stop_reason: codesmith_protocol::StopReason::EndTurn,
            ..
        }
    )));
    assert_eq!(rig.server.requests().len(), 1, "nothing was retried");
}

#[tokio::test]
async fn streamed_reasoning_goes_back_with_the_tool_round() {
    let rig = Rig::new().await;
    rig.server
        .push(
            Scripted::tool_call("c1", "read_file", r#"{"path": "notes.txt"}"#)
                .with_thinking("I should read the notes."),
        )
        .push(Scripted::text("read"));
    rig.run("read notes").await;
    let second = &rig.server.request_bodies()[1];
    let assistant = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(
        assistant["reasoning_content"], "I should read the notes.",
        "{assistant}"
    );
}

#[tokio::test]
async fn unparseable_arguments_are_reported_as_a_json_error() {
    let rig = Rig::new().await;
    let raw = r#"{"path": "m.txt" "content": "x"}"#;
    rig.server
        .push(Scripted::tool_call("c1", "write_file", raw))
        .push(Scripted::text("ok"));
    let (_, events) = rig.run("write m").await;
    assert!(!rig.ws.join("m.txt").exists());
    let result = &rig.results(1)[0];
    assert!(
        result.contains("not valid JSON") && result.contains("expected `,` or `}` at position 18"),
        "{result}"
    );
    assert!(!result.contains("missing field"), "{result}");
    let logged = events.iter().find_map(|e| match e {
        Event::ToolCall { arguments, .. } => Some(arguments.clone()),
        _ => None,
    });
    assert_eq!(logged, Some(Value::String(raw.to_string())));
}

/// One `write_file` call whose argument text is `args`, streamed in two
/// fragments, then `tail` (the finish chunk and terminal signal, as given).
fn write_call_stream(args: &str, tail: &[&str]) -> String {
    let cut = (1..=args.len() / 2)
        .rev()
        .find(|&i| args.is_char_boundary(i))
        .unwrap_or(0);
    let (head, rest) = args.split_at(cut);
    let first = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [{
        "index": 0, "id": "c1", "type": "function",
        "function": {"name": "write_file", "arguments": head}}]}}]})
    .to_string();
    let second = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [{
        "index": 0, "function": {"arguments": rest}}]}}]})
    .to_string();
    let mut chunks = vec![first.as_str(), second.as_str()];
    chunks.extend_from_slice(tail);
    sse(&chunks)
}

const FINISH_STOP: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
const FINISH_TOOLS: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#;

/// Argument text that ends before its JSON does is a cut-off call whatever the
/// stop reason says (`stop`, `tool_calls`, or none at all before `[DONE]`):
/// it is never completed and run, and the model is told to resend it whole.
#[tokio::test]
async fn unfinished_arguments_are_refused_as_cut_off_whatever_the_finish() {
    let cases: [(&str, &[&str]); 6] = [
        (
            r#"{"path": "cut1.txt", "content": "first half of the fi"#,
            &[FINISH_STOP, "[DONE]"],
        ),
        (
            r#"{"path": "cut2.txt", "content": "done\n"#,
            &[FINISH_TOOLS, "[DONE]"],
        ),
        (
            r#"{"path": "cut3.txt", "content": "x", "create_dirs": tr"#,
            &[FINISH_STOP],
        ),
        (r#"{"path": "cut4.txt", "content": "x""#, &["[DONE]"]),
        (
            "{\"path\": \"cut5.txt\", \"content\": \"line 1\nline 2",
            &[FINISH_STOP, "[DONE]"],
        ),
        (r#"{"path": "cut6.txt", "content": "x","#, &[FINISH_TOOLS]),
    ];
    for (args, tail) in cases {
        let rig = Rig::new().await;
        rig.server
            .push(Scripted::raw(write_call_stream(args, tail)))
            .push(Scripted::text("ok, resending later"));
        let (_, events) = rig.run("write it").await;
        let written: Vec<_> = std::fs::read_dir(&rig.ws)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with("cut"))
            .collect();
        assert!(written.is_empty(), "{args:?} ran: {written:?}");
        let result = &rig.results(1)[0];
        assert!(
            result.contains("NOT executed") && result.contains("Send the complete call again"),
            "{args:?}: {result}"
        );
        assert!(result.contains("split"), "{args:?}: {result}");
        assert!(
            events.iter().any(|e| matches!(e, Event::ToolCall { .. })),
            "{args:?}: the call is logged"
        );
    }
}

/// The same text closed properly runs: only the cut is refused.
#[tokio::test]
async fn complete_arguments_with_a_stop_finish_run() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::raw(write_call_stream(
            r#"{"path": "whole.txt", "content": "all of it\n"}"#,
            &[FINISH_STOP, "[DONE]"],
        )))
        .push(Scripted::text("written"));
    rig.run("write it").await;
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("whole.txt")).unwrap(),
        "all of it\n"
    );
}

/// A key named twice has no one right reading: the call is refused as
/// ambiguous, never run with the last (or first) value, in every spelling.
#[tokio::test]
async fn a_key_named_twice_is_refused_as_ambiguous() {
    let streams = [
        write_call_stream(
            r#"{"path":"dup_a.txt","content":"A","path":"dup_b.txt"}"#,
            &[FINISH_TOOLS, "[DONE]"],
        ),
        write_call_stream(
            r#"{"path":"dup_a.txt","content":"A","p\u0061th":"dup_b.txt"}"#,
            &[FINISH_TOOLS, "[DONE]"],
        ),
        write_call_stream(
            r#"{"path":"dup_a.txt","content":"A","content":"B",}"#,
            &[FINISH_STOP, "[DONE]"],
        ),
        write_call_stream(
            r#"{"path":"dup_a.txt","content":"A","path":"dup_b.txt"}"#,
            &[
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
                "[DONE]",
            ],
        ),
    ];
    for body in streams {
        let rig = Rig::new().await;
        rig.server
            .push(Scripted::raw(body.clone()))
            .push(Scripted::text("ok"));
        let (_, events) = rig.run("write it").await;
        assert!(
            !rig.ws.join("dup_a.txt").exists() && !rig.ws.join("dup_b.txt").exists(),
            "{body}"
        );
        let result = &rig.results(1)[0];
        assert!(
            result.contains("ambiguous") && result.contains("duplicate key"),
            "{body}: {result}"
        );
        let logged = events.iter().find_map(|e| match e {
            Event::ToolCall { arguments, .. } => Some(arguments.clone()),
            _ => None,
        });
        assert!(
            matches!(logged, Some(Value::String(_))),
            "the raw text is logged, not a last-wins object: {logged:?}"
        );
    }
}

/// Arguments a server sends already parsed (a JSON object in the chunk) with a
/// key named twice cannot be read either: the response is cut there and no
/// call of it runs.
#[tokio::test]
async fn a_parsed_argument_object_with_a_key_named_twice_runs_nothing() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::raw(sse(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"write_file","arguments":{"path":"dup_a.txt","content":"A","path":"dup_b.txt"}}}]}}]}"#,
            FINISH_TOOLS,
            "[DONE]",
        ])))
        .push(Scripted::text("ok"));
    let (_, events) = rig.run("write it").await;
    assert!(!rig.ws.join("dup_a.txt").exists() && !rig.ws.join("dup_b.txt").exists());
    assert!(
        events.iter().any(|e| match e {
            Event::Notice { message } => message.contains("duplicate key `path`"),
            Event::Retry { reason, .. } => reason.contains("duplicate key `path`"),
            _ => false,
        }),
        "{events:?}"
    );
}

/// `[DONE]` proves the body ended, not that the answer did: without any
/// `finish_reason` the response is interrupted and none of its calls run.
#[tokio::test]
async fn done_without_a_finish_reason_is_an_interruption() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::raw(write_call_stream(
            r#"{"path": "nofinish.txt", "content": "x"}"#,
            &["[DONE]"],
        )))
        .push(Scripted::text("ok"));
    let (_, events) = rig.run("write it").await;
    assert!(!rig.ws.join("nofinish.txt").exists());
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::TurnCompleted {
                turn: 1,
                stop_reason: codesmith_protocol::StopReason::Interrupted,
                ..
            }
        )),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Notice { message } if message.contains("finish_reason"))),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Retry { .. })),
        "a billed response is not retried"
    );
}

#[tokio::test]
async fn a_refusal_is_the_answer_and_is_marked_as_one() {
    let rig = Rig::new().await;
    rig.server.push(Scripted::raw(sse(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"refusal":"I can't help with that."}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ])));
    let (outcome, events) = rig.run("do something bad").await;
    assert_eq!(outcome.final_text, "I can't help with that.");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TurnCompleted { refusal: true, .. }))
    );
}

#[tokio::test]
async fn what_the_provider_said_when_it_failed_reaches_the_user_and_the_transcript() {
    let rig = Rig::new().await;
    rig.server.push(Scripted::raw(sse(&[
        r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
        r#"{"error":{"code":400,"message":"Token limit reached"},"choices":[],"usage":{"prompt_tokens":43,"completion_tokens":10}}"#,
    ])));
    let (outcome, events) = rig.run("hi").await;
    assert_eq!(outcome.status, TaskStatus::Interrupted);
    assert_eq!(
        outcome.usage.input_tokens, 43,
        "the cut response was billed"
    );
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Notice { message } if message.contains("Token limit reached"))
        ),
        "{events:?}"
    );
    let home = rig.ws.parent().unwrap().join("home");
    let transcript: String = std::fs::read_dir(codesmith_engine::session::sessions_dir(&home))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect();
    assert!(
        transcript.contains(codesmith_engine::INTERRUPTION_NOTE)
            && transcript.contains("Token limit reached"),
        "{transcript}"
    );
}

fn context_overflow() -> Fault {
    Fault::status(400).body(
        r#"{"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}"#,
    )
}

/// The task's identifying text, as the user typed it.
const TICKET_TASK: &str = "Fix ticket PROJ-4821: keep the last line when parsing notes.txt";

/// The text of the first user message of a request body.
fn first_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn is_summary_request(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You summarize a coding session"))
}

fn push_three_calls(rig: &Rig) {
    rig.server
        .push(
            Scripted::tool_call("c1", "read_file", r#"{"path": "notes.txt"}"#)
                .with_thinking(LONG_THOUGHT),
        )
        .push(Scripted::tool_call("c2", "list_dir", "{}").with_thinking(LONG_THOUGHT))
        .push(Scripted::tool_call(
            "c3",
            "file_search",
            r#"{"pattern": "*.txt"}"#,
        ));
}

/// Three refusals in a row, the summary request among them: the request that finally
/// goes through still starts from the task, byte for byte.
#[tokio::test]
async fn the_task_survives_three_context_length_refusals() {
    let rig = Rig::new().await;
    push_three_calls(&rig);
    rig.server
        .push(context_overflow())
        .push(context_overflow())
        .push(context_overflow())
        .push(Scripted::text("done"));
    let (outcome, events) = rig.run(TICKET_TASK).await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    let bodies = rig.server.request_bodies();
    assert_eq!(
        bodies.len(),
        7,
        "three tool rounds, three refusals, one answer"
    );
    // The summary request overflowed too: exactly one attempt, then a local trim.
    let summaries: Vec<usize> = (0..bodies.len())
        .filter(|&i| is_summary_request(&bodies[i]))
        .collect();
    assert_eq!(summaries, [5]);
    for (i, body) in bodies.iter().enumerate().filter(|(i, _)| *i != 5) {
        let first = first_user_text(body);
        assert!(
            first.starts_with(TICKET_TASK),
            "request {i} lost the task: {first:?}"
        );
    }
    let last = &bodies[6];
    assert!(last.to_string().contains("earlier messages were dropped"));
    // The latest tool result is still there verbatim.
    assert!(rig.results(6).iter().any(|r| r.contains("notes.txt")));
    let notices = events
        .iter()
        .filter(|e| matches!(e, Event::Notice { .. }))
        .count();
    assert_eq!(notices, 2);
}

/// When even the summary does not fit, the last level keeps the task and the latest
/// exchange only.
#[tokio::test]
async fn the_last_level_keeps_the_task_and_the_latest_exchange() {
    let rig = Rig::new().await;
    push_three_calls(&rig);
    rig.server
        .push(context_overflow())
        .push(context_overflow())
        .push(Scripted::text("SUMMARY: looked at notes.txt"))
        .push(context_overflow())
        .push(Scripted::text("done"));
    let (outcome, _) = rig.run(TICKET_TASK).await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    let bodies = rig.server.request_bodies();
    assert_eq!(bodies.len(), 8);
    let last = &bodies[7];
    assert!(first_user_text(last).starts_with(TICKET_TASK));
    let messages = last["messages"].as_array().unwrap();
    // system, the task, the latest call and its result.
    assert_eq!(messages.len(), 4, "{last}");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "c3");
    assert_eq!(messages[3]["tool_call_id"], "c3");
}

#[tokio::test]
async fn a_task_larger_than_the_window_fails_with_a_clear_error() {
    let rig = Rig::new().await;
    for _ in 0..4 {
        rig.server.push(context_overflow());
    }
    let mut engine = rig.engine();
    let err = engine
        .run_task(TICKET_TASK, &mut |_| {})
        .await
        .expect_err("a task that cannot fit must fail");
    assert!(
        matches!(err, codesmith_engine::EngineError::TaskTooLarge { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("the task itself is larger"),
        "{err}"
    );
    // Nothing could be cut, so the request was not sent again and again.
    assert_eq!(rig.server.request_bodies().len(), 1);
    // The task is still in the transcript, untouched.
    assert_eq!(engine.session().messages()[0].text(), TICKET_TASK);
}

#[tokio::test]
async fn a_summary_longer_than_what_it_replaces_is_discarded() {
    let rig = Rig::new().await;
    let rambling = "A summary that goes on and on. ".repeat(200);
    rig.server
        .push(Scripted::text("first"))
        .push(Scripted::text("second"))
        .push(Scripted::text("third"))
        .push(Scripted::text(rambling.clone()));
    let mut engine = rig.engine();
    for task in ["one", "two", "three"] {
        engine.run_task(task, &mut |_| {}).await.unwrap();
    }
    let before = engine.session().messages().to_vec();
    let outcome = engine.compact().await.unwrap();
    assert!(
        matches!(outcome, Compaction::Discarded { before, after, .. } if after >= before),
        "{outcome:?}"
    );
    assert_eq!(
        engine.session().messages(),
        &before[..],
        "the transcript changed"
    );
    // The summary request was bounded by what it would replace: half of its estimate,
    // and never more than the 1024-token cap.
    let bodies = rig.server.request_bodies();
    let budget = bodies.last().unwrap()["max_tokens"].as_u64().unwrap();
    assert!((32..=1024).contains(&budget), "{budget}");
    assert_eq!(budget, 32, "one short turn allows only the minimum");
}

#[tokio::test]
async fn a_compaction_that_is_too_short_to_run_says_so() {
    let rig = Rig::new().await;
    rig.server.push(Scripted::text("hello"));
    let mut engine = rig.engine();
    engine.run_task("hi", &mut |_| {}).await.unwrap();
    assert_eq!(
        engine.compact().await.unwrap(),
        Compaction::NothingToCompact
    );
}

#[tokio::test]
async fn each_round_records_its_usage_for_a_resumed_session() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::tool_call("c1", "list_dir", "{}").usage(120, 7))
        .push(Scripted::text("done").usage(150, 3));
    let mut engine = rig.engine();
    let outcome = engine.run_task("look", &mut |_| {}).await.unwrap();
    let (total, last) = codesmith_engine::session::recorded_usage(engine.session().path());
    assert_eq!(total, outcome.usage);
    assert_eq!((total.input_tokens, total.output_tokens), (270, 10));
    let last = last.unwrap();
    assert_eq!((last.input_tokens, last.output_tokens), (150, 3));
}

/// An answer cut off at the output-token limit names the key that raises the limit and the
/// user config file it goes in, and says when that file must first be created.
#[tokio::test]
async fn an_answer_cut_at_the_token_limit_names_the_key_and_the_file() {
    let rig = Rig::new().await;
    rig.server.push(Scripted::raw(sse(&[
        r#"{"choices":[{"index":0,"delta":{"content":"The crates are"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
        "[DONE]",
    ])));
    let (_, events) = rig.run("list the crates").await;
    let notice = events
        .iter()
        .find_map(|e| match e {
            Event::Notice { message } if message.contains("output-token limit") => {
                Some(message.clone())
            }
            _ => None,
        })
        .expect("a notice about the cut-off answer");
    let config = rig.ws.parent().unwrap().join("home").join("config.toml");
    assert!(
        notice.contains("`max_output_tokens = N`")
            && notice.contains(&config.display().to_string())
            && notice.contains("does not exist yet"),
        "{notice}"
    );
}

/// A read-only tool that panics on its own task, or in blocking work it unwraps, or
/// answers "steady" — to show one call's panic ends that call only.
struct Panicky(&'static str);

#[async_trait::async_trait]
impl codesmith_tools::Tool for Panicky {
    fn name(&self) -> &'static str {
        self.0
    }
    fn description(&self) -> &'static str {
        "A test tool."
    }
    fn input_schema(&self) -> Value {
        serde_json::json!({"type": "object"})
    }
    fn capability(&self) -> codesmith_tools::Capability {
        codesmith_tools::Capability::ReadOnly
    }
    async fn call(
        &self,
        _ctx: &codesmith_tools::ToolContext,
        _args: Value,
    ) -> codesmith_tools::ToolOutcome {
        match self.0 {
            "boom" => panic!("byte index 3 is not a char boundary"),
            "boom_blocking" => {
                let n: usize = tokio::task::spawn_blocking(|| -> usize {
                    panic!("attempt to add with overflow")
                })
                .await
                .unwrap();
                Ok(codesmith_tools::ToolOutput::new(n.to_string()))
            }
            _ => Ok(codesmith_tools::ToolOutput::new("steady answer")),
        }
    }
}

#[tokio::test]
async fn a_panicking_tool_call_is_an_internal_refusal_and_the_turn_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let server = codesmith_testkit::ScriptedServer::start().await;
    let tools: Vec<std::sync::Arc<dyn codesmith_tools::Tool>> = vec![
        std::sync::Arc::new(Panicky("boom")),
        std::sync::Arc::new(Panicky("boom_blocking")),
        std::sync::Arc::new(Panicky("steady")),
    ];
    let mut engine = crate::common::engine(
        &server,
        &ws,
        &tmp.path().join("home"),
        crate::common::Setup {
            extra_tools: tools,
            ..crate::common::Setup::default()
        },
    );
    server
        .push(
            Scripted::tool_call("c1", "boom", "{}")
                .with_tool_call("c2", "steady", "{}")
                .with_tool_call("c3", "boom_blocking", "{}"),
        )
        .push(Scripted::tool_call("c4", "steady", "{}"))
        .push(Scripted::text("finished anyway"));
    let mut results = Vec::new();
    let outcome = engine
        .run_task("go", &mut |e| {
            if let Event::ToolResult { id, ok, output, .. } = e {
                results.push((id, ok, output));
            }
        })
        .await
        .unwrap();
    assert_eq!(outcome.status, TaskStatus::Completed);
    let ids: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    for (id, ok, output) in &results {
        if id == "c2" || id == "c4" {
            assert!(*ok, "{id}: {output}");
            assert!(output.contains("steady answer"), "{output}");
        } else {
            assert!(!*ok, "{id}: {output}");
            assert!(output.contains("INTERNAL"), "{output}");
            assert!(output.contains("failed inside CodeSmith"), "{output}");
            assert!(!output.contains("char boundary"), "host detail: {output}");
            assert!(!output.contains("overflow"), "host detail: {output}");
        }
    }
}
