//! Every approval answer through the engine's own gate, as production uses it: the
//! approver is asked, and what it answered is remembered (or not) exactly as the answer
//! says — once, for the session, always (a grant later sessions find), deny (remembered
//! for the exact call) — and `never` refuses without asking anybody.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codesmith_policy::ApprovalMode;
use codesmith_protocol::ApprovalAnswer;
use codesmith_testkit::{Scripted, ScriptedServer};

/// `make` always asks in `suggest` (its recipes run code); the recipe leaves a marker.
const CALL: &str = r#"{"command": "make mark"}"#;

struct Rig {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
}

impl Rig {
    fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        std::fs::write(ws.join("Makefile"), "mark:\n\techo ran >> marks.txt\n").unwrap();
        let home = dir.path().join("home");
        Rig {
            _dir: dir,
            ws,
            home,
        }
    }

    /// Runs one task in which the model calls `make mark` twice, one call per round,
    /// with `approver` answering; returns how often it was asked.
    async fn task(&self, mode: ApprovalMode, answer: ApprovalAnswer) -> usize {
        let server = ScriptedServer::start().await;
        server
            .push(Scripted::tool_call("c1", "exec_shell", CALL))
            .push(Scripted::tool_call("c2", "exec_shell", CALL))
            .push(Scripted::text("done"));
        let recorder = common::Recorder::new(answer);
        let setup = common::Setup {
            approval: mode,
            approver: recorder.clone() as Arc<dyn codesmith_engine::Approver>,
            ..common::Setup::default()
        };
        let mut engine = common::engine(&server, &self.ws, &self.home, setup);
        engine.run_task("mark twice", &mut |_| {}).await.unwrap();
        recorder.count()
    }

    fn runs(&self) -> usize {
        marks(&self.ws)
    }
}

fn marks(ws: &Path) -> usize {
    std::fs::read_to_string(ws.join("marks.txt"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_runs_the_call_and_asks_again_next_time() {
    let rig = Rig::new();
    let asked = rig.task(ApprovalMode::AutoEdit, ApprovalAnswer::Once).await;
    assert_eq!((asked, rig.runs()), (2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_covers_later_calls_of_the_session_only() {
    let rig = Rig::new();
    let asked = rig
        .task(ApprovalMode::AutoEdit, ApprovalAnswer::Session)
        .await;
    assert_eq!(
        (asked, rig.runs()),
        (1, 2),
        "a session approval asked again"
    );
    // A new session starts without it.
    let asked = rig.task(ApprovalMode::AutoEdit, ApprovalAnswer::Once).await;
    assert_eq!(
        (asked, rig.runs()),
        (2, 4),
        "a session approval outlived its session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_stores_a_grant_that_later_sessions_find() {
    let rig = Rig::new();
    let asked = rig
        .task(ApprovalMode::AutoEdit, ApprovalAnswer::Always)
        .await;
    assert_eq!((asked, rig.runs()), (1, 2));
    // A later session in the same workspace runs it without asking ...
    let asked = rig.task(ApprovalMode::AutoEdit, ApprovalAnswer::Deny).await;
    assert_eq!(
        (asked, rig.runs()),
        (0, 4),
        "the stored grant was not found"
    );
    // ... but `never` overrides grants.
    let asked = rig.task(ApprovalMode::Never, ApprovalAnswer::Once).await;
    assert_eq!((asked, rig.runs()), (0, 4), "a grant overrode never mode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_is_remembered_for_the_exact_call() {
    let rig = Rig::new();
    let asked = rig.task(ApprovalMode::AutoEdit, ApprovalAnswer::Deny).await;
    assert_eq!(
        (asked, rig.runs()),
        (1, 0),
        "a denied call ran or was asked again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_refuses_without_asking_and_auto_runs_without_asking() {
    let rig = Rig::new();
    let asked = rig.task(ApprovalMode::Never, ApprovalAnswer::Once).await;
    assert_eq!((asked, rig.runs()), (0, 0));
    let asked = rig.task(ApprovalMode::Auto, ApprovalAnswer::Deny).await;
    assert_eq!((asked, rig.runs()), (0, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_covers_only_commands_the_key_fully_understands() {
    let rig = Rig::new();
    let asked = rig
        .task(ApprovalMode::AutoEdit, ApprovalAnswer::Always)
        .await;
    assert_eq!(asked, 1);
    // The grant for `make mark` holds; the same program with an environment
    // assignment, an `env` wrapper or an option the key does not understand is not the
    // command the user approved: it asks again.
    for other in [
        r#"{"command": "PATH=./bin:$PATH make mark"}"#,
        r#"{"command": "env MAKEFLAGS=x make mark"}"#,
        r#"{"command": "make -f Makefile mark"}"#,
    ] {
        let server = ScriptedServer::start().await;
        server
            .push(Scripted::tool_call("c1", "exec_shell", other))
            .push(Scripted::text("done"));
        let recorder = common::Recorder::new(ApprovalAnswer::Deny);
        let setup = common::Setup {
            approval: ApprovalMode::AutoEdit,
            approver: recorder.clone() as Arc<dyn codesmith_engine::Approver>,
            ..common::Setup::default()
        };
        let mut engine = common::engine(&server, &rig.ws, &rig.home, setup);
        engine.run_task("mark", &mut |_| {}).await.unwrap();
        assert_eq!(recorder.count(), 1, "the grant covered {other}");
    }
    let eval = codesmith_policy::decide(
        "curl -s http://localhost:18779/x",
        "/ws",
        &codesmith_policy::Rules::new(),
        ApprovalMode::AutoEdit,
    );
    let shell = eval.approval_prefixes();
    let hosts = codesmith_policy::fetch_hosts(&eval.segments[0].argv);
    // A network grant is scoped to the host and the port contacted, never the program.
    assert_eq!(shell, None);
    assert_eq!(hosts, Some(vec!["localhost:18779".to_string()]));
}

#[test]
fn a_revocation_reaches_a_store_already_open_and_a_corrupt_file_honours_nothing() {
    use codesmith_engine::approval::{ApprovalKey, ApprovalStore};
    use codesmith_policy::SafetyLevel;
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let grant = ApprovalKey::Shell {
        prefixes: vec!["make".into()],
    };
    let session = ApprovalStore::open(home.path());
    let cli = ApprovalStore::open(home.path());
    cli.grant(ws.path(), grant.clone(), SafetyLevel::Ask)
        .unwrap();
    assert!(session.allows(ws.path(), Some(&grant), SafetyLevel::Ask));
    // Another process revokes it: the running session no longer honours it.
    cli.revoke(ws.path(), &grant).unwrap();
    assert!(!session.allows(ws.path(), Some(&grant), SafetyLevel::Ask));
    // A corrupt file honours nothing and says so, naming the file.
    cli.grant(ws.path(), grant.clone(), SafetyLevel::Ask)
        .unwrap();
    let path = home.path().join("approvals.toml");
    let good = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{good}\n= = not toml")).unwrap();
    assert!(!session.allows(ws.path(), Some(&grant), SafetyLevel::Ask));
    let warning = session.warning().unwrap();
    assert!(warning.contains(&path.display().to_string()), "{warning}");
    std::fs::write(&path, good).unwrap();
    assert!(session.allows(ws.path(), Some(&grant), SafetyLevel::Ask));
    assert_eq!(session.warning(), None);
}
