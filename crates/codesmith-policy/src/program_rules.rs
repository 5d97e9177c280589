//! Per-program safety tables: what one known program does with its
//! arguments. Programs that run other code (shells, interpreters, `find
//! -exec`) are handled in `classify`, which can recurse; everything here is a
//! table lookup plus path judgement.
//!
//! The defaults follow seed 002's restraint: reading is `Safe`, building,
//! testing and editing inside the workspace is `WorkspaceSafe`, and anything
//! that reaches outside the workspace, discards work, changes the system or
//! is unknown needs approval.

use std::borrow::Cow;

use crate::SafetyLevel::{self, RequiresApproval, Safe, WorkspaceSafe};
use crate::shell_parse::Word;
use crate::ws_path::{PathPlace, place};

/// A level with the reason shown to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub level: SafetyLevel,
    pub reason: Cow<'static, str>,
}

impl Verdict {
    pub(crate) fn new(level: SafetyLevel, reason: &'static str) -> Self {
        Verdict {
            level,
            reason: Cow::Borrowed(reason),
        }
    }
}

/// Where paths are judged from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathJudge<'a> {
    pub workspace: &'a str,
    pub cwd: Option<&'a str>,
}

impl PathJudge<'_> {
    pub(crate) fn place(&self, word: &Word) -> PathPlace {
        place(&word.text, word.dynamic, self.cwd, self.workspace)
    }

    /// `WorkspaceSafe` when every path stays inside the workspace (or is a
    /// sink), otherwise `RequiresApproval` with a reason naming the problem.
    pub(crate) fn writes<'w>(&self, paths: impl IntoIterator<Item = &'w Word>) -> Verdict {
        let mut worst = PathPlace::Sink;
        let mut run_time = false;
        for path in paths {
            run_time |= path.dynamic || path.text.starts_with('$');
            match self.place(path) {
                PathPlace::System => worst = PathPlace::System,
                PathPlace::Outside if worst != PathPlace::System => worst = PathPlace::Outside,
                PathPlace::Inside if worst == PathPlace::Sink => worst = PathPlace::Inside,
                _ => {}
            }
        }
        match worst {
            PathPlace::System => {
                Verdict::new(RequiresApproval, "writes to a system or credential file")
            }
            PathPlace::Outside if run_time => {
                Verdict::new(RequiresApproval, "writes to a path only known at run time")
            }
            PathPlace::Outside => Verdict::new(RequiresApproval, "writes outside the workspace"),
            PathPlace::Inside => Verdict::new(WorkspaceSafe, "writes only inside the workspace"),
            PathPlace::Sink => Verdict::new(Safe, "writes nothing that is kept"),
        }
    }
}

