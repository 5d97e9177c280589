//! The approval gate: whether a prepared call runs, asks, or is refused.

use codesmith_policy::{ApprovalMode, SafetyLevel};
use codesmith_protocol::{Event, EventSink};
use codesmith_tools::{Capability, ErrorCode, McpTrust, Refusal, Tool, ToolOrigin};
use serde_json::Value;

use super::requirement::Requirement;
use super::{ApprovalAnswer, ApprovalKey, ApprovalRequest};
use crate::runtime::Runtime;

/// The gate's verdict on one call.
#[derive(Debug)]
pub(crate) enum GateDecision {
    /// Run it; `concurrent` when it may run beside the batch's other such calls
    /// (see [`Requirement::Auto`]); `approved` when a person said yes to it (asked now,
    /// or by an earlier answer or grant that covers it): the call then runs with
    /// [`codesmith_tools::ToolContext::person_approved`], which shows secrets unmasked
    /// and lets a file with other hard links be written.
    /// `network`: a person approved a shell command knowing it runs with network access
    /// (see `Requirement::Ask`): its sandbox opens the network for this call only.
    Run {
        concurrent: bool,
        approved: bool,
        network: bool,
    },
    /// Do not run it; the refusal says why and what to do.
    Refuse(Refusal),
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
                    network: false,
                }
            }
            Requirement::Deny(refusal) => GateDecision::Refuse(refusal),
            Requirement::Ask {
                mut request,
                session,
                denial,
                grant,
                level,
                network,
                way_out: known_way_out,
            } => {
                request.call_id = call_id.to_string();
                let asked = Asked {
                    request,
                    session: &session,
                    denial: &denial,
                    way_out: known_way_out.unwrap_or_else(|| way_out(tool, self.mode)),
                };
                self.ask(asked, grant, level, network, sink).await
            }
        }
    }

    async fn ask(
        &mut self,
        asked: Asked<'_>,
        grant: Option<ApprovalKey>,
        level: SafetyLevel,
        network: bool,
        sink: &mut EventSink<'_>,
    ) -> GateDecision {
        let Asked {
            request,
            session,
            denial,
            way_out,
        } = asked;
        if self.approvals.is_denied(denial) {
            return GateDecision::Refuse(denied(
                &request,
                &way_out,
                "It was already denied in this session.",
                false,
            ));
        }
        if self.approvals.is_approved(session) {
            return GateDecision::Run {
                concurrent: false,
                approved: true,
                network,
            };
        }
        // A stored grant is re-checked against this request; `never` mode never asks, so
        // it never reaches here.
        if let Some(store) = &self.store
            && store.allows(&self.ctx.workspace, grant.as_ref(), level)
        {
            if let Some(grant) = &grant
                && self.approvals.first_use_of_grant(grant)
            {
                sink(Event::Notice {
                    message: format!(
                        "allowed by your grant: {} (saved with \"always\"; `codesmith approvals \
                         list` shows it, `codesmith approvals revoke ID` removes it)",
                        grant.describe()
                    ),
                });
            }
            return GateDecision::Run {
                concurrent: false,
                approved: true,
                network,
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
                &way_out,
                "Nobody is present to approve it in this run.",
                true,
            ));
        }
        let cancel = self.ctx.cancel.clone();
        let (answer, reason) = tokio::select! {
            answer = self.approver.ask_with_reason(&request) => answer,
            () = cancel.cancelled() => (ApprovalAnswer::Deny, None),
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
                network,
            },
            ApprovalAnswer::Session => {
                self.approvals.approve(session);
                GateDecision::Run {
                    concurrent: false,
                    approved: true,
                    network,
                }
            }
            ApprovalAnswer::Always => {
                self.approvals.approve(session);
                if let Some(problem) = self.persist(&request, grant, level) {
                    sink(Event::Notice { message: problem });
                }
                GateDecision::Run {
                    concurrent: false,
                    approved: true,
                    network,
                }
            }
            ApprovalAnswer::Deny => {
                self.approvals.deny(denial);
                let why = match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                    Some(reason) => format!(
                        "The user declined it, saying: \"{}\".",
                        codesmith_policy::visible_line(reason, 500)
                    ),
                    None => "The user declined it.".to_string(),
                };
                GateDecision::Refuse(denied(&request, &way_out, &why, false))
            }
        }
    }

    /// Stores an "always" grant; a failure to save costs only the persistence and is
    /// returned as the notice that says so (the front end shows it; a library never
    /// writes to the terminal itself, which the full-screen UI owns).
    fn persist(
        &self,
        request: &ApprovalRequest,
        grant: Option<ApprovalKey>,
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
    session: &'a ApprovalKey,
    denial: &'a ApprovalKey,
    way_out: String,
}

