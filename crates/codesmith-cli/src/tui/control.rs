//! What slash commands do: shared by the full-screen UI and line mode.

use codesmith_engine::session::sessions_dir;
use codesmith_engine::verify::ledger::read_stats;
use codesmith_tools::memory::{INDEX_FILE, project_memory_dir, user_memory_dir};
use futures::future::BoxFuture;

use super::app::VerdictCounts;
use codesmith_policy::ApprovalMode;
use codesmith_protocol::Op;

use super::driver::{Rebuild, SessionChoice};
use super::slash::{self, Slash};
use crate::args::{DoctorArgs, WorkspaceArg};
use crate::config::Settings;
use crate::setup;

/// What a slash command asks of the UI.
pub(crate) enum Reply {
    /// Show these lines.
    Lines(Vec<String>),
    /// Rebuild the engine (the UI shows the result when it arrives); lines to show first.
    Rebuild(Rebuild, Vec<String>),
    /// Leave.
    Quit,
    /// Send this op to the engine (its closing event reports it).
    Submit(Op),
    /// Show the lines this future produces when it is done.
    Later(BoxFuture<'static, Vec<String>>),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Lines(l) => f.debug_tuple("Lines").field(l).finish(),
            Reply::Rebuild(r, l) => f.debug_tuple("Rebuild").field(r).field(l).finish(),
            Reply::Quit => f.write_str("Quit"),
            Reply::Submit(s) => f.debug_tuple("Submit").field(s).finish(),
            Reply::Later(_) => f.write_str("Later(..)"),
        }
    }
}

/// Facts about the session that slash commands report.
#[derive(Debug, Clone)]
pub(crate) struct Facts<'a> {
    /// The resolved configuration (as started).
    pub resolved: &'a Settings,
    /// Model now in use.
    pub model: &'a str,
    /// Approval mode now in use.
    pub approval: &'a str,
    /// Session id now in use.
    pub session_id: &'a str,
    /// Verdicts seen in this UI.
    pub verdicts: VerdictCounts,
    /// True while a task runs.
    pub running: bool,
    /// The session's trusted read directories (shared with the engines' tool context).
    pub trusted: &'a codesmith_tools::fs::trusted::TrustedReads,
    /// What `/help` says about the MCP servers' prompts as they are now (empty when none
    /// offers any).
    pub mcp_prompts: Vec<String>,
}

/// Runs `cmd`.
pub(crate) fn run(cmd: Slash, facts: &Facts<'_>) -> Reply {
    let busy = || {
        Reply::Lines(vec![
            "the engine is busy: wait for it to finish or press Ctrl-C, then try again".to_string(),
        ])
    };
    match cmd {
        Slash::Help => {
            let mut lines = slash::help_lines();
            let custom = facts.resolved.commands.help_lines();
            if !custom.is_empty() {
                lines.push("Custom commands (commands/NAME.md):".to_string());
                lines.extend(custom);
            }
            lines.extend(facts.mcp_prompts.iter().cloned());
            Reply::Lines(lines)
        }
        Slash::Quit => Reply::Quit,
        Slash::Model(None) => Reply::Lines(vec![format!(
            "model: {} ({}); switch with /model NAME",
            facts.model,
            setup::provider_label(facts.resolved.provider)
        )]),
        cmd if facts.running && waits_for_idle(&cmd) => busy(),
        Slash::Model(Some(_)) if facts.resolved.provider == crate::args::ProviderName::Local => {
            Reply::Lines(vec![
                "the embedded model cannot be switched inside a session: restart with --model PATH.gguf"
                    .to_string(),
            ])
        }
        Slash::Model(Some(name)) => Reply::Rebuild(
            Rebuild {
                model: Some(name),
                approval: None,
                session: SessionChoice::Keep,
            },
            Vec::new(),
        ),
        Slash::Approval(None) => Reply::Lines(vec![format!(
            "approval mode: {}; switch with /approval read-only|suggest|auto-edit|auto|never \
             (or Shift-Tab)",
            facts.approval
        )]),
        Slash::Approval(Some(name)) => match name.parse::<codesmith_policy::ApprovalMode>() {
            Ok(mode) => Reply::Rebuild(
                Rebuild {
                    model: None,
                    approval: Some(mode),
                    session: SessionChoice::Keep,
                },
                Vec::new(),
            ),
            Err(e) => Reply::Lines(vec![e.to_string()]),
        },
        Slash::Approvals(arg) => Reply::Lines(grants(facts, arg.as_deref())),
        Slash::Accept(_) if facts.approval != ApprovalMode::ReadOnly.as_str() => {
            Reply::Lines(vec![
                "nothing to accept: plan in read-only mode first (Shift-Tab or /approval read-only)"
                    .to_string(),
            ])
        }
        Slash::Accept(arg) => {
            let mode = match arg.as_deref().map(str::trim) {
                None | Some("") | Some("auto-edit") => ApprovalMode::AutoEdit,
                Some("auto") => ApprovalMode::Auto,
                Some(other) => {
                    return Reply::Lines(vec![format!(
                        "usage: /accept [auto] (not {other:?}): the plan runs in auto-edit or auto"
                    )]);
                }
            };
            Reply::Rebuild(
                Rebuild {
                    model: None,
                    approval: Some(mode),
                    session: SessionChoice::Keep,
                },
                vec![format!(
                    "plan accepted: approval {mode}; the work starts with the plan's steps"
                )],
            )
        }
        Slash::Clear => Reply::Rebuild(
            Rebuild {
                model: None,
                approval: None,
                session: SessionChoice::New,
            },
            vec![
                if sessions_dir(&facts.resolved.home)
                    .join(format!("{}.jsonl", facts.session_id))
                    .is_file()
                {
                    format!(
                        "started a new session; the previous one is kept: /resume {}",
                        facts.session_id
                    )
                } else {
                    "started a new session".to_string()
                },
            ],
        ),
        Slash::Resume(None) => Reply::Lines(vec![
            "usage: /resume ID (see /sessions for the ids)".to_string(),
        ]),
        Slash::Resume(Some(id)) => Reply::Rebuild(
            Rebuild {
                model: None,
                approval: None,
                session: SessionChoice::Open(id),
            },
            Vec::new(),
        ),
        Slash::Sessions => Reply::Lines(sessions(facts)),
        Slash::Verify => Reply::Lines(verify(facts)),
        Slash::Doctor => doctor(facts),
        Slash::Compact => Reply::Submit(Op::Compact),
        Slash::Restore(arg) => restore(arg.as_deref()),
        Slash::Memory => Reply::Lines(memory(facts.resolved)),
        Slash::Trust(arg) => Reply::Lines(trust(facts, arg.as_deref())),
        Slash::Skills(arg) => Reply::Lines(crate::commands::skills::slash(
            &facts.resolved.home,
            &facts.resolved.workspace,
            arg.as_deref(),
        )),
    }
}

