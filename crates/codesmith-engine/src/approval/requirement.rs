//! What policy requires of one call before anybody is asked: the approval ladder applied
//! per capability (reads, file writes, shell commands, network, MCP tools, code).
//!
//! | mode | reads | file writes | shell commands | network / MCP |
//! |---|---|---|---|---|
//! | `read-only` (plan mode) | run | refused | only those the policy proves read-only | ask (MCP: refused) |
//! | `suggest` | run | ask | ask unless the policy allows | ask |
//! | `auto-edit` | run | run, except files run later, instruction files, user memory | ask unless the policy allows | ask |
//! | `auto` | run | run | run unless the policy refuses | by policy |
//! | `never` | run | as `auto-edit`, what would ask is refused | refused unless the policy allows | refused unless allowed |
//!
//! Reading a secret or a hard-linked file asks in every mode but `auto` (which masks the
//! secret) and `never` (which refuses).

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use codesmith_policy::{ApprovalMode, Decision, NetworkDecision, SafetyLevel};
use codesmith_tools::files::concerns::{self, Concern};
use codesmith_tools::{Capability, ErrorCode, Refusal, Tool, ToolOrigin};
use serde_json::Value;

use super::key::ShellKeys;
use super::{ApprovalKey, ApprovalRequest};
use crate::runtime::Runtime;

/// The policy's view of one call before anybody is asked.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per tool call, matched at once: never stored in bulk"
)]
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
        /// What an approval covers for the session.
        session: ApprovalKey,
        /// What a denial covers (the exact input).
        denial: ApprovalKey,
        /// What an "always" answer stores, when it may be persisted.
        grant: Option<ApprovalKey>,
        /// The classifier's level (a dangerous request is never persisted or covered).
        level: SafetyLevel,
        /// True when an approval runs this shell command with the network open in its
        /// sandbox (it needs the network, the sandbox cuts it and can open it per command).
        network: bool,
        /// What a headless refusal offers instead, when the request knows better than
        /// its tool's [`super::gate::way_out`] (a shell command that needs the network).
        way_out: Option<String>,
    },
    /// Refused by policy whatever anyone says.
    Deny(Refusal),
}

