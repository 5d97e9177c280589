//! The claim verifier driven through full turns against the scripted model
//! server: a claim checked by a passing replay, one the replay contradicts,
//! an unsubstantiated claim, a negated phrase, a timed-out replay, the
//! runtime event at the tail of the next request, the ledger's counts, and
//! ad-hoc test entry points (`python3 test_calc.py`, `./run_tests.sh`).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use codesmith_engine::verify::ledger::{ledger_path, read_entries, read_stats};
use codesmith_engine::verify::{VerdictKind, verdict::RUNTIME_EVENT_OPEN};
use codesmith_engine::{Approver, Engine, NoApprover, TaskOutcome};
use codesmith_policy::{ApprovalMode, Rules};
use codesmith_protocol::{ApprovalAnswer, ApprovalRequest, Event};
use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::{Value, json};

/// A unittest module that passes while `flag.txt` says `ok`, and sleeps
/// 2 s first when a file named `slow` exists.
const TEST_MODULE: &str = r#"import os, time, unittest


class Flag(unittest.TestCase):
    def test_flag(self):
        if os.path.exists('slow'):
            time.sleep(2)
        with open('flag.txt') as f:
            self.assertEqual(f.read().strip(), 'ok')
"#;

const TEST_COMMAND: &str = "python3 -m unittest test_flag";

struct Rig {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
    server: ScriptedServer,
}

impl Rig {
    async fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let ws = dir.path().join("ws").canonicalize().unwrap();
        std::fs::write(ws.join("test_flag.py"), TEST_MODULE).unwrap();
        std::fs::write(ws.join("flag.txt"), "ok\n").unwrap();
        let home = dir.path().join("home");
        Rig {
            _dir: dir,
            ws,
            home,
            server: ScriptedServer::start().await,
        }
    }

    fn engine(&self, verify_claims: bool) -> Engine {
        self.engine_with(verify_claims, ApprovalMode::Auto, Arc::new(NoApprover))
    }

    fn engine_with(
        &self,
        verify_claims: bool,
        approval: ApprovalMode,
        approver: Arc<dyn Approver>,
    ) -> Engine {
        self.engine_full(verify_claims, approval, approver, Rules::new())
    }

    fn engine_full(
        &self,
        verify_claims: bool,
        approval: ApprovalMode,
        approver: Arc<dyn Approver>,
        rules: Rules,
    ) -> Engine {
        let setup = common::Setup {
            approval,
            approver,
            rules,
            verify_claims,
            idle_timeout: Duration::from_secs(5),
            ..common::Setup::default()
        };
        common::engine(&self.server, &self.ws, &self.home, setup)
    }

    fn shell(&self, id: &str, args: Value) -> &Self {
        self.server
            .push(Scripted::tool_call(id, "exec_shell", args.to_string()));
        self
    }

    fn say(&self, text: &str) -> &Self {
        self.server.push(Scripted::text(text));
        self
    }

    /// The messages of the last request the server received.
    fn last_request_messages(&self) -> Vec<Value> {
        let bodies = self.server.request_bodies();
        bodies.last().unwrap()["messages"]
            .as_array()
            .unwrap()
            .clone()
    }
}

async fn run(engine: &mut Engine, task: &str) -> (TaskOutcome, Vec<Event>) {
    let mut events = Vec::new();
    let outcome = engine
        .run_task(task, &mut |e| events.push(e))
        .await
        .unwrap();
    (outcome, events)
}

fn verdict_events(events: &[Event]) -> Vec<codesmith_protocol::VerdictEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Verdict(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
}

fn last_message_text(engine: &Engine) -> String {
    let last = engine.session().messages().last().unwrap();
    serde_json::to_value(last).unwrap().to_string()
}

fn ledger_lines(home: &Path) -> usize {
    read_entries(home).unwrap().0.len()
}

