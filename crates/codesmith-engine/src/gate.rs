//! The approval gate: whether a prepared call runs, asks, or is refused.

use codesmith_protocol::{Event, EventSink};
use codesmith_tools::{Capability, ErrorCode, Refusal, Tool};
use serde_json::Value;

use codesmith_policy::SafetyLevel;
use codesmith_tools::approvals::Grant;

use crate::approval::{ApprovalAnswer, ApprovalRequest};
use crate::runtime::Runtime;

/// The gate's verdict on one call.
#[derive(Debug)]
pub(crate) enum GateDecision {
    /// Run it; `concurrent` when it may run beside the batch's other such calls
    /// (see [`Requirement::Auto`]); `approved` when a person said yes to it (asked now,
    /// or by an earlier answer or grant that covers it): the call then runs with
    /// [`codesmith_tools::ToolContext::person_approved`], which shows secrets unmasked
    /// and lets a file with other hard links be written.
    Run { concurrent: bool, approved: bool },
    /// Do not run it; the refusal says why and what to do.
    Refuse(Refusal),
}

/// The policy's view of one call before anybody is asked.
#[derive(Debug, Clone)]
pub(crate) enum Requirement {
    /// Runs without asking. `concurrent`: it may run beside the batch's other
    /// concurrent calls — a read-only tool that supports it, or a foreground shell
    /// command the exec policy parsed whole and judged `safe` (see
    /// `Runtime::shell_requirement`); anything else runs alone, in call order.
    Auto { concurrent: bool },
    /// Needs a person's yes.
    Ask {
        /// What is asked about.
        request: ApprovalRequest,
        /// Fingerprint an approval covers (the canonical prefix).
        prefix: String,
        /// Fingerprint a denial covers (the exact input).
        input: String,
        /// What an "always" answer stores, when it may be persisted.
        grant: Option<Grant>,
        /// The classifier's level (a dangerous request is never persisted or covered).
        level: SafetyLevel,
    },
    /// Refused by policy whatever anyone says.
    Deny(Refusal),
}

impl Runtime {
    /// Decides whether the call `call_id` of `tool` with `args` may run, asking the approver
    /// when needed (the request carries `call_id`, so an answer can name it).
    ///
    /// A shell command that would ask is judged again with what the task's snapshot
    /// holds (the snapshot is taken first; it would be before the command runs anyway):
    /// deleting files the snapshot can bring back needs nobody's approval. Without a
    /// snapshot the first answer stands.
    pub(crate) async fn gate(
        &mut self,
        call_id: &str,
        tool: &dyn Tool,
        args: &Value,
        sink: &mut EventSink<'_>,
    ) -> GateDecision {
        let mut requirement = self.requirement(tool, args);
        if matches!(requirement, Requirement::Ask { .. })
            && tool.capability() == Capability::ExecutesCode
            && args.get("command").is_some()
            && let Some(held) = self.snapshots.held(&self.ctx, sink).await
        {
            requirement = self.shell_requirement_with_snapshot(tool, args, &held);
        }
        match requirement {
            Requirement::Auto { concurrent } => {
                self.note_runs_later(tool, args);
                GateDecision::Run {
                    concurrent,
                    approved: false,
                }
            }
            Requirement::Deny(refusal) => GateDecision::Refuse(refusal),
            Requirement::Ask {
                mut request,
                prefix,
                input,
                grant,
                level,
            } => {
                request.call_id = call_id.to_string();
                let asked = Asked {
                    request,
                    prefix: &prefix,
                    input: &input,
                    way_out: way_out(tool),
                };
                self.ask(asked, grant, level, sink).await
            }
        }
    }

