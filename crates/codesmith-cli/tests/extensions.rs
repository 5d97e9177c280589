//! Custom slash commands and custom agents through `codesmith exec`, against the scripted
//! model server.

#![allow(clippy::unwrap_used)]

use crate::common;

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use common::{Sandbox, codesmith, exec_args};

/// The text of the first user message of a request body.
fn first_user_text(body: &Value) -> String {
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    match &user["content"] {
        Value::String(s) => s.clone(),
        other => other
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_slash_command_becomes_the_task_exec_sends() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home().join("commands")).unwrap();
    std::fs::write(
        sb.home().join("commands/review.md"),
        "Review $ARGUMENTS carefully.",
    )
    .unwrap();
    std::fs::write(
        sb.home().join("commands/look.md"),
        "---\ndescription: look only\nallowed-tools: read_file, list_dir\n---\nLook at $1.\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::text("Reviewed."))
        .push(Scripted::text("Looked."));
    let ws = sb.ws();
    for task in ["/review src/lib.rs", "/look calc.py"] {
        let out = codesmith(
            &sb.home(),
            &exec_args(&ws, &server.base_url(), "auto", &[task]),
        )
        .await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let bodies = server.request_bodies();
    assert_eq!(first_user_text(&bodies[0]), "Review src/lib.rs carefully.");
    assert_eq!(first_user_text(&bodies[1]), "Look at calc.py.");
    // `allowed-tools` narrowed the catalogue of that task.
    assert_eq!(tool_names(&bodies[1]), ["list_dir", "read_file"]);
    assert!(tool_names(&bodies[0]).contains(&"exec_shell".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_agent_is_offered_and_its_tools_list_is_enforced() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home().join("agents")).unwrap();
    std::fs::write(
        sb.home().join("agents/reader.md"),
        "---\nname: reader\ndescription: Reads files and reports\ntools: read_file, exec_shell_not_a_tool\n---\nYou only read.\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    let call =
        serde_json::json!({"type": "reader", "description": "read calc", "prompt": "Read calc.py"});
    server
        .push(Scripted::tool_call("p1", "agent", call.to_string()))
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "touch ran.txt"}"#,
        ))
        .push(Scripted::text("I could not run commands."))
        .push(Scripted::text("The reader reported."));
    let ws = sb.ws();
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["--json", "delegate"]),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bodies = server.request_bodies();
    // The parent's `agent` tool offers it beside the built-in types.
    let agent = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "agent")
        .unwrap();
    let kind = &agent["function"]["parameters"]["properties"]["type"];
    assert!(
        kind["enum"]
            .as_array()
            .unwrap()
            .contains(&Value::from("reader"))
    );
    assert!(
        kind["description"]
            .as_str()
            .unwrap()
            .contains("Reads files and reports")
    );
    // The child sees only the listed tools it shares with its parent, and its role prompt.
    assert_eq!(tool_names(&bodies[1]), ["read_file"]);
    assert!(bodies[1].to_string().contains("You only read."));
    // A call outside the list is refused with a reason and nothing runs.
    let child_result = bodies[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(
        child_result.contains("custom agent `reader`") && child_result.contains("NOT run"),
        "{child_result}"
    );
    assert!(!ws.join("ran.txt").exists());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"agent_type\":\"reader\""), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_lists_custom_commands_in_help_and_expands_them_like_exec() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home().join("commands")).unwrap();
    std::fs::write(
        sb.home().join("commands/review.md"),
        "---\ndescription: careful review\nargument-hint: FILE\n---\nReview $ARGUMENTS carefully.",
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("Reviewed."));
    let ws = sb.ws().to_string_lossy().into_owned();
    let url = server.base_url();
    let flags = [
        "--workspace",
        ws.as_str(),
        "--provider",
        "openai",
        "--base-url",
        url.as_str(),
        "--model",
        "scripted",
    ];
    let out = common::line_mode(&sb.home(), &flags, "/help\n/review src/lib.rs\n/quit\n").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("/review FILE") && stdout.contains("careful review"),
        "{stdout}"
    );
    let bodies = server.request_bodies();
    assert_eq!(first_user_text(&bodies[0]), "Review src/lib.rs carefully.");
}
