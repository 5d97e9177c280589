//! `codesmith exec` verdict events and `codesmith verify stats`, end to end
//! against the scripted model server.

#![allow(clippy::unwrap_used)]

use crate::common;

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use common::{Sandbox, codesmith};

const TESTS: &str = r#"{"command": "python3 -m unittest discover -s tests -t ."}"#;

async fn exec_json(sb: &Sandbox, server: &ScriptedServer, task: &str) -> Vec<Value> {
    let ws = sb.ws();
    let out = codesmith(
        &sb.home(),
        &[
            "exec",
            "--json",
            "-w",
            ws.to_str().unwrap(),
            "--provider",
            "openai",
            "--base-url",
            &server.base_url(),
            "--approval",
            "auto",
            task,
        ],
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

async fn stats_json(sb: &Sandbox) -> Value {
    let out = codesmith(&sb.home(), &["verify", "stats", "--json"]).await;
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap()
}

fn verdicts(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "verdict").collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_on_an_empty_home_are_zero_with_no_rate() {
    let sb = Sandbox::new();
    let stats = stats_json(&sb).await;
    assert_eq!(
        stats,
        serde_json::json!({
            "verified_pass": 0, "verified_fail": 0, "verify_error": 0,
            "unsubstantiated": 0, "claim_match_rate": null
        })
    );
    let out = codesmith(&sb.home(), &["verify", "stats"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("verified_pass") && text.contains("none"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_emits_verdicts_and_stats_count_them() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    // The fixture's tests fail as shipped: the claim is contradicted.
    server
        .push(Scripted::tool_call("c1", "exec_shell", TESTS))
        .push(Scripted::text("All tests pass."));
    let events = exec_json(&sb, &server, "run the tests").await;
    let v = verdicts(&events);
    assert_eq!(v.len(), 1, "{events:?}");
    assert_eq!(v[0]["verdict"], "verified_fail");
    assert_ne!(v[0]["exit_code"], 0);
    // No command at all: unsubstantiated.
    server.push(Scripted::text("Done, the build succeeded."));
    let events = exec_json(&sb, &server, "build it").await;
    assert_eq!(verdicts(&events)[0]["verdict"], "unsubstantiated");

    let stats = stats_json(&sb).await;
    assert_eq!(stats["verified_fail"], 1);
    assert_eq!(stats["unsubstantiated"], 1);
    assert_eq!(stats["verified_pass"], 0);
    assert_eq!(stats["claim_match_rate"], 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_claims_false_turns_the_verifier_off() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home().join("config.toml"),
        "[verification]\nresult_claims = false\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("All tests pass."));
    let events = exec_json(&sb, &server, "check").await;
    assert!(verdicts(&events).is_empty(), "{events:?}");
    assert!(!sb.home().join("evolution/verdicts.jsonl").exists());
}
