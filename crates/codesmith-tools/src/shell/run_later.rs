//! Files another program runs later, written by a shell command.
//!
//! The command policy judges what a command line writes, but a program the policy lets run
//! without asking (`cargo test`, `npm test`) runs the project's own code, which can write
//! `.cargo/config.toml` or `.envrc` from inside the sandbox. So `exec_shell` looks at the
//! places those files are read from before and after each command: the workspace root and
//! every directory from the root down to where the command started (cargo reads
//! `.cargo/config.toml` in each of them, direnv an `.envrc` in any directory one enters),
//! with the folders whose whole content counts (`.cargo`, `.vscode`, `.husky`,
//! `.devcontainer`, `.github/workflows`, `.idea`) read one level deep. What
//! [`codesmith_policy::runs_later`] names there and the command created or changed is put
//! back as it was (a created one removed) unless the call may keep it
//! ([`crate::ToolContext::keep_run_later`]: `--approval auto`, or a person approved the
//! call); the result names each, and says how to write it with approval instead.
//!
//! Limits: deeper directories the command did not start in are not looked at, a file over
//! [`MAX_KEPT`] bytes cannot be put back (it is named, not restored), and background tasks
//! (`task_shell_start`) are not covered.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest file whose earlier content is kept to put it back.
const MAX_KEPT: u64 = 256 * 1024;
/// Most entries read per directory.
const MAX_ENTRIES: usize = 4096;
/// Folders whose files count one level down.
const FOLDERS: &[&str] = &[
    ".cargo",
    ".vscode",
    ".husky",
    ".devcontainer",
    ".idea",
    ".github/workflows",
];

/// What a file held before the command: its bytes and mode, or `None` when it was too
/// large to keep.
type Before = Option<(Vec<u8>, u32)>;

/// The run-later files around a command's start, before it ran.
#[derive(Debug, Default)]
pub(crate) struct RunLaterGuard {
    dirs: Vec<PathBuf>,
    workspace: PathBuf,
    hooks: Option<String>,
    before: BTreeMap<PathBuf, Before>,
}

/// One file the command wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    /// Workspace-relative path.
    pub(crate) path: String,
    /// The program that runs it.
    pub(crate) program: &'static str,
    /// What happened to it: kept, put back, removed, or could not be undone.
    pub(crate) outcome: &'static str,
}

impl RunLaterGuard {
    /// Records the run-later files of `workspace` around `start` (a directory inside it).
    pub(crate) fn before(workspace: &Path, start: &Path) -> Self {
        let mut dirs = vec![workspace.to_path_buf()];
        if let Ok(rel) = start.strip_prefix(workspace) {
            let mut dir = workspace.to_path_buf();
            for part in rel.components() {
                dir.push(part);
                dirs.push(dir.clone());
            }
        }
        let hooks = crate::sandbox::exposure::hooks_path_rel(workspace);
        let mut guard = RunLaterGuard {
            dirs,
            workspace: workspace.to_path_buf(),
            hooks,
            before: BTreeMap::new(),
        };
        guard.before = guard
            .scan()
            .into_keys()
            .map(|p| {
                let kept = read_kept(&p);
                (p, kept)
            })
            .collect();
        guard
    }

    /// The run-later files now present in the watched places, with the program that runs
    /// each. Nothing is looked at through a link: a directory on the way that is a link is
    /// skipped, and a watched folder (`.cargo`, `.github`, …) that is a link counts as a
    /// run-later file itself when what it points at holds one (so the link, never what it
    /// points at, is what gets removed).
    fn scan(&self) -> BTreeMap<PathBuf, &'static str> {
        let mut out = BTreeMap::new();
        let look = |d: &Path, out: &mut BTreeMap<PathBuf, &'static str>, link: Option<&Path>| {
            let Ok(entries) = std::fs::read_dir(d) else {
                return;
            };
            for e in entries.take(MAX_ENTRIES).filter_map(Result::ok) {
                let path = e.path();
                if !e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()) {
                    continue;
                }
                if let Some(by) = self.judge(&path) {
                    out.insert(link.unwrap_or(&path).to_path_buf(), by.program);
                }
            }
        };
        for dir in &self.dirs {
            if self.linked_at(dir).is_some() {
                continue;
            }
            look(dir, &mut out, None);
            for folder in FOLDERS {
                let f = dir.join(folder);
                let link = self.linked_at(&f);
                look(&f, &mut out, link.as_deref());
            }
        }
        out
    }

    /// The first path from the workspace down to `path` (inclusive) that is not a real
    /// directory (a link, a file), or `None` when every one is (or one is missing).
    fn linked_at(&self, path: &Path) -> Option<PathBuf> {
        let rel = path.strip_prefix(&self.workspace).ok()?;
        let mut at = self.workspace.clone();
        for part in rel.components() {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Some(at),
                Err(_) => return None,
            }
        }
        None
    }

    /// Who runs `path` later, by its workspace-relative spelling.
    fn judge(&self, path: &Path) -> Option<codesmith_policy::RunsLater> {
        let rel = path.strip_prefix(&self.workspace).ok()?.to_str()?;
        codesmith_policy::runs_later(rel, self.hooks.as_deref())
    }

    /// Compares with the state before the command: what it created or changed is kept
    /// when `keep`, else put back (a created file removed). Returns what it wrote.
    pub(crate) fn finish(&self, keep: bool) -> Vec<Written> {
        let mut out = Vec::new();
        for (path, program) in self.scan() {
            let before = self.before.get(&path);
            let now = read_kept(&path);
            let changed = match before {
                None => true,
                // Content or mode (`chmod +x` on a hook) moved.
                Some(Some(old)) => now.as_ref() != Some(old),
                // Too large to compare by content: count it as unchanged.
                Some(None) => false,
            };
            if !changed {
                continue;
            }
            // Never undo through a link: the parent must still be a real directory inside
            // the workspace (the path itself may be a link; removing it removes the link).
            let parent_real = path
                .parent()
                .is_some_and(|p| p == self.workspace || self.linked_at(p).is_none());
            let outcome = if keep {
                "kept"
            } else if !parent_real {
                "could not be undone"
            } else {
                match before {
                    None => match std::fs::remove_file(&path) {
                        Ok(()) => "removed",
                        Err(_) => "could not be removed",
                    },
                    Some(Some((old, mode))) => {
                        match std::fs::remove_file(&path)
                            .and_then(|()| write_new(&path, old, *mode))
                        {
                            Ok(()) => "put back as it was",
                            Err(_) => "could not be put back",
                        }
                    }
                    Some(None) => "could not be put back",
                }
            };
            out.push(Written {
                path: path
                    .strip_prefix(&self.workspace)
                    .unwrap_or(&path)
                    .display()
                    .to_string(),
                program,
                outcome,
            });
        }
        out
    }
}

