//! Per-session state shared by tool calls.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::fs::beneath::Root;
use crate::fs::freshness::FreshnessTracker;
use crate::fs::paths::{ResolvedPath, real_location_of, resolve_in};
use crate::{ErrorCode, Refusal};

// The file tools never write below the `codesmith_policy::PROTECTED_DIRS` directories:
// `.git` (a hook, or a `core.fsmonitor` line in its config, runs at the user's next
// `git status`, outside any sandbox) and `.codesmith` (the project's safety
// configuration). Matched against every component of the path as given and of its
// real location, including the spellings a case-insensitive or Windows file system
// takes for the same directory (`.GIT`, `.git.`, `GIT~1`; see
// `ToolContext::resolve_for_write`).

/// What a tool call may know about its session: the workspace root and the
/// CodeSmith home. Session-scoped trackers (freshness, shell cwd) live here too.
///
/// Cloning is cheap and shares the session state; [`ToolContext::with_cancel`]
/// makes the clone a call (or a task) runs with, carrying its cancellation token.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// `$CODESMITH_HOME` (spill files, audit log, approvals).
    pub home: PathBuf,
    /// Files read in this session (read-before-write check). Shared, so clones of a
    /// session's context see one tracker.
    pub freshness: Arc<FreshnessTracker>,
    /// One-shot mode (`codesmith tool`): read-before-write state cannot survive between
    /// invocations, so writing tools accept `"force_fresh": true` (and `edit_file` a
    /// matching `sha256`) in place of a prior read. Off by default; never on for a model
    /// session.
    pub force_fresh_allowed: bool,
    /// Shell state: the working directory `cd` moves, background tasks, drift memory.
    pub shell: Arc<crate::shell::ShellSession>,
    /// The sandbox shell commands run under (default: none, which does not isolate).
    pub sandbox: crate::sandbox::Sandbox,
    /// The held handle of the workspace directory, opened on first use; every file tool
    /// opens paths below it (see [`crate::fs::beneath`]).
    root: OnceLock<Arc<Root>>,
    /// Cancels the calls running with this context: a shell command is killed with its
    /// whole process tree, any other tool is abandoned where it waits (see
    /// [`crate::call_tool`]). The MCP server hands in the token of the request; the engine
    /// the token of the running task. Default: a token nobody cancels.
    pub cancel: CancellationToken,
    /// Model usage of requests tools made on the session's behalf (the `rlm` tool's child
    /// calls), not yet counted in the task's totals: the engine takes it after each round
    /// of tool calls. Shared by the session's clones.
    pub child_usage: Arc<ChildUsage>,
    /// A person approved this very call (they were asked and said yes, or a grant of theirs
    /// covers it): a secret file it reads is shown as it is, and a file with other hard
    /// links may be written. False by default, so a call nobody approved (any call under
    /// `--approval auto`, `codesmith tool`, the MCP server) gets secrets masked and such
    /// writes refused. The engine sets it per call ([`ToolContext::approved_by_person`]).
    pub person_approved: bool,
    /// A shell command of this call may leave behind files another program runs later
    /// (`.cargo/config.toml`, `.envrc`, …; see [`codesmith_policy::runs_later`]): set for
    /// every call under `--approval auto` and for calls a person approved. Otherwise such a
    /// file the command created or changed is put back as it was, and the result says so
    /// (see `crate::shell`).
    pub keep_run_later: bool,
    /// Directories outside the workspace the read-only file tools may read (the user's
    /// `[trust] read` and `/trust add`); shared by the session's clones. Empty by default.
    pub trusted: Arc<crate::fs::trusted::TrustedReads>,
    /// The session's model reads images (the provider's `accepts_images`, set by
    /// the engine when it is built): `read_file` on an image then answers with the image
    /// itself, otherwise with a text saying what the file is. False by default.
    pub images: bool,
    /// The session's language servers (diagnostics after writes, the `lsp` tool); `None`
    /// when none is configured or found. Shared by the session's clones.
    pub lsp: Option<Arc<crate::lsp::LspManager>>,
    /// Tells this session's contexts from every other one in the process (its clones share
    /// it; a subagent's context has its own): the key of state a tool holds per session.
    session_key: u64,
    /// Where a running shell command's latest output lines go while it runs (see
    /// [`LiveOutput`]); `None` (the default) sends nothing. The engine sets it per call.
    pub live_output: Option<LiveOutput>,
}

/// Receives a running command's latest output lines ([`crate::shell::LIVE_LINES`] lines
/// at most, each cut to [`crate::shell::LIVE_LINE_CHARS`] characters, secrets masked as
/// in the result), each time they change, at most every
/// [`crate::shell::LIVE_INTERVAL`]. For a person watching: the model reads only the
/// result.
#[derive(Clone)]
pub struct LiveOutput(Arc<dyn Fn(Vec<String>) + Send + Sync>);

