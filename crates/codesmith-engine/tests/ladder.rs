//! The approval ladder through the engine's gate with a scripted model, headless (nobody to
//! ask, as `exec`) and with a person answering: `read-only` refuses every write and every
//! command the policy does not prove read-only, without asking; `suggest` asks before each
//! file write; `auto-edit` writes without asking, as the former `suggest` did. A "no" with
//! a reason reaches the model, and a reused persistent grant is named once per session.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use codesmith_engine::{Approver, Engine, NoApprover};
use codesmith_policy::ApprovalMode;
use codesmith_protocol::{ApprovalAnswer, ApprovalRequest, Event};
use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::{Value, json};

use common::Recorder;

struct Rig {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
    server: ScriptedServer,
}

impl Rig {
    async fn new() -> Rig {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        std::fs::write(ws.join("notes.txt"), "alpha\n").unwrap();
        let home = tmp.path().join("home");
        Rig {
            _tmp: tmp,
            ws,
            home,
            server: ScriptedServer::start().await,
        }
    }

    fn engine(&self, mode: ApprovalMode, approver: Arc<dyn Approver>) -> Engine {
        common::engine(
            &self.server,
            &self.ws,
            &self.home,
            common::Setup {
                approval: mode,
                approver,
                ..common::Setup::default()
            },
        )
    }

    /// Runs one task with one call of `tool`; returns the call's result (ok, output) and
    /// the notices.
    async fn call(
        &self,
        engine: &mut Engine,
        tool: &str,
        args: Value,
    ) -> (bool, String, Vec<String>) {
        self.server
            .push(Scripted::tool_call("c1", tool, args.to_string()))
            .push(Scripted::text("done"));
        let mut events = Vec::new();
        engine
            .run_task("go", &mut |e| events.push(e))
            .await
            .unwrap();
        let (ok, output) = events
            .iter()
            .find_map(|e| match e {
                Event::ToolResult { ok, output, .. } => Some((*ok, output.clone())),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no tool result in {events:?}"));
        let notices = events
            .iter()
            .filter_map(|e| match e {
                Event::Notice { message } => Some(message.clone()),
                _ => None,
            })
            .collect();
        (ok, output, notices)
    }
}

fn writes() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        (
            "write_file",
            json!({"path": "new.txt", "content": "x\n"}),
            "new.txt",
        ),
        (
            "edit_file",
            json!({"path": "notes.txt", "search": "alpha", "replace": "omega", "sha256": "b6a98d9ce9a2d9149288fa3d"}),
            "notes.txt",
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: patched.txt\n+p\n*** End Patch\n"}),
            "patched.txt",
        ),
    ]
}

#[tokio::test]
async fn read_only_refuses_every_write_and_every_command_not_proven_read_only() {
    let rig = Rig::new().await;
    let person = Recorder::new(ApprovalAnswer::Once);
    for approver in [person.clone() as Arc<dyn Approver>, Arc::new(NoApprover)] {
        let mut engine = rig.engine(ApprovalMode::ReadOnly, approver);
        for (tool, args, _) in writes() {
            let (ok, output, _) = rig.call(&mut engine, tool, args).await;
            assert!(!ok, "{tool}: {output}");
            assert!(output.contains("read-only (plan mode)"), "{output}");
            assert!(output.contains("auto-edit"), "{output}");
        }
        for command in [
            "touch made.txt",
            "cargo build",
            "echo x > made.txt",
            "rm notes.txt",
        ] {
            let (ok, output, _) = rig
                .call(&mut engine, "exec_shell", json!({"command": command}))
                .await;
            assert!(!ok, "{command}: {output}");
            assert!(output.contains("read-only"), "{command}: {output}");
        }
        let (ok, output, _) = rig
            .call(
                &mut engine,
                "exec_shell",
                json!({"command": "cat notes.txt"}),
            )
            .await;
        assert!(ok && output.contains("alpha"), "{output}");
    }
    assert_eq!(
        person.count(),
        0,
        "read-only never asks about a write or a command"
    );
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("notes.txt")).unwrap(),
        "alpha\n"
    );
    for made in ["new.txt", "patched.txt", "made.txt"] {
        assert!(!rig.ws.join(made).exists(), "{made}");
    }
}

