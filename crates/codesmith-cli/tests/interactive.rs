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

/// Starts `bash -i` in a session, types each of `sends` (each followed by ctrl-c, which
/// clears the line and keeps the refusals from piling up into the consecutive-failure
/// stop) under `exec --approval auto`, and returns the result of each send.
async fn type_each(sb: &Sandbox, sends: &[&str]) -> Vec<Value> {
    let ws = sb.ws();
    let server = ScriptedServer::start().await;
    server.push(call(
        "c0",
        "pty_start",
        json!({"command": "bash --norc --noprofile -i", "timeout_secs": 2}),
    ));
    for (i, text) in sends.iter().enumerate() {
        server
            .push(call(
                &format!("t{i}"),
                "pty_send",
                json!({"id": "pty-1", "text": text, "timeout_secs": 1}),
            ))
            .push(call(
                &format!("k{i}"),
                "pty_send",
                // Arguments differ per call, so the loop guard sees no repeated call.
                json!({"id": "pty-1", "keys": ["ctrl-c"], "quiet_ms": 200 + i}),
            ));
    }
    server
        .push(call("cz", "pty_end", json!({"id": "pty-1"})))
        .push(Scripted::text("Done."));
    let events = exec_json(sb, &server, "type into a shell").await;
    let all: Vec<Value> = results(&events).into_iter().cloned().collect();
    assert_eq!(all.len(), 2 * sends.len() + 2, "{events:?}");
    for cleared in all[2..].iter().step_by(2).take(sends.len()) {
        assert_eq!(cleared["ok"], true, "{cleared}");
    }
    let _ = ws;
    all[1..]
        .iter()
        .step_by(2)
        .take(sends.len())
        .cloned()
        .collect()
}

/// A deny rule holds against a program the exec policy cannot name: an alias or a
/// function typed into a session earlier, a variable as the program, a wrapper the policy
/// does not know. Under `auto` such input is asked about (nobody is here to approve it in
/// `exec`), never run in the sandbox unasked; the refusal names the deny rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_rules_hold_against_names_the_session_defines() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    std::fs::write(
        ws.join(".codesmith/policy.toml"),
        "[[rule]]\npattern = [\"touch\"]\ndecision = \"deny\"\n",
    )
    .unwrap();
    let sends = [
        "alias t=touch\n",
        "t PWN_ALIAS\n",
        "f() { command \"$@\"; }\n",
        "f touch PWN_FN\n",
        "T=touch; $T PWN_VAR\n",
        "watch -n 1 touch PWN_WATCH\n",
    ];
    let typed = type_each(&sb, &sends).await;
    for (i, r) in typed.iter().enumerate() {
        let text = r.to_string();
        // `t PWN_ALIAS` alone names no denied program; the alias was never defined.
        if i == 1 {
            continue;
        }
        assert!(
            text.contains("DENIED") && text.contains("deny rule"),
            "{}: {text}",
            sends[i]
        );
        // The way out fits the run: it is already auto, and allow rules do not help.
        assert!(!text.contains("rerun with `--approval auto`"), "{text}");
    }
    let server = ScriptedServer::start().await;
    server
        .push(call(
            "c1",
            "exec_shell",
            json!({"command": "f() { command \"$@\"; }; f touch PWN_LINE"}),
        ))
        .push(Scripted::text("Done."));
    let events = exec_json(&sb, &server, "define and call").await;
    let line = text_of(results(&events)[0]);
    assert!(line.contains("deny rule"), "{line}");
    assert!(!line.contains("rerun with `--approval auto`"), "{line}");
    // A line typed into a Python REPL is not shell: a deny rule does not hold it up.
    let server = ScriptedServer::start().await;
    server
        .push(call(
            "p1",
            "pty_start",
            json!({"command": "python3 -q", "timeout_secs": 2}),
        ))
        .push(call(
            "p2",
            "pty_send",
            json!({"id": "pty-1", "text": "print('hi' + 'there')\n", "timeout_secs": 2}),
        ))
        .push(call("p3", "pty_end", json!({"id": "pty-1"})))
        .push(Scripted::text("Done."));
    let events = exec_json(&sb, &server, "use a repl").await;
    let printed = text_of(results(&events)[1]);
    assert!(printed.contains("hithere"), "{printed}");
    for file in ["PWN_ALIAS", "PWN_FN", "PWN_VAR", "PWN_WATCH", "PWN_LINE"] {
        assert!(!ws.join(file).exists(), "{file} was created");
    }
}

/// A shell joins lines: a `\\` continuation, an open quote or a line ending in `|` makes
/// one command of several lines, even across `pty_send` calls. The typed text is judged
/// as the commands the shell runs (a deny rule and a hard refusal apply to the joined
/// command), and text that leaves a command open is not typed unasked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_text_is_judged_as_the_commands_the_shell_joins() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    std::fs::write(
        ws.join(".codesmith/policy.toml"),
        "[[rule]]\npattern = [\"touch\"]\ndecision = \"deny\"\nreason = \"no touching\"\n",
    )
    .unwrap();
    let denied = type_each(
        &sb,
        &[
            "tou\\\nch PWN_CONT\n",
            "t\\\nouch PWN_CONT2 && \\\necho x\n",
            "echo 'x\n';touch PWN_QUOTE;echo 'y'\n",
            "cat > /dev/null <<EOF\nx\nEOF\ntou\\\nch PWN_HEREDOC\n",
            "echo 'echo pwn > piped.txt' | \\\nsh\n",
            "echo 'echo pwn > piped2.txt' |\nsh\n",
        ],
    )
    .await;
    for (i, r) in denied.iter().enumerate() {
        let text = r.to_string();
        let why = if i < 4 { "no touching" } else { "shell" };
        assert!(text.contains("DENIED") && text.contains(why), "{i}: {text}");
    }
    let asked = type_each(
        &sb,
        &[
            "tou\\\n",
            "echo 'x\n",
            "ls &&\n",
            "cat <<EOF\n",
            "!!\n",
            "ls\t\n",
            "';touch PWN_SPLIT;echo '\n",
        ],
    )
    .await;
    for (i, why) in [
        "`\\\\`",
        "open quote",
        "`&&`",
        "here-document",
        "history",
        "control characters",
    ]
    .iter()
    .enumerate()
    {
        let text = asked[i].to_string();
        assert!(
            text.contains("approval") || text.contains("DENIED"),
            "{i}: {text}"
        );
        assert!(text.contains(why), "{i}: {why} not in {text}");
    }
    for file in [
        "PWN_CONT",
        "PWN_CONT2",
        "PWN_QUOTE",
        "piped.txt",
        "piped2.txt",
        "PWN_HEREDOC",
        "PWN_SPLIT",
    ] {
        assert!(!ws.join(file).exists(), "{file} was created");
    }
}
