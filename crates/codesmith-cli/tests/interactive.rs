//! Interactive shell sessions (`pty_start`, `pty_send`, `pty_read`, `pty_list`,
//! `pty_end`) end to end: `codesmith exec --json` against the scripted model server, the
//! command running in the same sandbox as `exec_shell`.

#![allow(clippy::unwrap_used)]

use crate::common;

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::{Value, json};

use common::{Sandbox, codesmith};

/// Runs `exec --json --approval auto TASK` and returns its events.
pub(crate) async fn exec_json(sb: &Sandbox, server: &ScriptedServer, task: &str) -> Vec<Value> {
    let ws = sb.ws();
    let out = codesmith(
        &sb.home(),
        &common::exec_args(&ws, &server.base_url(), "auto", &["--json", task]),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `tool_result` events, in order.
pub(crate) fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

pub(crate) fn call(id: &str, tool: &str, args: Value) -> Scripted {
    Scripted::tool_call(id, tool, args.to_string())
}

/// Every text field of a result event, joined (the model's text and the details).
fn text_of(result: &Value) -> String {
    result.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_answers_a_python_input_prompt() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.ws().join("ask.py"),
        "name = input('Your name? ')\nprint(f'Hello, {name}!')\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server
        .push(call(
            "c1",
            "pty_start",
            json!({"command": "python3 ask.py", "wait_for": "name\\? $"}),
        ))
        .push(call(
            "c2",
            "pty_send",
            json!({"id": "pty-1", "text": "Alice\n", "wait_for": "Hello"}),
        ))
        .push(Scripted::text("It greeted Alice."));
    let events = exec_json(&sb, &server, "run ask.py and answer Alice").await;
    let r = results(&events);
    assert_eq!(r.len(), 2, "{events:?}");
    let started = text_of(r[0]);
    assert!(started.contains("Your name?"), "{started}");
    assert!(started.contains("\"waited\":\"matched\""), "{started}");
    let answered = text_of(r[1]);
    assert!(answered.contains("Hello, Alice!"), "{answered}");
    // The prompt is not read twice: the second read starts after the first.
    assert!(!answered.contains("Your name?"), "{answered}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repl_is_driven_and_ended_and_ctrl_c_is_delivered() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.ws().join("wait.py"),
        "import time\nprint('ready', flush=True)\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    print('caught ctrl-c', flush=True)\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server
        .push(call(
            "c1",
            "pty_start",
            json!({"command": "python3 -q", "wait_for": ">>> $"}),
        ))
        .push(call(
            "c2",
            "pty_send",
            json!({"id": "pty-1", "text": "print(6 * 7)\n", "wait_for": ">>> $"}),
        ))
        .push(call(
            "c3",
            "pty_send",
            json!({"id": "pty-1", "keys": ["ctrl-d"], "timeout_secs": 5}),
        ))
        .push(call(
            "c4",
            "pty_start",
            json!({"command": "python3 wait.py", "wait_for": "ready"}),
        ))
        .push(call(
            "c5",
            "pty_send",
            json!({"id": "pty-2", "keys": ["ctrl-c"], "wait_for": "caught"}),
        ))
        .push(call("c6", "pty_list", json!({})))
        .push(call("c7", "pty_end", json!({"id": "pty-2"})))
        .push(Scripted::text("Done."));
    let events = exec_json(&sb, &server, "drive a REPL").await;
    let r = results(&events);
    assert_eq!(r.len(), 7, "{events:?}");
    let computed = text_of(r[1]);
    assert!(computed.contains("42"), "{computed}");
    // Ctrl-D ends the REPL: its session reports the exit.
    let ended = text_of(r[2]);
    assert!(ended.contains("\"status\":\"exited\""), "{ended}");
    assert!(ended.contains("\"exit_code\":0"), "{ended}");
    // Ctrl-C reaches the program as SIGINT (KeyboardInterrupt in Python).
    let interrupted = text_of(r[4]);
    assert!(interrupted.contains("caught ctrl-c"), "{interrupted}");
    let listed = text_of(r[5]);
    assert!(
        listed.contains("pty-1") && listed.contains("pty-2"),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_end_with_the_engine_session() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(call(
            "c1",
            "pty_start",
            json!({"command": "sleep 817263", "quiet_ms": 200}),
        ))
        .push(Scripted::text("Left it running."));
    let events = exec_json(&sb, &server, "start a sleeper").await;
    let r = results(&events);
    assert!(
        text_of(r[0]).contains("\"status\":\"running\""),
        "{events:?}"
    );
    // exec has returned: nothing carrying the marker argument is left.
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains("817263"))
        .count();
    assert_eq!(left, 0, "an interactive session outlived exec");
}

/// Typing into a shell session is judged line by line by the exec policy: a deny rule
/// refuses the typed line as it refuses the same `exec_shell` command, even in `auto`; a
/// partial line (which would join what is typed next) is not run unasked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_lines_pass_the_exec_policy() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    std::fs::write(
        ws.join(".codesmith/policy.toml"),
        "[[rule]]\npattern = [\"touch\"]\ndecision = \"deny\"\nreason = \"no touching\"\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server
        .push(call(
            "c1",
            "pty_start",
            json!({"command": "bash --norc --noprofile -i", "timeout_secs": 2}),
        ))
        .push(call(
            "c2",
            "pty_send",
            json!({"id": "pty-1", "text": "echo ok; touch via_pty\n", "timeout_secs": 2}),
        ))
        .push(call(
            "c3",
            "pty_send",
            json!({"id": "pty-1", "text": "tou", "timeout_secs": 1}),
        ))
        .push(call("c4", "pty_end", json!({"id": "pty-1"})))
        .push(Scripted::text("Done."));
    let events = exec_json(&sb, &server, "type into a shell").await;
    let r = results(&events);
    assert_eq!(r.len(), 4, "{events:?}");
    let denied = text_of(r[1]);
    assert!(denied.contains("DENIED"), "{denied}");
    assert!(denied.contains("no touching"), "{denied}");
    let partial = text_of(r[2]);
    assert!(
        partial.contains("DENIED") || partial.contains("approval"),
        "{partial}"
    );
    assert!(!ws.join("via_pty").exists());
}
