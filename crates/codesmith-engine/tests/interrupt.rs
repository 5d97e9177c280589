//! An interrupt is the engine's own operation: cancelling a task while a tool call runs
//! stops the call, answers every call of the turn, and leaves a transcript that the next
//! task (and a resumed session) can send as it is — with no front-end code involved.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use codesmith_engine::Session;
use codesmith_protocol::TaskStatus;
use codesmith_protocol::{ContentBlock, Event, Message};
use codesmith_testkit::{Scripted, ScriptedServer};
use codesmith_tools::CancellationToken;

/// Every tool call in `messages` has exactly one result, and no result lacks its call.
fn assert_well_formed(messages: &[Message]) {
    let mut calls = HashSet::new();
    let mut results = Vec::new();
    for message in messages {
        for block in &message.content {
            match block {
                ContentBlock::ToolCall(call) => assert!(calls.insert(call.id.clone())),
                ContentBlock::ToolResult(result) => results.push(result.call_id.clone()),
                _ => {}
            }
        }
    }
    let answered: HashSet<_> = results.iter().cloned().collect();
    assert_eq!(answered.len(), results.len(), "a call answered twice");
    assert_eq!(calls, answered, "calls and results do not pair up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_tool_call_stops_it_and_keeps_the_transcript_well_formed() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let home = dir.path().join("home");
    let server = ScriptedServer::start().await;
    // One response with two calls: a long command, then a write that must never run.
    server
        .push(
            Scripted::tool_call(
                "c1",
                "exec_shell",
                r#"{"command": "echo $$ > pid.txt; exec sleep 30"}"#,
            )
            .with_tool_call(
                "c2",
                "write_file",
                r#"{"path": "after.txt", "content": "too late\n"}"#,
            ),
        )
        .push(Scripted::text("resumed fine"));

    let mut engine = common::engine(&server, &ws, &home, common::Setup::default());
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let pid_file = ws.join("pid.txt");
    // Cancel once the command is really running (it has written its pid).
    let watcher = tokio::spawn(async move {
        let start = Instant::now();
        while !pid_file.exists() && start.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let mut events = Vec::new();
    let started = Instant::now();
    let outcome = engine
        .run_task_cancellable("run it", cancel, &mut |e| events.push(e))
        .await
        .unwrap();
    watcher.await.unwrap();
    assert_eq!(outcome.status, TaskStatus::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the cancelled command was waited for: {:?}",
        started.elapsed()
    );

    // The command's process is gone and the second call never ran.
    let pid: i32 = std::fs::read_to_string(ws.join("pid.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.contains(") Z "),
        "the command survived the interrupt: {state}"
    );
    assert!(
        !ws.join("after.txt").exists(),
        "a call after the interrupt ran"
    );

    // Both calls got a result event, and the transcript pairs every call with a result.
    let result_ids: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { id, ok, .. } => Some((id.clone(), *ok)),
            _ => None,
        })
        .collect();
    assert!(
        result_ids.iter().any(|(id, ok)| id == "c1" && !ok),
        "{result_ids:?}"
    );
    assert!(
        result_ids.iter().any(|(id, ok)| id == "c2" && !ok),
        "{result_ids:?}"
    );
    assert_well_formed(engine.session().messages());

    // What is on disk is the same well-formed transcript, and a next task sends it as is.
    let id = engine.session().id().to_string();
    drop(engine);
    let reopened = Session::open(&home, &id).unwrap();
    assert_well_formed(reopened.messages());
    drop(reopened);
    let session = Session::open(&home, &id).unwrap();
    let mut engine = common::engine_on(&server, &ws, &home, session, common::Setup::default());
    let outcome = engine.run_task("go on", &mut |_| {}).await.unwrap();
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert_eq!(outcome.final_text, "resumed fine");
    let body = server.request_bodies().pop().unwrap();
    let sent = body["messages"].as_array().unwrap();
    let calls: HashSet<_> = sent
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let answered: HashSet<_> = sent
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(calls, answered);
    assert_eq!(calls.len(), 2);
}
