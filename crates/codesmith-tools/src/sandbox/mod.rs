//! Sandbox backends for shell commands.
//!
//! A [`Backend`] rewrites a command line so that it runs confined, and says honestly whether
//! it confines anything at all (a backend that cannot isolate must report `isolates() == false`,
//! never pretend).
//!
//! - [`BwrapBackend`]: Linux bubblewrap, holding for root too: no capabilities, a user
//!   namespace where the kernel allows, system directories read-only, the workspace
//!   writable except the parts of `.git/` that run code later, credentials masked after the
//!   workspace, no host sockets, process and memory bounds ([`limits`]). [`self_test`]
//!   observes each of these on the running machine.
//! - [`NoneBackend`]: runs the command as is and reports that it does not isolate.
//!
//! [`backend_from_name`] turns a config value into a backend; an unknown name is an error,
//! never a silent fallback (note two). [`Sandbox::admit`] (over [`require_isolation`]) is the
//! one isolation check in front of every shell command and `codesmith sandbox run`: it refuses to run
//! bare when `[sandbox] required` is set.

mod bwrap;
pub mod exposure;
mod isolation;
pub mod limits;
// The one module of the sandbox with `unsafe`: what a command's process does between
// `fork` and `exec` cannot be written without it (see its documentation).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod prelude;
#[cfg(target_os = "linux")]
mod seccomp;
mod setup;

/// Elsewhere than Linux there is no bubblewrap: nothing to set up between fork and exec,
/// and no seccomp filter.
#[cfg(not(target_os = "linux"))]
mod prelude {
    use std::ffi::CString;
    use std::io;
    use std::os::fd::OwnedFd;
    use std::path::{Path, PathBuf};

    #[derive(Debug, Default)]
    pub(crate) struct Prelude {
        pub(crate) cgroup_procs: Vec<CString>,
        pub(crate) nproc: u64,
        pub(crate) staging: Option<CString>,
        pub(crate) drop_to: Option<(u32, u32)>,
        pub(crate) keep: Vec<OwnedFd>,
    }

    impl Prelude {
        pub(crate) fn stage(&mut self, _: &Path, _: &Path, _: bool) -> io::Result<PathBuf> {
            Err(io::Error::from(io::ErrorKind::Unsupported))
        }
        pub(crate) fn run(&self) -> io::Result<()> {
            Ok(())
        }
    }

    pub(crate) fn pipe_with(_: &[u8]) -> io::Result<OwnedFd> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    pub(crate) fn staging_dir() -> Option<&'static Path> {
        None
    }
}

#[cfg(not(target_os = "linux"))]
mod seccomp {
    pub const REFUSED: &[&str] = &[];
    pub const REFUSED_WITH_ARGUMENTS: &[&str] = &[];
    pub(crate) fn programs() -> Option<&'static [Vec<u8>]> {
        None
    }
}

/// The host uid and gid sandboxed commands run as when CodeSmith is root (`nobody` and
/// `nogroup` on Debian-family systems; the value of the overflow ids).
pub const SANDBOX_UID: u32 = 65534;
mod selftest;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use bwrap::{BwrapBackend, BwrapFeatures, BwrapProbe, GitGuard, credential_paths, probe};
pub use exposure::{Access, Extra};
pub use isolation::{RunError, RunOutcome, SandboxRefusal, require_isolation, run};
pub use seccomp::{
    REFUSED as SECCOMP_REFUSED, REFUSED_WITH_ARGUMENTS as SECCOMP_REFUSED_WITH_ARGUMENTS,
};
pub use selftest::{SelfTest, self_test};
pub use setup::{SetupFailure, SetupReport};

/// What a confined command may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// Canonical workspace root: the only writable tree (besides a private `/tmp`).
    pub workspace: PathBuf,
    /// Directory the command starts in (inside the workspace).
    pub cwd: PathBuf,
    /// The user's home directory, whose credential paths are hidden. `None`: only the
    /// absolute credential paths are considered.
    pub user_home: Option<PathBuf>,
    /// `$CODESMITH_HOME`; hidden from the command (approvals, spills, audit log).
    pub codesmith_home: Option<PathBuf>,
    /// True when the command may use the network.
    pub network: bool,
    /// What the user's config adds to what the sandbox shows (`[sandbox] read`, `write`,
    /// `env`).
    pub extra: Extra,
}

