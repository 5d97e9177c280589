//! Replaying a verification command through the session's own gate and tool,
//! with no new permission.

use codesmith_tools::{ErrorCode, ToolOutcome};
use serde_json::Value;

use super::observed::{Observation, REPLAYABLE_TOOL};
use crate::approval::Requirement;
use crate::runtime::Runtime;

/// What a replay produced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Replay {
    /// The command ran to completion.
    Exited {
        /// Its exit code.
        code: i32,
        /// Its output as the model would read it.
        output: String,
    },
    /// The command could not be run or did not finish.
    Failed {
        /// `timeout`, `denied` or `could-not-run`.
        failure_type: &'static str,
        /// Why, in one sentence.
        why: String,
        /// Output so far, if any.
        output: String,
    },
}

/// Runs `obs` again: same arguments, same session directory. The gate is
/// consulted without asking anybody: a command that would need a fresh
/// approval (one approved "once" included), or that policy refuses, is not
/// run; session approvals and stored grants that cover it still apply. The session directory is
/// restored afterwards, so a `cd` in the replay does not leak.
pub(crate) async fn replay(rt: &mut Runtime, obs: &Observation) -> Replay {
    let Some(tool) = rt.tools.get(REPLAYABLE_TOOL) else {
        return failed(
            "could-not-run",
            format!("the {REPLAYABLE_TOOL} tool is not available"),
        );
    };
    if let Some(why) = refused_without_asking(rt, tool.as_ref(), &obs.args) {
        return failed("denied", why);
    }
    let ctx = rt.ctx.clone();
    let before = ctx.shell.cwd(&ctx.workspace);
    ctx.shell.set_cwd(obs.session_dir.clone());
    let outcome = codesmith_tools::call_tool(tool.as_ref(), &ctx, obs.args.clone()).await;
    ctx.shell.set_cwd(before);
    from_outcome(&outcome)
}

/// `Some(reason)` when the gate would not let the call run on its own.
fn refused_without_asking(
    rt: &Runtime,
    tool: &dyn codesmith_tools::Tool,
    args: &Value,
) -> Option<String> {
    match rt.requirement(tool, args) {
        Requirement::Auto { .. } => None,
        Requirement::Deny(refusal) => Some(refusal.message),
        Requirement::Ask {
            session,
            denial,
            grant,
            level,
            ..
        } => {
            let granted = rt.approvals.is_approved(&session)
                || rt
                    .store
                    .as_ref()
                    .is_some_and(|s| s.allows(&rt.ctx.workspace, grant.as_ref(), level));
            if !rt.approvals.is_denied(&denial) && granted {
                None
            } else {
                Some("replaying it would need a new approval, and a replay never asks".into())
            }
        }
    }
}

/// How a finished `exec_shell` call ended: its exit code and output, or why
/// it did not finish.
pub(crate) fn from_outcome(outcome: &ToolOutcome) -> Replay {
    match outcome {
        Ok(out) => {
            let output = match &out.output {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match out.meta.get("exit_code").and_then(Value::as_i64) {
                Some(code) => Replay::Exited {
                    code: i32::try_from(code).unwrap_or(i32::MAX),
                    output,
                },
                None => Replay::Failed {
                    failure_type: "could-not-run",
                    why: "the replay reported no exit code".into(),
                    output,
                },
            }
        }
        Err(refusal) => {
            let failure_type = match refusal.code {
                ErrorCode::Timeout => "timeout",
                ErrorCode::Denied => "denied",
                _ => "could-not-run",
            };
            let output = refusal
                .details
                .get("output")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            Replay::Failed {
                failure_type,
                why: refusal.message.clone(),
                output,
            }
        }
    }
}

fn failed(failure_type: &'static str, why: String) -> Replay {
    Replay::Failed {
        failure_type,
        why,
        output: String::new(),
    }
}
