//! Where a shell path argument lands.
//!
//! Paths are decoded first (quotes, `$'…'` and braces by the parser; `~`,
//! `$HOME` and `${HOME}` here, from [`PathFacts::home`]), made absolute
//! against the tracked working directory, normalised (`.`, `..`, repeated
//! slashes), and then resolved through symlinks that exist
//! ([`PathFacts::resolve`]) or that the same command line creates. Only then
//! is the place judged: credential stores by their resolved location
//! (`/root/.ssh` as well as `~/.ssh`), protected project paths (`.git/`,
//! `.codesmith/`), the workspace, system prefixes. A few sinks
//! (`/dev/null`, `/dev/stdout`, …) keep nothing.

use crate::path_text::normalize_path;

/// What the classifier may learn about the file system and the turn.
///
/// The pure rules never touch the disk themselves; the caller chooses what
/// they see. [`SystemPaths`] looks at the real file system (symlinks only,
/// read-only); [`LexicalPaths`] sees nothing, for tests and dry reasoning.
pub trait PathFacts {
    /// `path` (absolute, normalised) with every existing symlink along it
    /// followed; the part that does not exist yet is kept as written.
    fn resolve(&self, path: &str) -> String;
    /// The user's home directory (absolute), when known.
    fn home(&self) -> Option<&str>;
    /// Whether the task's snapshot holds `path` (absolute), so deleting it
    /// can be undone: `Some(true)` held, `Some(false)` not held, `None`
    /// unknown. Deleting asks unless this is `Some(true)` (or the target is
    /// regenerable build output).
    fn snapshot_holds(&self, path: &str) -> Option<bool> {
        let _ = path;
        None
    }
    /// Whether the task's snapshot holds everything the file-name glob `pattern` (one path
    /// component, matched as the shell does: `*` and `?` skip a leading `.`) matches in the
    /// directory `dir` (absolute, resolved): `Some(true)` when it matches something and
    /// every match is held, `Some(false)` when one is not, `None` when unknown (a pattern
    /// matching nothing is passed on as written). The default knows nothing.
    fn glob_held(&self, dir: &str, pattern: &str) -> Option<bool> {
        let _ = (dir, pattern);
        None
    }
    /// Whether `path` (absolute, resolved) exists: `Some(false)` lets a
    /// command create it without a prompt where overwriting an existing
    /// file the snapshot does not hold asks. `None`: unknown (overwriting
    /// asks unless the snapshot holds it).
    fn exists(&self, path: &str) -> Option<bool> {
        let _ = path;
        None
    }
    /// True when the command will run under an isolating sandbox that
    /// mounts a fresh, private `/tmp` for it alone (bubblewrap's `--tmpfs
    /// /tmp`, discarded when the command ends). Writing or deleting what
    /// lies below `/tmp` can then touch nothing of the user's, so the
    /// classifier lets it run (see [`PrivateTmp`]). False by default: a
    /// bare command's `/tmp` is the host's, shared with every process.
    fn private_tmp(&self) -> bool {
        false
    }
    /// The directory the command starts in (absolute), when the caller knows it is not
    /// the workspace root (a tool's `cwd` argument, a session directory an earlier `cd`
    /// moved to): relative paths are judged from there. `None`: the workspace root.
    fn start_dir(&self) -> Option<&str> {
        None
    }
    /// What is at `path` (absolute, resolved), for the few small files whose contents
    /// decide a judgement: a repository's `.git` (a directory, or a file naming the git
    /// directory), its `commondir` and its `config`. [`FileProbe::Unknown`] by default, so
    /// a git command whose repository cannot be checked asks.
    fn probe(&self, path: &str) -> FileProbe {
        let _ = path;
        FileProbe::Unknown
    }
}

/// What [`PathFacts::probe`] found at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileProbe {
    /// Nothing is there.
    Missing,
    /// A directory.
    Directory,
    /// A regular file of at most [`MAX_PROBE_BYTES`] bytes of UTF-8 text: its text.
    Text(String),
    /// Anything else: not known, unreadable, too large, not UTF-8, another kind of file.
    Unknown,
}

/// The largest file [`SystemPaths`] reads for [`PathFacts::probe`] (64 KiB); a larger
/// one is [`FileProbe::Unknown`].
pub const MAX_PROBE_BYTES: u64 = 64 * 1024;

/// The facts of `facts`, for a command that starts in `dir` (absolute) rather than at
/// the workspace root ([`PathFacts::start_dir`]).
#[derive(Clone, Copy)]
pub struct StartingIn<'a> {
    /// What else is known.
    pub facts: &'a dyn PathFacts,
    /// The directory the command starts in.
    pub dir: &'a str,
}