/// A command ready to start under a backend: its command line, its whole environment, and
/// (for bubblewrap) the steps its process takes between `fork` and `exec`.
#[derive(Debug)]
pub struct Launch {
    /// The command line, program first.
    pub argv: Vec<OsString>,
    /// The whole environment the program starts with (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    prelude: Option<prelude::Prelude>,
    /// Read end of bubblewrap's `--json-status-fd` pipe (see [`SetupReport`]).
    setup: Option<std::os::fd::OwnedFd>,
}

impl Launch {
    /// A launch with no set-up of its own: `argv` as is, with `env`.
    pub fn plain(argv: Vec<OsString>, env: Vec<(OsString, OsString)>) -> Self {
        Launch {
            argv,
            env,
            prelude: None,
            setup: None,
        }
    }

    /// The program to start (`argv[0]`; empty for an empty command line).
    pub fn program(&self) -> &std::ffi::OsStr {
        self.argv
            .first()
            .map(OsString::as_os_str)
            .unwrap_or_default()
    }

    /// Sets `cmd`'s arguments (`argv[1..]`) and environment (cleared first), and adds the
    /// set-up steps as a pre-exec hook. Hooks added to `cmd` before run first, so a
    /// reaper that forks there leaves these steps to the command's own process. Variables
    /// set on `cmd` afterwards are added to the environment.
    ///
    /// Returns what tells a failed sandbox set-up apart from the command's own exit status
    /// once the process has ended ([`SetupReport::failed`]); every caller must ask it
    /// before reporting an exit code.
    ///
    /// # Errors
    /// The report's pipe cannot be prepared (the command must then not run).
    #[must_use = "a failed sandbox set-up must not be reported as the command's exit status"]
    pub fn configure(self, cmd: &mut std::process::Command) -> std::io::Result<SetupReport> {
        use std::os::unix::process::CommandExt;
        cmd.args(self.argv.iter().skip(1));
        cmd.env_clear().envs(self.env);
        if let Some(prelude) = self.prelude {
            // SAFETY: `Prelude::run` makes only raw system calls on memory prepared before
            // the fork (see the `prelude` module), as a pre-exec hook must.
            #[allow(unsafe_code)]
            unsafe {
                cmd.pre_exec(move || prelude.run());
            }
        }
        match self.setup {
            Some(read) => SetupReport::over(read),
            None => Ok(SetupReport::default()),
        }
    }
}

/// Names of this process's environment variables that no command may inherit, with or
/// without a sandbox: those [`codesmith_policy::is_secret_env`] judges secret by name or by
/// value, and those that are not valid UTF-8 (which cannot be judged). Every path that
/// starts a command removes these.
pub fn secret_env_names() -> Vec<OsString> {
    std::env::vars_os()
        .filter(|(name, value)| match (name.to_str(), value.to_str()) {
            (Some(n), Some(v)) => codesmith_policy::is_secret_env(n, v),
            _ => true,
        })
        .map(|(name, _)| name)
        .collect()
}

/// Errors from choosing or using a backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxError {
    /// The configured backend name is not one of `none`, `bwrap`, `auto`.
    UnknownBackend(String),
    /// The backend was named explicitly but cannot run on this host.
    Unavailable {
        /// Backend name.
        backend: &'static str,
        /// What is missing, and what to do.
        reason: String,
    },
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxError::UnknownBackend(name) => write!(
                f,
                "unknown sandbox backend {name:?}: use \"bwrap\", \"none\" or \"auto\""
            ),
            SandboxError::Unavailable { backend, reason } => {
                write!(f, "sandbox backend {backend} is unavailable: {reason}")
            }
        }
    }
}

impl std::error::Error for SandboxError {}

