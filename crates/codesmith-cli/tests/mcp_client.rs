//! MCP servers as tools, end to end: `codesmith exec` against the scripted model, with a
//! server built on the Python MCP SDK's FastMCP, over stdio and over streamable HTTP
//! (`MCP SERVER MISSING:` and a skip when the SDK is not installed, a failure with
//! CODESMITH_REQUIRE_SUITES=1; scripts/dev-setup.sh installs it).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use common::{Sandbox, codesmith, codesmith_with_env, exec_args};

fn python_mcp_available() -> bool {
    std::process::Command::new(codesmith_testkit::mcp_python())
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
    codesmith_testkit::missing(
        "MCP SERVER",
        "the Python `mcp` package (FastMCP) is not installed; scripts/dev-setup.sh installs it",
    );
    true
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fastmcp_server.py")
}

/// A sandbox whose user config has the fixture server `fx` (with `fx_extra` in its
/// section, plus `extra` TOML), and the directory where `fx` leaves markers.
fn fx_sandbox(fx_extra: &str, extra: &str) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let markers = sb.dir.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    configure(&sb.home(), &markers, fx_extra, extra);
    (sb, markers)
}

/// Writes the user config with the fixture server `fx` (plus `extra` TOML).
fn configure(home: &Path, markers: &Path, fx_extra: &str, extra: &str) {
    let config = format!(
        "[mcp_servers.fx]\ncommand = {:?}\nargs = [{:?}, {:?}]\nstartup_timeout_secs = 20\n{fx_extra}\n{extra}",
        codesmith_testkit::mcp_python().to_str().unwrap(),
        fixture().to_str().unwrap(),
        markers.to_str().unwrap(),
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
}

async fn exec(sb: &Sandbox, server: &ScriptedServer, approval: &str) -> std::process::Output {
    let ws = sb.ws();
    codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), approval, &["Use the MCP tools"]),
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
    // A second server exits at start-up: reported once, the session goes on.
    let (sb, _) = fx_sandbox(
        "",
        "[mcp_servers.dead]\ncommand = \"python3\"\nargs = [\"-c\", \"import sys; sys.exit(3)\"]\n",
    );
    // A project config cannot add a server: ignored with a warning.
    std::fs::create_dir_all(sb.ws().join(".codesmith")).unwrap();
    std::fs::write(
        sb.ws().join(".codesmith/config.toml"),
        "[mcp_servers.evil]\ncommand = \"python3\"\n",
    )
    .unwrap();
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
    assert!(stderr.contains("ignored `mcp_servers`"), "{stderr}");

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
    assert!(
        tools
            .iter()
            .all(|t| !t["function"]["name"].as_str().unwrap().contains("evil"))
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
    let (sb, _) = fx_sandbox("trusted = true", "");
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
    let out = exec(&sb, &server, "auto-edit").await;
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
    let (sb, _) = fx_sandbox("", "");
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "mcp__fx__echo",
            r#"{"text": "hi"}"#,
        ))
        .push(Scripted::text("done"));
    let out = exec(&sb, &server, "auto-edit").await;
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
    let (sb, markers) = fx_sandbox("tool_timeout_secs = 1", "");
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
    while !marker.exists() && start.elapsed() < Duration::from_secs(15) {
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
    let (sb, _) = fx_sandbox(
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
    let out = common::mcp_list_json(&sb.home(), &ws).await;
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
            "mcp__fx__crash",
            "mcp__fx__echo",
            "mcp__fx__fail",
            "mcp__fx__slow",
            "mcp__fx__whoami"
        ])
    );
    let off = servers.iter().find(|s| s["name"] == "off").unwrap();
    assert_eq!(off["state"], "disabled");
}

/// `b`'s JSON text is `a`'s with more elements appended: the bytes before `a`'s closing
/// bracket are a prefix of `b`.
fn extends(a: &Value, b: &Value) -> bool {
    let (a, b) = (a.to_string(), b.to_string());
    let head = a.strip_suffix(']').unwrap();
    b.len() > a.len() && b.starts_with(head) && b[head.len()..].starts_with(',')
}

