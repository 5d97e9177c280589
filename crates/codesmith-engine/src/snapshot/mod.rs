//! Task snapshots and rollback: the last wall when every earlier safeguard let a bad
//! change through (side-git snapshots, `/restore N`).
//!
//! Before a task's first write, the workspace's tracked and untracked files
//! (everything `.gitignore` does not exclude), small ignored files outside
//! build-output directories (`.env`), and the working files of nested git
//! repositories (see `capture.rs`) are committed into a side git
//! repository at `$CODESMITH_HOME/snapshots/<workspace-hash>/`, under the ref
//! `refs/codesmith/<session>/<task>`. The user's own `.git` is never read for
//! state nor written: git runs with `GIT_DIR`, `GIT_WORK_TREE` and
//! `GIT_INDEX_FILE` aimed at the side repository (see `git.rs`).
//!
//! [`SideRepo::restore`] puts the workspace back as it was in a snapshot:
//! files changed since are rewritten, files created since are removed, files
//! deleted since come back. Ignored files the snapshot did not capture (build
//! output, large ones) are left alone. The state just
//! before the restore is itself committed first, so a restore can be undone.
//!
//! A missing or failing `git` never fails a task: the engine skips the
//! snapshot with a notice.

mod capture;
mod git;
mod ignore;
mod task;

pub use capture::{MAX_EXTRA_FILES, MAX_FILE_BYTES, MAX_IGNORED_FILE_BYTES, REGENERABLE_DIRS};

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use sha2::{Digest, Sha256};

use codesmith_protocol::RestoreReport;

use crate::session::{NoteKind, Session, SessionError};
use git::SideGit;

pub(crate) use task::TaskSnapshots;

/// How long one git command of a snapshot or restore may run (60 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Hex digits of the SHA-256 of the workspace path used as its directory name (16).
pub const HASH_HEX_LEN: usize = 16;

/// Where the side repositories live under `$CODESMITH_HOME`.
pub const SNAPSHOTS_DIR: &str = "snapshots";

/// Attributes forced on every path so that snapshots and restores are byte
/// exact: no end-of-line conversion, no clean/smudge filters, no `$Id$`.
/// `$GIT_DIR/info/attributes` outranks the workspace's `.gitattributes`.
const ATTRIBUTES: &str = "* -text -filter -ident !eol !working-tree-encoding\n";

/// Snapshot settings, resolved once by the front end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotSettings {
    /// Take snapshots at all (default `true`).
    pub enabled: bool,
    /// The git program (default `git`, found on `PATH`).
    pub git: PathBuf,
    /// Bound on each git command (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
}

