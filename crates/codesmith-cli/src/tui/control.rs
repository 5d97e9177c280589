//! What slash commands do: shared by the full-screen UI and line mode.

use std::path::Path;

use codesmith_engine::session::{Record, sessions_dir};

use super::app::VerdictCounts;
use super::driver::{Rebuild, SessionChoice};
use super::slash::{self, Slash};
use crate::config::{self, Resolved};
use crate::setup;

/// What a slash command asks of the UI.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Show these lines.
    Lines(Vec<String>),
    /// Rebuild the engine (the UI shows the result when it arrives); lines to show first.
    Rebuild(Rebuild, Vec<String>),
    /// Leave.
    Quit,
}

/// Facts about the session that slash commands report.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    /// The resolved configuration (as started).
    pub resolved: &'a Resolved,
    /// Model now in use.
    pub model: &'a str,
    /// Approval mode now in use.
    pub approval: &'a str,
    /// Session id now in use.
    pub session_id: &'a str,
    /// Sandbox backend name and whether it isolates.
    pub sandbox: (&'a str, bool),
    /// Verdicts seen in this UI.
    pub verdicts: VerdictCounts,
    /// True while a task runs.
    pub running: bool,
}

/// Runs `cmd`.
pub fn run(cmd: Slash, facts: &Facts<'_>) -> Reply {
    let busy = || {
        Reply::Lines(vec![
            "a turn is running: wait for it to end or press Ctrl-C, then try again".to_string(),
        ])
    };
    match cmd {
        Slash::Help => Reply::Lines(slash::help_lines()),
        Slash::Quit => Reply::Quit,
        Slash::Model(None) => Reply::Lines(vec![format!(
            "model: {} ({}); switch with /model NAME",
            facts.model,
            setup::provider_label(facts.resolved.provider)
        )]),
        Slash::Model(Some(_))
        | Slash::Approval(Some(_))
        | Slash::Clear
        | Slash::Resume(Some(_))
            if facts.running =>
        {
            busy()
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
            "approval mode: {}; switch with /approval auto|suggest|never",
            facts.approval
        )]),
        Slash::Approval(Some(name)) => match config::parse_approval(&name) {
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
        Slash::Clear => Reply::Rebuild(
            Rebuild {
                model: None,
                approval: None,
                session: SessionChoice::New,
            },
            vec![format!(
                "started a new session; the previous one is kept: /resume {}",
                facts.session_id
            )],
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
        Slash::Verify => Reply::Lines(verify(facts.verdicts)),
        Slash::Doctor => Reply::Lines(doctor(facts)),
        Slash::Compact => not_yet(
            "/compact",
            "the engine compacts on its own when the context is full",
        ),
        Slash::Restore(_) => not_yet("/restore", "checkpoints are not recorded yet"),
        Slash::Memory => not_yet("/memory", "workspace memory is not built yet"),
    }
}

fn not_yet(name: &str, why: &str) -> Reply {
    Reply::Lines(vec![format!("{name} is not available yet: {why}.")])
}

fn verify(v: VerdictCounts) -> Vec<String> {
    vec![
        "claim-verifier verdicts in this UI:".to_string(),
        format!(
            "  verified_pass {}  verified_fail {}  verify_error {}  unsubstantiated {}",
            v.pass, v.fail, v.error, v.unsubstantiated
        ),
        "(a ledger across sessions is not available yet)".to_string(),
    ]
}

fn doctor(f: &Facts<'_>) -> Vec<String> {
    let r = f.resolved;
    let (backend, isolates) = f.sandbox;
    let key = match r.provider {
        crate::args::ProviderName::Local => "not needed",
        _ if r.api_key.is_some() => "set",
        _ => "MISSING",
    };
    vec![
        format!("workspace  {}", r.workspace.display()),
        format!("home       {}", r.home.display()),
        format!(
            "provider   {} · model {} · base URL {}",
            setup::provider_label(r.provider),
            f.model,
            r.base_url.as_deref().unwrap_or("default")
        ),
        format!("API key    {key}"),
        format!(
            "sandbox    {backend}{}",
            if isolates {
                " (isolates commands)"
            } else {
                ": no isolation, commands run as you"
            }
        ),
        format!("approval   {}", f.approval),
        "(the full `codesmith doctor` checks are not available yet)".to_string(),
    ]
}

/// Sessions of this workspace, newest first: `id  created  provider/model`.
fn sessions(f: &Facts<'_>) -> Vec<String> {
    let mut found = list_sessions(&f.resolved.home, &f.resolved.workspace);
    if found.is_empty() {
        return vec!["no sessions in this workspace yet".to_string()];
    }
    found.sort_by(|a, b| b.0.cmp(&a.0));
    let mut lines = vec!["sessions (newest first; /resume ID):".to_string()];
    for (id, created, model) in found.into_iter().take(15) {
        let here = if id == f.session_id {
            " ← current"
        } else {
            ""
        };
        lines.push(format!("  {id}  {created}  {model}{here}"));
    }
    lines
}

fn list_sessions(home: &Path, workspace: &Path) -> Vec<(String, String, String)> {
    let want = workspace.display().to_string();
    let Ok(dir) = std::fs::read_dir(sessions_dir(home)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let Some(first) = first_line(&path) else {
            continue;
        };
        if let Ok(Record::Meta {
            session_id,
            created_at,
            workspace,
            provider,
            model,
        }) = serde_json::from_str::<Record>(&first)
            && workspace == want
        {
            out.push((session_id, created_at, format!("{provider}/{model}")));
        }
    }
    out
}

fn first_line(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file).read_line(&mut line).ok()?;
    Some(line)
}
