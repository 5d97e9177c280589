//! What a snapshot captures besides what `git add -A` stages on its own.
//!
//! `git add -A` in the side repository stages the workspace's non-ignored files, with
//! three gaps this module closes:
//! - **Ignored files** (`.env`, local settings) are lost for good when a turn deletes
//!   them. Small ones (under [`MAX_IGNORED_FILE_BYTES`]) outside directories of
//!   regenerable build output ([`REGENERABLE_DIRS`]) are captured too.
//! - **Nested git repositories** make `git add` fail outright when they have no commit
//!   ("does not have a commit checked out") and are stored as an opaque gitlink when they
//!   do. They are excluded from `git add` and their working files captured as plain
//!   files (their own `.git` never), so a `git init` by the model cannot break a later
//!   snapshot or restore.
//! - **A very large file** (over [`MAX_FILE_BYTES`]) would make the snapshot slow or fail
//!   as a whole; it is left out and named in a notice instead.
//!
//! Files captured here are hashed with `git hash-object --no-filters` and entered into
//! the side index with `git update-index --index-info`; symlinks among them are skipped.

use std::fs;
use std::path::Path;

/// Largest ignored file a snapshot captures: 1 MiB. Bigger ignored files are usually
/// data or build output, not hand-written settings.
pub const MAX_IGNORED_FILE_BYTES: u64 = 1024 * 1024;

/// Largest file a snapshot captures at all: 64 MiB. A bigger one is skipped with a
/// notice (the rest of the snapshot is taken).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Most files captured in addition to `git add -A` (ignored files and nested
/// repositories' files) per snapshot: 5,000; the rest are named in one notice.
pub const MAX_EXTRA_FILES: usize = 5_000;

/// Directory names of regenerable build output and tool caches: ignored files inside them
/// are never captured (a rebuild brings them back).
pub const REGENERABLE_DIRS: [&str; 14] = [
    "target",
    "node_modules",
    "dist",
    "build",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".gradle",
    ".next",
    ".cache",
];

/// The capture plan for one snapshot.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Workspace-relative paths (`/`-separated; directories end with `/`) kept out of
    /// `git add -A`: nested repositories and too-large files.
    pub(crate) exclude: Vec<String>,
    /// Extra regular files to capture, with their executable bit.
    pub(crate) extras: Vec<(String, bool)>,
    /// Human-readable notes about what was left out.
    pub(crate) skipped: Vec<String>,
}

impl Plan {
    /// Builds the plan from `git ls-files -z -c -o --exclude-standard` (`listed`) and
    /// `git ls-files -z -o -i --exclude-standard --directory` (`ignored`) output.
    /// `own` is a workspace-relative directory never captured (the side repository's
    /// home when it lies in the workspace).
    pub(crate) fn build(
        workspace: &Path,
        listed: &[u8],
        ignored: &[u8],
        own: Option<&str>,
    ) -> Plan {
        let mut plan = Plan::default();
        let mut over = 0usize;
        for entry in entries(listed) {
            if let Some(dir) = entry.strip_suffix('/') {
                // `ls-files` shows a nested repository as `dir/` without descending.
                plan.exclude.push(entry.to_string());
                plan.walk(workspace, dir, MAX_FILE_BYTES, &mut over);
                continue;
            }
            if let Ok(meta) = fs::symlink_metadata(workspace.join(entry))
                && meta.is_file()
                && meta.len() > MAX_FILE_BYTES
            {
                plan.exclude.push(entry.to_string());
                plan.skipped.push(format!(
                    "{entry} ({} MiB, over the {} MiB limit)",
                    meta.len() / (1024 * 1024),
                    MAX_FILE_BYTES / (1024 * 1024)
                ));
            }
        }
        for entry in entries(ignored) {
            if own.is_some_and(|o| entry.starts_with(o)) || regenerable(entry) {
                continue;
            }
            match entry.strip_suffix('/') {
                Some(dir) => plan.walk(workspace, dir, MAX_IGNORED_FILE_BYTES, &mut over),
                None => plan.consider(workspace, entry, MAX_IGNORED_FILE_BYTES, &mut over),
            }
        }
        if over > 0 {
            plan.skipped.push(format!(
                "{over} more ignored or nested-repository files (over {MAX_EXTRA_FILES} per snapshot)"
            ));
        }
        plan
    }

    /// Captures the regular file `rel` when it is small enough and there is room.
    fn consider(&mut self, workspace: &Path, rel: &str, limit: u64, over: &mut usize) {
        if !capturable(rel) {
            return;
        }
        let Ok(meta) = fs::symlink_metadata(workspace.join(rel)) else {
            return;
        };
        if !meta.is_file() || meta.len() > limit {
            return;
        }
        if self.extras.len() >= MAX_EXTRA_FILES {
            *over += 1;
            return;
        }
        self.extras.push((rel.to_string(), executable(&meta)));
    }

    /// Captures the files below `dir` (no symlinks followed, no `.git`, no regenerable
    /// directories), bounded by [`MAX_EXTRA_FILES`].
    fn walk(&mut self, workspace: &Path, dir: &str, limit: u64, over: &mut usize) {
        let mut stack = vec![dir.to_string()];
        while let Some(d) = stack.pop() {
            let Ok(read) = fs::read_dir(workspace.join(&d)) else {
                continue;
            };
            let mut names: Vec<String> = read
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect();
            names.sort();
            for name in names {
                let rel = format!("{d}/{name}");
                let Ok(meta) = fs::symlink_metadata(workspace.join(&rel)) else {
                    continue;
                };
                if meta.is_dir() {
                    if name != ".git" && !REGENERABLE_DIRS.contains(&name.as_str()) {
                        stack.push(rel);
                    }
                } else {
                    self.consider(workspace, &rel, limit, over);
                }
            }
        }
    }
}

/// The NUL-separated entries of `ls-files -z` output, as UTF-8 (others are skipped).
fn entries(out: &[u8]) -> impl Iterator<Item = &str> {
    out.split(|b| *b == 0)
        .filter(|e| !e.is_empty())
        .filter_map(|e| std::str::from_utf8(e).ok())
}

/// True when any component of `rel` is a [`REGENERABLE_DIRS`] name.
fn regenerable(rel: &str) -> bool {
    rel.split('/').any(|c| REGENERABLE_DIRS.contains(&c))
}

/// Git refuses index paths with a `.git` component; `--stdin-paths` is line-based.
fn capturable(rel: &str) -> bool {
    !rel.contains('\n') && !rel.split('/').any(|c| c.eq_ignore_ascii_case(".git"))
}

#[cfg(unix)]
fn executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_meta: &fs::Metadata) -> bool {
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ignored_small_files_outside_build_output_are_captured() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        fs::write(ws.join(".env"), "KEY=1\n").unwrap();
        fs::create_dir_all(ws.join("target/debug")).unwrap();
        fs::write(ws.join("target/debug/x"), "bin").unwrap();
        fs::create_dir_all(ws.join("secrets/.git")).unwrap();
        fs::write(ws.join("secrets/a.key"), "k").unwrap();
        fs::write(ws.join("secrets/.git/config"), "c").unwrap();
        fs::write(
            ws.join("big.bin"),
            vec![0u8; (MAX_IGNORED_FILE_BYTES + 1) as usize],
        )
        .unwrap();
        let ignored = b".env\0target/\0secrets/\0big.bin\0";
        let plan = Plan::build(ws, b"", ignored, None);
        let got: Vec<&str> = plan.extras.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(got, [".env", "secrets/a.key"]);
        assert!(plan.exclude.is_empty() && plan.skipped.is_empty());
    }
}