impl Default for SnapshotSettings {
    fn default() -> Self {
        SnapshotSettings {
            enabled: true,
            git: PathBuf::from("git"),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Why a snapshot or restore could not be done.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The git program could not be started.
    #[error(
        "git is not available ({program} could not be started); install git to get task snapshots"
    )]
    GitMissing {
        /// The program that was tried.
        program: String,
    },
    /// A git command exited with an error.
    #[error("git {command} failed in the snapshot repository: {message}")]
    Git {
        /// The git sub-command.
        command: String,
        /// The head of its stderr (at most 400 bytes).
        message: String,
    },
    /// A git command ran longer than the timeout.
    #[error("git {command} took longer than {secs} s; the snapshot was abandoned")]
    Timeout {
        /// The git sub-command.
        command: String,
        /// The timeout in seconds.
        secs: u64,
    },
    /// Another CodeSmith process kept the side repository locked for longer than the timeout.
    #[error(
        "the snapshot repository {dir} is busy (another codesmith process is using it); try again"
    )]
    Busy {
        /// The side repository.
        dir: String,
    },
    /// The session id is not a safe name.
    #[error(
        "invalid session id {0:?}: use the id printed when the session started (letters, digits, '.', '_', '-')"
    )]
    InvalidSession(String),
    /// There is no snapshot for that session and task.
    #[error("{}", no_snapshot_message(.session, *.task, .available))]
    NoSnapshot {
        /// Session id.
        session: String,
        /// Requested task.
        task: u32,
        /// The tasks of this session that do have a snapshot, ascending.
        available: Vec<u32>,
    },
    /// Writing the restore note into the transcript failed (the files were restored).
    #[error("the workspace was restored, but the transcript note failed: {0}")]
    Record(#[from] SessionError),
    /// A local file operation failed.
    #[error("snapshot storage failed: {0}")]
    Io(#[from] std::io::Error),
}

fn no_snapshot_message(session: &str, task: u32, available: &[u32]) -> String {
    let list = if available.is_empty() {
        "it has none for this workspace (a task gets one only when it writes)".to_string()
    } else {
        let tasks: Vec<String> = available.iter().map(u32::to_string).collect();
        format!("snapshots exist for tasks {}", tasks.join(", "))
    };
    format!("no snapshot of task {task} in session {session:?}: {list}")
}

/// A snapshot that was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// Session id.
    pub session: String,
    /// Task number (1-based, counted over the whole session).
    pub task: u32,
    /// The commit id in the side repository.
    pub commit: String,
    /// The ref naming it (`refs/codesmith/<session>/<task>`).
    pub reference: String,
    /// Files left out of the snapshot, each with the reason (too large, too many).
    pub skipped: Vec<String>,
}

