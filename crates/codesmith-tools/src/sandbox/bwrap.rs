//! The bubblewrap backend (Linux).
//!
//! What a command under it gets (see `bwrap(1)` for each flag, and [`super::exposure`] for
//! the allowlist it is built from):
//! - never the host's root: when CodeSmith runs as root, the command's process gives up
//!   root before bubblewrap starts ([`super::prelude`]), so its user namespace maps to the
//!   unprivileged host uid [`SANDBOX_UID`]; the workspace stays writable through an
//!   idmapped mount. No capabilities (`--cap-drop ALL`), no further user namespace
//!   (`--disable-userns` and the seccomp filter), a new session, PID, IPC and UTS
//!   namespace, a fresh session keyring, and death with the harness
//!   (`--die-with-parent`);
//! - a seccomp filter ([`super::seccomp`]);
//! - only what [`super::exposure`] allows: the system directories read-only (minus the
//!   secrets in `/etc`), an empty home with the toolchain folders read-only, the workspace
//!   read-write, a private `/tmp`, `/var/tmp` and `/run`, a minimal `/dev`, a new `/proc`
//!   (bubblewrap keeps `/proc/sys` and `/proc/sysrq-trigger` read-only), `/sys` only for the
//!   CPU list. Other homes, `/srv`, `/mnt`, `/media`, `/var` and every host socket outside
//!   the workspace are absent;
//! - in the workspace, read-only: the parts of every git directory that make git run a
//!   program later (its configuration, hooks, `info/`, redirections), the `.git` files of
//!   submodules, the directory `core.hooksPath` names, and `.codesmith/` (an empty one
//!   when absent);
//! - an environment built from the allowlist, with `HOME` inside;
//! - the process-count and memory bounds of [`super::limits`].

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::SANDBOX_UID;
use super::{Backend, Launch, Scope, limits};

/// Directories under the user's home that hold credentials; each is covered by an empty
/// tmpfs inside the sandbox (credentials are not mounted at all).
const CREDENTIAL_DIRS: &[&str] = &[
    ".ssh",
    ".aws",
    ".config/gh",
    ".gnupg",
    ".kube",
    ".docker",
    ".azure",
    ".config/gcloud",
    ".password-store",
    ".codex",
    ".claude",
    ".config/github-copilot",
    ".huggingface",
];

/// Files under the user's home that hold tokens, keys or typed history; each is covered by
/// `/dev/null`.
const CREDENTIAL_FILES: &[&str] = &[
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/hub",
    ".vault-token",
    ".pgpass",
    ".cache/huggingface/token",
    ".terraform.d/credentials.tfrc.json",
    ".claude.json",
    ".env",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".local/share/fish/fish_history",
];

/// Directories of a git directory that are made empty and read-only when absent, so the
/// command cannot create them either.
const MADE_WHEN_ABSENT: &[&str] = &["hooks", "info"];

/// What the installed `bwrap` can do here, probed once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BwrapFeatures {
    /// A user namespace can be made (`--unshare-user`). Always true when CodeSmith runs as
    /// root: without one there is no way to run the command as an unprivileged host user,
    /// and the backend reports that it cannot isolate.
    pub userns: bool,
    /// `--disable-userns` is supported: no further user namespace inside.
    pub disable_userns: bool,
}

/// The outcome of probing `bwrap` on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BwrapProbe {
    /// No `bwrap` on `PATH` (install the `bubblewrap` package).
    NotInstalled,
    /// `bwrap` exists but cannot create its namespaces here.
    Broken {
        /// The program found.
        program: PathBuf,
        /// Its first line of complaint (stderr), for the report.
        reason: String,
    },
    /// `bwrap` works, with these features.
    Works {
        /// The program found.
        program: PathBuf,
        /// What it can do.
        features: BwrapFeatures,
    },
}

