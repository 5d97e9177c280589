//! The MCP client over streamable HTTP, end to end through `codesmith exec` and the
//! scripted model, against a loopback server scripted on the wire
//! (`fixtures/mcp/http_server.py`, plain Python): an answer over the 16 MiB message limit
//! and an undecodable answer (each as a JSON body and as an SSE event) each fail their
//! call at once, naming the cause, and the connection goes on.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer};

use crate::common::{Sandbox, codesmith, exec_args, mcp_list_json};
use crate::mcp_protocol::{received, tool_messages, tool_names};

/// The fixture on a free loopback port, logging to `log`, killed on drop.
struct HttpServer {
    child: tokio::process::Child,
    port: u16,
}

impl HttpServer {
    async fn start(log: &Path, mode: &[&str]) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/http_server.py");
        let child = tokio::process::Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(log)
            .args(mode)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let start = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the HTTP fixture did not listen"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_undecodable_http_answers_fail_their_call_and_spend_no_restart() {
    let sb = Sandbox::new();
    let log = sb.dir.path().join("http.jsonl");
    let web = HttpServer::start(&log, &[]).await;
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[mcp_servers.h]\nurl = \"http://127.0.0.1:{}/mcp\"\nstartup_timeout_secs = 20\n\
             tool_timeout_secs = 60\n",
            web.port
        ),
    )
    .unwrap();
    let model = ScriptedServer::start().await;
    let echo = |id: &str, text: &str| {
        Scripted::tool_call(id, "mcp__h__echo", format!(r#"{{"text": "{text}"}}"#))
    };
    model
        .push(Scripted::tool_call("c1", "mcp__h__huge", "{}"))
        .push(echo("c2", "after json"))
        .push(Scripted::tool_call("c3", "mcp__h__huge_sse", "{}"))
        .push(echo("c4", "after sse"))
        .push(Scripted::tool_call("c5", "mcp__h__surrogate_sse", "{}"))
        .push(echo("c6", "after bad sse"))
        .push(Scripted::tool_call("c7", "mcp__h__surrogate", "{}"))
        .push(echo("c8", "still here"))
        .push(Scripted::text("done"));
    let started = Instant::now();
    let out = codesmith(
        &sb.home(),
        &exec_args(&sb.ws(), &model.base_url(), "auto", &["Use the MCP tools"]),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(40));
    let bodies = model.request_bodies();
    let results = tool_messages(&bodies[8]);
    assert_eq!(results.len(), 8, "{stderr}");
    for (i, how) in [(0, "a JSON body"), (2, "an SSE event")] {
        let r = &results[i];
        assert!(
            r.contains("TOOL_ERROR")
                && r.contains("exceeded the 16 MiB")
                && r.contains("server is still connected"),
            "{how}: {r}"
        );
        assert!(
            !r.contains("stopped") && !r.contains("in time"),
            "{how}: {r}"
        );
    }
    for (i, how) in [(4, "an SSE event"), (6, "a JSON body")] {
        let r = &results[i];
        assert!(
            r.contains("TOOL_ERROR")
                && r.contains("could not be decoded at byte")
                && r.contains("surrogate"),
            "{how}: {r}"
        );
        assert!(
            !r.contains("stopped") && !r.contains("in time"),
            "{how}: {r}"
        );
    }
    // The connection went on: every call after a failed one works, on the same session
    // (one handshake; a crash would have spent the one restart on a second).
    assert!(results[1].contains("echo: after json"), "{}", results[1]);
    assert!(results[3].contains("echo: after sse"), "{}", results[3]);
    assert!(results[5].contains("echo: after bad sse"), "{}", results[5]);
    assert!(results[7].contains("echo: still here"), "{}", results[7]);
    let messages = received(&log);
    let handshakes = messages
        .iter()
        .filter(|(_, m)| m["method"] == "initialize")
        .count();
    assert_eq!(handshakes, 1, "the connection was re-established");
    // Each failed call was answered within 2 s: the next call reached the server that soon.
    let calls: Vec<(f64, String)> = messages
        .iter()
        .filter(|(_, m)| m["method"] == "tools/call")
        .map(|(t, m)| (*t, m["params"]["name"].as_str().unwrap_or("").to_string()))
        .collect();
    let names: Vec<&str> = calls.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "huge",
            "echo",
            "huge_sse",
            "echo",
            "surrogate_sse",
            "echo",
            "surrogate",
            "echo"
        ]
    );
    for pair in calls.windows(2).step_by(2) {
        let gap = pair[1].0 - pair[0].0;
        eprintln!(
            "measured: `{}` failed, next call {gap:.2}s after it was sent",
            pair[0].1
        );
        assert!(gap < 2.0, "{} took {gap:.2}s to fail", pair[0].1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_http_answer_fails_its_call_alone_and_spends_no_restart() {
    let sb = Sandbox::new();
    let log = sb.dir.path().join("http.jsonl");
    let web = HttpServer::start(&log, &[]).await;
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[mcp_servers.h]\nurl = \"http://127.0.0.1:{}/mcp\"\nstartup_timeout_secs = 20\n\
             tool_timeout_secs = 20\n",
            web.port
        ),
    )
    .unwrap();
    // Each unusable answer, with the cause its failure must name.
    let cases = [
        ("pretty", "surrogate"),
        ("sse_pretty", "surrogate"),
        ("stray", "answer to request 9999"),
        ("sse_end", "ended without answering"),
        ("event_type", "type `weird`"),
        ("h500", "500"),
        ("h404", "404"),
        ("html", "text/html"),
    ];
    let model = ScriptedServer::start().await;
    for (i, (tool, _)) in cases.iter().enumerate() {
        model.push(Scripted::tool_call(
            format!("c{i}"),
            format!("mcp__h__{tool}"),
            "{}",
        ));
        model.push(Scripted::tool_call(
            format!("e{i}"),
            "mcp__h__echo",
            format!(r#"{{"text": "after {tool}"}}"#),
        ));
    }
    model.push(Scripted::text("done"));
    let started = Instant::now();
    let out = codesmith(
        &sb.home(),
        &exec_args(&sb.ws(), &model.base_url(), "auto", &["Use the MCP tools"]),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let bodies = model.request_bodies();
    let results = tool_messages(&bodies[2 * cases.len()]);
    assert_eq!(results.len(), 2 * cases.len(), "{stderr}");
    for (i, (tool, cause)) in cases.iter().enumerate() {
        let r = &results[2 * i];
        assert!(r.contains("TOOL_ERROR") && r.contains(cause), "{tool}: {r}");
        assert!(
            !r.contains("stopped") && !r.contains("in time"),
            "{tool}: {r}"
        );
        let after = &results[2 * i + 1];
        assert!(
            after.contains(&format!("echo: after {tool}")),
            "{tool}: {after}"
        );
    }
    eprintln!(
        "measured: {} unusable answers and their echoes in {:.1}s",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    let handshakes = received(&log)
        .iter()
        .filter(|(_, m)| m["method"] == "initialize")
        .count();
    assert_eq!(handshakes, 1, "the connection was re-established");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_runs_only_as_a_task_is_not_offered_over_http() {
    // The tool list as a JSON body (read raw by CodeSmith) and as an SSE event.
    for mode in [&[][..], &["sse_list"][..]] {
        let sb = Sandbox::new();
        let log = sb.dir.path().join("http.jsonl");
        let web = HttpServer::start(&log, mode).await;
        std::fs::write(
            sb.home().join("config.toml"),
            format!(
                "[mcp_servers.h]\nurl = \"http://127.0.0.1:{}/mcp\"\nstartup_timeout_secs = 20\n",
                web.port
            ),
        )
        .unwrap();
        let model = ScriptedServer::start().await;
        model.push(Scripted::text("done"));
        let out = codesmith(
            &sb.home(),
            &exec_args(&sb.ws(), &model.base_url(), "auto", &["Use the MCP tools"]),
        )
        .await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {stderr}");
        let bodies = model.request_bodies();
        let names = tool_names(&bodies[0]);
        assert!(
            names.contains(&"mcp__h__echo".to_string()),
            "{mode:?}: {names:?}"
        );
        assert!(
            names.iter().all(|n| !n.contains("research")),
            "{mode:?}: {names:?}"
        );
        // A JSON body is read once; an SSE answer costs one listing more (asked again
        // through rmcp).
        let listings = received(&log)
            .iter()
            .filter(|(_, m)| m["method"] == "tools/list")
            .count();
        eprintln!("measured: {mode:?}: {listings} tools/list request(s) at start-up");
        assert_eq!(listings, if mode.is_empty() { 1 } else { 2 }, "{mode:?}");
        // `codesmith mcp list` says which tools were left out as tasks-only.
        let list = mcp_list_json(&sb.home(), &sb.ws()).await;
        let v: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
        assert_eq!(
            v["servers"][0]["tasks_only"],
            serde_json::json!(["research"]),
            "{mode:?}: {v}"
        );
        assert!(
            v["servers"][0]["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty() && !t.iter().any(|n| n == "mcp__h__research")),
            "{mode:?}: {v}"
        );
    }
}
