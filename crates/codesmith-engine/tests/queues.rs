//! The engine driven only through its queues (`Engine::spawn`), as every front end drives
//! it: submissions in, events out, approval requests answered with `Op::Approval`, an
//! interrupt as an op, and a shutdown that never hangs on a question nobody answers.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codesmith_engine::{Approvals, EngineHandle, Session};
use codesmith_policy::ApprovalMode;
use codesmith_protocol::{ApprovalAnswer, ContentBlock, Event, Message, Op, TaskStatus};
use codesmith_testkit::{Scripted, ScriptedServer};

/// Every bounded wait of these tests.
const WAIT: Duration = Duration::from_secs(20);

const MARK: &str = r#"{"command": "make mark"}"#;

struct Rig {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
}

fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    std::fs::write(ws.join("Makefile"), "mark:\n\techo ran >> marks.txt\n").unwrap();
    let home = dir.path().join("home");
    Rig {
        _dir: dir,
        ws,
        home,
    }
}

fn marks(ws: &Path) -> usize {
    std::fs::read_to_string(ws.join("marks.txt"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The next event, failing the test when none comes within [`WAIT`].
async fn next(handle: &mut EngineHandle) -> Option<Event> {
    tokio::time::timeout(WAIT, handle.next_event())
        .await
        .expect("no event within the bounded wait")
}

/// Events up to and including the first one `stop` accepts.
async fn until(handle: &mut EngineHandle, stop: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut seen = Vec::new();
    while let Some(event) = next(handle).await {
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
    panic!("the event queue closed first: {seen:#?}");
}

fn finished(e: &Event) -> bool {
    matches!(e, Event::TaskFinished { .. })
}

fn status(events: &[Event]) -> TaskStatus {
    match events.last() {
        Some(Event::TaskFinished { status, .. }) => *status,
        other => panic!("not a task_finished: {other:?}"),
    }
}

/// Every tool call in `messages` has exactly one result, and no result lacks its call.
fn assert_well_formed(messages: &[Message]) {
    let mut calls = HashSet::new();
    let mut results = HashSet::new();
    for message in messages {
        for block in &message.content {
            match block {
                ContentBlock::ToolCall(call) => assert!(calls.insert(call.id.clone())),
                ContentBlock::ToolResult(r) => assert!(results.insert(r.call_id.clone())),
                _ => {}
            }
        }
    }
    assert_eq!(calls, results, "calls and results do not pair up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_runs_to_its_closing_event_through_the_queues() {
    let r = rig();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call("c1", "exec_shell", MARK))
        .push(Scripted::text("all done"));
    let engine = common::engine(&server, &r.ws, &r.home, common::Setup::default());
    let mut handle = engine.spawn(Approvals::Refused);
    let id = handle
        .submit(Op::UserTask {
            text: "mark it".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    assert_eq!(id, 1);
    let events = until(&mut handle, finished).await;
    assert_eq!(status(&events), TaskStatus::Completed);
    let Some(Event::TaskFinished { turns, usage, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(*turns, 2);
    assert!(usage.output_tokens > 0, "{usage:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolResult { ok: true, .. }))
    );
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::AssistantText { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "all done");
    assert_eq!(marks(&r.ws), 1);
    // Shutting down gives the engine back, with its session.
    let engine = handle.shutdown().await.unwrap();
    assert_well_formed(engine.session().messages());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_events_answered_once_or_denied_by_an_op() {
    let r = rig();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call("c1", "exec_shell", MARK))
        .push(Scripted::tool_call("c2", "exec_shell", MARK))
        .push(Scripted::text("done"));
    let setup = common::Setup {
        approval: ApprovalMode::AutoEdit,
        ..common::Setup::default()
    };
    let engine = common::engine(&server, &r.ws, &r.home, setup);
    let mut handle = engine.spawn(Approvals::Asked);
    handle
        .submit(Op::UserTask {
            text: "mark twice".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    let asked = |e: &Event| matches!(e, Event::ApprovalRequested(_));
    // The first call asks; "once" runs it.
    let events = until(&mut handle, asked).await;
    let Some(Event::ApprovalRequested(first)) = events.last() else {
        unreachable!()
    };
    assert_eq!(first.call_id, "c1");
    assert_eq!(first.tool, "exec_shell");
    assert_eq!(first.summary, "make mark");
    assert_eq!(first.agent_id, None);
    // An answer under an id nobody waits on changes nothing and says so.
    handle
        .submit(Op::Approval {
            call_id: "nobody".into(),
            answer: ApprovalAnswer::Once,
            reason: None,
        })
        .await
        .unwrap();
    let events = until(&mut handle, |e| matches!(e, Event::Notice { .. })).await;
    assert!(
        matches!(events.last(), Some(Event::Notice { message }) if message.contains("nobody")),
        "{events:?}"
    );
    handle
        .submit(Op::Approval {
            call_id: first.call_id.clone(),
            answer: ApprovalAnswer::Once,
            reason: None,
        })
        .await
        .unwrap();
    // "Once" covers one call: the second asks again, and "deny" refuses it.
    let events = until(&mut handle, asked).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolResult { id, ok: true, .. } if id == "c1")),
        "{events:?}"
    );
    let Some(Event::ApprovalRequested(second)) = events.last() else {
        unreachable!()
    };
    assert_eq!(second.call_id, "c2");
    handle
        .submit(Op::Approval {
            call_id: second.call_id.clone(),
            answer: ApprovalAnswer::Deny,
            reason: None,
        })
        .await
        .unwrap();
    let events = until(&mut handle, finished).await;
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::ToolResult { id, ok: false, output, .. }
                if id == "c2" && output.contains("The user declined it")
        )),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ApprovalWithdrawn { .. })),
        "an answered request was withdrawn: {events:?}"
    );
    assert_eq!(status(&events), TaskStatus::Completed);
    assert_eq!(marks(&r.ws), 1, "only the approved call ran");
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_op_mid_tool_call_closes_the_turn_and_the_next_task_works() {
    let r = rig();
    let server = ScriptedServer::start().await;
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
    let engine = common::engine(&server, &r.ws, &r.home, common::Setup::default());
    let mut handle = engine.spawn(Approvals::Refused);
    handle
        .submit(Op::UserTask {
            text: "run it".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    until(
        &mut handle,
        |e| matches!(e, Event::ToolCall { id, .. } if id == "c1"),
    )
    .await;
    let pid_file = r.ws.join("pid.txt");
    let start = Instant::now();
    while !pid_file.exists() && start.elapsed() < WAIT {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(pid_file.exists(), "the command never started");
    let started = Instant::now();
    handle.submit(Op::Interrupt).await.unwrap();
    let events = until(&mut handle, finished).await;
    assert_eq!(status(&events), TaskStatus::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the interrupted command was waited for: {:?}",
        started.elapsed()
    );
    for id in ["c1", "c2"] {
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::ToolResult { id: i, ok: false, .. } if i == id)),
            "{id} got no result: {events:?}"
        );
    }
    assert!(
        !r.ws.join("after.txt").exists(),
        "a call after the interrupt ran"
    );

    // The next task on the same handle runs on a well-formed transcript.
    handle
        .submit(Op::UserTask {
            text: "go on".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    let events = until(&mut handle, finished).await;
    assert_eq!(status(&events), TaskStatus::Completed);
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
    let engine = handle.shutdown().await.unwrap();
    let id = engine.session().id().to_string();
    drop(engine);
    assert_well_formed(Session::open(&r.home, &id).unwrap().messages());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_approval_does_not_hold_up_a_shutdown() {
    let r = rig();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call("c1", "exec_shell", MARK))
        .push(Scripted::text("never sent"));
    let setup = common::Setup {
        approval: ApprovalMode::AutoEdit,
        ..common::Setup::default()
    };
    let engine = common::engine(&server, &r.ws, &r.home, setup);
    let mut handle = engine.spawn(Approvals::Asked);
    handle
        .submit(Op::UserTask {
            text: "mark it".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    // A second task waits behind the first and is dropped by the shutdown, unstarted.
    handle
        .submit(Op::UserTask {
            text: "queued".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    until(&mut handle, |e| matches!(e, Event::ApprovalRequested(_))).await;
    let started = Instant::now();
    handle.submit(Op::Shutdown).await.unwrap();
    let mut rest = Vec::new();
    while let Some(event) = next(&mut handle).await {
        rest.push(event);
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the shutdown waited for the question: {:?}",
        started.elapsed()
    );
    assert!(
        rest.iter()
            .any(|e| matches!(e, Event::ApprovalWithdrawn { call_id } if call_id == "c1")),
        "{rest:?}"
    );
    let closings: Vec<TaskStatus> = rest
        .iter()
        .filter_map(|e| match e {
            Event::TaskFinished { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(
        closings,
        [TaskStatus::Cancelled, TaskStatus::Cancelled],
        "{rest:?}"
    );
    assert_eq!(marks(&r.ws), 0, "the unanswered call ran");
    assert_eq!(server.requests().len(), 1, "the queued task started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_handle_denies_a_pending_approval_and_ends_the_engine() {
    let r = rig();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call("c1", "exec_shell", MARK))
        .push(Scripted::text("never sent"));
    let setup = common::Setup {
        approval: ApprovalMode::AutoEdit,
        ..common::Setup::default()
    };
    let engine = common::engine(&server, &r.ws, &r.home, setup);
    let mut handle = engine.spawn(Approvals::Asked);
    handle
        .submit(Op::UserTask {
            text: "mark it".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    until(&mut handle, |e| matches!(e, Event::ApprovalRequested(_))).await;
    let (submit, events, task) = handle.into_parts();
    drop((submit, events));
    let engine = tokio::time::timeout(WAIT, task)
        .await
        .expect("the engine outlived its handle")
        .unwrap();
    assert_eq!(marks(&r.ws), 0);
    assert_well_formed(engine.session().messages());
}

fn closing(e: &Event) -> bool {
    matches!(
        e,
        Event::TaskFinished { .. }
            | Event::CompactionFinished { .. }
            | Event::RestoreFinished { .. }
    )
}

/// Events until `count` closing events have come.
async fn closings(handle: &mut EngineHandle, count: usize) -> Vec<Event> {
    let mut seen = Vec::new();
    while seen.iter().filter(|e| closing(e)).count() < count {
        match next(handle).await {
            Some(event) => seen.push(event),
            None => panic!("the event queue closed first: {seen:#?}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_closes_the_running_work_before_the_work_it_drops() {
    let r = rig();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "touch started; exec sleep 30"}"#,
        ))
        .push(Scripted::text("never sent"));
    let engine = common::engine(&server, &r.ws, &r.home, common::Setup::default());
    let mut handle = engine.spawn(Approvals::Refused);
    handle
        .submit(Op::UserTask {
            text: "run it".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    until(&mut handle, |e| matches!(e, Event::ToolCall { .. })).await;
    let start = Instant::now();
    while !r.ws.join("started").exists() && start.elapsed() < WAIT {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for op in [
        Op::UserTask {
            text: "queued".into(),
            images: Vec::new(),
        },
        Op::Compact,
        Op::Restore {
            task: 1,
            apply: true,
        },
        Op::Interrupt,
    ] {
        handle.submit(op).await.unwrap();
    }
    let events = closings(&mut handle, 4).await;
    // The running task's own events all come before any closing event: a client that
    // reads to the first closing event has seen its whole task.
    let first = events.iter().position(closing).unwrap();
    let result = events
        .iter()
        .position(|e| matches!(e, Event::ToolResult { id, .. } if id == "c1"))
        .unwrap_or_else(|| panic!("c1 got no result: {events:#?}"));
    assert!(
        result < first,
        "a dropped submission closed first: {events:#?}"
    );
    let order: Vec<&str> = events
        .iter()
        .filter(|e| closing(e))
        .map(|e| match e {
            Event::TaskFinished { .. } => "task",
            Event::CompactionFinished { .. } => "compact",
            _ => "restore",
        })
        .collect();
    assert_eq!(order, ["task", "task", "compact", "restore"]);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::RestoreFinished { applied: true, .. })),
        "{events:#?}"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_past_the_waiting_bound_is_refused_in_submission_order() {
    let r = rig();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "sleep 2"}"#,
        ))
        .push(Scripted::text("done"));
    let engine = common::engine(&server, &r.ws, &r.home, common::Setup::default());
    let mut handle = engine.spawn(Approvals::Refused);
    handle
        .submit(Op::UserTask {
            text: "run it".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    until(&mut handle, |e| matches!(e, Event::ToolCall { .. })).await;
    let flood = codesmith_engine::MAX_WAITING + 3;
    for _ in 0..flood {
        handle
            .submit(Op::Restore {
                task: 9,
                apply: false,
            })
            .await
            .unwrap();
    }
    let events = closings(&mut handle, 1 + flood).await;
    let refusals = events
        .iter()
        .filter(|e| matches!(e, Event::Notice { message } if message.contains("already wait")))
        .count();
    assert_eq!(refusals, 3, "{events:#?}");
    let closed: Vec<&Event> = events.iter().filter(|e| closing(e)).collect();
    assert!(
        matches!(
            closed[0],
            Event::TaskFinished {
                status: TaskStatus::Completed,
                ..
            }
        ),
        "a refused submission closed before the running task: {closed:#?}"
    );
    let never = |e: &Event| matches!(e, Event::RestoreFinished { error: Some(m), .. } if m.contains("never started"));
    let refused: Vec<bool> = closed[1..].iter().map(|e| never(e)).collect();
    let mut expected = vec![false; codesmith_engine::MAX_WAITING];
    expected.extend([true; 3]);
    assert_eq!(refused, expected, "{closed:#?}");
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_question_is_not_a_denial_and_is_asked_again() {
    let r = rig();
    let server = ScriptedServer::start().await;
    // The interrupt and the withdrawal it causes land in the same instant; each round
    // gives the race another chance to count as the user's "no".
    const ROUNDS: usize = 6;
    for n in 0..=ROUNDS {
        // The same command each round (a denial is of its text); the timeout differs
        // only to keep the loop guard's count of identical calls out of it.
        let args = format!(r#"{{"command": "make mark", "timeout_secs": {}}}"#, 60 + n);
        server.push(Scripted::tool_call(format!("c{n}"), "exec_shell", &args));
    }
    let setup = common::Setup {
        approval: ApprovalMode::AutoEdit,
        ..common::Setup::default()
    };
    let engine = common::engine(&server, &r.ws, &r.home, setup);
    let mut handle = engine.spawn(Approvals::Asked);
    let asked_or_done = |e: &Event| matches!(e, Event::ApprovalRequested(_)) || finished(e);
    for n in 0..=ROUNDS {
        handle
            .submit(Op::UserTask {
                text: format!("mark it, round {n}"),
                images: Vec::new(),
            })
            .await
            .unwrap();
        let events = until(&mut handle, asked_or_done).await;
        assert!(
            matches!(events.last(), Some(Event::ApprovalRequested(_))),
            "round {n}: the command was not asked about again: {events:#?}"
        );
        handle.submit(Op::Interrupt).await.unwrap();
        let events = until(&mut handle, finished).await;
        assert_eq!(status(&events), TaskStatus::Cancelled);
        assert!(
            !events.iter().any(|e| matches!(
                e,
                Event::ToolResult { output, .. } if output.contains("declined")
            )),
            "round {n}: an interrupt counted as the user's no: {events:#?}"
        );
    }
    assert_eq!(marks(&r.ws), 0);
    handle.shutdown().await.unwrap();
}
