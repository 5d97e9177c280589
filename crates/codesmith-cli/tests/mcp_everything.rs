//! The MCP client against the official reference server `@modelcontextprotocol/server-everything`
//! (npm), end to end through `codesmith exec` and the scripted model. scripts/dev-setup.sh
//! installs the pinned version into `target/mcp-everything/`; without it the test prints
//! `MCP SERVER MISSING:` and checks nothing (a failure with CODESMITH_REQUIRE_SUITES=1).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use common::{Sandbox, codesmith, exec_args};

/// Keep in step with EVERYTHING_VERSION in scripts/dev-setup.sh.
const MCP_EVERYTHING_VERSION: &str = "2026.8.31";

/// The server's entry point, when the pinned version is installed.
pub(crate) fn everything() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-everything");
    let pkg = root.join("node_modules/@modelcontextprotocol/server-everything");
    let manifest: Value = std::fs::read_to_string(pkg.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let node = std::process::Command::new("node")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if manifest["version"] == MCP_EVERYTHING_VERSION && node {
        return Some(pkg.join("dist/index.js"));
    }
    codesmith_testkit::missing(
        "MCP SERVER",
        &format!(
            "@modelcontextprotocol/server-everything@{MCP_EVERYTHING_VERSION} (or node) is not \
             installed in {}; scripts/dev-setup.sh installs it",
            root.display()
        ),
    );
    None
}

fn tool_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_tools_are_listed_called_refused_and_cancelled() {
    let Some(index) = everything() else {
        return;
    };
    let sb = Sandbox::new();
    // `tee` keeps a copy of everything the client sends, to see the cancellation arrive.
    let sent = sb.dir.path().join("client-to-server.jsonl");
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[mcp_servers.everything]\ncommand = \"sh\"\n\
             args = [\"-c\", \"tee \\\"$0\\\" | exec node \\\"$1\\\" stdio\", {:?}, {:?}]\n\
             startup_timeout_secs = 30\ntool_timeout_secs = 2\n",
            sent.to_str().unwrap(),
            index.to_str().unwrap()
        ),
    )
    .unwrap();

    // `codesmith mcp list --json` shows the server running with its tools.
    let ws = sb.ws();
    let list = common::mcp_list_json(&sb.home(), &ws).await;
    assert_eq!(
        list.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    let v: Value = serde_json::from_slice(&list.stdout).unwrap();
    let server = &v["servers"][0];
    assert_eq!(server["state"], "running", "{v}");
    let tools: Vec<&str> = server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for t in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__trigger-long-running-operation",
    ] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }

    let model = ScriptedServer::start().await;
    model
        .push(Scripted::tool_call(
            "c1",
            "mcp__everything__echo",
            r#"{"message": "hi\u200bthere"}"#,
        ))
        .push(Scripted::tool_call(
            "c2",
            "mcp__everything__get-sum",
            r#"{"a": 2, "b": 40}"#,
        ))
        .push(Scripted::tool_call(
            "c3",
            "mcp__everything__get-sum",
            r#"{"a": "two", "b": 40}"#,
        ))
        .push(Scripted::tool_call(
            "c4",
            "mcp__everything__get-tiny-image",
            "{}",
        ))
        .push(Scripted::tool_call(
            "c5",
            "mcp__everything__trigger-long-running-operation",
            r#"{"duration": 30, "steps": 5}"#,
        ))
        .push(Scripted::tool_call("c6", "mcp__everything__get-env", "{}"))
        .push(Scripted::text("done").stall_before(1000));
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &model.base_url(), "auto", &["Use the MCP tools"]),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let bodies = model.request_bodies();
    assert_eq!(bodies.len(), 7);
    let names: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");
    let results = tool_messages(&bodies[6]);
    assert_eq!(results.len(), 6);

    // Arguments are sanitized on the way out (the invisible character never reached the
    // server), results are wrapped with the server's name.
    let echo = &results[0];
    assert!(
        echo.starts_with("<external_content source=\"mcp:everything\">")
            && echo.contains("Echo: hithere"),
        "{echo}"
    );
    assert!(
        results[1].contains("The sum of 2 and 40 is 42"),
        "{}",
        results[1]
    );
    // An `isError` result (the server's input validation) is a typed refusal.
    let refused = &results[2];
    assert!(
        refused.contains("\"ok\":false") && refused.contains("TOOL_ERROR"),
        "{refused}"
    );
    assert!(refused.contains("expected number"), "{refused}");
    // The server's image reaches the model as an image: named in the result's text (no
    // base64 there), and sent as an `image_url` part right after the results.
    assert!(
        results[3].contains("[image 1: image/png") && results[3].contains("it follows this result"),
        "{}",
        results[3]
    );
    assert!(results[3].len() < 1000, "{}", results[3]);
    let image_parts: Vec<&Value> = bodies[6]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|p| p["type"] == "image_url")
        .collect();
    assert_eq!(image_parts.len(), 1, "{}", bodies[6]);
    assert!(
        image_parts[0]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,"),
        "{}",
        image_parts[0]
    );
    // The slow call timed out and the server was sent notifications/cancelled for it.
    assert!(results[4].contains("TIMEOUT"), "{}", results[4]);
    let start = Instant::now();
    let cancelled = loop {
        let text = std::fs::read_to_string(&sent).unwrap_or_default();
        let call_id = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| {
                m["method"] == "tools/call"
                    && m["params"]["name"] == "trigger-long-running-operation"
            })
            .map(|m| m["id"].clone());
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|m| {
                m["method"] == "notifications/cancelled"
                    && Some(&m["params"]["requestId"]) == call_id.as_ref()
            });
        if found || start.elapsed() > Duration::from_secs(3) {
            break found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        cancelled,
        "no notifications/cancelled for the long-running call reached the server"
    );
    // The server's environment: CodeSmith's own secrets (the provider key) stay behind.
    let env = &results[5];
    assert!(env.contains("PATH"), "{env}");
    assert!(!env.contains("OPENAI_API_KEY"), "{env}");
}
