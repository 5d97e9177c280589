//! Git sub-commands: which read, which change the work tree or history, and
//! which discard work or reach the network.
//!
//! History-destroying shapes (`reset --hard`, `clean -f`, `checkout -- .`,
//! `restore` of the work tree, `branch -D`, `stash drop|clear`,
//! `push --force`) need approval; they are not on the catastrophic list
//! (kept to five literals, so that it stays short and exact).

use crate::SafetyLevel::{Ask, Safe, WorkspaceSafe};
use crate::net_commands::NETWORK_REASON;
use crate::program_rules::{PathJudge, SegmentJudgement};
use crate::shell_parse::Word;

const READ_ONLY: &[&str] = &[
    "annotate",
    "blame",
    "cat-file",
    "check-attr",
    "check-ignore",
    "cherry",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "for-each-ref",
    "fsck",
    "grep",
    "help",
    "log",
    "ls-files",
    "ls-tree",
    "merge-base",
    "name-rev",
    "range-diff",
    "rev-list",
    "rev-parse",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "status",
    "var",
    "verify-commit",
    "verify-tag",
    "version",
    "whatchanged",
];

const LOCAL_WRITES: &[&str] = &[
    "add",
    "am",
    "apply",
    "bisect",
    "cherry-pick",
    "commit",
    "format-patch",
    "merge",
    "mv",
    "notes",
    "pack-refs",
    "rebase",
    "revert",
    "rm",
    "sparse-checkout",
    "switch",
];

/// Global options of `git` known not to change what runs or where it
/// writes; any other global option asks.
const SAFE_GLOBAL_OPTIONS: &[&str] = &[
    "--literal-pathspecs",
    "--no-optional-locks",
    "--no-pager",
    "--no-replace-objects",
    "-P",
];

const NETWORK: &[&str] = &[
    "archive",
    "clone",
    "fetch",
    "ls-remote",
    "pull",
    "push",
    "request-pull",
    "send-email",
    "submodule",
];

/// Global options of `git` that take a value in the next word.
const VALUE_OPTIONS: &[&str] = &["-C", "-c", "--git-dir", "--work-tree", "--namespace"];

/// Long options of git sub-commands whose meaning decides the judgement,
/// the more dangerous reading of a shared prefix first; an abbreviation
/// of one of them is judged as it.
const GIT_LONG: &[&str] = &[
    "exec",
    "ext-diff",
    "output",
    "output-directory",
    "open-files-in-pager",
    "upload-pack",
    "receive-pack",
    "unset",
    "unset-all",
    "unsafe-paths",
    "directory",
    "force",
    "force-with-lease",
    "force-if-includes",
    "force-create",
    "mirror",
    "delete",
    "discard-changes",
    "hard",
    "merge",
    "keep",
    "patch",
    "ours",
    "theirs",
    "worktree",
    "global",
    "system",
    "file",
    "blob",
    "replace-all",
    "add",
    "append",
    "rename-section",
    "remove-section",
    "edit",
    "prune",
    "staged",
    "dry-run",
];

/// Real options that are prefixes of a name in [`GIT_LONG`].
const GIT_EXACT: &[&str] = &["all", "get", "list", "stat", "numstat", "summary", "check"];

/// Options of `git config` that only read (or shape what is printed).
const CONFIG_READ_OPTIONS: &[&str] = &[
    "--get",
    "--get-all",
    "--get-regexp",
    "--get-urlmatch",
    "--list",
    "-l",
    "--local",
    "--show-origin",
    "--show-scope",
    "--name-only",
    "--null",
    "-z",
    "--bool",
    "--int",
    "--bool-or-int",
    "--path",
    "--expiry-date",
    "--includes",
    "--no-includes",
    "--fixed-value",
];