#[tokio::test]
async fn suggest_asks_before_each_file_write() {
    let rig = Rig::new().await;
    let no = Recorder::new(ApprovalAnswer::Deny);
    let mut engine = rig.engine(ApprovalMode::Suggest, no.clone());
    for (tool, args, path) in writes() {
        let (ok, output, _) = rig.call(&mut engine, tool, args).await;
        assert!(!ok && output.contains("declined"), "{tool}: {output}");
        let asked = no.asked.lock().unwrap().last().cloned().unwrap();
        assert_eq!(asked.tool, tool);
        assert!(asked.summary.contains(path), "{}", asked.summary);
    }
    assert_eq!(no.count(), 3);
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("notes.txt")).unwrap(),
        "alpha\n"
    );

    let yes = Recorder::new(ApprovalAnswer::Once);
    let mut engine = rig.engine(ApprovalMode::Suggest, yes.clone());
    for (tool, args, path) in writes() {
        let (ok, output, _) = rig.call(&mut engine, tool, args).await;
        assert!(ok, "{tool}: {output}");
        assert!(rig.ws.join(path).exists());
    }
    assert_eq!(yes.count(), 3, "each write is asked about");

    // Headless, nobody can answer: refused, naming the mode that would let it run.
    let mut engine = rig.engine(ApprovalMode::Suggest, Arc::new(NoApprover));
    let (ok, output, _) = rig
        .call(
            &mut engine,
            "write_file",
            json!({"path": "b.txt", "content": "b"}),
        )
        .await;
    assert!(!ok && output.contains("--approval auto-edit"), "{output}");
    assert!(!rig.ws.join("b.txt").exists());
}

#[tokio::test]
async fn auto_edit_writes_without_asking_as_the_former_suggest_did() {
    let rig = Rig::new().await;
    let person = Recorder::new(ApprovalAnswer::Deny);
    for approver in [person.clone() as Arc<dyn Approver>, Arc::new(NoApprover)] {
        let mut engine = rig.engine(ApprovalMode::AutoEdit, approver);
        for (tool, args, path) in writes() {
            let (ok, output, _) = rig.call(&mut engine, tool, args).await;
            assert!(ok, "{tool}: {output}");
            assert!(rig.ws.join(path).exists());
            std::fs::write(rig.ws.join("notes.txt"), "alpha\n").unwrap();
            let _ = std::fs::remove_file(rig.ws.join("patched.txt"));
            let _ = std::fs::remove_file(rig.ws.join("new.txt"));
        }
        // A command the policy does not allow still asks (headless: refused).
        let (ok, output, _) = rig
            .call(
                &mut engine,
                "exec_shell",
                json!({"command": "curl -s https://example.com"}),
            )
            .await;
        assert!(!ok, "{output}");
    }
    assert_eq!(person.count(), 1, "only the command was asked about");
}

/// Says no, with a reason.
struct NoBecause;

#[async_trait]
impl Approver for NoBecause {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Deny
    }

    async fn ask_with_reason(
        &self,
        _request: &ApprovalRequest,
    ) -> (ApprovalAnswer, Option<String>) {
        (
            ApprovalAnswer::Deny,
            Some("use the staging server instead".into()),
        )
    }

    fn interactive(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn a_no_with_a_reason_reaches_the_model() {
    let rig = Rig::new().await;
    let mut engine = rig.engine(ApprovalMode::AutoEdit, Arc::new(NoBecause));
    let (ok, output, _) = rig
        .call(
            &mut engine,
            "exec_shell",
            json!({"command": "curl -s https://prod.example.com/x"}),
        )
        .await;
    assert!(!ok, "{output}");
    assert!(
        output.contains("use the staging server instead"),
        "{output}"
    );
}

#[tokio::test]
async fn a_reused_grant_is_named_once_per_session_and_curl_is_scoped_to_its_host() {
    let rig = Rig::new().await;
    let always = Recorder::new(ApprovalAnswer::Always);
    let mut engine = rig.engine(ApprovalMode::AutoEdit, always.clone());
    let fetch = json!({"command": "curl -s http://127.0.0.1:9/"});
    let _ = rig.call(&mut engine, "exec_shell", fetch.clone()).await;
    assert_eq!(always.count(), 1);

    let no = Recorder::new(ApprovalAnswer::Deny);
    let mut engine = rig.engine(ApprovalMode::AutoEdit, no.clone());
    let (_, _, first) = rig.call(&mut engine, "exec_shell", fetch.clone()).await;
    let (_, _, second) = rig.call(&mut engine, "exec_shell", fetch).await;
    assert_eq!(no.count(), 0, "the grant covers it");
    let named = |notices: &[String]| {
        notices
            .iter()
            .filter(|n| n.contains("allowed by your grant") && n.contains("127.0.0.1"))
            .count()
    };
    assert_eq!(named(&first), 1, "{first:?}");
    assert_eq!(named(&second), 0, "{second:?}");
    // Another host is not covered: the bare program was never granted.
    let _ = rig
        .call(
            &mut engine,
            "exec_shell",
            json!({"command": "curl -s http://localhost:9/"}),
        )
        .await;
    assert_eq!(no.count(), 1);
}

/// Serves `reached` to every HTTP request on 127.0.0.1 for at most 20 s; the port.
fn http_listener() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                    let mut buf = [0u8; 1024];
                    let _ = stream.read(&mut buf);
                    let _ =
                        stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached");
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
    });
    port
}

