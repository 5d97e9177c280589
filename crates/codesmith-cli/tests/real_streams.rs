//! Streams recorded from real servers (OpenAI, DeepSeek, OpenRouter, vLLM,
//! llama.cpp server, Ollama, Mistral, Groq, Azure, Z.ai, Anthropic), replayed
//! into `codesmith exec --json` and checked against what a correct decoder
//! must produce: the shared real-streams suite, which keeps the recordings
//! and their expectations outside this repository (its own `run.sh` does
//! the same with a Python replay server).
//!
//! Every capture is served whole and in 7-byte writes. The suite's advisory
//! checks (usage of a cut response, the provider's error text reaching the
//! user) are enforced here like the others.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use common::Sandbox;

fn suite_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/suites/real-streams");
    if dir.join("run.sh").is_file() {
        return Some(dir);
    }
    eprintln!("SUITE MISSING: {} (real-streams captures)", dir.display());
    assert!(
        std::env::var("CODESMITH_REQUIRE_SUITES").as_deref() != Ok("1"),
        "CODESMITH_REQUIRE_SUITES=1 but {} is absent",
        dir.display()
    );
    None
}

/// One `exec --json` run: its events, stderr, and the requests it sent.
struct Replay {
    events: Vec<Value>,
    stderr: String,
    requests: usize,
}

impl Replay {
    fn of_type(&self, kind: &str) -> impl Iterator<Item = &Value> {
        self.events.iter().filter(move |e| e["type"] == kind)
    }

    fn joined(&self, kind: &str) -> String {
        self.of_type(kind)
            .filter_map(|e| e["delta"].as_str())
            .collect()
    }
}

async fn replay(wire: &str, dialect: &str, write_bytes: usize) -> Replay {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server.push(Scripted::raw(wire).write_bytes(write_bytes));
    let ws = sb.ws();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args([
        "exec",
        "--workspace",
        ws.to_str().unwrap(),
        "--provider",
        dialect,
        "--base-url",
        &server.base_url(),
        "--model",
        "m",
        "--approval",
        "never",
        "--max-turns",
        "1",
        "--json",
        "hi",
    ])
    .env("CODESMITH_HOME", sb.home())
    .env("OPENAI_API_KEY", "sk-test-key-for-scripted-server")
    .env("ANTHROPIC_API_KEY", "sk-ant-test-key-for-scripted-server")
    .env("CODESMITH_STREAM_IDLE_TIMEOUT_SECS", "5")
    .env_remove("OPENAI_BASE_URL")
    .env_remove("ANTHROPIC_BASE_URL")
    .stdin(Stdio::null())
    .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("codesmith timed out")
        .unwrap();
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Replay {
        events,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        requests: server.requests().len(),
    }
}

/// A stop reason as the suite spells it (`{"other": x}` → `other:x`).
fn stop_name(stop: &Value) -> String {
    match stop {
        Value::String(s) => s.clone(),
        Value::Object(m) => format!(
            "other:{}",
            m.values().next().and_then(Value::as_str).unwrap_or("")
        ),
        other => other.to_string(),
    }
}

/// What differs between a run and the sidecar's expectations.
fn differences(expect: &Value, run: &Replay) -> Vec<String> {
    let mut diffs = Vec::new();
    if run.joined("assistant_text") != expect["text"].as_str().unwrap_or("") {
        diffs.push(format!("text: got {:?}", run.joined("assistant_text")));
    }
    if let Some(thinking) = expect["thinking"].as_str()
        && run.joined("thinking") != thinking
    {
        diffs.push(format!("thinking: got {:?}", run.joined("thinking")));
    }
    let calls: Vec<&Value> = run.of_type("tool_call").collect();
    let want_calls = expect["tool_calls"].as_array().cloned().unwrap_or_default();
    if calls.len() != want_calls.len() {
        diffs.push(format!(
            "{} tool calls, want {}",
            calls.len(),
            want_calls.len()
        ));
    }
    for (got, want) in calls.iter().zip(&want_calls) {
        if got["name"] != want["name"] {
            diffs.push(format!(
                "tool call name {} want {}",
                got["name"], want["name"]
            ));
        }
        if want["truncated"] == true {
            if got["arguments"] != want["arguments_raw"] {
                diffs.push(format!("truncated arguments: got {}", got["arguments"]));
            }
        } else if got["arguments"] != want["arguments"] {
            diffs.push(format!("arguments: got {}", got["arguments"]));
        }
    }
    let allowed: Vec<String> = match &expect["stop_reason"] {
        Value::Array(list) => list.iter().map(stop_name).collect(),
        Value::Null => Vec::new(),
        one => vec![stop_name(one)],
    };
    let turn = run.of_type("turn_completed").find(|t| t["turn"] == 1);
    let stop = turn.map(|t| stop_name(&t["stop_reason"]));
    let usage = turn.map(|t| t["usage"].clone()).unwrap_or(Value::Null);
    let stop_ok = stop
        .as_ref()
        .is_some_and(|s| allowed.is_empty() || allowed.contains(s));
    if expect["outcome"] == "interrupted_or_error" {
        let needle = expect["error_contains"].as_str().unwrap_or("\u{0}");
        let said = run
            .of_type("error")
            .chain(run.of_type("notice"))
            .chain(run.of_type("retry"))
            .any(|e| e.to_string().contains(needle));
        if !(stop_ok || said) {
            diffs.push(format!("outcome: stop {stop:?}, no event says {needle:?}"));
        }
    } else if !stop_ok {
        diffs.push(format!("stop reason {stop:?}, want one of {allowed:?}"));
    }
    let advisory = &expect["advisory"];
    for wanted in [&expect["usage"], &advisory["usage"]] {
        for (key, value) in wanted.as_object().into_iter().flatten() {
            if usage[key] != *value {
                diffs.push(format!("usage.{key}: got {}, want {value}", usage[key]));
            }
        }
    }
    if let Some(needle) = advisory["error_visible"].as_str() {
        let events: String = run.events.iter().map(Value::to_string).collect();
        if !events.contains(needle) && !run.stderr.contains(needle) {
            diffs.push(format!("the provider's {needle:?} reached no event"));
        }
    }
    if run.requests != 1 {
        diffs.push(format!("{} requests sent, want 1", run.requests));
    }
    diffs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recorded_server_stream_is_decoded_as_the_suite_expects() {
    let Some(dir) = suite_dir() else {
        return;
    };
    let mut captures: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("sse"))
        .collect();
    captures.sort();
    assert!(captures.len() >= 27, "{} captures", captures.len());
    let mut failures = Vec::new();
    for path in &captures {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let wire = String::from_utf8(std::fs::read(path).unwrap()).unwrap();
        let sidecar: Value =
            serde_json::from_slice(&std::fs::read(path.with_extension("json")).unwrap()).unwrap();
        let dialect = sidecar["dialect"].as_str().unwrap();
        for write_bytes in [0, 7] {
            let run = replay(&wire, dialect, write_bytes).await;
            let diffs = differences(&sidecar["expect"], &run);
            if !diffs.is_empty() {
                failures.push(format!("{name} (writes of {write_bytes} bytes): {diffs:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
