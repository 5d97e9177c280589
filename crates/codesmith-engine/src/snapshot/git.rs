//! The `git` command line, aimed at a side repository.
//!
//! Every invocation is built by the harness's one git builder
//! ([`codesmith_tools::host_programs::git_command`]: git found outside the workspace, an
//! allowlisted environment without the caller's `GIT_*`, no system or global config, no
//! hooks, fsmonitor, pager, editor, credential helper, signing program or transport), and
//! runs with `GIT_DIR` = the side repository, `GIT_WORK_TREE` = the workspace and
//! `GIT_INDEX_FILE` inside the side repository, so the user's own `.git` (its config
//! included) is never read nor written. The side repository's `info/attributes` turns
//! filters, `ident` and end-of-line conversion off for every path. Each run is bounded by a
//! timeout.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use codesmith_tools::host_programs;

use super::SnapshotError;

/// The fixed identity snapshots are committed under.
const IDENTITY: [&str; 4] = [
    "-c",
    "user.name=codesmith",
    "-c",
    "user.email=codesmith@localhost",
];

/// Config that keeps content conversions out of the side repository (the builder turns
/// off the programs).
const CONTENT: [&str; 8] = [
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "safe.directory=*",
];

/// One side repository bound to one workspace.
#[derive(Debug, Clone)]
pub(crate) struct SideGit {
    pub(crate) program: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) workspace: PathBuf,
    pub(crate) timeout: Duration,
}

impl SideGit {
    /// Runs `git ARGS` and returns its stdout.
    ///
    /// Errors: [`SnapshotError::GitMissing`] when the program cannot be
    /// started, [`SnapshotError::Timeout`], [`SnapshotError::Git`] on a
    /// non-zero exit (with the head of stderr).
    pub(crate) async fn run(&self, args: &[&str]) -> Result<Vec<u8>, SnapshotError> {
        self.run_input(args, None).await
    }

    /// Like [`SideGit::run`], with `input` written to git's standard input (for
    /// `--stdin-paths`, `--index-info` and `--pathspec-from-file=-`).
    pub(crate) async fn run_input(
        &self,
        args: &[&str],
        input: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, SnapshotError> {
        let mut cmd = self.command()?;
        cmd.args(args);
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let what = args.first().copied().unwrap_or("git").to_string();
        let run = async {
            let mut child = cmd.spawn()?;
            if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
                // Written concurrently with reading the output, so a large input cannot
                // deadlock against a full stdout pipe.
                tokio::spawn(async move {
                    use tokio::io::AsyncWriteExt;
                    let _ = stdin.write_all(&bytes).await;
                    let _ = stdin.shutdown().await;
                });
            }
            child.wait_with_output().await
        };
        let output = match tokio::time::timeout(self.timeout, run).await {
            Err(_) => {
                return Err(SnapshotError::Timeout {
                    command: what,
                    secs: self.timeout.as_secs(),
                });
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SnapshotError::GitMissing {
                    program: self.program.display().to_string(),
                });
            }
            Ok(Err(e)) => return Err(SnapshotError::Io(e)),
            Ok(Ok(output)) => output,
        };
        if output.status.success() {
            return Ok(output.stdout);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(SnapshotError::Git {
            command: what,
            message: head(stderr.trim(), 400),
        })
    }

    /// Like [`SideGit::run`], with stdout as trimmed text.
    pub(crate) async fn text(&self, args: &[&str]) -> Result<String, SnapshotError> {
        let out = self.run(args).await?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// The git program, found outside the workspace.
    ///
    /// Errors: [`SnapshotError::GitMissing`] when there is none.
    pub(crate) fn program(&self) -> Result<PathBuf, SnapshotError> {
        host_programs::find_program(&self.program, &self.workspace).ok_or_else(|| {
            SnapshotError::GitMissing {
                program: self.program.display().to_string(),
            }
        })
    }

    fn command(&self) -> Result<tokio::process::Command, SnapshotError> {
        let git = self.program()?;
        let mut cmd =
            tokio::process::Command::from(host_programs::git_command(&git, &self.workspace));
        cmd.env("GIT_DIR", &self.dir)
            .env("GIT_WORK_TREE", &self.workspace)
            .env("GIT_INDEX_FILE", self.dir.join("index"))
            .env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join("xdg"))
            .args(CONTENT)
            .args(IDENTITY)
            .current_dir(existing_dir(&self.workspace, &self.dir))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        Ok(cmd)
    }
}

/// The workspace when it exists, else `fallback` (a vanished workspace must
/// not turn into "git not found").
fn existing_dir<'a>(workspace: &'a Path, fallback: &'a Path) -> &'a Path {
    if workspace.is_dir() {
        workspace
    } else {
        fallback
    }
}

/// At most `max` bytes of `s`, cut on a character boundary.
fn head(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
