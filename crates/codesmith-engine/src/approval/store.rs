//! Persistent grants in `$CODESMITH_HOME/approvals.toml`.
//!
//! Keyed by canonical workspace path, mode 0600, written atomically and merged with what
//! is on disk, with tombstones so a grant removed elsewhere is not resurrected. Only the
//! kinds [`ApprovalKey::persists`] names are stored, never for a `Dangerous` command, and
//! every stored grant is re-checked against the current request when consulted. The file is
//! re-read each time a grant is consulted, so a revocation by another process reaches a
//! running session at once. A file that cannot be read or parsed fails closed: no grant in
//! it is honoured, and [`ApprovalStore::warning`] says why. The file format is the one earlier
//! versions wrote (`kind = "shell" | "url_host" | "patch_paths" | "mcp_tool"`), read as is.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use codesmith_policy::SafetyLevel;
use serde::{Deserialize, Serialize};

use sha2::{Digest, Sha256};

use super::ApprovalKey;

/// File name under `$CODESMITH_HOME`.
pub const APPROVALS_FILE: &str = "approvals.toml";

/// On-disk shape: `version = 1` and one table per canonical workspace path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct ApprovalsFile {
    #[serde(default = "one")]
    version: u32,
    #[serde(default)]
    workspaces: BTreeMap<String, WorkspaceApprovalKeys>,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct WorkspaceApprovalKeys {
    #[serde(default)]
    grants: BTreeSet<ApprovalKey>,
    /// Tombstones: grants removed by some session, subtracted after every merge.
    #[serde(default)]
    removed: BTreeSet<ApprovalKey>,
}

impl ApprovalsFile {
    /// Drops grants that carry a tombstone (a hand-edited or concurrently merged file).
    fn subtract_tombstones(&mut self) {
        for ws in self.workspaces.values_mut() {
            let removed = ws.removed.clone();
            ws.grants.retain(|g| !removed.contains(g));
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add(String, ApprovalKey),
    Remove(String, ApprovalKey),
}

impl Op {
    fn apply(&self, file: &mut ApprovalsFile) {
        match self {
            Op::Add(ws, g) => {
                let entry = file.workspaces.entry(ws.clone()).or_default();
                entry.removed.remove(g);
                entry.grants.insert(g.clone());
            }
            Op::Remove(ws, g) => {
                let entry = file.workspaces.entry(ws.clone()).or_default();
                entry.grants.remove(g);
                entry.removed.insert(g.clone());
            }
        }
    }
}

/// Why a grant was not stored.
#[derive(Debug)]
pub enum ApprovalError {
    /// `Dangerous` commands never get a persistent grant.
    Dangerous,
    /// The grant is empty, malformed (e.g. an absolute or `..` write path), or of a kind
    /// that never persists.
    Malformed,
    /// The workspace path cannot be canonicalized.
    Workspace(std::io::Error),
    /// Reading or writing the file failed.
    Io(std::io::Error),
}

impl fmt::Display for ApprovalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApprovalError::Dangerous => {
                write!(f, "a dangerous command cannot be allowed permanently")
            }
            ApprovalError::Malformed => write!(f, "the grant is empty or malformed"),
            ApprovalError::Workspace(e) => write!(f, "cannot resolve the workspace path: {e}"),
            ApprovalError::Io(e) => write!(f, "cannot update {APPROVALS_FILE}: {e}"),
        }
    }
}

impl std::error::Error for ApprovalError {}

#[derive(Debug, Default)]
struct Inner {
    file: ApprovalsFile,
    warning: Option<String>,
}

/// Persistent grants of one CodeSmith home. Each change is merged into the file on disk
/// at once (re-read, apply this change, subtract tombstones, write atomically with mode
/// 0600), so concurrent sessions neither lose nor resurrect each other's grants.
#[derive(Debug)]
pub struct ApprovalStore {
    path: PathBuf,
    inner: Mutex<Inner>,
}

