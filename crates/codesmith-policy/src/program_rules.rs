//! Per-program safety tables: what one known program does with its
//! arguments. Programs that run other code (shells, interpreters, `find
//! -exec`) are handled in `classify`, which can recurse; everything here is a
//! table lookup plus path judgement.
//!
//! The defaults are restrained: reading is `Safe`, building,
//! testing and editing inside the workspace is `WorkspaceSafe`, and anything
//! that reaches outside the workspace, discards work, changes the system or
//! is unknown needs approval.

use std::borrow::Cow;

use crate::SafetyLevel::{self, Ask, Safe, WorkspaceSafe};
use crate::path_text::normalize_path;
use crate::shell_parse::Word;
use crate::ws_path::{
    PathFacts, PathPlace, is_credential, is_sink, place as legacy_place, sink_by_resolution, within,
};

/// One command segment's safety level with the reason shown to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SegmentJudgement {
    pub level: SafetyLevel,
    pub reason: Cow<'static, str>,
    /// Why the programs this command starts cannot all be named from its text, when a
    /// judgement knows it (code from a configuration it sets, a file it writes that runs
    /// later, a string it splits into a command); see [`crate::Segment::runs_unseen`].
    pub unseen: Option<&'static str>,
}

/// Why an unknown sub-command of a known tool hides what runs.
pub(crate) const UNKNOWN_SUB_COMMAND: &str = "its sub-command is not one the policy knows, and \
    the tool may read it as an alias or an abbreviation of another (`git pussh`, `npm publis`)";

/// Why a command that writes a file a program runs later hides what runs.
const WRITES_CODE: &str = "it writes a file that a program runs later (a git hook or \
    configuration), which can name any program";

impl SegmentJudgement {
    pub(crate) fn new(level: SafetyLevel, reason: &'static str) -> Self {
        SegmentJudgement {
            level,
            reason: Cow::Borrowed(reason),
            unseen: None,
        }
    }

    /// The same judgement, marked as one whose programs cannot all be named (`why`).
    pub(crate) fn unseen(mut self, why: &'static str) -> Self {
        self.unseen = Some(why);
        self
    }

    pub(crate) fn owned(level: SafetyLevel, reason: String) -> Self {
        SegmentJudgement {
            level,
            reason: Cow::Owned(reason),
            unseen: None,
        }
    }

    /// The worse of `self` and `other` (the first on a tie).
    pub(crate) fn max(self, other: SegmentJudgement) -> SegmentJudgement {
        let unseen = self.unseen.or(other.unseen);
        let mut worse = if other.level > self.level {
            other
        } else {
            self
        };
        worse.unseen = unseen;
        worse
    }
}

/// Where paths are judged from, and what is known about the file system.
#[derive(Clone, Copy)]
pub(crate) struct PathJudge<'a> {
    /// The workspace root, normalised and resolved through symlinks.
    pub workspace: &'a str,
    /// The tracked working directory; `None` once it is not known.
    pub cwd: Option<&'a str>,
    /// The previous working directory (`~-`, `$OLDPWD`), when a `cd` on
    /// the line makes it known.
    pub oldpwd: Option<&'a str>,
    /// True while nothing earlier on the line moved files (`mv`), so a
    /// path that does not exist yet holds nothing of the user's.
    pub trust_absence: bool,
    pub facts: &'a dyn PathFacts,
    /// The earlier command on the line that may have put symlinks into the
    /// work tree (`git checkout BRANCH`, `cp -r`): paths in the workspace
    /// may then lead anywhere, so reading or writing them asks.
    pub unsure_links: Option<&'a str>,
    /// Symlinks created earlier in the same command line (link, target).
    pub links: &'a [(String, String)],
    /// `Some` when the command runs with a private `/tmp`
    /// ([`PathFacts::private_tmp`]); set once a write or deletion was let
    /// run because it lands there.
    pub private_tmp: Option<&'a std::cell::Cell<bool>>,
}

