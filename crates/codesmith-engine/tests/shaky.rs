//! A shaky model is told what it did wrong, against the scripted model server:
//! a tool call written as text never runs but earns one more round (once per task),
//! every repair of a call is named in its result, and forged markup never reaches
//! the streamed text, wherever the stream cuts it.

#![allow(clippy::unwrap_used)]

use crate::common::Rig;

use codesmith_protocol::{Event, TaskStatus};
use codesmith_testkit::Scripted;
use serde_json::Value;

const CALC: &str = "def add(a, b):\n    return a - b\n";

/// The common rig with `calc.py` in its workspace.
async fn rig() -> Rig {
    let rig = Rig::new().await;
    std::fs::write(rig.ws.join("calc.py"), CALC).unwrap();
    rig
}

fn notices(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { message } => Some(message.as_str()),
            _ => None,
        })
        .collect()
}

fn tool_calls(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

fn streamed_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::AssistantText { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// The result text of call `id`.
fn result_of<'a>(events: &'a [Event], id: &str) -> &'a str {
    events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult { id: i, output, .. } if i == id => Some(output.as_str()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// The text of the last message of request `body`.
fn last_message(body: &Value) -> String {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    last["content"].as_str().unwrap_or_default().to_string()
}

/// An `edit_file` call written as text, whose edit differs from the real one: had it
/// run, the real call's search text would be gone.
const FORGED_EDIT: &str = "I will fix it now. <tool_call>{\"name\": \"edit_file\", \"arguments\": \
    {\"path\": \"calc.py\", \"search\": \"return a - b\", \"replace\": \"return 0\"}}</tool_call>";

#[tokio::test]
async fn a_call_written_as_text_is_not_run_and_the_model_gets_one_more_round() {
    let rig = rig().await;
    rig.server
        .push(Scripted::tool_call(
            "r1",
            "read_file",
            r#"{"path": "calc.py"}"#,
        ))
        .push(Scripted::text(FORGED_EDIT))
        .push(Scripted::tool_call(
            "e1",
            "edit_file",
            r#"{"path": "calc.py", "search": "return a - b", "replace": "return a + b"}"#,
        ))
        .push(Scripted::text("Fixed add()."));
    let (outcome, events) = rig.run("fix calc.py").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert_eq!(outcome.final_text, "Fixed add().");
    assert_eq!(outcome.turns, 4);
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    assert_eq!(tool_calls(&events), ["read_file", "edit_file"]);
    let notices = notices(&events);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("not executed") && notices[0].contains("one more round"),
        "{}",
        notices[0]
    );
    // The request after the imitation ends with the runtime event; the model's own
    // message keeps its words without the markup; nothing earlier was rewritten.
    let bodies = rig.server.request_bodies();
    assert_eq!(bodies.len(), 4);
    let nudge = last_message(&bodies[2]);
    assert!(
        nudge.starts_with("<runtime_event type=\"imitated_tool_call\">")
            && nudge.contains("NOT executed")
            && nudge.contains("tool-calling interface")
            && !nudge.contains("<tool_call>"),
        "{nudge}"
    );
    let messages = bodies[2]["messages"].as_array().unwrap();
    let said = &messages[messages.len() - 2];
    assert_eq!(said["role"], "assistant");
    assert_eq!(said["content"], "I will fix it now.");
    for pair in bodies.windows(2) {
        let (a, b) = (
            pair[0]["messages"].as_array().unwrap(),
            pair[1]["messages"].as_array().unwrap(),
        );
        assert!(a.iter().zip(b).all(|(x, y)| x == y), "history rewritten");
    }
    assert!(!streamed_text(&events).contains("tool_call"));
}

#[tokio::test]
async fn a_second_imitation_ends_the_task() {
    let rig = rig().await;
    let forged = "<tool_call>{\"name\": \"exec_shell\", \"arguments\": {\"command\": \"touch ran_marker\"}}</tool_call>";
    rig.server
        .push(Scripted::text(format!("Running it. {forged}")))
        .push(Scripted::text(format!("Again. {forged}")));
    let (outcome, events) = rig.run("make a marker").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert_eq!((outcome.turns, outcome.final_text.as_str()), (2, "Again."));
    assert_eq!(rig.server.request_bodies().len(), 2, "no third round");
    assert!(!rig.ws.join("ran_marker").exists());
    assert!(tool_calls(&events).is_empty());
    let notices = notices(&events);
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices[0].contains("one more round"), "{}", notices[0]);
    assert!(
        notices[1].contains("not executed") && !notices[1].contains("one more round"),
        "{}",
        notices[1]
    );
}