/// The short hex SHA-256 ([`HASH_HEX_LEN`] digits) of the canonical form of
/// `workspace` (the path as given when it cannot be canonicalized).
pub fn workspace_hash(workspace: &Path) -> String {
    let canonical = canonical(workspace);
    let digest = Sha256::digest(canonical.to_string_lossy().as_bytes());
    let mut hex = String::with_capacity(HASH_HEX_LEN);
    for byte in digest.iter().take(HASH_HEX_LEN / 2) {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// The side repository of `workspace`: `<home>/snapshots/<workspace-hash>`.
pub fn side_repo_dir(home: &Path, workspace: &Path) -> PathBuf {
    home.join(SNAPSHOTS_DIR).join(workspace_hash(workspace))
}

/// The ref of a task's snapshot: `refs/codesmith/<session>/<task>`.
pub fn task_ref(session: &str, task: u32) -> String {
    format!("refs/codesmith/{session}/{task}")
}

fn canonical(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The side repository of one workspace.
#[derive(Debug, Clone)]
pub struct SideRepo {
    git: SideGit,
}

impl SideRepo {
    /// The side repository for `workspace` under `home` (nothing is created yet).
    pub fn new(settings: &SnapshotSettings, home: &Path, workspace: &Path) -> Self {
        SideRepo {
            git: SideGit {
                program: settings.git.clone(),
                dir: side_repo_dir(home, workspace),
                workspace: canonical(workspace),
                timeout: settings.timeout,
            },
        }
    }

    /// The side repository's directory.
    pub fn dir(&self) -> &Path {
        &self.git.dir
    }

    /// Commits the workspace's non-ignored files as the snapshot of `task`
    /// of `session`, replacing an earlier snapshot of the same task.
    ///
    /// # Errors
    /// [`SnapshotError::InvalidSession`], [`SnapshotError::GitMissing`],
    /// [`SnapshotError::Git`], [`SnapshotError::Timeout`], [`SnapshotError::Io`].
    pub async fn take(&self, session: &str, task: u32) -> Result<Snapshot, SnapshotError> {
        check_session(session)?;
        let _lock = self.prepare().await?;
        let (tree, skipped) = self.stage_workspace().await?;
        let commit = self
            .commit(
                &tree,
                &format!("codesmith snapshot: session {session}, before task {task}"),
            )
            .await?;
        let reference = task_ref(session, task);
        self.git.run(&["update-ref", &reference, &commit]).await?;
        Ok(Snapshot {
            session: session.to_string(),
            task,
            commit,
            reference,
            skipped,
        })
    }

    /// True when the snapshot `commit` holds the workspace path `rel` (a file, or a
    /// directory with at least one captured file), so deleting or overwriting it can be
    /// undone with `sessions restore`. `rel` is workspace-relative, `/`-separated.
    /// Any git failure answers `false` (fail closed: "not held").
    pub async fn holds(&self, commit: &str, rel: &str) -> bool {
        let rel = rel.trim_start_matches("./").trim_end_matches('/');
        if rel.is_empty() || rel == "." {
            return true;
        }
        let spec = format!("{commit}:{rel}");
        self.git.run(&["cat-file", "-e", &spec]).await.is_ok()
    }

    /// Every path `commit` holds, workspace-relative and `/`-separated: each
    /// captured file (or symlink) and every directory above one.
    ///
    /// # Errors
    /// As [`SideRepo::take`] (git missing, failing or timing out).
    pub async fn held_paths(
        &self,
        commit: &str,
    ) -> Result<std::collections::HashSet<String>, SnapshotError> {
        let out = self
            .git
            .run(&["ls-tree", "-r", "-z", "--name-only", commit])
            .await?;
        let mut held = std::collections::HashSet::new();
        for name in out.split(|b| *b == 0).filter(|n| !n.is_empty()) {
            let name = String::from_utf8_lossy(name).into_owned();
            let mut dir = name.as_str();
            while let Some((parent, _)) = dir.rsplit_once('/') {
                held.insert(parent.to_string());
                dir = parent;
            }
            held.insert(name);
        }
        Ok(held)
    }

    /// The tasks of `session` that have a snapshot, ascending (empty when the
    /// side repository does not exist yet).
    ///
    /// # Errors
    /// As [`SideRepo::take`].
    pub async fn tasks(&self, session: &str) -> Result<Vec<u32>, SnapshotError> {
        check_session(session)?;
        if !self.exists() {
            return Ok(Vec::new());
        }
        let prefix = format!("refs/codesmith/{session}/");
        let out = self
            .git
            .text(&["for-each-ref", "--format=%(refname)", &prefix])
            .await?;
        let mut tasks: Vec<u32> = out
            .lines()
            .filter_map(|r| r.strip_prefix(&prefix)?.parse().ok())
            .collect();
        tasks.sort_unstable();
        Ok(tasks)
    }

    /// What [`SideRepo::restore`] would change, without changing the workspace.
    ///
    /// # Errors
    /// [`SnapshotError::NoSnapshot`] and those of [`SideRepo::take`].
    pub async fn preview(&self, session: &str, task: u32) -> Result<RestoreReport, SnapshotError> {
        let commit = self.resolve(session, task).await?;
        let _lock = self.prepare().await?;
        self.stage_workspace().await?;
        self.report(session, task, commit).await
    }

    /// Returns the workspace to the snapshot of `task` of `session`. The
    /// state just before is committed first (see [`RestoreReport::backup`]).
    ///
    /// # Errors
    /// [`SnapshotError::NoSnapshot`] and those of [`SideRepo::take`]; a git
    /// failure during the checkout can leave the workspace partly restored,
    /// and the backup commit still holds the state before.
    pub async fn restore(&self, session: &str, task: u32) -> Result<RestoreReport, SnapshotError> {
        let commit = self.resolve(session, task).await?;
        let _lock = self.prepare().await?;
        let (current, _) = self.stage_workspace().await?;
        let mut report = self.report(session, task, commit.clone()).await?;
        let backup = self
            .commit(
                &current,
                &format!("codesmith: workspace before restoring {session} task {task}"),
            )
            .await?;
        let backup_ref = format!("refs/codesmith-backup/{session}/{}", unix_millis());
        self.git.run(&["update-ref", &backup_ref, &backup]).await?;
        self.git
            .run(&["read-tree", "-m", "-u", &current, &commit])
            .await?;
        report.backup = Some(backup);
        Ok(report)
    }

    /// True when the side repository is fully initialised: a `git init` killed by
    /// the timeout can leave `HEAD` without `config` or `objects/`, and then the
    /// next snapshot runs `git init` again (which is safe on a partial repository).
    fn exists(&self) -> bool {
        let dir = &self.git.dir;
        dir.join("HEAD").is_file() && dir.join("config").is_file() && dir.join("objects").is_dir()
    }

    /// The commit of a task's snapshot.
    async fn resolve(&self, session: &str, task: u32) -> Result<String, SnapshotError> {
        let available = self.tasks(session).await?;
        if !available.contains(&task) {
            return Err(SnapshotError::NoSnapshot {
                session: session.to_string(),
                task,
                available,
            });
        }
        let spec = format!("{}^{{commit}}", task_ref(session, task));
        self.git.text(&["rev-parse", "--verify", "-q", &spec]).await
    }

    /// Creates the side repository if needed, locks it against other
    /// CodeSmith processes (the returned file holds the lock) and refreshes
    /// its exclude and attribute files.
    async fn prepare(&self) -> Result<fs::File, SnapshotError> {
        codesmith_tools::private::create_dir_all(&self.git.dir)?;
        private(&self.git.dir)?;
        let lock = self.lock().await?;
        if !self.exists() {
            self.git.run(&["init", "-q", "--template="]).await?;
            fs::write(
                self.git.dir.join("codesmith-workspace"),
                format!("{}\n", self.git.workspace.display()),
            )?;
        }
        let info = self.git.dir.join("info");
        fs::create_dir_all(&info)?;
        fs::write(info.join("attributes"), ATTRIBUTES)?;
        let excludes = self.excludes().await;
        fs::write(info.join("exclude"), excludes)?;
        Ok(lock)
    }

    /// Takes the side repository's lock file, waiting at most the git timeout.
    /// Holding it, any git lock file left behind is from a git that was killed
    /// (a timeout) and is removed.
    async fn lock(&self) -> Result<fs::File, SnapshotError> {
        let path = self.git.dir.join("codesmith.lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        let deadline = tokio::time::Instant::now() + self.git.timeout;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(fs::TryLockError::WouldBlock) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(SnapshotError::Busy {
                        dir: self.git.dir.display().to_string(),
                    });
                }
                Err(fs::TryLockError::Error(e)) => return Err(SnapshotError::Io(e)),
            }
        }
        // Holding the lock, no other git of ours runs here: any git lock file
        // (index.lock, config.lock, HEAD.lock, ...) is from one that was killed.
        for stale in ["index.lock", "config.lock", "HEAD.lock", "packed-refs.lock"] {
            match fs::remove_file(self.git.dir.join(stale)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(SnapshotError::Io(e));
                }
                _ => {}
            }
        }
        Ok(file)
    }

    /// The user's exclude patterns the side repository must honour besides
    /// the workspace's `.gitignore` files: the workspace's `.git/info/exclude`,
    /// the user's global excludes file, the ignore files above the workspace
    /// when it lies inside a bigger repository (see `ignore.rs`), and the side
    /// repository itself when `$CODESMITH_HOME` lies inside the workspace.
    async fn excludes(&self) -> String {
        let mut out = String::from("# written by codesmith: the user's exclude patterns\n");
        let ws = &self.git.workspace;
        for file in [
            Some(ws.join(".git").join("info").join("exclude")),
            global_excludes_file(&self.git).await,
        ]
        .into_iter()
        .flatten()
        {
            if let Ok(text) = fs::read_to_string(&file) {
                out.push_str(&text);
                out.push('\n');
            }
        }
        out.push_str(&ignore::inherited_patterns(ws));
        let snapshots = canonical(&self.git.dir);
        if let Some(parent) = snapshots.parent()
            && let Ok(rel) = parent.strip_prefix(ws)
            && !rel.as_os_str().is_empty()
        {
            out.push_str(&format!("/{}/\n", rel.to_string_lossy().replace('\\', "/")));
        }
        out
    }

    /// Stages the workspace into the side index and returns its tree id and the files
    /// left out (see `capture.rs`).
    async fn stage_workspace(&self) -> Result<(String, Vec<String>), SnapshotError> {
        let listed = self
            .git
            .run(&["ls-files", "-z", "-c", "-o", "--exclude-standard"])
            .await?;
        let ignored = self
            .git
            .run(&[
                "ls-files",
                "-z",
                "-o",
                "-i",
                "--exclude-standard",
                "--directory",
            ])
            .await?;
        let own = self.own_dir();
        let plan = capture::Plan::build(&self.git.workspace, &listed, &ignored, own.as_deref());
        if plan.exclude.is_empty() {
            self.git.run(&["add", "-A"]).await?;
        } else {
            let mut specs = b".\0".to_vec();
            let mut stale = Vec::new();
            for path in &plan.exclude {
                specs.extend_from_slice(format!(":(exclude,literal){path}\0").as_bytes());
                stale.extend_from_slice(format!(":(literal){path}\0").as_bytes());
            }
            let from_stdin = ["--pathspec-from-file=-", "--pathspec-file-nul"];
            self.git
                .run_input(&[&["add", "-A"][..], &from_stdin].concat(), Some(specs))
                .await?;
            // Entries a previous snapshot stored under an excluded path (a directory that
            // has become a repository, a file that has grown too large) are dropped.
            let rm = ["rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch"];
            self.git
                .run_input(&[&rm[..], &from_stdin].concat(), Some(stale))
                .await?;
        }
        if !plan.extras.is_empty() {
            let mut paths = Vec::new();
            for (path, _) in &plan.extras {
                paths.extend_from_slice(path.as_bytes());
                paths.push(b'\n');
            }
            let shas = self
                .git
                .run_input(
                    &["hash-object", "-w", "--no-filters", "--stdin-paths"],
                    Some(paths),
                )
                .await?;
            let shas = String::from_utf8_lossy(&shas);
            let mut info = Vec::new();
            for ((path, exec), sha) in plan.extras.iter().zip(shas.lines()) {
                let mode = if *exec { "100755" } else { "100644" };
                info.extend_from_slice(format!("{mode} {sha}\t{path}\0").as_bytes());
            }
            self.git
                .run_input(&["update-index", "--add", "-z", "--index-info"], Some(info))
                .await?;
            // Entries made from `--index-info` carry no stat data; a refresh records it so
            // that a later `read-tree -m -u` sees them up to date. Entries that differ
            // are fine (the next staging updates them).
            match self.git.run(&["update-index", "-q", "--refresh"]).await {
                Err(SnapshotError::Git { .. }) | Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        let tree = self.git.text(&["write-tree"]).await?;
        Ok((tree, plan.skipped))
    }

    /// The side repositories' directory relative to the workspace, with a trailing `/`,
    /// when `$CODESMITH_HOME` lies inside the workspace.
    fn own_dir(&self) -> Option<String> {
        let snapshots = canonical(&self.git.dir);
        let parent = snapshots.parent()?;
        let rel = parent.strip_prefix(&self.git.workspace).ok()?;
        (!rel.as_os_str().is_empty())
            .then(|| format!("{}/", rel.to_string_lossy().replace('\\', "/")))
    }

    async fn commit(&self, tree: &str, message: &str) -> Result<String, SnapshotError> {
        self.git
            .text(&["commit-tree", "--no-gpg-sign", "-m", message, tree])
            .await
    }

    /// The differences between the staged workspace and `commit`.
    async fn report(
        &self,
        session: &str,
        task: u32,
        commit: String,
    ) -> Result<RestoreReport, SnapshotError> {
        let out = self
            .git
            .run(&[
                "diff-index",
                "--cached",
                "--no-renames",
                "--name-status",
                "-z",
                &commit,
            ])
            .await?;
        let mut report = RestoreReport {
            session: session.to_string(),
            task,
            commit,
            restored: Vec::new(),
            removed: Vec::new(),
            recreated: Vec::new(),
            backup: None,
        };
        let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            let path = String::from_utf8_lossy(path).into_owned();
            match status.first() {
                Some(b'A') => report.removed.push(path),
                Some(b'D') => report.recreated.push(path),
                _ => report.restored.push(path),
            }
        }
        Ok(report)
    }
}