impl std::fmt::Debug for StartingIn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartingIn")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl PathFacts for StartingIn<'_> {
    fn resolve(&self, path: &str) -> String {
        self.facts.resolve(path)
    }
    fn home(&self) -> Option<&str> {
        self.facts.home()
    }
    fn snapshot_holds(&self, path: &str) -> Option<bool> {
        self.facts.snapshot_holds(path)
    }
    fn glob_held(&self, dir: &str, pattern: &str) -> Option<bool> {
        self.facts.glob_held(dir, pattern)
    }
    fn exists(&self, path: &str) -> Option<bool> {
        self.facts.exists(path)
    }
    fn private_tmp(&self) -> bool {
        self.facts.private_tmp()
    }
    fn start_dir(&self) -> Option<&str> {
        Some(self.dir)
    }
    fn probe(&self, path: &str) -> FileProbe {
        self.facts.probe(path)
    }
}

/// The facts of `F`, for a command that runs under an isolating sandbox
/// with a private `/tmp` ([`PathFacts::private_tmp`] is true). Only the
/// caller that knows the command really runs so (the engine's approval
/// gate, from its sandbox backend) may use it.
#[derive(Debug, Clone, Default)]
pub struct PrivateTmp<F>(pub F);

impl<F: PathFacts> PathFacts for PrivateTmp<F> {
    fn resolve(&self, path: &str) -> String {
        self.0.resolve(path)
    }
    fn home(&self) -> Option<&str> {
        self.0.home()
    }
    fn snapshot_holds(&self, path: &str) -> Option<bool> {
        self.0.snapshot_holds(path)
    }
    fn glob_held(&self, dir: &str, pattern: &str) -> Option<bool> {
        self.0.glob_held(dir, pattern)
    }
    fn exists(&self, path: &str) -> Option<bool> {
        self.0.exists(path)
    }
    fn private_tmp(&self) -> bool {
        true
    }
    fn start_dir(&self) -> Option<&str> {
        self.0.start_dir()
    }
    fn probe(&self, path: &str) -> FileProbe {
        self.0.probe(path)
    }
}

/// The real file system: symlinks along a path are followed (`lstat` and
/// `readlink` only, nothing is opened); the home directory is `$HOME`. Knows nothing
/// about snapshots, so deletions outside regenerable build output ask.
#[derive(Debug, Clone, Default)]
pub struct SystemPaths {
    home: Option<String>,
}

impl SystemPaths {
    /// Reads `$HOME` once (ignored unless absolute).
    pub fn new() -> Self {
        let home = std::env::var("HOME")
            .ok()
            .filter(|h| h.starts_with('/'))
            .map(|h| normalize_path(&h));
        SystemPaths { home }
    }
}

impl PathFacts for SystemPaths {
    /// Walks `path` from the root with one `lstat` per existing component,
    /// following symlinks (`readlink`, at most 40 in all, as the kernel
    /// does); the first component that does not exist ends the walk and the
    /// rest is kept as written.
    fn resolve(&self, path: &str) -> String {
        let mut current = normalize_path(path);
        if !current.starts_with('/') {
            current.insert(0, '/');
        }
        let mut hops = 0;
        'restart: loop {
            // `current` is absolute and normalised, so every component
            // starts after a `/` and the prefix up to it is the path of
            // that component: each is looked at in place.
            let mut end = 0;
            while end + 1 < current.len() {
                let next = current[end + 1..]
                    .find('/')
                    .map_or(current.len(), |i| end + 1 + i);
                let Ok(meta) = std::fs::symlink_metadata(&current[..next]) else {
                    return current;
                };
                if meta.file_type().is_symlink() {
                    if process_relative(&current[..next]) {
                        // Where it leads is this process's (its
                        // descriptors, its directory), not the command's.
                        return current;
                    }
                    hops += 1;
                    let Ok(target) = std::fs::read_link(&current[..next]) else {
                        return current;
                    };
                    let Some(target) = target.to_str() else {
                        return current;
                    };
                    if hops > 40 {
                        return current;
                    }
                    let base = if target.starts_with('/') {
                        ""
                    } else {
                        &current[..end]
                    };
                    current = normalize_path(&format!("{base}/{target}{}", &current[next..]));
                    continue 'restart;
                }
                end = next;
            }
            return current;
        }
    }

    fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// One `lstat`, nothing opened.
    fn exists(&self, path: &str) -> Option<bool> {
        Some(std::fs::symlink_metadata(path).is_ok())
    }

    /// One `lstat`; a regular file of at most [`MAX_PROBE_BYTES`] is read.
    fn probe(&self, path: &str) -> FileProbe {
        probe_system(path)
    }
}