    async fn ask(
        &mut self,
        asked: Asked<'_>,
        grant: Option<Grant>,
        level: SafetyLevel,
        sink: &mut EventSink<'_>,
    ) -> GateDecision {
        let Asked {
            request,
            prefix,
            input,
            way_out,
        } = asked;
        if self.approvals.is_denied(input) {
            return GateDecision::Refuse(denied(
                &request,
                way_out,
                "It was already denied in this session.",
                false,
            ));
        }
        if self.approvals.is_approved(prefix) {
            return GateDecision::Run {
                concurrent: false,
                approved: true,
            };
        }
        // A stored grant is re-checked against this request; `never` mode never asks, so
        // it never reaches here.
        if let Some(store) = &self.store
            && store.allows(&self.ctx.workspace, grant.as_ref(), level)
        {
            return GateDecision::Run {
                concurrent: false,
                approved: true,
            };
        }
        if !self.approver.interactive() {
            if self.delegation.as_ref().and_then(|d| d.role)
                == Some(crate::subagent::AgentType::Review)
            {
                // Its mode is at least `suggest` whatever the run's: `--approval auto`
                // would not help, so the hint must not offer it.
                return GateDecision::Refuse(review_headless(&request));
            }
            return GateDecision::Refuse(denied(
                &request,
                way_out,
                "Nobody is present to approve it in this run.",
                true,
            ));
        }
        let cancel = self.ctx.cancel.clone();
        let answer = tokio::select! {
            answer = self.approver.ask(&request) => answer,
            () = cancel.cancelled() => ApprovalAnswer::Deny,
        };
        // An interrupt withdraws the question (its approver may resolve it as "deny" in
        // the same instant): that is no answer, so nothing is recorded as the user's
        // "no", and an answer that raced the interrupt runs nothing.
        if cancel.is_cancelled() {
            return GateDecision::Refuse(codesmith_tools::cancelled(&request.tool, None));
        }
        match answer {
            ApprovalAnswer::Once => GateDecision::Run {
                concurrent: false,
                approved: true,
            },
            ApprovalAnswer::Session => {
                self.approvals.approve(prefix);
                GateDecision::Run {
                    concurrent: false,
                    approved: true,
                }
            }
            ApprovalAnswer::Always => {
                self.approvals.approve(prefix);
                if let Some(problem) = self.persist(&request, grant, level) {
                    sink(Event::Notice { message: problem });
                }
                GateDecision::Run {
                    concurrent: false,
                    approved: true,
                }
            }
            ApprovalAnswer::Deny => {
                self.approvals.deny(input);
                GateDecision::Refuse(denied(&request, way_out, "The user declined it.", false))
            }
        }
    }

    /// Stores an "always" grant; a failure to save costs only the persistence and is
    /// returned as the notice that says so (the front end shows it; a library never
    /// writes to the terminal itself, which the full-screen UI owns).
    fn persist(
        &self,
        request: &ApprovalRequest,
        grant: Option<Grant>,
        level: SafetyLevel,
    ) -> Option<String> {
        let (Some(store), Some(grant)) = (&self.store, grant) else {
            return None;
        };
        if !request.can_persist {
            return None;
        }
        store
            .grant(&self.ctx.workspace, grant, level)
            .err()
            .map(|e| {
                format!(
                    "the approval was not saved for later sessions ({e}); it holds for this \
                 session only. Check that {} is writable",
                    self.ctx.home.display()
                )
            })
    }

    /// What policy requires for this call, before anybody is asked.
    pub(crate) fn requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        if tool.name() == crate::subagent::AGENT_TOOL {
            // Starting a subagent asks nobody: each of the child's own calls passes the
            // child's gate, under the same approver and the same (or a stricter) policy.
            // Read-only types may run beside the batch's other read-only calls.
            let kind = crate::subagent::requested_type(tool, args);
            return Requirement::Auto {
                concurrent: kind.is_some_and(crate::subagent::AgentType::read_only),
            };
        }
        match tool.capability() {
            Capability::ReadOnly => self.read_requirement(tool, args),
            Capability::WritesFiles => self.write_requirement(tool, args),
            Capability::ExecutesCode
                if args.get("command").is_none() && args.get("code").is_some() =>
            {
                self.code_requirement(tool, args)
            }
            // Typing into an interactive session: the program decides what the input does,
            // so it is judged like code, never like a read.
            Capability::ExecutesCode
                if args.get("command").is_none()
                    && (args.get("text").is_some() || args.get("keys").is_some()) =>
            {
                self.terminal_input_requirement(tool, args)
            }
            Capability::ExecutesCode => self.shell_requirement(tool, args),
            Capability::Network if tool.name().starts_with(codesmith_tools::trust::MCP_PREFIX) => {
                self.mcp_requirement(tool, args)
            }
            Capability::Network => self.network_requirement(tool, args),
        }
    }
}

