//! Long sessions end to end: `exec` compacts before the model's context window is full,
//! so a server that refuses long requests never has to.

#![allow(clippy::unwrap_used)]

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use crate::common::{Sandbox, codesmith, exec_args};

/// The task's own words, which must reach the last request.
const TASK: &str = "TASK-7731: read big.txt again and again, then say done.";
/// Every request over this many bytes is refused as too long (12000 tokens at 4 bytes).
const LIMIT: usize = 48 * 1024;
const CALLS: usize = 300;

/// Every tool call of every request body has its result, and every result its call.
fn assert_paired(body: &Value, n: usize) {
    let mut open: Vec<String> = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        if let Some(calls) = m["tool_calls"].as_array() {
            assert!(
                open.is_empty(),
                "request {n}: calls without results {open:?}"
            );
            open = calls
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_string())
                .collect();
        } else if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap();
            let at = open.iter().position(|o| o == id);
            assert!(at.is_some(), "request {n}: result {id} without its call");
            open.remove(at.unwrap());
        } else {
            assert!(
                open.is_empty(),
                "request {n}: calls without results {open:?}"
            );
        }
    }
}

#[tokio::test]
async fn three_hundred_calls_fit_a_small_window_without_a_refused_request() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    // About 2 KB per read.
    let line = "0123456789abcdefghijklmnopqrstu\n";
    std::fs::write(ws.join("big.txt"), line.repeat(64)).unwrap();
    let server = ScriptedServer::start().await;
    server.refuse_over(LIMIT);
    server.answer_when(
        "You summarize a coding session",
        Scripted::text("The user asked to read big.txt repeatedly; it was read many times."),
    );
    for i in 0..CALLS {
        // Distinct arguments each time (the file is shorter than any of these limits).
        let args = format!(r#"{{"path": "big.txt", "max_lines": {}}}"#, 1000 + i);
        server.push(Scripted::tool_call(format!("c{i}"), "read_file", args));
    }
    server.push(Scripted::text("done"));
    let args = exec_args(
        &ws,
        &server.base_url(),
        "auto",
        &["--context-window", "12000", "--json", TASK],
    );
    let started = std::time::Instant::now();
    let out = codesmith(&sb.home(), &args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(server.refused(), 0, "a request was refused as too long");
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let results = events.iter().filter(|e| e["type"] == "tool_result").count();
    assert_eq!(results, CALLS);
    let compactions: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert!(!compactions.is_empty(), "no compaction was reported");
    for c in &compactions {
        assert!(c["after"].as_u64() < c["before"].as_u64(), "{c}");
        assert_eq!(c["window"], 12000);
        assert_eq!(c["trigger"], "threshold");
    }
    let requests = server.requests();
    let chat: Vec<&codesmith_testkit::RecordedRequest> = requests
        .iter()
        .filter(|r| !r.raw_body.contains("You summarize a coding session"))
        .collect();
    assert_eq!(chat.len(), CALLS + 1);
    for (n, r) in chat.iter().enumerate() {
        assert!(
            r.raw_body.len() <= LIMIT,
            "request {n}: {} bytes",
            r.raw_body.len()
        );
        assert_paired(&r.body, n);
    }
    assert!(chat.last().unwrap().raw_body.contains("TASK-7731"));
    for c in compactions.iter().take(8) {
        println!("{c}");
    }
    let largest = chat.iter().map(|r| r.raw_body.len()).max().unwrap();
    println!(
        "300 calls under a 12000-token window: {} compactions, largest request {largest} bytes, {:?}",
        compactions.len(),
        started.elapsed()
    );
}