/// One way of running a command confined (or not).
pub trait Backend: Send + Sync + fmt::Debug {
    /// Stable backend name (`"bwrap"`, `"none"`).
    fn name(&self) -> &'static str;
    /// True only when this backend really confines the child process on this host.
    fn isolates(&self) -> bool;
    /// True when every command it runs gets a fresh, private `/tmp` of its own (a tmpfs
    /// discarded when the command ends), so what a command writes or deletes below `/tmp`
    /// touches nothing of the user's. False by default.
    fn private_tmp(&self) -> bool {
        false
    }
    /// True when it can give one command the network while others run without it
    /// ([`Scope::network`] per launch), so a person's approval of a command that needs the
    /// network can open it for that command only. False by default.
    fn network_per_command(&self) -> bool {
        false
    }
    /// What it takes to run `argv` (program first) under `scope`.
    ///
    /// # Errors
    /// The sandbox cannot be set up for this scope (a path it must offer cannot be staged,
    /// the seccomp filter cannot be handed over); the command must then not run.
    fn launch(&self, argv: Vec<OsString>, scope: &Scope) -> std::io::Result<Launch>;
}

/// The backend that does not isolate: the command runs as the user, with full access.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoneBackend;

impl Backend for NoneBackend {
    fn name(&self) -> &'static str {
        "none"
    }
    fn isolates(&self) -> bool {
        false
    }
    /// The command as is, with the allowlisted environment ([`exposure::environment`]) and
    /// the user's own `HOME` and `TMPDIR`: no secret from CodeSmith's environment reaches
    /// it, even without a sandbox.
    fn launch(&self, argv: Vec<OsString>, scope: &Scope) -> std::io::Result<Launch> {
        let home = scope
            .user_home
            .clone()
            .unwrap_or_else(|| PathBuf::from("/"));
        let mut env = exposure::environment(std::env::vars_os(), &scope.extra.env, &home);
        if let Some(tmp) = std::env::var_os("TMPDIR") {
            env.retain(|(n, _)| n != "TMPDIR");
            env.push(("TMPDIR".into(), tmp));
        }
        Ok(Launch::plain(argv, env))
    }
}

/// The backend names `[sandbox] backend` accepts.
pub const BACKEND_NAMES: [&str; 3] = ["auto", "bwrap", "none"];

/// Checks that `name` is one of [`BACKEND_NAMES`], without looking at the host (a
/// configuration is judged the same on every machine; whether the backend runs here is
/// [`backend_from_name`]'s question).
///
/// # Errors
/// [`SandboxError::UnknownBackend`].
pub fn check_backend_name(name: &str) -> Result<(), SandboxError> {
    if BACKEND_NAMES.contains(&name) {
        Ok(())
    } else {
        Err(SandboxError::UnknownBackend(name.to_string()))
    }
}

/// Picks a backend by its config name.
///
/// - `"none"`: [`NoneBackend`].
/// - `"bwrap"`: [`BwrapBackend`]; `Unavailable` when `bwrap` is missing or cannot create
///   namespaces here (install bubblewrap, or set `[sandbox] backend = "none"` explicitly).
/// - `"auto"`: bwrap when it works, otherwise none (whose `isolates()` is false, so the
///   isolation check in [`require_isolation`] still refuses where isolation is required).
///
/// Any other name is `UnknownBackend`: a typo must not silently disable the sandbox.
pub fn backend_from_name(name: &str) -> Result<Arc<dyn Backend>, SandboxError> {
    match name {
        "none" => Ok(Arc::new(NoneBackend)),
        "bwrap" => BwrapBackend::detect()
            .map(|b| Arc::new(b) as Arc<dyn Backend>)
            .ok_or_else(|| SandboxError::Unavailable {
                backend: "bwrap",
                reason: "bwrap is not installed or cannot create namespaces here; install \
                         bubblewrap, or set backend = \"none\" explicitly"
                    .to_string(),
            }),
        "auto" => Ok(match BwrapBackend::detect() {
            Some(b) => Arc::new(b),
            None => Arc::new(NoneBackend),
        }),
        other => Err(SandboxError::UnknownBackend(other.to_string())),
    }
}

