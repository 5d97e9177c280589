//! `codesmith exec` killed and interrupted mid-session, against the scripted model server:
//! a SIGKILL at varied moments never costs the session, and a SIGTERM during a tool call
//! kills the command, records the interruption and exits 143.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer, live_processes};
use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

/// SIGKILLs that must land on a running `exec`.
const KILLS: usize = 100;
/// Attempts at most (a run may finish before its kill lands).
const MAX_ATTEMPTS: usize = 160;
/// Runs at once.
const PARALLEL: usize = 8;

fn exec_command(home: &Path, ws: &Path, base_url: &str, extra: &[&str], task: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.arg("exec")
        .arg("--workspace")
        .arg(ws)
        .args([
            "--provider",
            "openai",
            "--base-url",
            base_url,
            "--model",
            "scripted",
            "--approval",
            "auto",
            "--json",
        ])
        .args(extra)
        .arg(task)
        .env("CODESMITH_HOME", home)
        .env("OPENAI_API_KEY", "sk-test-key-for-scripted-server")
        .env("CODESMITH_STREAM_IDLE_TIMEOUT_SECS", "5")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// A multi-turn script with tool calls: shell commands, a write, a read, an answer.
/// Streams are paced so a kill can land in a stream, in a tool call or between them.
fn push_session_script(server: &ScriptedServer) {
    server
        .push(
            Scripted::tool_call("c1", "exec_shell", r#"{"command": "echo one; sleep 0.1"}"#)
                .with_text("Running the first step.")
                .pace_ms(5),
        )
        .push(
            Scripted::tool_call(
                "c2",
                "write_file",
                r#"{"path": "notes.txt", "content": "crash test\n"}"#,
            )
            .with_tool_call("c3", "exec_shell", r#"{"command": "sleep 0.15; echo two"}"#)
            .pace_ms(5),
        )
        .push(
            Scripted::tool_call("c4", "read_file", r#"{"path": "notes.txt"}"#)
                .with_text("Checking the file.")
                .pace_ms(5),
        )
        .push(Scripted::text("All steps are done; notes.txt holds the line.").pace_ms(5));
}

/// The session files under `home` (without the staging files of a session being created).
fn session_ids(home: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(home.join("sessions")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            name.strip_suffix(".jsonl")
                .filter(|id| !id.starts_with('.'))
                .map(str::to_string)
        })
        .collect()
}

/// A run killed mid-session: the session to resume.
#[derive(Debug)]
struct Killed {
    n: usize,
    home: PathBuf,
    ws: PathBuf,
    id: String,
    _dir: tempfile::TempDir,
}

/// Runs `exec` and SIGKILLs it after a delay; `None` when the run finished first.
async fn one_attempt(n: usize) -> Option<Killed> {
    let dir = tempfile::tempdir().unwrap();
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let server = ScriptedServer::start().await;
    push_session_script(&server);
    let mut child: Child = exec_command(
        &home,
        &ws,
        &server.base_url(),
        &[],
        &format!("Task {n}: run the steps"),
    )
    .spawn()
    .unwrap();
    // Wait for the session to exist, then kill after a delay that varies from 0 to ~900 ms.
    let deadline = Instant::now() + Duration::from_secs(20);
    while session_ids(&home).is_empty() {
        if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let delay = Duration::from_millis(((n * 7919) % 90) as u64 * 10);
    tokio::time::sleep(delay).await;
    let running = child.try_wait().unwrap().is_none();
    if running {
        child.start_kill().unwrap();
    }
    let status = child.wait().await.unwrap();
    let ids = session_ids(&home);
    if !running {
        assert!(status.success(), "run {n} failed before its kill: {status}");
        return None;
    }
    assert_eq!(ids.len(), 1, "run {n}: no session file after the kill");
    Some(Killed {
        n,
        home,
        ws,
        id: ids[0].clone(),
        _dir: dir,
    })
}

/// Checks that `body` (an OpenAI request) is a transcript both dialects accept: after the
/// system prompt it starts with a user turn, no two assistant messages follow each other,
/// every tool call is answered right after its message, exactly once, and no result comes
/// without its call. Consecutive user messages (a task after tool results or after a
/// runtime event) are accepted by both: Anthropic folds them into one turn.
fn assert_valid_alternation(body: &Value, what: &str) {
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system", "{what}");
    assert_eq!(
        messages[1]["role"], "user",
        "{what}: the transcript must start with the user"
    );
    let mut previous = "system";
    let mut pending: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate().skip(1) {
        let role = m["role"].as_str().unwrap();
        match role {
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                let at = pending.iter().position(|p| p == id);
                assert!(at.is_some(), "{what}: result for unknown call {id} at {i}");
                pending.remove(at.unwrap());
            }
            "user" => assert!(
                pending.is_empty(),
                "{what}: calls {pending:?} unanswered at {i}"
            ),
            "assistant" => {
                assert!(
                    pending.is_empty(),
                    "{what}: calls {pending:?} unanswered at {i}"
                );
                assert_ne!(
                    previous, "assistant",
                    "{what}: two assistant turns in a row at {i}"
                );
                pending = m["tool_calls"]
                    .as_array()
                    .map(|calls| {
                        calls
                            .iter()
                            .map(|c| c["id"].as_str().unwrap().to_string())
                            .collect()
                    })
                    .unwrap_or_default();
            }
            other => panic!("{what}: unexpected role {other}"),
        }
        previous = role;
    }
    assert!(
        pending.is_empty(),
        "{what}: the request ends with unanswered calls"
    );
    assert_eq!(messages.last().unwrap()["role"], "user", "{what}");
}

/// Where a kill left the session file: a torn last line, or the kind of the last message.
fn where_killed(home: &Path, id: &str) -> &'static str {
    let bytes = std::fs::read(home.join(format!("sessions/{id}.jsonl"))).unwrap();
    if !bytes.ends_with(b"\n") {
        return "torn record";
    }
    let text = String::from_utf8_lossy(&bytes);
    let last = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["type"] == "message");
    let Some(record) = last else {
        return "before the task";
    };
    let m = &record["message"];
    let kinds: Vec<&str> = m["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    match (m["role"].as_str().unwrap(), kinds.contains(&"tool_call")) {
        ("assistant", true) => "during tool calls",
        ("assistant", false) => "after the answer",
        _ if kinds.contains(&"tool_result") => "after tool results",
        _ => "waiting for the model",
    }
}

async fn resume(killed: Killed) -> &'static str {
    let Killed {
        n, home, ws, id, ..
    } = &killed;
    let moment = where_killed(home, id);
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("Resumed and done."));
    let out = exec_command(home, ws, &server.base_url(), &["--resume", id], "continue").output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "resume {n} of {id} failed: {stderr}"
    );
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 1, "resume {n}");
    let what = format!("resume {n} ({id})");
    assert_valid_alternation(&bodies[0], &what);
    let messages = bodies[0]["messages"].as_array().unwrap();
    // The task survives, unless the kill came before it was recorded at all.
    let first = messages[1]["content"].as_str().unwrap();
    assert!(
        first.starts_with(&format!("Task {n}:")) || messages.len() == 2,
        "{what}: the first task is gone: {first:?}"
    );
    assert_eq!(messages.last().unwrap()["content"], "continue", "{what}");
    moment
}

