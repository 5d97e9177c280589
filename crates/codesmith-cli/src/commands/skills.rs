//! `codesmith skills list|show|trust|install`: the user's side of skills. The mechanism
//! (finding, trust records, the bundle, installing) is `codesmith_tools::skills`.

use std::path::PathBuf;

use codesmith_policy::{json_terminal_safe, terminal_safe};
use codesmith_tools::skills::trust::{TrustState, TrustStore, trust_path, trust_skill};
use codesmith_tools::skills::{Skill, SkillSet, install_skill};
use serde_json::json;

use crate::args::{SkillsCommand, WorkspaceArg};
use crate::config;
use crate::exit::{Exit, usage};

/// Runs `codesmith skills ...`.
pub(crate) fn run(command: SkillsCommand) -> Exit {
    let result = match command {
        SkillsCommand::List { workspace, json } => list(&workspace, json),
        SkillsCommand::Show { name, workspace } => show(&name, &workspace),
        SkillsCommand::Trust { name, workspace } => trust(&name, &workspace),
        SkillsCommand::Install { path } => install(&path),
    };
    result.unwrap_or_else(|exit| exit)
}

/// The home, the canonical workspace and the skills found there (bundle installed first);
/// notices go to stderr.
fn found(workspace: &WorkspaceArg) -> Result<(PathBuf, PathBuf, SkillSet), Exit> {
    let home = config::home_dir().map_err(usage)?;
    let ws = config::workspace(workspace.workspace.as_deref()).map_err(usage)?;
    let mut notices = Vec::new();
    let set = config::prepare_skills(&home, &ws, true, &mut notices);
    for notice in notices {
        eprintln!("codesmith: {}", terminal_safe(&notice));
    }
    Ok((home, ws, set))
}

fn state_text(state: &TrustState) -> &'static str {
    match state {
        TrustState::User => "user",
        TrustState::Trusted => "project, trusted",
        TrustState::Untrusted => "project, untrusted",
        TrustState::Changed { .. } => "project, changed since trusted",
    }
}

fn list(workspace: &WorkspaceArg, as_json: bool) -> Result<Exit, Exit> {
    let (home, ws, set) = found(workspace)?;
    let store = TrustStore::load(&home);
    if as_json {
        let skills: Vec<_> = set
            .skills
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "description": s.description,
                    "scope": s.scope.as_str(),
                    "trust": store.state(&ws, s).as_str(),
                    "path": s.dir,
                    "sha256": s.digest,
                    "files": s.files,
                })
            })
            .collect();
        let skipped: Vec<_> = set
            .skipped
            .iter()
            .map(|(name, why)| json!({"name": name, "reason": why}))
            .collect();
        let out = json!({"skills": skills, "skipped": skipped, "notices": set.notices});
        println!("{}", json_terminal_safe(&out.to_string()));
        return Ok(Exit::Ok);
    }
    if set.skills.is_empty() {
        println!(
            "no skills (add folders with a SKILL.md under {} or .codesmith/skills/)",
            codesmith_tools::skills::user_skills_dir(&home).display()
        );
        return Ok(Exit::Ok);
    }
    let width = set.skills.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for s in &set.skills {
        let line = format!(
            "{:width$}  [{}]  {}",
            s.name,
            state_text(&store.state(&ws, s)),
            s.description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!("{}", terminal_safe(&line));
    }
    Ok(Exit::Ok)
}

fn find<'a>(set: &'a SkillSet, name: &str) -> Result<&'a Skill, Exit> {
    set.get(name).ok_or_else(|| {
        let why = set
            .skipped
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, why)| format!(" (it was skipped: {why})"))
            .unwrap_or_default();
        usage(anyhow::anyhow!(
            "no skill named {name:?}{why}; `codesmith skills list` shows the skills: {}",
            set.names().join(", ")
        ))
    })
}

fn show(name: &str, workspace: &WorkspaceArg) -> Result<Exit, Exit> {
    let (home, ws, set) = found(workspace)?;
    let found = find(&set, name)?;
    // Read once, keeping the bytes: what is shown is what the digest (and a trust) covers.
    let loaded = codesmith_tools::skills::load_skill_dir(&found.dir, found.scope, false)
        .map_err(|e| Exit::failed(anyhow::anyhow!("cannot read {}: {e}", found.dir.display())))?;
    let skill = &loaded.skill;
    let state = TrustStore::load(&home).state(&ws, skill);
    let text = String::from_utf8_lossy(
        loaded
            .file(codesmith_tools::skills::SKILL_FILE)
            .unwrap_or_default(),
    );
    let mut out = format!(
        "{} [{}] {}\nsha256 {}\n",
        skill.name,
        state_text(&state),
        skill.dir.display(),
        skill.digest
    );
    if !skill.files.is_empty() {
        out.push_str(&format!("files: {}\n", skill.files.join(", ")));
    }
    out.push('\n');
    out.push_str(&text);
    // A project skill is the repository's text: shown, never acted on.
    print!("{}", terminal_safe(&out));
    Ok(Exit::Ok)
}

