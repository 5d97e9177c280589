//! Long sessions end to end: `exec` compacts before the model's context window is full,
//! so a server that refuses long requests never has to.

#![allow(clippy::unwrap_used)]

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use crate::common::{Sandbox, codesmith, exec_args, only_session_id};

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

/// How the runtime event that restates the plan opens.
const PLAN_OPEN: &str = "<runtime_event type=\"plan\">";

/// Occurrences of the plan's runtime event in the text of a request's messages, and the
/// last message text that holds one.
fn plan_notes(body: &Value) -> (usize, String) {
    let mut count = 0;
    let mut last = String::new();
    for m in body["messages"].as_array().unwrap() {
        if let Some(text) = m["content"].as_str()
            && text.contains(PLAN_OPEN)
        {
            count += text.matches(PLAN_OPEN).count();
            last = text.to_string();
        }
    }
    (count, last)
}

fn plan_args(statuses: [&str; 3]) -> String {
    serde_json::json!({"plan": [
        {"step": "Reproduce the failure", "status": statuses[0]},
        {"step": "Fix the parser", "status": statuses[1]},
        {"step": "Run the test suite", "status": statuses[2]},
    ]})
    .to_string()
}

#[tokio::test]
async fn the_plan_is_emitted_restated_once_per_change_and_survives_compaction_and_resume() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    let line = "0123456789abcdefghijklmnopqrstu\n";
    std::fs::write(ws.join("big.txt"), line.repeat(64)).unwrap();
    let server = ScriptedServer::start().await;
    server.answer_when(
        "You summarize a coding session",
        Scripted::text("The user asked to fix the parser; big.txt was read many times."),
    );
    let first = plan_args(["in_progress", "pending", "pending"]);
    let second = plan_args(["completed", "in_progress", "pending"]);
    server.push(Scripted::tool_call("p1", "update_plan", first.clone()));
    // The same steps again: no change, so no event and no restatement.
    server.push(Scripted::tool_call("p2", "update_plan", first));
    server.push(Scripted::tool_call("p3", "update_plan", second.clone()));
    const READS: usize = 40;
    for i in 0..READS {
        let args = format!(r#"{{"path": "big.txt", "max_lines": {}}}"#, 1000 + i);
        server.push(Scripted::tool_call(format!("r{i}"), "read_file", args));
    }
    server.push(Scripted::text("done"));
    let task = "TASK-4410: fix the parser, reading big.txt as often as needed.";
    let args = exec_args(
        &ws,
        &server.base_url(),
        "auto",
        &["--context-window", "12000", "--json", task],
    );
    let out = codesmith(&sb.home(), &args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let plans: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "plan_updated")
        .collect();
    assert_eq!(plans.len(), 2, "one event per change: {plans:?}");
    assert_eq!(plans[0]["plan"][0]["status"], "in_progress");
    assert_eq!(plans[1]["plan"][0]["status"], "completed");
    assert_eq!(plans[1]["plan"][1]["step"], "Fix the parser");
    assert!(
        events.iter().any(|e| e["type"] == "compaction"),
        "the reads did not lead to a compaction"
    );

    let chat: Vec<Value> = server
        .requests()
        .into_iter()
        .filter(|r| !r.raw_body.contains("You summarize a coding session"))
        .map(|r| r.body)
        .collect();
    // The request after the three plan calls: the first and the third restated, at the
    // tail of the messages that answered them.
    let (count, last) = plan_notes(&chat[3]);
    assert_eq!(count, 2, "the plan is restated once per change");
    assert!(last.contains("[x] Reproduce the failure"), "{last}");
    assert!(last.contains("[>] Fix the parser"), "{last}");
    assert!(last.contains("Task: TASK-4410"), "{last}");
    // After the compaction folded the plan calls away, the plan is still in view.
    let (count, last) = plan_notes(chat.last().unwrap());
    assert!(count >= 1, "the plan was lost in the compaction");
    assert!(last.contains("[>] Fix the parser"), "{last}");

    // Resumed, the session still knows its plan: the same steps again are no change, a
    // new status is one, shown in exec's progress lines.
    let id = only_session_id(&sb.home());
    let again = ScriptedServer::start().await;
    let third = plan_args(["completed", "completed", "in_progress"]);
    again.push(Scripted::tool_call("q1", "update_plan", second));
    again.push(Scripted::tool_call("q2", "update_plan", third));
    again.push(Scripted::text("done"));
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &again.base_url(), "auto", &["--resume", &id, "Go on"]),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let bodies = again.request_bodies();
    let (count, _) = plan_notes(&bodies[0]);
    assert!(count >= 1, "the resumed transcript lost the plan");
    assert_eq!(stderr.matches("☰ plan").count(), 1, "{stderr}");
    assert!(stderr.contains("☰ plan (2/3 done)"), "{stderr}");
    assert!(stderr.contains("[>] Run the test suite"), "{stderr}");
}

#[tokio::test]
async fn compaction_summaries_go_to_the_utility_model_and_its_usage_is_noted_apart() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    let line = "0123456789abcdefghijklmnopqrstu\n";
    std::fs::write(ws.join("big.txt"), line.repeat(64)).unwrap();
    let session = ScriptedServer::start().await;
    let utility = ScriptedServer::start().await;
    for _ in 0..40 {
        utility.push(Scripted::text("big.txt was read many times."));
    }
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[utility_model]\nprovider = \"openai\"\nmodel = \"tiny-summarizer\"\n\
             base_url = \"{}\"\napi_key_env = \"UTILITY_TEST_KEY\"\n",
            utility.base_url()
        ),
    )
    .unwrap();
    for i in 0..30 {
        let args = format!(r#"{{"path": "big.txt", "max_lines": {}}}"#, 1000 + i);
        session.push(Scripted::tool_call(format!("r{i}"), "read_file", args));
    }
    session.push(Scripted::text("done"));
    let args = exec_args(
        &ws,
        &session.base_url(),
        "auto",
        &["--context-window", "12000", "--json", "read big.txt often"],
    );
    let envs = [("UTILITY_TEST_KEY", "sk-utility-key-1234")];
    let out = crate::common::codesmith_with_env(&sb.home(), &args, &envs).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summaries = utility.requests();
    assert!(
        !summaries.is_empty(),
        "no summary reached the utility model"
    );
    for r in &summaries {
        assert_eq!(r.body["model"], "tiny-summarizer");
        assert!(r.raw_body.contains("You summarize a coding session"));
        assert!(
            r.headers
                .iter()
                .any(|(k, v)| k == "authorization" && v.contains("sk-utility-key-1234")),
            "{:?}",
            r.headers
        );
    }
    assert!(
        session
            .requests()
            .iter()
            .all(|r| !r.raw_body.contains("You summarize a coding session")),
        "a summary went to the session's model"
    );
    let id = only_session_id(&sb.home());
    let file =
        std::fs::read_to_string(sb.home().join("sessions").join(format!("{id}.jsonl"))).unwrap();
    let noted = file
        .lines()
        .filter(|l| l.contains("\"utility\":true") && l.contains("tiny-summarizer"))
        .count();
    assert_eq!(noted, summaries.len(), "one utility usage note per summary");

    // `config show` names it, with its layer; without the key variable the session stops.
    let show = crate::common::codesmith_with_env(
        &sb.home(),
        &["config", "show", "--workspace", ws.to_str().unwrap()],
        &envs,
    )
    .await;
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("utility_model.model = \"tiny-summarizer\"") && l.contains("user")),
        "{text}"
    );
    let out = codesmith(&sb.home(), &args).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("UTILITY_TEST_KEY"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
