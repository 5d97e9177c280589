//! After a shell command, files the session has read are re-stat'ed and a
//! changed or deleted one gets one reminder (exec_shell).

#![allow(clippy::unwrap_used)]

use codesmith_tools::files::ReadFile;
use codesmith_tools::shell::ExecShell;
use codesmith_tools::{Tool, ToolContext, envelope_json};
use serde_json::json;

#[tokio::test]
async fn a_file_changed_by_a_command_gets_one_reminder() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    std::fs::write(ws.join("b.txt"), "two\n").unwrap();
    let ctx = ToolContext::new(ws.clone(), dir.path().join("home"));
    for path in ["a.txt", "b.txt"] {
        ReadFile.call(&ctx, json!({"path": path})).await.unwrap();
    }
    let run = |cmd: &str| {
        let args = json!({"command": cmd});
        let ctx = &ctx;
        async move { envelope_json(&ExecShell.call(ctx, args).await).to_string() }
    };
    let first = run("echo three >> a.txt && rm b.txt").await;
    assert!(first.contains("a.txt changed on disk"), "{first}");
    assert!(first.contains("b.txt was deleted"), "{first}");
    let second = run("true").await;
    assert!(
        !second.contains("Reminder"),
        "a drift is reported once: {second}"
    );
}