/// The sandbox a session's shell commands run under: a backend plus the network switch.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The backend.
    pub backend: Arc<dyn Backend>,
    /// True when commands may use the network. With a non-isolating backend the network is
    /// physically reachable whatever this says; the flag then only drives hints.
    pub network: bool,
    /// The user's home directory whose credential paths are hidden (`$HOME` by default).
    pub user_home: Option<PathBuf>,
    /// True when commands must not run unless the backend isolates them (`[sandbox]
    /// required`): `exec_shell` and `task_shell_start` then refuse through
    /// [`require_isolation`], the same isolation check as `codesmith sandbox run`.
    pub required: bool,
    /// What the user's config adds (`[sandbox] read`, `write`, `env`).
    pub extra: Extra,
}

impl Sandbox {
    /// A sandbox over `backend` with the network allowed or not.
    pub fn new(backend: Arc<dyn Backend>, network: bool) -> Self {
        Sandbox {
            backend,
            network,
            user_home: std::env::var_os("HOME").map(PathBuf::from),
            required: false,
            extra: Extra::default(),
        }
    }

    /// The same sandbox showing what `extra` adds.
    pub fn with_extra(mut self, extra: Extra) -> Self {
        self.extra = extra;
        self
    }

    /// The same sandbox with `[sandbox] required` set to `required`.
    pub fn with_required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// The isolation check in front of every shell command: [`require_isolation`] over this
    /// sandbox's backend and `required` flag.
    ///
    /// # Errors
    /// A [`SandboxRefusal`] naming the two ways out when isolation is required and the
    /// backend does not isolate.
    pub fn admit(&self) -> Result<(), SandboxRefusal> {
        require_isolation(self.backend.as_ref(), self.required)
    }

    /// One line for the user when the backend does not isolate (`None` when it does): that
    /// commands run bare, or, with `required`, that they are refused; and how to change it,
    /// naming the key and `user_config` (the user config file, `$CODESMITH_HOME/config.toml`)
    /// and saying to create that file when it does not exist.
    pub fn unisolated_notice(&self, user_config: &Path) -> Option<String> {
        if self.required && !self.backend.isolates() {
            return Some(format!(
                "shell commands will be refused: [sandbox] required = true, but the backend \
                 \"{}\" does not isolate them here. Install bubblewrap (apt-get install \
                 bubblewrap), or {}.",
                self.backend.name(),
                config_advice(user_config, "required = false"),
            ));
        }
        (!self.backend.isolates()).then(|| {
            format!(
                "shell commands run WITHOUT a sandbox (backend \"{}\"): they can read and \
                 write everything your user can. {}",
                self.backend.name(),
                match probe() {
                    BwrapProbe::NotInstalled => format!(
                        "Install bubblewrap (apt-get install bubblewrap) to isolate them, or \
                         refuse them: {}.",
                        config_advice(user_config, "required = true")
                    ),
                    _ => "Run `codesmith doctor` to see why bwrap cannot isolate them here."
                        .to_string(),
                }
            )
        })
    }
}

/// How to set `setting` under `[sandbox]` in `user_config`: add it when the file exists,
/// else create the file with those two lines.
fn config_advice(user_config: &Path, setting: &str) -> String {
    if user_config.is_file() {
        format!(
            "add `{setting}` under [sandbox] in {}",
            user_config.display()
        )
    } else {
        format!(
            "create {} (it does not exist yet) with the two lines `[sandbox]` and `{setting}`",
            user_config.display()
        )
    }
}

/// Marks this process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`, see `prctl(2)`): no core
/// dump, no ptrace attach, and `/proc/<pid>/environ` and `/proc/<pid>/mem` become readable
/// by root only, so a command run without a sandbox under a non-root user cannot read the
/// harness's keys from there. Returns false where the call is unavailable.
pub fn mark_non_dumpable() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_dumpable(false).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// True when this process is non-dumpable (see [`mark_non_dumpable`]).
pub fn is_non_dumpable() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::get_dumpable().is_ok_and(|d| !d)
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

impl Sandbox {
    /// No isolation, network reachable, not required (the default for a
    /// [`crate::ToolContext`]).
    pub fn none() -> Self {
        Sandbox::new(Arc::new(NoneBackend), true)
    }

    /// The same sandbox with the network open: for one command a person approved knowing
    /// it runs with network access (see [`Backend::network_per_command`]).
    pub fn with_network(&self) -> Sandbox {
        Sandbox {
            network: true,
            ..self.clone()
        }
    }