/// Programs that only read or print.
const READ_ONLY: &[&str] = &[
    ":",
    "[",
    "[[",
    "ag",
    "alias",
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
    "cd",
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
    "export",
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
    "hash",
    "head",
    "help",
    "hexdump",
    "history",
    "hostname",
    "id",
    "info",
    "jq",
    "less",
    "let",
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
    "popd",
    "printenv",
    "printf",
    "ps",
    "pushd",
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

/// Programs that write the paths they are given.
const PATH_WRITERS: &[&str] = &[
    "bunzip2", "bzip2", "chmod", "cp", "dos2unix", "gunzip", "gzip", "install", "ln", "mkdir",
    "mv", "patch", "rmdir", "shred", "tee", "touch", "truncate", "unix2dos", "unlink", "unxz",
    "xz", "zstd",
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
    "just",
    "make",
    "meson",
    "mocha",
    "mypy",
    "ninja",
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

fn is_info_only(args: &[Word]) -> bool {
    !args.is_empty()
        && args.iter().all(|w| {
            matches!(
                w.text.as_str(),
                "--version" | "-V" | "--help" | "-h" | "version" | "help"
            )
        })
}

/// Judges a known program; `None` when the program is not in any table.
pub(crate) fn program_verdict(
    program: &str,
    args: &[Word],
    judge: PathJudge<'_>,
) -> Option<Verdict> {
    if let Ok(i) = SYSTEM_CHANGERS.binary_search_by(|(p, _)| p.cmp(&program)) {
        if program == "systemctl"
            && args
                .iter()
                .any(|a| matches!(a.text.as_str(), "status" | "list-units" | "is-active"))
        {
            return Some(Verdict::new(Safe, "reads service status"));
        }
        return Some(Verdict::new(RequiresApproval, SYSTEM_CHANGERS[i].1));
    }
    if is_info_only(args) && crate::arity::arity_of(program).is_some() {
        return Some(Verdict::new(Safe, "prints version or help"));
    }
    let verdict = match program {
        "git" => crate::git_rules::git_verdict(args, judge),
        "rm" => rm_verdict(args, judge),
        "sed" => sed_verdict(args, judge),
        "awk" | "gawk" | "mawk" | "nawk" => awk_verdict(args),
        "sort" => sort_verdict(args, judge),
        "tar" => tar_verdict(args, judge),
        "unzip" => unzip_verdict(args, judge),
        "zip" => judge.writes(operands(args).into_iter().take(1)),
        "cp" | "install" | "ln" => copy_verdict(args, judge),
        "chmod" => judge.writes(operands(args).into_iter().skip(1)),
        p if PATH_WRITERS.binary_search(&p).is_ok() => judge.writes(operands(args)),
        p if READ_ONLY.binary_search(&p).is_ok() => read_verdict(args, judge),
        "make"
            if operands(args)
                .iter()
                .any(|w| w.text == "install" || w.text == "uninstall") =>
        {
            Verdict::new(RequiresApproval, "installs outside the workspace")
        }
        p if PROJECT_TOOLS.binary_search(&p).is_ok() => {
            Verdict::new(WorkspaceSafe, "builds, tests or formats the project")
        }
        "cargo" => crate::tool_rules::cargo_verdict(args),
        "npm" | "pnpm" | "yarn" | "bun" => crate::tool_rules::node_pm_verdict(args),
        "pip" | "pip3" => crate::tool_rules::pip_verdict(args),
        "uv" | "poetry" | "pipx" | "conda" => crate::tool_rules::python_pm_verdict(program, args),
        "go" => crate::tool_rules::go_verdict(args),
        "docker" | "podman" => crate::tool_rules::container_verdict(args),
        "rustup" => crate::tool_rules::rustup_verdict(args),
        _ => return None,
    };
    Some(verdict)
}

fn read_verdict(args: &[Word], judge: PathJudge<'_>) -> Verdict {
    if args
        .iter()
        .any(|w| judge.place(w) == PathPlace::System && crate::ws_path::is_credential(&w.text))
    {
        return Verdict::new(RequiresApproval, "reads a credential file");
    }
    Verdict::new(Safe, "only reads or prints")
}

fn rm_verdict(args: &[Word], judge: PathJudge<'_>) -> Verdict {
    let recursive = args.iter().take_while(|w| w.text != "--").any(|w| {
        w.text == "--recursive"
            || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains(['r', 'R']))
    });
    if recursive {
        return Verdict::new(RequiresApproval, "deletes recursively");
    }
    let targets = operands(args);
    if targets.is_empty() {
        return Verdict::new(WorkspaceSafe, "deletes nothing");
    }
    let verdict = judge.writes(targets);
    match verdict.level {
        Safe | WorkspaceSafe => Verdict::new(WorkspaceSafe, "deletes files inside the workspace"),
        _ if verdict.reason.contains("run time") => {
            Verdict::new(RequiresApproval, "deletes paths only known at run time")
        }
        _ => Verdict::new(RequiresApproval, "deletes files outside the workspace"),
    }
}

fn copy_verdict(args: &[Word], judge: PathJudge<'_>) -> Verdict {
    let words = texts(args);
    if let Some(i) = words
        .iter()
        .position(|w| *w == "-t" || *w == "--target-directory")
    {
        return judge.writes(args.get(i + 1));
    }
    if let Some(target) = args
        .iter()
        .find_map(|w| w.text.strip_prefix("--target-directory="))
    {
        return judge.writes([&Word::literal(target)]);
    }
    judge.writes(operands(args).last().copied())
}

fn sed_verdict(args: &[Word], judge: PathJudge<'_>) -> Verdict {
    let in_place = args.iter().any(|w| {
        w.text.starts_with("--in-place")
            || (w.text.starts_with("-i") && !w.text.starts_with("--"))
            || (w.text.starts_with('-')
                && !w.text.starts_with("--")
                && w.text.contains('i')
                && w.text.len() <= 4)
    });
    let mut scripts: Vec<&str> = Vec::new();
    let mut files: Vec<&Word> = Vec::new();
    let mut iter = args.iter().peekable();
    let has_e = args
        .iter()
        .any(|w| w.text == "-e" || w.text == "--expression" || w.text == "-f");
    while let Some(w) = iter.next() {
        if w.text == "-e" || w.text == "--expression" || w.text == "-f" {
            if let Some(s) = iter.next() {
                scripts.push(&s.text);
            }
        } else if w.text.starts_with('-') && w.text.len() > 1 {
            continue;
        } else if !has_e && scripts.is_empty() {
            scripts.push(&w.text);
        } else {
            files.push(w);
        }
    }
    if scripts.iter().any(|s| sed_script_escapes(s)) {
        return Verdict::new(
            RequiresApproval,
            "sed script may run commands or write files",
        );
    }
    if in_place {
        return judge.writes(files);
    }
    Verdict::new(Safe, "only reads or prints")
}

/// GNU sed's `e` command and `e` flag run commands; `w`/`W` write files.
fn sed_script_escapes(script: &str) -> bool {
    let trimmed = script.trim_start();
    trimmed.starts_with('e')
        || trimmed.starts_with("w ")
        || script.contains("/e")
        || script.contains("/w ")
        || script.contains(";e")
        || script.contains("; e")
}

fn awk_verdict(args: &[Word]) -> Verdict {
    let program = operands(args)
        .first()
        .map(|w| w.text.as_str())
        .unwrap_or("");
    let prints_to_file = program
        .find("print")
        .is_some_and(|i| program[i..].contains('>'));
    if program.contains("system")
        || program.contains('|')
        || program.contains("getline")
        || prints_to_file
    {
        return Verdict::new(
            RequiresApproval,
            "awk program may run commands or write files",
        );
    }
    if args
        .iter()
        .any(|w| w.text == "-f" || w.text.starts_with("--file"))
    {
        return Verdict::new(RequiresApproval, "runs an awk program file");
    }
    Verdict::new(Safe, "only reads or prints")
}

fn sort_verdict(args: &[Word], judge: PathJudge<'_>) -> Verdict {
    let words = texts(args);
    if let Some(i) = words.iter().position(|w| *w == "-o" || *w == "--output") {
        return judge.writes(args.get(i + 1));
    }
    if let Some(target) = words.iter().find_map(|w| w.strip_prefix("--output=")) {
        return judge.writes([&Word::literal(target)]);
    }
    Verdict::new(Safe, "only reads or prints")
}

fn tar_verdict(args: &[Word], judge: PathJudge<'_>) -> Verdict {
    let first = args
        .first()
        .map(|w| w.text.trim_start_matches('-'))
        .unwrap_or("");
    let listing = first.contains('t') || args.iter().any(|w| w.text == "--list");
    if listing && !first.contains(['x', 'c']) {
        return Verdict::new(Safe, "lists an archive");
    }
    let mut targets: Vec<&Word> = Vec::new();
    let words = texts(args);
    for (i, w) in words.iter().enumerate() {
        if (*w == "-C" || *w == "--directory") && i + 1 < args.len() {
            targets.push(&args[i + 1]);
        }
    }
    if first.contains('c') {
        // Creating: the archive file is written.
        if let Some(i) = words.iter().position(|w| {
            w.starts_with('-') && w.ends_with('f') || *w == first && first.ends_with('f')
        }) {
            targets.extend(args.get(i + 1));
        }
    }
    if args
        .iter()
        .any(|w| w.text == "-P" || w.text == "--absolute-names")
    {
        return Verdict::new(RequiresApproval, "extracts absolute paths");
    }
    judge.writes(targets)
}

fn unzip_verdict(args: &[Word], judge: PathJudge<'_>) -> Verdict {
    let words = texts(args);
    if words.contains(&"-l") {
        return Verdict::new(Safe, "lists an archive");
    }
    match words.iter().position(|w| *w == "-d") {
        Some(i) => judge.writes(args.get(i + 1)),
        None => Verdict::new(WorkspaceSafe, "extracts into the current directory"),
    }
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
