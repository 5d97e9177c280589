//! The per-session runtime that tool dispatch works against: the tools, their
//! context, the loop guard, approvals and the policy inputs. What a call requires
//! and the gate that asks live in [`crate::approval`].

use std::sync::Arc;

use codesmith_policy::{ApprovalMode, NetworkPolicy, Rules};
use codesmith_tools::{Registry, Tool, ToolContext};
use serde_json::Value;

use codesmith_tools::files::concerns::{self, Concern};

use crate::approval::{ApprovalStore, Approver, SessionApprovals};
use crate::guard::LoopGuard;

/// Everything tool dispatch needs for one session.
pub(crate) struct Runtime {
    pub(crate) tools: Registry,
    pub(crate) ctx: Arc<ToolContext>,
    pub(crate) guard: LoopGuard,
    pub(crate) approvals: SessionApprovals,
    pub(crate) approver: Arc<dyn Approver>,
    pub(crate) mode: ApprovalMode,
    pub(crate) rules: Arc<Rules>,
    pub(crate) network: Arc<NetworkPolicy>,
    /// Persistent "always" grants (`$CODESMITH_HOME/approvals.toml`); `None` outside sessions.
    pub(crate) store: Option<Arc<ApprovalStore>>,
    /// Verification commands run in the current task (the claim verifier's evidence).
    pub(crate) verify: crate::verify::Observed,
    /// The running turn and its snapshot (taken before the first write).
    pub(crate) snapshots: crate::snapshot::TaskSnapshots,
    /// What starting a subagent needs, and this engine's place in the tree; `None`
    /// outside an engine session (`codesmith tool`, the MCP server).
    pub(crate) delegation: Option<crate::subagent::Delegation>,
    /// Children that ran in the current round, for the transcript and the totals.
    pub(crate) delegated: Vec<crate::subagent::Delegated>,
    /// Files another program runs later that calls wrote without asking (`auto` mode),
    /// each as "PATH (PROGRAM)" or the shell command that wrote one: the task's end names
    /// them ([`Runtime::take_ran_later`]).
    pub(crate) ran_later: Vec<String>,
    /// The `shown` notes of the results sent this round (see
    /// [`crate::session::NoteKind::Shown`]), written with the round's results.
    pub(crate) shown: Vec<serde_json::Value>,
    /// Read-only calls of the streaming response started before it ended.
    pub(crate) early: crate::early::EarlyStarts,
    /// The user's hooks (`PreToolUse` and `PostToolUse` run in dispatch); none outside
    /// sessions.
    pub(crate) hooks: crate::hooks::HookSite,
}

impl Runtime {
    /// Under `auto`, records what a call about to run without asking writes that another
    /// program runs later (a file tool's path, or a shell command the policy says writes
    /// one), for the task's closing notice.
    pub(crate) fn note_runs_later(&mut self, tool: &dyn Tool, args: &Value) {
        if self.mode != ApprovalMode::Auto {
            return;
        }
        match tool.capability() {
            codesmith_tools::Capability::WritesFiles => {
                let written = concerns::written_paths(tool.name(), args);
                for concern in concerns::write_concerns(&self.ctx, &written) {
                    if let Concern::RunsLater { path, by } = concern {
                        let entry = format!("{path} ({})", by.program);
                        if !self.ran_later.contains(&entry) {
                            self.ran_later.push(entry);
                        }
                    }
                }
            }
            codesmith_tools::Capability::ExecutesCode => {
                let Some(command) = args.get("command").and_then(Value::as_str) else {
                    return;
                };
                let workspace = self.ctx.workspace.to_string_lossy();
                let eval = codesmith_policy::decide(command, &workspace, &self.rules, self.mode);
                if eval.reason.contains(codesmith_policy::RunsLater::MARK) {
                    let entry = format!("`{command}`: {}", eval.reason);
                    if !self.ran_later.contains(&entry) {
                        self.ran_later.push(entry);
                    }
                }
            }
            _ => {}
        }
    }

    /// The closing notice of a task that wrote files another program runs later without
    /// anybody being asked (`auto`), naming each; `None` when it wrote none. Clears the
    /// list.
    pub(crate) fn take_ran_later(&mut self) -> Option<String> {
        let written = std::mem::take(&mut self.ran_later);
        (!written.is_empty()).then(|| {
            format!(
                "This task wrote files that other programs run on their own (approval mode auto asked nobody): {}. Review them before running those programs.",
                written.join("; ")
            )
        })
    }
}