impl PathJudge<'_> {
    /// `word` as an absolute, normalised path with `~`/`$HOME` expanded and
    /// symlinks followed; `None` when it is only known at run time or is
    /// relative to an unknown directory.
    pub(crate) fn resolve(&self, word: &Word) -> Option<String> {
        let text = match run_time_dir(&word.text) {
            Some((RunTimeDir::Current, rest)) => format!("{}{rest}", self.cwd?),
            Some((RunTimeDir::Previous, rest)) => format!("{}{rest}", self.oldpwd?),
            None => expand_home(&word.text, word.dynamic, self.facts.home())?,
        };
        let absolute = if text.starts_with('/') {
            text
        } else {
            format!("{}/{text}", self.cwd?)
        };
        // `/dev/fd/..` climbs out of `/proc/self/fd`, whatever the text says.
        let absolute = match absolute.contains("/..") {
            true => crate::ws_path::process_alias(&absolute).unwrap_or(absolute),
            false => absolute,
        };
        Some(self.kernel_order(&absolute))
    }

    /// `path` (absolute, as written) resolved in the kernel's order: the
    /// links before each `..` are followed first and the `..` then climbs out
    /// of where they lead, so `link/../x` with `link` pointing at `/etc` is
    /// `/x`, not the `x` beside `link` that the text alone suggests.
    fn kernel_order(&self, path: &str) -> String {
        let follow = |p: &str| {
            self.facts.resolve(&crate::ws_path::follow_links(
                &normalize_path(p),
                self.links,
            ))
        };
        let mut base = String::new();
        let mut pending = String::new();
        for part in path.split('/') {
            if part == ".." {
                let real = follow(&format!("{base}{pending}/"));
                base = normalize_path(&format!("{real}/.."));
                if base == "/" {
                    base.clear();
                }
                pending.clear();
            } else if !part.is_empty() && part != "." {
                pending.push('/');
                pending.push_str(part);
            }
        }
        follow(&format!("{base}{pending}/"))
    }

    /// True when `word` lands below the command's private `/tmp`: the
    /// context has one, the word is an absolute path known before the
    /// command runs (never relative: a `cd` into a `/tmp` directory that
    /// does not exist there fails and leaves the command where it was), and
    /// after `..` and the symlinks made earlier on the line it lies
    /// strictly below `/tmp`, apart from the workspace (which the sandbox
    /// mounts over its `/tmp` when it lies there), with no glob that could
    /// match `.` or `..`.
    pub(crate) fn in_private_tmp(&self, word: &Word) -> bool {
        let Some(used) = self.private_tmp else {
            return false;
        };
        if word.dynamic || word.opaque.is_some() || !word.text.starts_with('/') {
            return false;
        }
        let lexical = crate::ws_path::follow_links(&normalize_path(&word.text), self.links);
        let Some(below) = lexical.strip_prefix("/tmp/") else {
            return false;
        };
        let glob_free = below
            .split('/')
            .take_while(|c| !c.contains(['*', '?', '[']))
            .fold(String::from("/tmp"), |dir, c| format!("{dir}/{c}"));
        let dots = below
            .split('/')
            .any(|c| c.starts_with(['.', '[']) && c.contains(['*', '?', '[']));
        if dots || within(&lexical, self.workspace) || within(self.workspace, &glob_free) {
            return false;
        }
        used.set(true);
        true
    }

    pub(crate) fn place(&self, word: &Word) -> PathPlace {
        let text = word.text.as_str();
        if is_sink(text) {
            return PathPlace::Sink;
        }
        if self.in_private_tmp(word) {
            return PathPlace::PrivateTmp;
        }
        if is_credential(text) {
            return PathPlace::System;
        }
        let Some(resolved) = self.resolve(word) else {
            return legacy_place(text, true, None, self.workspace);
        };
        if is_sink(&resolved) {
            // A sink reached through `..` or opened as a directory is
            // wherever its descriptor leads: anything at all.
            return if sink_by_resolution(text, &resolved) {
                PathPlace::Sink
            } else {
                PathPlace::System
            };
        }
        if is_credential(&resolved) {
            return PathPlace::System;
        }
        if let Some(home) = self.facts.home()
            && crate::ws_path::HOME_STARTUP
                .iter()
                .any(|f| within(&resolved, &format!("{home}/{f}")))
        {
            return PathPlace::System;
        }
        if self.workspace != "/" && within(&resolved, self.workspace) {
            let rest = &resolved[self.workspace.len()..];
            if crate::ws_path::protected_dir(rest).is_some() {
                return PathPlace::Protected;
            }
            return PathPlace::Inside;
        }
        legacy_place(&resolved, false, None, self.workspace)
    }

    /// `WorkspaceSafe` when every path stays inside the workspace (or is a
    /// sink), otherwise `Ask` with a reason naming the problem.
    pub(crate) fn writes<'w>(&self, paths: impl IntoIterator<Item = &'w Word>) -> SegmentJudgement {
        let mut worst = PathPlace::Sink;
        let mut run_time = false;
        for path in paths {
            if let Some(construct) = path.opaque {
                return SegmentJudgement::owned(
                    Ask,
                    format!("writes to a path built by {construct}, which is not analysed"),
                );
            }
            if let Some(why) = self.through_unsure_link(path) {
                return SegmentJudgement::owned(Ask, format!("writes {why}"));
            }
            run_time |= path.dynamic || path.text.starts_with('$');
            let place = self.place(path);
            if matches!(place, PathPlace::Inside | PathPlace::System)
                && let Some(why) = self.runs_later(path)
            {
                return SegmentJudgement::owned(Ask, format!("writes {why}")).unseen(WRITES_CODE);
            }
            if crate::is_instruction_file(&path.text) {
                return SegmentJudgement::owned(
                    Ask,
                    format!(
                        "writes `{}`, which holds instructions every later session of this \
                         project follows",
                        path.text
                    ),
                );
            }
            if place.rank() > worst.rank() {
                worst = place;
            }
        }
        match worst {
            PathPlace::System => {
                SegmentJudgement::new(Ask, "writes to a system or credential file")
            }
            PathPlace::Protected => SegmentJudgement::new(
                Ask,
                "writes under `.git/` or `.codesmith/` (git runs code from there later; \
                 `.codesmith/` is the project's safety configuration)",
            )
            .unseen(WRITES_CODE),
            PathPlace::Outside if run_time => {
                SegmentJudgement::new(Ask, "writes to a path only known at run time")
            }
            PathPlace::Outside => SegmentJudgement::new(Ask, "writes outside the workspace"),
            PathPlace::Inside => {
                SegmentJudgement::new(WorkspaceSafe, "writes only inside the workspace")
            }
            PathPlace::PrivateTmp => SegmentJudgement::new(WorkspaceSafe, PRIVATE_TMP_WRITE),
            PathPlace::Sink => SegmentJudgement::new(Safe, "writes nothing that is kept"),
        }
    }

    /// Judges deleting `targets`: `WorkspaceSafe` only for regenerable build
    /// output or paths the task's snapshot holds; anything else asks.
    pub(crate) fn deletes<'w>(
        &self,
        targets: impl IntoIterator<Item = &'w Word>,
    ) -> SegmentJudgement {
        let (mut any, mut tmp, mut other) = (false, false, false);
        for target in targets {
            any = true;
            let written = self.writes([target]);
            if written.level > WorkspaceSafe {
                return SegmentJudgement::owned(
                    Ask,
                    format!(
                        "deletes `{}`: {}",
                        target.text,
                        written.reason.replacen("writes", "it lies", 1)
                    ),
                );
            }
            if written.level == Safe {
                other = true;
                continue;
            }
            if self.in_private_tmp(target) {
                tmp = true;
                continue;
            }
            other = true;
            let Some(resolved) = self.resolve(target) else {
                return SegmentJudgement::new(Ask, "deletes paths only known at run time");
            };
            if crate::ws_path::is_regenerable(&resolved, self.workspace) {
                continue;
            }
            if resolved.contains(['*', '?', '[']) {
                // Everything a glob matches lies below its literal
                // directory: held when the snapshot holds all of that.
                let dir = resolved
                    .split('/')
                    .take_while(|c| !c.contains(['*', '?', '[']))
                    .collect::<Vec<_>>()
                    .join("/");
                if !dir.is_empty()
                    && within(&dir, self.workspace)
                    && self.facts.snapshot_holds(&dir) == Some(true)
                {
                    continue;
                }
                // A glob in the last component only (`*.log`, `dist/*.map`): held when
                // the snapshot holds every file it matches there.
                if let Some((parent, last)) = resolved.rsplit_once('/')
                    && !parent.contains(['*', '?', '['])
                    && (parent == self.workspace || within(parent, self.workspace))
                    && crate::ws_path::file_glob_exact(last)
                    && self.facts.glob_held(parent, last) == Some(true)
                {
                    continue;
                }
                return SegmentJudgement::owned(
                    Ask,
                    format!(
                        "deletes what `{}` matches; whether the snapshot holds it is not known",
                        target.text
                    ),
                );
            }
            match self.facts.snapshot_holds(&resolved) {
                Some(true) => {}
                Some(false) => {
                    return SegmentJudgement::owned(
                        Ask,
                        format!(
                            "deletes `{}`, which the task's snapshot does not hold (it could not be undone)",
                            target.text
                        ),
                    );
                }
                None => {
                    return SegmentJudgement::owned(
                        Ask,
                        format!(
                            "deletes `{}`; no snapshot is known to hold it (it could not be undone)",
                            target.text
                        ),
                    );
                }
            }
        }
        if tmp && !other {
            SegmentJudgement::new(
                WorkspaceSafe,
                "deletes only below the sandbox's private /tmp (a fresh tmpfs of this \
                 command's own, discarded when it ends)",
            )
        } else if any {
            SegmentJudgement::new(
                WorkspaceSafe,
                "deletes only regenerable build output or files the snapshot holds",
            )
        } else {
            SegmentJudgement::new(WorkspaceSafe, "deletes nothing")
        }
    }

    /// Judges writing `paths` where a write replaces what is there
    /// (`> f`, `truncate`, `cp x f`, `tee f`, `sed -i`): like
    /// [`PathJudge::writes`], and inside the workspace like a deletion
    /// ([`PathJudge::deletes`]): `WorkspaceSafe` only when the file does
    /// not exist yet, is regenerable build output, or the task's snapshot
    /// holds it; otherwise it asks.
    pub(crate) fn overwrites<'w>(
        &self,
        paths: impl IntoIterator<Item = &'w Word>,
    ) -> SegmentJudgement {
        let mut worst = SegmentJudgement::new(Safe, "writes nothing that is kept");
        for path in paths {
            let written = self.writes([path]);
            if written.level != WorkspaceSafe || self.in_private_tmp(path) {
                worst = worst.max(written);
                continue;
            }
            let Some(resolved) = self.resolve(path) else {
                return SegmentJudgement::new(Ask, "overwrites a path only known at run time");
            };
            let undoable = crate::ws_path::is_regenerable(&resolved, self.workspace)
                || self.facts.snapshot_holds(&resolved) == Some(true);
            let exists = self.facts.exists(&resolved);
            if undoable || (self.trust_absence && exists == Some(false)) {
                worst = worst.max(SegmentJudgement::new(
                    WorkspaceSafe,
                    "writes only inside the workspace (new files, or files the snapshot holds)",
                ));
                continue;
            }
            let why = if exists == Some(true) {
                "which the task's snapshot does not hold (its content could not be restored)"
            } else {
                "which may exist and no snapshot is known to hold (its content could not be restored)"
            };
            return SegmentJudgement::owned(Ask, format!("overwrites `{}`, {why}", path.text));
        }
        worst
    }

    /// Why `path` may lead through a symlink an earlier command on the line
    /// put into the work tree, if it may: it lies in the workspace (or is
    /// relative to an unknown directory) and such a command ran.
    fn through_unsure_link(&self, path: &Word) -> Option<String> {
        let command = self.unsure_links?;
        if is_sink(&path.text) || path.text.starts_with("/dev/") {
            return None;
        }
        let inside = self
            .resolve(path)
            .is_none_or(|resolved| within(&resolved, self.workspace));
        inside.then(|| {
            format!(
                "`{}` after `{command}`, which may have made symlinks there (where it leads is not known)",
                path.text
            )
        })
    }

    /// Why reading `resolved` (absolute) asks when it lies below a hidden
    /// entry of the home directory outside the workspace (`~/.cargo/credentials`,
    /// `~/.m2/settings.xml`, `~/.config/rclone/rclone.conf`): tools keep
    /// their configuration and tokens there, so such a read is not known to
    /// be harmless. Shell start-up files and the caches and toolchains whose
    /// sources an agent reads (`~/.cargo/registry`, `~/.rustup`, `~/.cache`,
    /// `~/.local/lib`, …) stay readable.
    fn hidden_home_read(&self, resolved: &str) -> Option<&'static str> {
        const READABLE: &[&str] = &[
            ".bash_profile",
            ".bashrc",
            ".cache",
            ".cargo/bin",
            ".cargo/config.toml",
            ".cargo/git",
            ".cargo/registry",
            ".gitconfig",
            ".gitignore_global",
            ".gradle/caches",
            ".inputrc",
            ".local/bin",
            ".local/lib",
            ".local/share/man",
            ".m2/repository",
            ".npm/_cacache",
            ".nvm",
            ".profile",
            ".pyenv",
            ".rustup",
            ".tmux.conf",
            ".vimrc",
            ".zshrc",
        ];
        let home = self.facts.home()?;
        if home == "/" || within(resolved, self.workspace) {
            return None;
        }
        let rest = resolved.strip_prefix(home)?.strip_prefix('/')?;
        if !rest.split('/').any(|c| c.starts_with('.')) {
            return None;
        }
        if READABLE
            .iter()
            .any(|r| rest == *r || rest.strip_prefix(r).is_some_and(|t| t.starts_with('/')))
        {
            return None;
        }
        Some("hidden files in the home directory hold tools' configuration and tokens")
    }

    /// True when the directory `resolved` directly holds a dotenv file
    /// that exists (`.env`, `.env.local`, `.env.production`): a recursive
    /// search of it prints the secrets `cat .env` would.
    fn holds_dotenv(&self, resolved: &str) -> bool {
        [".env", ".env.local", ".env.production", ".env.development"]
            .iter()
            .any(|name| self.facts.exists(&format!("{resolved}/{name}")) == Some(true))
    }

    /// The first of `dirs` (the working directory when there are none)
    /// that holds credential stores below it: the root, `/etc`, `/home`, a
    /// user's home, `/run`, or any directory the home directory lies in.
    /// A directory only known at run time counts.
    pub(crate) fn credential_holder(&self, dirs: &[&Word]) -> Option<String> {
        self.credential_holder_of(dirs, true)
    }

    /// [`PathJudge::credential_holder`]; a directory that only holds a
    /// dotenv file counts when `dotenv` is true.
    pub(crate) fn credential_holder_of(&self, dirs: &[&Word], dotenv: bool) -> Option<String> {
        let dotenv_in = |dir: &str| dotenv && self.holds_dotenv(dir);
        let holds = |resolved: &str| {
            matches!(
                resolved,
                "/" | "/etc" | "/home" | "/root" | "/run" | "/var" | "/var/run"
            ) || resolved
                .strip_prefix("/home/")
                .is_some_and(|user| !user.contains('/'))
                || self.facts.home().is_some_and(|home| within(home, resolved))
        };
        if dirs.is_empty() {
            return match self.cwd {
                Some(cwd) if holds(cwd) || dotenv_in(cwd) => Some(cwd.to_string()),
                Some(_) => None,
                None => Some("the working directory".to_string()),
            };
        }
        dirs.iter().find_map(|dir| match self.resolve(dir) {
            Some(resolved) if holds(&resolved) || dotenv_in(&resolved) => Some(dir.text.clone()),
            Some(_) => None,
            None => Some(dir.text.clone()),
        })
    }

    /// Why writing `path` (inside the workspace) is a question: another
    /// program runs the file later on its own ([`crate::runs_later`], the
    /// judgement the file tools use).
    fn runs_later(&self, path: &Word) -> Option<String> {
        let resolved = self.resolve(path)?;
        if self.workspace == "/" || !within(&resolved, self.workspace) {
            return None;
        }
        let rel = resolved[self.workspace.len()..].trim_start_matches('/');
        crate::runs_later(rel, None).map(|r| r.reason(rel))
    }

    /// `Ask` when any of `paths` is a credential store (by
    /// resolved location) or built by a construct not analysed.
    pub(crate) fn reads<'w>(&self, paths: impl IntoIterator<Item = &'w Word>) -> SegmentJudgement {
        for path in paths {
            if let Some(construct) = path.opaque {
                return SegmentJudgement::owned(
                    Ask,
                    format!("reads a path built by {construct}, which is not analysed"),
                );
            }
            let resolved = self.resolve(path);
            if is_credential(&path.text) || resolved.as_deref().is_some_and(is_credential) {
                return SegmentJudgement::new(Ask, "reads a credential file");
            }
            if let Some(why) = self.through_unsure_link(path) {
                return SegmentJudgement::owned(Ask, format!("reads {why}"));
            }
            if let Some(resolved) = resolved.as_deref()
                && let Some(why) = self.hidden_home_read(resolved)
            {
                return SegmentJudgement::owned(Ask, format!("reads `{}`: {why}", path.text));
            }
            // A disk holds every file on it, credentials included.
            if resolved
                .as_deref()
                .is_some_and(crate::catastrophic::is_disk_device)
            {
                return SegmentJudgement::owned(
                    Ask,
                    format!("reads the raw disk or memory device `{}`", path.text),
                );
            }
            // The user's CodeSmith home holds its configuration and session
            // transcripts (which may hold secrets).
            if let (Some(resolved), Some(home)) = (resolved.as_deref(), self.facts.home())
                && within(resolved, &format!("{home}/.codesmith"))
            {
                return SegmentJudgement::new(
                    Ask,
                    "reads the user's CodeSmith home (configuration and session transcripts)",
                );
            }
            if resolved.is_none() && run_time_dir(&path.text).is_some() {
                return SegmentJudgement::owned(
                    Ask,
                    format!(
                        "reads `{}`, a path only known at run time (it could be a credential file)",
                        path.text
                    ),
                );
            }
            // Inside a credential store every relative or run-time path is one.
            if resolved.is_none() && self.cwd.is_some_and(is_credential) {
                return SegmentJudgement::new(Ask, "reads a credential file");
            }
        }
        SegmentJudgement::new(Safe, "only reads or prints")
    }
}