/// [`PathFacts::probe`] on the real file system: `lstat` (a symlink is
/// [`FileProbe::Unknown`]; callers pass resolved paths), then a bounded read of a regular
/// file.
pub fn probe_system(path: &str) -> FileProbe {
    use std::io::Read;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return FileProbe::Missing,
        Err(_) => return FileProbe::Unknown,
    };
    if meta.is_dir() {
        return FileProbe::Directory;
    }
    if !meta.is_file() || meta.len() > MAX_PROBE_BYTES {
        return FileProbe::Unknown;
    }
    let mut text = String::new();
    let read = std::fs::File::open(path)
        .and_then(|f| f.take(MAX_PROBE_BYTES + 1).read_to_string(&mut text));
    match read {
        Ok(n) if n as u64 <= MAX_PROBE_BYTES => FileProbe::Text(text),
        _ => FileProbe::Unknown,
    }
}

/// No file system at all: paths resolve to themselves. `home` and the
/// paths the snapshot holds are given by the caller.
#[derive(Debug, Clone, Default)]
pub struct LexicalPaths {
    /// The home directory `~` and `$HOME` stand for.
    pub home: Option<String>,
    /// Paths (absolute) the snapshot holds, with everything below them;
    /// `None` when the snapshot's contents are unknown.
    pub snapshot: Option<Vec<String>>,
    /// Symlinks that exist: (link path, target), both absolute.
    pub links: Vec<(String, String)>,
    /// Paths (absolute) that exist, with everything below them; `None`
    /// when what exists is unknown.
    pub existing: Option<Vec<String>>,
    /// Small files and their text, for [`PathFacts::probe`]: a listed path is a file,
    /// a path with a listed file below it a directory, anything else missing when
    /// [`Self::existing`] says so, else unknown.
    pub files: Vec<(String, String)>,
}

impl PathFacts for LexicalPaths {
    fn resolve(&self, path: &str) -> String {
        follow_links(path, &self.links)
    }

    fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    fn snapshot_holds(&self, path: &str) -> Option<bool> {
        self.snapshot
            .as_ref()
            .map(|held| held.iter().any(|h| within(path, h)))
    }

    fn exists(&self, path: &str) -> Option<bool> {
        self.existing
            .as_ref()
            .map(|known| known.iter().any(|e| within(path, e)))
    }

    fn probe(&self, path: &str) -> FileProbe {
        if let Some((_, text)) = self.files.iter().find(|(p, _)| p == path) {
            return FileProbe::Text(text.clone());
        }
        if self
            .files
            .iter()
            .any(|(p, _)| p.len() > path.len() && within(p, path))
        {
            return FileProbe::Directory;
        }
        match self.exists(path) {
            Some(false) => FileProbe::Missing,
            _ => FileProbe::Unknown,
        }
    }
}

/// `path` with the first matching link prefix replaced by its target
/// (followed up to eight times).
pub(crate) fn follow_links(path: &str, links: &[(String, String)]) -> String {
    let mut current = path.to_string();
    for _ in 0..8 {
        let Some((link, target)) = links.iter().find(|(l, _)| within(&current, l)) else {
            break;
        };
        let rest = &current[link.len()..];
        current = normalize_path(&format!("{target}/{rest}"));
    }
    current
}

/// Directory and file names of build output that a build regenerates, so
/// deleting them loses nothing. Names that projects also use for sources
/// or hand-patched dependencies (`build`, `out`, `node_modules`) are left
/// out: deleting them asks unless the snapshot holds them.
const REGENERABLE: &[&str] = &[
    ".gradle",
    ".mypy_cache",
    ".next",
    ".nuxt",
    ".parcel-cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".turbo",
    "__pycache__",
    "coverage",
    "dist",
    "htmlcov",
    "target",
];

/// True when `path` (absolute, inside the workspace) is regenerable build
/// output: at or below a [`REGENERABLE`] directory, or a `*.pyc`/`*.pyo`/
/// `*.o` file.
pub(crate) fn is_regenerable(path: &str, workspace: &str) -> bool {
    let Some(rest) = path.strip_prefix(workspace) else {
        return false;
    };
    if rest.split('/').any(|c| c == ".git" || c == ".codesmith") {
        return false;
    }
    rest.split('/').any(|c| REGENERABLE.contains(&c))
        || [".pyc", ".pyo", ".o"].iter().any(|e| rest.ends_with(e))
}

/// Project directories whose contents run code later (`.git/`: hooks,
/// `core.fsmonitor`) or configure safety (`.codesmith/`): writing, deleting
/// or `chmod`-ing below them asks, in the shell and in the file tools.
pub const PROTECTED_DIRS: [&str; 2] = [".git", ".codesmith"];

/// The protected directory (`.git`, `.codesmith`) `path` lies in, if any,
/// matched per component by [`protected_name`].
pub(crate) fn protected_dir(path: &str) -> Option<&'static str> {
    path.split('/').find_map(protected_name)
}

