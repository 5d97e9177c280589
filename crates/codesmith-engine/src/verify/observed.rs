//! The verification commands `exec_shell` ran during the current task.

use std::path::PathBuf;

use codesmith_protocol::ToolCall;
use codesmith_tools::{ToolContext, ToolOutcome};
use serde_json::Value;

use super::claim::ClaimKind;
use super::commands::{CommandClass, classify, is_background};
use super::replay::{Replay, from_outcome};

/// The only tool whose calls are replayed. Background commands
/// (`task_shell_start`, or an `exec_shell` line that detaches something; see
/// [`super::commands::is_background`]) are never recorded, so never replayed.
pub const REPLAYABLE_TOOL: &str = "exec_shell";

/// One verification command as it ran.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observation {
    /// The original tool call id.
    pub(crate) call_id: String,
    /// The arguments exactly as they ran (command, cwd, timeout).
    pub(crate) args: Value,
    /// The command text.
    pub(crate) command: String,
    /// The shell session directory when it ran (relative `cwd` arguments
    /// resolve against it).
    pub(crate) session_dir: PathBuf,
    /// Test or build.
    pub(crate) class: CommandClass,
    /// How the run itself ended, once it has (see [`Observed::ran`]).
    pub(crate) outcome: Option<Replay>,
}

impl Observation {
    /// The exit code when the run finished non-zero: a completed failure.
    pub(crate) fn failed_with(&self) -> Option<(i32, &str)> {
        match &self.outcome {
            Some(Replay::Exited { code, output }) if *code != 0 => Some((*code, output)),
            _ => None,
        }
    }
}

/// Verification commands seen in the current task, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    seen: Vec<Observation>,
}

impl Observed {
    /// Forgets the previous task's commands.
    pub(crate) fn begin_task(&mut self) {
        self.seen.clear();
    }

    /// Records `call` when it is an `exec_shell` verification command about
    /// to run with `args`.
    pub(crate) fn observe(&mut self, call: &ToolCall, tool: &str, args: &Value, ctx: &ToolContext) {
        if tool != REPLAYABLE_TOOL {
            return;
        }
        let Some(command) = args.get("command").and_then(Value::as_str) else {
            return;
        };
        if is_background(command) {
            return;
        }
        let Some(class) = classify(command) else {
            return;
        };
        self.seen.push(Observation {
            call_id: call.id.clone(),
            args: args.clone(),
            command: command.to_string(),
            session_dir: ctx.shell.cwd(&ctx.workspace),
            class,
            outcome: None,
        });
    }

    /// Records how the call `call_id` ended, when it was observed.
    pub(crate) fn ran(&mut self, call_id: &str, outcome: &ToolOutcome) {
        if let Some(obs) = self.seen.iter_mut().rev().find(|o| o.call_id == call_id) {
            obs.outcome = Some(from_outcome(outcome));
        }
    }

    /// The most recent command that can back a claim of `kind`: a test
    /// claim needs a test command; a build claim accepts either class
    /// (running tests builds the code).
    pub(crate) fn latest_for(&self, kind: ClaimKind) -> Option<&Observation> {
        self.seen.iter().rev().find(|o| match kind {
            ClaimKind::Tests => o.class == CommandClass::Test,
            ClaimKind::Build => true,
        })
    }
}
