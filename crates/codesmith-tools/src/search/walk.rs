//! The shared walker configuration.

use std::path::{Path, PathBuf};

use ignore::{DirEntry, WalkBuilder};

/// Directory names never descended into.
pub const EXCLUDED_DIRS: [&str; 7] = [
    ".git",
    "node_modules",
    "target",
    "dist",
    "build",
    "__pycache__",
    ".venv",
];

/// Files larger than this (10 MB) are skipped by `grep_files` (checked with `fstat` on the
/// opened file, so the walk itself needs no `stat` per entry).
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// True for entries the walk must skip by name.
pub(crate) fn excluded(entry: &DirEntry) -> bool {
    let name = entry.file_name().to_string_lossy();
    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
    if is_dir {
        EXCLUDED_DIRS.contains(&name.as_ref())
    } else {
        name.ends_with(".min.js")
    }
}

/// A walker over `root` with the common rules; `depth` limits descent when given.
///
/// `skip` is a directory never entered (CodeSmith's home when it lies in the workspace,
/// see [`crate::ToolContext::private_home`]).
pub(crate) fn builder(root: &Path, depth: Option<usize>, skip: Option<PathBuf>) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .max_depth(depth)
        .filter_entry(move |e| !excluded(e) && skip.as_deref().is_none_or(|s| e.path() != s));
    b
}

/// `path` relative to `workspace`, `/`-separated.
pub(crate) fn rel(workspace: &Path, path: &Path) -> String {
    let r = path.strip_prefix(workspace).unwrap_or(path);
    let parts: Vec<String> = r
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}
