//! Early start of read-only calls, end to end through `codesmith exec --json`: in a
//! response that streams three searches, each starts as soon as its arguments are
//! complete JSON, while the rest still streams; the time saved is measured against the
//! same run with `CODESMITH_EARLY_START=0`. A stream that is cut off uses no early result.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common::{Sandbox, codesmith_with_env};
use crate::interactive::results;

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::{Value, json};

/// Three searches, each over its own tree, streamed 8 characters per event, 25 ms apart.
fn three_reads() -> Scripted {
    let args = |dir: &str| json!({"pattern": "needle_[0-9]+", "path": dir}).to_string();
    Scripted::tool_call("c1", "grep_files", args("a"))
        .with_tool_call("c2", "grep_files", args("b"))
        .with_tool_call("c3", "grep_files", args("c"))
        .chunk_chars(8)
        .pace_ms(25)
}

fn seed_trees(ws: &std::path::Path) {
    let line = "filler text that does not match anything at all, repeated for bulk\n".repeat(300);
    for dir in ["a", "b", "c"] {
        for i in 0..150 {
            let d = ws.join(dir).join(format!("d{}", i % 10));
            std::fs::create_dir_all(&d).unwrap();
            let text = format!("{line}needle_{i}\n{line}");
            std::fs::write(d.join(format!("f{i}.txt")), text).unwrap();
        }
    }
}

/// Runs the scripted three-read task; returns its wall time and events.
async fn timed(sb: &Sandbox, early: bool) -> (Duration, Vec<Value>) {
    let server = ScriptedServer::start().await;
    server
        .push(three_reads())
        .push(Scripted::text("Found them."));
    let ws = sb.ws();
    let args = crate::common::exec_args(&ws, &server.base_url(), "auto", &["--json", "find"]);
    let env = [("CODESMITH_EARLY_START", if early { "1" } else { "0" })];
    let started = Instant::now();
    let out = codesmith_with_env(&sb.home(), &args, &env).await;
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (took, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_reads_start_while_the_response_streams() {
    let sb = Sandbox::new();
    seed_trees(&sb.ws());
    // Warm the file cache, then take the best of three runs each way.
    let _ = timed(&sb, false).await;
    let (mut off, mut on) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        let (t, events) = timed(&sb, false).await;
        off = off.min(t);
        assert!(
            results(&events)
                .iter()
                .all(|r| r["meta"]["started_early"].is_null()),
            "{events:?}"
        );
        let (t, events) = timed(&sb, true).await;
        on = on.min(t);
        let r = results(&events);
        assert_eq!(r.len(), 3, "{events:?}");
        for result in &r {
            assert_eq!(result["ok"], true, "{result}");
            assert_eq!(result["meta"]["started_early"], true, "{result}");
            assert!(
                result["output"].as_str().unwrap().contains("needle_"),
                "{result}"
            );
        }
    }
    let saved = off.saturating_sub(on);
    println!(
        "EARLY START: three reads, best of 3: {} ms without, {} ms with; saved {} ms",
        off.as_millis(),
        on.as_millis(),
        saved.as_millis()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_stream_runs_none_of_its_early_calls() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(
            Scripted::tool_call("c1", "read_file", json!({"path": "calc.py"}).to_string())
                .with_tool_call("c2", "read_file", json!({"path": "README.md"}).to_string())
                .chunk_chars(8)
                .drop_after(5),
        )
        .push(Scripted::tool_call(
            "w1",
            "write_file",
            json!({"path": "calc.py", "content": "x = 1\n", "overwrite": true}).to_string(),
        ))
        .push(Scripted::text("Stopped."));
    let ws = sb.ws();
    let args = crate::common::exec_args(&ws, &server.base_url(), "auto", &["--json", "read"]);
    let out = codesmith_with_env(&sb.home(), &args, &[]).await;
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "turn_completed" && e["stop_reason"] == "interrupted"),
        "{events:?}"
    );
    // Whatever dispatch then makes of the cut response's calls, no early result is used.
    let r = results(&events);
    assert!(!r.is_empty(), "{events:?}");
    for result in &r {
        assert!(result["meta"]["started_early"].is_null(), "{result}");
    }
    // The discarded early read never counts as read: overwriting the file is refused.
    let write = r.iter().find(|e| e["id"] == "w1").unwrap();
    assert_eq!(write["error"]["code"], "NOT_READ", "{write}");
}

/// A read that follows a command in the same response waits for its turn: it reads what
/// the command wrote, never a stale early copy (which would also poison the freshness
/// record of a later edit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_after_a_command_in_the_response_is_not_started_early() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    std::fs::write(ws.join("x.txt"), "OLD\n").unwrap();
    let server = ScriptedServer::start().await;
    server
        .push(
            Scripted::tool_call(
                "c1",
                "exec_shell",
                json!({"command": "echo NEW > x.txt"}).to_string(),
            )
            .with_tool_call("c2", "read_file", json!({"path": "x.txt"}).to_string())
            .chunk_chars(8)
            .pace_ms(25),
        )
        .push(Scripted::text("Read it."));
    let args = crate::common::exec_args(&ws, &server.base_url(), "auto", &["--json", "go"]);
    let out = codesmith_with_env(&sb.home(), &args, &[("CODESMITH_EARLY_START", "1")]).await;
    assert_eq!(out.status.code(), Some(0));
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let r = results(&events);
    assert_eq!(r.len(), 2, "{events:?}");
    let read = r[1].to_string();
    assert!(read.contains("NEW"), "{read}");
    assert!(!read.contains("OLD"), "{read}");
    assert!(r[1]["meta"]["started_early"].is_null(), "{read}");
}
