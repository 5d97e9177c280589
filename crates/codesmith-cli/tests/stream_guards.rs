//! Stream guards end to end: unreadable events of one response are skipped with a notice
//! up to the cap (`MAX_STREAM_ERRORS_BEFORE_FAIL` = 5, the fifth fails the call), and a
//! response that skipped any event never runs its tool calls.

#![allow(clippy::unwrap_used)]

use crate::common::{Sandbox, codesmith};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

fn chunk(delta: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{delta}}}]}}\n\n")
}

const GARBAGE: &str = "data: {\"choices\": [oops\n\n";
const FINISH: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

async fn run(sb: &Sandbox, server: &ScriptedServer) -> (Option<i32>, Vec<Value>) {
    let ws = sb.ws();
    let out = codesmith(
        &sb.home(),
        &crate::common::exec_args(&ws, &server.base_url(), "auto", &["--json", "go"]),
    )
    .await;
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (out.status.code(), events)
}

fn notices(events: &[Value]) -> usize {
    events
        .iter()
        .filter(|e| e["type"] == "notice" && e.to_string().contains("it was skipped"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_unreadable_events_are_skipped_and_the_fifth_fails_the_call() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    let mut body = chunk(r#"{"content":"Hello "}"#);
    body.push_str(&GARBAGE.repeat(4));
    body.push_str(&chunk(r#"{"content":"world"}"#));
    body.push_str(FINISH);
    server.push(Scripted::raw(body));
    let (code, events) = run(&sb, &server).await;
    assert_eq!(code, Some(0), "{events:?}");
    assert_eq!(notices(&events), 4, "{events:?}");
    let last = events.last().unwrap();
    assert_eq!(last["status"], "completed", "{events:?}");

    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    let mut body = chunk(r#"{"content":"Hello "}"#);
    body.push_str(&GARBAGE.repeat(5));
    body.push_str(&chunk(r#"{"content":"world"}"#));
    body.push_str(FINISH);
    server.push(Scripted::raw(body));
    let (code, events) = run(&sb, &server).await;
    assert_ne!(code, Some(0), "{events:?}");
    assert_eq!(notices(&events), 4, "{events:?}");
    assert!(
        events.iter().any(|e| e
            .to_string()
            .contains("5 events of one response could not be read")),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_in_a_response_with_a_skipped_event_never_runs() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    let mut body = chunk(
        r#"{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\"path\": \"made.txt\", "}}]}"#,
    );
    body.push_str(GARBAGE);
    body.push_str(&chunk(
        r#"{"tool_calls":[{"index":0,"function":{"arguments":"\"content\": \"x\"}"}}]}"#,
    ));
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
    );
    server
        .push(Scripted::raw(body))
        .push(Scripted::text("I will send it again."));
    let (_, events) = run(&sb, &server).await;
    // The call arrived whole, but a skipped event may have held part of it: not run.
    assert!(!sb.ws().join("made.txt").exists());
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(result["ok"], false, "{result}");
    assert!(
        result["output"].as_str().unwrap().contains("NOT executed"),
        "{result}"
    );
}