/// Probes `bwrap` once per process by running `true` through the real launch path (the
/// prelude, the allowlist and the seccomp filter) over a throw-away workspace: the full
/// set of flags first, then without `--disable-userns`, then (only when CodeSmith is not
/// root) without a user namespace. As root, a bubblewrap that cannot make a user namespace
/// as the unprivileged user is `Broken`: the command would run as the host's root.
pub fn probe() -> &'static BwrapProbe {
    static PROBE: OnceLock<BwrapProbe> = OnceLock::new();
    PROBE.get_or_init(|| {
        let Some(program) = find_on_path("bwrap") else {
            return BwrapProbe::NotInstalled;
        };
        let mut tries = vec![
            BwrapFeatures {
                userns: true,
                disable_userns: true,
            },
            BwrapFeatures {
                userns: true,
                disable_userns: false,
            },
        ];
        if !is_root() {
            tries.push(BwrapFeatures {
                userns: false,
                disable_userns: false,
            });
        }
        let mut reason = String::new();
        let dir = match tempfile::Builder::new().prefix("codesmith-probe").tempdir() {
            Ok(d) => d,
            Err(e) => {
                return BwrapProbe::Broken {
                    program,
                    reason: format!("no temporary directory for the probe: {e}"),
                };
            }
        };
        let ws = dir
            .path()
            .canonicalize()
            .unwrap_or(dir.path().to_path_buf());
        let scope = Scope {
            workspace: ws.clone(),
            cwd: ws,
            user_home: None,
            codesmith_home: None,
            network: false,
            extra: super::Extra::default(),
        };
        for features in tries {
            let backend = BwrapBackend {
                program: program.clone(),
                features,
            };
            let launch = match backend.launch(vec!["true".into()], &scope) {
                Ok(l) => l,
                Err(e) => {
                    reason = e.to_string();
                    continue;
                }
            };
            let mut cmd = Command::new(launch.program());
            // Any failure of `true` is bubblewrap's: its first line of stderr is the reason.
            // The report is held until `true` has ended (bwrap writes to it).
            let _setup = match launch.configure(&mut cmd) {
                Ok(setup) => setup,
                Err(e) => {
                    reason = format!("the sandbox could not be set up: {e}");
                    continue;
                }
            };
            match cmd
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
            {
                Ok(out) if out.status.success() => {
                    return BwrapProbe::Works { program, features };
                }
                Ok(out) => {
                    if reason.is_empty() {
                        reason = String::from_utf8_lossy(&out.stderr)
                            .lines()
                            .next()
                            .unwrap_or("exited with an error")
                            .to_string();
                    }
                }
                Err(e) => reason = format!("the sandbox could not be set up: {e}"),
            }
        }
        if is_root() {
            reason = format!(
                "as root, commands must run as the unprivileged uid {SANDBOX_UID}, and bwrap \
                 could not make a user namespace for it here ({reason})"
            );
        }
        BwrapProbe::Broken { program, reason }
    })
}

/// The flags that take privileges away, for `features`.
fn privilege_args(features: BwrapFeatures) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["--cap-drop", "ALL", "--new-session", "--die-with-parent"]
        .map(OsString::from)
        .to_vec();
    if features.userns {
        args.push("--unshare-user".into());
        if features.disable_userns {
            args.push("--disable-userns".into());
        }
    }
    args
}

/// True when CodeSmith runs with effective uid 0.
pub(crate) fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Bubblewrap: see the module documentation for what a command gets.
#[derive(Debug, Clone)]
pub struct BwrapBackend {
    program: PathBuf,
    features: BwrapFeatures,
}

impl BwrapBackend {
    /// A backend using the `bwrap` at `program` (not probed; no user namespace assumed).
    #[cfg(test)]
    pub fn with_program(program: PathBuf) -> Self {
        BwrapBackend {
            program,
            features: BwrapFeatures {
                userns: false,
                disable_userns: false,
            },
        }
    }

    /// The `bwrap` on `PATH`, if it exists and can create its namespaces here (see
    /// [`probe`]).
    pub fn detect() -> Option<Self> {
        match probe() {
            BwrapProbe::Works { program, features } => Some(BwrapBackend {
                program: program.clone(),
                features: *features,
            }),
            _ => None,
        }
    }

    /// What this backend's `bwrap` can do here.
    pub fn features(&self) -> BwrapFeatures {
        self.features
    }
}