/// Why a write below the private `/tmp` runs.
pub(crate) const PRIVATE_TMP_WRITE: &str = "writes only below the sandbox's private /tmp \
     (a fresh tmpfs of this command's own, discarded when it ends)";

/// Which working directory a run-time path prefix names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunTimeDir {
    /// `~+`, `$PWD`, `${PWD}`.
    Current,
    /// `~-`, `$OLDPWD`, `${OLDPWD}`.
    Previous,
}

/// Splits `text` into the working directory its prefix names and the rest
/// (`$PWD/a` → (`Current`, `/a`)); `None` for other words.
pub(crate) fn run_time_dir(text: &str) -> Option<(RunTimeDir, &str)> {
    [
        ("~+", RunTimeDir::Current),
        ("${PWD}", RunTimeDir::Current),
        ("$PWD", RunTimeDir::Current),
        ("~-", RunTimeDir::Previous),
        ("${OLDPWD}", RunTimeDir::Previous),
        ("$OLDPWD", RunTimeDir::Previous),
    ]
    .into_iter()
    .find_map(|(prefix, dir)| {
        text.strip_prefix(prefix)
            .filter(|rest| (rest.is_empty() || rest.starts_with('/')) && !rest.contains('$'))
            .map(|rest| (dir, rest))
    })
}

/// `~`, `~/x`, `$HOME/x` and `${HOME}/x` with the home directory put in;
/// other words unchanged. `None` when the word is only known at run time
/// (or names another user's home).
pub(crate) fn expand_home(text: &str, dynamic: bool, home: Option<&str>) -> Option<String> {
    for prefix in ["${HOME}", "$HOME", "~"] {
        if let Some(rest) = text.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            if rest.contains('$') {
                return None;
            }
            return home.map(|h| format!("{h}{rest}"));
        }
    }
    if dynamic || text.starts_with('~') || text.is_empty() {
        return None;
    }
    Some(text.to_string())
}

/// Programs that only read or print.
const READ_ONLY: &[&str] = &[
    ":",
    "[",
    "[[",
    "ag",
    "apropos",
    "arch",
    "b2sum",
    "base64",
    "basename",
    "bat",
    "bc",
    "break",
    "bzcat",
    "cal",
    "cat",
    "cksum",
    "clear",
    "cmp",
    "column",
    "comm",
    "continue",
    "cut",
    "date",
    "df",
    "diff",
    "diffstat",
    "dirname",
    "dirs",
    "du",
    "echo",
    "egrep",
    "exa",
    "exit",
    "expand",
    "expr",
    "eza",
    "false",
    "fd",
    "fgrep",
    "file",
    "fmt",
    "fold",
    "free",
    "getconf",
    "getopts",
    "grep",
    "groups",
    "head",
    "help",
    "hexdump",
    "history",
    "hostname",
    "id",
    "info",
    "jq",
    "less",
    "locate",
    "ls",
    "lscpu",
    "lsd",
    "lsof",
    "man",
    "md5sum",
    "more",
    "nl",
    "nproc",
    "numfmt",
    "od",
    "paste",
    "pgrep",
    "printenv",
    "printf",
    "ps",
    "pwd",
    "read",
    "readlink",
    "realpath",
    "return",
    "rev",
    "rg",
    "seq",
    "set",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "shasum",
    "shellcheck",
    "shift",
    "sleep",
    "stat",
    "strings",
    "tac",
    "tail",
    "test",
    "tldr",
    "top",
    "tput",
    "tr",
    "tree",
    "true",
    "tty",
    "type",
    "umask",
    "uname",
    "unexpand",
    "uniq",
    "unset",
    "uptime",
    "users",
    "wait",
    "wc",
    "whatis",
    "whereis",
    "which",
    "who",
    "whoami",
    "xxd",
    "xzcat",
    "yes",
    "yq",
    "zcat",
    "zgrep",
];

/// True when `program` only reads or prints (its table entry; options
/// are judged separately).
pub(crate) fn is_read_only(program: &str) -> bool {
    READ_ONLY.binary_search(&program).is_ok()
}

/// Programs that write the paths they are given.
const PATH_WRITERS: &[&str] = &[
    "bunzip2", "bzip2", "chmod", "cp", "dos2unix", "gunzip", "gzip", "install", "ln", "mkdir",
    "mv", "rmdir", "shred", "touch", "unix2dos", "unlink", "unxz", "xz", "zstd",
];

/// Build, test, lint and format tools that work on the project in place.
const PROJECT_TOOLS: &[&str] = &[
    "black",
    "cc",
    "clang",
    "clang++",
    "clang-format",
    "cmake",
    "eslint",
    "g++",
    "gcc",
    "gofmt",
    "isort",
    "javac",
    "jest",
    "make",
    "meson",
    "mocha",
    "mypy",
    "prettier",
    "pylint",
    "pytest",
    "ruff",
    "rustc",
    "rustfmt",
    "shfmt",
    "swiftc",
    "tsc",
    "vitest",
];

/// Programs that change the machine rather than the project.
const SYSTEM_CHANGERS: &[(&str, &str)] = &[
    ("chgrp", "changes file ownership"),
    ("chown", "changes file ownership"),
    ("chroot", "changes the root directory"),
    ("crontab", "edits scheduled jobs"),
    ("dd", "copies raw data between devices or files"),
    ("fdisk", "edits disk partitions"),
    ("halt", "stops the machine"),
    ("kill", "signals other processes"),
    ("killall", "signals other processes"),
    ("mkfs", "formats a file system"),
    ("mount", "mounts a file system"),
    ("passwd", "changes account passwords"),
    ("pkill", "signals other processes"),
    ("poweroff", "stops the machine"),
    ("reboot", "restarts the machine"),
    ("service", "controls system services"),
    ("shutdown", "stops the machine"),
    ("systemctl", "controls system services"),
    ("umount", "unmounts a file system"),
    ("useradd", "changes user accounts"),
    ("userdel", "changes user accounts"),
];

fn texts(args: &[Word]) -> Vec<&str> {
    args.iter().map(|w| w.text.as_str()).collect()
}

/// The paths `chmod ARGS` changes. The mode is the first word that is not
/// one of chmod's own options, even when it starts with `-` (`chmod -x f`,
/// `chmod -R -w /`); with `--reference=FILE` there is no mode word.
pub(crate) fn chmod_paths(args: &[Word]) -> Vec<&Word> {
    let is_option = |t: &str| {
        t.starts_with("--")
            || (t.starts_with('-') && t.len() > 1 && t[1..].chars().all(|c| "cfvR".contains(c)))
    };
    let mut mode_seen = args.iter().any(|w| w.text.starts_with("--reference"));
    let mut only_operands = false;
    let mut paths = Vec::new();
    for word in args {
        let t = word.text.as_str();
        if !only_operands && t == "--" {
            only_operands = true;
            continue;
        }
        if !only_operands && is_option(t) {
            continue;
        }
        if mode_seen {
            paths.push(word);
        } else {
            mode_seen = true;
        }
    }
    paths
}

fn operands(args: &[Word]) -> Vec<&Word> {
    let mut after_dashdash = false;
    args.iter()
        .filter(|w| {
            if after_dashdash {
                return true;
            }
            if w.text == "--" {
                after_dashdash = true;
                return false;
            }
            !(w.text.starts_with('-') && w.text.len() > 1)
        })
        .collect()
}

/// Operands of `args`, skipping the value word after any of `valued`
/// (`truncate -s 0 f` → `f`).
fn operands_after<'a>(args: &'a [Word], valued: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        if valued.contains(&word.text.as_str()) {
            iter.next();
        } else if !(word.text.starts_with('-') && word.text.len() > 1) {
            out.push(word);
        }
    }
    out
}

fn is_info_only(args: &[Word]) -> bool {
    !args.is_empty()
        && args.iter().all(|w| {
            matches!(
                w.text.as_str(),
                "--version" | "-V" | "--help" | "-h" | "version" | "help"
            )
        })
}