/// `git config`: reading one key or listing is `Safe`; anything else —
/// setting, `--unset`, `--add`, `--replace-all`, `--edit`, another file
/// (`-f`, `--global`, `--system`, `--blob`), an option not listed — asks,
/// because configuration names commands git runs later outside any
/// sandbox (`core.fsmonitor`, `core.hooksPath`, `core.pager`, `!` aliases).
fn config_judgement(rest: &[&str]) -> SegmentJudgement {
    let mut names = 0;
    let mut reads = false;
    let mut scoped = None;
    let mut lists = false;
    let mut iter = rest.iter().enumerate();
    while let Some((position, word)) = iter.next() {
        if position == 0 && matches!(*word, "get" | "list") {
            reads = true;
            continue;
        }
        if !word.starts_with('-') {
            names += 1;
            continue;
        }
        let option = word.split('=').next().unwrap_or(word);
        if matches!(option, "--type" | "--default") {
            if !word.contains('=') {
                iter.next();
            }
            continue;
        }
        // Another scope only to read one named key (`--global --get
        // user.name`); listing it could print tokens kept there.
        if option == "--global" {
            scoped = Some(*word);
            continue;
        }
        lists |= matches!(option, "--list" | "-l" | "--get-regexp" | "--get-urlmatch");
        if !CONFIG_READ_OPTIONS.contains(&option) {
            return SegmentJudgement::owned(
                Ask,
                format!(
                    "git config `{word}` writes configuration or reads another file (git runs \
                     commands named there later, outside any sandbox)"
                ),
            );
        }
        reads |= option.starts_with("--get") || option == "--list" || option == "-l";
    }
    if let Some(scope) = scoped
        && !(reads && names == 1 && !lists)
    {
        return SegmentJudgement::owned(
            Ask,
            format!(
                "git config `{scope}` writes or lists configuration outside the repository (git \
                 runs commands named there later, outside any sandbox); read one key with \
                 `--get KEY`, or approve it"
            ),
        );
    }
    if reads || names <= 1 {
        SegmentJudgement::new(Safe, "reads git configuration")
    } else {
        // Config can name commands git runs later, outside any sandbox
        // (core.fsmonitor, core.hooksPath, core.pager, `!` aliases).
        SegmentJudgement::new(
            Ask,
            "changes git configuration, which can make git run commands later",
        )
    }
}

/// `git diff --no-index A B` and `git grep --no-index PATTERN [DIR…]`:
/// the paths are read as `diff -r` and `grep -r` read them (credential
/// files and directories holding them ask).
fn no_index_judgement(sub: &str, args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let mut operands: Vec<&Word> = args.iter().filter(|w| !w.text.starts_with('-')).collect();
    let pattern_given = args
        .iter()
        .any(|w| w.text == "-e" || w.text == "-f" || w.text.starts_with("--file"));
    if sub == "grep" && !pattern_given && !operands.is_empty() {
        operands.remove(0);
    }
    let read = judge.reads(operands.iter().copied());
    if read.level > Safe {
        return read;
    }
    if let Some(dir) = judge.credential_holder(&operands) {
        return SegmentJudgement::owned(
            Ask,
            format!(
                "git {sub} --no-index reads `{dir}` recursively, and it holds credential stores"
            ),
        );
    }
    SegmentJudgement::new(Safe, "reads files outside the repository's objects")
}

/// Judges `git ARGS`. A judgement that changes the repository is only
/// `WorkspaceSafe` when git runs inside the workspace (the repository it
/// finds from elsewhere is not the workspace's).
pub(crate) fn git_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    let judgement = git_judgement_here(args, judge);
    let inside = judge
        .cwd
        .is_some_and(|cwd| crate::ws_path::within(cwd, judge.workspace));
    if judgement.level == WorkspaceSafe && !inside {
        return SegmentJudgement::new(
            Ask,
            "git changes a repository outside the workspace (the working directory is elsewhere or not known)",
        );
    }
    judgement
}