impl Runtime {
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
            // The slop ledger's `list` and `show` only read it (in every mode, plan
            // included); its other actions write.
            Capability::WritesFiles
                if tool.name() == "slop"
                    && matches!(
                        args.get("action").and_then(Value::as_str),
                        Some("list" | "show")
                    ) =>
            {
                Requirement::Auto { concurrent: false }
            }
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
            Capability::Network if matches!(tool.origin(), ToolOrigin::Mcp { .. }) => {
                self.mcp_requirement(tool, args)
            }
            Capability::Network => self.network_requirement(tool, args),
        }
    }

    /// The requirement for a tool that executes code: the command policy
    /// (classifier + exec-policy rules + approval mode) decides.
    pub(crate) fn shell_requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        self.shell_requirement_inner(tool, args, None)
    }

    /// [`Runtime::shell_requirement`] knowing which workspace paths (relative,
    /// `/`-separated) the task's snapshot holds: deleting only those is undoable.
    pub(crate) fn shell_requirement_with_snapshot(
        &self,
        tool: &dyn Tool,
        args: &Value,
        held: &HashSet<String>,
    ) -> Requirement {
        self.shell_requirement_inner(tool, args, Some(held))
    }

    fn shell_requirement_inner(
        &self,
        tool: &dyn Tool,
        args: &Value,
        held: Option<&HashSet<String>>,
    ) -> Requirement {
        let Some(command) = args.get("command").and_then(Value::as_str) else {
            // No command: the tool's own validation reports the missing field.
            return Requirement::Auto { concurrent: false };
        };
        let workspace = self.ctx.workspace.to_string_lossy();
        // Only a command that really runs isolated gets a private /tmp.
        let private_tmp = self.ctx.sandbox.private_tmp();
        // Relative paths are judged from where the command will really start: the call's
        // `cwd` or the session directory an earlier `cd` moved to (a `cwd` that does not
        // resolve is refused by the tool itself, so nothing runs).
        let start = codesmith_tools::shell::start_dir(&self.ctx, args.get("cwd"))
            .ok()
            .filter(|dir| *dir != self.ctx.workspace)
            .map(|dir| dir.to_string_lossy().into_owned());
        let decide = |facts: &dyn codesmith_policy::PathFacts| match start.as_deref() {
            Some(dir) => {
                let facts = codesmith_policy::StartingIn { facts, dir };
                codesmith_policy::decide_with(command, &workspace, &self.rules, self.mode, &facts)
            }
            None => {
                codesmith_policy::decide_with(command, &workspace, &self.rules, self.mode, facts)
            }
        };
        let eval = match held {
            None if !private_tmp && start.is_none() => {
                codesmith_policy::decide(command, &workspace, &self.rules, self.mode)
            }
            None if !private_tmp => decide(&codesmith_policy::SystemPaths::new()),
            None => decide(&codesmith_policy::PrivateTmp(
                codesmith_policy::SystemPaths::new(),
            )),
            Some(held) => decide(&TurnFacts::new(&self.ctx.workspace, held, private_tmp)),
        };
        if eval.decision != Decision::Deny
            && self.delegation.as_ref().and_then(|d| d.role)
                == Some(crate::subagent::AgentType::Review)
            && let Some(why) = crate::subagent::review_objection(&eval)
        {
            return Requirement::Deny(crate::subagent::review_shell_refusal(command, &why));
        }
        match eval.decision {
            Decision::Allow => Requirement::Auto {
                concurrent: tool.name() == "exec_shell" && reads_only(&eval),
            },
            Decision::Ask => {
                let keys = ShellKeys::of(command, &eval);
                let (network, reason) = self.network_for(&eval);
                let way_out = Some(self.shell_way_out(&eval));
                Requirement::Ask {
                    request: ApprovalRequest {
                        tool: tool.name().to_string(),
                        summary: command.to_string(),
                        reason,
                        can_persist: eval.grant_persistable() && keys.grant.is_some(),
                        ..Default::default()
                    },
                    session: keys.session,
                    denial: keys.denial,
                    grant: keys.grant,
                    level: eval.level,
                    network,
                    way_out,
                }
            }
            Decision::Deny if self.mode == ApprovalMode::ReadOnly && eval.level != SafetyLevel::Dangerous => {
                Requirement::Deny(
                    Refusal::new(
                        ErrorCode::Denied,
                        format!(
                            "Not run: {}.",
                            eval.reason.trim_end_matches('.')
                        ),
                        "You are planning: do not retry it or work around it. Use read-only commands \
                         (ls, cat, grep, git status/log/diff) to investigate, and put this command \
                         into your plan; it can run once the user accepts the plan (approval mode \
                         `auto-edit` or `auto`).",
                    )
                    .with("approval_mode", self.mode.as_str())
                    .with("tool", tool.name()),
                )
            }
            // Refused by the mode, not by the policy: what would ask is refused in `never`.
            Decision::Deny
                if self.mode == ApprovalMode::Never
                    && eval.level != SafetyLevel::Dangerous
                    && !eval.matched_rules.iter().any(|m| m.decision == Decision::Deny) =>
            {
                Requirement::Deny(
                    Refusal::new(
                        ErrorCode::Denied,
                        format!(
                            "Not run: {}. It needs approval, and approval mode `never` refuses \
                             whatever needs approval.",
                            eval.reason.trim_end_matches('.')
                        ),
                        format!(
                            "Do not retry it and do not work around it with another tool. Continue \
                             without it, or tell the user it needs approval: {}.",
                            self.shell_way_out(&eval)
                        ),
                    )
                    .with("approval_mode", self.mode.as_str())
                    .with("tool", tool.name()),
                )
            }
            Decision::Deny => Requirement::Deny(
                Refusal::new(
                    ErrorCode::Denied,
                    format!("The command policy refused this command: {}.", eval.reason.trim_end_matches('.')),
                    "Do not retry it or rephrase it to get around the policy. Use a safer command that does only \
                     what the task needs, or explain to the user why it is needed.",
                )
                .with("level", eval.level.as_str())
                .with("tool", tool.name()),
            ),
        }
    }

    /// How the user can let the shell command `eval` judged run as asked, naming the mode
    /// that allows it: a command that needs the network the sandbox cuts runs WITHOUT it
    /// under `--approval auto`, so the way names what gives it the network.
    fn shell_way_out(&self, eval: &codesmith_policy::Evaluation) -> String {
        if eval.deny_unchecked {
            return DENY_UNCHECKED_WAY_OUT.to_string();
        }
        let cut =
            eval.segments.iter().any(|s| s.needs_network) && self.ctx.sandbox.network_blocked();
        if !cut && self.mode == ApprovalMode::Auto {
            // In auto mode only an ask rule asks about a command.
            return "approve it in an interactive session, or change the ask rule in the exec \
                    policy (policy.toml) that matched it"
                .to_string();
        }
        if !cut {
            return "rerun with `--approval auto`, approve it in an interactive session \
                    (`--approval auto-edit`), or add an allow rule to the exec policy (policy.toml)"
                .to_string();
        }
        if self.ctx.sandbox.backend.network_per_command() {
            "it needs the network: approve it in an interactive session (`--approval auto-edit`), \
             which runs it with network access for this command only, or set `[sandbox] network = \
             true` in config.toml; `--approval auto` runs it WITHOUT network access (the sandbox \
             cuts it), so it would fail"
                .to_string()
        } else {
            "it needs the network, which the sandbox cuts and cannot open for one command: set \
             `[sandbox] network = true` in config.toml; `--approval auto` (or an approval) runs it \
             WITHOUT network access, so it would fail"
                .to_string()
        }
    }

    /// Whether approving the command `eval` judged opens the network for it, and the
    /// question's reason saying what an approval does about the network: a command that
    /// needs it, under a sandbox that cuts it, runs with network access when the sandbox
    /// can open it for one command (bubblewrap), and otherwise the question says it will
    /// run without network and how to change that; never an approval that silently fails.
    fn network_for(&self, eval: &codesmith_policy::Evaluation) -> (bool, String) {
        let reason = eval.reason.trim_end_matches('.').to_string();
        let needs = eval.segments.iter().any(|s| s.needs_network);
        if !needs || !self.ctx.sandbox.network_blocked() {
            return (false, eval.reason.clone());
        }
        if self.ctx.sandbox.backend.network_per_command() {
            (
                true,
                format!(
                    "{reason}. If approved, it runs with network access (this command only; \
                     the sandbox keeps the network cut for others)."
                ),
            )
        } else {
            (
                false,
                format!(
                    "{reason}. It will run without network access: the sandbox cuts the network \
                     and cannot open it for one command. To allow it, set `[sandbox] network = \
                     true` in config.toml."
                ),
            )
        }
    }

    /// The requirement for a network tool: the network policy's decision for
    /// the URL's host. `ask` asks (an approval covers the host), runs in `auto` mode and
    /// is refused in `never` mode; `deny` is left to the tool, which refuses at execution
    /// naming the gate.
    pub(crate) fn network_requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        let Some(url) = tool.network_url(args) else {
            return Requirement::Auto { concurrent: false };
        };
        let url = url.as_str();
        let host = codesmith_tools::trust::label_for_url(url);
        match self.network.decide(&host) {
            NetworkDecision::Allow | NetworkDecision::Deny => {
                Requirement::Auto { concurrent: false }
            }
            NetworkDecision::Ask if self.mode == ApprovalMode::Auto => {
                Requirement::Auto { concurrent: false }
            }
            NetworkDecision::Ask if self.mode == ApprovalMode::Never => {
                Requirement::Deny(super::gate::denied(
                    &fetch_request(tool, url, &host),
                    &super::gate::way_out(tool, self.mode),
                    "The approval mode is `never`.",
                    true,
                ))
            }
            NetworkDecision::Ask => {
                let grant = ApprovalKey::url_host(&host);
                Requirement::Ask {
                    request: fetch_request(tool, url, &host),
                    session: grant.clone(),
                    denial: ApprovalKey::Url {
                        url: url.to_string(),
                    },
                    grant: Some(grant),
                    level: SafetyLevel::Ask,
                    network: false,
                    way_out: None,
                }
            }
        }
    }

    /// What the approval mode makes of a call that needs a person: `auto` runs it alone,
    /// `never` and `read-only` refuse it, `suggest` and `auto-edit` ask `request`. An
    /// approval covers `session`, a denial the exact `denial`; "always" stores `grant`
    /// when there is one.
    fn by_mode(
        &self,
        tool: &dyn Tool,
        request: ApprovalRequest,
        session: ApprovalKey,
        denial: ApprovalKey,
        grant: Option<ApprovalKey>,
    ) -> Requirement {
        match self.mode {
            ApprovalMode::Auto => Requirement::Auto { concurrent: false },
            ApprovalMode::Never | ApprovalMode::ReadOnly => Requirement::Deny(super::gate::denied(
                &request,
                &super::gate::way_out(tool, self.mode),
                &format!("The approval mode is `{}`.", self.mode),
                true,
            )),
            ApprovalMode::Suggest | ApprovalMode::AutoEdit => Requirement::Ask {
                request,
                session,
                denial,
                grant,
                level: SafetyLevel::Ask,
                network: false,
                way_out: None,
            },
        }
    }

    /// The requirement for a tool that writes files. Most writes run without asking (the
    /// task's snapshot can undo them); a write that outlives the session and reaches
    /// beyond it needs a person in `suggest`:
    /// - `remember` with scope `"user"` (the default), which reaches every later session
    ///   in every workspace;
    /// - a write to an instruction file (`AGENTS.md`, `CLAUDE.md`), which every later
    ///   session of this project obeys.
    ///
    /// That is `auto-edit`; `auto` runs them; `never` refuses them. `suggest` asks before
    /// every write (an approval for the session covers the same set of paths), and
    /// `read-only` refuses every write: the model is planning.
    pub(crate) fn write_requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        let written = concerns::written_paths(tool.name(), args);
        let concerns = concerns::write_concerns(&self.ctx, &written);
        let persistent = persistent_write(tool.name(), args);
        let paths = || {
            let mut paths = written.clone();
            paths.sort();
            paths.dedup();
            paths
        };
        match self.mode {
            ApprovalMode::ReadOnly => return Requirement::Deny(plan_mode_write(tool, &paths())),
            ApprovalMode::Suggest if persistent.is_none() && concerns.is_empty() => {
                let paths = paths();
                let shown = if paths.is_empty() {
                    tool.name().to_string()
                } else {
                    format!("{} {}", tool.name(), paths.join(", "))
                };
                let request = ApprovalRequest {
                    tool: tool.name().to_string(),
                    summary: shown,
                    reason: "Approval mode suggest asks before every file write.".into(),
                    can_persist: false,
                    ..Default::default()
                };
                let session = if paths.is_empty() {
                    ApprovalKey::exact(tool.name(), args)
                } else {
                    ApprovalKey::write(&paths)
                };
                return self.by_mode(
                    tool,
                    request,
                    session,
                    ApprovalKey::exact(tool.name(), args),
                    None,
                );
            }
            _ => {}
        }
        if persistent.is_none() && concerns.is_empty() {
            return Requirement::Auto { concurrent: false };
        }
        let (summary, mut reasons) = match persistent {
            Some((summary, reason)) => (summary, vec![reason.trim_end_matches('.').to_string()]),
            None => {
                let mut paths: Vec<&str> = concerns.iter().map(Concern::path).collect();
                paths.dedup();
                (format!("{} {}", tool.name(), paths.join(", ")), Vec::new())
            }
        };
        reasons.extend(concerns.iter().map(Concern::reason));
        let request = ApprovalRequest {
            tool: tool.name().to_string(),
            summary: summary.clone(),
            reason: format!("{}.", reasons.join("; ")),
            can_persist: false,
            ..Default::default()
        };
        self.by_mode(
            tool,
            request,
            if written.is_empty() {
                ApprovalKey::exact(tool.name(), args)
            } else {
                ApprovalKey::write(&written)
            },
            ApprovalKey::exact(tool.name(), args),
            None,
        )
    }

    /// The requirement for a read-only tool: it runs without asking (beside the batch's
    /// other read-only calls when it supports that), except `read_file` of a secret
    /// ([`codesmith_policy::secret_file`]) or of a file with other hard links.
    ///
    /// Reading a hard-linked file asks rather than checking where its other names are:
    /// finding them means searching every file system for the inode, and a link the model
    /// made (`cp -l ~/.bashrc notes.txt`) is exactly one that leads outside the workspace.
    /// A repository rarely holds hard links (git never makes them), so the question is
    /// rare. `never` refuses both; `auto` runs them, the secret's values masked by the
    /// tool since nobody approved the read ([`codesmith_tools::ToolContext::person_approved`]).
    /// `grep_files` never asks: it withholds such files itself.
    pub(crate) fn read_requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        let auto = Requirement::Auto {
            concurrent: tool.supports_parallel(),
        };
        if tool.name() != "read_file" || self.mode == ApprovalMode::Auto {
            return auto;
        }
        let Some(path) = args.get("path").and_then(Value::as_str) else {
            return auto;
        };
        let Some(concern) = concerns::read_concern(&self.ctx, path) else {
            return auto;
        };
        let request = ApprovalRequest {
            tool: tool.name().to_string(),
            summary: format!("{} {}", tool.name(), concern.path()),
            reason: format!("{}.", concern.reason()),
            can_persist: false,
            ..Default::default()
        };
        let key = ApprovalKey::Read {
            path: concern.path().to_string(),
        };
        if self.mode == ApprovalMode::ReadOnly {
            // Planning reads: a secret asks as in `suggest`.
            return Requirement::Ask {
                request,
                session: key.clone(),
                denial: key,
                grant: None,
                level: SafetyLevel::Ask,
                network: false,
                way_out: None,
            };
        }
        self.by_mode(tool, request, key.clone(), key, None)
    }

    /// The requirement for an MCP tool that is not trusted read-only: `auto` runs it,
    /// `never` refuses it, `suggest` asks. A session approval covers the tool (any
    /// arguments); a denial covers the exact call; "always" stores a grant for this one
    /// tool of this one server (any arguments), which later sessions in this workspace
    /// find in the store.
    pub(crate) fn mcp_requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        let name = tool.name();
        let grant = ApprovalKey::mcp(&tool.origin());
        let request = ApprovalRequest {
            tool: name.to_string(),
            summary: format!("{name} {args}"),
            reason: super::gate::mcp_reason(tool.mcp_trust()),
            can_persist: grant.is_some(),
            ..Default::default()
        };
        let session = grant.clone().unwrap_or_else(|| ApprovalKey::Tool {
            tool: name.to_string(),
        });
        self.by_mode(
            tool,
            request,
            session,
            ApprovalKey::exact(name, args),
            grant,
        )
    }
}