/// Programs that must always ask, and why.
const ALWAYS_ASK: &[(&str, &str)] = &[
    (
        "alias",
        "defines an alias, which changes what later commands run",
    ),
    (
        "builtin",
        "runs a shell builtin by name, bypassing what is analysed",
    ),
    ("coproc", "starts a coprocess"),
    ("enable", "enables or loads shell builtins"),
    (
        "let",
        "evaluates arithmetic, which can run substitutions in subscripts",
    ),
    (
        "just",
        "just runs the justfile's recipes, which can be any command; approve it if you trust \
         the justfile",
    ),
    (
        "make",
        "make runs the Makefile's recipes, which can be any command",
    ),
    (
        "ninja",
        "ninja runs build.ninja's commands (and `-t` tools), which can be any command; approve it \
         if you trust the build files",
    ),
    ("trap", "sets a command the shell runs on a signal"),
];

/// Output options whose value is a path written (judged by where it lands).
const OUTPUT_OPTIONS: &[&str] = &[
    "--artifact-dir",
    "--out-dir",
    "--outDir",
    "--outdir",
    "--output",
    "--output-dir",
    "--target-dir",
    "-d",
    "-o",
];

/// `cargo new PATH` / `cargo init PATH` create a package at PATH (judged as
/// a write); `cargo doc --open` starts a browser (`$BROWSER`).
fn cargo_paths_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let mut words = args.iter().skip_while(|w| w.text.starts_with(['-', '+']));
    let Some(sub) = words.next() else {
        return SegmentJudgement::new(Safe, "no sub-command");
    };
    let rest: Vec<&Word> = words.collect();
    match sub.text.as_str() {
        "new" | "init" => {
            const VALUED: &[&str] = &["--name", "--vcs", "--edition", "--registry", "--color"];
            let mut paths = Vec::new();
            let mut skip_next = false;
            for w in rest {
                if std::mem::take(&mut skip_next) {
                    continue;
                }
                if VALUED.contains(&w.text.as_str()) {
                    skip_next = true;
                } else if !w.text.starts_with('-') {
                    paths.push(w);
                }
            }
            judge.writes(paths)
        }
        "doc" | "d" if rest.iter().any(|w| w.text == "--open") => SegmentJudgement::new(
            Ask,
            "cargo doc --open starts a browser (`$BROWSER` names any program)",
        ),
        _ => SegmentJudgement::new(Safe, "no path operands"),
    }
}

/// The values of [`OUTPUT_OPTIONS`] in `args` (`-o x`, `-ox`, `--output=x`).
fn output_targets(args: &[Word]) -> Vec<Word> {
    let mut out = Vec::new();
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        let text = word.text.as_str();
        if OUTPUT_OPTIONS.contains(&text) {
            if let Some(value) = iter.next() {
                out.push(value.clone());
            }
        } else if let Some((name, value)) = text.split_once('=')
            && OUTPUT_OPTIONS.contains(&name)
        {
            out.push(Word {
                text: value.to_string(),
                ..word.clone()
            });
        } else if let Some(value) = text.strip_prefix("-o")
            && !value.is_empty()
            && !text.starts_with("--")
        {
            out.push(Word {
                text: value.to_string(),
                ..word.clone()
            });
        }
    }
    out
}

/// Why printing the whole environment asks.
pub(crate) const PRINTS_ENVIRONMENT: &str =
    "prints every environment variable, secrets included (API keys, tokens), into the transcript";

/// `set`: with no arguments it prints every shell variable (secrets
/// included); with shell options (`-euo pipefail`, `+x`) or `--` and
/// positional parameters it changes only the running shell.
///
/// Only options known not to change how later commands are read or run
/// (what the policy judges them as) are allowed, and only in the direction
/// named in [`SET_OPTIONS`]; anything else asks and names the option.
fn set_judgement(args: &[Word]) -> SegmentJudgement {
    if args.is_empty() {
        return SegmentJudgement::new(Ask, PRINTS_ENVIRONMENT);
    }
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        let text = word.text.as_str();
        if word.dynamic {
            // `set $X` takes `-k` in `X` as an option.
            return SegmentJudgement::owned(
                Ask,
                format!(
                    "`{text}` is only known at run time, and set would take it as an option if it \
                     starts with `-` or `+` (put `--` before positional parameters)"
                ),
            );
        }
        if text == "--" || text == "-" {
            break;
        }
        let on = text.starts_with('-');
        let Some(flags) = text.strip_prefix(['-', '+']) else {
            break;
        };
        if flags.is_empty() {
            return SegmentJudgement::owned(Ask, format!("unknown option `{text}` for set"));
        }
        for letter in flags.chars() {
            if letter == 'o' {
                // `set -o` / `set +o` alone print the options: harmless.
                let Some(name) = iter.next() else {
                    continue;
                };
                if let Some(why) = set_option_refused(&name.text, on, name.dynamic) {
                    return SegmentJudgement::owned(Ask, why);
                }
                continue;
            }
            let Some(option) = SET_OPTIONS.iter().find(|o| o.letter == Some(letter)) else {
                return SegmentJudgement::owned(
                    Ask,
                    format!(
                        "unknown option `{}{letter}` for set",
                        if on { '-' } else { '+' }
                    ),
                );
            };
            if let Some(why) = set_option_refused(option.name, on, false) {
                return SegmentJudgement::owned(Ask, why);
            }
        }
    }
    SegmentJudgement::new(Safe, "sets shell options or positional parameters")
}

/// Why a shell started with the options at the front of `args` (`bash -k
/// -c …`, `sh -o keyword …`, `bash -O extglob …`, `bash --posix`) reads what
/// it runs differently from how the policy judged it, or `None`. The options
/// `set` takes are judged as `set` judges them; `-O`/`+O` (shopt options)
/// and `--posix` ask. The shell's own options (`-c`, `-i`, `-l`, `-s`, …)
/// are left to the caller.
pub(crate) fn shell_options_refused(args: &[Word]) -> Option<String> {
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        let text = word.text.as_str();
        if word.dynamic || text == "--" || text == "-" {
            return None;
        }
        if text == "--posix" {
            return set_option_refused("posix", true, false);
        }
        if text.starts_with("--") {
            continue;
        }
        let on = text.starts_with('-');
        let flags = text.strip_prefix(['-', '+'])?;
        for letter in flags.chars() {
            match letter {
                'o' => {
                    let name = iter.next()?;
                    if let Some(why) = set_option_refused(&name.text, on, name.dynamic) {
                        return Some(why);
                    }
                }
                'O' => {
                    let name = iter.next().map_or("", |n| n.text.as_str());
                    return Some(format!(
                        "starts a shell with the shopt option `{name}`, which changes how the \
                         commands it runs are read"
                    ));
                }
                _ => {
                    if let Some(option) = SET_OPTIONS.iter().find(|o| o.letter == Some(letter))
                        && let Some(why) = set_option_refused(option.name, on, false)
                    {
                        return Some(why);
                    }
                }
            }
        }
    }
    None
}

/// One shell option `set` changes: its `-o` name, its letter, and whether
/// turning it on / off is known not to change what later commands do
/// beyond what the policy judges (`None`: harmless; `Some(why)`: asks).
struct SetOption {
    name: &'static str,
    letter: Option<char>,
    on: Option<&'static str>,
    off: Option<&'static str>,
}

const fn set_option(
    name: &'static str,
    letter: Option<char>,
    on: Option<&'static str>,
    off: Option<&'static str>,
) -> SetOption {
    SetOption {
        name,
        letter,
        on,
        off,
    }
}

/// Every option of bash's `set` (bash 5.2 manual, "The Set Builtin").
/// Options that only make the shell stop, report or refuse sooner (`-e`,
/// `-u`, `-n`, `-C`, `-f`, `pipefail`, …), trace (`-x`: `PS4`, which it
/// expands, is judged where it is set), or change when traps already set
/// (and judged) run (`-E`, `-T`) are harmless either way.
const SET_OPTIONS: &[SetOption] = &[
    set_option(
        "allexport",
        Some('a'),
        Some(
            "exports every variable set later, so a later assignment the policy judges as the shell's own (`GIT_SSH=…`) reaches every program",
        ),
        None,
    ),
    set_option(
        "braceexpand",
        Some('B'),
        None,
        Some("turns brace expansion off, so later words are not the words the policy reads"),
    ),
    set_option("emacs", None, None, None),
    set_option("errexit", Some('e'), None, None),
    set_option("errtrace", Some('E'), None, None),
    set_option("functrace", Some('T'), None, None),
    set_option("hashall", Some('h'), None, None),
    set_option(
        "histexpand",
        Some('H'),
        Some(
            "turns on `!` history expansion, which replaces later text with earlier commands the policy cannot see",
        ),
        None,
    ),
    set_option("history", None, None, None),
    set_option("ignoreeof", None, None, None),
    set_option(
        "interactive-comments",
        None,
        None,
        Some("turns comments off, so a later `#` starts words the policy reads as a comment"),
    ),
    set_option(
        "keyword",
        Some('k'),
        Some(
            "makes every later `NAME=value` argument an environment variable of its command (`git diff GIT_EXTERNAL_DIFF=…` runs a program), which the policy reads as an argument",
        ),
        None,
    ),
    set_option("monitor", Some('m'), None, None),
    set_option("noclobber", Some('C'), None, None),
    set_option("noexec", Some('n'), None, None),
    set_option("noglob", Some('f'), None, None),
    set_option("nolog", None, None, None),
    set_option("notify", Some('b'), None, None),
    set_option("nounset", Some('u'), None, None),
    set_option("onecmd", Some('t'), None, None),
    set_option(
        "physical",
        Some('P'),
        Some(
            "makes `cd` follow symbolic links physically, so later directories are not the ones the policy works out",
        ),
        None,
    ),
    set_option("pipefail", None, None, None),
    set_option(
        "posix",
        None,
        Some("switches the shell to POSIX mode, which changes how later commands are read and run"),
        Some("switches POSIX mode off, which changes how later commands are read and run"),
    ),
    set_option(
        "privileged",
        Some('p'),
        Some("changes which start-up files and inherited functions the shell reads"),
        Some("changes which start-up files and inherited functions the shell reads"),
    ),
    set_option("verbose", Some('v'), None, None),
    set_option("vi", None, None, None),
    set_option("xtrace", Some('x'), None, None),
];

