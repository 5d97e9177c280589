//! The approval ladder and the grants through the real binary: `exec` (headless) under
//! each rung, a grant made by `a` (always) in the UI's line mode listed and revoked by
//! `codesmith approvals` and `/approvals`, and a "no" with a reason reaching the model.

#![allow(clippy::unwrap_used)]

use crate::common;

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use common::{Sandbox, codesmith, exec_args, line_mode, tool_messages, ui_args};

/// `exec` under `mode` with one scripted `write_file` of `made.txt`; the tool result.
async fn exec_write(mode: &str) -> (Sandbox, String) {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "write_file",
            r#"{"path": "made.txt", "content": "x\n"}"#,
        ))
        .push(Scripted::text("finished"));
    let out = codesmith(
        &sb.home(),
        &exec_args(&sb.ws(), &server.base_url(), mode, &["write it"]),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = tool_messages(&server.request_bodies()[1]).remove(0);
    (sb, result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_holds_the_ladder_for_writes_and_names_the_mode_that_allows_them() {
    let (sb, result) = exec_write("read-only").await;
    assert!(
        result.contains("DENIED") && result.contains("plan mode"),
        "{result}"
    );
    assert!(!sb.ws().join("made.txt").exists());

    let (sb, result) = exec_write("suggest").await;
    assert!(result.contains("DENIED"), "{result}");
    assert!(result.contains("--approval auto-edit"), "{result}");
    assert!(!sb.ws().join("made.txt").exists());

    let (sb, result) = exec_write("auto-edit").await;
    assert!(!result.contains("DENIED"), "{result}");
    assert!(sb.ws().join("made.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_in_read_only_refuses_commands_not_proven_read_only() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "touch made.txt"}"#,
        ))
        .push(Scripted::tool_call(
            "c2",
            "exec_shell",
            r#"{"command": "ls"}"#,
        ))
        .push(Scripted::text("planned"));
    let out = codesmith(
        &sb.home(),
        &exec_args(&sb.ws(), &server.base_url(), "read-only", &["plan it"]),
    )
    .await;
    assert_eq!(out.status.code(), Some(0));
    let bodies = server.request_bodies();
    let touched = tool_messages(&bodies[1]).remove(0);
    assert!(touched.contains("read-only"), "{touched}");
    let listed = tool_messages(&bodies[2]).remove(1);
    assert!(listed.contains("calc.py"), "{listed}");
    assert!(!sb.ws().join("made.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_always_grant_is_host_scoped_listed_and_revoked() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "curl -s http://127.0.0.1:9/status"}"#,
        ))
        .push(Scripted::text("done"));
    let ws = sb.ws();
    let url = server.base_url();
    let args = ui_args(&ws, &url);
    let out = line_mode(&sb.home(), &args, "check it\na\n/approvals\n/quit\n").await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("shell `curl` to 127.0.0.1:9"), "{stdout}");

    let list = |json: bool| {
        let mut a = vec!["approvals", "list", "-w", ws.to_str().unwrap()];
        if json {
            a.push("--json");
        }
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let out = codesmith(&sb.home(), &list(true)).await;
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let grants = listed["grants"].as_array().unwrap();
    assert_eq!(grants.len(), 1, "{listed}");
    assert_eq!(grants[0]["kind"], "shell_hosts");
    assert_eq!(grants[0]["prefix"], "curl");
    assert_eq!(grants[0]["hosts"][0], "127.0.0.1:9");
    let id = grants[0]["id"].as_str().unwrap().to_string();

    let out = codesmith(
        &sb.home(),
        &["approvals", "revoke", "nope", "-w", ws.to_str().unwrap()],
    )
    .await;
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("approvals list"));
    let out = codesmith(
        &sb.home(),
        &["approvals", "revoke", &id, "-w", ws.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("revoked {id}")));
    let out = codesmith(&sb.home(), &list(false)).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no saved grants"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_with_words_after_it_tells_the_model_why() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "curl -s http://127.0.0.1:9/deploy"}"#,
        ))
        .push(Scripted::text("ok"));
    let ws = sb.ws();
    let url = server.base_url();
    let args = ui_args(&ws, &url);
    let out = line_mode(
        &sb.home(),
        &args,
        "deploy\nn deploy to staging first\n/quit\n",
    )
    .await;
    assert_eq!(out.status.code(), Some(0));
    let result = tool_messages(&server.request_bodies()[1]).remove(0);
    assert!(result.contains("deploy to staging first"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_in_read_only_writes_the_plan_as_the_final_answer() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "update_plan",
            r#"{"plan": [{"step": "Fix add() in calc.py", "status": "pending"}, {"step": "Run the tests", "status": "pending"}]}"#,
        ))
        .push(Scripted::text("That is my plan."));
    let out = codesmith(
        &sb.home(),
        &exec_args(&sb.ws(), &server.base_url(), "read-only", &["plan the fix"]),
    )
    .await;
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("That is my plan.")
            && stdout
                .contains("Plan:\n1. [pending] Fix add() in calc.py\n2. [pending] Run the tests"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_approvals_revokes_in_the_ui() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "curl -s http://127.0.0.1:9/a && curl -s http://127.0.0.1:9/b"}"#,
        ))
        .push(Scripted::text("done"));
    let ws = sb.ws();
    let url = server.base_url();
    let input = "check\na\n/approvals\n/approvals revoke --all\n/approvals\n/quit\n";
    let out = line_mode(&sb.home(), &ui_args(&ws, &url), input).await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // A compound's "always" is the exact line, never each program.
    assert!(
        stdout.contains(
            "shell exactly `curl -s http://127.0.0.1:9/a && curl -s http://127.0.0.1:9/b`"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("revoked "), "{stdout}");
    assert!(stdout.contains("no saved grants"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_grants_file_is_an_error_never_no_saved_grants() {
    let sb = Sandbox::new();
    let file = sb.home().join("approvals.toml");
    std::fs::create_dir_all(sb.home()).unwrap();
    std::fs::write(&file, "this = = not toml").unwrap();
    let ws = sb.ws();
    for args in [
        vec!["approvals", "list", "-w", ws.to_str().unwrap()],
        vec!["approvals", "revoke", "--all", "-w", ws.to_str().unwrap()],
    ] {
        let out = codesmith(&sb.home(), &args).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {stdout}");
        assert!(!stdout.contains("no saved grants"), "{stdout}");
        assert!(
            stderr.contains(&file.display().to_string()) && stderr.contains("nothing"),
            "{stderr}"
        );
    }
    // The file is kept for the user to fix.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "this = = not toml");
}
