//! The bubblewrap backend (Linux).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::{Backend, Scope};

/// Directories under the user's home that hold credentials; each is covered by an empty
/// tmpfs inside the sandbox (seed 002: credentials are not mounted at all).
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
];

/// Files under the user's home that hold tokens or keys; each is covered by `/dev/null`.
const CREDENTIAL_FILES: &[&str] = &[
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/hub",
];

/// Bubblewrap: workspace writable, everything else read-only, credentials hidden, network
/// unshared unless allowed, a fresh PID namespace that dies with the parent.
#[derive(Debug, Clone)]
pub struct BwrapBackend {
    program: PathBuf,
}

impl BwrapBackend {
    /// A backend using the `bwrap` at `program` (not probed).
    pub fn with_program(program: PathBuf) -> Self {
        BwrapBackend { program }
    }

    /// The `bwrap` on `PATH`, if it exists and can create its namespaces here (probed once
    /// per process by running `true` under it).
    pub fn detect() -> Option<Self> {
        static PROBE: OnceLock<Option<PathBuf>> = OnceLock::new();
        PROBE
            .get_or_init(|| {
                let program = find_on_path("bwrap")?;
                let ok = Command::new(&program)
                    .args(["--ro-bind", "/", "/", "--unshare-net", "--unshare-pid"])
                    .args(["--dev", "/dev", "--proc", "/proc", "--", "true"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(false);
                ok.then_some(program)
            })
            .clone()
            .map(BwrapBackend::with_program)
    }
}

impl Backend for BwrapBackend {
    fn name(&self) -> &'static str {
        "bwrap"
    }

    fn isolates(&self) -> bool {
        true
    }

    fn wrap(&self, argv: Vec<OsString>, scope: &Scope) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec![self.program.clone().into()];
        let mut push = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
            out.extend(args.iter().map(|a| a.as_ref().to_os_string()));
        };
        push(&[&"--die-with-parent", &"--new-session", &"--unshare-pid"]);
        push(&[&"--unshare-ipc", &"--unshare-uts"]);
        if !scope.network {
            push(&[&"--unshare-net"]);
        }
        push(&[
            &"--ro-bind",
            &"/",
            &"/",
            &"--dev",
            &"/dev",
            &"--proc",
            &"/proc",
        ]);
        push(&[&"--tmpfs", &"/tmp"]);
        for path in credential_paths(scope) {
            if path.is_dir() {
                push(&[&"--tmpfs", &path]);
            } else {
                push(&[&"--ro-bind", &"/dev/null", &path]);
            }
        }
        push(&[&"--bind", &scope.workspace, &scope.workspace]);
        push(&[&"--chdir", &scope.cwd, &"--"]);
        out.extend(argv);
        out
    }
}

/// The existing credential paths (canonical) that the bwrap backend hides for `scope`:
/// the fixed home-relative list plus `$CODESMITH_HOME`. Paths that contain the workspace
/// are skipped (the workspace is mounted over them anyway).
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
    canonical
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