/// The refusal of a file write in `read-only` (plan) mode.
fn plan_mode_write(tool: &dyn Tool, paths: &[String]) -> Refusal {
    let what = if paths.is_empty() {
        String::new()
    } else {
        format!(" {}", paths.join(", "))
    };
    Refusal::new(
        ErrorCode::Denied,
        format!(
            "`{}`{what} was not run: approval mode is read-only (plan mode), which refuses every \
             file write.",
            tool.name()
        ),
        "You are planning: do not retry the write and do not work around it with another tool. \
         Put the change into your plan (update_plan) and present the plan; the user accepts it \
         by switching to `auto-edit` or `auto` (Shift-Tab, `/approval auto-edit`, or \
         `--approval auto-edit`).",
    )
    .with("approval_mode", ApprovalMode::ReadOnly.as_str())
    .with("tool", tool.name())
}

/// The approval request for fetching `url` from `host`, which the network policy says to
/// ask about.
fn fetch_request(tool: &dyn Tool, url: &str, host: &str) -> ApprovalRequest {
    ApprovalRequest {
        tool: tool.name().to_string(),
        summary: format!("fetch {url}"),
        reason: format!("The network policy asks before contacting {host}."),
        can_persist: true,
        ..Default::default()
    }
}

impl Runtime {
    /// The requirement for a tool that runs code given as `code` (the `rlm_exec` REPL):
    /// `auto` runs it, `suggest` asks (approving it for the session covers the tool's
    /// later rounds), `never` refuses. It is never persisted: code differs every round.
    pub(crate) fn code_requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        let name = tool.name();
        let code = args.get("code").and_then(Value::as_str).unwrap_or_default();
        let request = ApprovalRequest {
            tool: name.to_string(),
            summary: format!("{name}: {}", code.trim()),
            reason: "It runs Python code in the RLM session's REPL (in the shell's sandbox, without network)."
                .into(),
            can_persist: false,
            ..Default::default()
        };
        self.by_mode(
            tool,
            request,
            ApprovalKey::Tool {
                tool: name.to_string(),
            },
            ApprovalKey::exact(name, args),
            None,
        )
    }
}