/// How the user can let a refused call of `tool` run under `mode`, naming the mode that
/// would allow it; keyed on what the tool does (its capability, and for a network tool
/// whether it is an MCP server's, by its [`ToolOrigin`]), never on a list of tool names.
pub(crate) fn way_out(tool: &dyn Tool, mode: ApprovalMode) -> String {
    let mcp = matches!(tool.origin(), ToolOrigin::Mcp { .. });
    match (tool.capability(), mode) {
        (Capability::WritesFiles, ApprovalMode::Suggest | ApprovalMode::ReadOnly) => format!(
            "approval mode `{mode}` does not let file writes run unasked: rerun with \
             `--approval auto-edit` (writes run, the snapshot can undo them), or approve it in an \
             interactive session"
        ),
        (Capability::WritesFiles, _) => {
            "run it in an interactive session (`--approval auto-edit`) and approve it, or rerun \
             with `--approval auto`"
                .to_string()
        }
        (Capability::Network, _) if mcp => mcp_way_out(tool.mcp_trust()),
        (Capability::Network, _) => {
            "rerun with `--approval auto`, or allow the host under [network] allow in config.toml"
                .to_string()
        }
        // A read tool asks only about a secret or hard-linked file: the read gate, not the
        // exec policy, governs it.
        (Capability::ReadOnly, _) => {
            "approve it in an interactive session (`--approval auto-edit`), or rerun with \
             `--approval auto`, which reads such files without asking (exec-policy rules do not \
             govern file reads)"
                .to_string()
        }
        (Capability::ExecutesCode, _) => {
            "rerun with `--approval auto`, approve it in an interactive session (`--approval \
             auto-edit`), or add an allow rule to the exec policy (policy.toml)"
                .to_string()
        }
    }
}

/// How the user can let an MCP tool's call run: `trusted = true` is offered only when it
/// would help (the server is not trusted yet and the tool declares readOnlyHint).
fn mcp_way_out(trust: Option<McpTrust>) -> String {
    match trust {
        Some(McpTrust {
            server_trusted: true,
            ..
        }) => "rerun with `--approval auto`, or approve it in an interactive session (its server \
               is already `trusted = true`, but the tool does not declare readOnlyHint, so each \
               call asks)"
            .to_string(),
        Some(McpTrust {
            server_trusted: false,
            read_only_hint: true,
        }) => "rerun with `--approval auto`, or mark the server `trusted = true` in config.toml \
               (this tool declares readOnlyHint, so it then runs without asking)"
            .to_string(),
        Some(McpTrust {
            server_trusted: false,
            read_only_hint: false,
        }) => "rerun with `--approval auto`, or approve it in an interactive session (the tool \
               does not declare readOnlyHint, so it asks even from a server marked `trusted = \
               true`)"
            .to_string(),
        None => "rerun with `--approval auto`, or approve it in an interactive session".to_string(),
    }
}

/// Why an MCP tool's call asks: what every such call shares, then which of the two facts
/// that would let it run unasked is missing.
pub(crate) fn mcp_reason(trust: Option<McpTrust>) -> String {
    let why = match trust {
        Some(McpTrust {
            server_trusted: true,
            ..
        }) => " This tool does not declare readOnlyHint.",
        Some(McpTrust {
            server_trusted: false,
            ..
        }) => " Its server is not marked `trusted = true`.",
        None => "",
    };
    format!("MCP tools run outside CodeSmith's sandbox and may reach the network.{why}")
}