fn messages_append_only(bodies: &[Value]) {
    for pair in bodies.windows(2) {
        let (ma, mb) = (
            pair[0]["messages"].as_array().unwrap(),
            pair[1]["messages"].as_array().unwrap(),
        );
        assert!(mb.len() > ma.len());
        for (x, y) in ma.iter().zip(mb) {
            assert_eq!(
                x.to_string(),
                y.to_string(),
                "an earlier message was rewritten"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_tools_are_deferred_and_activation_only_appends() {
    if skip_without_python() {
        return;
    }
    let sb = Sandbox::new();
    let many = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/many_tools.py");
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[mcp_servers.many]\ncommand = {:?}\nargs = [{:?}]\nstartup_timeout_secs = 20\n",
            codesmith_testkit::mcp_python().to_str().unwrap(),
            many.to_str().unwrap()
        ),
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "mcp__many__lookup_invoice",
            r#"{"id": "7"}"#,
        ))
        .push(Scripted::tool_call(
            "c2",
            "tool_search",
            r#"{"query": "invoice", "limit": 2}"#,
        ))
        .push(Scripted::tool_call(
            "c3",
            "mcp__many__lookup_invoice",
            r#"{"id": "7"}"#,
        ))
        .push(Scripted::text("done"));
    let out = exec(&sb, &server, "auto").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 4);
    messages_append_only(&bodies);

    let first = catalogue(&bodies[0]);
    let search = spec(&first, "tool_search").expect("tool_search is sent when tools are deferred");
    let description = search["function"]["description"].as_str().unwrap();
    assert!(
        description.contains("- mcp__many__count_otter_00: Counts otter sightings in region 0.")
    );
    assert_eq!(description.matches("\n- mcp__many__").count(), 60);
    assert!(
        first
            .iter()
            .all(|t| !t["function"]["name"].as_str().unwrap().starts_with("mcp__")),
        "no MCP tool is sent before activation"
    );
    assert_eq!(
        bodies[1]["tools"].to_string(),
        bodies[0]["tools"].to_string()
    );
    // After activation the catalogue is a strict extension: two tools appended at the tail.
    assert!(extends(&bodies[1]["tools"], &bodies[2]["tools"]));
    let third = catalogue(&bodies[2]);
    assert_eq!(third.len(), first.len() + 2);
    let mut tail: Vec<&str> = third[first.len()..]
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    tail.sort_unstable();
    assert_eq!(
        tail,
        ["mcp__many__lookup_invoice", "mcp__many__send_invoice"]
    );
    assert_eq!(
        bodies[3]["tools"].to_string(),
        bodies[2]["tools"].to_string()
    );

    let results = tool_messages(&bodies[3]);
    assert!(
        results[0].contains("not loaded yet") && results[0].contains("tool_search"),
        "{}",
        results[0]
    );
    assert!(!results[0].contains("42 EUR"));
    assert!(
        results[1].contains("mcp__many__lookup_invoice"),
        "{}",
        results[1]
    );
    assert!(results[2].contains("invoice 7: 42 EUR"), "{}", results[2]);

    // A resumed session sends the same catalogue.
    let id = crate::common::only_session_id(&sb.home());
    let again = ScriptedServer::start().await;
    again.push(Scripted::text("resumed"));
    let ws = sb.ws();
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &again.base_url(), "auto", &["--resume", &id, "Go on"]),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let resumed = again.request_bodies();
    assert_eq!(
        resumed[0]["tools"].to_string(),
        bodies[3]["tools"].to_string()
    );
}

/// The FastMCP fixture serving streamable HTTP on a free loopback port, killed on drop.
struct HttpFixture {
    child: tokio::process::Child,
    port: u16,
}