impl Runtime {
    /// The requirement for typing into an interactive session (`pty_send`): what the
    /// input does is up to the program reading it, so the approval mode decides as for
    /// code (`auto` runs, `suggest` asks, `never` refuses). An approval covers the same
    /// input to the same session only; a call that types nothing is a read.
    pub(crate) fn terminal_input_requirement(&self, tool: &dyn Tool, args: &Value) -> Requirement {
        let input = match codesmith_tools::shell::terminal_input(args) {
            Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            // Nothing typed, or input the tool itself refuses: nothing reaches the program.
            Ok(None) | Err(_) => return Requirement::Auto { concurrent: false },
        };
        let id = args.get("id").and_then(Value::as_str).unwrap_or("?");
        let name = tool.name();
        let shown = codesmith_policy::visible_controls(&input).into_owned();
        let request = ApprovalRequest {
            tool: name.to_string(),
            summary: format!("{name} {id}: {shown}"),
            reason: "It types into an interactive program, which decides what the input does."
                .into(),
            can_persist: false,
            ..Default::default()
        };
        let key = ApprovalKey::exact(name, args);
        // The session may run a shell: what it runs passes the command policy as a
        // command would, so a deny rule or a hard refusal is never skipped by typing.
        // A shell joins lines (a `\` continuation, an open quote, a here-document, a line
        // ending in `|`) across calls too, so the typed text is judged after what earlier
        // input left open, as the units the shell runs. What the policy cannot judge (an
        // open command, editing keys, control characters) or would ask about asks even in
        // `auto`.
        let (command, before) = self
            .ctx
            .shell
            .ptys
            .typed_line(id)
            .unwrap_or_else(|| (String::new(), codesmith_tools::shell::TypedLine::Clear));
        let judged = if codesmith_tools::shell::reads_shell_commands(&command) {
            self.typed_shell_input(&before, args)
        } else {
            self.typed_program_input(args)
        };
        let why = match judged {
            Err((line, eval)) => {
                return Requirement::Deny(
                    Refusal::new(
                        ErrorCode::Denied,
                        format!(
                            "The command policy refused a command typed into the session: {}.",
                            eval.reason.trim_end_matches('.')
                        ),
                        "Do not retry it or type it another way to get around the policy. \
                         Use a safer command that does only what the task needs, or explain \
                         to the user why it is needed.",
                    )
                    .with("level", eval.level.as_str())
                    .with("tool", name)
                    .with("line", line),
                );
            }
            Ok(why) => why,
        };
        let mut request = request;
        if let Some(why) = &why {
            request.reason = format!(
                "It types into an interactive program, and the command policy cannot judge \
                 this input as complete commands it allows: {why}."
            );
        }
        if why.is_some() && self.mode == ApprovalMode::Auto {
            return Requirement::Ask {
                request,
                session: key.clone(),
                denial: key,
                grant: None,
                level: SafetyLevel::Ask,
                network: false,
                way_out: Some(
                    "approve it in an interactive session, or type input the exec policy can \
                     judge: whole lines ending in a line break that name their programs \
                     (start a shell as `bash --norc --noprofile -i`)"
                        .to_string(),
                ),
            };
        }
        self.by_mode(tool, request, key.clone(), key, None)
    }
}

