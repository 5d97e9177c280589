//! `codesmith approvals list|revoke`: the user's view of the grants "always" answers saved
//! (`$CODESMITH_HOME/approvals.toml`). The mechanism is `codesmith_engine::approval`; the
//! UI's `/approvals` shows the same lines ([`lines`]).

use std::path::Path;

use codesmith_engine::approval::{ApprovalStore, StoredGrant};
use codesmith_policy::{json_terminal_safe, terminal_safe};
use serde_json::json;

use crate::args::{ApprovalsCommand, WorkspaceArg};
use crate::config;
use crate::exit::{Exit, usage};

/// Runs `codesmith approvals ...`.
pub(crate) fn run(command: ApprovalsCommand) -> Exit {
    let result = match command {
        ApprovalsCommand::List { workspace, json } => list(&workspace, json),
        ApprovalsCommand::Revoke { id, all, workspace } => revoke(id.as_deref(), all, &workspace),
    };
    result.unwrap_or_else(|exit| exit)
}

/// The store of this home and the canonical workspace. A grants file that cannot be read
/// or parsed is an error (exit 1) naming the file: no grant in it is honoured, and nothing
/// is listed or revoked, rather than "no saved grants".
fn open(workspace: &WorkspaceArg) -> Result<(ApprovalStore, std::path::PathBuf), Exit> {
    let home = config::home_dir().map_err(usage)?;
    let ws = config::workspace(workspace.workspace.as_deref()).map_err(usage)?;
    let store = ApprovalStore::open(&home);
    if let Some(warning) = store.warning() {
        return Err(Exit::failed(anyhow::anyhow!(
            "{warning}; nothing was listed or revoked: fix or remove the file"
        )));
    }
    Ok((store, ws))
}

/// One line per grant (`ID  WHAT`), or a line saying there are none: what `list` prints
/// and `/approvals` shows.
pub(crate) fn lines(home: &Path, workspace: &Path) -> Vec<String> {
    let store = ApprovalStore::open(home);
    let grants = store.listed(workspace);
    if let Some(warning) = store.warning() {
        return vec![terminal_safe(&warning).into_owned()];
    }
    if grants.is_empty() {
        return vec![format!(
            "no saved grants for {} (an \"always\" answer saves one)",
            workspace.display()
        )];
    }
    let mut out: Vec<String> = grants
        .iter()
        .map(|g| format!("{}  {}", g.id, terminal_safe(&g.key.describe())))
        .collect();
    out.push("remove one with `codesmith approvals revoke ID` (or --all)".to_string());
    out
}

fn list(workspace: &WorkspaceArg, as_json: bool) -> Result<Exit, Exit> {
    let (store, ws) = open(workspace)?;
    if as_json {
        let grants: Vec<StoredGrant> = store.listed(&ws);
        let out = json!({"workspace": ws, "file": store.path(), "grants": grants});
        println!("{}", json_terminal_safe(&out.to_string()));
        return Ok(Exit::Ok);
    }
    let home = config::home_dir().map_err(usage)?;
    for line in lines(&home, &ws) {
        println!("{line}");
    }
    Ok(Exit::Ok)
}

fn revoke(id: Option<&str>, all: bool, workspace: &WorkspaceArg) -> Result<Exit, Exit> {
    let (store, ws) = open(workspace)?;
    let grants = store.listed(&ws);
    let chosen: Vec<&StoredGrant> = match id {
        _ if all => grants.iter().collect(),
        Some(id) => grants.iter().filter(|g| g.id == id.trim()).collect(),
        None => Vec::new(),
    };
    if chosen.is_empty() && !all {
        return Err(usage(anyhow::anyhow!(
            "no saved grant has the id {:?} in {}: `codesmith approvals list` shows the ids",
            id.unwrap_or_default(),
            ws.display()
        )));
    }
    for grant in &chosen {
        store
            .revoke(&ws, &grant.key)
            .map_err(|e| usage(anyhow::anyhow!("{e}")))?;
        println!(
            "revoked {}  {}",
            grant.id,
            terminal_safe(&grant.key.describe())
        );
    }
    if chosen.is_empty() {
        println!("no saved grants for {}", ws.display());
    }
    Ok(Exit::Ok)
}
