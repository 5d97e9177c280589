//! What a sandboxed command may see: the one allowlist of paths and environment variables.
//!
//! The sandbox is built from this list, never from a list of what to hide: a path or a
//! variable that is not named here (or added by the user's `[sandbox] read`, `write` and
//! `env`) is simply absent inside.
//!
//! - System directories ([`SYSTEM_DIRS`]) read-only, with the files in `/etc` that hold
//!   secrets ([`ETC_SECRETS`]) replaced by empty ones.
//! - The workspace read-write, except the parts of its git directories that make git run a
//!   program later ([`git_read_only`]) and `.codesmith/`.
//! - An empty home directory at the same path as the user's `$HOME`, with the toolchain
//!   folders a build needs ([`TOOLCHAIN_DIRS`], and the directories named by the toolchain
//!   variables in [`TOOLCHAIN_ENV`]) read-only, minus the credential files they may hold
//!   ([`TOOLCHAIN_SECRETS`]).
//! - A private `/tmp`, `/var/tmp` and `/run`, a minimal `/dev`, a new `/proc`.
//! - The environment variables in [`ENV_ALLOW`] (and `LC_*`), the toolchain variables, and
//!   the names the user lists in `[sandbox] env`; `HOME` and `TMPDIR` point inside.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// System directories bound read-only when they exist on the host.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
];

