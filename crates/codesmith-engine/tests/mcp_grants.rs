//! "Always" for an MCP tool is a persistent grant for that one tool of that one server:
//! a later session in the workspace runs it without asking, its neighbours still ask, and
//! a revoked grant asks again.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use codesmith_engine::approval::{ApprovalKey, ApprovalStore};
use codesmith_engine::{Approver, Engine};
use codesmith_policy::ApprovalMode;
use codesmith_protocol::ApprovalAnswer;
use codesmith_protocol::Event;
use codesmith_testkit::{Scripted, ScriptedServer};
use codesmith_tools::{Capability, Tool, ToolContext, ToolOrigin, ToolOutcome, ToolOutput};
use serde_json::{Value, json};

use common::Recorder;

/// Stands in for an MCP tool as the registry sees one: named `mcp__SERVER__TOOL`,
/// network-capable (an untrusted server), counting its runs.
struct FakeMcpTool {
    name: &'static str,
    runs: AtomicUsize,
}

#[async_trait]
impl Tool for FakeMcpTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        "A tool of an MCP server."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"q": {"type": "string"}}})
    }

    fn capability(&self) -> Capability {
        Capability::Network
    }

    fn origin(&self) -> ToolOrigin {
        let rest = self.name.trim_start_matches("mcp__");
        let (server, tool) = rest.split_once("__").unwrap();
        ToolOrigin::Mcp {
            server: server.into(),
            tool: tool.into(),
        }
    }

    async fn call(&self, _ctx: &ToolContext, _args: Value) -> ToolOutcome {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::new("ran"))
    }
}

struct Rig {
    _tmp: tempfile::TempDir,
    ws: std::path::PathBuf,
    home: std::path::PathBuf,
    server: ScriptedServer,
    lookup: Arc<FakeMcpTool>,
    delete: Arc<FakeMcpTool>,
    other_server: Arc<FakeMcpTool>,
}

impl Rig {
    async fn new() -> Rig {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        let home = tmp.path().join("home");
        let tool = |name| {
            Arc::new(FakeMcpTool {
                name,
                runs: AtomicUsize::new(0),
            })
        };
        Rig {
            _tmp: tmp,
            ws,
            home,
            server: ScriptedServer::start().await,
            lookup: tool("mcp__tracker__lookup"),
            delete: tool("mcp__tracker__delete"),
            other_server: tool("mcp__mirror__lookup"),
        }
    }

    /// A new session (a new engine, the store read afresh from the home).
    fn session(&self, approver: Arc<dyn Approver>) -> Engine {
        common::engine(
            &self.server,
            &self.ws,
            &self.home,
            common::Setup {
                approval: ApprovalMode::AutoEdit,
                approver,
                extra_tools: vec![
                    self.lookup.clone(),
                    self.delete.clone(),
                    self.other_server.clone(),
                ],
                ..common::Setup::default()
            },
        )
    }

    /// Runs one task that calls `tool` once; returns whether the call succeeded.
    async fn call(&self, engine: &mut Engine, tool: &str) -> bool {
        self.server
            .push(Scripted::tool_call("c1", tool, r#"{"q": "x"}"#))
            .push(Scripted::text("done"));
        let mut ok = None;
        engine
            .run_task("go", &mut |e| {
                if let Event::ToolResult { ok: o, .. } = e {
                    ok = Some(o);
                }
            })
            .await
            .unwrap();
        ok.unwrap()
    }
}

#[tokio::test]
async fn always_persists_one_mcp_tool_and_revoking_asks_again() {
    let rig = Rig::new().await;

    // Session 1: asked once, answered "always"; the request offered it.
    let first = Recorder::new(ApprovalAnswer::Always);
    let mut engine = rig.session(first.clone());
    assert!(rig.call(&mut engine, "mcp__tracker__lookup").await);
    assert_eq!(first.count(), 1);
    assert!(first.asked.lock().unwrap()[0].can_persist);
    drop(engine);
    let stored = ApprovalStore::open(&rig.home).grants(&rig.ws);
    assert_eq!(
        stored,
        vec![ApprovalKey::Mcp {
            server: "tracker".into(),
            tool: "lookup".into()
        }]
    );

    // Session 2: the grant runs the tool without asking; it covers nothing else.
    let second = Recorder::new(ApprovalAnswer::Deny);
    let mut engine = rig.session(second.clone());
    assert!(rig.call(&mut engine, "mcp__tracker__lookup").await);
    assert_eq!(second.count(), 0, "a granted tool does not ask");
    assert!(!rig.call(&mut engine, "mcp__tracker__delete").await);
    assert!(!rig.call(&mut engine, "mcp__mirror__lookup").await);
    assert_eq!(
        second.count(),
        2,
        "another tool, or the same tool of another server, still asks"
    );
    assert_eq!(rig.lookup.runs.load(Ordering::SeqCst), 2);
    assert_eq!(rig.delete.runs.load(Ordering::SeqCst), 0);
    assert_eq!(rig.other_server.runs.load(Ordering::SeqCst), 0);
    drop(engine);

    // Revoked (a tombstone): session 3 asks again.
    ApprovalStore::open(&rig.home)
        .revoke(
            &rig.ws,
            &ApprovalKey::Mcp {
                server: "tracker".into(),
                tool: "lookup".into(),
            },
        )
        .unwrap();
    let third = Recorder::new(ApprovalAnswer::Deny);
    let mut engine = rig.session(third.clone());
    assert!(!rig.call(&mut engine, "mcp__tracker__lookup").await);
    assert_eq!(third.count(), 1);
    assert_eq!(rig.lookup.runs.load(Ordering::SeqCst), 2);
}