/// What a refusal offers when the command was asked about only because deny rules exist
/// that the exec policy cannot show do not apply to it.
const DENY_UNCHECKED_WAY_OUT: &str = "a deny rule in the exec policy cannot be checked against \
    this command as written: write it so the policy can read it (name each program plainly, \
    no aliases, variables or wrappers around it), or approve it in an interactive session; \
    `--approval auto` and allow rules do not lift this";

impl Runtime {
    /// Judges input typed into a session that reads shell commands: the complete commands
    /// it finishes (after what earlier input left open) as one script. `Err` carries a
    /// refused command; `Ok(Some(why))` says why it asks (an open command, input not
    /// followed, a command the policy asks about).
    fn typed_shell_input(
        &self,
        before: &codesmith_tools::shell::TypedLine,
        args: &Value,
    ) -> Result<Option<Cow<'static, str>>, (String, codesmith_policy::Evaluation)> {
        use codesmith_tools::shell::TypedLine;
        let workspace = self.ctx.workspace.to_string_lossy();
        let typing = codesmith_tools::shell::typing(before, args);
        let mut why = None;
        if !typing.commands.is_empty() {
            let eval =
                codesmith_policy::decide(&typing.commands, &workspace, &self.rules, self.mode);
            match eval.decision {
                Decision::Allow => {}
                Decision::Ask => {
                    why = Some(Cow::Owned(format!(
                        "the command policy asks about the command ({})",
                        eval.reason.trim_end_matches('.')
                    )));
                }
                Decision::Deny => return Err((typing.commands, eval)),
            }
        }
        match (before, typing.after) {
            (_, TypedLine::Clear) => {}
            (_, TypedLine::Open { why: open, .. }) => why = Some(Cow::Borrowed(open)),
            (TypedLine::Lost(_), TypedLine::Lost(lost))
                if lost != "the session is busy in another call" =>
            {
                why = Some(Cow::Borrowed(
                    "earlier input left the shell's line in a state the command policy \
                     cannot follow; send ctrl-c to clear it",
                ));
            }
            (_, TypedLine::Lost(lost)) => why = Some(Cow::Borrowed(lost)),
        }
        Ok(why)
    }

    /// Judges input typed into a known interpreter or REPL, line by line (its language is
    /// not shell, but a line may still be one).
    fn typed_program_input(
        &self,
        args: &Value,
    ) -> Result<Option<Cow<'static, str>>, (String, codesmith_policy::Evaluation)> {
        let workspace = self.ctx.workspace.to_string_lossy();
        let Some(lines) = typed_lines(args) else {
            return Ok(Some(Cow::Borrowed(
                "a partial line, editing keys or control characters",
            )));
        };
        let mut why = None;
        for line in lines {
            let mut eval = codesmith_policy::decide(&line, &workspace, &self.rules, self.mode);
            // A REPL line is not shell: a deny rule has no program to read in it (and what
            // an interpreter starts is not read anywhere), so only an exact match refuses.
            if eval.deny_unchecked {
                eval = codesmith_policy::decide(
                    &line,
                    &workspace,
                    &self.rules.without_deny(),
                    self.mode,
                );
            }
            match eval.decision {
                Decision::Allow => {}
                Decision::Ask => {
                    why = Some(Cow::Owned(format!(
                        "the command policy asks about a line ({})",
                        eval.reason.trim_end_matches('.')
                    )));
                }
                Decision::Deny => return Err((line, eval)),
            }
        }
        Ok(why)
    }
}

