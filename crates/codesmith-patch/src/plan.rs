//! Turning a parsed patch into the list of file writes it implies, reading through a callback.

use std::collections::HashMap;

use crate::apply::{HunkReport, apply_hunks};
use crate::error::PatchError;
use crate::model::{FileOp, Patch};
use crate::parse::parse;

/// One file write the patch implies. Contents are complete new file texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// Create `path` with `content` (or replace it when it exists).
    Add {
        /// Workspace-relative path as written in the patch.
        path: String,
        /// The whole new file.
        content: String,
    },
    /// Replace the text of `path` with `new_content`; when `move_to` is set, write it there
    /// instead and remove `path`.
    Update {
        /// Workspace-relative path of the existing file.
        path: String,
        /// The whole new file.
        new_content: String,
        /// Destination of a rename.
        move_to: Option<String>,
        /// Where and how each hunk matched (empty for a pure rename).
        hunks: Vec<HunkReport>,
    },
    /// Remove `path`.
    Delete {
        /// Workspace-relative path as written in the patch.
        path: String,
    },
}

impl FileChange {
    /// The path the change reads or removes.
    pub fn path(&self) -> &str {
        match self {
            FileChange::Add { path, .. }
            | FileChange::Update { path, .. }
            | FileChange::Delete { path } => path,
        }
    }
}

/// Parses `patch` and computes every file change without writing anything.
///
/// `read(path)` returns the current text of a regular file, or `None` when it does not exist
/// (a directory or unreadable file counts as absent). Operations see the results of earlier
/// operations in the same patch, so two sections may touch one file.
///
/// # Errors
/// [`PatchError::Parse`] for bad syntax, [`PatchError::InvalidPath`] for an empty, absolute or
/// escaping path, [`PatchError::NotFound`] for updating or deleting a missing file,
/// [`PatchError::HunkFailed`] when a hunk does not match.
pub fn plan(
    patch: &str,
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FileChange>, PatchError> {
    plan_parsed(&parse(patch)?, read)
}

/// [`plan`] for an already parsed patch.
///
/// # Errors
/// As [`plan`], except parse errors.
pub fn plan_parsed(
    patch: &Patch,
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FileChange>, PatchError> {
    for path in patch.paths() {
        check_path(path)?;
    }
    let mut pending: HashMap<&str, Option<String>> = HashMap::new();
    let current = |pending: &HashMap<&str, Option<String>>, path: &str| match pending.get(path) {
        Some(state) => state.clone(),
        None => read(path),
    };
    let mut out = Vec::with_capacity(patch.ops.len());
    for op in &patch.ops {
        match op {
            FileOp::Add {
                path,
                lines,
                final_newline,
            } => {
                let mut content = lines.join("\n");
                if *final_newline && !lines.is_empty() {
                    content.push('\n');
                }
                pending.insert(path, Some(content.clone()));
                out.push(FileChange::Add {
                    path: path.clone(),
                    content,
                });
            }
            FileOp::Delete { path } => {
                if current(&pending, path).is_none() {
                    return Err(PatchError::NotFound {
                        path: path.clone(),
                        action: "deleted",
                    });
                }
                pending.insert(path, None);
                out.push(FileChange::Delete { path: path.clone() });
            }
            FileOp::Update {
                path,
                move_to,
                hunks,
            } => {
                let Some(old) = current(&pending, path) else {
                    return Err(PatchError::NotFound {
                        path: path.clone(),
                        action: if hunks.is_empty() { "moved" } else { "updated" },
                    });
                };
                let (new_content, reports) =
                    apply_hunks(path, &old, hunks).map_err(PatchError::HunkFailed)?;
                match move_to {
                    Some(dest) if dest != path => {
                        pending.insert(path, None);
                        pending.insert(dest, Some(new_content.clone()));
                    }
                    _ => {
                        pending.insert(path, Some(new_content.clone()));
                    }
                }
                out.push(FileChange::Update {
                    path: path.clone(),
                    new_content,
                    move_to: move_to.clone().filter(|d| d != path),
                    hunks: reports,
                });
            }
        }
    }
    Ok(out)
}

/// Refuses empty and absolute paths and paths whose `..` climbs above the root (lexically;
/// symlinks are the caller's containment check).
fn check_path(path: &str) -> Result<(), PatchError> {
    let invalid = |reason| {
        Err(PatchError::InvalidPath {
            path: path.to_string(),
            reason,
        })
    };
    if path.trim().is_empty() {
        return invalid("the path is empty");
    }
    let b = path.as_bytes();
    if path.starts_with(['/', '\\']) || (b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic())
    {
        return invalid("absolute paths are refused; use a path relative to the workspace root");
    }
    let mut depth = 0usize;
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return invalid("the path climbs out of the workspace with `..`"),
            },
            _ => depth += 1,
        }
    }
    if depth == 0 {
        return invalid("the path names the workspace root, not a file");
    }
    Ok(())
}