#[tokio::test]
async fn a_claim_backed_by_a_passing_replay_is_verified() {
    let rig = Rig::new().await;
    rig.shell("c1", json!({"command": TEST_COMMAND}))
        .say("I checked the flag. All tests pass.");
    let mut engine = rig.engine(true);
    let (outcome, events) = run(&mut engine, "make the tests pass").await;
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifiedPass);
    let evidence = verdict.evidence.unwrap();
    assert_eq!(evidence.command, TEST_COMMAND);
    assert_eq!(evidence.call_id, "c1");
    assert_eq!(evidence.exit_code, Some(0));
    assert_eq!(verdict.failure_type, None);
    let emitted = verdict_events(&events);
    assert_eq!(emitted.len(), 1);
    assert_eq!(emitted[0].verdict, "verified_pass");
    assert_eq!(emitted[0].exit_code, Some(0));
    let tail = last_message_text(&engine);
    assert!(
        tail.contains("runtime_event") && tail.contains("verified_pass"),
        "{tail}"
    );
    let (entries, _) = read_entries(&rig.home).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].verdict, "verified_pass");
    assert_eq!(entries[0].claim, "All tests pass");
    assert_eq!(entries[0].command.as_deref(), Some(TEST_COMMAND));
    assert_eq!(entries[0].exit_code, Some(0));
    assert_eq!(entries[0].model, "scripted");
}

#[tokio::test]
async fn a_claim_the_replay_contradicts_is_a_verified_fail() {
    let rig = Rig::new().await;
    // The tests pass when the model runs them, then it breaks the flag and
    // still reports success: the replay sees the world as it is now.
    rig.shell("c1", json!({"command": TEST_COMMAND}))
        .shell("c2", json!({"command": "echo broken > flag.txt"}))
        .say("Finished the cleanup; all tests passed.");
    let mut engine = rig.engine(true);
    let (outcome, events) = run(&mut engine, "clean up").await;
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifiedFail);
    assert_eq!(verdict.failure_type, Some("test-failure"));
    let evidence = verdict.evidence.unwrap();
    assert_eq!(evidence.call_id, "c1");
    assert_ne!(evidence.exit_code, Some(0));
    assert!(
        evidence.output_head.contains("FAIL"),
        "{}",
        evidence.output_head
    );
    assert_eq!(verdict_events(&events)[0].verdict, "verified_fail");
    assert_eq!(read_stats(&rig.home).unwrap().verified_fail, 1);
}

#[tokio::test]
async fn a_claim_without_a_verification_command_is_unsubstantiated() {
    let rig = Rig::new().await;
    rig.shell("c1", json!({"command": "echo hello"}))
        .say("Done. The tests pass.");
    let mut engine = rig.engine(true);
    let (outcome, events) = run(&mut engine, "say hello").await;
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::Unsubstantiated);
    assert_eq!(verdict.evidence, None);
    assert_eq!(verdict.failure_type, Some("no-evidence"));
    let emitted = verdict_events(&events);
    assert_eq!(emitted[0].verdict, "unsubstantiated");
    assert_eq!(emitted[0].command, None);
    assert_eq!(read_stats(&rig.home).unwrap().unsubstantiated, 1);
}

#[tokio::test]
async fn a_negated_phrase_is_not_a_claim() {
    let rig = Rig::new().await;
    rig.shell("c1", json!({"command": TEST_COMMAND}))
        .say("Not all tests pass yet; the parser test failed. 测试未通过。");
    let mut engine = rig.engine(true);
    let (outcome, events) = run(&mut engine, "fix it").await;
    assert_eq!(outcome.verdict, None);
    assert!(verdict_events(&events).is_empty());
    assert!(!last_message_text(&engine).contains("runtime_event"));
    assert!(!ledger_path(&rig.home).exists());
}