/// The complete lines `pty_send` types, each as the command a shell would read, or `None`
/// when the input cannot be judged as commands: keys other than `ctrl-c` and `ctrl-d`
/// (neither submits a line), a line with a
/// control character (editing, completion, escape sequences) or text that does not end
/// with a line break (it would join whatever is typed next).
fn typed_lines(args: &Value) -> Option<Vec<String>> {
    match args.get("keys") {
        None | Some(Value::Null) => {}
        Some(Value::Array(keys))
            if keys
                .iter()
                .all(|k| matches!(k.as_str(), Some("ctrl-c" | "ctrl-d"))) => {}
        Some(_) => return None,
    }
    let text = match args.get("text") {
        None | Some(Value::Null) => "",
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return None,
    };
    if text.is_empty() {
        return Some(Vec::new());
    }
    if !text.ends_with(['\n', '\r']) {
        return None;
    }
    let mut lines = Vec::new();
    for line in text.split(['\n', '\r']) {
        if line.chars().any(char::is_control) {
            return None;
        }
        if !line.trim().is_empty() {
            lines.push(line.to_string());
        }
    }
    Some(lines)
}

/// What a file-writing call changes beyond this session, as (summary, reason), or `None`
/// for an ordinary workspace write. Unreadable arguments are left to the tool's own
/// validation, except a `remember` scope, which defaults to the user's memory.
fn persistent_write(tool: &str, args: &Value) -> Option<(String, String)> {
    if tool == "remember" {
        let scope = args.get("scope").and_then(Value::as_str).unwrap_or("user");
        if scope == "project" {
            return None;
        }
        let fact = args.get("fact").and_then(Value::as_str).unwrap_or("");
        return Some((
            format!("remember (user memory): {fact}"),
            "User memory is read by every later session in every workspace.".to_string(),
        ));
    }
    let paths: Vec<&str> = match tool {
        "write_file" | "edit_file" | "fim_edit" => args
            .get("path")
            .and_then(Value::as_str)
            .into_iter()
            .collect(),
        "apply_patch" => args
            .get("patch")
            .and_then(Value::as_str)
            .map(patch_paths)
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let hit = paths.into_iter().find(|p| is_instruction_file(p))?;
    Some((
        format!("{tool} {hit}"),
        format!("{hit} holds instructions every later session of this project follows."),
    ))
}

/// The paths named in a patch's header lines (envelope and unified forms), as written.
fn patch_paths(patch: &str) -> Vec<&str> {
    const HEADERS: [&str; 6] = [
        "*** Add File:",
        "*** Update File:",
        "*** Delete File:",
        "*** Move to:",
        "--- ",
        "+++ ",
    ];
    patch
        .lines()
        .filter_map(|line| {
            HEADERS
                .iter()
                .find_map(|h| line.strip_prefix(h))
                .map(str::trim)
        })
        .collect()
}

/// True when `path` names an instruction file: the one judgement the shell's writes use
/// too ([`codesmith_policy::is_instruction_file`]).
fn is_instruction_file(path: &str) -> bool {
    codesmith_policy::is_instruction_file(path)
}

/// The most directory entries [`TurnFacts`] walks to check that a directory's
/// whole content is in the snapshot; a larger tree counts as not held.
const MAX_HELD_WALK: usize = 10_000;

/// What the command classifier may know during a turn: the real file system
/// (symlinks followed, `$HOME`), plus which paths the task's snapshot holds, so
/// that deleting them can be undone with `sessions restore`, and whether the
/// command runs isolated with a private `/tmp`.
struct TurnFacts<'a> {
    system: codesmith_policy::SystemPaths,
    /// The workspace as given and as the kernel resolves it.
    roots: [PathBuf; 2],
    held: &'a HashSet<String>,
    /// True when the session's sandbox isolates commands, each with a private `/tmp`.
    private_tmp: bool,
}

