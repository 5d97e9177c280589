//! Local trust of what a project brings: skills, custom slash commands, custom agents and
//! hooks.
//!
//! A project's `.codesmith/` arrives with the repository, so anyone who can commit can
//! change it. A project skill's body (and a project command's text) is handed to the model
//! as data, a project agent is not offered and a project's hooks do not run, until the
//! user trusts it on this machine. The record is kept in the user's home,
//! `$CODESMITH_HOME/skills-trust.json` (owner-only, replaced atomically), one entry per
//! (workspace, kind, name) holding the SHA-256 of the item's content when it was trusted
//! ([`super::Skill::digest`] for a skill). A later change (an edit, a pull) no longer
//! matches, and the item is untrusted again until trusted anew. Nothing inside the
//! repository is ever read as trust.
//!
//! An unreadable or malformed store trusts nothing (fail closed); trusting rewrites it.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Scope, Skill};

/// File name of the store under `$CODESMITH_HOME`.
pub const TRUST_FILE: &str = "skills-trust.json";

/// How far a skill is trusted now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// A user skill: the user's own.
    User,
    /// A project skill trusted on this machine, unchanged since.
    Trusted,
    /// A project skill never trusted here.
    Untrusted,
    /// A project skill trusted here once, whose content has changed since.
    Changed {
        /// The digest it was trusted at.
        trusted: String,
    },
}

impl TrustState {
    /// Whether its body is delivered as instructions (not wrapped as data).
    pub fn is_trusted(&self) -> bool {
        matches!(self, TrustState::User | TrustState::Trusted)
    }

    /// `user`, `trusted`, `untrusted` or `changed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            TrustState::User => "user",
            TrustState::Trusted => "trusted",
            TrustState::Untrusted => "untrusted",
            TrustState::Changed { .. } => "changed",
        }
    }
}

/// What a trust record is about. Records written before commands, agents and hooks
/// existed carry no kind and are skills.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustKind {
    /// A project skill (`.codesmith/skills/NAME/`).
    #[default]
    Skill,
    /// A project slash command (`.codesmith/commands/NAME.md`).
    Command,
    /// A project custom agent (`.codesmith/agents/NAME.md`).
    Agent,
    /// The project's hooks (`[hooks]` of `.codesmith/config.toml`, name `hooks`).
    Hooks,
}

impl TrustKind {
    /// `skill`, `command`, `agent` or `hooks`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustKind::Skill => "skill",
            TrustKind::Command => "command",
            TrustKind::Agent => "agent",
            TrustKind::Hooks => "hooks",
        }
    }
}

/// One trust record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustEntry {
    /// The canonical workspace the item was trusted in.
    pub workspace: PathBuf,
    /// What the record is about (a skill when absent).
    #[serde(default, skip_serializing_if = "is_skill")]
    pub kind: TrustKind,
    /// The item's name.
    pub name: String,
    /// Lowercase hex SHA-256 of the skill's content when trusted.
    pub sha256: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    trusted: Vec<TrustEntry>,
}

/// The trust records, as read from `$CODESMITH_HOME`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustStore {
    entries: Vec<TrustEntry>,
}

fn is_skill(kind: &TrustKind) -> bool {
    *kind == TrustKind::Skill
}

/// The store's path: `<home>/skills-trust.json`.
pub fn trust_path(home: &Path) -> PathBuf {
    home.join(TRUST_FILE)
}

impl TrustStore {
    /// Reads the store. A missing, unreadable or malformed file trusts nothing.
    pub fn load(home: &Path) -> TrustStore {
        let entries = std::fs::read(trust_path(home))
            .ok()
            .and_then(|b| serde_json::from_slice::<StoreFile>(&b).ok())
            .map(|f| f.trusted)
            .unwrap_or_default();
        TrustStore { entries }
    }

    /// The trust state of `skill` in `workspace` (canonical).
    pub fn state(&self, workspace: &Path, skill: &Skill) -> TrustState {
        if skill.scope == Scope::User {
            return TrustState::User;
        }
        self.project_state(workspace, TrustKind::Skill, &skill.name, &skill.digest)
    }