#[tokio::test]
async fn a_timed_out_replay_is_a_verify_error() {
    let rig = Rig::new().await;
    // Fast when the model runs it; after `touch slow` the replay sleeps 2 s
    // against the same 1 s timeout.
    rig.shell("c1", json!({"command": TEST_COMMAND, "timeout_secs": 1}))
        .shell("c2", json!({"command": "touch slow"}))
        .say("All tests passed.");
    let mut engine = rig.engine(true);
    let (outcome, events) = run(&mut engine, "check").await;
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifyError);
    assert_eq!(verdict.failure_type, Some("timeout"));
    assert_eq!(verdict.evidence.unwrap().exit_code, None);
    assert_eq!(verdict_events(&events)[0].verdict, "verify_error");
    let stats = read_stats(&rig.home).unwrap();
    assert_eq!(stats.verify_error, 1);
    assert_eq!(stats.claim_match_rate(), None);
}

#[tokio::test]
async fn the_replay_uses_the_original_directory_and_keeps_the_session_directory() {
    let rig = Rig::new().await;
    std::fs::create_dir(rig.ws.join("sub")).unwrap();
    std::fs::copy(rig.ws.join("test_flag.py"), rig.ws.join("sub/test_flag.py")).unwrap();
    std::fs::write(rig.ws.join("sub/flag.txt"), "ok").unwrap();
    // After `cd sub && …` the session directory is `sub`; the replay must
    // start where the original started (the root) for `cd sub` to work.
    rig.shell(
        "c1",
        json!({"command": format!("cd sub && {TEST_COMMAND}")}),
    )
    .say("The build is green and all tests pass.");
    let mut engine = rig.engine(true);
    let (outcome, _) = run(&mut engine, "test sub").await;
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifiedPass, "{verdict:?}");
    // The next command still starts in `sub`, as the original left it.
    rig.shell("c2", json!({"command": "pwd"})).say("ok");
    run(&mut engine, "where am I").await;
    let messages = rig.last_request_messages();
    let pwd = messages.iter().rfind(|m| m["role"] == "tool").unwrap()["content"].to_string();
    assert!(pwd.contains("/sub"), "{pwd}");
}

#[tokio::test]
async fn the_verdict_is_at_the_tail_of_the_next_request() {
    let rig = Rig::new().await;
    rig.shell("c1", json!({"command": TEST_COMMAND}))
        .shell("c2", json!({"command": "echo broken > flag.txt"}))
        .say("所有测试通过。")
        .say("You are right, the flag is broken.");
    let mut engine = rig.engine(true);
    let (first, _) = run(&mut engine, "first task").await;
    assert_eq!(first.verdict.unwrap().verdict, VerdictKind::VerifiedFail);
    let before = engine.session().messages().len();
    run(&mut engine, "second task").await;
    let messages = rig.last_request_messages();
    let n = messages.len();
    // ... assistant claim, runtime event, new task.
    assert_eq!(messages[n - 1]["role"], "user");
    assert!(messages[n - 1].to_string().contains("second task"));
    let event = messages[n - 2].to_string();
    assert_eq!(messages[n - 2]["role"], "user");
    assert!(
        event.contains(RUNTIME_EVENT_OPEN.split('=').next().unwrap()),
        "{event}"
    );
    assert!(
        event.contains("verified_fail") && event.contains("c1"),
        "{event}"
    );
    assert!(messages[n - 3].to_string().contains("所有测试通过"));
    // The event was appended, not inserted: exactly one, right after the claim.
    let events = messages
        .iter()
        .filter(|m| m.to_string().contains("runtime_event"))
        .count();
    assert_eq!(events, 1);
    assert!(before >= 3);
    // The second task made no claim and added no event.
    assert!(!last_message_text(&engine).contains("runtime_event"));
}

