//! `codesmith trust hooks|command NAME|agent NAME`: the user trusts what a project brings,
//! on this machine, at its current content. The records are the skills' trust store
//! (`codesmith_tools::skills::trust`), keyed by workspace, kind and name.

use codesmith_policy::terminal_safe;
use codesmith_tools::skills::trust::{TrustKind, trust_item, trust_path};

use crate::args::{TrustCommand, WorkspaceArg};
use crate::config;
use crate::exit::{Exit, usage};

/// Runs `codesmith trust ...`.
pub(crate) fn run(what: TrustCommand) -> Exit {
    let result = match what {
        TrustCommand::Hooks { workspace } => hooks(&workspace),
        TrustCommand::Command { name, workspace } => file(TrustKind::Command, &name, &workspace),
        TrustCommand::Agent { name, workspace } => file(TrustKind::Agent, &name, &workspace),
    };
    result.unwrap_or_else(|exit| exit)
}

fn places(workspace: &WorkspaceArg) -> Result<(std::path::PathBuf, std::path::PathBuf), Exit> {
    let home = config::home_dir().map_err(usage)?;
    let ws = config::workspace(workspace.workspace.as_deref()).map_err(usage)?;
    Ok((home, ws))
}

fn record(
    home: &std::path::Path,
    ws: &std::path::Path,
    kind: TrustKind,
    name: &str,
    digest: &str,
) -> Result<(), Exit> {
    trust_item(home, ws, kind, name, digest).map_err(|e| {
        Exit::failed(anyhow::anyhow!(
            "cannot write {}: {e}",
            trust_path(home).display()
        ))
    })
}

fn hooks(workspace: &WorkspaceArg) -> Result<Exit, Exit> {
    let (home, ws) = places(workspace)?;
    let layer = config::ProjectLayer::load(&ws, &home);
    let section = layer.hooks().map_err(|e| {
        usage(anyhow::anyhow!(
            "the project's [hooks] in .codesmith/config.toml do not parse: {e}"
        ))
    })?;
    let Some(section) = section.as_ref() else {
        return Err(usage(anyhow::anyhow!(
            "{} has no [hooks] to trust",
            ws.join(".codesmith/config.toml").display()
        )));
    };
    codesmith_tools::hooks::Hooks::from_section(
        section,
        codesmith_tools::hooks::HookSource::Project,
    )
    .map_err(|e| usage(anyhow::anyhow!("the project's hooks cannot be used: {e}")))?;
    let digest = section.digest();
    // What is pinned is shown in full, every field that decides what runs, before the
    // pin is recorded.
    let mut lines = vec![format!(
        "the project's hooks in {} (sha256 {}), which will run outside the sandbox with your \
         rights:",
        ws.display(),
        &digest[..12]
    )];
    for (event, entry) in section.entries() {
        lines.push(format!("  {}", entry.describe(event)));
    }
    println!("{}", terminal_safe(&lines.join("\n")));
    record(&home, &ws, TrustKind::Hooks, "hooks", &digest)?;
    println!(
        "{}",
        terminal_safe(&format!(
            "trusted them at sha256 {}; any change to them untrusts them",
            &digest[..12]
        ))
    );
    Ok(Exit::Ok)
}

fn file(kind: TrustKind, name: &str, workspace: &WorkspaceArg) -> Result<Exit, Exit> {
    let (home, ws) = places(workspace)?;
    let (path, digest) = codesmith_tools::extensions::project_item(&home, &ws, kind, name)
        .map_err(|e| usage(anyhow::anyhow!(e)))?;
    record(&home, &ws, kind, name, &digest)?;
    println!(
        "{}",
        terminal_safe(&format!(
            "trusted the project {} {} at sha256 {}; any change to it untrusts it",
            kind.as_str(),
            path.display(),
            &digest[..12]
        ))
    );
    Ok(Exit::Ok)
}