/// The user's global excludes file: `core.excludesFile` from the global git
/// config, else git's default `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).
async fn global_excludes_file(git: &SideGit) -> Option<PathBuf> {
    let program = git.program().ok()?;
    let mut query = codesmith_tools::host_programs::git_command(&program, &git.workspace);
    // Reads the user's global config (never the workspace's: no repository is opened).
    query.env_remove("GIT_CONFIG_GLOBAL");
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME") {
        query.env("XDG_CONFIG_HOME", xdg);
    }
    query
        .args(["config", "--global", "--path", "--get", "core.excludesFile"])
        .stderr(std::process::Stdio::null());
    let query = tokio::process::Command::from(query)
        .kill_on_drop(true)
        .output();
    if let Ok(Ok(out)) = tokio::time::timeout(Duration::from_secs(5), query).await {
        let value = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !value.is_empty() {
            return Some(PathBuf::from(value));
        }
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("git").join("ignore"))
}

/// Snapshots hold copies of workspace files (perhaps `.env` files the user
/// never committed): the side repository is readable by its owner only.
fn private(dir: &Path) -> std::io::Result<()> {
    codesmith_tools::private::restrict(dir)
}

fn check_session(session: &str) -> Result<(), SnapshotError> {
    if codesmith_policy::is_safe_name(session) {
        Ok(())
    } else {
        Err(SnapshotError::InvalidSession(session.to_string()))
    }
}