/// Why turning the `set -o` option `name` on (`on`) or off asks, or `None`
/// when that is known to be harmless.
fn set_option_refused(name: &str, on: bool, dynamic: bool) -> Option<String> {
    let sign = if on { '-' } else { '+' };
    let Some(option) = SET_OPTIONS
        .iter()
        .find(|o| o.name == name)
        .filter(|_| !dynamic)
    else {
        return Some(format!("unknown shell option `{name}` for `set {sign}o`"));
    };
    let why = if on { option.on } else { option.off }?;
    let spelled = match option.letter {
        Some(letter) => format!("the shell option {name} (`{sign}{letter}`)"),
        None => format!("the shell option {name} (`{sign}o {name}`)"),
    };
    Some(format!("{spelled} {why}"))
}

/// Judges a known program; `None` when the program is not in any table.
pub(crate) fn program_judgement(
    program: &str,
    args: &[Word],
    judge: PathJudge<'_>,
) -> Option<SegmentJudgement> {
    if let Ok(i) = SYSTEM_CHANGERS.binary_search_by(|(p, _)| p.cmp(&program)) {
        if program == "systemctl"
            && args.len() <= 3
            && args
                .iter()
                .any(|a| matches!(a.text.as_str(), "status" | "list-units" | "is-active"))
        {
            return Some(SegmentJudgement::new(Safe, "reads service status"));
        }
        return Some(SegmentJudgement::new(Ask, SYSTEM_CHANGERS[i].1));
    }
    if matches!(program, "make" | "gmake" | "ninja" | "just") && is_info_only(args) {
        return Some(SegmentJudgement::new(Safe, "prints version or help"));
    }
    if let Some((_, why)) = ALWAYS_ASK.iter().find(|(p, _)| *p == program) {
        return Some(SegmentJudgement::new(Ask, why));
    }
    if is_info_only(args) && crate::arity::arity_of(program).is_some() {
        return Some(SegmentJudgement::new(Safe, "prints version or help"));
    }
    let judgement = match program {
        "cargo" | "npm" | "pnpm" | "yarn" | "bun" | "go" | "uv" | "poetry"
            if !project_dirs_inside(args, judge) =>
        {
            SegmentJudgement::new(
                Ask,
                "works on a project outside the workspace (its build scripts run)",
            )
        }
        "git" => crate::git_rules::git_judgement(args, judge),
        "rm" => rm_judgement(args, judge),
        "unlink" | "shred" => judge.deletes(operands(args)),
        "sed" => sed_judgement(args, judge),
        "awk" | "gawk" | "mawk" | "nawk" => awk_judgement(args, judge),
        "sort" => sort_judgement(args, judge),
        "tar" => crate::archive_rules::tar_judgement(args, judge),
        "unzip" => unzip_judgement(args, judge),
        "patch" => patch_judgement(args, judge),
        "truncate" => {
            judge.overwrites(operands_after(args, &["-s", "--size", "-r", "--reference"]))
        }
        "tee"
            if args.iter().any(|w| {
                w.text == "--append"
                    || (w.text.starts_with('-')
                        && !w.text.starts_with("--")
                        && w.text.contains('a'))
            }) =>
        {
            judge.writes(operands(args))
        }
        "tee" => judge.overwrites(operands(args)),
        "zip" => crate::archive_rules::zip_judgement(args, judge),
        "gzip" | "gunzip" | "pigz" | "unpigz" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" => {
            crate::archive_rules::compressor_judgement(program, args, judge)
        }
        "ln" => ln_judgement(args, judge),
        "cp" | "install" | "mv" => copy_judgement(program, args, judge),
        "chmod" => judge.writes(chmod_paths(args)),
        "uniq" | "xxd" => two_operand_judgement(program, args, judge),
        "hash"
            if args
                .iter()
                .any(|w| w.text.starts_with('-') && w.text.contains('p')) =>
        {
            SegmentJudgement::new(Ask, "hash -p changes where the shell finds a program")
        }
        "hash" => SegmentJudgement::new(Safe, "looks programs up"),
        "echo" => SegmentJudgement::new(Safe, "only prints its arguments"),
        "set" => set_judgement(args),
        "printenv" if operands(args).is_empty() => SegmentJudgement::new(Ask, PRINTS_ENVIRONMENT),
        "printenv"
            if operands(args)
                .iter()
                .any(|w| crate::is_secret_env_name(&w.text)) =>
        {
            SegmentJudgement::new(
                Ask,
                "prints a secret environment variable into the transcript",
            )
        }
        "printf" if args.iter().any(|w| w.text.starts_with("-v")) => SegmentJudgement::new(
            Ask,
            "printf -v assigns a variable, evaluating subscripts as arithmetic",
        ),
        "test" | "[" if args.iter().any(|w| w.text == "-v" || w.text == "-R") => {
            SegmentJudgement::new(Ask, "test -v evaluates a subscript as arithmetic")
        }
        "date"
            if crate::safe_options::check_options("date", args)
                .is_ok_and(|operands| operands.iter().any(|i| !args[*i].text.starts_with('+'))) =>
        {
            SegmentJudgement::new(Ask, "date with an operand sets the clock")
        }
        "hostname" if args.iter().any(|w| !w.text.starts_with('-')) => {
            SegmentJudgement::new(Ask, "hostname with an operand sets the host name")
        }
        p if PATH_WRITERS.binary_search(&p).is_ok() => judge.writes(operands(args)),
        p if READ_ONLY.binary_search(&p).is_ok() => read_judgement(p, args, judge),
        p if PROJECT_TOOLS.binary_search(&p).is_ok() => project_tool_judgement(p, args, judge),
        "npm" | "pnpm" | "yarn" | "bun"
            if args.iter().any(|w| {
                [
                    "--script-shell",
                    "--node-options",
                    "--shell",
                    "--userconfig",
                    "--globalconfig",
                ]
                .iter()
                .any(|o| w.text == *o || w.text.starts_with(&format!("{o}=")))
            }) =>
        {
            SegmentJudgement::new(
                Ask,
                "the package manager is told which shell or options run its scripts \
                 (`--script-shell`, `--node-options`); approve it if intended",
            )
        }
        "cargo"
            if args.iter().any(|w| {
                w.text == "--config" || w.text.starts_with("--config=") || w.text.starts_with("-Z")
            }) =>
        {
            SegmentJudgement::new(Ask, "cargo --config can name programs cargo runs")
        }
        "cargo" => crate::tool_rules::cargo_judgement(args)
            .max(judge.writes(&output_targets(args)))
            .max(cargo_paths_judgement(args, judge)),
        "bun"
            if args
                .iter()
                .any(|w| w.text == "run" || w.text.ends_with(".ts") || w.text.ends_with(".js")) =>
        {
            SegmentJudgement::new(Ask, "bun run runs a file or script")
        }
        "npm" | "pnpm" | "yarn" | "bun" => crate::tool_rules::node_pm_judgement(args),
        "pip" | "pip3" => crate::tool_rules::pip_judgement(args),
        "uv" | "poetry" | "pipx" | "conda" => crate::tool_rules::python_pm_judgement(program, args),
        "go" if args.first().is_some_and(|w| w.text == "clean")
            && args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "-modcache" | "-cache" | "-testcache" | "-fuzzcache" | "-i" | "-r"
                )
            }) =>
        {
            SegmentJudgement::new(
                Ask,
                "go clean -modcache/-cache deletes caches outside the workspace; approve it if \
                 intended",
            )
        }
        "go" => crate::tool_rules::go_judgement(args).max(judge.writes(&output_targets(args))),
        "docker" | "podman" => crate::tool_rules::container_judgement(args),
        "rustup" => crate::tool_rules::rustup_judgement(args),
        _ => return None,
    };
    Some(judgement)
}

/// Options of project tools that name the project to work on.
const PROJECT_DIR_OPTIONS: &[&str] = &[
    "--manifest-path",
    "-C",
    "--prefix",
    "--cwd",
    "--dir",
    "--directory",
    "--project",
    "--modfile",
];

/// True when every project named by [`PROJECT_DIR_OPTIONS`] lies inside the
/// workspace (or none is named).
fn project_dirs_inside(args: &[Word], judge: PathJudge<'_>) -> bool {
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        let text = word.text.as_str();
        let value = if PROJECT_DIR_OPTIONS.contains(&text) {
            iter.next().cloned()
        } else {
            text.split_once('=')
                .filter(|(name, _)| PROJECT_DIR_OPTIONS.contains(name))
                .map(|(_, v)| Word {
                    text: v.to_string(),
                    ..word.clone()
                })
        };
        if let Some(value) = value
            && judge.place(&value) != PathPlace::Inside
        {
            return false;
        }
    }
    true
}

/// Build, lint and format tools: `WorkspaceSafe` while their output
/// options and the files they rewrite stay inside the workspace.
fn project_tool_judgement(program: &str, args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    if args
        .iter()
        .any(|w| w.text.starts_with("-fplugin") || w.text.starts_with("-wrapper"))
    {
        return SegmentJudgement::new(Ask, "loads a compiler plugin or wrapper program");
    }
    if program == "cmake" && args.iter().any(|w| w.text == "-E" || w.text == "-P") {
        return SegmentJudgement::new(Ask, "cmake -E / -P runs commands or scripts");
    }
    if let Some(option) = compiler_option_not_understood(program, args) {
        return SegmentJudgement::owned(
            Ask,
            format!(
                "{program} option `{option}` is not understood (it may name a program, plugin, \
                 linker or directory the build uses)"
            ),
        );
    }
    let mut judgement =
        SegmentJudgement::new(WorkspaceSafe, "builds, tests or formats the project");
    let mut outputs = output_targets(args);
    outputs.extend(build_dirs(program, args));
    if !outputs.is_empty() {
        judgement = judgement.max(judge.writes(&outputs));
    }
    if matches!(
        program,
        "black" | "clang-format" | "gofmt" | "isort" | "prettier" | "rustfmt" | "shfmt" | "ruff"
    ) {
        let files: Vec<&Word> = operands(args)
            .into_iter()
            .filter(|w| !matches!(w.text.as_str(), "check" | "format"))
            .collect();
        let written = judge.writes(files);
        if written.level > WorkspaceSafe {
            judgement = judgement.max(written);
        }
    }
    judgement
}