    /// True when the network is cut for real: an isolating backend with network off.
    pub fn network_blocked(&self) -> bool {
        self.backend.isolates() && !self.network
    }

    /// True when shell commands really run isolated, each with a private `/tmp` (see
    /// [`Backend::private_tmp`]): the command policy may then treat writes and deletions
    /// below `/tmp` as harmless ([`codesmith_policy::PrivateTmp`]).
    pub fn private_tmp(&self) -> bool {
        self.backend.isolates() && self.backend.private_tmp()
    }
}

/// One path as a sandboxed command sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposed {
    /// The path inside (the same path as on the host).
    pub path: PathBuf,
    /// How it is offered.
    pub access: Access,
    /// What it is: `host` (a host path), `empty` (a fresh empty directory), `link` (a
    /// symbolic link), `devices` (a minimal `/dev`), `proc` (a new `/proc`).
    pub kind: &'static str,
}

/// What a sandboxed command sees and may do, read from the very command line the backend
/// builds (what `codesmith sandbox explain` and `doctor` print).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The backend's name.
    pub backend: &'static str,
    /// True when the backend isolates.
    pub isolates: bool,
    /// The host uid commands run as (an unprivileged uid for a root harness under bwrap).
    pub host_uid: u32,
    /// True when commands may use the network.
    pub network: bool,
    /// Every path the command sees, in mount order (a later entry covers an earlier one);
    /// everything else is absent. Without isolation: `/`, read-write.
    pub paths: Vec<Exposed>,
    /// Names of the environment variables passed (values are not shown).
    pub env: Vec<String>,
    /// System calls refused outright (empty without a seccomp filter).
    pub syscalls_refused: Vec<&'static str>,
    /// System calls refused for some arguments, each described with them.
    pub syscalls_refused_with_arguments: Vec<&'static str>,
}