/// The DENIED refusal for a `review` subagent's call that needs approval when nobody is
/// present: a review child asks before such calls even under `--approval auto`.
fn review_headless(request: &ApprovalRequest) -> Refusal {
    let reason = request.reason.trim_end_matches('.');
    Refusal::new(
        ErrorCode::Denied,
        format!(
            "`{}` was not run: {reason}. A review subagent asks before such a command even under \
             `--approval auto`, and nobody is present to approve it in this run.",
            request.summary
        ),
        "Do not retry it and do not work around it. Report that it was not run; the agent that \
         delegated to you may run it itself, or the user may add an allow rule for it to the \
         exec policy (policy.toml).",
    )
    .with("tool", request.tool.clone())
    .with("agent_type", crate::subagent::AgentType::Review.as_str())
}

/// A request to ask about, with the fingerprints an answer covers and what the refusal
/// tells the user to do when nobody approves it.
struct Asked<'a> {
    request: ApprovalRequest,
    prefix: &'a str,
    input: &'a str,
    way_out: &'static str,
}

/// How the user can let a refused call of `tool` run, keyed on what the tool does (its
/// capability, and for a network tool whether it is an MCP server's, by its external
/// label), never on a list of tool names.
pub(crate) fn way_out(tool: &dyn Tool) -> &'static str {
    let mcp = || {
        tool.external_label(&Value::Null)
            .is_some_and(|label| label.starts_with("mcp:"))
    };
    match tool.capability() {
        Capability::WritesFiles => {
            "run it in an interactive session (`--approval suggest`) and approve it, or rerun \
             with `--approval auto`"
        }
        Capability::Network if mcp() => {
            "rerun with `--approval auto`, or mark the server `trusted = true` in config.toml (its \
             tools that declare readOnlyHint then run without asking)"
        }
        Capability::Network => {
            "rerun with `--approval auto`, or allow the host under [network] allow in config.toml"
        }
        Capability::ReadOnly | Capability::ExecutesCode => {
            "rerun with `--approval auto`, or add an allow rule to the exec policy (policy.toml)"
        }
    }
}

/// The DENIED refusal for a call that needed approval and did not get it; `way_out` (see
/// [`way_out`]) is what a headless run's hint offers.
pub(crate) fn denied(
    request: &ApprovalRequest,
    way_out: &str,
    why: &str,
    headless: bool,
) -> Refusal {
    let hint = if headless {
        format!(
            "Do not retry it and do not work around it with another tool. Continue without it, or tell the \
             user it needs approval: {way_out}."
        )
    } else {
        "Do not retry it and do not work around it with another tool; continue without it or ask the user."
            .to_string()
    };
    let reason = request.reason.trim_end_matches('.');
    Refusal::new(
        ErrorCode::Denied,
        format!("`{}` was not run: {reason}. {why}", request.summary),
        hint,
    )
    .with("tool", request.tool.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use codesmith_tools::fetch::{FetchConfig, FetchUrl};

    #[test]
    fn the_way_out_follows_what_the_tool_does_not_its_name() {
        let fetch = FetchUrl::new(FetchConfig::default());
        assert!(way_out(&fetch).contains("[network] allow"));
        assert!(way_out(&codesmith_tools::files::WriteFile).contains("interactive session"));
        assert!(way_out(&codesmith_tools::shell::ExecShell).contains("policy.toml"));
    }
}