#[tokio::test]
async fn stats_count_each_verdict() {
    let rig = Rig::new().await;
    let mut engine = rig.engine(true);
    rig.say("All tests pass.");
    run(&mut engine, "one").await;
    rig.shell("c1", json!({"command": TEST_COMMAND}))
        .say("All tests pass.");
    run(&mut engine, "two").await;
    rig.shell("c2", json!({"command": TEST_COMMAND}))
        .say("Tests pass.");
    run(&mut engine, "three").await;
    rig.shell("c3", json!({"command": "echo broken > flag.txt"}))
        .say("The build succeeded.");
    // A build claim may rest on the latest test command of the task; this
    // task ran none, so it is unsubstantiated.
    run(&mut engine, "four").await;
    // Different arguments: the loop guard blocks a third identical call.
    rig.shell("c4", json!({"command": TEST_COMMAND, "timeout_secs": 60}))
        .say("测试通过");
    run(&mut engine, "five").await;
    let stats = read_stats(&rig.home).unwrap();
    assert_eq!(
        (
            stats.verified_pass,
            stats.verified_fail,
            stats.verify_error,
            stats.unsubstantiated
        ),
        (2, 1, 0, 2)
    );
    let rate = stats.claim_match_rate().unwrap();
    assert!((rate - 2.0 / 3.0).abs() < 1e-9, "{rate}");
    assert_eq!(ledger_lines(&rig.home), 5);
}

#[tokio::test]
async fn the_verifier_can_be_turned_off() {
    let rig = Rig::new().await;
    rig.say("All tests pass.");
    let mut engine = rig.engine(false);
    let (outcome, events) = run(&mut engine, "x").await;
    assert_eq!(outcome.verdict, None);
    assert!(verdict_events(&events).is_empty());
    assert!(!ledger_path(&rig.home).exists());
}

/// Says "yes, this once" to every request and counts them.
#[derive(Default)]
struct OnceApprover {
    asked: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl Approver for OnceApprover {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ApprovalAnswer::Once
    }

    fn interactive(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn a_replay_never_asks_for_a_new_approval() {
    let rig = Rig::new().await;
    rig.shell("c1", json!({"command": TEST_COMMAND}))
        .say("All tests pass.");
    let approver = Arc::new(OnceApprover::default());
    // A user rule makes the test command ask first.
    let mut rules = Rules::new();
    rules
        .add_toml(
            "[[rule]]\npattern = \"python3 -m unittest\"\ndecision = \"ask\"\n",
            codesmith_policy::RuleSource::User,
        )
        .unwrap();
    let mut engine = rig.engine_full(true, ApprovalMode::AutoEdit, approver.clone(), rules);
    let (outcome, _) = run(&mut engine, "test").await;
    // The original was approved once; the replay would need a new yes.
    assert_eq!(approver.asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifyError, "{verdict:?}");
    assert_eq!(verdict.failure_type, Some("denied"));
    assert_eq!(verdict.evidence.unwrap().exit_code, None);
}

#[tokio::test]
async fn a_background_command_is_never_replayed() {
    let rig = Rig::new().await;
    rig.shell(
        "c1",
        json!({"command": format!("nohup {TEST_COMMAND} > test.log 2>&1")}),
    )
    .say("All tests pass.");
    let mut engine = rig.engine(true);
    let (outcome, _) = run(&mut engine, "test in the background").await;
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::Unsubstantiated);
    assert_eq!(verdict.evidence, None);
}

/// An ad-hoc test script (no runner): exits 1 on a failed assertion while
/// `calc.py` is wrong.
const TEST_CALC: &str = r#"from calc import add

assert add(2, 2) == 4, "add(2, 2) should be 4"
print("ok")
"#;

fn write_calc(ws: &Path, body: &str) {
    std::fs::write(ws.join("calc.py"), body).unwrap();
    std::fs::write(ws.join("test_calc.py"), TEST_CALC).unwrap();
}

const CALC_BROKEN: &str = "def add(a, b):\n    return a - b\n";
const CALC_FIXED: &str = "def add(a, b):\n    return a + b\n";

#[tokio::test]
async fn a_claim_after_a_failing_ad_hoc_test_run_is_a_verified_fail_without_a_replay() {
    let rig = Rig::new().await;
    write_calc(&rig.ws, CALC_BROKEN);
    rig.shell("c1", json!({"command": "python3 test_calc.py"}))
        .say("All tests pass now.");
    let mut engine = rig.engine(true);
    // Fix the code behind the model's back: a replay would now pass, so a
    // verified_fail proves the failing run itself was the evidence.
    let (outcome, events) = {
        let ws = rig.ws.clone();
        let mut events = Vec::new();
        let outcome = engine
            .run_task("fix calc", &mut |e| {
                if matches!(e, Event::ToolResult { .. }) {
                    write_calc(&ws, CALC_FIXED);
                }
                events.push(e);
            })
            .await
            .unwrap();
        (outcome, events)
    };
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifiedFail, "{verdict:?}");
    assert_eq!(verdict.failure_type, Some("test-failure"));
    let evidence = verdict.evidence.unwrap();
    assert_eq!(evidence.command, "python3 test_calc.py");
    assert_eq!(evidence.call_id, "c1");
    assert_eq!(evidence.exit_code, Some(1));
    assert!(
        evidence.output_head.contains("AssertionError"),
        "{}",
        evidence.output_head
    );
    assert!(
        verdict.note.contains("no later run passed"),
        "{}",
        verdict.note
    );
    assert_eq!(verdict_events(&events)[0].verdict, "verified_fail");
}