/// Explains what a command run under `sandbox` in `scope` sees (see [`Explanation`]).
///
/// # Errors
/// The sandbox cannot be set up for this scope (see [`Backend::launch`]).
pub fn explain(sandbox: &Sandbox, scope: &Scope) -> std::io::Result<Explanation> {
    let launch = sandbox.backend.launch(vec!["true".into()], scope)?;
    let own_uid = nix::unistd::geteuid().as_raw();
    let env: Vec<String> = launch
        .env
        .iter()
        .map(|(n, _)| n.to_string_lossy().into_owned())
        .collect();
    if !sandbox.backend.isolates() {
        return Ok(Explanation {
            backend: sandbox.backend.name(),
            isolates: false,
            host_uid: own_uid,
            network: true,
            paths: vec![Exposed {
                path: PathBuf::from("/"),
                access: Access::ReadWrite,
                kind: "host",
            }],
            env,
            syscalls_refused: Vec::new(),
            syscalls_refused_with_arguments: Vec::new(),
        });
    }
    let mut paths = Vec::new();
    let argv: Vec<&OsString> = launch.argv.iter().collect();
    let mut i = 1;
    let path_at = |k: usize| PathBuf::from(argv.get(k).map(|a| a.as_os_str()).unwrap_or_default());
    while i < argv.len() {
        let flag = argv[i].to_string_lossy();
        match flag.as_ref() {
            "--" => break,
            "--ro-bind" | "--ro-bind-try" | "--bind" => {
                let hidden = argv.get(i + 1).is_some_and(|s| *s == "/dev/null");
                paths.push(Exposed {
                    path: path_at(i + 2),
                    access: if hidden {
                        Access::Hidden
                    } else if flag == "--bind" {
                        Access::ReadWrite
                    } else {
                        Access::ReadOnly
                    },
                    kind: "host",
                });
                i += 3;
            }
            "--tmpfs" => {
                let ro = argv.get(i + 2).is_some_and(|s| *s == "--remount-ro");
                paths.push(Exposed {
                    path: path_at(i + 1),
                    access: if ro {
                        Access::Hidden
                    } else {
                        Access::ReadWrite
                    },
                    kind: "empty",
                });
                i += if ro { 4 } else { 2 };
            }
            "--ro-bind-data" => {
                paths.push(Exposed {
                    path: path_at(i + 2),
                    access: Access::ReadOnly,
                    kind: "generated",
                });
                i += 3;
            }
            "--symlink" => {
                paths.push(Exposed {
                    path: path_at(i + 2),
                    access: Access::ReadOnly,
                    kind: "link",
                });
                i += 3;
            }
            "--dev" | "--proc" => {
                paths.push(Exposed {
                    path: path_at(i + 1),
                    access: if flag == "--dev" {
                        Access::ReadWrite
                    } else {
                        Access::ReadOnly
                    },
                    kind: if flag == "--dev" { "devices" } else { "proc" },
                });
                i += 2;
            }
            "--chdir" | "--add-seccomp-fd" | "--seccomp" | "--json-status-fd" | "--setenv"
            | "--uid" | "--gid" => {
                i += if flag == "--setenv" { 3 } else { 2 };
            }
            _ => i += 1,
        }
    }
    let isolated_uid = if own_uid == 0 { SANDBOX_UID } else { own_uid };
    let filtered = seccomp::programs().is_some();
    Ok(Explanation {
        backend: sandbox.backend.name(),
        isolates: true,
        host_uid: isolated_uid,
        network: scope.network,
        paths,
        env,
        syscalls_refused: if filtered {
            seccomp::REFUSED.to_vec()
        } else {
            Vec::new()
        },
        syscalls_refused_with_arguments: if filtered {
            seccomp::REFUSED_WITH_ARGUMENTS.to_vec()
        } else {
            Vec::new()
        },
    })
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::none()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_an_isolating_backend_with_a_private_tmp_says_so() {
        assert!(!Sandbox::none().private_tmp());
        assert!(!NoneBackend.private_tmp());
        let bwrap = BwrapBackend::with_program(PathBuf::from("/usr/bin/bwrap"));
        assert!(Sandbox::new(Arc::new(bwrap.clone()), false).private_tmp());
        // The flag is true because every wrapped command gets a tmpfs on /tmp.
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let scope = Scope {
            workspace: ws.clone(),
            cwd: ws,
            user_home: None,
            codesmith_home: None,
            network: false,
            extra: Extra::default(),
        };
        let argv = bwrap.launch(vec!["true".into()], &scope).unwrap().argv;
        assert!(
            argv.windows(2).any(|w| w[0] == "--tmpfs" && w[1] == "/tmp"),
            "{argv:?}"
        );
    }

    #[test]
    fn unknown_backend_name_is_an_error() {
        let err = backend_from_name("opensandbox2").unwrap_err();
        assert_eq!(err, SandboxError::UnknownBackend("opensandbox2".into()));
        assert!(err.to_string().contains("bwrap"));
    }

    #[test]
    fn the_notice_says_refused_when_required_and_bare_otherwise() {
        let nowhere = Path::new("/nonexistent/config.toml");
        let bare = Sandbox::none().unisolated_notice(nowhere).unwrap();
        assert!(bare.contains("WITHOUT a sandbox"), "{bare}");
        let refused = Sandbox::none()
            .with_required(true)
            .unisolated_notice(nowhere)
            .unwrap();
        assert!(refused.contains("refused"), "{refused}");
        assert!(Sandbox::none().with_required(true).admit().is_err());
        assert!(Sandbox::none().admit().is_ok());
    }

    #[test]
    fn the_notice_names_the_config_file_and_says_to_create_it_when_missing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        let refused = |f: &Path| {
            Sandbox::none()
                .with_required(true)
                .unisolated_notice(f)
                .unwrap()
        };
        let missing = refused(&file);
        assert!(missing.contains(&file.display().to_string()), "{missing}");
        assert!(
            missing.contains("create") && missing.contains("does not exist yet"),
            "{missing}"
        );
        assert!(missing.contains("`required = false`"), "{missing}");
        std::fs::write(&file, "").unwrap();
        let present = refused(&file);
        assert!(
            present.contains("add `required = false` under [sandbox] in"),
            "{present}"
        );
        assert!(!present.contains("create"), "{present}");
    }

    #[test]
    fn none_backend_says_it_does_not_isolate() {
        let b = backend_from_name("none").unwrap();
        assert_eq!(b.name(), "none");
        assert!(!b.isolates());
        assert!(!Sandbox::none().network_blocked());
    }
}