/// Files and directories under `/etc` that hold secrets; each is covered by an empty file
/// or an empty read-only directory inside the sandbox (a glob `*` matches one name part).
pub const ETC_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/*_key",
    "/etc/ssl/private",
    "/etc/security/opasswd",
    "/etc/NetworkManager/system-connections",
    "/etc/wireguard",
    "/etc/docker/key.json",
    "/etc/machine-id",
];

/// Folders under the user's home that toolchains read during a build: offered read-only
/// when they exist. Everything else in the home directory is absent.
pub const TOOLCHAIN_DIRS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".npm",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".yarn/berry/cache",
    ".cache/yarn",
    ".cache/pip",
    ".cache/uv",
    ".local/share/uv",
    ".cache/go-build",
    "go/pkg",
    "go/bin",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
    ".ivy2/cache",
    ".sbt",
    ".cache/coursier",
    ".local/bin",
    ".local/lib",
    ".pyenv",
    ".rbenv",
    ".gem",
    ".dotnet",
    ".nuget/packages",
    ".elan",
    ".ghcup",
    ".cabal/packages",
    ".cabal/bin",
    ".opam",
    ".cache/ms-playwright",
];

/// Files inside the toolchain folders that hold credentials: covered by an empty file.
pub const TOOLCHAIN_SECRETS: &[&str] = &[
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".npm/_authToken",
    ".gem/credentials",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".sbt/credentials",
    ".sbt/.credentials",
    ".nuget/NuGet/NuGet.Config",
];

/// Environment variables a sandboxed command receives when they are set (besides `LC_*`,
/// the toolchain variables and the user's `[sandbox] env`). Everything else is dropped.
pub const ENV_ALLOW: &[&str] = &[
    "PATH",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "PWD",
    "COLORTERM",
    "NO_COLOR",
    "CI",
];

/// Toolchain variables passed when set; each names a directory, which is offered read-only
/// when it is not already visible (for example `CARGO_HOME=/srv/cargo`).
pub const TOOLCHAIN_ENV: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOMODCACHE",
    "GOCACHE",
    "GOFLAGS",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYENV_ROOT",
    "NVM_DIR",
    "VOLTA_HOME",
    "JAVA_HOME",
    "MAVEN_HOME",
    "GRADLE_USER_HOME",
    "DOTNET_ROOT",
    "RBENV_ROOT",
];

/// What the user adds to the sandbox in their own config (`[sandbox] read`, `write`, `env`;
/// a project config may only remove entries).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extra {
    /// Host paths visible read-only (absolute; a missing one is skipped).
    pub read: Vec<PathBuf>,
    /// Host paths visible read-write (absolute; a missing one is skipped).
    pub write: Vec<PathBuf>,
    /// Names of further environment variables passed through when set.
    pub env: Vec<String>,
}

/// How a path is offered inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Visible, not writable.
    ReadOnly,
    /// Visible and writable.
    ReadWrite,
    /// Replaced by an empty file or an empty read-only directory.
    Hidden,
}

impl Access {
    /// `ro`, `rw` or `hidden`.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::ReadOnly => "ro",
            Access::ReadWrite => "rw",
            Access::Hidden => "hidden",
        }
    }
}

/// The home directory inside the sandbox: the user's `$HOME` path when it is absolute and
/// not `/`, else `/home/sandbox`. It starts empty.
pub fn inside_home(user_home: Option<&Path>) -> PathBuf {
    match user_home {
        Some(h) if h.is_absolute() && h != Path::new("/") => h.to_path_buf(),
        _ => PathBuf::from("/home/sandbox"),
    }
}

/// The existing system directories of [`SYSTEM_DIRS`]: `(path, Some(target))` for a
/// symbolic link (recreated as one, e.g. `/bin -> usr/bin`), `(path, None)` for a directory.
pub fn system_dirs() -> Vec<(PathBuf, Option<PathBuf>)> {
    SYSTEM_DIRS
        .iter()
        .filter_map(|d| {
            let path = PathBuf::from(d);
            let meta = std::fs::symlink_metadata(&path).ok()?;
            if meta.file_type().is_symlink() {
                Some((path.clone(), Some(std::fs::read_link(&path).ok()?)))
            } else if meta.is_dir() {
                Some((path, None))
            } else {
                None
            }
        })
        .collect()
}

/// The existing paths of [`ETC_SECRETS`], globs expanded (one level).
pub fn etc_secrets() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for pattern in ETC_SECRETS {
        let path = Path::new(pattern);
        let name = path.file_name().and_then(OsStr::to_str).unwrap_or("");
        if let Some((prefix, suffix)) = name.split_once('*') {
            let dir = path.parent().unwrap_or(Path::new("/"));
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut found: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
                })
                .map(|e| e.path())
                .collect();
            found.sort();
            out.extend(found);
        } else if std::fs::symlink_metadata(path).is_ok() {
            out.push(path.to_path_buf());
        }
    }
    out
}

/// True when `path` is already visible through a system directory.
fn under_system_dir(path: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|d| path.starts_with(d))
}

/// The toolchain folders offered read-only: those of [`TOOLCHAIN_DIRS`] under `home` that
/// exist, and the directories the toolchain variables of `env` name (when absolute,
/// existing and not under a system directory), each canonical, without duplicates or
/// paths below another entry, and never the workspace or a path containing it.
pub fn toolchain_dirs(
    home: Option<&Path>,
    env: &[(OsString, OsString)],
    workspace: &Path,
) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    if let Some(home) = home {
        found.extend(TOOLCHAIN_DIRS.iter().map(|d| home.join(d)));
    }
    for (name, value) in env {
        if TOOLCHAIN_ENV.iter().any(|t| OsStr::new(t) == name) {
            let p = PathBuf::from(value);
            if p.is_absolute() {
                found.push(p);
            }
        }
    }
    let mut canonical: Vec<PathBuf> = found
        .into_iter()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| p.is_dir() && !under_system_dir(p))
        .filter(|p| !workspace.starts_with(p) && !p.starts_with(workspace))
        .collect();
    canonical.sort();
    canonical.dedup();
    let mut kept: Vec<PathBuf> = Vec::with_capacity(canonical.len());
    for p in canonical {
        if !kept.iter().any(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    kept
}

/// The credential files inside the offered toolchain folders that exist: each is covered.
pub fn toolchain_secrets(home: Option<&Path>, toolchains: &[PathBuf]) -> Vec<PathBuf> {
    let Some(home) = home else {
        return Vec::new();
    };
    TOOLCHAIN_SECRETS
        .iter()
        .map(|rel| home.join(rel))
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| toolchains.iter().any(|t| p.starts_with(t)))
        .collect()
}

/// True when the environment variable `name` passes into the sandbox: named in
/// [`ENV_ALLOW`] or [`TOOLCHAIN_ENV`], `LC_*`, or listed by the user in `extra`.
pub fn env_passes(name: &str, extra: &[String]) -> bool {
    // These would make git skip or replace the sandbox's system configuration
    // ([`sandbox_gitconfig`]), which carries the protected settings.
    if matches!(name, "GIT_CONFIG_NOSYSTEM" | "GIT_CONFIG_SYSTEM") {
        return false;
    }
    ENV_ALLOW.contains(&name)
        || TOOLCHAIN_ENV.contains(&name)
        || (name.starts_with("LC_") && name.len() > 3)
        || extra.iter().any(|e| e == name)
}

/// The environment of a sandboxed command built from `from` (this process's environment):
/// only the variables [`env_passes`] admits, whose names and values are valid UTF-8 and
/// whose value the one scrubber leaves alone ([`codesmith_policy::scrub_secrets`]: not a
/// secret by its shape), then `HOME` set to `home` and `TMPDIR` to `/tmp`, and git told
/// never to use a repository it only discovers as a bare one ([`protect_git`]).
pub fn environment(
    from: impl IntoIterator<Item = (OsString, OsString)>,
    extra: &[String],
    home: &Path,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = from
        .into_iter()
        .filter(|(n, v)| match (n.to_str(), v.to_str()) {
            (Some(n), Some(v)) => {
                env_passes(n, extra)
                    && n != "HOME"
                    && n != "TMPDIR"
                    && matches!(
                        codesmith_policy::scrub_secrets(v),
                        std::borrow::Cow::Borrowed(_)
                    )
            }
            _ => false,
        })
        .collect();
    out.push(("HOME".into(), home.as_os_str().to_os_string()));
    out.push(("TMPDIR".into(), "/tmp".into()));
    protect_git(&mut out);
    out.sort();
    out
}

/// Git configuration every sandboxed command gets as command-line (protected)
/// configuration: `safe.bareRepository=explicit`, so a directory that merely looks like a
/// git directory (`HEAD`, `objects/`, `refs/` and a `config` naming `core.fsmonitor`,
/// written by two file edits) is never discovered as a bare repository, and the programs
/// its configuration names never run. Needs git 2.38 or later (older git ignores it).
pub const PROTECTED_GIT_CONFIG: &[(&str, &str)] = &[("safe.bareRepository", "explicit")];

/// Adds [`PROTECTED_GIT_CONFIG`] to `env` through `GIT_CONFIG_COUNT`,
/// `GIT_CONFIG_KEY_<n>` and `GIT_CONFIG_VALUE_<n>`, after the entries an allowlisted
/// `GIT_CONFIG_COUNT` already holds (later entries win in git, so ours come last). A count
/// that is not a number, and keys or values beyond it, are dropped.
pub fn protect_git(env: &mut Vec<(OsString, OsString)>) {
    let count = env
        .iter()
        .find(|(n, _)| n == "GIT_CONFIG_COUNT")
        .and_then(|(_, v)| v.to_str()?.parse::<usize>().ok())
        .filter(|n| *n <= 1000)
        .unwrap_or(0);
    env.retain(|(name, _)| {
        let Some(name) = name.to_str() else {
            return true;
        };
        if name == "GIT_CONFIG_COUNT" {
            return false;
        }
        match name
            .strip_prefix("GIT_CONFIG_KEY_")
            .or_else(|| name.strip_prefix("GIT_CONFIG_VALUE_"))
        {
            Some(index) => index.parse::<usize>().is_ok_and(|i| i < count),
            None => true,
        }
    });
    for (offset, (key, value)) in PROTECTED_GIT_CONFIG.iter().enumerate() {
        let index = count + offset;
        env.push((format!("GIT_CONFIG_KEY_{index}").into(), (*key).into()));
        env.push((format!("GIT_CONFIG_VALUE_{index}").into(), (*value).into()));
    }
    env.push((
        "GIT_CONFIG_COUNT".into(),
        (count + PROTECTED_GIT_CONFIG.len()).to_string().into(),
    ));
}

/// Where git reads its system-wide configuration: a distribution's git
/// (`/etc/gitconfig`) or one built with the default prefix (`/usr/local`).
pub const SYSTEM_GITCONFIGS: &[&str] = &["/etc/gitconfig", "/usr/local/etc/gitconfig"];

/// The system git configuration a sandboxed command sees at [`SYSTEM_GITCONFIGS`] (where the host has one): the
/// host's (`host`, when it has one) followed by [`PROTECTED_GIT_CONFIG`] (later settings
/// win in git). Unlike the environment [`protect_git`] sets, the command cannot remove
/// it (`unset`, `env -i`): it is mounted read-only, and `GIT_CONFIG_NOSYSTEM` does not
/// pass into the sandbox ([`env_passes`]).
pub fn sandbox_gitconfig(host: Option<&[u8]>) -> Vec<u8> {
    let mut out = host.unwrap_or_default().to_vec();
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    for (key, value) in PROTECTED_GIT_CONFIG {
        let (section, name) = key.split_once('.').unwrap_or((key, ""));
        out.extend_from_slice(format!("[{section}]\n\t{name} = {value}\n").as_bytes());
    }
    out
}

/// The git directories of a workspace whose program-running parts are made read-only:
/// `.git` when it is a directory, every git directory of a submodule below
/// `.git/modules/` (nested ones too), and every linked worktree's directory below
/// `.git/worktrees/`. Bounded to 256 directories.
pub fn git_dirs(workspace: &Path) -> Vec<PathBuf> {
    let root = workspace.join(".git");
    if !std::fs::symlink_metadata(&root).is_ok_and(|m| m.is_dir()) {
        return Vec::new();
    }
    let mut out = vec![root.clone()];
    let mut queue = vec![root.join("modules"), root.join("worktrees")];
    while let Some(dir) = queue.pop() {
        if out.len() >= 256 {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let Ok(kind) = e.file_type() else { continue };
            if !kind.is_dir() {
                continue;
            }
            let path = e.path();
            if path.join("HEAD").is_file() || path.join("commondir").is_file() {
                out.push(path.clone());
                queue.push(path.join("modules"));
            } else {
                // A submodule named `a/b` lives at `.git/modules/a/b`.
                queue.push(path);
            }
        }
    }
    out
}

/// Entries of a git directory that make git run a program or read configuration later:
/// read-only inside the sandbox (an absent `hooks` or `info` directory is made empty and
/// read-only). Porcelain keeps working: the index, `HEAD`, refs, objects, logs and the
/// message files stay writable.
pub const GIT_READ_ONLY: &[&str] = &[
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "hooks",
    "info",
];

/// Values of `key` in section `section` (both matched without case; a section line like
/// `[includeIf "gitdir:x"]` counts as its first word) of git configuration `text`.
fn config_values(text: &str, section: &str, key: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .split(|c: char| c == ']' || c == '"' || c.is_whitespace() || c == '.')
                .next()
                .unwrap_or("");
            inside = name.eq_ignore_ascii_case(section);
            continue;
        }
        if !inside {
            continue;
        }
        if let Some((k, v)) = line.split_once('=')
            && k.trim().eq_ignore_ascii_case(key)
        {
            out.push(v.trim().trim_matches('"').to_string());
        }
    }
    out
}

/// Most configuration files followed through `include.path` and `includeIf.*.path`.
const MAX_INCLUDES: usize = 32;

/// The configuration files git reads for the workspace's repository: `.git/config`,
/// `.git/config.worktree`, and every file they include (`[include] path`, and every
/// `[includeIf …] path` whatever its condition), followed to a depth of 4 and at most
/// [`MAX_INCLUDES`] files. A relative include is relative to the including file's
/// directory; `~/` is the user's home. Files that do not exist are listed too: a command
/// that creates one adds configuration git will read.
pub fn git_config_files(workspace: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let git = workspace.join(".git");
    if !std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir()) {
        return Vec::new();
    }
    let mut out: Vec<PathBuf> = vec![git.join("config"), git.join("config.worktree")];
    let mut queue: Vec<(PathBuf, usize)> = out.iter().map(|p| (p.clone(), 0)).collect();
    while let Some((file, depth)) = queue.pop() {
        if depth >= 4 || out.len() >= MAX_INCLUDES {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let base = file.parent().unwrap_or(workspace).to_path_buf();
        for section in ["include", "includeIf"] {
            for value in config_values(&text, section, "path") {
                let path = match (value.strip_prefix("~/"), home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    (Some(_), None) => continue,
                    _ if Path::new(&value).is_absolute() => PathBuf::from(&value),
                    _ => base.join(&value),
                };
                let path = PathBuf::from(codesmith_policy::normalize_path(&path.to_string_lossy()));
                if !out.contains(&path) && out.len() < MAX_INCLUDES {
                    out.push(path.clone());
                    queue.push((path, depth + 1));
                }
            }
        }
    }
    out
}

/// The directory `core.hooksPath` names for the workspace's repository, workspace-relative:
/// read with [`codesmith_policy::hooks_path_in`] from each of its configuration files
/// ([`git_config_files`], includes followed), the last value winning as in git. `None` when
/// unset or outside the workspace. The one answer for the sandbox, the file tools' gate and
/// the shell's run-later guard.
pub fn hooks_path_rel(workspace: &Path) -> Option<String> {
    let root = workspace.to_str()?;
    git_config_files(workspace, None)
        .iter()
        .rev()
        .filter_map(|f| std::fs::read(f).ok())
        .find_map(|text| {
            codesmith_policy::hooks_path_in(&String::from_utf8_lossy(&text), Some(root))
        })
}

/// The directory of [`hooks_path_rel`], as named (not resolved), when it resolves inside
/// the workspace and exists.
pub fn hooks_path_dir(workspace: &Path) -> Option<PathBuf> {
    // As git names it, not resolved: a link on the way is the sandbox's to refuse, since
    // the command could repoint it.
    let path = workspace.join(hooks_path_rel(workspace)?);
    let canonical = path.canonicalize().ok()?;
    (canonical.starts_with(workspace) && canonical.is_dir()).then_some(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_variables_pass_and_home_points_inside() {
        let from = [
            ("PATH", "/usr/bin"),
            ("OPENAI_API_KEY", "sk-abc"),
            ("STRIPE_SK", "sk_live_x"),
            ("AUTH", "hunter2"),
            ("LC_ALL", "C.UTF-8"),
            ("HOME", "/root"),
            ("CARGO_HOME", "/root/.cargo"),
            ("MY_TOOL_FLAG", "1"),
            ("LD_PRELOAD", "/tmp/x.so"),
            ("BASH_ENV", "/tmp/x"),
        ]
        .map(|(a, b)| (OsString::from(a), OsString::from(b)));
        let env = environment(from.clone(), &[], Path::new("/root"));
        let names: Vec<&str> = env.iter().map(|(n, _)| n.to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "CARGO_HOME",
                "GIT_CONFIG_COUNT",
                "GIT_CONFIG_KEY_0",
                "GIT_CONFIG_VALUE_0",
                "HOME",
                "LC_ALL",
                "PATH",
                "TMPDIR"
            ],
            "{env:?}"
        );
        let env = environment(from, &["MY_TOOL_FLAG".to_string()], Path::new("/h"));
        assert!(env.iter().any(|(n, _)| n == "MY_TOOL_FLAG"));
        assert!(env.iter().any(|(n, v)| n == "HOME" && v == "/h"));
    }

    #[test]
    fn git_never_discovers_a_bare_repository_and_listed_git_config_is_kept() {
        let value = |env: &[(OsString, OsString)], name: &str| {
            env.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.to_str().unwrap().to_string())
        };
        let env = environment([], &[], Path::new("/h"));
        assert_eq!(value(&env, "GIT_CONFIG_COUNT").as_deref(), Some("1"));
        assert_eq!(
            value(&env, "GIT_CONFIG_KEY_0").as_deref(),
            Some("safe.bareRepository")
        );
        assert_eq!(
            value(&env, "GIT_CONFIG_VALUE_0").as_deref(),
            Some("explicit")
        );
        let names =
            ["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"].map(String::from);
        let from = [
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "color.ui"),
            ("GIT_CONFIG_VALUE_0", "never"),
        ]
        .map(|(a, b)| (OsString::from(a), OsString::from(b)));
        let env = environment(from, &names, Path::new("/h"));
        assert_eq!(value(&env, "GIT_CONFIG_COUNT").as_deref(), Some("2"));
        assert_eq!(value(&env, "GIT_CONFIG_KEY_0").as_deref(), Some("color.ui"));
        assert_eq!(
            value(&env, "GIT_CONFIG_KEY_1").as_deref(),
            Some("safe.bareRepository")
        );
        // A bogus count does not hide ours behind entries git would reject.
        let mut env = vec![
            ("GIT_CONFIG_COUNT".into(), "x".into()),
            ("GIT_CONFIG_KEY_0".into(), "safe.bareRepository".into()),
            ("GIT_CONFIG_VALUE_0".into(), "all".into()),
        ];
        protect_git(&mut env);
        assert_eq!(value(&env, "GIT_CONFIG_COUNT").as_deref(), Some("1"));
        assert_eq!(
            value(&env, "GIT_CONFIG_VALUE_0").as_deref(),
            Some("explicit")
        );
        assert_eq!(env.len(), 3, "{env:?}");
    }

    /// Git itself refuses the planted bare repository under this environment.
    #[test]
    fn a_planted_bare_repository_is_not_used_by_git() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path().join("b");
        std::fs::create_dir_all(b.join("objects")).unwrap();
        std::fs::create_dir_all(b.join("refs")).unwrap();
        std::fs::write(b.join("HEAD"), "ref: refs/heads/master\n").unwrap();
        std::fs::write(
            b.join("config"),
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = \"touch PWNED; false\"\n",
        )
        .unwrap();
        let mut env: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("HOME".into(), dir.path().into()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("GIT_CEILING_DIRECTORIES".into(), dir.path().into()),
        ];
        protect_git(&mut env);
        let Ok(out) = std::process::Command::new("git")
            .args(["status", "--short"])
            .current_dir(&b)
            .env_clear()
            .envs(env)
            .stdin(std::process::Stdio::null())
            .output()
        else {
            return; // no git here: nothing to check
        };
        assert!(!out.status.success(), "{out:?}");
        assert!(!b.join("PWNED").exists() && !dir.path().join("PWNED").exists());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("bare"),
            "{out:?}"
        );
    }

    #[test]
    fn a_listed_variable_whose_value_is_a_token_is_dropped() {
        let from = [(
            OsString::from("TERM"),
            OsString::from("ghp_0123456789abcdef0123456789abcdef0123"),
        )];
        let env = environment(from, &[], Path::new("/h"));
        assert!(!env.iter().any(|(n, _)| n == "TERM"), "{env:?}");
    }

    #[test]
    fn toolchains_are_offered_only_when_they_exist_and_never_contain_the_workspace() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join(".cargo/registry")).unwrap();
        std::fs::create_dir_all(home.join("proj")).unwrap();
        std::fs::write(home.join(".cargo/credentials.toml"), "token").unwrap();
        let dirs = toolchain_dirs(Some(&home), &[], &home.join("proj"));
        assert_eq!(dirs, vec![home.join(".cargo")]);
        assert_eq!(
            toolchain_secrets(Some(&home), &dirs),
            vec![home.join(".cargo/credentials.toml")]
        );
        // A workspace inside a toolchain folder: the folder is not offered.
        let dirs = toolchain_dirs(Some(&home), &[], &home.join(".cargo/registry"));
        assert!(dirs.is_empty(), "{dirs:?}");
    }

    #[test]
    fn submodule_and_worktree_git_dirs_are_found() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path();
        for d in [
            ".git/modules/lib/a",
            ".git/modules/x/modules/y",
            ".git/worktrees/w",
        ] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        std::fs::write(ws.join(".git/modules/lib/a/HEAD"), "ref").unwrap();
        std::fs::create_dir_all(ws.join(".git/modules/x")).unwrap();
        std::fs::write(ws.join(".git/modules/x/HEAD"), "ref").unwrap();
        std::fs::write(ws.join(".git/modules/x/modules/y/HEAD"), "ref").unwrap();
        std::fs::write(ws.join(".git/worktrees/w/commondir"), "../..").unwrap();
        let mut dirs = git_dirs(ws);
        dirs.sort();
        let rel: Vec<String> = dirs
            .iter()
            .map(|d| d.strip_prefix(ws).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                ".git",
                ".git/modules/lib/a",
                ".git/modules/x",
                ".git/modules/x/modules/y",
                ".git/worktrees/w"
            ]
        );
    }

    #[test]
    fn included_configuration_files_are_found_existing_or_not() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(ws.join("hooks")).unwrap();
        std::fs::write(
            ws.join(".git/config"),
            "[core]\n\tbare = false\n[include]\n\tpath = ../shared.gitconfig\n\
             [includeIf \"gitdir:~/w/\"]\n\tpath = ../local.gitconfig\n",
        )
        .unwrap();
        std::fs::write(ws.join("shared.gitconfig"), "[core]\n\thooksPath = hooks\n").unwrap();
        let files = git_config_files(&ws, None);
        assert!(files.contains(&ws.join("shared.gitconfig")), "{files:?}");
        assert!(files.contains(&ws.join("local.gitconfig")), "{files:?}");
        assert_eq!(hooks_path_dir(&ws), Some(ws.join("hooks")));
    }

    #[test]
    fn hooks_path_inside_the_workspace_is_found() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(ws.join(".husky/_")).unwrap();
        std::fs::write(
            ws.join(".git/config"),
            "[core]\n\trepositoryformatversion = 0\n\thooksPath = .husky/_\n",
        )
        .unwrap();
        assert_eq!(hooks_path_dir(&ws), Some(ws.join(".husky/_")));
        std::fs::write(ws.join(".git/config"), "[core]\n\thooksPath = /etc\n").unwrap();
        assert_eq!(hooks_path_dir(&ws), None);
    }

    #[test]
    fn the_sandbox_system_gitconfig_keeps_the_host_one_and_adds_the_protected_settings() {
        let made = sandbox_gitconfig(Some(b"[user]\n\tname = x"));
        assert_eq!(
            String::from_utf8_lossy(&made),
            "[user]\n\tname = x\n[safe]\n\tbareRepository = explicit\n"
        );
        assert_eq!(
            sandbox_gitconfig(None),
            b"[safe]\n\tbareRepository = explicit\n".to_vec()
        );
        // Neither passes, even when the user lists it: git would skip the file.
        let listed = [
            "GIT_CONFIG_NOSYSTEM".to_string(),
            "GIT_CONFIG_SYSTEM".to_string(),
        ];
        assert!(!env_passes("GIT_CONFIG_NOSYSTEM", &listed));
        assert!(!env_passes("GIT_CONFIG_SYSTEM", &listed));
    }
}
