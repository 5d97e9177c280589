//! Long sessions: the loop guard lets edit–test loops run and still stops a model that
//! repeats a failing call with nothing changed.

#![allow(clippy::unwrap_used)]

use codesmith_protocol::{Event, TaskStatus};
use codesmith_testkit::Scripted;
use serde_json::json;

use crate::common::Rig;

/// The `tool_result` events of `events`: (name, ok, output).
fn results(events: &[Event]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult {
                name, ok, output, ..
            } => Some((name.clone(), *ok, output.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_edit_test_loop_of_sixty_calls_is_never_refused() {
    let rig = Rig::new().await;
    let test = json!({"command": "grep -c step notes.txt"}).to_string();
    let read = json!({"path": "notes.txt"}).to_string();
    let mut calls = Vec::new();
    calls.push(("read_file", read.clone()));
    for i in 0..20 {
        let (search, replace) = if i == 0 {
            ("beta".to_string(), "step 1".to_string())
        } else {
            (format!("step {i}"), format!("step {}", i + 1))
        };
        let edit = json!({"path": "notes.txt", "search": search, "replace": replace});
        calls.push(("edit_file", edit.to_string()));
        // The same test command after every edit, and a re-read of the edited file.
        calls.push(("exec_shell", test.clone()));
        calls.push(("read_file", read.clone()));
    }
    // The last round re-runs the test once more with nothing changed since the previous
    // run: allowed (the second identical call in a row).
    calls.push(("exec_shell", test.clone()));
    assert!(calls.len() >= 60);
    for (i, (name, args)) in calls.iter().enumerate() {
        rig.server
            .push(Scripted::tool_call(format!("c{i}"), *name, args.clone()));
    }
    rig.server.push(Scripted::text("done"));
    let mut engine = rig.engine_with_turns(200);
    let mut events = Vec::new();
    let outcome = engine
        .run_task("make the steps count", &mut |e| events.push(e))
        .await
        .unwrap();
    assert_eq!(
        outcome.status,
        TaskStatus::Completed,
        "{}",
        outcome.final_text
    );
    let results = results(&events);
    assert_eq!(results.len(), calls.len());
    for (name, ok, output) in &results {
        assert!(!output.contains("Blocked"), "{name} was refused: {output}");
        assert!(ok, "{name} failed: {output}");
    }
    let disk = std::fs::read_to_string(rig.ws.join("notes.txt")).unwrap();
    assert_eq!(disk, "alpha\nstep 20\n");
}

#[tokio::test]
async fn three_identical_failing_calls_with_no_change_are_stopped() {
    let rig = Rig::new().await;
    let failing = json!({"command": "test -e missing.txt"}).to_string();
    for i in 0..3 {
        rig.server.push(Scripted::tool_call(
            format!("f{i}"),
            "exec_shell",
            failing.clone(),
        ));
    }
    rig.server.push(Scripted::text("giving up"));
    let mut engine = rig.engine_with_turns(20);
    let mut events = Vec::new();
    engine
        .run_task("find the file", &mut |e| events.push(e))
        .await
        .unwrap();
    let results = results(&events);
    assert_eq!(results.len(), 3);
    // A command that exits non-zero is a result (its exit code), not a tool failure.
    assert!(results[0].2.contains(r#""exit_code":1"#), "{results:?}");
    assert!(!results[0].2.contains("Blocked"), "{}", results[0].2);
    assert!(!results[1].2.contains("Blocked"), "{}", results[1].2);
    assert!(
        results[2].2.contains("Blocked: this is call number 3"),
        "{}",
        results[2].2
    );
    assert!(results[2].2.contains("nothing changed"), "{}", results[2].2);
}

#[tokio::test]
async fn the_turn_limit_says_what_was_done() {
    let rig = Rig::new().await;
    rig.server
        .push(Scripted::tool_call(
            "r",
            "read_file",
            json!({"path": "notes.txt"}).to_string(),
        ))
        .push(Scripted::tool_call(
            "e",
            "edit_file",
            json!({"path": "notes.txt", "search": "beta", "replace": "gamma"}).to_string(),
        ));
    let mut engine = rig.engine_with_turns(2);
    let mut events = Vec::new();
    let outcome = engine
        .run_task("edit", &mut |e| events.push(e))
        .await
        .unwrap();
    assert_eq!(outcome.status, TaskStatus::TurnLimit);
    assert!(
        outcome
            .final_text
            .contains("Done so far: 2 tool calls (0 failed); files changed: notes.txt."),
        "{}",
        outcome.final_text
    );
    let error = events.iter().find_map(|e| match e {
        Event::Error { message } => Some(message.clone()),
        _ => None,
    });
    assert_eq!(error.as_deref(), Some(outcome.final_text.as_str()));
}