fn unix_millis() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Snapshots `workspace` for `task` of `session` with the default settings.
///
/// # Errors
/// As [`SideRepo::take`].
pub async fn take(
    home: &Path,
    workspace: &Path,
    session: &str,
    task: u32,
) -> Result<Snapshot, SnapshotError> {
    SideRepo::new(&SnapshotSettings::default(), home, workspace)
        .take(session, task)
        .await
}

/// Restores `workspace` to the snapshot of `task` of `session` with the
/// default settings. Does not write the transcript; see [`restore_task`].
///
/// # Errors
/// As [`SideRepo::restore`].
pub async fn restore(
    home: &Path,
    workspace: &Path,
    session: &str,
    task: u32,
) -> Result<RestoreReport, SnapshotError> {
    SideRepo::new(&SnapshotSettings::default(), home, workspace)
        .restore(session, task)
        .await
}

/// The one restore path (`codesmith sessions restore`, `Op::Restore`, `/restore N`):
/// with `apply`, returns `workspace` to the snapshot of task `task` of the open
/// `session` and appends a `restore` note (the [`RestoreReport`] plus an RFC 3339 `at`
/// and the workspace) to its transcript; without, reports what that would change and
/// changes nothing.
///
/// # Errors
/// As [`SideRepo::restore`] and [`SideRepo::preview`]; [`SnapshotError::Record`] when the
/// files were restored but the note could not be written.
pub async fn restore_task(
    settings: &SnapshotSettings,
    home: &Path,
    session: &mut Session,
    workspace: &Path,
    task: u32,
    apply: bool,
) -> Result<RestoreReport, SnapshotError> {
    let id = session.id().to_string();
    let repo = SideRepo::new(settings, home, workspace);
    if !apply {
        return repo.preview(&id, task).await;
    }
    let report = repo.restore(&id, task).await?;
    let mut data = serde_json::to_value(&report).map_err(std::io::Error::other)?;
    if let Some(map) = data.as_object_mut() {
        let at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        map.insert("at".into(), at.into());
        map.insert("workspace".into(), workspace.display().to_string().into());
    }
    session.note(NoteKind::Restore, data)?;
    Ok(report)
}