impl<'a> TurnFacts<'a> {
    fn new(workspace: &Path, held: &'a HashSet<String>, private_tmp: bool) -> Self {
        let canonical =
            std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        TurnFacts {
            system: codesmith_policy::SystemPaths::new(),
            roots: [workspace.to_path_buf(), canonical],
            held,
            private_tmp,
        }
    }
}

impl codesmith_policy::PathFacts for TurnFacts<'_> {
    fn resolve(&self, path: &str) -> String {
        self.system.resolve(path)
    }

    fn home(&self) -> Option<&str> {
        self.system.home()
    }

    fn exists(&self, path: &str) -> Option<bool> {
        self.system.exists(path)
    }

    fn probe(&self, path: &str) -> codesmith_policy::FileProbe {
        self.system.probe(path)
    }

    fn private_tmp(&self) -> bool {
        self.private_tmp
    }

    /// Held when the path is inside the workspace (not the root itself), the
    /// snapshot lists it, and, for a directory, every file below it is listed too
    /// (at most [`MAX_HELD_WALK`] entries). Outside the workspace: unknown.
    fn snapshot_holds(&self, path: &str) -> Option<bool> {
        let abs = Path::new(path);
        let rel = self
            .roots
            .iter()
            .find_map(|root| abs.strip_prefix(root).ok())?;
        let rel = rel.to_str()?.trim_end_matches('/');
        if rel.is_empty() {
            return None;
        }
        if !self.held.contains(rel) {
            return Some(false);
        }
        Some(all_held_below(abs, rel, self.held))
    }

    /// Every name in `dir` (inside the workspace, the root included) that `pattern`
    /// matches ([`codesmith_policy::file_glob_matches`]) must be held, as
    /// [`Self::snapshot_holds`] judges it; at most [`MAX_HELD_WALK`] entries are read, and
    /// an unreadable directory, a non-UTF-8 name or a pattern matching nothing answers
    /// unknown.
    fn glob_held(&self, dir: &str, pattern: &str) -> Option<bool> {
        let abs = Path::new(dir);
        self.roots.iter().find(|root| abs.starts_with(root))?;
        let entries = std::fs::read_dir(abs).ok()?;
        let mut matched = false;
        for (seen, entry) in entries.enumerate() {
            if seen >= MAX_HELD_WALK {
                return None;
            }
            let name = entry.ok()?.file_name();
            let name = name.to_str()?;
            if !codesmith_policy::file_glob_matches(pattern, name) {
                continue;
            }
            matched = true;
            let path = format!("{}/{name}", dir.trim_end_matches('/'));
            if self.snapshot_holds(&path) != Some(true) {
                return Some(false);
            }
        }
        // A pattern that matches nothing is passed to the command as written: what it
        // names then is not known here.
        matched.then_some(true)
    }
}