/// Where bubblewrap finds the host paths: themselves, or for a root harness their staged
/// clones (see [`super::prelude`]).
struct Sources {
    staging: Option<PathBuf>,
    /// `(host path, staged path)`, longest host path first when looking up.
    staged: Vec<(PathBuf, PathBuf)>,
}

impl Sources {
    /// The path bubblewrap reads for host path `p`: inside a staged tree, the same place in
    /// its clone.
    fn of(&self, p: &Path) -> PathBuf {
        self.staged
            .iter()
            .filter(|(host, _)| p.starts_with(host))
            .max_by_key(|(host, _)| host.as_os_str().len())
            .map(|(host, staged)| match p.strip_prefix(host) {
                Ok(rest) if rest.as_os_str().is_empty() => staged.clone(),
                Ok(rest) => staged.join(rest),
                Err(_) => p.to_path_buf(),
            })
            .unwrap_or_else(|| p.to_path_buf())
    }

    /// Stages `p` when the harness is root (a no-op otherwise); returns its source path.
    fn stage(
        &mut self,
        prelude: &mut super::prelude::Prelude,
        p: &Path,
        writable: bool,
    ) -> std::io::Result<PathBuf> {
        if let Some(staging) = &self.staging {
            let staged = prelude.stage(staging, p, writable)?;
            self.staged.push((p.to_path_buf(), staged.clone()));
            Ok(staged)
        } else {
            Ok(p.to_path_buf())
        }
    }
}