impl LiveOutput {
    /// A receiver calling `f` with the latest lines.
    pub fn new(f: impl Fn(Vec<String>) + Send + Sync + 'static) -> Self {
        LiveOutput(Arc::new(f))
    }

    /// Hands on the latest lines.
    pub fn send(&self, lines: Vec<String>) {
        (self.0)(lines);
    }
}

impl std::fmt::Debug for LiveOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveOutput")
    }
}

/// Usage of model requests made by tools, waiting to be added to the session's totals.
#[derive(Debug, Default)]
pub struct ChildUsage(std::sync::Mutex<codesmith_protocol::Usage>);

impl ChildUsage {
    /// Adds one request's usage (saturating, see [`codesmith_protocol::Usage::add`]).
    pub fn add(&self, usage: &codesmith_protocol::Usage) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .add(usage);
    }

    /// The usage added since the last call, leaving zero behind.
    pub fn take(&self) -> codesmith_protocol::Usage {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

impl ToolContext {
    /// A context for `workspace` (canonicalized by the caller) and `home`.
    pub fn new(workspace: PathBuf, home: PathBuf) -> Self {
        ToolContext {
            workspace,
            home,
            freshness: Arc::new(FreshnessTracker::new()),
            force_fresh_allowed: false,
            shell: Arc::default(),
            sandbox: crate::sandbox::Sandbox::none(),
            root: OnceLock::new(),
            cancel: CancellationToken::new(),
            child_usage: Arc::default(),
            person_approved: false,
            keep_run_later: false,
            trusted: Arc::default(),
            images: false,
            lsp: None,
            session_key: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
            live_output: None,
        }
    }

    /// The context for one `codesmith tool` invocation: like [`ToolContext::new`], with
    /// [`ToolContext::force_fresh_allowed`] on.
    pub fn one_shot(workspace: PathBuf, home: PathBuf) -> Self {
        ToolContext {
            force_fresh_allowed: true,
            ..ToolContext::new(workspace, home)
        }
    }

    /// The key of this session's tool-held state (see the field): equal for clones, unique
    /// per [`ToolContext::new`].
    pub fn session_key(&self) -> u64 {
        self.session_key
    }

    /// The same context with shell commands running under `sandbox`.
    pub fn with_sandbox(mut self, sandbox: crate::sandbox::Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The same session state, for one call a person approved (see
    /// [`ToolContext::person_approved`]).
    pub fn approved_by_person(&self) -> Self {
        ToolContext {
            person_approved: true,
            keep_run_later: true,
            ..self.clone()
        }
    }

    /// The same session state, for one shell command a person approved knowing it runs
    /// with network access: its sandbox opens the network for this call only.
    pub fn with_network(&self) -> Self {
        ToolContext {
            sandbox: self.sandbox.with_network(),
            ..self.clone()
        }
    }

    /// The same session state, for one call under `--approval auto`: what its shell
    /// command writes that another program runs later is kept (and named in its result).
    pub fn keeping_run_later(&self) -> Self {
        ToolContext {
            keep_run_later: true,
            ..self.clone()
        }
    }

    /// The same session state, for one call whose running output goes to `live`.
    pub fn with_live_output(&self, live: LiveOutput) -> Self {
        ToolContext {
            live_output: Some(live),
            ..self.clone()
        }
    }

    /// The same session state, with calls cancelled by `cancel`.
    pub fn with_cancel(&self, cancel: CancellationToken) -> Self {
        ToolContext {
            cancel,
            ..self.clone()
        }
    }

    /// The same context with a fresh, empty read record of its own: the reads of a call
    /// run on it count for the session only once adopted
    /// ([`crate::fs::freshness::FreshnessTracker::adopt`]), as for a call started before
    /// its response was known whole.
    pub fn with_own_freshness(&self) -> Self {
        ToolContext {
            freshness: Arc::new(FreshnessTracker::new()),
            ..self.clone()
        }
    }

    /// Resolves a model-supplied path inside the workspace (three-stage containment, see
    /// [`crate::fs::paths::resolve`]) below the held workspace handle. A path inside
    /// `$CODESMITH_HOME` (when that lies in the workspace) is refused too: the user's
    /// approvals, policy and memory are not the model's to read or change.
    ///
    /// Errors: `OUTSIDE_WORKSPACE`, `INVALID_ARGUMENTS`, `DENIED` (CodeSmith's home), and
    /// for a system error the refusal [`crate::fs::os_error::io_refusal`] names (on the
    /// workspace directory itself, [`crate::fs::os_error::workspace_refusal`]: `NOT_FOUND`
    /// for a workspace removed or renamed).
    pub fn resolve(&self, model_path: &str) -> Result<ResolvedPath, Refusal> {
        let path = resolve_in(&self.root()?, model_path)?;
        // Where the home is or will be: a home not created yet, or spelled through a
        // symlink or `..`, is still recognised. When it cannot be located, fail closed.
        let inside_home = real_location_of(&self.home).map_or(true, |h| path.abs.starts_with(h));
        if inside_home {
            return Err(Refusal::new(
                ErrorCode::Denied,
                format!(
                    "\"{}\" is inside CodeSmith's own home ($CODESMITH_HOME): its approvals, \
                     policy and memory are not changed or read by tools.",
                    path.rel
                ),
                "Leave this directory alone; ask the user if the task needs a change there.",
            )
            .with("path", path.rel.as_str()));
        }
        Ok(path)
    }

    /// Like [`ToolContext::resolve`], for a path a tool only reads: a path outside the
    /// workspace is resolved below the trusted read root ([`ToolContext::trusted`]) it lies
    /// in, with the same containment (a symlink out of that root is refused) and spelled
    /// absolute in results. Writers never call this.
    ///
    /// Errors: those of [`ToolContext::resolve`] (`OUTSIDE_WORKSPACE` names the trusted
    /// roots when there are any).
    pub fn resolve_for_read(&self, model_path: &str) -> Result<ResolvedPath, Refusal> {
        let refusal = match self.resolve(model_path) {
            Ok(path) => return Ok(path),
            Err(r) if r.code == ErrorCode::OutsideWorkspace => r,
            Err(r) => return Err(r),
        };
        let roots = self.trusted.roots();
        if roots.is_empty() {
            return Err(refusal);
        }
        let lexical = Path::new(model_path)
            .is_absolute()
            .then(|| crate::fs::paths::normalize_lexically(Path::new(model_path)))
            .flatten();
        let Some(root_dir) = lexical.as_deref().and_then(|p| self.trusted.root_of(p)) else {
            let names: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            let mut refusal = refusal.with("trusted_read", names.clone());
            refusal.hint = format!(
                "Use a path inside the workspace, or an absolute path inside a directory the \
                 user trusts for reading: {}.",
                names.join(", ")
            );
            return Err(refusal);
        };
        let root = Root::open(&root_dir).map_err(|e| {
            let dir = root_dir.display().to_string();
            crate::fs::os_error::io_refusal(&dir, crate::fs::os_error::Access::Reach, &e)
        })?;
        let mut path = resolve_in(&Arc::new(root), model_path)?;
        path.rel = path.abs.display().to_string();
        Ok(path)
    }

    /// Like [`ToolContext::resolve`], for a path a file tool is about to create, change or
    /// delete: anything under a [`codesmith_policy::PROTECTED_DIRS`] directory (`.git/`, `.codesmith/`) is
    /// refused with `DENIED`, whether named directly or reached through a symlink; so is an
    /// existing regular file with other hard links unless a person approved the call
    /// ([`ToolContext::person_approved`]): its other names are unknown and may lie outside
    /// the workspace, and the write would change them all.
    ///
    /// Errors: those of [`ToolContext::resolve`]; `DENIED` for a protected path or a
    /// linked file.
    pub fn resolve_for_write(&self, model_path: &str) -> Result<ResolvedPath, Refusal> {
        self.resolve_all_for_write(&[model_path])?
            .pop()
            .ok_or_else(Refusal::internal)
    }

    /// [`ToolContext::resolve_for_write`] for every path one call writes together
    /// (`apply_patch`), in order: a git directory the writes would complete between them
    /// (one adds `HEAD`, another `objects/…`) is refused as well.
    ///
    /// Errors: the first error of any path, as [`ToolContext::resolve_for_write`].
    pub fn resolve_all_for_write(
        &self,
        model_paths: &[&str],
    ) -> Result<Vec<ResolvedPath>, Refusal> {
        let paths = model_paths
            .iter()
            .map(|p| self.resolve(p))
            .collect::<Result<Vec<_>, _>>()?;
        let pending: Vec<&Path> = paths.iter().map(|p| p.inner.as_path()).collect();
        for path in &paths {
            refuse_protected(path, &pending)?;
            if !self.person_approved
                && let Some(links) = crate::files::concerns::other_links(path)
            {
                return Err(crate::files::concerns::linked_refusal(&path.rel, links));
            }
        }
        Ok(paths)
    }

    /// `$CODESMITH_HOME`, canonical, when it lies inside the workspace: the directory the
    /// walking tools (`list_dir`, `grep_files`, `file_search`) never enter.
    pub fn private_home(&self) -> Option<PathBuf> {
        let home = real_location_of(&self.home).ok()?;
        let ws = self.workspace.canonicalize().ok()?;
        (home.starts_with(&ws)).then_some(home)
    }

    /// The held workspace handle, opened on first use.
    fn root(&self) -> Result<Arc<Root>, Refusal> {
        if let Some(root) = self.root.get() {
            return Ok(Arc::clone(root));
        }
        let gone = |e: std::io::Error| crate::fs::os_error::workspace_refusal(&self.workspace, &e);
        let canonical = self.workspace.canonicalize().map_err(gone)?;
        let root = Arc::new(Root::open(&canonical).map_err(gone)?);
        Ok(Arc::clone(self.root.get_or_init(|| root)))
    }
}

/// `DENIED` when `path` lies under a [`codesmith_policy::PROTECTED_DIRS`] directory (as given or as
/// reached) or in a git directory of any name once `pending` (every path of the same
/// call, root-relative) are written; see [`in_git_dir`].
fn refuse_protected(path: &ResolvedPath, pending: &[&Path]) -> Result<(), Refusal> {
    let hit = protected_component(Path::new(&path.rel))
        .map(|dir| (dir, format!("{dir}/")))
        .or_else(|| protected_component(&path.inner).map(|dir| (dir, format!("{dir}/"))))
        .or_else(|| {
            in_git_dir(path.root.path(), &path.inner, pending).map(|d| {
                let d = if d.as_os_str().is_empty() {
                    ".".to_string()
                } else {
                    d.display().to_string()
                };
                (
                    ".git",
                    format!("the git directory {d}/ (it holds HEAD, objects/ and refs/)"),
                )
            })
        });
    if let Some((dir, what)) = hit {
        return Err(Refusal::new(
                ErrorCode::Denied,
                format!(
                    "\"{}\" is under {what}, which the file tools do not write: {}",
                    path.rel,
                    if dir == ".git" {
                        "a hook or config line there would run on the user's machine at their next git command."
                    } else {
                        "it holds the project's CodeSmith safety configuration."
                    }
                ),
                format!(
                    "This change needs the user's approval: ask the user to make it, or run it with \
                     exec_shell, where it asks for approval. Do not try another path to {dir}/."
                ),
            )
            .with("path", path.rel.as_str())
            .with("protected", dir));
    }
    Ok(())
}

/// The directory (relative to `root`) on the way to `inner` that git would use as a
/// repository once the write to `inner` is done, if any: one holding a `HEAD` file and
/// either `objects/` and `refs/` directories or a `commondir` file (git's
/// `is_git_directory`). This finds a git directory by what it is, whatever its name: the
/// target of a `.git` file (`gitdir: …`, `git init --separate-git-dir`, worktrees,
/// submodules) and a bare repository, including one this very write would complete.
fn in_git_dir(root: &Path, inner: &Path, pending: &[&Path]) -> Option<PathBuf> {
    let parts: Vec<&std::ffi::OsStr> = inner
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let mut dir = root.to_path_buf();
    let mut dir_rel = PathBuf::new();
    for entry in parts {
        // Whether one of the writes creates `dir/name` as a file or as a directory.
        let pending = |name: &str, as_dir: bool| {
            pending.iter().any(|p| {
                let Ok(rest) = p.strip_prefix(&dir_rel) else {
                    return false;
                };
                let mut rest = rest.components();
                rest.next().is_some_and(|first| {
                    first
                        .as_os_str()
                        .to_str()
                        .is_some_and(|f| f.eq_ignore_ascii_case(name))
                }) && rest.next().is_some() == as_dir
            })
        };
        let file = |name: &str| pending(name, false) || dir.join(name).is_file();
        let subdir = |name: &str| pending(name, true) || dir.join(name).is_dir();
        if file("HEAD") && ((subdir("objects") && subdir("refs")) || file("commondir")) {
            return Some(dir_rel);
        }
        dir.push(entry);
        dir_rel.push(entry);
    }
    None
}

/// The first [`codesmith_policy::PROTECTED_DIRS`] name among the components of `path`, as
/// [`protected_name`] matches it.
fn protected_component(path: &Path) -> Option<&'static str> {
    path.components().find_map(|c| match c {
        Component::Normal(n) => protected_name(n),
        _ => None,
    })
}

/// The [`codesmith_policy::PROTECTED_DIRS`] entry `name` opens on some file system the workspace may be
/// on ([`codesmith_policy::protected_name`], shared with the shell classifier).
fn protected_name(name: &std::ffi::OsStr) -> Option<&'static str> {
    codesmith_policy::protected_name(&name.to_string_lossy())
}
