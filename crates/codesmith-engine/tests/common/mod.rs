//! The engine every integration test builds: the OpenAI client against the
//! scripted model server, the built-in tools on a temporary workspace, and
//! millisecond-scale retry delays.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use codesmith_engine::{Approver, Engine, EngineConfig, NoApprover, Session};
use codesmith_policy::{ApprovalMode, NetworkPolicy, Rules};
use codesmith_providers::{CompleteOptions, OpenAiConfig, OpenAiProvider};
use codesmith_testkit::ScriptedServer;
use codesmith_tools::ToolContext;
use codesmith_tools::fetch::FetchConfig;

/// What varies between the tests' engines.
pub(crate) struct Setup {
    pub approval: ApprovalMode,
    pub approver: Arc<dyn Approver>,
    pub rules: Rules,
    pub verify_claims: bool,
    pub idle_timeout: Duration,
    /// Tools registered next to the built-in ones.
    pub extra_tools: Vec<Arc<dyn codesmith_tools::Tool>>,
    pub max_turns: u32,
    pub system_prompt: String,
    /// `[agents]` of the engine.
    pub agents: codesmith_engine::AgentSettings,
    /// Task-snapshot settings.
    pub snapshots: codesmith_engine::snapshot::SnapshotSettings,
    /// The context window and compaction threshold.
    pub context: codesmith_engine::ContextBudget,
    /// The user's hooks.
    pub hooks: codesmith_tools::hooks::Hooks,
    /// The sandbox shell commands run under (default: none).
    pub sandbox: Option<codesmith_tools::sandbox::Sandbox>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            approval: ApprovalMode::Auto,
            approver: Arc::new(NoApprover),
            rules: Rules::new(),
            verify_claims: false,
            idle_timeout: Duration::from_secs(2),
            extra_tools: Vec::new(),
            max_turns: 10,
            system_prompt: "test".into(),
            agents: codesmith_engine::AgentSettings::default(),
            snapshots: codesmith_engine::snapshot::SnapshotSettings::default(),
            context: codesmith_engine::ContextBudget::default(),
            hooks: Default::default(),
            sandbox: None,
        }
    }
}

/// A fresh session on `ws` (state under `home`) talking to `server`.
pub(crate) fn engine(server: &ScriptedServer, ws: &Path, home: &Path, setup: Setup) -> Engine {
    let provider =
        OpenAiProvider::new(OpenAiConfig::new(server.base_url(), Some("sk-test".into()))).unwrap();
    engine_with(Arc::new(provider), "scripted", ws, home, setup)
}

/// [`engine`] with another provider and model name.
pub(crate) fn engine_with(
    provider: Arc<dyn codesmith_providers::Provider>,
    model: &str,
    ws: &Path,
    home: &Path,
    setup: Setup,
) -> Engine {
    let session = Session::create(home, ws, provider.name(), model).unwrap();
    build(provider, model, ws, home, session, setup)
}

/// [`engine`] over an existing (reopened) `session`.
pub(crate) fn engine_on(
    server: &ScriptedServer,
    ws: &Path,
    home: &Path,
    session: Session,
    setup: Setup,
) -> Engine {
    let provider =
        OpenAiProvider::new(OpenAiConfig::new(server.base_url(), Some("sk-test".into()))).unwrap();
    build(Arc::new(provider), "scripted", ws, home, session, setup)
}

fn build(
    provider: Arc<dyn codesmith_providers::Provider>,
    model: &str,
    ws: &Path,
    home: &Path,
    session: Session,
    setup: Setup,
) -> Engine {
    let complete = CompleteOptions {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_millis(50),
        idle_timeout: setup.idle_timeout,
        ..CompleteOptions::default()
    };
    let config = EngineConfig {
        model: model.into(),
        system_prompt: setup.system_prompt,
        max_turns: setup.max_turns,
        max_tokens: None,
        approval: setup.approval,
        complete,
        rules: setup.rules,
        network: NetworkPolicy::default(),
        agents: setup.agents,
        verify_claims: setup.verify_claims,
        slop_from_verdicts: false,
        early_start: true,
        snapshots: setup.snapshots,
        context: setup.context,
        hooks: Arc::new(setup.hooks),
    };
    let mut ctx = ToolContext::new(ws.to_path_buf(), home.to_path_buf());
    if let Some(sandbox) = setup.sandbox {
        ctx = ctx.with_sandbox(sandbox);
    }
    let mut tools = codesmith_tools::builtin_registry(FetchConfig::default());
    for tool in setup.extra_tools {
        tools.register(tool);
    }
    Engine::new(
        provider,
        tools,
        Arc::new(ctx),
        setup.approver,
        session,
        config,
    )
}

/// Answers every approval request with a fixed answer and records what it was asked.
pub(crate) struct Recorder {
    pub answer: codesmith_protocol::ApprovalAnswer,
    pub asked: std::sync::Mutex<Vec<codesmith_protocol::ApprovalRequest>>,
    pub count: std::sync::atomic::AtomicUsize,
}

impl Recorder {
    pub(crate) fn new(answer: codesmith_protocol::ApprovalAnswer) -> Arc<Recorder> {
        Arc::new(Recorder {
            answer,
            asked: std::sync::Mutex::new(Vec::new()),
            count: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// How many requests it answered.
    pub(crate) fn count(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Approver for Recorder {
    async fn ask(
        &self,
        request: &codesmith_protocol::ApprovalRequest,
    ) -> codesmith_protocol::ApprovalAnswer {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.asked.lock().unwrap().push(request.clone());
        self.answer
    }

    fn interactive(&self) -> bool {
        true
    }
}

/// A scripted model server and a temporary workspace holding `notes.txt`
/// (`alpha\nbeta\n`): the rig of the tests that script a model's mistakes.
pub(crate) struct Rig {
    _dir: tempfile::TempDir,
    pub ws: std::path::PathBuf,
    pub server: ScriptedServer,
}

impl Rig {
    pub(crate) async fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let ws = dir.path().join("ws").canonicalize().unwrap();
        std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
        Rig {
            _dir: dir,
            ws,
            server: ScriptedServer::start().await,
        }
    }

    /// An engine on the rig (claims verified, the default turn limit).
    pub(crate) fn engine(&self) -> Engine {
        self.engine_with_turns(Setup::default().max_turns)
    }

    /// [`Rig::engine`] with a turn limit of `max_turns`.
    pub(crate) fn engine_with_turns(&self, max_turns: u32) -> Engine {
        let home = self.ws.parent().unwrap().join("home");
        let setup = Setup {
            verify_claims: true,
            max_turns,
            ..Setup::default()
        };
        engine(&self.server, &self.ws, &home, setup)
    }

    /// Runs `task` on a new engine; its outcome and every event.
    pub(crate) async fn run(
        &self,
        task: &str,
    ) -> (
        codesmith_engine::TaskOutcome,
        Vec<codesmith_protocol::Event>,
    ) {
        let mut engine = self.engine();
        let mut events = Vec::new();
        let outcome = tokio::time::timeout(
            Duration::from_secs(30),
            engine.run_task(task, &mut |e| events.push(e)),
        )
        .await
        .unwrap()
        .unwrap();
        (outcome, events)
    }

    /// The tool-result texts of request `n`.
    pub(crate) fn results(&self, n: usize) -> Vec<String> {
        let body = &self.server.request_bodies()[n];
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    }
}