impl Backend for BwrapBackend {
    fn name(&self) -> &'static str {
        "bwrap"
    }

    fn isolates(&self) -> bool {
        true
    }

    /// Each launch decides `--unshare-net` from its own scope.
    fn network_per_command(&self) -> bool {
        true
    }

    /// Every command gets `--tmpfs /tmp` of its own (only the workspace, when it lies below
    /// `/tmp`, and read-only masks are mounted over it).
    fn private_tmp(&self) -> bool {
        true
    }

    fn launch(&self, argv: Vec<OsString>, scope: &Scope) -> std::io::Result<Launch> {
        use super::exposure as ex;
        let bounds = limits::bounds();
        let root = is_root();
        let mut prelude = super::prelude::Prelude {
            cgroup_procs: bounds.procs_cstrings(),
            nproc: limits::MAX_PROCESSES,
            ..Default::default()
        };
        let mut sources = Sources {
            staging: None,
            staged: Vec::new(),
        };
        if root {
            let staging = super::prelude::staging_dir().ok_or_else(|| {
                std::io::Error::other(
                    "no /mnt, /media or /srv directory to stage the sandbox's paths in",
                )
            })?;
            prelude.staging = Some(
                std::ffi::CString::new(staging.as_os_str().as_encoded_bytes())
                    .map_err(std::io::Error::other)?,
            );
            prelude.drop_to = Some((SANDBOX_UID, SANDBOX_UID));
            sources.staging = Some(staging.to_path_buf());
        }
        let host_env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let home = ex::inside_home(scope.user_home.as_deref());

        let mut out: Vec<OsString> = vec![self.program.clone().into()];
        out.extend(privilege_args(self.features));
        let mut push = |args: &[&dyn AsRef<OsStr>]| {
            out.extend(args.iter().map(|a| a.as_ref().to_os_string()));
        };
        push(&[&"--unshare-pid", &"--unshare-ipc", &"--unshare-uts"]);
        if !scope.network {
            push(&[&"--unshare-net"]);
        }
        for (dir, link) in ex::system_dirs() {
            match link {
                Some(target) => push(&[&"--symlink", &target, &dir]),
                None => push(&[&"--ro-bind", &dir, &dir]),
            }
        }
        // The protected git settings also live in the system git configuration, which
        // the command cannot unset as it can an environment variable. A file can only be
        // mounted over one that exists, so this covers the places where the host has one.
        for path in ex::SYSTEM_GITCONFIGS {
            let path = Path::new(path);
            if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
                continue;
            }
            let fd = super::prelude::pipe_with(&ex::sandbox_gitconfig(
                std::fs::read(path).ok().as_deref(),
            ))?;
            {
                use std::os::fd::AsRawFd;
                push(&[&"--ro-bind-data", &fd.as_raw_fd().to_string(), &path]);
            }
            prelude.keep.push(fd);
        }
        for secret in ex::etc_secrets() {
            mask(&mut push, &secret);
        }
        push(&[&"--dev", &"/dev", &"--proc", &"/proc"]);
        push(&[
            &"--tmpfs",
            &"/tmp",
            &"--tmpfs",
            &"/var/tmp",
            &"--tmpfs",
            &"/run",
        ]);
        push(&[
            &"--ro-bind-try",
            &"/sys/devices/system/cpu",
            &"/sys/devices/system/cpu",
        ]);
        if scope.network {
            // With the network allowed, name resolution must work: on systemd hosts
            // /etc/resolv.conf points into the host's /run, which is not mounted.
            if let Ok(target) = Path::new("/etc/resolv.conf").canonicalize()
                && target.starts_with("/run")
            {
                push(&[&"--ro-bind", &target, &target]);
            }
        }
        // An empty home, then the toolchains, then what the user added.
        push(&[&"--tmpfs", &home]);
        let toolchains =
            ex::toolchain_dirs(scope.user_home.as_deref(), &host_env, &scope.workspace);
        for dir in &toolchains {
            let src = sources.stage(&mut prelude, dir, false)?;
            push(&[&"--ro-bind", &src, dir]);
        }
        for secret in ex::toolchain_secrets(scope.user_home.as_deref(), &toolchains) {
            mask(&mut push, &secret);
        }
        for (paths, writable) in [(&scope.extra.read, false), (&scope.extra.write, true)] {
            for p in paths {
                let Ok(p) = p.canonicalize() else { continue };
                if p.starts_with(&scope.workspace) || p == Path::new("/") {
                    continue;
                }
                let src = sources.stage(&mut prelude, &p, writable)?;
                push(&[if writable { &"--bind" } else { &"--ro-bind" }, &src, &p]);
            }
        }
        // The workspace, writable.
        let ws_src = sources.stage(&mut prelude, &scope.workspace, true)?;
        push(&[&"--bind", &ws_src, &scope.workspace]);
        let ws = &scope.workspace;
        let git_dirs = ex::git_dirs(ws);
        let git_files = git_files(ws);
        let hooks = ex::hooks_path_dir(ws);
        let own = ws.join(".codesmith");
        // What is kept read-only in the workspace, and what is made as an empty read-only
        // directory where nothing exists.
        let mut read_only: Vec<PathBuf> = Vec::new();
        let mut made: Vec<PathBuf> = Vec::new();
        for git in &git_dirs {
            for name in ex::GIT_READ_ONLY {
                let path = git.join(name);
                if std::fs::symlink_metadata(&path).is_ok() {
                    read_only.push(path);
                } else if MADE_WHEN_ABSENT.contains(name) {
                    made.push(path);
                }
            }
        }
        // `.git` files (a linked worktree, a submodule's checkout) are read-only, so they
        // cannot point git at a directory of the command's choosing.
        read_only.extend(git_files);
        read_only.extend(hooks);
        // Configuration files the repository includes from the workspace: git reads them
        // as its own (an absent one the command creates is removed by [`GitGuard`]).
        read_only.extend(
            ex::git_config_files(ws, scope.user_home.as_deref())
                .into_iter()
                .filter(|p| p.starts_with(ws) && !p.starts_with(ws.join(".git")))
                .filter(|p| std::fs::symlink_metadata(p).is_ok()),
        );
        // An empty `.codesmith/` is most often the mount point another sandboxed command
        // of this workspace left while it runs, and which that command's [`GitGuard`]
        // removes when it ends, possibly between this launch and bubblewrap's mounts (bwrap
        // would then fail on a missing source): it is made afresh like an absent one,
        // which shows the same empty read-only directory and needs nothing on the host.
        let own_empty = std::fs::symlink_metadata(&own).is_ok_and(|m| m.is_dir())
            && std::fs::read_dir(&own).is_ok_and(|mut d| d.next().is_none());
        if std::fs::symlink_metadata(&own).is_ok() && !own_empty {
            read_only.push(own);
        } else {
            made.push(own);
        }
        // A mount over a symbolic link lands wherever the link points (even outside the
        // workspace), and the link itself stays replaceable: such a workspace is refused.
        for path in read_only.iter().chain(&made) {
            no_link_below(ws, path)?;
        }
        // Every directory between the workspace and a protected path is a mount point of
        // its own (itself, writable), so it cannot be renamed or removed: otherwise moving
        // `.git/modules` or `.husky` aside takes the read-only mounts with it and leaves the
        // original paths free to be made anew. `.git` itself is among them.
        let mut pins: Vec<PathBuf> = read_only
            .iter()
            .chain(&made)
            .flat_map(|p| p.ancestors().skip(1))
            .filter(|a| a.starts_with(ws) && *a != ws.as_path())
            .map(Path::to_path_buf)
            .chain(git_dirs.iter().cloned())
            .collect();
        pins.sort();
        pins.dedup();
        for dir in &pins {
            push(&[&"--bind", &sources.of(dir), dir]);
        }
        for path in &read_only {
            push(&[&"--ro-bind", &sources.of(path), path]);
        }
        for path in &made {
            push(&[&"--tmpfs", path, &"--remount-ro", path]);
        }
        // Credentials inside the workspace: when it is or contains the home directory, the
        // known credential folders of that home, and `$CODESMITH_HOME` wherever it lies
        // inside.
        for path in credential_paths(scope) {
            if !path.starts_with(&scope.workspace) {
                continue;
            }
            if path.is_dir() {
                push(&[&"--tmpfs", &path, &"--remount-ro", &path]);
            } else {
                push(&[&"--ro-bind", &"/dev/null", &path]);
            }
        }
        if let Some(programs) = super::seccomp::programs() {
            for program in programs {
                let fd = super::prelude::pipe_with(program)?;
                use std::os::fd::AsRawFd;
                push(&[&"--add-seccomp-fd", &fd.as_raw_fd().to_string()]);
                prelude.keep.push(fd);
            }
        }
        // bubblewrap reports the command's exit code here, and only once the command ran:
        // a bwrap that ends without that report failed to set the sandbox up (see
        // [`super::SetupReport`]). The write end reaches bwrap only (the command's own
        // descriptors are bwrap's business: it does not pass this one on).
        let (setup_read, setup_write) = super::prelude::pipe()?;
        {
            use std::os::fd::AsRawFd;
            push(&[&"--json-status-fd", &setup_write.as_raw_fd().to_string()]);
        }
        prelude.keep.push(setup_write);
        push(&[&"--chdir", &scope.cwd, &"--"]);
        out.extend(argv);
        Ok(Launch {
            argv: out,
            env: ex::environment(host_env, &scope.extra.env, &home),
            prelude: Some(prelude),
            setup: Some(setup_read),
        })
    }
}