fn git_judgement_here(args: &[Word], _judge: PathJudge<'_>) -> SegmentJudgement {
    // `-c core.pager=…`, `-c alias.x=!…` and friends can run any command.
    if args
        .iter()
        .take_while(|w| w.text.starts_with('-') || w.text.contains('='))
        .any(|w| {
            w.text == "-c"
                || w.text.starts_with("--config-env")
                || w.text.starts_with("--exec-path")
        })
    {
        return SegmentJudgement::new(Ask, "sets git configuration that can run commands");
    }
    let mut index = 0;
    while index < args.len() {
        let word = args[index].text.as_str();
        if !word.starts_with('-') {
            break;
        }
        if matches!(word, "--version" | "--help" | "-h" | "-v") {
            return SegmentJudgement::new(Safe, "prints git version or help");
        }
        if !SAFE_GLOBAL_OPTIONS.contains(&word) {
            let name = word.split('=').next().unwrap_or(word);
            let why = match name {
                "-C" => "git -C runs in another directory, so its paths are not judged",
                "--git-dir" | "--work-tree" => "points git at another repository or work tree",
                _ => "a git global option that is not analysed",
            };
            return SegmentJudgement::owned(Ask, format!("`{word}`: {why}"));
        }
        index += if VALUE_OPTIONS.contains(&word) { 2 } else { 1 };
    }
    let Some(sub) = args.get(index).map(|w| w.text.as_str()) else {
        return SegmentJudgement::new(Safe, "prints git usage");
    };
    // git accepts any unique prefix of a long option (`--exe=cmd` is
    // `--exec=cmd`), so abbreviations are judged as what they abbreviate.
    let expanded: Vec<std::borrow::Cow<'_, str>> = args[index + 1..]
        .iter()
        .map(|w| crate::getopt::expand_long(&w.text, GIT_LONG, GIT_EXACT))
        .collect();
    let rest: Vec<&str> = expanded.iter().map(|w| w.as_ref()).collect();
    // Short flags cluster (`-fu` is `-f -u`, `-ix cmd` is `-i -x cmd`), so a
    // one-letter flag also counts inside a cluster of letters.
    let has = |flags: &[&str]| {
        rest.iter().any(|w| {
            flags.contains(w)
                || (w.starts_with('-')
                    && !w.starts_with("--")
                    && w.len() > 2
                    && w[1..].chars().all(|c| c.is_ascii_alphabetic())
                    && flags
                        .iter()
                        .any(|f| f.len() == 2 && f.starts_with('-') && w[1..].contains(&f[1..])))
        })
    };
    let short_has = |c: char| {
        rest.iter()
            .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains(c))
    };
    if rest.iter().any(|w| {
        *w == "--output"
            || w.starts_with("--output=")
            || w.starts_with("--output-directory")
            || w.starts_with("--open-files-in-pager")
            || w.starts_with("-O")
            || w.starts_with("--ext-diff")
            || w.starts_with("--upload-pack")
            || w.starts_with("--exec")
    }) {
        return SegmentJudgement::new(Ask, "option writes a file or runs a command");
    }
    match sub {
        "difftool" | "mergetool" => {
            SegmentJudgement::new(Ask, "runs a configured diff or merge program")
        }
        "rebase" if has(&["-x"]) || rest.iter().any(|w| w.starts_with("--exec")) => {
            SegmentJudgement::new(Ask, "git rebase --exec runs a command")
        }
        "bisect" if rest.first() == Some(&"run") => {
            SegmentJudgement::new(Ask, "git bisect run runs a command")
        }
        "bisect" => SegmentJudgement::new(WorkspaceSafe, "changes the local repository"),
        "worktree" if matches!(rest.first(), Some(&"list")) => {
            SegmentJudgement::new(Safe, "lists work trees")
        }
        "worktree" => SegmentJudgement::new(Ask, "creates or removes a work tree elsewhere"),
        "init" => SegmentJudgement::new(Ask, "creates a repository (templates and hooks)"),
        "maintenance" => SegmentJudgement::new(Ask, "git maintenance schedules background jobs"),
        "apply"
            if rest
                .iter()
                .any(|w| w.starts_with("--unsafe-paths") || w.starts_with("--directory")) =>
        {
            SegmentJudgement::new(Ask, "git apply --unsafe-paths writes outside the work tree")
        }
        "apply"
            if rest.iter().all(|w| {
                !w.starts_with('-')
                    || matches!(
                        *w,
                        "--check" | "--stat" | "--numstat" | "--summary" | "-v" | "--verbose"
                    )
            }) && rest
                .iter()
                .any(|w| matches!(*w, "--check" | "--stat" | "--numstat" | "--summary")) =>
        {
            SegmentJudgement::new(Safe, "checks or summarises a patch without applying it")
        }
        "apply" | "am" => SegmentJudgement::new(
            Ask,
            "applies a patch, which writes whatever paths it names (their safety is not analysed)",
        ),
        "format-patch"
            if rest.iter().any(|w| {
                *w == "-o"
                    || w.starts_with("--output-directory")
                    || (w.starts_with("-o") && w.len() > 2)
            }) =>
        {
            let target = rest
                .iter()
                .position(|w| *w == "-o" || *w == "--output-directory")
                .and_then(|i| args.get(index + 2 + i))
                .cloned()
                .or_else(|| {
                    rest.iter().find_map(|w| {
                        w.strip_prefix("--output-directory=")
                            .or_else(|| w.strip_prefix("-o"))
                            .map(Word::literal)
                    })
                });
            match target {
                Some(t) => _judge.writes([&t]),
                None => SegmentJudgement::new(Ask, "writes patches to a place not analysed"),
            }
        }
        "submodule" if matches!(rest.first(), Some(&("status" | "summary"))) => {
            SegmentJudgement::new(Safe, "reads submodule state")
        }
        "submodule" if rest.first() == Some(&"foreach") => {
            SegmentJudgement::new(Ask, "git submodule foreach runs a command")
        }
        // Outside a repository's objects, `--no-index` reads the files
        // and directories named (`git grep --no-index KEY ~`).
        "diff" | "grep" if rest.iter().any(|w| w.starts_with("--no-i")) => {
            no_index_judgement(sub, &args[index + 1..], _judge)
        }
        "help" if has(&["-w", "--web"]) => SegmentJudgement::new(
            Ask,
            "git help --web starts a browser (`$BROWSER` or `web.browser` names any program)",
        ),
        "blame" | "annotate" if rest.iter().any(|w| w.starts_with("--contents")) => {
            let file = rest
                .iter()
                .position(|w| *w == "--contents")
                .and_then(|i| args.get(index + 2 + i))
                .cloned()
                .or_else(|| {
                    rest.iter()
                        .find_map(|w| w.strip_prefix("--contents=").map(Word::literal))
                });
            match file {
                Some(file) => _judge
                    .reads([&file])
                    .max(SegmentJudgement::new(Safe, "reads repository state")),
                None => SegmentJudgement::new(Ask, "git blame --contents without a file"),
            }
        }
        "fsck"
            if args[index + 1..].iter().any(|w| {
                w.text.starts_with('-')
                    && !matches!(
                        w.text.as_str(),
                        "--cache"
                            | "--connectivity-only"
                            | "--dangling"
                            | "--full"
                            | "--name-objects"
                            | "--no-dangling"
                            | "--no-full"
                            | "--no-progress"
                            | "--no-reflogs"
                            | "--progress"
                            | "--root"
                            | "--strict"
                            | "--tags"
                            | "--unreachable"
                            | "--verbose"
                            | "-v"
                    )
            }) =>
        {
            SegmentJudgement::new(
                Ask,
                "git fsck with an option the read-only table does not know (`--lost-found` \
                 writes into .git/lost-found)",
            )
        }
        s if READ_ONLY.contains(&s) => {
            // Paths named outright are read as files (`git show /etc/x`).
            let named: Vec<&Word> = args[index + 1..]
                .iter()
                .filter(|w| w.text.starts_with(['/', '~']) || w.text.starts_with("$HOME"))
                .collect();
            _judge
                .reads(named)
                .max(SegmentJudgement::new(Safe, "reads repository state"))
        }
        "push"
            if has(&[
                "--force",
                "-f",
                "--force-with-lease",
                "--mirror",
                "--delete",
                "-d",
            ]) || rest
                .iter()
                .any(|w| w.starts_with("--force") || w.starts_with('+')) =>
        {
            SegmentJudgement::new(Ask, "force-pushes or deletes remote history")
        }
        s if NETWORK.contains(&s) => SegmentJudgement::new(Ask, NETWORK_REASON),
        "reset" if has(&["--hard", "--merge", "--keep"]) => {
            SegmentJudgement::new(Ask, "discards uncommitted changes")
        }
        "reset" => SegmentJudgement::new(WorkspaceSafe, "moves the branch or unstages files"),
        "clean" if has(&["-n", "--dry-run"]) || short_has('n') => {
            SegmentJudgement::new(Safe, "lists untracked files")
        }
        "clean" => SegmentJudgement::new(Ask, "deletes untracked files"),
        "checkout"
            if has(&[
                "--", ".", "-f", "--force", "-B", "--ours", "--theirs", "-p", "--patch",
            ]) =>
        {
            SegmentJudgement::new(Ask, "may overwrite uncommitted changes")
        }
        "checkout" if checkout_names_paths(&rest, &args[index + 1..], _judge) => {
            SegmentJudgement::new(
                Ask,
                "git checkout of paths overwrites their uncommitted changes (the snapshot may \
                 not hold them); commit or stash first, or approve it",
            )
        }
        "rm" if has(&["-f", "--force"]) && !has(&["--cached"]) => SegmentJudgement::new(
            Ask,
            "git rm -f deletes files even with uncommitted changes (the snapshot may not hold \
             them); approve it, or use --cached",
        ),
        "tag" if has(&["-d", "--delete"]) => SegmentJudgement::new(
            Ask,
            "git tag -d deletes a tag (where it pointed is not kept); approve it if intended",
        ),
        "branch"
            if has(&["-u"])
                || rest
                    .iter()
                    .any(|w| w.starts_with("--set-upstream") || w.starts_with("--track")) =>
        {
            SegmentJudgement::new(
                Ask,
                "sets the branch's upstream (the next push or pull goes there); approve it if \
                 intended",
            )
        }
        "checkout" => SegmentJudgement::new(WorkspaceSafe, "switches or creates a branch"),
        "restore" if (has(&["--staged", "-S"]) && !has(&["--worktree", "-W"])) => {
            SegmentJudgement::new(WorkspaceSafe, "unstages files")
        }
        "restore" => SegmentJudgement::new(Ask, "discards uncommitted changes"),
        "switch" if has(&["--discard-changes", "-f", "--force", "-C", "--force-create"]) => {
            SegmentJudgement::new(Ask, "may discard uncommitted changes")
        }
        "branch"
            if has(&["-D", "-M", "-C", "-f", "--force"])
                || (has(&["--delete", "-d"]) && has(&["--force"])) =>
        {
            SegmentJudgement::new(Ask, "deletes or overwrites a branch")
        }
        "branch" | "tag" => {
            let lists = rest.is_empty()
                || has(&[
                    "-l",
                    "--list",
                    "-a",
                    "-r",
                    "-v",
                    "-vv",
                    "--all",
                    "--show-current",
                    "--contains",
                    "--merged",
                    "--no-merged",
                    "-n",
                ]);
            if lists {
                SegmentJudgement::new(Safe, "lists refs")
            } else {
                SegmentJudgement::new(WorkspaceSafe, "creates or deletes a local ref")
            }
        }
        "stash" => match rest.iter().find(|w| !w.starts_with('-')).copied() {
            Some("list" | "show") => SegmentJudgement::new(Safe, "reads stashes"),
            Some("drop" | "clear") => SegmentJudgement::new(Ask, "discards stashed changes"),
            _ => SegmentJudgement::new(WorkspaceSafe, "stashes or restores local changes"),
        },
        "remote" => match rest.iter().find(|w| !w.starts_with('-')).copied() {
            None | Some("show" | "get-url") => SegmentJudgement::new(Safe, "reads remotes"),
            Some("update" | "prune") => SegmentJudgement::new(Ask, NETWORK_REASON),
            Some(_) => SegmentJudgement::new(
                Ask,
                "changes the repository's remotes: the next fetch or push goes elsewhere (a URL \
                 like `ext::sh -c …` runs a command); approve it if intended",
            ),
        },
        "config" => config_judgement(&rest),
        "reflog" => match rest.first().copied() {
            Some("expire" | "delete") => SegmentJudgement::new(Ask, "deletes reflog entries"),
            _ => SegmentJudgement::new(Safe, "reads the reflog"),
        },
        "gc" if rest.iter().any(|w| w.starts_with("--prune")) => {
            SegmentJudgement::new(Ask, "prunes unreachable objects")
        }
        "gc" => SegmentJudgement::new(WorkspaceSafe, "compacts the repository"),
        "prune" | "filter-branch" | "filter-repo" | "replace" | "update-ref" => {
            SegmentJudgement::new(Ask, "rewrites or deletes repository history")
        }
        s if LOCAL_WRITES.contains(&s) => {
            SegmentJudgement::new(WorkspaceSafe, "changes the local repository")
        }
        _ => SegmentJudgement::new(Ask, "unknown git sub-command"),
    }
}

/// True when `git checkout` is given paths (`git checkout HEAD src/x`,
/// `git checkout README.md`): more than one operand besides the values of
/// `-b`/`-B`/`--orphan`, or one that names an existing file.
fn checkout_names_paths(rest: &[&str], args: &[Word], judge: PathJudge<'_>) -> bool {
    // Creating a branch, git refuses to update paths at the same time.
    if rest.iter().any(|w| matches!(*w, "-b" | "--orphan")) {
        return false;
    }
    let mut operands = Vec::new();
    let mut skip = false;
    for (i, w) in rest.iter().enumerate() {
        if std::mem::take(&mut skip) {
            continue;
        }
        if matches!(*w, "-b" | "-B" | "--orphan" | "-t" | "--track") {
            skip = !matches!(*w, "-t" | "--track");
            continue;
        }
        if !w.starts_with('-') {
            operands.push(i);
        }
    }
    match operands.as_slice() {
        [] => false,
        [one] => args.get(*one).is_some_and(|w| {
            judge
                .resolve(w)
                .is_some_and(|p| judge.facts.exists(&p) == Some(true))
        }),
        _ => true,
    }
}
