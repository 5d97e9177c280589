//! The slop ledger end to end: the model records an entry and lists it through
//! `codesmith exec --json`, a person resolves it with `codesmith slop resolve`, and the
//! ledger keeps every record (nothing rewritten).

#![allow(clippy::unwrap_used)]

use crate::common::{Sandbox, codesmith};
use crate::interactive::{call, exec_json, results};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_list_resolve_keeps_the_history() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    let server = ScriptedServer::start().await;
    server
        .push(call(
            "c1",
            "slop",
            json!({"action": "record", "bucket": "duplication", "severity": "medium",
                   "confidence": "high", "title": "add() duplicated in calc.py",
                   "source_links": ["calc.py:1-10"], "cleanup": "keep one add"}),
        ))
        .push(call("c2", "slop", json!({"action": "list"})))
        // The model may not decide to keep debt: that is the person's call.
        .push(call(
            "c3",
            "slop",
            json!({"action": "update", "id": "SLOP-1", "status": "accepted"}),
        ))
        .push(Scripted::text("Recorded the duplication."));
    let events = exec_json(&sb, &server, "record the debt").await;
    let r = results(&events);
    assert_eq!(r.len(), 3, "{events:?}");
    assert_eq!(r[0]["ok"], true, "{}", r[0]);
    assert!(r[0]["output"].as_str().unwrap().contains("SLOP-1"));
    assert!(
        r[1]["output"]
            .as_str()
            .unwrap()
            .contains("add() duplicated")
    );
    assert_eq!(r[2]["error"]["code"], "DENIED", "{}", r[2]);

    let home = sb.home();
    let wsa = ws.to_str().unwrap();
    let out = codesmith(&home, &["slop", "list", "-w", wsa, "--json"]).await;
    assert_eq!(out.status.code(), Some(0));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["status"], "open", "{listed}");
    let out = codesmith(
        &home,
        &["slop", "resolve", "SLOP-1", "-w", wsa, "--note", "merged"],
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Open entries only by default: none left; --all still shows it, resolved.
    let out = codesmith(&home, &["slop", "list", "-w", wsa, "--json"]).await;
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 0, "{listed}");
    let out = codesmith(&home, &["slop", "show", "1", "-w", wsa, "--json"]).await;
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["entry"]["status"], "resolved");
    let history = shown["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{shown}");
    assert_eq!(history[0]["record"], "recorded");
    assert_eq!(history[1]["note"], "merged");
    // A closed entry does not change again.
    let out = codesmith(&home, &["slop", "accept", "SLOP-1", "-w", wsa]).await;
    assert_ne!(out.status.code(), Some(0));
    // The ledger is append-only: two lines, the first untouched.
    let ledger = std::fs::read_to_string(ws.join(".codesmith/slop/ledger.jsonl")).unwrap();
    assert_eq!(ledger.lines().count(), 2, "{ledger}");
    assert!(ws.join(".codesmith/slop/index.json").exists());
}

/// `slop list` only reads the ledger: it runs in read-only (plan) mode, where `record`
/// is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_runs_in_read_only_mode_and_recording_does_not() {
    use codesmith_testkit::{Scripted, ScriptedServer};
    use serde_json::json;
    let sb = crate::common::Sandbox::new();
    let ws = sb.ws();
    let server = ScriptedServer::start().await;
    server
        .push(
            Scripted::tool_call("c1", "slop", json!({"action": "list"}).to_string())
                .with_tool_call(
                    "c2",
                    "slop",
                    json!({"action": "record", "bucket": "docs", "severity": "low",
                       "confidence": "low", "title": "t", "description": "d", "cleanup": "c"})
                    .to_string(),
                ),
        )
        .push(Scripted::text("Done."));
    let args = crate::common::exec_args(&ws, &server.base_url(), "read-only", &["--json", "go"]);
    let out = crate::common::codesmith(&sb.home(), &args).await;
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let r = crate::interactive::results(&events);
    assert_eq!(r.len(), 2, "{events:?}");
    assert!(!r[0].to_string().contains("DENIED"), "{}", r[0]);
    assert!(r[1].to_string().contains("DENIED"), "{}", r[1]);
}