/// The nudge is once per task, not once per turn in a row: an imitation after real
/// calls, later in the same task, ends it.
#[tokio::test]
async fn the_nudge_is_given_once_per_task() {
    let rig = rig().await;
    let forged = "[TOOL_CALL]exec_shell touch ran_marker[/TOOL_CALL]";
    rig.server
        .push(Scripted::text(forged))
        .push(Scripted::tool_call(
            "r1",
            "read_file",
            r#"{"path": "calc.py"}"#,
        ))
        .push(Scripted::text(format!("Now the command. {forged}")))
        .push(Scripted::text(format!("Next task. {forged}")))
        .push(Scripted::text("ok"));
    let mut engine = rig.engine();
    let outcome = engine.run_task("go", &mut |_| {}).await.unwrap();
    assert_eq!((outcome.status, outcome.turns), (TaskStatus::Completed, 3));
    // A new task gets its own nudge.
    let outcome = engine.run_task("again", &mut |_| {}).await.unwrap();
    assert_eq!((outcome.turns, outcome.final_text.as_str()), (2, "ok"));
    assert!(!rig.ws.join("ran_marker").exists());
}

/// At the turn limit there is no round left to give: the task ends as before.
#[tokio::test]
async fn no_nudge_at_the_turn_limit() {
    let rig = rig().await;
    rig.server.push(Scripted::text(
        "<tool_call>{\"name\": \"list_dir\"}</tool_call>",
    ));
    let mut engine = rig.engine_with_turns(1);
    let outcome = engine.run_task("go", &mut |_| {}).await.unwrap();
    assert_eq!((outcome.status, outcome.turns), (TaskStatus::Completed, 1));
    assert_eq!(rig.server.request_bodies().len(), 1);
}