/// The [`PROTECTED_DIRS`] entry the path component `name` opens on some file
/// system the workspace may be on, following git's own `is_hfs_dotgit` /
/// `is_ntfs_dotgit` checks (CVE-2014-9390): case is ignored (macOS, Windows,
/// casefolded ext4); the code points HFS+ ignores in names (zero-width
/// joiners, bidi marks, the BOM) are dropped; an NTFS stream suffix (`:…`)
/// and trailing dots and spaces are cut; and an 8.3 short name (`GIT~1`,
/// `CODESM~2`) counts as the directory it may abbreviate. Used by the
/// shell classifier and the file tools alike.
pub fn protected_name(name: &str) -> Option<&'static str> {
    let base = fold_name(name);
    let base = base.as_str();
    PROTECTED_DIRS.iter().copied().find(|dir| {
        if base == *dir {
            return true;
        }
        let stem: String = dir.trim_start_matches('.').chars().take(6).collect();
        base.strip_prefix(stem.as_str())
            .and_then(|rest| rest.strip_prefix('~'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The path component `name` as a case-insensitive, HFS+ or NTFS file system
/// may take it: lower case, without the code points HFS+ ignores (zero-width
/// joiners, bidi marks, the BOM), cut at an NTFS stream suffix (`:…`) and
/// without trailing dots and spaces. `.GIT.` and `.git` fold alike.
pub(crate) fn fold_name(name: &str) -> String {
    let folded: String = name
        .chars()
        .filter(
            |c| !matches!(*c as u32, 0x200C..=0x200F | 0x202A..=0x202E | 0x206A..=0x206F | 0xFEFF),
        )
        .collect::<String>()
        .to_lowercase();
    let base = folded
        .split(':')
        .next()
        .unwrap_or_default()
        .trim_end_matches(['.', ' ']);
    base.to_string()
}

/// Credential stores recognised by where they are, whoever's home they are
/// in: a path with one of these suffixes as whole components (or below
/// them) is a credential. Shell and REPL histories count: they hold pasted
/// secrets.
const CREDENTIAL_SUFFIXES: &[&str] = &[
    ".aws",
    ".azure",
    ".bash_history",
    ".cache/huggingface/token",
    ".claude",
    ".codex",
    ".config/gcloud",
    ".config/gh",
    ".config/git/credentials",
    ".docker/config.json",
    ".git-credentials",
    ".gnupg",
    ".huggingface/token",
    ".kube/config",
    ".lesshst",
    ".mysql_history",
    ".netrc",
    ".node_repl_history",
    ".npmrc",
    ".password-store",
    ".pgpass",
    ".psql_history",
    ".pypirc",
    ".python_history",
    ".ssh",
    ".vault-token",
    ".zsh_history",
    "etc/gitlab-runner",
    "etc/gshadow",
    "etc/gshadow-",
    "etc/kubernetes",
    "etc/letsencrypt",
    "etc/security/opasswd",
    "etc/shadow",
    "etc/shadow-",
    "etc/ssh",
    "etc/ssl/private",
    "etc/sudoers",
    "etc/sudoers.d",
    "run/secrets",
];

/// Places that expose secrets of running processes or the machine's memory:
/// a process's environment, memory and memory map (`environ`, `mem`,
/// `maps`, …) under any spelling of `/proc/PID` (`/dev/fd/..` is
/// `/proc/self`, see [`process_alias`]).
fn is_process_secret(path: &str) -> bool {
    if !path.starts_with("/proc/") && !path.starts_with("/dev/") {
        return false;
    }
    let aliased = process_alias(path);
    let path = aliased.as_deref().unwrap_or(path);
    matches!(path, "/dev/mem" | "/dev/kmem" | "/dev/port" | "/proc/kcore")
        || path.strip_prefix("/proc/").is_some_and(|rest| {
            let mut parts = rest.split('/');
            let _pid = parts.next();
            parts.any(|part| {
                matches!(
                    part,
                    "environ"
                        | "mem"
                        | "auxv"
                        | "maps"
                        | "smaps"
                        | "smaps_rollup"
                        | "pagemap"
                        | "numa_maps"
                )
            })
        })
}

/// `path` (absolute) with the descriptor links of `/dev` written as the
/// `/proc` directories they are (`/dev/fd` is `/proc/self/fd`,
/// `/dev/stdin` is `/proc/self/fd/0`, …) and then normalised, so
/// `/dev/fd/../environ` is `/proc/self/environ` and `/dev/fd/../../1/environ`
/// is `/proc/1/environ`; `None` when `path` has no such prefix.
pub(crate) fn process_alias(path: &str) -> Option<String> {
    const ALIASES: &[(&str, &str)] = &[
        ("/dev/fd", "/proc/self/fd"),
        ("/dev/stdin", "/proc/self/fd/0"),
        ("/dev/stdout", "/proc/self/fd/1"),
        ("/dev/stderr", "/proc/self/fd/2"),
    ];
    let (from, to) = ALIASES.iter().find(|(from, _)| at_or_under(path, from))?;
    let rest = &path[from.len()..];
    // A descriptor's own link (`/dev/fd/3/..`) leads anywhere; only the
    // `fd` directory itself is climbed out of by text.
    Some(normalize_path(&format!("{to}{rest}")))
}

/// True when `path` (as written or resolved) is or lies below a
/// credential store, judged by whole path components, or exposes process
/// secrets (`/proc/PID/environ`, `/dev/mem`).
pub(crate) fn is_credential_component(path: &str) -> bool {
    if is_process_secret(path) {
        return true;
    }
    // Every suffix starts with `.`, `etc/` or `run/`, and key names with
    // `id_`; most words have none of these.
    if !path.contains(['.', '*', '?', '['])
        && !path.contains("etc")
        && !path.contains("run")
        && !path.contains("id_")
        && !path.contains("cred")
        && !path.contains("auth")
        && !path.contains("service-account")
    {
        return false;
    }
    let last = path.rsplit('/').find(|c| !c.is_empty());
    if last.is_some_and(|name| {
        crate::secret_files::secret_name(name).is_some() || is_dotenv_glob(name)
    }) {
        return true;
    }
    // Without glob characters or empty components a suffix matches
    // exactly where its text stands between slashes (or the ends).
    if !path.contains(['*', '?', '[']) && !path.contains("//") {
        return holds_credential_suffix(path);
    }
    /// [`CREDENTIAL_SUFFIXES`], each split into its components (once).
    static SPLIT_SUFFIXES: std::sync::LazyLock<Vec<Vec<&'static str>>> =
        std::sync::LazyLock::new(|| {
            CREDENTIAL_SUFFIXES
                .iter()
                .map(|suffix| suffix.split('/').collect())
                .collect()
        });
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    SPLIT_SUFFIXES.iter().any(|want| {
        parts.windows(want.len()).any(|w| {
            w.iter()
                .zip(want.iter())
                .all(|(part, name)| part == name || glob_matches(part, name))
        })
    })
}

/// True when one of [`CREDENTIAL_SUFFIXES`] occurs in `path` as whole
/// components: starting where a component starts, and ending at the end
/// or before a `/`. Every suffix starts with `.`, `e` or `r`, so only
/// components that do are compared.
fn holds_credential_suffix(path: &str) -> bool {
    let bytes = path.as_bytes();
    let starts = std::iter::once(0)
        .chain(memchr_slashes(bytes).map(|i| i + 1))
        .filter(|&i| i < bytes.len() && matches!(bytes[i], b'.' | b'e' | b'r'));
    for start in starts {
        let rest = &bytes[start..];
        if CREDENTIAL_SUFFIXES.iter().any(|suffix| {
            rest.starts_with(suffix.as_bytes()) && rest.get(suffix.len()).is_none_or(|b| *b == b'/')
        }) {
            return true;
        }
    }
    false
}

/// Positions of the `/` bytes in `bytes`.
fn memchr_slashes(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'/')
        .map(|(i, _)| i)
}

/// True when the file name `pattern` (a `find -name` pattern, a glob or a
/// plain name) can name a credential file: a dotenv file, a private key,
/// a credential store's file (`.netrc`, `credentials`, `shadow`, …).
pub(crate) fn name_may_be_secret(pattern: &str) -> bool {
    const NAMES: &[&str] = &[
        ".env",
        ".env.local",
        ".envrc",
        ".netrc",
        ".git-credentials",
        ".pgpass",
        ".npmrc",
        ".pypirc",
        ".vault-token",
        ".bash_history",
        ".ssh",
        ".aws",
        ".gnupg",
        "id_rsa",
        "id_ecdsa",
        "id_ed25519",
        "id_dsa",
        "credentials",
        "credentials.json",
        "secrets.json",
        "secrets.yaml",
        "auth.json",
        "server.pem",
        "server.key",
        "keystore.jks",
        "terraform.tfstate",
        "shadow",
        "gshadow",
        "sudoers",
        "environ",
        "token",
        "config.json",
    ];
    crate::secret_files::secret_name(pattern).is_some()
        || NAMES
            .iter()
            .any(|name| pattern == *name || glob_matches(pattern, name))
}

/// True when the glob `pattern` can match a dotenv file (`.e?v`, `.en*`,
/// `.[e]nv`, `.env.prod*`). As the shell does, only a pattern that starts
/// with a literal `.` matches a dot file (`*` does not match `.env`).
fn is_dotenv_glob(pattern: &str) -> bool {
    pattern.starts_with('.')
        && [
            ".env",
            ".env.local",
            ".env.production",
            ".env.development",
            ".env.x",
        ]
        .iter()
        .any(|name| glob_matches(pattern, name))
}

/// True when the shell glob `pattern` (`*`, `?`, `[…]`) matches `name`, so
/// `/root/.s?h` is judged like `/root/.ssh`. A pattern without glob
/// characters never matches here (plain equality is checked by the caller).
fn glob_matches(pattern: &str, name: &str) -> bool {
    if !pattern.contains(['*', '?', '[']) {
        return false;
    }
    // Bytes and chars alike (ASCII text is matched byte by byte, without
    // copying); the pattern is cut at 64 characters to bound the search.
    fn matches<T: Copy + PartialOrd + From<u8>>(p: &[T], n: &[T]) -> bool {
        let is = |c: &T, b: u8| *c == T::from(b);
        match p.first() {
            None => n.is_empty(),
            Some(c) if is(c, b'*') => (0..=n.len()).any(|i| matches(&p[1..], &n[i..])),
            Some(c) if is(c, b'?') => !n.is_empty() && matches(&p[1..], &n[1..]),
            Some(c) if is(c, b'[') => {
                // A `]` first in the set (after a `!` or `^`) is one of its members.
                let first = if p.get(1).is_some_and(|f| is(f, b'!') || is(f, b'^')) {
                    3
                } else {
                    2
                };
                let Some(close) = p
                    .iter()
                    .skip(first)
                    .position(|c| is(c, b']'))
                    .map(|i| i + first)
                else {
                    return n.first().is_some_and(|f| is(f, b'[')) && matches(&p[1..], &n[1..]);
                };
                let Some(c) = n.first() else {
                    return false;
                };
                let set = &p[1..close];
                let (negate, set) = match set.first() {
                    Some(f) if is(f, b'!') || is(f, b'^') => (true, &set[1..]),
                    _ => (false, set),
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && is(&set[i + 1], b'-') {
                        hit |= set[i] <= *c && *c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == *c;
                        i += 1;
                    }
                }
                hit != negate && matches(&p[close + 1..], &n[1..])
            }
            Some(x) => n.first() == Some(x) && matches(&p[1..], &n[1..]),
        }
    }
    // As the shell does (without `dotglob`), a leading `.` is matched only
    // by a literal `.`: `*` and `dist/*` never match `.ssh` or `.env`.
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    if pattern.is_ascii() && name.is_ascii() {
        let p = pattern.as_bytes();
        return matches(&p[..p.len().min(64)], name.as_bytes());
    }
    let p: Vec<char> = pattern.chars().take(64).collect();
    let n: Vec<char> = name.chars().collect();
    matches(&p, &n)
}

/// True when [`file_glob_matches`] matches `pattern` as the shell does: not when it is cut
/// (over 64 characters) or uses a character class (`[[:alpha:]]`, `[[=a=]]`, `[[.a.]]`),
/// which it does not know. Where a glob's matches decide something, such a pattern must
/// be treated as matching anything.
pub fn file_glob_exact(pattern: &str) -> bool {
    pattern.chars().count() <= 64 && !["[:", "[=", "[."].iter().any(|c| pattern.contains(c))
}

/// Where a path written by a command lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathPlace {
    /// A sink that keeps nothing (`/dev/null`, `/dev/stdout`, `/dev/stderr`).
    Sink,
    /// Below `/tmp` when the command runs with a private `/tmp`
    /// ([`PathFacts::private_tmp`]): a throwaway tmpfs.
    PrivateTmp,
    /// Inside the workspace.
    Inside,
    /// Outside the workspace, or not known until run time.
    Outside,
    /// Inside the workspace but under `.git/` or `.codesmith/`.
    Protected,
    /// A system location (`/etc`, `/usr`, `/boot`, `/dev`, `/sys`, `/proc`,
    /// …) or a credential or shell start-up file in the home directory.
    System,
}

impl PathPlace {
    /// Severity for "worst of several paths": Sink < PrivateTmp < Inside <
    /// Outside < Protected < System.
    pub(crate) fn rank(self) -> u8 {
        match self {
            PathPlace::Sink => 0,
            PathPlace::PrivateTmp => 1,
            PathPlace::Inside => 2,
            PathPlace::Outside => 3,
            PathPlace::Protected => 4,
            PathPlace::System => 5,
        }
    }
}

pub(crate) const SINKS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

/// True when `path`, exactly as written, names a sink: one of [`SINKS`] or
/// a descriptor `/dev/fd/N` itself. A spelling that goes on through it
/// (`/dev/fd/3/etc`, `/dev/stdout/`, `/dev/fd/3/..`) uses the descriptor as
/// a directory, which may be any directory at all, and is no sink.
pub(crate) fn is_sink(path: &str) -> bool {
    SINKS.contains(&path) || is_descriptor(path)
}

/// True when `path` (written or normalised) is a descriptor link
/// `/dev/fd/N` itself, with nothing after the number.
pub(crate) fn is_descriptor(path: &str) -> bool {
    path.strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// True when `resolved` (the normalised, followed form of `written`) is a
/// sink and `written` reaches it without passing through a directory the
/// text cannot see: no `..` (the kernel follows a link before it climbs,
/// so `/dev/stdout/../x` is beside wherever the descriptor leads) and no
/// trailing `/` or `/.` (which open a descriptor link as a directory).
pub(crate) fn sink_by_resolution(written: &str, resolved: &str) -> bool {
    is_sink(resolved)
        && !written.ends_with('/')
        && !written.split('/').any(|c| c == "..")
        && written.rsplit('/').next() != Some(".")
}

/// True when the symlink `path` (absolute, normalised) leads somewhere
/// that depends on the process looking: `/proc/self`, `/proc/thread-self`
/// and everything below `/proc` (a process's `cwd`, `root`, `fd/N`), and
/// `/dev/fd`, `/dev/stdin`, `/dev/stdout`, `/dev/stderr`. Following them
/// here would judge the command by the classifier's own descriptors.
fn process_relative(path: &str) -> bool {
    path.starts_with("/proc/")
        || matches!(
            path,
            "/dev/fd" | "/dev/stdin" | "/dev/stdout" | "/dev/stderr"
        )
        || path.starts_with("/dev/fd/")
}

const SYSTEM_PREFIXES: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/opt", "/proc", "/root", "/sbin", "/sys",
    "/usr", "/var",
];

/// Dotfiles in the home directory that run code at the next login or
/// shell start (or configure tools that do).
pub(crate) const HOME_STARTUP: &[&str] = &[
    ".bash_login",
    ".bash_logout",
    ".bash_profile",
    ".bashrc",
    ".config",
    ".gitconfig",
    ".inputrc",
    ".local/bin",
    ".profile",
    ".zlogin",
    ".zprofile",
    ".zshenv",
    ".zshrc",
];

/// Credential stores a read-only command should not read without a person's
/// yes (they are also never mounted into the sandbox).
const CREDENTIALS: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gh",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "$HOME/.ssh",
    "$HOME/.aws",
    "$HOME/.gnupg",
    "$HOME/.netrc",
    "~/.codesmith",
    "$HOME/.codesmith",
    "${HOME}/.codesmith",
    "/etc/shadow",
    "/etc/sudoers",
];

/// True when `path` names a credential store (`~/.ssh`, `~/.aws`,
/// `/root/.git-credentials`, …), by text or by component.
pub(crate) fn is_credential(path: &str) -> bool {
    CREDENTIALS.iter().any(|p| at_or_under(path, p)) || is_credential_component(path)
}

/// Judges `path` as written in a command run from `cwd` (absolute, or `None`
/// when an earlier `cd` made it unknown) for a workspace rooted at
/// `workspace`. `dynamic` marks a path only known at run time.
pub(crate) fn place(path: &str, dynamic: bool, cwd: Option<&str>, workspace: &str) -> PathPlace {
    if is_sink(path) {
        return PathPlace::Sink;
    }
    let home_startup = ["~/", "$HOME/", "${HOME}/"].iter().any(|prefix| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| HOME_STARTUP.iter().any(|f| at_or_under(rest, f)))
    });
    if is_credential(path) || home_startup {
        return PathPlace::System;
    }
    if dynamic || path.starts_with('~') || path.starts_with('$') || path.is_empty() {
        return PathPlace::Outside;
    }
    let absolute = if path.starts_with('/') {
        normalize_path(path)
    } else {
        match cwd {
            Some(cwd) => normalize_path(&format!("{cwd}/{path}")),
            None => return PathPlace::Outside,
        }
    };
    let root = normalize_path(workspace);
    if within(&absolute, &root) && !root.is_empty() && root != "/" {
        return PathPlace::Inside;
    }
    if SYSTEM_PREFIXES.iter().any(|p| within(&absolute, p)) || absolute == "/" {
        return PathPlace::System;
    }
    if root == "/" {
        return PathPlace::Inside;
    }
    PathPlace::Outside
}

