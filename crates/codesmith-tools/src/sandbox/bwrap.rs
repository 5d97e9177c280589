//! The bubblewrap backend (Linux).
//!
//! What a command under it gets (see `bwrap(1)` for each flag):
//! - no capabilities (`--cap-drop ALL`), and where the kernel allows a user namespace, an
//!   unprivileged uid (`--unshare-user --uid 65534` when the harness runs as root) from which
//!   no further user namespace can be made (`--disable-userns`); a new session, PID, IPC and
//!   UTS namespace, and death with the harness (`--die-with-parent`);
//! - the system directories read-only, a private `/tmp` and `/run`, a minimal `/dev`, a new
//!   `/proc`; `/sys` only for the CPU list; no host `/run`, `/var/run`, `$XDG_RUNTIME_DIR`;
//!   every host Unix socket bound when the command starts (`/proc/net/unix`, and the agent
//!   sockets `SSH_AUTH_SOCK`, `GPG_AGENT_INFO`) covered by `/dev/null`;
//! - the workspace read-write, except `.git/config`, `.git/hooks/`, `.git/info/` and
//!   `.codesmith/`, which are read-only (a hook or `core.fsmonitor` written there would run
//!   at the user's next `git status`, outside any sandbox);
//! - credential masks mounted last, so a workspace that is or contains `$HOME` cannot
//!   expose them;
//! - the process-count and memory bounds of [`super::limits`].

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::{Backend, Scope, limits};

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

/// Workspace paths bound read-only over the writable workspace. Git porcelain still works:
/// the index, refs, objects, logs and `COMMIT_EDITMSG` stay writable.
const READ_ONLY_IN_WORKSPACE: &[&str] = &[
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/hooks",
    ".git/info",
    ".codesmith",
];

/// Workspace directories that are created empty and read-only when absent (only when
/// `.git` is a directory), so the command cannot create them either.
const MADE_READ_ONLY_IN_WORKSPACE: &[&str] = &[".git/hooks", ".git/info"];

/// Files in a git directory that send git to another directory for its configuration and
/// hooks (`commondir`, see `gitrepository-layout(5)`), read whenever present. One that does
/// not exist cannot be mounted read-only without leaving an empty file, which git rejects;
/// [`GitGuard`] removes any the command created instead.
const GIT_REDIRECTS: &[&str] = &[".git/commondir"];

/// Top-level entries of `/` that are never bound from the host: replaced by fresh mounts
/// (`/dev`, `/proc`, `/tmp`, `/run`), reduced (`/sys`), or of no use to a build.
const NOT_FROM_HOST: &[&str] = &["dev", "proc", "sys", "tmp", "run", "lost+found", "boot"];

/// The uid and gid a root harness maps to inside the user namespace (`nobody`).
const UNPRIVILEGED_ID: u32 = 65534;

/// What the installed `bwrap` can do here, probed once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BwrapFeatures {
    /// A user namespace can be made (`--unshare-user`): the command runs under an
    /// unprivileged uid when the harness is root.
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

/// Probes `bwrap` once per process: the full set of flags first, then without
/// `--disable-userns`, then without a user namespace (where the kernel or a container
/// forbids one; capabilities are still dropped).
pub fn probe() -> &'static BwrapProbe {
    static PROBE: OnceLock<BwrapProbe> = OnceLock::new();
    PROBE.get_or_init(|| {
        let Some(program) = find_on_path("bwrap") else {
            return BwrapProbe::NotInstalled;
        };
        let tries = [
            BwrapFeatures {
                userns: true,
                disable_userns: true,
            },
            BwrapFeatures {
                userns: true,
                disable_userns: false,
            },
            BwrapFeatures {
                userns: false,
                disable_userns: false,
            },
        ];
        let mut reason = String::new();
        for features in tries {
            let mut args = privilege_args(features);
            args.extend(
                [
                    "--unshare-net",
                    "--unshare-pid",
                    "--ro-bind",
                    "/",
                    "/",
                    "--dev",
                    "/dev",
                    "--proc",
                    "/proc",
                    "--",
                    "true",
                ]
                .map(OsString::from),
            );
            match Command::new(&program)
                .args(&args)
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
                Err(e) => reason = e.to_string(),
            }
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
        if nix_is_root() {
            let id = UNPRIVILEGED_ID.to_string();
            args.extend(["--uid".into(), id.clone().into(), "--gid".into(), id.into()]);
        }
        if features.disable_userns {
            args.push("--disable-userns".into());
        }
    }
    args
}