/// The first option of a C compiler, `rustc`, `cmake` or `meson` call
/// that is not on the list of options known to change only how the
/// project's own files are compiled (`-B DIR` and `-fuse-ld=` pick the
/// programs the compiler runs, `-Xclang -load` a plugin, `-C linker=` the
/// linker, `cmake --install` writes the install prefix). Other tools: `None`.
fn compiler_option_not_understood<'a>(program: &str, args: &'a [Word]) -> Option<&'a str> {
    let cc = matches!(program, "cc" | "gcc" | "g++" | "clang" | "clang++");
    if !cc && !matches!(program, "rustc" | "cmake" | "meson") {
        return None;
    }
    // Options whose value is the next word (checked by the value's own
    // judgement: outputs are writes, the rest are data).
    let valued: &[&str] = match program {
        "rustc" => &[
            "-o",
            "--out-dir",
            "--edition",
            "--crate-type",
            "--crate-name",
            "--cfg",
            "--target",
            "-L",
            "-l",
            "--emit",
            "--explain",
            "-W",
            "-A",
            "-D",
            "-F",
            "--cap-lints",
            "--extern",
        ],
        "cmake" => &[
            "-S",
            "-B",
            "-G",
            "-T",
            "-A",
            "-D",
            "-U",
            "--build",
            "--target",
            "-t",
            "--config",
            "-j",
            "--parallel",
            "--preset",
            "--log-level",
        ],
        "meson" => &["-C", "--buildtype", "-D", "--prefix", "--backend", "-j"],
        _ => &[
            "-o",
            "-I",
            "-L",
            "-l",
            "-x",
            "-D",
            "-U",
            "-isystem",
            "-iquote",
            "-idirafter",
            "-include",
            "-MF",
            "-MT",
            "-MQ",
            "-std",
        ],
    };
    let mut iter = args.iter();
    let mut subcommand_seen = false;
    while let Some(word) = iter.next() {
        let text = word.text.as_str();
        if valued.contains(&text) {
            iter.next()?;
            continue;
        }
        if !text.starts_with('-') || text == "-" {
            // meson's first operand is its subcommand.
            if program == "meson" && !subcommand_seen {
                subcommand_seen = true;
                if !matches!(
                    text,
                    "setup" | "compile" | "test" | "configure" | "introspect"
                ) {
                    return Some(text);
                }
            }
            continue;
        }
        let understood = match program {
            "rustc" => {
                if text.starts_with("-C") {
                    let setting = match text.strip_prefix("-C").filter(|v| !v.is_empty()) {
                        Some(v) => v,
                        None => iter.next().map_or("", |w| w.text.as_str()),
                    };
                    let key = setting.split('=').next().unwrap_or("");
                    if !matches!(
                        key,
                        "opt-level"
                            | "debuginfo"
                            | "codegen-units"
                            | "target-cpu"
                            | "target-feature"
                            | "debug-assertions"
                            | "overflow-checks"
                            | "panic"
                            | "lto"
                            | "strip"
                            | "relocation-model"
                            | "embed-bitcode"
                            | "force-frame-pointers"
                            | "metadata"
                            | "extra-filename"
                    ) {
                        return Some(setting);
                    }
                    true
                } else {
                    matches!(
                        text,
                        "-O" | "-g"
                            | "--test"
                            | "-v"
                            | "--verbose"
                            | "-V"
                            | "--version"
                            | "-h"
                            | "--help"
                    ) || [
                        "--edition=",
                        "--crate-type=",
                        "--crate-name=",
                        "--cfg=",
                        "--emit=",
                        "--target=",
                        "--cap-lints=",
                        "--error-format=",
                        "--json=",
                        "--color=",
                        "-L",
                        "-l",
                        "-W",
                        "-A",
                        "-D",
                        "-F",
                        "--out-dir=",
                        "--extern=",
                    ]
                    .iter()
                    .any(|p| text.starts_with(p))
                }
            }
            "cmake" => {
                matches!(
                    text,
                    "--fresh"
                        | "--version"
                        | "--help"
                        | "-N"
                        | "-L"
                        | "-LA"
                        | "-LH"
                        | "-LAH"
                        | "--verbose"
                        | "-v"
                        | "--clean-first"
                        | "-Wdev"
                        | "-Wno-dev"
                        | "--warn-uninitialized"
                        | "--debug-output"
                ) || [
                    "-D",
                    "-U",
                    "-G",
                    "-S",
                    "-B",
                    "-j",
                    "--parallel=",
                    "--preset=",
                    "--log-level=",
                    "--target=",
                    "--config=",
                ]
                .iter()
                .any(|p| text.starts_with(p))
            }
            "meson" => {
                matches!(
                    text,
                    "-v" | "--version" | "--help" | "-h" | "--reconfigure" | "--wipe"
                ) || ["-D", "-C", "-j", "--buildtype=", "--backend=", "--prefix="]
                    .iter()
                    .any(|p| text.starts_with(p))
            }
            _ => {
                let linker_or_assembler = [
                    "-Wl,",
                    "-Wa,",
                    "-Wp,",
                    "-Xlinker",
                    "-Xassembler",
                    "-Xpreprocessor",
                ]
                .iter()
                .any(|p| text.starts_with(p));
                let programs = ["-fplugin", "-fuse-ld", "-fprofile", "-fdump", "-fcoverage"]
                    .iter()
                    .any(|p| text.starts_with(p));
                !linker_or_assembler
                    && !programs
                    && (matches!(
                        text,
                        "-c" | "-S"
                            | "-E"
                            | "-v"
                            | "-w"
                            | "-s"
                            | "-P"
                            | "-C"
                            | "-H"
                            | "-pipe"
                            | "-pthread"
                            | "-shared"
                            | "-static"
                            | "-pie"
                            | "-no-pie"
                            | "-rdynamic"
                            | "-pedantic"
                            | "-pedantic-errors"
                            | "-ansi"
                            | "--version"
                            | "--help"
                            | "-M"
                            | "-MM"
                            | "-MD"
                            | "-MMD"
                            | "-MP"
                    ) || [
                        "-O", "-g", "-std=", "-W", "-D", "-U", "-f", "-m", "-I", "-L", "-l", "-o",
                        "-x", "-isystem", "-iquote", "-MF", "-MT", "-MQ", "--std=",
                    ]
                    .iter()
                    .any(|p| text.starts_with(p))
                        && !text.starts_with("-mllvm"))
            }
        };
        if !understood {
            return Some(text);
        }
    }
    None
}

/// Directories a build tool writes that are not spelled as output
/// options: `cmake -B DIR` / `--build DIR`, `meson setup DIR` / `-C DIR`,
/// a C compiler's dependency file (`-MF FILE`).
fn build_dirs(program: &str, args: &[Word]) -> Vec<Word> {
    let mut out = Vec::new();
    let names: &[&str] = match program {
        "cmake" => &["-B", "--build"],
        "meson" => &["-C"],
        "cc" | "gcc" | "g++" | "clang" | "clang++" => &["-MF"],
        _ => &[],
    };
    let mut iter = args.iter();
    let mut meson_operands = 0;
    while let Some(word) = iter.next() {
        let text = word.text.as_str();
        if names.contains(&text) {
            out.extend(iter.next().cloned());
        } else if let Some(value) = names
            .iter()
            .find_map(|n| text.strip_prefix(n))
            .filter(|v| !v.is_empty())
        {
            let value = value.strip_prefix('=').unwrap_or(value);
            out.push(Word {
                text: value.to_string(),
                ..word.clone()
            });
        } else if program == "meson" && !text.starts_with('-') {
            // `meson setup BUILDDIR [SOURCEDIR]`: the build directory.
            meson_operands += 1;
            if meson_operands == 2 {
                out.push(word.clone());
            }
        }
    }
    out
}

/// A read-only program: every option must be on its safe list, and what
/// it reads must not be a credential store.
fn read_judgement(program: &str, args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    // A pager's `+CMD` runs CMD at start (`+!sh` in less); without a
    // terminal its keys (`!`, `v`) are never read.
    if matches!(program, "less" | "more")
        && let Some(word) = args
            .iter()
            .find(|w| w.text.starts_with('+') && !w.text[1..].chars().all(|c| c.is_ascii_digit()))
    {
        return SegmentJudgement::owned(
            Ask,
            format!(
                "{program} `{}` runs a pager command at start (`!` runs a shell); drop it, or \
                 approve it",
                word.text
            ),
        );
    }
    let operands = match crate::safe_options::check_options(program, args) {
        Ok(operands) => operands,
        Err(reason) => return SegmentJudgement::owned(Ask, reason),
    };
    let judgement = judge.reads(operands.iter().map(|i| &args[*i]));
    if judgement.level > Safe {
        return judgement;
    }
    if let Some(why) = environment_dump(program, args) {
        return SegmentJudgement::owned(Ask, why);
    }
    if recursive_read(program, args) {
        // The first operand of `grep`/`rg` is the pattern unless one was
        // given with `-e`/`-f`; with no directory left they search the
        // working directory.
        let pattern_given = program == "diff"
            || args.iter().any(|w| {
                let t = w.text.as_str();
                t.starts_with("--regexp")
                    || t.starts_with("--file")
                    || (t.starts_with('-') && !t.starts_with("--") && t.contains(['e', 'f']))
            });
        let skip = usize::from(!pattern_given);
        let dirs: Vec<&Word> = operands.iter().skip(skip).map(|i| &args[*i]).collect();
        // rg skips hidden files (`.env`) unless told otherwise.
        let dotenv_counts = !matches!(program, "rg") || rg_reads_hidden(args, &dirs, judge);
        if let Some(dir) = judge.credential_holder_of(&dirs, dotenv_counts) {
            return SegmentJudgement::owned(
                Ask,
                format!(
                    "searches `{dir}` recursively, and it holds credential stores or a dotenv file (~/.ssh, ~/.aws, .env, …)"
                ),
            );
        }
    }
    // Option values can name files too (`grep -f ~/.ssh/id_rsa`).
    judge.reads(args.iter().filter(|w| is_credential(&w.text)))
}