/// True when `path` is `prefix` or a path below it (no allocation).
fn at_or_under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// True when `path` is `root` or below it.
pub(crate) fn within(path: &str, root: &str) -> bool {
    if root == "/" {
        return path.starts_with('/');
    }
    path == root
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// True when the file name `name` matches the one-component glob `pattern` as the shell
/// matches it: `*`, `?` and `[...]`, where a leading `.` of `name` must be matched by a
/// literal `.` (so `*` does not match `.env`). A pattern without glob characters matches
/// nothing here.
pub fn file_glob_matches(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    glob_matches(pattern, name)
}

#[cfg(test)]
mod tests {
    use super::PathPlace::*;
    use super::*;

    const WS: &str = "/home/dev/proj";

    #[test]
    fn judges_paths_against_the_workspace() {
        let cwd = Some(WS);
        assert_eq!(place("out.txt", false, cwd, WS), Inside);
        assert_eq!(place("./a/../b", false, cwd, WS), Inside);
        assert_eq!(place("/home/dev/proj/x", false, cwd, WS), Inside);
        assert_eq!(place("/home/dev/project2/x", false, cwd, WS), Outside);
        assert_eq!(place("../other/x", false, cwd, WS), Outside);
        assert_eq!(place("../../../../etc/passwd", false, cwd, WS), System);
        assert_eq!(place("/etc/hosts", false, cwd, WS), System);
        assert_eq!(place("~/.ssh/authorized_keys", false, cwd, WS), System);
        assert_eq!(place("~/notes", false, cwd, WS), Outside);
        assert_eq!(place("$OUT", true, cwd, WS), Outside);
        assert_eq!(place("/dev/null", false, cwd, WS), Sink);
        assert_eq!(place("/tmp/x", false, cwd, WS), Outside);
        assert_eq!(place("x", false, None, WS), Outside);
        // Dots that climb above the root land where the kernel lands.
        assert_eq!(place("/../home/dev/proj/x", false, cwd, WS), Inside);
        assert_eq!(place("/home/dev/proj/../proj2", false, cwd, WS), Outside);
        assert_eq!(
            place("/home/dev/proj/./../../dev/proj", false, cwd, WS),
            Inside
        );
        assert_eq!(place("/proc/self/root/etc/shadow", false, cwd, WS), System);
    }

    #[test]
    fn globs_match_as_the_shell_does_or_say_they_cannot() {
        // `]` right after `[!` is a member of the set, as in bash.
        assert!(file_glob_matches("[!]a]*", "bx"));
        assert!(!file_glob_matches("[!]a]*", "ax"));
        assert!(!file_glob_matches("[!]a]*", "]x"));
        assert!(file_glob_matches("[]a]*", "]x"));
        assert!(!file_glob_exact("[[:alpha:]]*"));
        assert!(!file_glob_exact(&format!("{}*", "x".repeat(64))));
        assert!(file_glob_exact("*.log"));
    }

    #[test]
    fn normalizes_lexically() {
        assert_eq!(normalize_path("/a/./b//c/../d/"), "/a/b/d");
        assert_eq!(normalize_path("/../.."), "/");
        // Already normal: returned as is.
        assert_eq!(normalize_path("/home/dev/proj/src"), "/home/dev/proj/src");
        assert_eq!(normalize_path("/"), "/");
        assert_eq!(normalize_path("/a/"), "/a");
        assert_eq!(normalize_path("a/./b/../c"), "a/c");
        assert_eq!(normalize_path(""), "");
        assert_eq!(normalize_path("/proc/self/root/etc/passwd"), "/etc/passwd");
        assert_eq!(normalize_path("/procfs/x"), "/procfs/x");
        // `..` above the root stays at the root; at the start of a relative
        // path (callers join it to a directory first) it is dropped.
        assert_eq!(normalize_path("/../etc/./passwd"), "/etc/passwd");
        assert_eq!(normalize_path("/a/../../b/"), "/b");
        assert_eq!(normalize_path("../a"), "a");
        assert_eq!(normalize_path("a/../../b"), "b");
        assert_eq!(normalize_path("."), "");
        assert_eq!(normalize_path("//"), "/");
        assert_eq!(normalize_path("/proc/self/root/../etc"), "/etc");
        assert_eq!(normalize_path("/proc/thread-self/root"), "/");
    }

    #[test]
    fn credential_suffixes_match_whole_components_only() {
        // The scan only looks at components starting with these bytes.
        assert!(
            CREDENTIAL_SUFFIXES
                .iter()
                .all(|s| matches!(s.as_bytes()[0], b'.' | b'e' | b'r'))
        );
        for path in [
            "/root/.ssh",
            "/root/.ssh/id_rsa",
            ".ssh/config",
            "/etc/ssh/sshd_config",
            "/home/u/.config/git/credentials",
            "/x//root/.aws/config",
            "/root/.s?h/id_rsa",
            "/home/u/SERVER.PEM",
            "/srv/Service-Account-prod.json",
        ] {
            assert!(is_credential_component(path), "{path}");
        }
        for path in [
            "/root/.sshx",
            "/root/x.ssh",
            "/etc/sshd",
            "/home/u/src/etc.rs",
            "README.md",
            "/run/secretsx",
        ] {
            assert!(!is_credential_component(path), "{path}");
        }
    }

    #[test]
    fn globs_match_bytes_and_chars_alike() {
        assert!(glob_matches("*.rs", "main.rs"));
        assert!(glob_matches(".[e]nv", ".env"));
        assert!(!glob_matches(".[!e]nv", ".env"));
        assert!(glob_matches("é*", "éa"));
        assert!(!glob_matches("main.rs", "main.rs"), "no glob characters");
    }
}
