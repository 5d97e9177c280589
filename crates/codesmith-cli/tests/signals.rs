//! Every front end (`tool`, `mcp`, `exec`, the UI) stopped by a signal while a command
//! runs without a sandbox: SIGINT, SIGTERM and SIGHUP cancel the call, kill the command's
//! whole tree and exit 128 + the signal; a SIGKILL, which nothing can catch, still leaves
//! no process of the command behind. Checked through `/proc`.

#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer, live_processes, survivors_after};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_codesmith");

/// A home whose config turns the sandbox off, and a workspace.
struct Scratch {
    _dir: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
}

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(home.join("config.toml"), "[sandbox]\nbackend = \"none\"\n").unwrap();
    Scratch {
        _dir: dir,
        home,
        ws: ws.canonicalize().unwrap(),
    }
}

/// A command that detaches `sleep DETACHED` from everything a marker could follow (a new
/// session, an empty environment) and then runs `sleep FOREGROUND` itself.
fn attack(detached: u32, foreground: u32) -> String {
    format!("setsid -f env -i sh -c 'sleep {detached}'; sleep {foreground}")
}

/// Waits (bounded) until both sleeps run; false if `child` ended first or time ran out.
fn wait_running(child: &mut Child, sleeps: [u32; 2]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if sleeps
            .iter()
            .all(|s| !live_processes(&["sleep", &s.to_string()]).is_empty())
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn send(child: &Child, signal: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Waits (bounded) for `child` to exit; kills it and fails when it does not.
fn wait_exit(child: &mut Child, what: &str) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit after the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The sleeps (and the reapers, which carry the front end's command line) still alive;
/// kills them so that a failure leaks nothing.
fn left_behind(sleeps: [u32; 2], front_end: &[&str]) -> Vec<String> {
    let mut left = Vec::new();
    let mut check = |argv: Vec<String>| {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let pids = survivors_after(&argv, Duration::from_secs(2));
        if !pids.is_empty() {
            left.push(argv.join(" "));
            for pid in pids {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
    };
    for s in sleeps {
        check(vec!["sleep".into(), s.to_string()]);
    }
    check(front_end.iter().map(|a| a.to_string()).collect());
    left
}

fn tool_argv(ws: &Path, command: &str) -> Vec<String> {
    let args = json!({ "command": command }).to_string();
    vec![
        BIN.to_string(),
        "tool".into(),
        "exec_shell".into(),
        "--workspace".into(),
        ws.display().to_string(),
        args,
    ]
}

fn spawn(argv: &[String], home: &Path, stdin: Stdio, stdout: Stdio) -> Child {
    Command::new(&argv[0])
        .args(&argv[1..])
        .env("CODESMITH_HOME", home)
        .env("OPENAI_API_KEY", "sk-test-key-for-scripted-server")
        .env("CODESMITH_STREAM_IDLE_TIMEOUT_SECS", "5")
        .env_remove("OPENAI_BASE_URL")
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn tool_stops_on_sigint_sigterm_and_sighup_and_leaves_nothing() {
    for (i, (signal, code)) in [("INT", 130), ("TERM", 143), ("HUP", 129)]
        .into_iter()
        .enumerate()
    {
        let s = scratch();
        let sleeps = [7411 + 2 * i as u32, 7412 + 2 * i as u32];
        let argv = tool_argv(&s.ws, &attack(sleeps[0], sleeps[1]));
        let mut child = spawn(&argv, &s.home, Stdio::null(), Stdio::piped());
        assert!(
            wait_running(&mut child, sleeps),
            "SIG{signal}: never started"
        );
        send(&child, signal);
        let status = wait_exit(&mut child, "codesmith tool");
        let out = child.wait_with_output().unwrap();
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        let left = left_behind(sleeps, &refs);
        assert!(left.is_empty(), "SIG{signal}: left running: {left:?}");
        assert_eq!(status.code(), Some(code), "SIG{signal}");
        let envelope: Value =
            serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
        assert_eq!(
            envelope["error"]["code"], "CANCELLED",
            "SIG{signal}: {envelope}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("SIG{signal}")), "{stderr}");
    }
}

#[test]
fn a_sigkilled_tool_call_leaves_no_command_behind() {
    let s = scratch();
    let sleeps = [7421, 7422];
    let argv = tool_argv(&s.ws, &attack(sleeps[0], sleeps[1]));
    let mut child = spawn(&argv, &s.home, Stdio::null(), Stdio::null());
    assert!(wait_running(&mut child, sleeps), "never started");
    send(&child, "KILL");
    wait_exit(&mut child, "codesmith tool");
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let left = left_behind(sleeps, &refs);
    assert!(left.is_empty(), "left running after SIGKILL: {left:?}");
}

/// Starts `codesmith mcp`, shakes hands and calls `exec_shell` with `command`; returns the
/// server, its stdin (kept open) and its stdout lines.
fn mcp_call(
    s: &Scratch,
    command: &str,
) -> (
    Child,
    Vec<String>,
    std::process::ChildStdin,
    std::sync::mpsc::Receiver<String>,
) {
    let argv = vec![
        BIN.to_string(),
        "mcp".into(),
        "--workspace".into(),
        s.ws.display().to_string(),
    ];
    let mut child = spawn(&argv, &s.home, Stdio::piped(), Stdio::piped());
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "signal-test", "version": "0"}
        }}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "exec_shell", "arguments": {"command": command}
        }}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    stdin.flush().unwrap();
    (child, argv, stdin, lines)
}

#[test]
fn mcp_stops_on_sigterm_answers_the_running_call_and_leaves_nothing() {
    let s = scratch();
    let sleeps = [7431, 7432];
    let (mut child, argv, stdin, lines) = mcp_call(&s, &attack(sleeps[0], sleeps[1]));
    assert!(wait_running(&mut child, sleeps), "never started");
    send(&child, "TERM");
    let status = wait_exit(&mut child, "codesmith mcp");
    drop(stdin);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let left = left_behind(sleeps, &refs);
    assert!(left.is_empty(), "left running: {left:?}");
    assert_eq!(status.code(), Some(143));
    let answers: Vec<Value> = lines
        .try_iter()
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    let call = answers.iter().find(|a| a["id"] == 2);
    assert!(
        call.is_some_and(|a| a.to_string().contains("CANCELLED")),
        "the running call gets its CANCELLED answer: {answers:?}"
    );
}

#[test]
fn a_sigkilled_mcp_server_leaves_no_command_behind() {
    let s = scratch();
    let sleeps = [7433, 7434];
    let (mut child, argv, stdin, _lines) = mcp_call(&s, &attack(sleeps[0], sleeps[1]));
    assert!(wait_running(&mut child, sleeps), "never started");
    send(&child, "KILL");
    wait_exit(&mut child, "codesmith mcp");
    drop(stdin);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let left = left_behind(sleeps, &refs);
    assert!(left.is_empty(), "left running after SIGKILL: {left:?}");
}

/// The model flags for the scripted server.
fn model_flags(ws: &Path, url: &str) -> Vec<String> {
    [
        "--workspace",
        &ws.display().to_string(),
        "--provider",
        "openai",
        "--base-url",
        url,
        "--model",
        "scripted",
        "--approval",
        "auto",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The tool results recorded in the only session under `home`.
fn recorded_results(home: &Path) -> Vec<String> {
    let dir = home.join("sessions");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "message")
        .flat_map(|r| {
            r["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

async fn scripted(command: &str) -> ScriptedServer {
    let server = ScriptedServer::start().await;
    let args = json!({ "command": command }).to_string();
    server
        .push(Scripted::tool_call("c1", "exec_shell", &args))
        .push(Scripted::text("unreachable"));
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_stops_on_sighup_unsandboxed_and_leaves_nothing() {
    let s = scratch();
    let sleeps = [7441, 7442];
    let server = scripted(&attack(sleeps[0], sleeps[1])).await;
    let mut argv = vec![BIN.to_string(), "exec".into()];
    argv.extend(model_flags(&s.ws, &server.base_url()));
    argv.push("Run the slow command".into());
    let (home, ws_argv) = (s.home.clone(), argv.clone());
    let (status, left) = tokio::task::spawn_blocking(move || {
        let mut child = spawn(&ws_argv, &home, Stdio::null(), Stdio::null());
        assert!(wait_running(&mut child, sleeps), "never started");
        send(&child, "HUP");
        let status = wait_exit(&mut child, "codesmith exec");
        let refs: Vec<&str> = ws_argv.iter().map(String::as_str).collect();
        (status, left_behind(sleeps, &refs))
    })
    .await
    .unwrap();
    assert!(left.is_empty(), "left running: {left:?}");
    assert_eq!(status.code(), Some(129));
    let results = recorded_results(&s.home);
    assert!(
        results.len() == 1 && results[0].contains("CANCELLED"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_exec_leaves_no_command_behind() {
    let s = scratch();
    let sleeps = [7443, 7444];
    let server = scripted(&attack(sleeps[0], sleeps[1])).await;
    let mut argv = vec![BIN.to_string(), "exec".into()];
    argv.extend(model_flags(&s.ws, &server.base_url()));
    argv.push("Run the slow command".into());
    let home = s.home.clone();
    let left = tokio::task::spawn_blocking(move || {
        let mut child = spawn(&argv, &home, Stdio::null(), Stdio::null());
        assert!(wait_running(&mut child, sleeps), "never started");
        send(&child, "KILL");
        wait_exit(&mut child, "codesmith exec");
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        left_behind(sleeps, &refs)
    })
    .await
    .unwrap();
    assert!(left.is_empty(), "left running after SIGKILL: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_line_mode_ui_stops_on_sigterm_closes_the_turn_and_leaves_nothing() {
    let s = scratch();
    let sleeps = [7451, 7452];
    let server = scripted(&attack(sleeps[0], sleeps[1])).await;
    let mut argv = vec![BIN.to_string()];
    argv.extend(model_flags(&s.ws, &server.base_url()));
    let home = s.home.clone();
    let (status, left, stderr) = tokio::task::spawn_blocking(move || {
        let mut child = spawn(&argv, &home, Stdio::piped(), Stdio::null());
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "Run the slow command").unwrap();
        stdin.flush().unwrap();
        assert!(wait_running(&mut child, sleeps), "never started");
        send(&child, "TERM");
        let status = wait_exit(&mut child, "the UI");
        drop(stdin);
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        (status, left_behind(sleeps, &refs), stderr)
    })
    .await
    .unwrap();
    assert!(left.is_empty(), "left running: {left:?}");
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("codesmith resume"), "{stderr}");
    let results = recorded_results(&s.home);
    assert!(
        results.len() == 1 && results[0].contains("CANCELLED"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_a_line_mode_approval_question_interrupts_the_task() {
    let s = scratch();
    let server = scripted("rm -rf build; touch marked").await;
    let mut argv = vec![BIN.to_string()];
    argv.extend(model_flags(&s.ws, &server.base_url()));
    let mode = argv.iter().position(|a| a == "auto").unwrap();
    argv[mode] = "auto-edit".into();
    let home = s.home.clone();
    let (status, out) = tokio::task::spawn_blocking(move || {
        let mut child = spawn(&argv, &home, Stdio::piped(), Stdio::piped());
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in
                std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut out = Vec::new();
        let until = |what: &str, out: &mut Vec<String>| {
            let deadline = Instant::now() + Duration::from_secs(20);
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                match lines.recv_timeout(left) {
                    Ok(line) => {
                        let hit = line.contains(what);
                        out.push(line);
                        if hit {
                            return true;
                        }
                    }
                    Err(_) => break,
                }
            }
            false
        };
        writeln!(stdin, "Mark it").unwrap();
        stdin.flush().unwrap();
        assert!(until("approve", &mut out), "no question: {out:#?}");
        send(&child, "INT");
        let interrupted = until("interrupted", &mut out);
        // Input stays open: only the interrupt can end the question.
        drop(stdin);
        let status = wait_exit(&mut child, "the UI");
        assert!(interrupted, "Ctrl-C did not end the question: {out:#?}");
        (status, out)
    })
    .await
    .unwrap();
    assert!(status.success(), "{status:?} {out:#?}");
    assert!(!s.ws.join("marked").exists(), "the call ran");
    let results = recorded_results(&s.home);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(server.requests().len(), 1, "the task went on after Ctrl-C");
}