/// `/trust` lists the directories outside the workspace the file tools may read;
/// `/trust add PATH` adds one for the rest of this UI run (reading only: writing there
/// stays refused; `[trust] read` in config.toml keeps it for later runs).
fn trust(facts: &Facts<'_>, arg: Option<&str>) -> Vec<String> {
    match arg.map(str::trim) {
        None => {
            let roots = facts.trusted.roots();
            if roots.is_empty() {
                vec![
                    "no directories outside the workspace are trusted for reading; add one with \
                     /trust add PATH"
                        .to_string(),
                ]
            } else {
                roots
                    .iter()
                    .map(|r| format!("trusted for reading: {}", r.display()))
                    .collect()
            }
        }
        Some(rest) => {
            let Some(path) = rest.strip_prefix("add ").map(str::trim) else {
                return vec!["usage: /trust, or /trust add PATH (an absolute directory)".into()];
            };
            let path = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
                (Some(tail), Some(home)) => std::path::PathBuf::from(home).join(tail),
                _ => std::path::PathBuf::from(path),
            };
            match facts.trusted.add(&path, &facts.resolved.home) {
                Ok(dir) => vec![format!(
                    "file tools and shell commands may now read {} (writing there stays refused); \
                     add it to [trust] read in config.toml to keep it",
                    dir.display()
                )],
                Err(why) => vec![format!("not trusted: {why}")],
            }
        }
    }
}

/// `/approvals` lists the workspace's saved grants; `/approvals revoke ID|--all` removes
/// them (each change is merged into the file at once, so the running session's next
/// question already asks).
fn grants(facts: &Facts<'_>, arg: Option<&str>) -> Vec<String> {
    let (home, ws) = (&facts.resolved.home, &facts.resolved.workspace);
    let Some(arg) = arg else {
        return crate::commands::approvals::lines(home, ws);
    };
    let target = arg.strip_prefix("revoke").map(str::trim);
    let Some(target) = target.filter(|t| !t.is_empty()) else {
        return vec!["usage: /approvals [revoke ID|--all]".to_string()];
    };
    let store = codesmith_engine::approval::ApprovalStore::open(home);
    let chosen: Vec<_> = store
        .listed(ws)
        .into_iter()
        .filter(|g| target == "--all" || g.id == target)
        .collect();
    if chosen.is_empty() {
        return vec![format!(
            "no saved grant has the id {target:?}: /approvals lists them"
        )];
    }
    chosen
        .iter()
        .map(|g| match store.revoke(ws, &g.key) {
            Ok(()) => format!(
                "revoked {}  {}",
                g.id,
                codesmith_policy::terminal_safe(&g.key.describe())
            ),
            Err(e) => format!("could not revoke {}: {e}", g.id),
        })
        .collect()
}

/// `/restore N` previews; `/restore N yes` applies.
/// True for a command refused while a task runs: it rebuilds the engine, or starts
/// engine work that would run only after the task (a `/restore N yes` then would apply
/// what a preview taken before the task's last writes showed).
fn waits_for_idle(cmd: &Slash) -> bool {
    matches!(
        cmd,
        Slash::Model(Some(_))
            | Slash::Approval(Some(_))
            | Slash::Accept(_)
            | Slash::Clear
            | Slash::Resume(Some(_))
            | Slash::Compact
            | Slash::Restore(Some(_))
    )
}