    /// The trust state of the project item `kind`/`name` in `workspace` (canonical) whose
    /// content now has the SHA-256 `digest` (lowercase hex). Never [`TrustState::User`].
    pub fn project_state(
        &self,
        workspace: &Path,
        kind: TrustKind,
        name: &str,
        digest: &str,
    ) -> TrustState {
        match self
            .entries
            .iter()
            .find(|e| e.workspace == workspace && e.kind == kind && e.name == name)
        {
            None => TrustState::Untrusted,
            Some(e) if e.sha256 == digest => TrustState::Trusted,
            Some(e) => TrustState::Changed {
                trusted: e.sha256.clone(),
            },
        }
    }

    /// The records, in the order stored.
    pub fn entries(&self) -> &[TrustEntry] {
        &self.entries
    }
}

/// Records that the user trusts `skill` (a project skill) in `workspace` at its current
/// digest, replacing an earlier record for the same workspace and name. The store is
/// written atomically with mode `0600` (see [`crate::private`]).
///
/// # Errors
/// Any I/O error creating `home` or writing the store.
pub fn trust_skill(home: &Path, workspace: &Path, skill: &Skill) -> io::Result<()> {
    trust_item(
        home,
        workspace,
        TrustKind::Skill,
        &skill.name,
        &skill.digest,
    )
}

/// Records that the user trusts the project item `kind`/`name` in `workspace` at the
/// SHA-256 `digest` of its current content, replacing an earlier record for the same
/// workspace, kind and name. Written as [`trust_skill`] writes.
///
/// # Errors
/// Any I/O error creating `home` or writing the store.
pub fn trust_item(
    home: &Path,
    workspace: &Path,
    kind: TrustKind,
    name: &str,
    digest: &str,
) -> io::Result<()> {
    let mut store = TrustStore::load(home);
    store
        .entries
        .retain(|e| !(e.workspace == workspace && e.kind == kind && e.name == name));
    store.entries.push(TrustEntry {
        workspace: workspace.to_path_buf(),
        kind,
        name: name.to_string(),
        sha256: digest.to_string(),
    });
    store.entries.sort_by(|a, b| {
        (a.workspace.as_path(), a.kind, a.name.as_str()).cmp(&(
            b.workspace.as_path(),
            b.kind,
            b.name.as_str(),
        ))
    });
    let file = StoreFile {
        version: 1,
        trusted: store.entries,
    };
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(io::Error::other)?;
    bytes.push(b'\n');
    crate::private::create_dir_all(home)?;
    let path = trust_path(home);
    crate::fs::atomic::write_atomic(&path, &bytes)?;
    crate::private::restrict(&path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn project(name: &str, digest: &str) -> Skill {
        Skill {
            name: name.into(),
            description: "d".into(),
            scope: Scope::Project,
            dir: PathBuf::from("/ws/.codesmith/skills").join(name),
            digest: digest.into(),
            files: Vec::new(),
        }
    }

    #[test]
    fn trust_is_bound_to_workspace_name_and_digest() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        let ws = Path::new("/ws");
        let s = project("lint", "aaa");
        assert_eq!(TrustStore::load(&home).state(ws, &s), TrustState::Untrusted);
        trust_skill(&home, ws, &s).unwrap();
        let store = TrustStore::load(&home);
        assert_eq!(store.state(ws, &s), TrustState::Trusted);
        assert_eq!(store.state(Path::new("/other"), &s), TrustState::Untrusted);
        assert_eq!(
            store.state(ws, &project("lint", "bbb")),
            TrustState::Changed {
                trusted: "aaa".into()
            }
        );
        trust_skill(&home, ws, &project("lint", "bbb")).unwrap();
        assert_eq!(TrustStore::load(&home).entries().len(), 1);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(trust_path(&home))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_malformed_store_trusts_nothing() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(trust_path(d.path()), "{not json").unwrap();
        let s = project("lint", "aaa");
        assert_eq!(
            TrustStore::load(d.path()).state(Path::new("/ws"), &s),
            TrustState::Untrusted
        );
    }
}