impl HttpFixture {
    /// Starts it (the bearer token it expects in `token`) and waits (at most 15 s) until
    /// the port accepts connections.
    async fn start(markers: &Path, token: &str) -> HttpFixture {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new(codesmith_testkit::mcp_python())
            .arg(fixture())
            .arg(markers)
            .args(["--http", &port.to_string()])
            .env("EXPECT_TOKEN", token)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let start = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "the FastMCP HTTP server did not listen"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        HttpFixture { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

const TOKEN: &str = "tok-9f8e7d6c5b4a-never-shown";

/// A sandbox, its markers directory and the HTTP fixture, with the user config
/// `[mcp_servers.web] url = …` followed by `web_extra`.
async fn http_sandbox(web_extra: &str) -> (Sandbox, PathBuf, HttpFixture) {
    let sb = Sandbox::new();
    let markers = sb.dir.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    let web = HttpFixture::start(&markers, TOKEN).await;
    std::fs::write(
        sb.home().join("config.toml"),
        format!("[mcp_servers.web]\nurl = {:?}\n{web_extra}", web.url()),
    )
    .unwrap();
    (sb, markers, web)
}

async fn exec_with_token(
    sb: &Sandbox,
    server: &ScriptedServer,
    token: Option<&str>,
) -> std::process::Output {
    let ws = sb.ws();
    let mut envs = vec![("CS_TEST_TEAM", "core")];
    if let Some(t) = token {
        envs.push(("CS_TEST_MCP_TOKEN", t));
    }
    codesmith_with_env(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["Use the MCP tools"]),
        &envs,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_servers_get_headers_and_bearer_and_cancellation() {
    if skip_without_python() {
        return;
    }
    let (sb, markers, _web) = http_sandbox(
        "headers = { X-Team = \"${CS_TEST_TEAM}\" }\n\
         bearer_token_env_var = \"CS_TEST_MCP_TOKEN\"\nstartup_timeout_secs = 20\n\
         tool_timeout_secs = 1\n\
         [mcp_servers.far]\nurl = \"http://mcp.example.com/mcp\"\n",
    )
    .await;
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call("c1", "mcp__web__whoami", "{}"))
        .push(Scripted::tool_call(
            "c2",
            "mcp__web__echo",
            r#"{"text": "over http"}"#,
        ))
        .push(Scripted::tool_call(
            "c3",
            "mcp__web__fail",
            r#"{"reason": "remote"}"#,
        ))
        .push(Scripted::tool_call(
            "c4",
            "mcp__web__slow",
            r#"{"seconds": 30}"#,
        ))
        .push(Scripted::text("done").stall_before(1500));
    let out = exec_with_token(&sb, &server, Some(TOKEN)).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    // Plain http to a host that is not loopback is refused at start-up, with the fix.
    assert!(
        stderr.contains("MCP server `far` is unavailable") && stderr.contains("allow_plain_http"),
        "{stderr}"
    );
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 5);
    let results = tool_messages(&bodies[4]);
    assert!(
        results[0].contains("auth: ok, team: core"),
        "the bearer token and the header reach the server: {}",
        results[0]
    );
    assert!(
        results[1].starts_with("<external_content source=\"mcp:web\">")
            && results[1].contains("echo: over http")
            && !results[1].contains('\u{200b}'),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("TOOL_ERROR") && results[2].contains("broken on purpose: remote"),
        "{}",
        results[2]
    );
    assert!(results[3].contains("TIMEOUT"), "{}", results[3]);
    let marker = markers.join("cancelled");
    let start = Instant::now();
    while !marker.exists() && start.elapsed() < Duration::from_secs(15) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        marker.exists(),
        "notifications/cancelled did not reach the HTTP server"
    );
    // The session was ended with DELETE before codesmith exited.
    assert!(
        markers.join("deleted").exists(),
        "no DELETE ended the HTTP session"
    );
    // The token appears nowhere: not in the output, not in the transcript.
    let mut everything = format!("{stderr}{}", String::from_utf8_lossy(&out.stdout));
    for e in std::fs::read_dir(sb.home().join("sessions"))
        .unwrap()
        .flatten()
    {
        everything.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
    }
    assert!(!everything.contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unset_bearer_variable_is_reported_and_the_session_goes_on() {
    if skip_without_python() {
        return;
    }
    let (sb, _, _web) = http_sandbox("bearer_token_env_var = \"CS_TEST_MCP_TOKEN\"\n").await;
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call("c1", "mcp__web__whoami", "{}"))
        .push(Scripted::text("done"));
    let out = exec_with_token(&sb, &server, None).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(
        stderr.contains("MCP server `web` is unavailable")
            && stderr.contains("`CS_TEST_MCP_TOKEN` (bearer_token_env_var) is not set"),
        "{stderr}"
    );
    let results = tool_messages(&server.request_bodies()[1]);
    assert!(
        results[0].contains("NOT_FOUND") || results[0].contains("unknown"),
        "{}",
        results[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_stdio_server_is_restarted_once() {
    if skip_without_python() {
        return;
    }
    let (sb, _) = fx_sandbox("", "");
    let server = ScriptedServer::start().await;
    let echo = r#"{"text": "again"}"#;
    server
        .push(Scripted::tool_call("c1", "mcp__fx__crash", "{}"))
        .push(Scripted::tool_call("c2", "mcp__fx__echo", echo))
        .push(Scripted::tool_call("c3", "mcp__fx__crash", "{}"))
        .push(Scripted::tool_call("c4", "mcp__fx__echo", echo))
        .push(Scripted::text("done"));
    let out = exec(&sb, &server, "auto").await;
    assert_eq!(out.status.code(), Some(0));
    let results = tool_messages(&server.request_bodies()[4]);
    assert!(
        results[0].contains("UNAVAILABLE") && results[0].contains("stopped during the call"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("echo: again"),
        "restarted: {}",
        results[1]
    );
    assert!(results[2].contains("UNAVAILABLE"), "{}", results[2]);
    assert!(
        results[3].contains("already restarted once") && !results[3].contains("echo: again"),
        "{}",
        results[3]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_http_server_gives_typed_refusals() {
    if skip_without_python() {
        return;
    }
    let (sb, _, _web) = http_sandbox("startup_timeout_secs = 20\ntool_timeout_secs = 2\n").await;
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call("c1", "mcp__web__crash", "{}"))
        .push(Scripted::tool_call("c2", "mcp__web__whoami", "{}"))
        .push(Scripted::text("done"));
    let started = Instant::now();
    let out = exec_with_token(&sb, &server, None).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(server.request_bodies().len(), 3, "{stderr}");
    let results = tool_messages(&server.request_bodies()[2]);
    assert_eq!(results.len(), 2, "{stderr}");
    assert!(
        results[0].contains("UNAVAILABLE") && results[0].contains("stopped during the call"),
        "{}",
        results[0]
    );
    // The one restart is a new handshake; with nobody listening it fails, typed.
    assert!(
        results[1].contains("UNAVAILABLE") && results[1].contains("is not running"),
        "{}",
        results[1]
    );
}