#[tokio::test]
async fn a_failing_run_tests_script_makes_the_claim_a_verified_fail() {
    let rig = Rig::new().await;
    write_calc(&rig.ws, CALC_BROKEN);
    let script = rig.ws.join("run_tests.sh");
    std::fs::write(&script, "#!/bin/sh\nexec python3 test_calc.py\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    rig.shell("c1", json!({"command": "./run_tests.sh"}))
        .say("Fixed it; all tests pass.");
    let mut engine = rig.engine(true);
    let (outcome, _) = run(&mut engine, "fix calc").await;
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifiedFail, "{verdict:?}");
    let evidence = verdict.evidence.unwrap();
    assert_eq!(evidence.command, "./run_tests.sh");
    assert_eq!(evidence.exit_code, Some(1));
}

#[tokio::test]
async fn a_later_passing_run_lets_the_claim_be_replayed() {
    let rig = Rig::new().await;
    write_calc(&rig.ws, CALC_BROKEN);
    // `-B`: no bytecode cache. The fixed file can have the broken one's size and the same
    // modification second, and Python would then run the cached broken bytecode.
    rig.shell("c1", json!({"command": "python3 -B test_calc.py"}))
        .shell(
            "c2",
            json!({"command": format!("printf '{CALC_FIXED}' > calc.py")}),
        )
        .shell("c3", json!({"command": "python3 -B test_calc.py -v"}))
        .say("All tests pass now.");
    let mut engine = rig.engine(true);
    let (outcome, _) = run(&mut engine, "fix calc").await;
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifiedPass, "{verdict:?}");
    let evidence = verdict.evidence.unwrap();
    assert_eq!(evidence.call_id, "c3");
    assert_eq!(evidence.exit_code, Some(0));
    assert!(
        evidence.output_head.contains("ok"),
        "{}",
        evidence.output_head
    );
}

#[tokio::test]
async fn a_passing_ad_hoc_run_is_replayed_and_the_replay_decides() {
    let rig = Rig::new().await;
    write_calc(&rig.ws, CALC_FIXED);
    rig.shell("c1", json!({"command": "python3 test_calc.py"}))
        .shell(
            "c2",
            json!({"command": "echo 'def add(a, b): return 0' > calc.py"}),
        )
        .say("All tests pass now.");
    let mut engine = rig.engine(true);
    let (outcome, _) = run(&mut engine, "touch calc").await;
    // The run passed, so the claim is replayed; the replay sees the break.
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifiedFail, "{verdict:?}");
    assert!(verdict.note.contains("replayed"), "{}", verdict.note);

    let rig = Rig::new().await;
    write_calc(&rig.ws, CALC_FIXED);
    rig.shell("c1", json!({"command": "python3 test_calc.py"}))
        .say("All tests pass now.");
    let mut engine = rig.engine(true);
    let (outcome, _) = run(&mut engine, "check calc").await;
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.verdict, VerdictKind::VerifiedPass, "{verdict:?}");
    assert!(verdict.note.contains("replayed"), "{}", verdict.note);
}