/// SIGKILL lands at varied moments of scripted multi-turn sessions (in a stream, in a
/// tool call, while a record is written); every killed session resumes, and every
/// resumed transcript is one the providers accept.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_killed_at_random_moments_all_resume() {
    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(PARALLEL));
    let mut killed: Vec<Killed> = Vec::new();
    let mut attempts = 0;
    let mut finished = 0;
    while killed.len() < KILLS {
        assert!(
            attempts < MAX_ATTEMPTS,
            "only {} kills landed in {attempts} attempts",
            killed.len()
        );
        let wave = (KILLS - killed.len()).min(PARALLEL * 2);
        let mut handles = Vec::new();
        for _ in 0..wave {
            let n = attempts;
            attempts += 1;
            let gate = Arc::clone(&gate);
            handles.push(tokio::spawn(async move {
                let _permit = gate.acquire_owned().await.unwrap();
                one_attempt(n).await
            }));
        }
        for h in handles {
            match h.await.unwrap() {
                Some(k) => killed.push(k),
                None => finished += 1,
            }
        }
    }
    let kills = killed.len();
    let kill_time = started.elapsed();
    let mut resumes = Vec::new();
    for k in killed {
        let gate = Arc::clone(&gate);
        resumes.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await.unwrap();
            resume(k).await
        }));
    }
    let mut resumed = 0;
    let mut moments: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in resumes {
        *moments.entry(r.await.unwrap()).or_default() += 1;
        resumed += 1;
    }
    eprintln!(
        "SIGKILL loop: {attempts} runs, {} killed mid-run, {finished} finished first, {resumed} resumed; \
         kills {:.1} s, total {:.1} s; killed {moments:?}",
        kills,
        kill_time.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(resumed, KILLS);
}

/// SIGTERM while a tool call runs: the command and what it detached are killed, the call
/// gets a result, the turn is closed in the transcript, and exec exits 143.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_tool_call_kills_it_and_records_the_interruption() {
    let dir = tempfile::tempdir().unwrap();
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "setsid sleep 47 & sleep 46; touch finished"}"#,
        ))
        .push(Scripted::text("unreachable"));
    let mut child = exec_command(&home, &ws, &server.base_url(), &[], "Run the slow command")
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while live_processes(&["sleep", "46"]).is_empty() || live_processes(&["sleep", "47"]).is_empty()
    {
        assert!(Instant::now() < deadline, "the command never started");
        assert!(
            child.try_wait().unwrap().is_none(),
            "exec ended before the command started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(sent.success());
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("exec did not stop after SIGTERM")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "stderr: {stderr}");
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    for argv in [["sleep", "46"], ["sleep", "47"]] {
        assert!(live_processes(&argv).is_empty(), "{argv:?} outlived exec");
    }
    assert!(!ws.join("finished").exists());
    // The transcript: the call has a CANCELLED result and an assistant note closes the turn.
    let ids = session_ids(&home);
    let text = std::fs::read_to_string(home.join(format!("sessions/{}.jsonl", ids[0]))).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let messages: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| &r["message"])
        .collect();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"], "{text}");
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["call_id"], "c1");
    assert!(
        result["content"].as_str().unwrap().contains("CANCELLED"),
        "{result}"
    );
    assert!(
        messages[3]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    assert_eq!(
        server.request_bodies().len(),
        1,
        "no request after the interrupt"
    );
}