/// Refuses `path` (inside `workspace`) when it is, or passes through, a symbolic link below
/// the workspace, or is not a plain path below it.
fn no_link_below(workspace: &Path, path: &Path) -> std::io::Result<()> {
    let refuse = |what: &Path, why: &str| {
        std::io::Error::other(format!(
            "{} {why}: the sandbox keeps it read-only and cannot do so through a link (a \
             mount there would land wherever the link points); replace it with the \
             directory or file itself",
            what.display()
        ))
    };
    let Ok(rel) = path.strip_prefix(workspace) else {
        return Err(refuse(path, "is not inside the workspace"));
    };
    let mut cur = workspace.to_path_buf();
    for c in rel.components() {
        let std::path::Component::Normal(name) = c else {
            return Err(refuse(path, "is not a plain path"));
        };
        cur.push(name);
        if std::fs::symlink_metadata(&cur).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(refuse(&cur, "is a symbolic link"));
        }
    }
    Ok(())
}

/// Covers `path`: an empty read-only directory over a directory, an empty file otherwise.
fn mask(push: &mut impl FnMut(&[&dyn AsRef<OsStr>]), path: &Path) {
    if path.is_dir() {
        push(&[&"--tmpfs", &path, &"--remount-ro", &path]);
    } else {
        push(&[&"--ro-bind", &"/dev/null", &path]);
    }
}