fn nix_is_root() -> bool {
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

impl Backend for BwrapBackend {
    fn name(&self) -> &'static str {
        "bwrap"
    }

    fn isolates(&self) -> bool {
        true
    }

    /// Every command gets `--tmpfs /tmp` of its own (only the workspace, when it lies below
    /// `/tmp`, and read-only masks are mounted over it).
    fn private_tmp(&self) -> bool {
        true
    }

    fn wrap(&self, argv: Vec<OsString>, scope: &Scope) -> Vec<OsString> {
        let bounds = limits::bounds();
        let mut out: Vec<OsString> = bounds.join_prefix();
        out.push(self.program.clone().into());
        out.extend(privilege_args(self.features));
        let mut push = |args: &[&dyn AsRef<OsStr>]| {
            out.extend(args.iter().map(|a| a.as_ref().to_os_string()));
        };
        push(&[&"--unshare-pid", &"--unshare-ipc", &"--unshare-uts"]);
        if !scope.network {
            push(&[&"--unshare-net"]);
        }
        for (entry, link) in root_entries() {
            match link {
                Some(target) => push(&[&"--symlink", &target, &entry]),
                None => push(&[&"--ro-bind", &entry, &entry]),
            }
        }
        push(&[&"--dev", &"/dev", &"--proc", &"/proc"]);
        push(&[&"--tmpfs", &"/tmp", &"--tmpfs", &"/run"]);
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
        if Path::new("/var/run").is_dir() && !Path::new("/var/run").is_symlink() {
            push(&[&"--tmpfs", &"/var/run"]);
        }
        push(&[&"--bind", &scope.workspace, &scope.workspace]);
        // `.git` itself is a mount point, so it cannot be renamed, removed or replaced by a
        // directory with a configuration of the command's choosing; a `.git` file (a linked
        // worktree or submodule) is read-only, so it cannot point git elsewhere.
        let git = scope.workspace.join(".git");
        if let Ok(meta) = std::fs::symlink_metadata(&git) {
            if meta.is_dir() {
                push(&[&"--bind", &git, &git]);
            } else {
                push(&[&"--ro-bind", &git, &git]);
            }
        }
        for rel in READ_ONLY_IN_WORKSPACE {
            let path = scope.workspace.join(rel);
            if path.exists() {
                push(&[&"--ro-bind", &path, &path]);
            } else if MADE_READ_ONLY_IN_WORKSPACE.contains(rel)
                && std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir())
            {
                // A hooks or info directory that does not exist yet is created empty and
                // read-only, so the command cannot create it either.
                push(&[&"--tmpfs", &path, &"--remount-ro", &path]);
            }
        }
        // Before the credential masks, which may cover some of these sockets again.
        for path in host_sockets(scope) {
            push(&[&"--ro-bind", &"/dev/null", &path]);
        }
        for path in credential_paths(scope) {
            if path.is_dir() {
                push(&[&"--tmpfs", &path, &"--remount-ro", &path]);
            } else {
                push(&[&"--ro-bind", &"/dev/null", &path]);
            }
        }
        // Variables that point at what is not mounted (agent sockets, the runtime
        // directory, the session bus) are dropped; temporary files go to the private /tmp.
        for var in [
            "SSH_AUTH_SOCK",
            "GPG_AGENT_INFO",
            "XDG_RUNTIME_DIR",
            "DBUS_SESSION_BUS_ADDRESS",
        ] {
            push(&[&"--unsetenv", &var]);
        }
        push(&[&"--setenv", &"TMPDIR", &"/tmp"]);
        push(&[&"--chdir", &scope.cwd, &"--"]);
        out.extend(bounds.rlimit_prefix());
        out.extend(argv);
        out
    }
}

