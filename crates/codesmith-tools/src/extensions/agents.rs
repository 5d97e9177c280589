//! Custom agents: `NAME.md` files that define a subagent type beside the built-in ones.
//!
//! The front matter names it (`name`, required: 1 to 64 characters of `a-z 0-9 -`, not
//! one of the built-in types), says when to use it (`description`, required), may narrow
//! its tools (`tools`: a list, or names separated by commas; absent: the parent's whole
//! surface) and may pick its `model` (on the parent's provider; `inherit` or absent: the
//! subagent model). The body is its role prompt. A custom agent only ever tightens: its
//! tools are the intersection of its list with what its parent has, and it runs under
//! the parent's approval mode, exec policy, sandbox and hooks.
//!
//! A project's agent that is not trusted on this machine is not offered (a notice says
//! how to trust it): its body would become a system prompt.

use std::path::PathBuf;

use crate::skills::Scope;
use crate::skills::trust::{TrustKind, TrustStore};

use super::{Found, check_keys, list_field, read_roots, string_field};

/// The front matter keys an agent file may use.
const KEYS: &[&str] = &["name", "description", "tools", "model"];

/// The names of the built-in subagent types, which no custom agent may take.
pub const BUILT_IN_TYPES: &[&str] = &["explore", "general", "plan", "review"];

/// One custom agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomAgent {
    /// Its type name, as the `agent` tool's `type` takes it.
    pub name: String,
    /// When to use it (shown to the model in the `agent` tool's schema).
    pub description: String,
    /// The tools it may use (`None`: the parent's whole surface).
    pub tools: Option<Vec<String>>,
    /// Its model (`None`: the subagent model).
    pub model: Option<String>,
    /// Its role prompt.
    pub prompt: String,
    /// Where it was found.
    pub scope: Scope,
    /// Its file.
    pub path: PathBuf,
}

/// Finds the custom agents of `$CODESMITH_HOME/agents/` and `<workspace>/.codesmith/agents/`
/// that may be offered (a user's, and a project's trusted at its current digest), sorted
/// by name; `notices` gets a line for each file skipped or not trusted.
pub fn discover_agents(
    home: &std::path::Path,
    workspace: &std::path::Path,
    trust: &TrustStore,
    notices: &mut Vec<String>,
) -> Vec<CustomAgent> {
    let mut agents: Vec<CustomAgent> = Vec::new();
    for f in read_roots(home, workspace, "agents", TrustKind::Agent, trust, notices) {
        if !f.trust.is_trusted() {
            notices.push(format!(
                "the project agent {} is not offered: it is not trusted on this machine{}; review \
                 it, then run `codesmith trust agent {}`",
                f.path.display(),
                if matches!(f.trust, crate::skills::trust::TrustState::Changed { .. }) {
                    " (it changed since you trusted it)"
                } else {
                    ""
                },
                f.stem
            ));
            continue;
        }
        match parse(f) {
            Ok(agent) if agents.iter().any(|a| a.name == agent.name) => notices.push(format!(
                "skipped {}: an agent named {} is already defined",
                agent.path.display(),
                agent.name
            )),
            Ok(agent) => agents.push(agent),
            Err(why) => notices.push(why),
        }
    }
    agents.sort_by(|a, b| a.name.cmp(&b.name));
    agents
}

fn parse(f: Found) -> Result<CustomAgent, String> {
    let skip = |why: String| format!("skipped {}: {why}", f.path.display());
    let (map, body) = match crate::skills::split_front_matter(&f.text) {
        Ok(Some(split)) => split,
        Ok(None) => {
            return Err(skip(
                "it has no front matter; start it with `---`, `name: ...`, `description: ...`, `---`"
                    .into(),
            ));
        }
        Err(e) => return Err(skip(e.to_string())),
    };
    check_keys(&map, KEYS).map_err(skip)?;
    let field = |key: &str| string_field(&map, key).map_err(|e| skip(e.clone()));
    let Some(name) = field("name")? else {
        return Err(skip("the front matter has no `name`".into()));
    };
    crate::skills::check_skill_name(&name).map_err(|e| skip(e.to_string()))?;
    if BUILT_IN_TYPES.contains(&name.as_str()) {
        return Err(skip(format!(
            "`{name}` is a built-in subagent type; choose another name"
        )));
    }
    let Some(description) = field("description")? else {
        return Err(skip("the front matter has no `description`".into()));
    };
    let model = field("model")?.filter(|m| m != "inherit");
    let tools = list_field(&map, "tools").map_err(skip)?;
    if body.trim().is_empty() {
        return Err(skip("its body (the agent's role prompt) is empty".into()));
    }
    Ok(CustomAgent {
        name,
        description,
        tools,
        model,
        prompt: body.trim().to_string(),
        scope: f.scope,
        path: f.path,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn agents_are_read_checked_and_project_ones_wait_for_trust() {
        let d = tempfile::tempdir().unwrap();
        let (home, ws) = (d.path().join("home"), d.path().join("ws"));
        std::fs::create_dir_all(home.join("agents")).unwrap();
        std::fs::create_dir_all(ws.join(".codesmith/agents")).unwrap();
        std::fs::write(
            home.join("agents/reader.md"),
            "---\nname: reader\ndescription: Reads code\ntools: read_file, grep_files\nmodel: inherit\n---\nYou read.\n",
        )
        .unwrap();
        std::fs::write(
            home.join("agents/plan.md"),
            "---\nname: plan\ndescription: d\n---\nx",
        )
        .unwrap();
        std::fs::write(
            ws.join(".codesmith/agents/pusher.md"),
            "---\nname: pusher\ndescription: d\n---\nPush.",
        )
        .unwrap();
        let mut notices = Vec::new();
        let agents = discover_agents(&home, &ws, &TrustStore::default(), &mut notices);
        assert_eq!(agents.len(), 1);
        assert_eq!(agents[0].name, "reader");
        assert_eq!(
            agents[0].tools.as_deref(),
            Some(&["read_file".to_string(), "grep_files".to_string()][..])
        );
        assert_eq!(agents[0].model, None);
        assert_eq!(agents[0].prompt, "You read.");
        assert!(notices.iter().any(|n| n.contains("built-in")));
        assert!(
            notices
                .iter()
                .any(|n| n.contains("codesmith trust agent pusher"))
        );
        // Trusted at its digest, the project agent is offered.
        let digest = super::super::sha256_hex(
            &std::fs::read(ws.join(".codesmith/agents/pusher.md")).unwrap(),
        );
        crate::skills::trust::trust_item(&home, &ws, TrustKind::Agent, "pusher", &digest).unwrap();
        let agents = discover_agents(&home, &ws, &TrustStore::load(&home), &mut Vec::new());
        assert_eq!(agents.len(), 2);
    }
}
