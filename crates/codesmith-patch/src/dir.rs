//! The only I/O in the crate: applying a planned patch to a directory, all files or none.
//!
//! Containment here is lexical (no absolute paths, no `..` above the root); it does not
//! resolve symlinks. The agent's `apply_patch` tool adds symlink-aware containment, freshness
//! and the syntax check around [`crate::plan_parsed`] instead of calling this.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::PatchError;
use crate::plan::{FileChange, plan};

/// What [`apply_to_dir`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplySummary {
    /// The changes written, in patch order.
    pub changes: Vec<FileChange>,
    /// Directories created for new files, relative to the root, parents first.
    pub created_dirs: Vec<String>,
}

/// Why [`apply_to_dir`] changed nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The patch did not parse or apply; nothing was written.
    #[error(transparent)]
    Patch(#[from] PatchError),
    /// A write failed; the files written before it were restored.
    #[error("{path}: could not {action}: {source}{}", if *.rollback_complete { "" } else { " (and restoring earlier files failed too)" })]
    Io {
        /// The path (relative to the root) whose write failed.
        path: String,
        /// `write`, `remove` or `create the directory for`.
        action: &'static str,
        /// The operating system's error.
        source: io::Error,
        /// Whether every earlier write was undone.
        rollback_complete: bool,
    },
}

/// Plans `patch` against the files under `root`, then writes every change or none: when a
/// write fails, the files already written are restored (and created directories removed) in
/// reverse order.
///
/// # Errors
/// [`ApplyError::Patch`] before anything is written; [`ApplyError::Io`] after a failed write
/// (rolled back).
pub fn apply_to_dir(root: &Path, patch: &str) -> Result<ApplySummary, ApplyError> {
    let read = |p: &str| {
        let full = root.join(p);
        if full.is_file() {
            fs::read_to_string(full).ok()
        } else {
            None
        }
    };
    let changes = plan(patch, &read)?;
    let created_dirs = write_plan(root, &changes)?;
    Ok(ApplySummary {
        changes,
        created_dirs,
    })
}

/// Writes planned changes under `root`, all or nothing. Returns the directories it created.
///
/// # Errors
/// [`ApplyError::Io`] when a write fails; earlier writes are undone first.
pub fn write_plan(root: &Path, changes: &[FileChange]) -> Result<Vec<String>, ApplyError> {
    let mut tx = Transaction {
        root,
        backups: Vec::new(),
        created_dirs: Vec::new(),
    };
    for change in changes {
        if let Err((path, action, source)) = tx.apply(change) {
            let rollback_complete = tx.rollback();
            return Err(ApplyError::Io {
                path,
                action,
                source,
                rollback_complete,
            });
        }
    }
    Ok(tx
        .created_dirs
        .iter()
        .filter_map(|d| d.strip_prefix(root).ok())
        .map(|d| d.to_string_lossy().into_owned())
        .collect())
}

type Failure = (String, &'static str, io::Error);

struct Transaction<'a> {
    root: &'a Path,
    /// Each touched path with its bytes before the first touch (`None`: it did not exist).
    backups: Vec<(PathBuf, Option<Vec<u8>>)>,
    created_dirs: Vec<PathBuf>,
}

impl Transaction<'_> {
    fn apply(&mut self, change: &FileChange) -> Result<(), Failure> {
        match change {
            FileChange::Add { path, content } => self.write(path, content),
            FileChange::Update {
                path,
                new_content,
                move_to,
                ..
            } => match move_to {
                Some(dest) => {
                    self.write(dest, new_content)?;
                    self.remove(path)
                }
                None => self.write(path, new_content),
            },
            FileChange::Delete { path } => self.remove(path),
        }
    }

    fn backup(&mut self, full: &Path) -> io::Result<()> {
        let before = match fs::read(full) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        self.backups.push((full.to_path_buf(), before));
        Ok(())
    }

    fn write(&mut self, rel: &str, content: &str) -> Result<(), Failure> {
        let full = self.root.join(rel);
        let fail = |action, e| (rel.to_string(), action, e);
        if let Some(parent) = full.parent() {
            self.create_dirs(parent)
                .map_err(|e| fail("create the directory for", e))?;
        }
        self.backup(&full).map_err(|e| fail("write", e))?;
        write_replacing(&full, content.as_bytes()).map_err(|e| fail("write", e))
    }

    fn remove(&mut self, rel: &str) -> Result<(), Failure> {
        let full = self.root.join(rel);
        self.backup(&full)
            .map_err(|e| (rel.to_string(), "remove", e))?;
        fs::remove_file(&full).map_err(|e| (rel.to_string(), "remove", e))
    }

    fn create_dirs(&mut self, dir: &Path) -> io::Result<()> {
        let mut missing = Vec::new();
        let mut cur = dir;
        while !cur.exists() {
            missing.push(cur.to_path_buf());
            match cur.parent() {
                Some(p) => cur = p,
                None => break,
            }
        }
        for d in missing.into_iter().rev() {
            fs::create_dir(&d)?;
            self.created_dirs.push(d);
        }
        Ok(())
    }

    /// Restores every backup in reverse order; returns whether all succeeded.
    fn rollback(&mut self) -> bool {
        let mut ok = true;
        for (full, before) in self.backups.drain(..).rev() {
            let r = match before {
                Some(bytes) => write_replacing(&full, &bytes),
                None => match fs::remove_file(&full) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                },
            };
            ok &= r.is_ok();
        }
        for d in self.created_dirs.drain(..).rev() {
            ok &= fs::remove_dir(&d).is_ok();
        }
        ok
    }
}

/// Writes through a temporary file in the same directory and renames it into place, keeping
/// the old file's permissions.
fn write_replacing(full: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = full.with_file_name(format!(".{name}.codesmith-patch.tmp"));
    let perms = fs::metadata(full).ok().map(|m| m.permissions());
    let result = (|| {
        fs::write(&tmp, bytes)?;
        if let Some(p) = perms {
            fs::set_permissions(&tmp, p)?;
        }
        fs::rename(&tmp, full)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