/// Removes the git redirections ([`GIT_REDIRECTS`]) a sandboxed command created in the
/// workspace, once it is over (all its processes die with the sandbox's PID namespace).
/// Made before the command starts; [`GitGuard::finish`] may be called any number of times.
#[derive(Debug, Clone, Default)]
pub struct GitGuard {
    /// Redirection files that did not exist before the command.
    absent: Vec<PathBuf>,
}

impl GitGuard {
    /// Records which redirections are absent in `scope`'s workspace; inert for a backend
    /// that does not isolate (nothing then stops the command from writing them, or worse).
    pub fn before(scope: &Scope, isolates: bool) -> Self {
        if !isolates {
            return GitGuard::default();
        }
        let absent = GIT_REDIRECTS
            .iter()
            .map(|rel| scope.workspace.join(rel))
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        GitGuard { absent }
    }

    /// Removes the redirections the command created and returns them (empty when there
    /// were none). A path that cannot be removed is returned too, with the error.
    pub fn finish(&self) -> Vec<(PathBuf, Option<std::io::Error>)> {
        let mut out = Vec::new();
        for path in &self.absent {
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

/// Top-level entries of `/` to bind read-only: `(path, Some(target))` for a symlink
/// (recreated as one, e.g. `/bin -> usr/bin`), `(path, None)` for a directory.
fn root_entries() -> Vec<(PathBuf, Option<PathBuf>)> {
    let Ok(dir) = std::fs::read_dir("/") else {
        return vec![(PathBuf::from("/usr"), None), (PathBuf::from("/etc"), None)];
    };
    let mut out: Vec<(PathBuf, Option<PathBuf>)> = dir
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| !NOT_FROM_HOST.contains(&n))
        })
        .filter_map(|e| {
            let path = e.path();
            let kind = e.file_type().ok()?;
            if kind.is_symlink() {
                Some((path.clone(), Some(std::fs::read_link(&path).ok()?)))
            } else if kind.is_dir() {
                Some((path, None))
            } else {
                None
            }
        })
        .collect();
    out.sort();
    out
}

/// Most host sockets masked; beyond this many, the rest stay reachable (a host with that
/// many bound Unix sockets is not one a sandbox is run on in practice).
const MAX_SOCKET_MASKS: usize = 2048;

/// Host Unix sockets that would otherwise be reachable by path (`connect(2)` needs only
/// write permission on the socket file, which the harness's uid has on its own sockets,
/// also from inside the user namespace): every bound socket the host lists in
/// `/proc/net/unix` (see `unix(7)`) and the agent sockets named by the environment
/// (`SSH_AUTH_SOCK`, `GPG_AGENT_INFO`), outside `/tmp`, `/run`, `/dev` and `/proc`
/// (replaced wholesale). Each is covered by `/dev/null`, so connecting fails. Sockets bound
/// after the command starts are not covered.
fn host_sockets(scope: &Scope) -> Vec<PathBuf> {
    let listed = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let mut found: Vec<PathBuf> = listed
        .lines()
        .skip(1)
        // Num RefCount Protocol Flags Type St Inode Path; an abstract name starts with `@`.
        .filter_map(|l| l.split_whitespace().nth(7))
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .collect();
    for var in ["SSH_AUTH_SOCK", "GPG_AGENT_INFO"] {
        if let Some(v) = std::env::var_os(var) {
            // GPG_AGENT_INFO is `path:pid:protocol`.
            let s = v.to_string_lossy();
            found.push(PathBuf::from(s.split(':').next().unwrap_or("")));
        }
    }
    let mut out: Vec<PathBuf> = found
        .into_iter()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| {
            use std::os::unix::fs::FileTypeExt;
            std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
                && !["/tmp", "/run", "/var/run", "/dev", "/proc", "/sys"]
                    .iter()
                    .any(|d| p.starts_with(d))
                && p != &scope.workspace
        })
        .collect();
    out.sort();
    out.dedup();
    out.truncate(MAX_SOCKET_MASKS);
    out
}

/// The existing credential paths (canonical) that the bwrap backend hides for `scope`:
/// the fixed home-relative list plus `$CODESMITH_HOME` (wherever it lies, the workspace
/// included). Paths that contain the workspace are skipped: masking them would hide the
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

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