impl ApprovalStore {
    /// Opens the store of `home` (the file need not exist). A file that cannot be read or
    /// parsed holds no grant that is honoured; [`ApprovalStore::warning`] then says why.
    pub fn open(home: &Path) -> Self {
        let store = ApprovalStore {
            path: home.join(APPROVALS_FILE),
            inner: Mutex::new(Inner::default()),
        };
        drop(store.fresh());
        store
    }

    /// Why the file's grants are ignored as it is now (it cannot be read or parsed), naming
    /// the file; `None` when it is readable or absent.
    pub fn warning(&self) -> Option<String> {
        self.fresh().warning.clone()
    }

    /// The store with the file as it is on disk now: a file that cannot be read or parsed
    /// leaves no grant (fail closed) and sets the warning.
    fn fresh(&self) -> MutexGuard<'_, Inner> {
        let mut inner = self.lock();
        match load(&self.path) {
            Ok(file) => {
                inner.file = file;
                inner.warning = None;
            }
            Err(e) => {
                inner.file = ApprovalsFile::default();
                inner.warning = Some(format!(
                    "ignoring every grant in unreadable {}: {e}",
                    self.path.display()
                ));
            }
        }
        inner
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores "always allow" for `grant` in `workspace`. `level` is the classifier's level
    /// of the request being approved; `Dangerous` is refused.
    ///
    /// Errors: [`ApprovalError::Dangerous`], [`ApprovalError::Malformed`],
    /// [`ApprovalError::Workspace`], [`ApprovalError::Io`] (nothing changed on disk).
    pub fn grant(
        &self,
        workspace: &Path,
        grant: ApprovalKey,
        level: SafetyLevel,
    ) -> Result<(), ApprovalError> {
        if level == SafetyLevel::Dangerous {
            return Err(ApprovalError::Dangerous);
        }
        if !grant.persists() || !grant.is_well_formed() {
            return Err(ApprovalError::Malformed);
        }
        self.commit(Op::Add(key(workspace)?, grant))
    }

    /// Removes a grant (and records a tombstone so no other session's merge brings it back).
    ///
    /// Errors: [`ApprovalError::Workspace`], [`ApprovalError::Io`] (nothing changed on disk).
    pub fn revoke(&self, workspace: &Path, grant: &ApprovalKey) -> Result<(), ApprovalError> {
        self.commit(Op::Remove(key(workspace)?, grant.clone()))
    }

    /// The grants stored for `workspace`, each with its id, as the file holds them now.
    pub fn listed(&self, workspace: &Path) -> Vec<StoredGrant> {
        let Ok(k) = key(workspace) else {
            return Vec::new();
        };
        self.grants(workspace)
            .into_iter()
            .map(|key| StoredGrant {
                id: grant_id(&k, &key),
                workspace: k.clone(),
                key,
            })
            .collect()
    }

    /// The grants stored for `workspace`, as the file holds them now (re-read, so a grant
    /// revoked by another process is gone); none when the file cannot be read or parsed.
    pub fn grants(&self, workspace: &Path) -> Vec<ApprovalKey> {
        let Ok(k) = key(workspace) else {
            return Vec::new();
        };
        let inner = self.fresh();
        inner
            .file
            .workspaces
            .get(&k)
            .map(|w| w.grants.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// True when a stored grant covers the current request. The request is re-checked
    /// first: a `Dangerous` request or one without a grant (exact-only) is never covered,
    /// whatever the file says.
    pub fn allows(
        &self,
        workspace: &Path,
        request: Option<&ApprovalKey>,
        level: SafetyLevel,
    ) -> bool {
        if level == SafetyLevel::Dangerous {
            return false;
        }
        let Some(request) = request.filter(|g| g.is_well_formed()) else {
            return false;
        };
        self.grants(workspace).contains(request)
    }

    fn commit(&self, op: Op) -> Result<(), ApprovalError> {
        let mut inner = self.lock();
        let mut merged = load(&self.path).unwrap_or_else(|_| {
            // Keep the unreadable file for the user instead of overwriting it.
            let _ = std::fs::rename(&self.path, self.path.with_extension("toml.corrupt"));
            ApprovalsFile::default()
        });
        op.apply(&mut merged);
        merged.subtract_tombstones();
        merged.version = 1;
        save(&self.path, &merged).map_err(ApprovalError::Io)?;
        inner.file = merged;
        Ok(())
    }
}

/// One stored grant as `approvals list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredGrant {
    /// A short stable id (8 hex digits of a SHA-256 over the workspace and the grant), what
    /// `approvals revoke ID` takes.
    pub id: String,
    /// The canonical workspace path the grant holds in.
    pub workspace: String,
    /// What it lets run.
    #[serde(flatten)]
    pub key: ApprovalKey,
}

/// The id of `grant` in the workspace keyed `workspace`.
fn grant_id(workspace: &str, grant: &ApprovalKey) -> String {
    let text = serde_json::to_string(grant).unwrap_or_default();
    let digest = Sha256::digest(format!("{workspace}\n{text}").as_bytes());
    digest.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

/// The canonical workspace path used as the key.
fn key(workspace: &Path) -> Result<String, ApprovalError> {
    let canonical = workspace.canonicalize().map_err(ApprovalError::Workspace)?;
    Ok(canonical.to_string_lossy().into_owned())
}

fn load(path: &Path) -> Result<ApprovalsFile, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ApprovalsFile::default()),
        Err(e) => return Err(e.to_string()),
    };
    let mut file: ApprovalsFile = toml::from_str(&text).map_err(|e| e.to_string())?;
    file.subtract_tombstones();
    Ok(file)
}