/// True when `rg ARGS` may read hidden files (`.env`) in `dirs`: it is
/// told to (`--hidden`, `-.`, `-u…`, `--unrestricted`), a glob that is not
/// an exclusion could whitelist one (`-g .env`), or an ignore file of
/// rg's own (`.ignore`, `.rgignore`) there could.
fn rg_reads_hidden(args: &[Word], dirs: &[&Word], judge: PathJudge<'_>) -> bool {
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if t == "--hidden" || t.starts_with("--unrestricted") || t.starts_with("--no-ignore") {
            return true;
        }
        if t.starts_with('-')
            && !t.starts_with("--")
            && t[1..].contains(['.', 'u'])
            && !t[1..].contains(['g', 'e', 'f'])
        {
            return true;
        }
        let glob = match t {
            "-g" | "--glob" | "--iglob" => iter.next().map(|v| v.text.clone()),
            _ => t
                .strip_prefix("--glob=")
                .or_else(|| t.strip_prefix("--iglob="))
                .or_else(|| t.strip_prefix("-g").filter(|v| !v.is_empty()))
                .map(str::to_string),
        };
        if glob.is_some_and(|g| !g.starts_with('!')) {
            return true;
        }
    }
    let dot = Word::literal(".");
    let dirs: Vec<&Word> = if dirs.is_empty() {
        vec![&dot]
    } else {
        dirs.to_vec()
    };
    dirs.iter().any(|d| {
        judge.resolve(d).is_none_or(|dir| {
            [".ignore", ".rgignore"]
                .iter()
                .any(|f| judge.facts.exists(&format!("{dir}/{f}")) != Some(false))
        })
    })
}

/// True when `program` with `args` descends into directories and prints
/// what the files hold: `rg` always, `grep -r`/`-R`/`--recursive`/
/// `-d recurse`, `diff -r`.
fn recursive_read(program: &str, args: &[Word]) -> bool {
    let short = |flags: &str| {
        args.iter().any(|w| {
            let t = w.text.as_str();
            t.starts_with('-') && !t.starts_with("--") && t[1..].contains(|c| flags.contains(c))
        })
    };
    let long = |names: &[&str]| {
        args.iter().any(|w| {
            w.text
                .strip_prefix("--")
                .is_some_and(|l| names.iter().any(|n| l.starts_with(n)))
        })
    };
    match program {
        "rg" | "ag" => true,
        "grep" | "egrep" | "fgrep" | "zgrep" => {
            short("rRd") || long(&["recursive", "dereference-recursive", "directories"])
        }
        "diff" => short("r") || long(&["recursive"]),
        _ => false,
    }
}

/// Why `program` with `args` prints the environment of this or other
/// processes (API keys and tokens live there): `jq` programs that read
/// `env` or `$ENV`, `ps` with BSD `e` or an `env` output column.
fn environment_dump(program: &str, args: &[Word]) -> Option<String> {
    match program {
        "jq" => args
            .iter()
            .find_map(|w| crate::script_rules::jq_escape(&w.text))
            .map(str::to_string),
        // yq: `env(NAME)`, `strenv(NAME)` read the environment and
        // `load(…)`/`load_str(…)` read any file.
        "yq" => args
            .iter()
            .find_map(|w| {
                let t = w.text.as_str();
                if t.contains("env(") || t.contains("$ENV") {
                    Some("yq reads the environment (`env()`, `strenv()`), which holds secrets")
                } else if t.contains("load") {
                    Some("yq `load`/`load_str` reads a file the expression names")
                } else {
                    None
                }
            })
            .map(str::to_string),
        "ps" => args
            .iter()
            .any(|w| {
                let t = w.text.as_str();
                let bsd = !t.starts_with('-') && t.chars().all(|c| c.is_ascii_alphabetic());
                (bsd && t.contains('e')) || t.contains("env") || t == "-E"
            })
            .then(|| "ps shows the environments of processes, which hold secrets".to_string()),
        _ => None,
    }
}

/// `uniq IN OUT` and `xxd IN OUT` write their second operand.
fn two_operand_judgement(program: &str, args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let reads = read_judgement(program, args, judge);
    if reads.level > Safe {
        return reads;
    }
    let files = operands(args);
    match files.get(1) {
        Some(out) => judge.writes([*out]),
        None => reads,
    }
}

fn rm_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let parsed = match crate::getopt::parse(&crate::catastrophic::RM, args) {
        Ok(parsed) => parsed,
        Err(why) => return SegmentJudgement::owned(Ask, format!("rm: {why}")),
    };
    if parsed.has("no-preserve-root") {
        return SegmentJudgement::new(
            Ask,
            "rm --no-preserve-root lifts rm's own guard against deleting /",
        );
    }
    let targets: Vec<&Word> = parsed.operands.iter().collect();
    if args.is_empty() {
        return SegmentJudgement::new(Safe, "prints usage: nothing to delete");
    }
    if targets.is_empty() {
        return SegmentJudgement::new(Ask, "rm without operands is not a known form");
    }
    judge.deletes(targets)
}

fn ln_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let parsed = match crate::getopt::parse(&file_copy_spec("ln"), args) {
        Ok(parsed) => parsed,
        Err(why) => return SegmentJudgement::owned(Ask, format!("ln: {why}")),
    };
    let symbolic = parsed.has("s") || parsed.has("symbolic");
    let files: Vec<&Word> = parsed.operands.iter().collect();
    // With `-t DIR` every operand is a source.
    let with_dir = parsed.has("t") || parsed.has("target-directory");
    if !symbolic && (files.len() >= 2 || (with_dir && !files.is_empty())) {
        let sources = if with_dir {
            &files[..]
        } else {
            &files[..files.len() - 1]
        };
        if sources
            .iter()
            .any(|w| !matches!(judge.place(w), PathPlace::Inside | PathPlace::Sink))
        {
            return SegmentJudgement::new(
                Ask,
                "hard-links a file from outside the workspace (writing the link writes the file)",
            );
        }
    }
    copy_judgement("ln", args, judge)
}

/// GNU `cp`, `mv`, `install` and `ln` options (coreutils 9).
pub(crate) fn file_copy_spec(program: &str) -> crate::getopt::OptSpec {
    use crate::getopt::OptSpec;
    match program {
        "cp" => OptSpec {
            flags: "abdfHilLnPpRrsTuvxZ",
            valued: "St",
            optional: "",
            long: &[
                "archive",
                "attributes-only",
                "backup?",
                "copy-contents",
                "debug",
                "dereference",
                "force",
                "interactive",
                "keep-directory-symlink",
                "link",
                "no-clobber",
                "no-dereference",
                "no-preserve=",
                "no-target-directory",
                "one-file-system",
                "parents",
                "preserve?",
                "recursive",
                "reflink?",
                "remove-destination",
                "sparse=",
                "strip-trailing-slashes",
                "suffix=",
                "symbolic-link",
                "target-directory=",
                "update?",
                "verbose",
            ],
            stop_at_operand: false,
        },
        "mv" => OptSpec {
            flags: "bfinTuvZ",
            valued: "St",
            optional: "",
            long: &[
                "backup?",
                "debug",
                "exchange",
                "force",
                "interactive",
                "no-clobber",
                "no-copy",
                "no-target-directory",
                "strip-trailing-slashes",
                "suffix=",
                "target-directory=",
                "update?",
                "verbose",
            ],
            stop_at_operand: false,
        },
        "install" => OptSpec {
            flags: "bcCdDpsTvZ",
            valued: "gmoSt",
            optional: "",
            long: &[
                "backup?",
                "compare",
                "debug",
                "directory",
                "group=",
                "mode=",
                "no-target-directory",
                "owner=",
                "preserve-context",
                "preserve-timestamps",
                "strip",
                "suffix=",
                "target-directory=",
                "verbose",
            ],
            stop_at_operand: false,
        },
        _ => OptSpec {
            flags: "bdFfiLnPrsTv",
            valued: "St",
            optional: "",
            long: &[
                "backup?",
                "directory",
                "force",
                "interactive",
                "logical",
                "no-dereference",
                "no-target-directory",
                "physical",
                "relative",
                "symbolic",
                "suffix=",
                "target-directory=",
                "verbose",
            ],
            stop_at_operand: false,
        },
    }
}

/// `cp`, `mv`, `install`, `ln`: the write target is the `-t` /
/// `--target-directory` value (in any spelling: `-tDIR`, `-at DIR`,
/// `--target=DIR`) or else the last operand; `install -d` creates every
/// operand. `mv` also removes its sources, so a move into a sink
/// (`mv x /dev/null`) is judged as deleting them.
fn copy_judgement(program: &str, args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let parsed = match crate::getopt::parse(&file_copy_spec(program), args) {
        Ok(parsed) => parsed,
        Err(why) => return SegmentJudgement::owned(Ask, format!("{program}: {why}")),
    };
    let target_dirs: Vec<&Word> = parsed.values(&["t", "target-directory"]).collect();
    let (targets, sources): (Vec<&Word>, Vec<&Word>) = if !target_dirs.is_empty() {
        (target_dirs, parsed.operands.iter().collect())
    } else if program == "install" && (parsed.has("d") || parsed.has("directory")) {
        (parsed.operands.iter().collect(), Vec::new())
    } else {
        match parsed.operands.split_last() {
            Some((last, rest)) => (vec![last], rest.iter().collect()),
            None => (Vec::new(), Vec::new()),
        }
    };
    if targets.is_empty() {
        return SegmentJudgement::owned(Ask, format!("{program} without a target"));
    }
    // A copy of a credential file is the credential file: what the
    // sources hold is read (`cp ~/.ssh/id_rsa key.txt`), and a recursive
    // copy of the home directory copies its credential stores.
    let read = judge.reads(sources.iter().copied());
    if read.level > Safe {
        return read;
    }
    if program == "cp"
        && (parsed.has("r")
            || parsed.has("R")
            || parsed.has("a")
            || parsed.has("recursive")
            || parsed.has("archive"))
        && let Some(dir) = judge.credential_holder(&sources)
    {
        return SegmentJudgement::owned(
            Ask,
            format!("copies `{dir}` recursively, and it holds credential stores"),
        );
    }
    if program == "cp"
        && (parsed.has("l") || parsed.has("link"))
        && sources
            .iter()
            .any(|w| !matches!(judge.place(w), PathPlace::Inside | PathPlace::Sink))
    {
        return SegmentJudgement::new(
            Ask,
            "cp -l hard-links a file from outside the workspace (writing the link writes the \
             file); copy it without -l, or approve it",
        );
    }
    let mut judgement = judge.overwrites(targets.iter().copied());
    if program == "mv" {
        // Moving into a sink or the private `/tmp` loses the sources.
        let into_sink = targets
            .iter()
            .all(|t| matches!(judge.place(t), PathPlace::Sink | PathPlace::PrivateTmp));
        judgement = if into_sink {
            judge.deletes(sources.iter().copied())
        } else {
            judgement.max(judge.writes(sources.iter().copied()))
        };
    }
    judgement
}

