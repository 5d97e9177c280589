//! Many `exec` runs at once never interfere: 16 concurrent runs against the scripted
//! model server, each with its own `CODESMITH_HOME` and then all sharing one, each
//! writing a file, spilling a long command output and answering. Every run must finish
//! with its own session file, its own spill file, its own edit and its own answer.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use crate::common::{Sandbox, exec_args};

const RUNS: usize = 16;

async fn exec(home: PathBuf, args: Vec<String>) -> std::process::Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args(&args)
        .env("CODESMITH_HOME", &home)
        .env("OPENAI_API_KEY", "sk-test-key-for-scripted-server")
        .env("CODESMITH_STREAM_IDLE_TIMEOUT_SECS", "30")
        .env_remove("OPENAI_BASE_URL")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    // 16 processes on a small machine: generous, but bounded.
    tokio::time::timeout(Duration::from_secs(240), cmd.output())
        .await
        .expect("every run finished within 240 s")
        .unwrap()
}

fn sessions(home: &Path) -> Vec<Value> {
    let dir = home.join("sessions");
    std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
                .map(|e| {
                    let text = std::fs::read_to_string(e.path()).unwrap();
                    serde_json::from_str(text.lines().next().unwrap()).unwrap()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn spills(home: &Path) -> usize {
    std::fs::read_dir(codesmith_tools::spill::spill_dir(home))
        .map(|d| d.filter_map(Result::ok).count())
        .unwrap_or(0)
}

async fn run_fleet(shared: bool) {
    let sandboxes: Vec<Sandbox> = (0..RUNS).map(|_| Sandbox::new()).collect();
    let shared_home = sandboxes[0].home();
    let mut servers = Vec::new();
    let mut runs = Vec::new();
    for (i, sb) in sandboxes.iter().enumerate() {
        let server = ScriptedServer::start().await;
        server
            .push(Scripted::tool_call(
                "w",
                "write_file",
                format!(r#"{{"path": "out-{i}.txt", "content": "written by run {i}\n"}}"#),
            ))
            .push(Scripted::tool_call(
                "s",
                "exec_shell",
                r#"{"command": "seq 1 200000"}"#,
            ))
            .push(Scripted::text(format!("run {i} is done")));
        let home = if shared {
            shared_home.clone()
        } else {
            sb.home()
        };
        let args = exec_args(
            &sb.ws(),
            &server.base_url(),
            "auto",
            &[&format!("Task number {i}: write the file")],
        );
        runs.push(tokio::spawn(exec(home, args)));
        servers.push(server);
    }
    let mut outputs = Vec::new();
    for run in runs {
        outputs.push(run.await.unwrap());
    }
    for (i, out) in outputs.iter().enumerate() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "run {i}: {stderr}");
        assert!(
            stdout.contains(&format!("run {i} is done")),
            "run {i}: {stdout}"
        );
        for j in (0..RUNS).filter(|&j| j != i) {
            assert!(
                !stdout.contains(&format!("run {j} is done")),
                "run {i} shows run {j}"
            );
        }
        let ws = sandboxes[i].ws();
        assert_eq!(
            std::fs::read_to_string(ws.join(format!("out-{i}.txt"))).unwrap(),
            format!("written by run {i}\n")
        );
        // Each server saw exactly its own run's three requests.
        assert_eq!(servers[i].request_bodies().len(), 3, "run {i}");
        let tool_output = servers[i].request_bodies()[2].to_string();
        assert!(
            tool_output.contains("retrieve_tool_result"),
            "run {i} did not spill"
        );
    }
    let homes: Vec<PathBuf> = if shared {
        vec![shared_home]
    } else {
        sandboxes.iter().map(Sandbox::home).collect()
    };
    let headers: Vec<Value> = homes.iter().flat_map(|h| sessions(h)).collect();
    assert_eq!(headers.len(), RUNS, "one session per run");
    let mut workspaces: Vec<String> = headers
        .iter()
        .map(|h| h["workspace"].as_str().unwrap().to_string())
        .collect();
    workspaces.sort();
    workspaces.dedup();
    assert_eq!(
        workspaces.len(),
        RUNS,
        "each session names its own workspace"
    );
    let spilled: usize = homes.iter().map(|h| spills(h)).sum();
    assert_eq!(spilled, RUNS, "one spill file per run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_runs_with_separate_homes_do_not_interfere() {
    run_fleet(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_runs_sharing_one_home_do_not_interfere() {
    run_fleet(true).await;
}