/// The `.git` files of the workspace: at its root, and at each submodule path
/// `.gitmodules` names (bounded to 256).
fn git_files(workspace: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = workspace.join(".git");
    if std::fs::symlink_metadata(&root).is_ok_and(|m| m.is_file()) {
        out.push(root);
    }
    let Ok(modules) = std::fs::read_to_string(workspace.join(".gitmodules")) else {
        return out;
    };
    for line in modules.lines().take(4096) {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if !k.trim().eq_ignore_ascii_case("path") {
            continue;
        }
        let rel = Path::new(v.trim());
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            continue;
        }
        let file = workspace.join(rel).join(".git");
        if std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
            out.push(file);
        }
        if out.len() >= 256 {
            break;
        }
    }
    out
}

/// Removes what a sandboxed command created in the workspace at the read-only places of its
/// git directories ([`super::exposure::GIT_READ_ONLY`] that were absent, in `.git` and in
/// every submodule's and linked worktree's git directory), once it is over (all its processes die with the sandbox's PID namespace).
/// Made before the command starts; [`GitGuard::finish`] may be called any number of times.
#[derive(Debug, Clone, Default)]
pub struct GitGuard {
    /// Redirection files that did not exist before the command.
    absent: Vec<PathBuf>,
    /// `.codesmith/` when it did not exist: the sandbox makes it as an empty read-only
    /// mount point, and the empty directory left behind is removed afterwards.
    mount_point: Option<PathBuf>,
    /// The workspace: links inside it on the way to an absent file are the command's.
    workspace: PathBuf,
}

impl GitGuard {
    /// Records which redirections are absent in `scope`'s workspace; inert for a backend
    /// that does not isolate (nothing then stops the command from writing them, or worse).
    pub fn before(scope: &Scope, isolates: bool) -> Self {
        if !isolates {
            return GitGuard::default();
        }
        // A `commondir` or `gitdir` that does not exist cannot be mounted read-only without
        // leaving an empty file, which git rejects; what the command makes there (a
        // redirection of git's configuration and hooks, or a link that the next command's
        // mount would follow) is removed instead.
        let absent = super::exposure::git_dirs(&scope.workspace)
            .iter()
            .flat_map(|git| {
                super::exposure::GIT_READ_ONLY
                    .iter()
                    .filter(|name| !MADE_WHEN_ABSENT.contains(name))
                    .map(move |name| git.join(name))
            })
            .chain(
                super::exposure::git_config_files(&scope.workspace, scope.user_home.as_deref())
                    .into_iter()
                    .filter(|p| {
                        p.starts_with(&scope.workspace)
                            && !p.starts_with(scope.workspace.join(".git"))
                    }),
            )
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        let own = scope.workspace.join(".codesmith");
        let mount_point = std::fs::symlink_metadata(&own).is_err().then_some(own);
        GitGuard {
            absent,
            mount_point,
            workspace: scope.workspace.clone(),
        }
    }

    /// Removes the redirections the command created and returns them (empty when there
    /// were none). A path that cannot be removed is returned too, with the error.
    pub fn finish(&self) -> Vec<(PathBuf, Option<std::io::Error>)> {
        if let Some(dir) = &self.mount_point {
            // Only an empty directory goes (remove_dir fails on anything else).
            let _ = std::fs::remove_dir(dir);
        }
        let mut out = Vec::new();
        for path in &self.absent {
            // Never through a link: when a directory on the way is one (the command may
            // have made it, pointing anywhere), the link itself is what goes, not what it
            // reaches.
            if let Some(link) = linked_parent(&self.workspace, path) {
                let removed = std::fs::remove_file(&link);
                out.push((link, removed.err()));
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
            out.push((path.clone(), removed.err()));
        }
        out
    }
}

/// The first directory between `workspace` (excluded) and `path` that is a link, or `None`
/// when every one that exists is a real directory or `path` is not inside `workspace`
/// (links above the workspace are the system's, not the command's).
fn linked_parent(workspace: &Path, path: &Path) -> Option<PathBuf> {
    let rel = path.parent()?.strip_prefix(workspace).ok()?;
    let mut at = workspace.to_path_buf();
    let mut found = None;
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => {
                found = Some(at.clone());
            }
            _ => return None,
        }
        if found.is_some() {
            break;
        }
    }
    found
}