fn sed_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let mut in_place = false;
    let mut scripts: Vec<&str> = Vec::new();
    let mut files: Vec<&Word> = Vec::new();
    let has_e = args.iter().any(|w| {
        w.text == "-e"
            || w.text.starts_with("--expression")
            || (w.text.starts_with("-e") && !w.text.starts_with("--"))
    });
    let mut iter = args.iter();
    let mut only_files = false;
    while let Some(w) = iter.next() {
        let text = w.text.as_str();
        if only_files || !text.starts_with('-') || text == "-" {
            if !has_e && scripts.is_empty() {
                scripts.push(text);
            } else {
                files.push(w);
            }
            continue;
        }
        if text == "--" {
            only_files = true;
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = long.split_once('=').unwrap_or((long, ""));
            match name {
                "expression" => {
                    if long.contains('=') {
                        scripts.push(value);
                    } else if let Some(s) = iter.next() {
                        scripts.push(&s.text);
                    }
                }
                "in-place" => in_place = true,
                "quiet" | "silent" | "regexp-extended" | "separate" | "unbuffered"
                | "null-data" | "zero-terminated" | "posix" | "debug" | "sandbox" => {}
                "line-length" => {
                    if !long.contains('=') {
                        iter.next();
                    }
                }
                _ => {
                    return SegmentJudgement::owned(
                        Ask,
                        format!("unknown option `--{name}` for sed"),
                    );
                }
            }
            continue;
        }
        for (offset, flag) in text[1..].char_indices() {
            let rest = &text[1 + offset + flag.len_utf8()..];
            match flag {
                'n' | 'E' | 'r' | 's' | 'u' | 'z' => {}
                'i' => {
                    in_place = true;
                    break;
                }
                'e' => {
                    if rest.is_empty() {
                        if let Some(s) = iter.next() {
                            scripts.push(&s.text);
                        }
                    } else {
                        scripts.push(rest);
                    }
                    break;
                }
                'l' => {
                    if rest.is_empty() {
                        iter.next();
                    }
                    break;
                }
                'f' => {
                    return SegmentJudgement::new(
                        Ask,
                        "sed -f runs a script file that is not analysed",
                    );
                }
                other => {
                    return SegmentJudgement::owned(
                        Ask,
                        format!("unknown option `-{other}` for sed"),
                    );
                }
            }
        }
    }
    if let Some(escape) = scripts
        .iter()
        .find_map(|s| crate::script_rules::sed_escape(s))
    {
        return SegmentJudgement::new(Ask, escape.reason);
    }
    let reads = judge.reads(files.iter().copied());
    if reads.level > Safe {
        return reads;
    }
    if in_place {
        return judge.overwrites(files);
    }
    SegmentJudgement::new(Safe, "only reads or prints")
}

/// awk options that take a value in the next word (or attached).
const AWK_VALUED: &[&str] = &["-v", "-F", "--assign", "--field-separator"];

/// The program text of `awk ARGS` and the files it reads (operands that
/// are not `NAME=value` assignments), or why the options ask.
fn awk_parts(args: &[Word]) -> Result<(&str, Vec<&Word>), String> {
    let mut program: Option<&str> = None;
    let mut files = Vec::new();
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        let text = word.text.as_str();
        if program.is_some() {
            if !text.contains('=') || text.starts_with(['/', '.']) {
                files.push(word);
            }
            continue;
        }
        if text == "--" {
            program = iter.next().map(|w| w.text.as_str());
            continue;
        }
        if !text.starts_with('-') || text == "-" {
            program = Some(text);
            continue;
        }
        if AWK_VALUED.contains(&text) {
            iter.next();
            continue;
        }
        if (text.starts_with("-v") || text.starts_with("-F"))
            || text.starts_with("--assign=")
            || text.starts_with("--field-separator=")
        {
            continue;
        }
        if matches!(text, "-e" | "--source") {
            program = iter.next().map(|w| w.text.as_str());
            continue;
        }
        return Err(format!(
            "awk option `{text}` loads or runs code that is not analysed; approve it if it is \
             harmless"
        ));
    }
    Ok((program.unwrap_or(""), files))
}

fn awk_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let (program, files) = match awk_parts(args) {
        Ok(parts) => parts,
        Err(why) => return SegmentJudgement::owned(Ask, why),
    };
    if let Some(escape) = crate::script_rules::awk_escape(program) {
        return SegmentJudgement::new(Ask, escape.reason);
    }
    judge
        .reads(files)
        .max(SegmentJudgement::new(Safe, "only reads or prints"))
}

/// Why `program ARGS` fed from a pipe runs what it reads as a command:
/// a sed script with a bare `e` or `s///e`, an awk program that hands its
/// input to `system()` or prints it into a shell.
pub(crate) fn runs_its_input(program: &str, args: &[Word]) -> Option<&'static str> {
    let escape = match program {
        "sed" => sed_scripts(args)
            .into_iter()
            .find_map(crate::script_rules::sed_escape),
        "awk" | "gawk" | "mawk" | "nawk" => {
            crate::script_rules::awk_escape(awk_parts(args).ok()?.0)
        }
        _ => None,
    }?;
    escape.runs_input.then_some(escape.reason)
}

/// The scripts of `sed ARGS` (`-e`, `--expression`, or the first operand).
fn sed_scripts(args: &[Word]) -> Vec<&str> {
    let mut scripts = Vec::new();
    let mut iter = args.iter();
    let mut first_operand = None;
    while let Some(w) = iter.next() {
        let text = w.text.as_str();
        if let Some(value) = text.strip_prefix("--expression=") {
            scripts.push(value);
        } else if text == "-e" || text == "--expression" {
            scripts.extend(iter.next().map(|w| w.text.as_str()));
        } else if text.starts_with('-') && !text.starts_with("--") && text.contains('e') {
            let rest = &text[text.find('e').map_or(text.len(), |i| i + 1)..];
            if rest.is_empty() {
                scripts.extend(iter.next().map(|w| w.text.as_str()));
            } else {
                scripts.push(rest);
            }
        } else if !text.starts_with('-') && first_operand.is_none() {
            first_operand = Some(text);
        }
    }
    if scripts.is_empty() {
        scripts.extend(first_operand);
    }
    scripts
}

fn sort_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    if args
        .iter()
        .any(|w| w.text.starts_with("--compress-program"))
    {
        return SegmentJudgement::new(Ask, "sort --compress-program runs a program");
    }
    // Every `-o` is judged (the last one given wins).
    let words = texts(args);
    let mut targets: Vec<Word> = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if *w == "-o" || *w == "--output" {
            targets.extend(args.get(i + 1).cloned());
        } else if let Some(t) = w
            .strip_prefix("--output=")
            .or_else(|| w.strip_prefix("-o").filter(|_| !w.starts_with("--")))
        {
            targets.push(Word::literal(t));
        }
    }
    if !targets.is_empty() {
        return judge.writes(&targets);
    }
    read_judgement("sort", args, judge)
}

/// Archivers put what they are given into the archive: a credential
/// file, or a directory holding credential stores (`tar czf h.tgz ~`,
/// `zip -r h.zip /root`), asks.
pub(crate) fn archived_secrets(args: &[Word], judge: PathJudge<'_>) -> Option<SegmentJudgement> {
    let words: Vec<&Word> = args.iter().filter(|w| !w.text.starts_with('-')).collect();
    let read =
        judge.reads(words.iter().copied().filter(|w| {
            is_credential(&w.text) || judge.resolve(w).is_some_and(|r| is_credential(&r))
        }));
    if read.level > Safe {
        return Some(read);
    }
    if words.is_empty() {
        return None;
    }
    judge.credential_holder(&words).map(|dir| {
        SegmentJudgement::owned(
            Ask,
            format!("archives `{dir}`, which holds credential stores"),
        )
    })
}

/// Why extracting an archive or applying a patch asks: what it writes
/// is named inside the file, which is not read here.
pub(crate) const WRITES_WHAT_IT_NAMES: &str = "writes whatever paths the archive or patch names (they may \
     land under `.git/`, whose hooks run later, or through links outside the workspace)";

/// `unzip`: listing, testing and printing to stdout only read; extracting
/// asks ([`WRITES_WHAT_IT_NAMES`]), and an extraction directory outside
/// the workspace is named as such.
fn unzip_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let reads = judge.reads(args.iter());
    if reads.level > Safe {
        return reads;
    }
    let mut iter = args.iter();
    let mut lists = false;
    while let Some(word) = iter.next() {
        let text = word.text.as_str();
        match text {
            "-l" | "-t" | "-v" | "-p" | "-Z" | "-z" | "-lv" | "-tq" | "-qt" | "-ql" | "-lq" => {
                lists = true;
            }
            "-d" => {
                if let Some(dir) = iter.next() {
                    let written = judge.writes([dir]);
                    if written.level > WorkspaceSafe {
                        return written;
                    }
                }
            }
            _ => {}
        }
    }
    if lists {
        return SegmentJudgement::new(Safe, "lists or tests an archive");
    }
    SegmentJudgement::new(Ask, WRITES_WHAT_IT_NAMES)
}

/// `patch`: `--dry-run` only reads; otherwise it asks
/// ([`WRITES_WHAT_IT_NAMES`]), and a file or directory outside the
/// workspace given on the command line is named as such.
fn patch_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let reads = judge.reads(args.iter());
    if reads.level > Safe {
        return reads;
    }
    let written = judge.writes(operands(args));
    if written.level > WorkspaceSafe {
        return written;
    }
    if args
        .iter()
        .any(|w| w.text == "--dry-run" || w.text == "-C" || w.text == "--check")
    {
        return SegmentJudgement::new(Safe, "checks a patch without writing");
    }
    SegmentJudgement::new(Ask, WRITES_WHAT_IT_NAMES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted() {
        assert!(READ_ONLY.windows(2).all(|w| w[0] < w[1]));
        assert!(PATH_WRITERS.windows(2).all(|w| w[0] < w[1]));
        assert!(PROJECT_TOOLS.windows(2).all(|w| w[0] < w[1]));
        assert!(SYSTEM_CHANGERS.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