fn restore(arg: Option<&str>) -> Reply {
    let mut words = arg.unwrap_or_default().split_whitespace();
    let task = words.next().and_then(|w| w.parse::<u32>().ok());
    let apply = words.next().is_some_and(|w| w == "yes" || w == "y");
    match task {
        Some(task) if task > 0 => Reply::Submit(Op::Restore { task, apply }),
        _ => Reply::Lines(vec![
            "usage: /restore N (N = the task to go back before; previews, then /restore N yes applies)"
                .to_string(),
        ]),
    }
}

/// The two memory indexes (user and project), each up to 15 lines.
fn memory(r: &Settings) -> Vec<String> {
    let mut lines = Vec::new();
    for (label, dir) in [
        ("user", user_memory_dir(&r.home)),
        ("project", project_memory_dir(&r.workspace)),
    ] {
        let path = dir.join(INDEX_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                lines.push(format!("{label} memory ({}):", path.display()));
                lines.extend(text.lines().take(15).map(|l| format!("  {l}")));
                let more = text.lines().count().saturating_sub(15);
                if more > 0 {
                    lines.push(format!("  … {more} more lines"));
                }
            }
            Err(_) => lines.push(format!("{label} memory: none ({})", path.display())),
        }
    }
    lines.push("tidy it with `codesmith memory consolidate`".to_string());
    lines
}

fn verify(f: &Facts<'_>) -> Vec<String> {
    let v = f.verdicts;
    let mut lines = vec![
        "claim-verifier verdicts in this UI:".to_string(),
        format!(
            "  verified_pass {}  verified_fail {}  verify_error {}  unsubstantiated {}",
            v.pass, v.fail, v.error, v.unsubstantiated
        ),
    ];
    match read_stats(&f.resolved.home) {
        Ok(stats) => {
            lines.push("all sessions (the verdict ledger):".to_string());
            lines.extend(
                crate::commands::verify::stats_text(&stats)
                    .lines()
                    .map(|l| format!("  {l}")),
            );
        }
        Err(e) => lines.push(format!("cannot read the verdict ledger: {e}")),
    }
    lines
}

fn doctor(f: &Facts<'_>) -> Reply {
    let args = DoctorArgs {
        workspace: WorkspaceArg {
            workspace: Some(f.resolved.workspace.clone()),
        },
        json: false,
        analyze: false,
    };
    // The session's own settings: the sources show the origins its flags gave them.
    let resolved = f.resolved.clone();
    Reply::Later(Box::pin(async move {
        let findings = crate::commands::doctor::collect_with(&args, Some(resolved)).await;
        let mut lines = vec!["doctor:".to_string()];
        lines.extend(
            crate::commands::doctor::report::to_text(&findings)
                .lines()
                .map(str::to_string),
        );
        lines
    }))
}

/// Sessions a person started in this workspace, newest first: `id  created  provider/model`, then what
/// `sessions list` would say about files it could not read or sessions it found damaged.
fn sessions(f: &Facts<'_>) -> Vec<String> {
    let mut listing = crate::commands::sessions::listing(&f.resolved.home);
    let want = f.resolved.workspace.display().to_string();
    // Subagents' sessions are reached through their parents, as `--continue` does.
    listing
        .sessions
        .retain(|s| s.workspace == want && s.is_foreground());
    // A session is written with its first message; until then it is listed from memory.
    let current_saved = listing.sessions.iter().any(|s| s.id == f.session_id);
    let mut lines = if listing.sessions.is_empty() {
        vec!["no saved sessions in this workspace yet".to_string()]
    } else {
        vec!["sessions (newest first; /resume ID):".to_string()]
    };
    if !current_saved {
        lines.push(format!(
            "  {}  (not saved until its first message)  {}/{} ← current",
            f.session_id,
            setup::provider_label(f.resolved.provider),
            f.model
        ));
    }
    for s in listing.sessions.iter().take(15) {
        let here = if s.id == f.session_id {
            " ← current"
        } else {
            ""
        };
        lines.push(format!("  {}  {}  {}{here}", s.id, s.created, s.model));
    }
    let dir = sessions_dir(&f.resolved.home);
    lines.extend(crate::commands::sessions::notices(&listing, &dir));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_that_start_engine_work_wait_for_the_running_task() {
        for cmd in [
            Slash::Compact,
            Slash::Restore(Some("1 yes".into())),
            Slash::Restore(Some("2".into())),
            Slash::Model(Some("m".into())),
            Slash::Clear,
        ] {
            assert!(waits_for_idle(&cmd), "{cmd:?}");
        }
        for cmd in [
            Slash::Help,
            Slash::Quit,
            Slash::Restore(None),
            Slash::Model(None),
        ] {
            assert!(!waits_for_idle(&cmd), "{cmd:?}");
        }
    }
}