/// Writes `bytes` to `path`, which must not exist (a link made there in the meantime is
/// not followed).
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
}

/// The bytes of `path` when it is a regular file of at most [`MAX_KEPT`] bytes (a link is
/// not followed: its target is not read).
fn read_kept(path: &Path) -> Before {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_KEPT {
        return None;
    }
    use std::os::unix::fs::PermissionsExt;
    Some((std::fs::read(path).ok()?, meta.permissions().mode()))
}

/// The note for the model about what the command wrote, or an empty string.
pub(crate) fn note(written: &[Written], kept: bool) -> String {
    if written.is_empty() {
        return String::new();
    }
    let list: Vec<String> = written
        .iter()
        .map(|w| format!("{} (run by {}; {})", w.path, w.program, w.outcome))
        .collect();
    if kept {
        format!(
            "[The command wrote files another program runs on its own later: {}. They \
             stay (approval mode auto, or approved); tell the user to review them.]\n",
            list.join(", ")
        )
    } else {
        format!(
            "[The command wrote files another program runs on its own later, outside the \
             sandbox: {}. Nobody approved that, so they were undone. If the change is \
             needed, make it with write_file or edit_file, where the user is asked.]\n",
            list.join(", ")
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_created_or_changed_run_later_file_is_undone_unless_kept() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("sub/.cargo")).unwrap();
        std::fs::write(ws.join(".npmrc"), "registry=x\n").unwrap();
        std::fs::write(ws.join("notes.txt"), "a\n").unwrap();
        let guard = RunLaterGuard::before(&ws, &ws.join("sub"));
        std::fs::write(ws.join(".npmrc"), "script-shell=/tmp/x\n").unwrap();
        std::fs::write(
            ws.join("sub/.cargo/config.toml"),
            "[build]\nrustc-wrapper='x'\n",
        )
        .unwrap();
        std::fs::write(ws.join(".envrc"), "evil\n").unwrap();
        std::fs::write(ws.join("notes.txt"), "b\n").unwrap();
        let written = guard.finish(false);
        let paths: Vec<&str> = written.iter().map(|w| w.path.as_str()).collect();
        assert_eq!(
            paths,
            [".envrc", ".npmrc", "sub/.cargo/config.toml"],
            "{written:?}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.join(".npmrc")).unwrap(),
            "registry=x\n"
        );
        assert!(!ws.join(".envrc").exists());
        assert!(!ws.join("sub/.cargo/config.toml").exists());
        // Ordinary files are the project's own business.
        assert_eq!(
            std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
            "b\n"
        );
        // A mode change alone counts too.
        use std::os::unix::fs::PermissionsExt;
        let guard = RunLaterGuard::before(&ws, &ws);
        std::fs::set_permissions(ws.join(".npmrc"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let moded = guard.finish(false);
        assert_eq!(moded.len(), 1, "{moded:?}");
        let mode = std::fs::metadata(ws.join(".npmrc"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "{mode:o}");
        let text = note(&written, false);
        assert!(
            text.contains("write_file") && text.contains("cargo"),
            "{text}"
        );

        let guard = RunLaterGuard::before(&ws, &ws);
        std::fs::write(ws.join(".envrc"), "kept\n").unwrap();
        let written = guard.finish(true);
        assert_eq!(written.len(), 1);
        assert_eq!(written[0].outcome, "kept");
        assert!(ws.join(".envrc").exists());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod attack_tests {
    use super::*;

    /// A command that turns `.cargo` (or a directory on the way to where it started) into a
    /// link to a folder outside the workspace must not get that folder's files removed.
    #[test]
    fn undo_never_removes_through_a_linked_folder_outside_the_workspace() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let outside = d.path().join("home/.cargo");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        let ws = ws.canonicalize().unwrap();
        std::fs::write(outside.join("config.toml"), "mine\n").unwrap();
        std::fs::write(d.path().join("home/.envrc"), "mine\n").unwrap();
        let guard = RunLaterGuard::before(&ws, &ws.join("sub"));
        std::os::unix::fs::symlink(&outside, ws.join(".cargo")).unwrap();
        std::fs::remove_dir(ws.join("sub")).unwrap();
        std::os::unix::fs::symlink(d.path().join("home"), ws.join("sub")).unwrap();
        let _ = guard.finish(false);
        assert_eq!(
            std::fs::read_to_string(outside.join("config.toml")).unwrap(),
            "mine\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("home/.envrc")).unwrap(),
            "mine\n"
        );
        // The link itself is what cargo would follow: it is undone, the folder kept.
        assert!(std::fs::symlink_metadata(ws.join(".cargo")).is_err());
        assert!(outside.join("config.toml").exists());
    }
}