fn trust(name: &str, workspace: &WorkspaceArg) -> Result<Exit, Exit> {
    let (home, ws, set) = found(workspace)?;
    let skill = find(&set, name)?;
    let state = TrustStore::load(&home).state(&ws, skill);
    match state {
        TrustState::User => {
            println!(
                "{}",
                terminal_safe(&format!(
                    "{name} is your own skill ({}): user skills are always trusted",
                    skill.dir.display()
                ))
            );
            return Ok(Exit::Ok);
        }
        TrustState::Trusted => {
            println!(
                "{}",
                terminal_safe(&format!(
                    "{name} is already trusted in {} at its current content",
                    ws.display()
                ))
            );
            return Ok(Exit::Ok);
        }
        TrustState::Untrusted | TrustState::Changed { .. } => {}
    }
    trust_skill(&home, &ws, skill).map_err(|e| {
        Exit::failed(anyhow::anyhow!(
            "cannot write {}: {e}",
            trust_path(&home).display()
        ))
    })?;
    let files = if skill.files.is_empty() {
        "SKILL.md".to_string()
    } else {
        format!("SKILL.md, {}", skill.files.join(", "))
    };
    println!(
        "{}",
        terminal_safe(&format!(
            "trusted the project skill {name} in {} at sha256 {} ({files}); any later change to \
             its files makes it untrusted again",
            ws.display(),
            &skill.digest[..12.min(skill.digest.len())]
        ))
    );
    Ok(Exit::Ok)
}

fn install(path: &std::path::Path) -> Result<Exit, Exit> {
    let home = config::home_dir().map_err(usage)?;
    match install_skill(&home, path) {
        Ok(at) => {
            println!(
                "{}",
                terminal_safe(&format!("installed the skill into {}", at.display()))
            );
            Ok(Exit::Ok)
        }
        Err(e) => Err(usage(anyhow::anyhow!("{e}"))),
    }
}

/// The UI's `/skills` (list) and `/skills trust NAME`, as lines to show.
pub(crate) fn slash(
    home: &std::path::Path,
    ws: &std::path::Path,
    arg: Option<&str>,
) -> Vec<String> {
    let set = codesmith_tools::skills::discover(home, ws);
    let store = TrustStore::load(home);
    let mut words = arg.unwrap_or_default().split_whitespace();
    let lines = match (words.next(), words.next()) {
        (None, _) => {
            let mut lines: Vec<String> = set
                .skills
                .iter()
                .map(|s| format!("{}  [{}]", s.name, state_text(&store.state(ws, s))))
                .collect();
            if lines.is_empty() {
                lines.push("no skills".to_string());
            }
            lines.extend(set.notices.iter().cloned());
            lines.push("trust a project skill with /skills trust NAME".to_string());
            lines
        }
        (Some("trust"), Some(name)) => match set.get(name) {
            None => vec![format!(
                "no skill named {name:?}; the skills are: {}",
                set.names().join(", ")
            )],
            Some(skill) => match store.state(ws, skill) {
                TrustState::User => vec![format!("{name} is your own skill: always trusted")],
                TrustState::Trusted => vec![format!("{name} is already trusted")],
                TrustState::Untrusted | TrustState::Changed { .. } => {
                    match trust_skill(home, ws, skill) {
                        Ok(()) => vec![format!(
                            "trusted the project skill {name} at its current content; a later \
                             change makes it untrusted again (takes effect at its next load)"
                        )],
                        Err(e) => vec![format!("cannot record the trust: {e}")],
                    }
                }
            },
        },
        _ => vec!["usage: /skills, or /skills trust NAME".to_string()],
    };
    lines
        .into_iter()
        .map(|l| terminal_safe(&l).into_owned())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn slash_trust_records_a_project_skill_and_refuses_unknown_names() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap().join("ws");
        let dir = ws.join(".codesmith/skills/lint");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: lint\ndescription: L.\n---\nRun it.\n",
        )
        .unwrap();
        let home = d.path().join("home");
        let listed = slash(&home, &ws, None);
        assert_eq!(listed[0], "lint  [project, untrusted]");
        let done = slash(&home, &ws, Some("trust lint"));
        assert!(
            done[0].starts_with("trusted the project skill lint"),
            "{done:?}"
        );
        assert_eq!(slash(&home, &ws, None)[0], "lint  [project, trusted]");
        let unknown = slash(&home, &ws, Some("trust lnt"));
        assert!(unknown[0].contains("no skill named \"lnt\""), "{unknown:?}");
    }
}