/// True when `abs` is not a directory, or every file (and symlink) below it is in
/// `held`. Empty directories do not count: git keeps none, and restoring loses none
/// of the user's content. Anything unreadable, a non-UTF-8 name or a tree larger
/// than [`MAX_HELD_WALK`] entries answers false.
fn all_held_below(abs: &Path, rel: &str, held: &HashSet<String>) -> bool {
    match std::fs::symlink_metadata(abs) {
        Ok(meta) if meta.is_dir() => {}
        _ => return true,
    }
    let mut stack = vec![(abs.to_path_buf(), rel.to_string())];
    let mut seen = 0usize;
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return false;
        };
        for entry in entries {
            seen += 1;
            let Ok(entry) = entry else { return false };
            let (Some(name), Ok(kind)) = (
                entry.file_name().to_str().map(str::to_string),
                entry.file_type(),
            ) else {
                return false;
            };
            if seen > MAX_HELD_WALK {
                return false;
            }
            let child = format!("{rel}/{name}");
            if kind.is_dir() {
                stack.push((entry.path(), child));
            } else if !held.contains(&child) {
                return false;
            }
        }
    }
    true
}

/// Programs that move the session's working directory, which the next call inherits:
/// their order matters, so a command running one never runs beside another.
const MOVES_CWD: &[&str] = &["cd", "pushd", "popd"];

/// True when the exec policy parsed every part of the command, judged it `safe` (it
/// only reads or prints) and no part changes directory: such a foreground command may
/// run beside other read-only calls. Anything else (a write, an unknown program, an
/// unparsed line) runs alone, in call order.
fn reads_only(eval: &codesmith_policy::Evaluation) -> bool {
    eval.parsed
        && eval.level == codesmith_policy::SafetyLevel::Safe
        && !eval.segments.is_empty()
        && eval.segments.iter().all(|s| {
            s.argv
                .first()
                .is_some_and(|program| !MOVES_CWD.contains(&program.as_str()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn persistent_writes_are_recognised() {
        assert!(persistent_write("remember", &json!({"fact": "x"})).is_some());
        assert!(persistent_write("remember", &json!({"fact": "x", "scope": "user"})).is_some());
        assert!(persistent_write("remember", &json!({"fact": "x", "scope": "project"})).is_none());
        assert!(persistent_write("write_file", &json!({"path": "AGENTS.md"})).is_some());
        assert!(persistent_write("edit_file", &json!({"path": "./docs/claude.md"})).is_some());
        assert!(persistent_write("write_file", &json!({"path": "src/agents.rs"})).is_none());
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: b.rs\n*** Move to: AGENTS.md\n*** End Patch\n";
        assert!(persistent_write("apply_patch", &json!({"patch": patch})).is_some());
        let diff = "--- a/CLAUDE.md\t2020-01-01\n+++ b/CLAUDE.md\n@@ -1 +1 @@\n-a\n+b\n";
        assert!(persistent_write("apply_patch", &json!({"patch": diff})).is_some());
        let plain =
            "*** Begin Patch\n*** Add File: notes.md\n+AGENTS.md is mentioned\n*** End Patch\n";
        assert!(persistent_write("apply_patch", &json!({"patch": plain})).is_none());
    }
}