/// What a refusal offers when a shell command was asked about only because deny rules exist
/// that the exec policy cannot show do not apply to it: unlike other refusals, writing the
/// command another way is the way out.
pub(crate) const DENY_UNCHECKED_WAY_OUT: &str = "a deny rule in the exec policy cannot be \
    checked against this command as written: write it so the policy can read it (name each \
    program plainly, without aliases, variables, sourced files or wrappers around it), or \
    approve it in an interactive session; `--approval auto` and allow rules do not lift this";

/// The DENIED refusal for a call that needed approval and did not get it; `way_out` (see
/// [`way_out`]) is what a headless run's hint offers.
pub(crate) fn denied(
    request: &ApprovalRequest,
    way_out: &str,
    why: &str,
    headless: bool,
) -> Refusal {
    let hint = if way_out == DENY_UNCHECKED_WAY_OUT {
        format!(
            "It was not refused for what it does: {way_out}. Do not hide a denied program \
             another way."
        )
    } else if headless {
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
        let mode = ApprovalMode::AutoEdit;
        assert!(way_out(&fetch, mode).contains("[network] allow"));
        assert!(way_out(&codesmith_tools::files::WriteFile, mode).contains("interactive session"));
        assert!(way_out(&codesmith_tools::shell::ExecShell, mode).contains("policy.toml"));
        let suggest = way_out(&codesmith_tools::files::WriteFile, ApprovalMode::Suggest);
        assert!(suggest.contains("--approval auto-edit"), "{suggest}");
    }

    /// An MCP tool as the registry holds one: its origin and its trust facts.
    struct FakeMcp(McpTrust);

    #[async_trait::async_trait]
    impl Tool for FakeMcp {
        fn name(&self) -> &'static str {
            "mcp__gh__create_issue"
        }
        fn description(&self) -> &'static str {
            "x"
        }
        fn input_schema(&self) -> Value {
            serde_json::json!({"type": "object"})
        }
        fn capability(&self) -> Capability {
            self.0.capability()
        }
        fn origin(&self) -> ToolOrigin {
            ToolOrigin::Mcp {
                server: "gh".into(),
                tool: "create_issue".into(),
            }
        }
        fn mcp_trust(&self) -> Option<McpTrust> {
            Some(self.0)
        }
        async fn call(
            &self,
            _ctx: &codesmith_tools::ToolContext,
            _args: Value,
        ) -> codesmith_tools::ToolOutcome {
            Err(Refusal::internal())
        }
    }

    #[test]
    fn an_mcp_refusal_names_what_is_missing_and_offers_trust_only_where_it_helps() {
        let trust = |server_trusted, read_only_hint| {
            Some(McpTrust {
                server_trusted,
                read_only_hint,
            })
        };
        let tool = |server_trusted, read_only_hint| {
            FakeMcp(McpTrust {
                server_trusted,
                read_only_hint,
            })
        };
        // A trusted server's tool without readOnlyHint: trusting the server again cannot help.
        let trusted = way_out(&tool(true, false), ApprovalMode::AutoEdit);
        assert!(!trusted.contains("mark the server"), "{trusted}");
        assert!(trusted.contains("already `trusted = true`"), "{trusted}");
        assert!(trusted.contains("readOnlyHint"), "{trusted}");
        let reason = mcp_reason(trust(true, false));
        assert!(reason.contains("does not declare readOnlyHint"), "{reason}");
        assert!(!reason.contains("not marked"), "{reason}");
        // Only an untrusted server's read-only tool is helped by `trusted = true`.
        let helps = way_out(&tool(false, true), ApprovalMode::Suggest);
        assert!(
            helps.contains("mark the server `trusted = true`"),
            "{helps}"
        );
        let neither = way_out(&tool(false, false), ApprovalMode::Suggest);
        assert!(!neither.contains("mark the server"), "{neither}");
        assert!(mcp_reason(trust(false, false)).contains("not marked `trusted = true`"));
    }
}
