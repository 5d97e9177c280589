//! MCP servers as tools, end to end: `codesmith exec` against the scripted model, with a
//! server built on the Python MCP SDK's FastMCP (skipped with a note when the SDK is not
//! installed; scripts/dev-setup.sh installs it).

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use common::{Sandbox, codesmith};

fn python_mcp_available() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import mcp.server.fastmcp, anyio"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn skip_without_python() -> bool {
    if python_mcp_available() {
        return false;
    }
    eprintln!(
        "note: skipped: the Python `mcp` package is not installed (scripts/dev-setup.sh installs it)"
    );
    true
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fastmcp_server.py")
}

/// Writes the user config with the fixture server `fx` (plus `extra` TOML).
fn configure(home: &Path, markers: &Path, fx_extra: &str, extra: &str) {
    let config = format!(
        "[mcp_servers.fx]\ncommand = \"python3\"\nargs = [{:?}, {:?}]\nstartup_timeout_secs = 20\n{fx_extra}\n{extra}",
        fixture().to_str().unwrap(),
        markers.to_str().unwrap(),
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
}

async fn exec(sb: &Sandbox, server: &ScriptedServer, approval: &str) -> std::process::Output {
    let ws = sb.ws();
    codesmith(
        &sb.home(),
        &[
            "exec",
            "--workspace",
            ws.to_str().unwrap(),
            "--provider",
            "openai",
            "--base-url",
            &server.base_url(),
            "--model",
            "scripted",
            "--approval",
            approval,
            "Use the MCP tools",
        ],
    )
    .await
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

fn catalogue(body: &Value) -> Vec<Value> {
    body["tools"].as_array().cloned().unwrap_or_default()
}

fn spec<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|t| t["function"]["name"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_are_listed_called_wrapped_and_errors_refused() {
    if skip_without_python() {
        return;
    }
    let sb = Sandbox::new();
    let markers = sb.dir.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    // A second server exits at start-up: reported once, the session goes on.
    configure(
        &sb.home(),
        &markers,
        "",
        "[mcp_servers.dead]\ncommand = \"python3\"\nargs = [\"-c\", \"import sys; sys.exit(3)\"]\n",
    );
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "mcp__fx__echo",
            r#"{"text": "hi"}"#,
        ))
        .push(Scripted::tool_call(
            "c2",
            "mcp__fx__fail",
            r#"{"reason": "because"}"#,
        ))
        .push(Scripted::tool_call("c3", "mcp__fx__big", r#"{"n": 50000}"#))
        .push(Scripted::text("done"));
    let out = exec(&sb, &server, "auto").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        stderr.matches("MCP server `dead` is unavailable").count(),
        1,
        "the failed server is reported once: {stderr}"
    );

    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 4);
    let tools = catalogue(&bodies[0]);
    let echo = spec(&tools, "mcp__fx__echo").expect("echo is in the catalogue");
    let params = &echo["function"]["parameters"];
    assert_eq!(params["type"], "object");
    // FastMCP sends `note` as anyOf [string, null]: folded for the providers.
    assert_eq!(params["properties"]["note"]["type"], "string", "{params}");
    assert!(params["properties"]["note"].get("anyOf").is_none());
    assert!(spec(&tools, "mcp__fx__fail").is_some());
    assert!(
        tools
            .iter()
            .all(|t| !t["function"]["name"].as_str().unwrap().contains("dead"))
    );
    // The catalogue does not change between requests.
    for b in &bodies[1..] {
        assert_eq!(b["tools"].to_string(), bodies[0]["tools"].to_string());
    }

    let results = tool_messages(&bodies[3]);
    assert_eq!(results.len(), 3);
    let ok = &results[0];
    assert!(
        ok.starts_with("<external_content source=\"mcp:fx\">"),
        "{ok}"
    );
    assert!(ok.contains("echo: hi"), "{ok}");
    assert!(
        !ok.contains('\u{200b}'),
        "the invisible character is removed: {ok:?}"
    );
    assert_eq!(ok.matches("</external_content>").count(), 1, "{ok}");
    let err = &results[1];
    assert!(
        err.starts_with("<external_content source=\"mcp:fx\">"),
        "{err}"
    );
    assert!(
        err.contains("\"ok\":false") && err.contains("TOOL_ERROR"),
        "{err}"
    );
    assert!(err.contains("broken on purpose: because"), "{err}");
    let big = &results[2];
    assert!(big.len() < 40_000, "capped: {} bytes", big.len());
    assert!(big.contains("retrieve_tool_result"), "spilled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_trusted_read_only_tools_run_without_approval() {
    if skip_without_python() {
        return;
    }
    let sb = Sandbox::new();
    let markers = sb.dir.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    configure(&sb.home(), &markers, "trusted = true", "");
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "mcp__fx__echo",
            r#"{"text": "hi"}"#,
        ))
        .push(Scripted::tool_call("c2", "mcp__fx__big", r#"{"n": 3}"#))
        .push(Scripted::text("done"));
    // `suggest` with nobody present: what needs approval is refused.
    let out = exec(&sb, &server, "suggest").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let bodies = server.request_bodies();
    let results = tool_messages(&bodies[2]);
    assert!(results[0].contains("echo: hi"), "{}", results[0]);
    assert!(
        results[1].contains("DENIED") && !results[1].contains("xxx"),
        "{}",
        results[1]
    );
    assert!(results[1].contains("trusted = true"), "{}", results[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_servers_ask_even_for_read_only_hints() {
    if skip_without_python() {
        return;
    }
    let sb = Sandbox::new();
    let markers = sb.dir.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    configure(&sb.home(), &markers, "", "");
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "mcp__fx__echo",
            r#"{"text": "hi"}"#,
        ))
        .push(Scripted::text("done"));
    let out = exec(&sb, &server, "suggest").await;
    assert_eq!(out.status.code(), Some(0));
    let results = tool_messages(&server.request_bodies()[1]);
    assert!(
        results[0].contains("DENIED") && !results[0].contains("echo: hi"),
        "{}",
        results[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_is_cancelled_at_the_server() {
    if skip_without_python() {
        return;
    }
    let sb = Sandbox::new();
    let markers = sb.dir.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    configure(&sb.home(), &markers, "tool_timeout_secs = 1", "");
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "mcp__fx__slow",
            r#"{"seconds": 30}"#,
        ))
        .push(Scripted::text("done").stall_before(1500));
    let out = exec(&sb, &server, "auto").await;
    assert_eq!(out.status.code(), Some(0));
    let results = tool_messages(&server.request_bodies()[1]);
    assert!(results[0].contains("TIMEOUT"), "{}", results[0]);
    let marker = markers.join("cancelled");
    let start = Instant::now();
    while !marker.exists() && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        marker.exists(),
        "notifications/cancelled did not reach the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_list_shows_servers_state_and_tools() {
    if skip_without_python() {
        return;
    }
    let sb = Sandbox::new();
    let markers = sb.dir.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    configure(
        &sb.home(),
        &markers,
        "",
        "[mcp_servers.off]\ncommand = \"nope\"\nenabled = false\n",
    );
    // A project config cannot add servers.
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    std::fs::write(
        ws.join(".codesmith/config.toml"),
        "[mcp_servers.evil]\ncommand = \"python3\"\n",
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args(["mcp", "list", "--json"])
        .current_dir(&ws)
        .env("CODESMITH_HOME", sb.home())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = v["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{v}");
    let fx = servers.iter().find(|s| s["name"] == "fx").unwrap();
    assert_eq!(fx["state"], "running");
    assert_eq!(
        fx["tools"],
        serde_json::json!([
            "mcp__fx__big",
            "mcp__fx__echo",
            "mcp__fx__fail",
            "mcp__fx__slow"
        ])
    );
    let off = servers.iter().find(|s| s["name"] == "off").unwrap();
    assert_eq!(off["state"], "disabled");
}