#[tokio::test]
async fn approving_a_network_command_runs_that_command_with_network_in_the_sandbox() {
    let Ok(backend) = codesmith_tools::sandbox::backend_from_name("bwrap") else {
        codesmith_testkit::missing("BWRAP", "the per-command network test checked nothing");
        return;
    };
    let rig = Rig::new().await;
    let port = http_listener();
    let fetch = json!({"command": format!("curl -s http://127.0.0.1:{port}/")});
    let engine_with = |mode: ApprovalMode, approver: Arc<dyn Approver>| {
        common::engine(
            &rig.server,
            &rig.ws,
            &rig.home,
            common::Setup {
                approval: mode,
                approver,
                sandbox: Some(codesmith_tools::sandbox::Sandbox::new(
                    backend.clone(),
                    false,
                )),
                ..common::Setup::default()
            },
        )
    };
    let yes = Recorder::new(ApprovalAnswer::Once);
    let mut engine = engine_with(ApprovalMode::AutoEdit, yes.clone());
    let (_, output, _) = rig.call(&mut engine, "exec_shell", fetch.clone()).await;
    let asked = yes.asked.lock().unwrap()[0].clone();
    assert!(
        asked.reason.contains("runs with network access"),
        "{}",
        asked.reason
    );
    assert!(output.contains("reached"), "{output}");
    // Nobody approved it (auto): the sandbox keeps the network cut.
    let mut engine = engine_with(ApprovalMode::Auto, Arc::new(NoApprover));
    let (_, output, _) = rig.call(&mut engine, "exec_shell", fetch).await;
    assert!(!output.contains("reached"), "{output}");
}

#[tokio::test]
async fn in_read_only_the_model_is_told_it_plans_with_the_same_bytes_every_task() {
    let rig = Rig::new().await;
    let note = codesmith_engine::approval::PLAN_MODE_NOTE;
    let mut engine = rig.engine(ApprovalMode::ReadOnly, Arc::new(NoApprover));
    for _ in 0..2 {
        rig.server.push(Scripted::text("my plan"));
        engine.run_task("plan it", &mut |_| {}).await.unwrap();
    }
    let bodies = rig.server.request_bodies();
    let second = bodies[1].to_string();
    let quoted = serde_json::to_string(note).unwrap();
    let quoted = &quoted[1..quoted.len() - 1];
    assert_eq!(second.matches(quoted).count(), 2, "{second}");
    let mut engine = rig.engine(ApprovalMode::AutoEdit, Arc::new(NoApprover));
    rig.server.push(Scripted::text("done"));
    engine.run_task("do it", &mut |_| {}).await.unwrap();
    let third = rig.server.request_bodies()[2].to_string();
    assert!(!third.contains("plan_mode"), "{third}");
}

#[tokio::test]
async fn a_headless_refusal_names_what_would_really_let_the_call_run() {
    let rig = Rig::new().await;
    // Under `never`, the mode refused it (not the policy), and the text says which modes
    // allow it.
    let mut engine = rig.engine(ApprovalMode::Never, Arc::new(NoApprover));
    let (_, output, _) = rig
        .call(&mut engine, "exec_shell", json!({"command": "make mark"}))
        .await;
    assert!(output.contains("`never`"), "{output}");
    assert!(output.contains("--approval auto"), "{output}");
    assert!(!output.contains("command policy refused"), "{output}");
    // A refused secret read points at what governs reads, never the exec policy.
    std::fs::write(rig.ws.join(".env"), "TOKEN=x\n").unwrap();
    let mut engine = rig.engine(ApprovalMode::Suggest, Arc::new(NoApprover));
    let (_, output, _) = rig
        .call(&mut engine, "read_file", json!({"path": ".env"}))
        .await;
    assert!(output.contains("DENIED"), "{output}");
    assert!(!output.contains("policy.toml"), "{output}");
    assert!(output.contains("--approval auto"), "{output}");
    // A command that needs the network the sandbox cuts: `auto` would run it without it.
    let Ok(backend) = codesmith_tools::sandbox::backend_from_name("bwrap") else {
        codesmith_testkit::missing("BWRAP", "the network refusal text was not checked");
        return;
    };
    let mut engine = common::engine(
        &rig.server,
        &rig.ws,
        &rig.home,
        common::Setup {
            approval: ApprovalMode::AutoEdit,
            approver: Arc::new(NoApprover),
            sandbox: Some(codesmith_tools::sandbox::Sandbox::new(backend, false)),
            ..common::Setup::default()
        },
    );
    let (_, output, _) = rig
        .call(
            &mut engine,
            "exec_shell",
            json!({"command": "curl -s http://127.0.0.1:9/x"}),
        )
        .await;
    assert!(output.contains("WITHOUT network"), "{output}");
    assert!(output.contains("[sandbox] network"), "{output}");
}
