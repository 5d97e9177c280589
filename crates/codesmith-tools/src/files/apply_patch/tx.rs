//! All-or-nothing writes: every touched path is backed up before its first write, and a
//! failure restores them in reverse order (and removes directories the patch created).

use std::io::{self, Read};
use std::path::PathBuf;

use crate::files::commit::{WriteReport, commit_text};
use crate::fs::beneath::Ownership;
use crate::fs::os_error::{Access, io_refusal};
use crate::fs::paths::ResolvedPath;
use crate::fs::text::TextFile;
use crate::{Refusal, ToolContext};

struct Backup {
    path: ResolvedPath,
    /// Bytes before the first touch; `None` when nothing existed.
    bytes: Option<Vec<u8>>,
    /// Its permission bits and owner before the first touch (restored with the bytes).
    ownership: Option<Ownership>,
    /// Whether the session's read of it was fresh (restored after a rollback).
    was_fresh: bool,
}

pub(super) struct Tx<'a> {
    ctx: &'a ToolContext,
    backups: Vec<Backup>,
    /// Directories the patch created: the path whose parents they are, the real location
    /// and the workspace-relative spelling.
    created: Vec<(ResolvedPath, PathBuf, String)>,
}

impl<'a> Tx<'a> {
    pub(super) fn new(ctx: &'a ToolContext) -> Self {
        Tx {
            ctx,
            backups: Vec::new(),
            created: Vec::new(),
        }
    }

    fn backup(&mut self, path: &ResolvedPath) -> Result<(), Refusal> {
        let bytes = match path.open_read() {
            Ok(mut f) => {
                let mut b = Vec::new();
                f.read_to_end(&mut b)
                    .map_err(|e| io_refusal(&path.rel, Access::Read, &e))?;
                Some(b)
            }
            // Nothing there (a file where a directory was expected holds nothing either):
            // nothing to restore.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                None
            }
            Err(e) => return Err(io_refusal(&path.rel, Access::Read, &e)),
        };
        let ownership = path.ownership().ok().flatten();
        self.backups.push(Backup {
            path: path.clone(),
            bytes,
            ownership,
            was_fresh: self.ctx.freshness.is_fresh(&path.abs),
        });
        Ok(())
    }

    /// Writes through the shared commit path (syntax check, rustfmt, atomic write); `like`
    /// is the ownership a moved file brings along.
    pub(super) fn write(
        &mut self,
        path: &ResolvedPath,
        old: Option<&TextFile>,
        text: &str,
        like: Option<Ownership>,
    ) -> Result<WriteReport, Refusal> {
        self.backup(path)?;
        let dirs = path
            .create_parents()
            .map_err(|e| io_refusal(&path.rel, Access::Write, &e))?;
        for d in dirs {
            let rel = relative_dir(path, &d);
            self.created.push((path.clone(), d, rel));
        }
        commit_text(self.ctx, path, old, text, like)
    }

    pub(super) fn remove(&mut self, path: &ResolvedPath) -> Result<(), Refusal> {
        self.backup(path)?;
        path.remove_file()
            .map_err(|e| io_refusal(&path.rel, Access::Write, &e))?;
        self.ctx.freshness.forget(&path.abs);
        Ok(())
    }

    /// Workspace-relative directories created so far, outermost first.
    pub(super) fn created_dirs(&self) -> Vec<String> {
        self.created.iter().map(|(_, _, rel)| rel.clone()).collect()
    }

    /// Undoes every write, newest first. Best effort: a failure to restore one file does
    /// not stop the others.
    pub(super) fn rollback(self) {
        for b in self.backups.into_iter().rev() {
            match b.bytes {
                Some(bytes) => {
                    if b.path.write_atomic_as(&bytes, b.ownership).is_ok() && b.was_fresh {
                        self.ctx.freshness.mark_fresh(&b.path.abs);
                    }
                }
                None => {
                    let _ = b.path.remove_file();
                    self.ctx.freshness.forget(&b.path.abs);
                }
            }
        }
        for (path, dir, _) in self.created.into_iter().rev() {
            if let Ok(inner) = dir.strip_prefix(path.root.path()) {
                let _ = path.root.remove_dir(inner);
            }
        }
    }
}

/// The workspace-relative spelling of `dir`, an ancestor of `path.abs`.
fn relative_dir(path: &ResolvedPath, dir: &std::path::Path) -> String {
    let below = path
        .abs
        .strip_prefix(dir)
        .map(|r| r.components().count())
        .unwrap_or(0);
    let parts: Vec<&str> = path.rel.split('/').collect();
    parts[..parts.len().saturating_sub(below)].join("/")
}
