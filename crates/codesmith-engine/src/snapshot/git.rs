//! The `git` command line, aimed at a side repository.
//!
//! Every invocation runs with `GIT_DIR` = the side repository,
//! `GIT_WORK_TREE` = the workspace and `GIT_INDEX_FILE` inside the side
//! repository, so the user's own `.git` is never read for state nor written.
//! The caller's `GIT_*` variables are dropped, system and global config are
//! not read (hooks, fsmonitor, filters and signing stay off), and each run is
//! bounded by a timeout.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::SnapshotError;

/// The fixed identity snapshots are committed under.
const IDENTITY: [&str; 4] = [
    "-c",
    "user.name=codesmith",
    "-c",
    "user.email=codesmith@localhost",
];

/// Config that keeps user programs and content conversions out of the side repository.
const HARDENING: [&str; 14] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "safe.directory=*",
    "-c",
    "gc.auto=0",
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
        let mut cmd = self.command();
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

    fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.program);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GIT_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("GIT_DIR", &self.dir)
            .env("GIT_WORK_TREE", &self.workspace)
            .env("GIT_INDEX_FILE", self.dir.join("index"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", null_device())
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join("xdg"))
            .env("LC_ALL", "C")
            .args(HARDENING)
            .args(IDENTITY)
            .current_dir(existing_dir(&self.workspace, &self.dir))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }
}

fn null_device() -> &'static str {
    if cfg!(windows) { "NUL" } else { "/dev/null" }
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