/// The existing credential paths (canonical) of `scope`: the fixed home-relative list plus
/// `$CODESMITH_HOME`. Outside the workspace they are absent from the sandbox anyway (it
/// shows an empty home); the bwrap backend covers those that lie inside the workspace (a
/// workspace that is or contains the home directory). Paths that contain the workspace are skipped: masking them would hide the
/// workspace itself.
pub fn credential_paths(scope: &Scope) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Some(home) = &scope.user_home {
        for rel in CREDENTIAL_DIRS.iter().chain(CREDENTIAL_FILES) {
            found.push(home.join(rel));
        }
    }
    if let Some(ch) = &scope.codesmith_home {
        found.push(ch.clone());
    }
    let mut canonical: Vec<PathBuf> = found
        .into_iter()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| !scope.workspace.starts_with(p) && p != Path::new("/"))
        .collect();
    canonical.sort();
    canonical.dedup();
    // A path under an earlier (directory) mask is hidden already, and its mount point
    // could not be made inside the read-only mask.
    let mut kept: Vec<PathBuf> = Vec::with_capacity(canonical.len());
    for p in canonical {
        if !kept.iter().any(|k| p.starts_with(k) && p != *k) {
            kept.push(p);
        }
    }
    kept
}

/// `name` in an absolute `PATH` entry below one of the system directories
/// ([`super::exposure::SYSTEM_DIRS`], so never in a workspace or a home): the sandbox
/// program itself runs outside the sandbox, so a copy the workspace planted must never be
/// the one found.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| {
            dir.is_absolute()
                && super::exposure::SYSTEM_DIRS
                    .iter()
                    .any(|s| dir.starts_with(s))
        })
        .map(|dir| dir.join(name))
        .find(|p| crate::host_programs::is_executable(p))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod git_guard_attack_tests {
    use super::*;

    /// Another command's `.codesmith/` mount point, removed by its guard between this
    /// command's launch and bubblewrap's mounts, does not make bubblewrap fail.
    #[test]
    fn an_empty_mount_point_removed_before_bwrap_mounts_does_not_fail_the_sandbox() {
        let Some(backend) = BwrapBackend::detect() else {
            return;
        };
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join(".codesmith")).unwrap();
        let scope = Scope {
            workspace: ws.clone(),
            cwd: ws.clone(),
            user_home: None,
            codesmith_home: None,
            network: false,
            extra: Default::default(),
        };
        let launch = backend
            .launch(
                vec!["test".into(), "-d".into(), ".codesmith".into()],
                &scope,
            )
            .unwrap();
        // The other command ends now: its guard removes the empty mount point.
        std::fs::remove_dir(ws.join(".codesmith")).unwrap();
        let mut cmd = Command::new(launch.program());
        let mut setup = launch.configure(&mut cmd).unwrap();
        let out = cmd.current_dir(&ws).stdin(Stdio::null()).output().unwrap();
        assert!(
            !setup.failed(out.status),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// An absent included config file whose parent the command turns into a link to a
    /// folder outside the workspace: what the link reaches must not be removed.
    #[test]
    fn git_guard_never_removes_through_a_link_the_command_made() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        let ws = ws.canonicalize().unwrap();
        std::fs::write(
            ws.join(".git/config"),
            "[include]\n\tpath = ../conf/local.cfg\n",
        )
        .unwrap();
        let outside = d.path().join("outside");
        std::fs::create_dir_all(outside.join("local.cfg")).unwrap();
        std::fs::write(outside.join("local.cfg/keep"), "mine\n").unwrap();
        let scope = Scope {
            workspace: ws.clone(),
            cwd: ws.clone(),
            user_home: None,
            codesmith_home: None,
            network: false,
            extra: Default::default(),
        };
        let guard = GitGuard::before(&scope, true);
        std::os::unix::fs::symlink(&outside, ws.join("conf")).unwrap();
        let _ = guard.finish();
        assert!(outside.join("local.cfg/keep").exists());
        // The link the command made is what goes.
        assert!(std::fs::symlink_metadata(ws.join("conf")).is_err());
    }
}