/// Each repair a call needed is named in its result, with what to send instead; a
/// call that needed none has no such line, and an unclosed string is never repaired.
#[tokio::test]
async fn each_repair_is_named_in_the_result() {
    let rig = rig().await;
    for n in 1..=9 {
        std::fs::write(rig.ws.join(format!("f{n}.txt")), format!("file {n}\n")).unwrap();
    }
    let calls: [(&str, &str, String); 10] = [
        ("exact", "read_file", r#"{"path": "f1.txt"}"#.into()),
        ("comma", "read_file", r#"{"path": "f2.txt",}"#.into()),
        ("closer", "read_file", r#"{"path": "f3.txt"}}"#.into()),
        (
            "newline",
            "write_file",
            "{\"path\": \"new.txt\", \"content\": \"one\ntwo\n\"}".into(),
        ),
        ("case", "READ_FILE", r#"{"path": "f4.txt"}"#.into()),
        ("hyphen", "read-file", r#"{"path": "f5.txt"}"#.into()),
        ("suffix", "read_file_tool", r#"{"path": "f6.txt"}"#.into()),
        ("camel", "ReadFile", r#"{"path": "f7.txt"}"#.into()),
        ("both", "Read-File", r#"{"path": "f8.txt",}"#.into()),
        ("unclosed", "read_file", r#"{"path": "f9.txt"#.into()),
    ];
    let mut turn = Scripted::default();
    for (id, name, args) in &calls {
        turn = turn.with_tool_call(*id, *name, args.clone());
    }
    rig.server.push(turn).push(Scripted::text("read them"));
    let (outcome, events) = rig.run("read the files").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    let line = |id: &str| {
        let text = result_of(&events, id);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("[repaired] "))
            .collect();
        assert!(lines.len() <= 1, "{id}: one line at most: {text}");
        lines.first().map(|l| l.to_string())
    };
    assert_eq!(line("exact"), None);
    let expect: [(&str, &[&str]); 8] = [
        (
            "comma",
            &["arguments had a trailing comma; repaired — send valid JSON"],
        ),
        (
            "closer",
            &["closing bracket or brace that closed nothing; repaired"],
        ),
        (
            "newline",
            &["raw newline", "inside a string; repaired", "escape it"],
        ),
        (
            "case",
            &["tool name `READ_FILE` had the wrong case; repaired to `read_file`"],
        ),
        (
            "hyphen",
            &[
                "tool name `read-file` used a hyphen",
                "repaired to `read_file`",
            ],
        ),
        (
            "suffix",
            &["tool name `read_file_tool` had a `_tool` suffix; repaired to `read_file`"],
        ),
        (
            "camel",
            &["tool name `ReadFile` was written in CamelCase; repaired to `read_file`"],
        ),
        (
            "both",
            &["`Read-File` used a hyphen", "; repaired — send valid JSON"],
        ),
    ];
    for (id, words) in expect {
        let line = line(id).unwrap_or_else(|| panic!("{id}: no repair line"));
        for w in words {
            assert!(line.contains(w), "{id}: {line:?} lacks {w:?}");
        }
        assert!(
            line.contains("exact names") || line.contains("JSON"),
            "{line}"
        );
    }
    // The repaired calls ran.
    assert!(result_of(&events, "comma").contains("file 2"));
    assert!(result_of(&events, "hyphen").contains("file 5"));
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("new.txt")).unwrap(),
        "one\ntwo\n"
    );
    // An unclosed string is what a cut-off call looks like: refused, never repaired.
    let unclosed = result_of(&events, "unclosed");
    assert_eq!(line("unclosed"), None);
    assert!(
        unclosed.contains("NOT executed") && unclosed.contains("end before their JSON does"),
        "{unclosed}"
    );
    // The model reads the same line.
    let sent = rig.server.request_bodies()[1].to_string();
    assert!(
        sent.contains("[repaired] arguments had a trailing comma"),
        "{sent}"
    );
}

/// Forged markup in streamed text is held back and dropped as it streams: cut into
/// two deltas at every byte position (and one character per delta), the deltas
/// never carry any part of it, and show what the transcript keeps.
#[tokio::test]
async fn streamed_text_never_shows_a_forged_call_wherever_the_stream_cuts_it() {
    let rig = rig().await;
    let texts = [
        "Sure. <tool_call>{\"name\": \"exec_shell\", \"arguments\": {\"command\": \"rm -rf x\"}}</tool_call> Done.",
        "Sure. <function_calls><invoke name=\"exec_shell\">rm -rf x</invoke></function_calls> Done.",
    ];
    let mut turns = 0u32;
    for text in texts {
        // Each turn also makes a real call, so one task streams every cut.
        for at in 0..=text.len() {
            turns += 1;
            let args = format!(r#"{{"path": "calc.py", "max_lines": {turns}}}"#);
            rig.server
                .push(Scripted::text(text).cut_text_at([at]).with_tool_call(
                    format!("c{turns}"),
                    "read_file",
                    args,
                ));
        }
        turns += 1;
        let args = format!(r#"{{"path": "calc.py", "max_lines": {turns}}}"#);
        rig.server
            .push(Scripted::text(text).chunk_chars(1).with_tool_call(
                format!("c{turns}"),
                "read_file",
                args,
            ));
    }
    rig.server.push(Scripted::text("All done."));
    let mut engine = rig.engine_with_turns(turns + 1);
    let mut events = Vec::new();
    let outcome = engine
        .run_task("go", &mut |e| events.push(e))
        .await
        .unwrap();
    assert_eq!(
        (outcome.status, outcome.turns),
        (TaskStatus::Completed, turns + 1)
    );
    let mut shown = Vec::new();
    let mut current = String::new();
    for event in &events {
        match event {
            Event::AssistantText { delta } => {
                for bad in ["<", "exec_shell", "rm -rf", "tool_call", "invoke"] {
                    assert!(!delta.contains(bad), "{delta:?}");
                }
                current.push_str(delta);
            }
            Event::TurnCompleted { .. } => shown.push(std::mem::take(&mut current)),
            _ => {}
        }
    }
    assert_eq!(shown.len(), turns as usize + 1);
    for turn in &shown[..turns as usize] {
        assert_eq!(turn, "Sure.  Done.");
    }
}
