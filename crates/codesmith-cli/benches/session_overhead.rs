//! The harness's own cost per session: `codesmith exec` against the scripted model server
//! on 127.0.0.1 (model time is zero), a 10-tool-call session (read, grep, list, glob,
//! shell, edit). Prints the medians of 5 runs: time from spawn to the first model request,
//! wall time of the whole session, wall time per model round after the first request, and
//! peak RSS (from `/usr/bin/time`, when present).
//!
//! `cargo bench -p codesmith-cli --bench session_overhead`

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer};

const RUNS: usize = 5;

fn script(server: &ScriptedServer) {
    let calls: [(&str, &str); 10] = [
        ("read_file", r#"{"path": "src/lib.rs"}"#),
        ("grep_files", r#"{"pattern": "answer"}"#),
        ("list_dir", r#"{"path": "."}"#),
        ("file_search", r#"{"pattern": "**/*.rs"}"#),
        ("exec_shell", r#"{"command": "echo 1"}"#),
        (
            "edit_file",
            r#"{"path": "src/lib.rs", "search": "42", "replace": "43"}"#,
        ),
        ("read_file", r#"{"path": "notes.txt"}"#),
        ("grep_files", r#"{"pattern": "beta"}"#),
        ("exec_shell", r#"{"command": "ls src"}"#),
        (
            "edit_file",
            r#"{"path": "notes.txt", "search": "beta", "replace": "gamma"}"#,
        ),
    ];
    for (i, (name, args)) in calls.iter().enumerate() {
        server.push(Scripted::tool_call(format!("c{i}"), *name, *args));
    }
    server.push(Scripted::text("done"));
}

struct Run {
    first_request: Duration,
    wall: Duration,
    rss_kib: Option<u64>,
}

async fn run_once() -> Run {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    )
    .unwrap();
    std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let home = dir.path().join("home");
    let rss_file = dir.path().join("rss");
    let server = ScriptedServer::start().await;
    script(&server);
    let bin = env!("CARGO_BIN_EXE_codesmith");
    let timer = std::path::Path::new("/usr/bin/time");
    let mut cmd = if timer.exists() {
        let mut c = tokio::process::Command::new(timer);
        c.args(["-f", "%M", "-o"]).arg(&rss_file).arg(bin);
        c
    } else {
        tokio::process::Command::new(bin)
    };
    let base_url = server.base_url();
    cmd.args([
        "exec",
        "--workspace",
        ws.to_str().unwrap(),
        "--provider",
        "openai",
        "--base-url",
        &base_url,
        "--model",
        "scripted",
        "--approval",
        "auto",
        "tour and fix",
    ])
    .env("CODESMITH_HOME", &home)
    .env("OPENAI_API_KEY", "sk-bench")
    .env_remove("OPENAI_BASE_URL")
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .kill_on_drop(true);
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let deadline = started + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(Instant::now() < deadline, "no request within 30 s");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let first_request = started.elapsed();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("session did not end within 30 s")
        .unwrap();
    let wall = started.elapsed();
    assert!(status.success(), "codesmith exec failed: {status}");
    assert_eq!(server.requests().len(), 11, "the session ran every round");
    let rss_kib = std::fs::read_to_string(&rss_file)
        .ok()
        .and_then(|t| t.lines().last()?.trim().parse().ok());
    Run {
        first_request,
        wall,
        rss_kib,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        runs.push(run_once().await);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let first = median(runs.iter().map(|r| ms(r.first_request)).collect());
    let wall = median(runs.iter().map(|r| ms(r.wall)).collect());
    let per_round = median(
        runs.iter()
            .map(|r| (ms(r.wall) - ms(r.first_request)) / 10.0)
            .collect(),
    );
    println!(
        "session_overhead ({RUNS} runs, medians): first request {first:.1} ms, whole 10-call session {wall:.1} ms, per round after the first request {per_round:.1} ms"
    );
    let rss: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.rss_kib)
        .map(|k| k as f64 / 1024.0)
        .collect();
    if rss.is_empty() {
        println!("peak RSS: not measured (/usr/bin/time missing)");
    } else {
        println!("peak RSS: {:.1} MiB", median(rss));
    }
}