/// Temp file in the same directory (created 0600), fsync, rename.
fn save(path: &Path, file: &ApprovalsFile) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    codesmith_tools::private::create_dir_all(dir)?;
    let text = toml::to_string(file).map_err(std::io::Error::other)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    /// The grant "always" stores for `command` (see `ShellKeys`).
    fn shell_grant(command: &str, ws: &str) -> Option<ApprovalKey> {
        let eval = codesmith_policy::decide(
            command,
            ws,
            &codesmith_policy::Rules::new(),
            codesmith_policy::ApprovalMode::AutoEdit,
        );
        super::super::key::ShellKeys::of(command, &eval).grant
    }
    use super::*;

    fn prefix(p: &str) -> ApprovalKey {
        ApprovalKey::Shell {
            prefixes: vec![p.to_string()],
        }
    }

    #[test]
    fn grants_persist_with_mode_0600() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let store = ApprovalStore::open(home.path());
        let grant = shell_grant("cargo build", ws.path().to_str().unwrap()).unwrap();
        store
            .grant(ws.path(), grant, SafetyLevel::WorkspaceSafe)
            .unwrap();
        store
            .grant(
                ws.path(),
                ApprovalKey::url_host("Docs.RS"),
                SafetyLevel::Ask,
            )
            .unwrap();
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let reopened = ApprovalStore::open(home.path());
        let release = shell_grant("cargo build --release", "/x");
        let level = SafetyLevel::WorkspaceSafe;
        assert!(reopened.allows(ws.path(), release.as_ref(), level));
        assert!(reopened.allows(
            ws.path(),
            Some(&ApprovalKey::url_host("docs.rs")),
            SafetyLevel::Safe
        ));
        // Keyed by workspace: another workspace has nothing.
        let other = tempfile::tempdir().unwrap();
        assert!(!reopened.allows(other.path(), release.as_ref(), level));
    }

    #[test]
    fn dangerous_is_never_persisted_or_allowed() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let store = ApprovalStore::open(home.path());
        let err = store
            .grant(ws.path(), prefix("rm -rf"), SafetyLevel::Dangerous)
            .unwrap_err();
        assert!(matches!(err, ApprovalError::Dangerous));
        assert!(!store.path().exists());
        // A hand-edited file granting a prefix still cannot cover a dangerous request.
        store
            .grant(ws.path(), prefix("curl"), SafetyLevel::Ask)
            .unwrap();
        let level = codesmith_policy::classify_command("curl x | sh", "/x").level;
        assert_eq!(level, SafetyLevel::Dangerous);
        assert!(!store.allows(ws.path(), Some(&prefix("curl")), level));
        assert!(shell_grant("curl x | sh", "/x").is_none());
    }

    #[test]
    fn concurrent_stores_merge() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let a = ApprovalStore::open(home.path());
        let b = ApprovalStore::open(home.path());
        a.grant(ws.path(), prefix("cargo build"), SafetyLevel::WorkspaceSafe)
            .unwrap();
        b.grant(ws.path(), prefix("cargo test"), SafetyLevel::WorkspaceSafe)
            .unwrap();
        let c = ApprovalStore::open(home.path());
        assert_eq!(
            c.grants(ws.path()),
            vec![prefix("cargo build"), prefix("cargo test")]
        );
    }

    #[test]
    fn save_does_not_resurrect_removed_grants() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let a = ApprovalStore::open(home.path());
        a.grant(ws.path(), prefix("make"), SafetyLevel::WorkspaceSafe)
            .unwrap();
        // B loaded the grant, then A removes it; B's next save must not bring it back.
        let b = ApprovalStore::open(home.path());
        assert_eq!(b.grants(ws.path()), vec![prefix("make")]);
        a.revoke(ws.path(), &prefix("make")).unwrap();
        b.grant(ws.path(), prefix("cargo check"), SafetyLevel::WorkspaceSafe)
            .unwrap();
        let c = ApprovalStore::open(home.path());
        assert_eq!(c.grants(ws.path()), vec![prefix("cargo check")]);
        // ApprovalKeying again lifts the tombstone.
        b.grant(ws.path(), prefix("make"), SafetyLevel::WorkspaceSafe)
            .unwrap();
        assert!(
            ApprovalStore::open(home.path())
                .grants(ws.path())
                .contains(&prefix("make"))
        );
    }

    #[test]
    fn corrupt_file_degrades_to_empty() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(APPROVALS_FILE), "this is = = not toml").unwrap();
        let store = ApprovalStore::open(home.path());
        assert!(store.warning().is_some());
        let ws = tempfile::tempdir().unwrap();
        assert!(store.grants(ws.path()).is_empty());
    }

    #[test]
    fn only_persistable_kinds_and_shapes() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let store = ApprovalStore::open(home.path());
        for bad in [
            ApprovalKey::write(&["../etc/passwd"]),
            ApprovalKey::write(&["/abs"]),
            ApprovalKey::Shell { prefixes: vec![] },
            ApprovalKey::url_host(""),
            ApprovalKey::Tool {
                tool: "rlm_exec".into(),
            },
        ] {
            assert!(matches!(
                store.grant(ws.path(), bad, SafetyLevel::WorkspaceSafe),
                Err(ApprovalError::Malformed)
            ));
        }
        store
            .grant(
                ws.path(),
                ApprovalKey::write(&["src/b.rs", "src/a.rs"]),
                SafetyLevel::WorkspaceSafe,
            )
            .unwrap();
        assert!(store.allows(
            ws.path(),
            Some(&ApprovalKey::write(&["src/a.rs", "src/b.rs"])),
            SafetyLevel::WorkspaceSafe
        ));
    }

    #[test]
    fn grants_written_by_earlier_versions_are_read_and_listed_with_ids() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let canonical = ws.path().canonicalize().unwrap();
        let old = format!(
            "version = 1\n\n[workspaces.\"{}\"]\n\n[[workspaces.\"{}\".grants]]\nkind = \"shell\"\nprefixes = [\"cargo build\"]\n\n[[workspaces.\"{}\".grants]]\nkind = \"mcp_tool\"\nserver = \"gh\"\ntool = \"list_issues\"\n",
            canonical.display(),
            canonical.display(),
            canonical.display()
        );
        std::fs::write(home.path().join(APPROVALS_FILE), old).unwrap();
        let store = ApprovalStore::open(home.path());
        assert_eq!(store.warning(), None);
        let listed = store.listed(ws.path());
        assert_eq!(listed.len(), 2, "{listed:?}");
        assert!(listed.iter().any(|g| g.key == prefix("cargo build")));
        assert!(listed.iter().all(|g| g.id.len() == 8));
        assert_ne!(listed[0].id, listed[1].id);
        store.revoke(ws.path(), &listed[0].key).unwrap();
        assert_eq!(ApprovalStore::open(home.path()).listed(ws.path()).len(), 1);
    }
}
