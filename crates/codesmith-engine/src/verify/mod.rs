//! The claim verifier: a success claim counts only after a replay confirms it.
//!
//! When a task's final assistant text claims success ("all tests pass",
//! "编译成功", …; see [`claim`]), the most recent verification command the
//! model ran with `exec_shell` in this task (see [`commands`]) decides. When
//! that run exited non-zero, no later run passed, so the claim is
//! `verified_fail` at once, with the failing run as evidence. Otherwise the
//! command is replayed through the session's own gate and tool, with the
//! same command, cwd and timeout and no new permission. The verdict is appended to the tail of the
//! transcript as a runtime event (never inserted earlier, so the prefix cache
//! survives), written to the ledger (see [`ledger`]) and emitted as
//! [`codesmith_protocol::Event::Verdict`].
//!
//! The verifier does not act on its verdict: it rewrites no prompt and
//! touches no approval; reconciling is left to the model's next turn.

pub mod claim;
pub mod commands;
pub mod ledger;
mod observed;
mod replay;
pub mod verdict;

use codesmith_protocol::{Event, EventSink, Message};

pub use claim::{Claim, ClaimKind};
pub use commands::CommandClass;
pub use ledger::{LedgerEntry, VerdictStats};
pub(crate) use observed::Observed;
pub use observed::REPLAYABLE_TOOL;
pub use verdict::{Evidence, Verdict, VerdictKind};

use self::observed::Observation;
use self::replay::{Replay, replay};
use crate::runtime::Runtime;
use crate::session::{Session, SessionError};

/// Checks `final_text` of a completed task and records the verdict: appended
/// to the tail of `session` as a runtime event, written to the ledger under
/// the tool context's home, and sent to `sink`. With `slop`, an `unsubstantiated` or
/// `verified_fail` verdict also files an entry in the project's slop ledger (a notice
/// names it). `None` when the text makes no success claim.
///
/// # Errors
/// The transcript could not be written. (A ledger failure is only a notice.)
pub(crate) async fn conclude(
    rt: &mut Runtime,
    session: &mut Session,
    final_text: &str,
    model: &str,
    slop: bool,
    sink: &mut EventSink<'_>,
) -> Result<Option<Verdict>, SessionError> {
    let Some(verdict) = check(rt, final_text).await else {
        return Ok(None);
    };
    session.push(Message::user_text(verdict.runtime_event_text()))?;
    let problem = ledger::append(
        &rt.ctx.home,
        &LedgerEntry {
            timestamp: ledger::now_rfc3339(),
            verdict: verdict.verdict.as_str().to_string(),
            claim: verdict.claim.clone(),
            command: verdict.evidence.as_ref().map(|e| e.command.clone()),
            exit_code: verdict.evidence.as_ref().and_then(|e| e.exit_code),
            model: model.to_string(),
        },
    );
    if let Some(message) = problem {
        sink(Event::Notice { message });
    }
    if slop && let Some(message) = file_slop(&rt.ctx.workspace, &verdict) {
        sink(Event::Notice { message });
    }
    let event = Event::Verdict(verdict.event());
    if let Some(shown) = crate::replay::shown_note(&event) {
        session.note(crate::session::NoteKind::Shown, shown)?;
    }
    sink(event);
    Ok(Some(verdict))
}

/// Files a doubtful verdict in the project's slop ledger; the notice to show, if any.
fn file_slop(workspace: &std::path::Path, verdict: &Verdict) -> Option<String> {
    use codesmith_tools::slop::{Author, Ledger, verdict_entry};
    let entry = verdict_entry(
        verdict.verdict.as_str(),
        &verdict.claim,
        verdict.evidence.as_ref().map(|e| e.command.as_str()),
        verdict.evidence.as_ref().and_then(|e| e.exit_code),
    )?;
    Some(
        match Ledger::for_workspace(workspace).record(entry, Author::Verifier) {
            Ok(e) => format!("The claim verifier filed {} in the slop ledger.", e.id),
            Err(e) => format!("The claim verifier could not file a slop ledger entry: {e}."),
        },
    )
}

/// The verdict on `final_text`, replaying when there is something to replay.
async fn check(rt: &mut Runtime, final_text: &str) -> Option<Verdict> {
    let claim = claim::detect(final_text)?;
    let Some(obs) = rt.verify.latest_for(claim.kind).cloned() else {
        return Some(unsubstantiated(claim));
    };
    if let Some((code, output)) = obs.failed_with() {
        return Some(contradicted(claim, &obs, code, output));
    }
    let outcome = replay(rt, &obs).await;
    Some(judge(claim, &obs, outcome))
}

fn unsubstantiated(claim: Claim) -> Verdict {
    let note = format!(
        "You claimed success ({:?}) but ran no {} command in this task, so there is no evidence \
         behind the claim. Run the verification command, or say that it was not run.",
        claim.text,
        match claim.kind {
            ClaimKind::Tests => "test",
            ClaimKind::Build => "build or test",
        }
    );
    Verdict {
        verdict: VerdictKind::Unsubstantiated,
        dimension: "result",
        claim_kind: claim.kind,
        claim: claim.text,
        evidence: None,
        failure_type: Some("no-evidence"),
        note,
    }
}

/// The claim after the latest verification run of the task failed: no
/// replay is needed, the failing run is the evidence.
fn contradicted(claim: Claim, obs: &Observation, code: i32, output: &str) -> Verdict {
    Verdict {
        verdict: VerdictKind::VerifiedFail,
        dimension: "result",
        claim_kind: claim.kind,
        claim: claim.text,
        evidence: Some(evidence(obs, Some(code), output)),
        failure_type: Some(failure_type(obs.class)),
        note: format!(
            "Your last run of `{}` (call {}) exited {code} and no later run passed, so the claim \
             does not hold. Fix the failure and run it again before reporting success.",
            obs.command, obs.call_id
        ),
    }
}

/// The evidence of a run of `obs`'s command.
fn evidence(obs: &Observation, exit_code: Option<i32>, output: &str) -> Evidence {
    Evidence {
        command: obs.command.clone(),
        call_id: obs.call_id.clone(),
        exit_code,
        output_head: verdict::output_head(output),
    }
}

fn failure_type(class: CommandClass) -> &'static str {
    match class {
        CommandClass::Test => "test-failure",
        CommandClass::Build => "build-failure",
    }
}

fn judge(claim: Claim, obs: &Observation, outcome: Replay) -> Verdict {
    let (verdict, exit_code, output, failure_type, note) = match outcome {
        Replay::Exited { code: 0, output } => (
            VerdictKind::VerifiedPass,
            Some(0),
            output,
            None,
            format!(
                "The engine replayed `{}`; it exited 0. The claim stands.",
                obs.command
            ),
        ),
        Replay::Exited { code, output } => (
            VerdictKind::VerifiedFail,
            Some(code),
            output,
            Some(failure_type(obs.class)),
            format!(
                "The engine replayed `{}` after your claim; it exited {code}, so the claim does not \
                 hold. Look at the output and reconcile before reporting success again.",
                obs.command
            ),
        ),
        Replay::Failed {
            failure_type,
            why,
            output,
        } => (
            VerdictKind::VerifyError,
            None,
            output,
            Some(failure_type),
            format!(
                "The engine could not replay `{}` to check the claim: {why}. The claim is neither \
                 confirmed nor refuted.",
                obs.command
            ),
        ),
    };
    Verdict {
        verdict,
        dimension: "result",
        claim_kind: claim.kind,
        claim: claim.text,
        evidence: Some(evidence(obs, exit_code, &output)),
        failure_type,
        note,
    }
}
