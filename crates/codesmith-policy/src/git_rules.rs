//! Git sub-commands: which read, which change the work tree or history, and
//! which discard work or reach the network.
//!
//! History-destroying shapes (`reset --hard`, `clean -f`, `checkout -- .`,
//! `restore` of the work tree, `branch -D`, `stash drop|clear`,
//! `push --force`) need approval; they are not on the catastrophic list
//! (kept to five literals, so that it stays short and exact).
//!
//! A read-only shape (`log`, `status`, `grep`, listing branches, `stash
//! list`, …) is `Safe` only when every option it is given is on that
//! sub-command's allow-list, read by the same [`SafeOptions`] mechanism as
//! the read-only programs; any other option asks, naming it. Options that
//! make git run a program (`--ext-diff`, `--textconv`, `--show-signature`,
//! `-O` of grep) or write a file (`--output`) are simply not listed, and
//! global options other than a few inert ones (`-c`, `--config-env`,
//! `--git-dir`, `--work-tree`, `-C`) ask before any sub-command is read.

use crate::SafetyLevel::{Ask, Safe, WorkspaceSafe};
use crate::net_commands::NETWORK_REASON;
use crate::program_rules::{PathJudge, SegmentJudgement};
use crate::safe_options::{Reading, SafeOptions, entry};
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

/// The options of the diff family (`diff`, `show`, `log -p`, `stash show`, the
/// `diff-*` plumbing) that only shape what is printed, for [`SafeOptions`]
/// entries: `name` takes no value, `name?` an optional value attached with
/// `=`. A value written as the next word is read as an operand (a revision
/// or path), never skipped, so an option hidden there is still judged.
/// Options that run programs (`--ext-diff`, `--textconv`), write files
/// (`--output`) or read files outside the objects (`-O`, `--no-index`,
/// judged on its own) are not listed; neither is anything not understood.
macro_rules! diff_long {
    ($($extra:literal),* $(,)?) => {
        &[
            "abbrev", "abbrev?", "anchored?", "binary", "break-rewrites", "break-rewrites?",
            "cached", "check", "color", "color?", "color-moved", "color-moved?",
            "color-moved-ws?", "color-words", "color-words?", "compact-summary", "cumulative",
            "default-prefix", "diff-algorithm?", "diff-filter?", "dirstat", "dirstat?",
            "dirstat-by-file", "dirstat-by-file?", "exit-code", "find-copies", "find-copies?",
            "find-copies-harder", "find-object?", "find-renames", "find-renames?", "full-index",
            "function-context", "help", "histogram", "ignore-all-space", "ignore-blank-lines",
            "ignore-cr-at-eol", "ignore-matching-lines?", "ignore-space-at-eol",
            "ignore-space-change", "ignore-submodules", "ignore-submodules?",
            "indent-heuristic", "inter-hunk-context?", "irreversible-delete", "minimal",
            "name-only", "name-status", "no-color", "no-color-moved", "no-color-moved-ws",
            "no-ext-diff", "no-indent-heuristic", "no-patch", "no-prefix", "no-relative",
            "no-rename-empty", "no-renames", "no-stat", "no-textconv", "numstat",
            "output-indicator-context?", "output-indicator-new?", "output-indicator-old?", "patch",
            "patch-with-raw", "patch-with-stat", "patience", "pickaxe-all", "pickaxe-regex",
            "quiet", "raw", "relative", "relative?", "rename-empty", "shortstat", "stat",
            "stat?", "stat-count?", "stat-graph-width?", "stat-name-width?", "stat-width?",
            "summary", "text", "unified?", "word-diff", "word-diff?", "word-diff-regex?",
            "ws-error-highlight?", $($extra),*
        ]
    };
}

/// The revision-walk options of `log`, `show`, `rev-list`, `shortlog`,
/// `reflog` and `stash list`, with the diff family's ([`diff_long!`]).
/// `--show-signature` is not listed: it runs `gpg.program`.
macro_rules! log_long {
    ($($extra:literal),* $(,)?) => {
        diff_long![
            "abbrev-commit", "after?", "all", "all-match", "alternate-refs", "ancestry-path",
            "ancestry-path?", "author?", "author-date-order", "basic-regexp", "before?",
            "bisect", "boundary", "branches", "branches?", "cc", "cherry", "cherry-mark",
            "cherry-pick", "children", "clear-decorations", "combined-all-paths", "committer?",
            "count", "date?", "date-order", "dd", "decorate", "decorate?", "decorate-refs?",
            "decorate-refs-exclude?", "dense", "diff-merges?", "do-walk", "encoding?",
            "exclude?", "exclude-first-parent-only", "expand-tabs", "expand-tabs?",
            "extended-regexp", "first-parent", "fixed-strings", "follow", "format?",
            "full-diff", "full-history", "glob?", "graph", "grep?", "grep-reflog?",
            "ignore-missing", "in-commit-order", "invert-grep", "left-only", "left-right",
            "log-size", "mailmap", "max-age?", "max-count?", "max-parents?", "merges",
            "min-age?", "min-parents?", "no-abbrev", "no-abbrev-commit", "no-decorate",
            "no-diff-merges", "no-expand-tabs", "no-mailmap", "no-max-parents", "no-merges",
            "no-min-parents", "no-notes", "no-use-mailmap", "no-walk", "no-walk?", "not",
            "notes", "notes?", "objects", "objects-edge", "oneline", "parents", "perl-regexp",
            "pretty", "pretty?", "reflog", "regexp-ignore-case", "relative-date",
            "remerge-diff", "remotes", "remotes?", "reverse", "right-only", "show-linear-break",
            "show-linear-break?", "show-notes", "show-notes?", "show-pulls", "simplify-by-decoration",
            "simplify-merges", "since?", "since-as-filter?", "single-worktree", "skip?",
            "source", "sparse", "tags", "tags?", "topo-order", "until?", "use-mailmap",
            "walk-reflogs", $($extra),*
        ]
    };
}

/// Short flags of the diff family that take no value.
const DIFF_FLAGS: &str = "BCDMRWabcmpqrstuwz";
/// Short flags of the diff family whose value is required (attached or the
/// next word): `-S<string>`, `-G<regex>`, `-U<n>`, `-l<n>`.
const DIFF_VALUED: &str = "GSUl";

/// The table of a sub-command that walks revisions as `git log` does.
const fn log_like(program: &'static str) -> SafeOptions {
    SafeOptions {
        optional: DIFF_OPTIONAL,
        ..entry(program, LOG_FLAGS, "GLSUln", log_long![], true)
    }
}

/// Short flags of the diff family with an optional attached value (`-M50%`, `-B20/60`,
/// `-X10`).
const DIFF_OPTIONAL: &str = "BCMX";

/// Short flags of the revision walkers that take no value.
const LOG_FLAGS: &str = "BCDEFMPRWabcgimpqrstuwz";

const LOG: SafeOptions = log_like("git log");
const SHOW: SafeOptions = log_like("git show");
const REV_LIST: SafeOptions = SafeOptions {
    optional: DIFF_OPTIONAL,
    ..entry(
        "git rev-list",
        LOG_FLAGS,
        "GLSUln",
        log_long!["header", "timestamp", "quiet", "disk-usage", "disk-usage?"],
        true,
    )
};
const WHATCHANGED: SafeOptions = log_like("git whatchanged");
const REFLOG: SafeOptions = log_like("git reflog");
const STASH_LIST: SafeOptions = log_like("git stash list");
const RANGE_DIFF: SafeOptions = SafeOptions {
    optional: DIFF_OPTIONAL,
    ..entry(
        "git range-diff",
        DIFF_FLAGS,
        DIFF_VALUED,
        diff_long![
            "creation-factor?",
            "no-dual-color",
            "left-only",
            "right-only",
            "no-notes",
            "notes?"
        ],
        false,
    )
};
const DIFF: SafeOptions = SafeOptions {
    optional: DIFF_OPTIONAL,
    ..entry(
        "git diff",
        DIFF_FLAGS,
        DIFF_VALUED,
        diff_long!["base", "merge-base", "no-index", "ours", "staged", "theirs"],
        true,
    )
};
const DIFF_PLUMBING: SafeOptions = SafeOptions {
    optional: DIFF_OPTIONAL,
    ..entry(
        "git diff-files/diff-index/diff-tree",
        DIFF_FLAGS,
        DIFF_VALUED,
        diff_long![
            "always",
            "combined-all-paths",
            "cc",
            "format?",
            "merge-base",
            "no-commit-id",
            "pretty",
            "pretty?",
            "root",
            "stdin"
        ],
        true,
    )
};
const STASH_SHOW: SafeOptions = SafeOptions {
    optional: DIFF_OPTIONAL,
    ..entry(
        "git stash show",
        DIFF_FLAGS,
        DIFF_VALUED,
        diff_long![
            "include-untracked",
            "only-untracked",
            "no-include-untracked"
        ],
        true,
    )
};
const STATUS: SafeOptions = SafeOptions {
    optional: "u",
    ..entry(
        "git status",
        "bsuvz",
        "",
        &[
            "ahead-behind",
            "branch",
            "column?",
            "find-renames",
            "find-renames?",
            "ignore-submodules",
            "ignore-submodules?",
            "ignored",
            "ignored?",
            "long",
            "no-ahead-behind",
            "no-column",
            "no-renames",
            "null",
            "porcelain",
            "porcelain?",
            "renames",
            "short",
            "show-stash",
            "untracked-files",
            "untracked-files?",
            "verbose",
        ],
        false,
    )
};
/// `--no-exclude-standard` is not listed: with `--untracked` it searches ignored
/// files (`.env`) too.
const GREP: SafeOptions = entry(
    "git grep",
    "EFGHILPWachilnopqrvwz",
    "ABCem",
    &[
        "after-context?",
        "all-match",
        "and",
        "basic-regexp",
        "before-context?",
        "break",
        "cached",
        "color",
        "color?",
        "column",
        "context?",
        "count",
        "exclude-standard",
        "extended-regexp",
        "files-with-matches",
        "files-without-match",
        "fixed-strings",
        "full-name",
        "function-context",
        "heading",
        "ignore-case",
        "invert-match",
        "line-number",
        "max-count?",
        "max-depth?",
        "name-only",
        "no-color",
        "no-index",
        "no-recursive",
        "no-textconv",
        "not",
        "null",
        "only-matching",
        "or",
        "perl-regexp",
        "quiet",
        "recursive",
        "regexp?",
        "show-function",
        "text",
        "threads?",
        "untracked",
        "word-regexp",
    ],
    true,
);
const BLAME: SafeOptions = SafeOptions {
    optional: "CM",
    ..entry(
        "git blame",
        "CMbcefhlnpstw",
        "L",
        &[
            "abbrev?",
            "color-by-age",
            "color-lines",
            "contents?",
            "date?",
            "encoding?",
            "first-parent",
            "ignore-rev?",
            "incremental",
            "line-porcelain",
            "minimal",
            "no-progress",
            "porcelain",
            "progress",
            "reverse?",
            "root",
            "score-debug",
            "show-email",
            "show-name",
            "show-number",
            "show-stats",
        ],
        false,
    )
};
const LS_FILES: SafeOptions = entry(
    "git ls-files",
    "cdfikmostuvz",
    "x",
    &[
        "abbrev",
        "abbrev?",
        "cached",
        "debug",
        "deduplicate",
        "deleted",
        "directory",
        "empty-directory",
        "eol",
        "error-unmatch",
        "exclude?",
        "exclude-standard",
        "format?",
        "full-name",
        "ignored",
        "killed",
        "modified",
        "no-empty-directory",
        "others",
        "resolve-undo",
        "sparse",
        "stage",
        "unmerged",
        "with-tree?",
    ],
    false,
);
const LS_TREE: SafeOptions = entry(
    "git ls-tree",
    "dlrtz",
    "",
    &[
        "abbrev",
        "abbrev?",
        "format?",
        "full-name",
        "full-tree",
        "long",
        "name-only",
        "name-status",
        "object-only",
    ],
    false,
);
const REV_PARSE: SafeOptions = entry(
    "git rev-parse",
    "q",
    "",
    &[
        "absolute-git-dir",
        "abbrev-ref",
        "abbrev-ref?",
        "after?",
        "all",
        "before?",
        "branches",
        "branches?",
        "default?",
        "disambiguate?",
        "exclude?",
        "flags",
        "git-common-dir",
        "git-dir",
        "glob?",
        "is-bare-repository",
        "is-inside-git-dir",
        "is-inside-work-tree",
        "is-shallow-repository",
        "local-env-vars",
        "no-flags",
        "no-revs",
        "not",
        "path-format?",
        "quiet",
        "remotes",
        "remotes?",
        "revs-only",
        "short",
        "short?",
        "show-cdup",
        "show-object-format",
        "show-object-format?",
        "show-prefix",
        "show-ref-format",
        "show-superproject-working-tree",
        "show-toplevel",
        "since?",
        "sq",
        "symbolic",
        "symbolic-full-name",
        "tags",
        "tags?",
        "until?",
        "verify",
    ],
    false,
);
const SHOW_REF: SafeOptions = entry(
    "git show-ref",
    "dqs",
    "",
    &[
        "abbrev",
        "abbrev?",
        "branches",
        "dereference",
        "exists",
        "hash",
        "hash?",
        "head",
        "heads",
        "quiet",
        "tags",
        "verify",
    ],
    false,
);
const FOR_EACH_REF: SafeOptions = entry(
    "git for-each-ref",
    "ps",
    "",
    &[
        "color",
        "color?",
        "contains?",
        "count?",
        "exclude?",
        "format?",
        "ignore-case",
        "include-root-refs",
        "merged?",
        "no-contains?",
        "no-merged?",
        "omit-empty",
        "perl",
        "points-at?",
        "python",
        "shell",
        "sort?",
        "tcl",
    ],
    false,
);
const DESCRIBE: SafeOptions = entry(
    "git describe",
    "",
    "",
    &[
        "abbrev?",
        "all",
        "always",
        "broken",
        "broken?",
        "candidates?",
        "contains",
        "debug",
        "dirty",
        "dirty?",
        "exact-match",
        "exclude?",
        "first-parent",
        "long",
        "match?",
        "tags",
    ],
    false,
);
const SHORTLOG: SafeOptions = SafeOptions {
    optional: "w",
    ..entry(
        "git shortlog",
        "cens",
        "",
        &[
            "after?",
            "all",
            "author?",
            "before?",
            "committer",
            "email",
            "first-parent",
            "format?",
            "group?",
            "merges",
            "no-merges",
            "numbered",
            "since?",
            "summary",
            "until?",
        ],
        false,
    )
};
/// The small read-only sub-commands.
const MERGE_BASE: SafeOptions = entry(
    "git merge-base",
    "a",
    "",
    &["all", "fork-point", "independent", "is-ancestor", "octopus"],
    false,
);
const NAME_REV: SafeOptions = entry(
    "git name-rev",
    "",
    "",
    &[
        "all",
        "always",
        "exclude?",
        "name-only",
        "no-undefined",
        "refs?",
        "tags",
    ],
    false,
);
const CAT_FILE: SafeOptions = entry(
    "git cat-file",
    "Zepstz",
    "",
    &[
        "allow-unknown-type",
        "batch",
        "batch?",
        "batch-all-objects",
        "batch-check",
        "batch-check?",
        "buffer",
        "follow-symlinks",
        "unordered",
        "use-mailmap",
    ],
    false,
);
const CHECK_ATTR: SafeOptions = entry("git check-attr", "az", "", &["all", "cached"], false);
const CHECK_IGNORE: SafeOptions = entry(
    "git check-ignore",
    "nqvz",
    "",
    &["no-index", "non-matching", "quiet", "verbose"],
    false,
);
const COUNT_OBJECTS: SafeOptions = entry(
    "git count-objects",
    "Hv",
    "",
    &["human-readable", "verbose"],
    false,
);
const CHERRY: SafeOptions = entry("git cherry", "v", "", &["abbrev", "abbrev?"], false);
/// `--lost-found` (writes into .git/lost-found) is not listed.
const FSCK: SafeOptions = entry(
    "git fsck",
    "v",
    "",
    &[
        "cache",
        "connectivity-only",
        "dangling",
        "full",
        "name-objects",
        "no-dangling",
        "no-full",
        "no-progress",
        "no-reflogs",
        "progress",
        "root",
        "strict",
        "tags",
        "unreachable",
        "verbose",
    ],
    false,
);
/// `--web`/`-w` (starts `$BROWSER` or `web.browser`) and `--info` are not listed.
const HELP: SafeOptions = entry(
    "git help",
    "acgm",
    "",
    &[
        "all",
        "config",
        "developer-interfaces",
        "guides",
        "man",
        "no-aliases",
        "no-external-commands",
        "no-verbose",
        "user-interfaces",
        "verbose",
    ],
    false,
);
const SHOW_BRANCH: SafeOptions = entry(
    "git show-branch",
    "agr",
    "",
    &[
        "all",
        "color",
        "color?",
        "current",
        "date-order",
        "independent",
        "list",
        "merge-base",
        "more?",
        "no-color",
        "no-name",
        "remotes",
        "sha1-name",
        "sparse",
        "topics",
        "topo-order",
    ],
    false,
);
const VAR: SafeOptions = entry("git var", "l", "", &[], false);
const VERIFY: SafeOptions = entry(
    "git verify-commit/verify-tag",
    "v",
    "",
    &["format?", "raw", "verbose"],
    false,
);
const VERSION: SafeOptions = entry("git version", "", "", &["build-options"], false);
/// The options `git branch` and `git tag` share for filtering and
/// formatting the refs they list.
macro_rules! ref_list_long {
    ($($extra:literal),* $(,)?) => {
        &[
            "color", "color?", "column", "column?", "contains", "contains?", "format?",
            "ignore-case", "list", "merged", "merged?", "no-color", "no-column", "no-contains",
            "no-contains?", "no-merged", "no-merged?", "omit-empty", "points-at?", "sort?",
            $($extra),*
        ]
    };
}

/// Listing branches: what filters and formats the list.
const BRANCH_LIST: SafeOptions = entry(
    "git branch (listing)",
    "ailrv",
    "",
    ref_list_long![
        "abbrev",
        "abbrev?",
        "all",
        "no-abbrev",
        "remotes",
        "show-current",
        "verbose"
    ],
    false,
);
/// Listing (or verifying) tags; `-n` prints annotation lines.
const TAG_LIST: SafeOptions = SafeOptions {
    optional: "n",
    ..entry(
        "git tag (listing)",
        "ilnv",
        "",
        ref_list_long!["verify"],
        false,
    )
};
const REMOTE_READ: SafeOptions = entry(
    "git remote (reading)",
    "nv",
    "",
    &["all", "push", "verbose"],
    false,
);
const WORKTREE_LIST: SafeOptions = entry(
    "git worktree list",
    "vz",
    "",
    &["expire?", "porcelain", "verbose"],
    false,
);
const SUBMODULE_READ: SafeOptions = entry(
    "git submodule status/summary",
    "q",
    "n",
    &[
        "cached",
        "files",
        "for-status",
        "quiet",
        "recursive",
        "summary-limit?",
    ],
    false,
);

/// `git clean`: `-e`/`--exclude` take a value, so `-fen` is `-f -e n` (no
/// dry run). `-i` is left out: interactive cleaning asks.
const CLEAN: SafeOptions = entry(
    "git clean",
    "dfnqxX",
    "e",
    &["dry-run", "exclude=", "force", "quiet"],
    false,
);
const RESET: SafeOptions = entry(
    "git reset",
    "NpqU",
    "",
    &[
        "hard",
        "intent-to-add",
        "keep",
        "merge",
        "mixed",
        "no-quiet",
        "no-recurse-submodules",
        "no-refresh",
        "patch",
        "quiet",
        "recurse-submodules",
        "refresh",
        "soft",
    ],
    false,
);
/// `git checkout`: `-b`/`-B`/`--orphan` take a branch name; `-t` takes an
/// optional attached mode; `-2`/`-3` are `--ours`/`--theirs`.
const CHECKOUT: SafeOptions = SafeOptions {
    optional: "t",
    ..entry(
        "git checkout",
        "23dfmpq",
        "bB",
        &[
            "conflict=",
            "detach",
            "force",
            "guess",
            "ignore-other-worktrees",
            "ignore-skip-worktree-bits",
            "merge",
            "no-guess",
            "no-overlay",
            "no-overwrite-ignore",
            "no-progress",
            "no-recurse-submodules",
            "no-track",
            "orphan=",
            "ours",
            "overlay",
            "overwrite-ignore",
            "patch",
            "progress",
            "quiet",
            "recurse-submodules",
            "theirs",
            "track",
            "track?",
        ],
        false,
    )
};
const RM: SafeOptions = entry(
    "git rm",
    "fnqr",
    "",
    &[
        "cached",
        "dry-run",
        "force",
        "ignore-unmatch",
        "quiet",
        "sparse",
    ],
    false,
);
const PUSH: SafeOptions = entry(
    "git push",
    "46dfnquv",
    "o",
    &[
        "all",
        "atomic",
        "branches",
        "delete",
        "dry-run",
        "follow-tags",
        "force",
        "force-if-includes",
        "force-with-lease",
        "force-with-lease?",
        "ipv4",
        "ipv6",
        "mirror",
        "no-atomic",
        "no-follow-tags",
        "no-force-if-includes",
        "no-force-with-lease",
        "no-progress",
        "no-signed",
        "no-thin",
        "no-verify",
        "porcelain",
        "progress",
        "prune",
        "push-option=",
        "quiet",
        "recurse-submodules=",
        "repo=",
        "set-upstream",
        "signed",
        "signed?",
        "tags",
        "thin",
        "verbose",
        "verify",
    ],
    false,
);
/// Creating, moving or deleting branches (listing is [`BRANCH_LIST`]).
const BRANCH_CHANGE: SafeOptions = SafeOptions {
    optional: "t",
    ..entry(
        "git branch",
        "cdfmqrCDM",
        "u",
        &[
            "copy",
            "create-reflog",
            "delete",
            "force",
            "move",
            "no-track",
            "quiet",
            "recurse-submodules",
            "remotes",
            "set-upstream-to=",
            "track",
            "track?",
            "unset-upstream",
        ],
        false,
    )
};
/// Creating or deleting tags (listing is [`TAG_LIST`]); `-e` (an editor) is
/// left out.
const TAG_CHANGE: SafeOptions = entry(
    "git tag",
    "adfs",
    "muF",
    &[
        "annotate",
        "cleanup=",
        "create-reflog",
        "delete",
        "file=",
        "force",
        "local-user=",
        "message=",
        "no-sign",
        "sign",
        "trailer=",
    ],
    false,
);
const RESTORE: SafeOptions = entry(
    "git restore",
    "23mpqSW",
    "s",
    &[
        "conflict=",
        "ignore-skip-worktree-bits",
        "ignore-unmerged",
        "merge",
        "no-overlay",
        "no-progress",
        "no-recurse-submodules",
        "ours",
        "overlay",
        "patch",
        "progress",
        "quiet",
        "recurse-submodules",
        "source=",
        "staged",
        "theirs",
        "worktree",
    ],
    false,
);
const SWITCH: SafeOptions = SafeOptions {
    optional: "t",
    ..entry(
        "git switch",
        "dfmq",
        "cC",
        &[
            "conflict=",
            "create=",
            "detach",
            "discard-changes",
            "force",
            "force-create=",
            "guess",
            "ignore-other-worktrees",
            "merge",
            "no-guess",
            "no-progress",
            "no-recurse-submodules",
            "no-track",
            "orphan=",
            "progress",
            "quiet",
            "recurse-submodules",
            "track",
            "track?",
        ],
        false,
    )
};
/// `git rebase`: `-x`/`--exec` runs a command; `-s`/`-X` (a merge strategy
/// found on `PATH`) are left out.
const REBASE: SafeOptions = SafeOptions {
    optional: "r",
    ..entry(
        "git rebase",
        "fimnqv",
        "x",
        &[
            "abort",
            "allow-empty-message",
            "apply",
            "autosquash",
            "autostash",
            "committer-date-is-author-date",
            "continue",
            "empty=",
            "exec=",
            "force-rebase",
            "fork-point",
            "ignore-date",
            "ignore-whitespace",
            "interactive",
            "keep-base",
            "keep-empty",
            "merge",
            "no-autosquash",
            "no-autostash",
            "no-fork-point",
            "no-keep-empty",
            "no-rebase-merges",
            "no-reapply-cherry-picks",
            "no-stat",
            "no-update-refs",
            "no-verify",
            "onto=",
            "quiet",
            "quit",
            "reapply-cherry-picks",
            "rebase-merges",
            "rebase-merges?",
            "reset-author-date",
            "root",
            "signoff",
            "skip",
            "stat",
            "update-refs",
            "verbose",
            "verify",
        ],
        false,
    )
};
/// `git format-patch`: `-o`/`--output-directory` is where it writes; the
/// diff family's own `--output` is not listed.
const FORMAT_PATCH: SafeOptions = SafeOptions {
    optional: DIFF_OPTIONAL,
    ..entry(
        "git format-patch",
        "BCDMRWabckNnpqstuwz",
        "GSUlov",
        diff_long![
            "base=",
            "cover-letter",
            "in-reply-to=",
            "keep-subject",
            "no-cover-letter",
            "no-numbered",
            "no-signature",
            "no-thread",
            "numbered",
            "numbered-files",
            "output-directory=",
            "progress",
            "reroll-count=",
            "rfc",
            "root",
            "signoff",
            "start-number=",
            "stdout",
            "subject-prefix=",
            "thread",
            "thread?",
            "zero-commit"
        ],
        true,
    )
};

/// The options of a sub-command that changes something and whose judgement
/// depends on them; any option not listed asks.
fn change_options(sub: &str) -> Option<&'static SafeOptions> {
    Some(match sub {
        "branch" => &BRANCH_CHANGE,
        "checkout" => &CHECKOUT,
        "clean" => &CLEAN,
        "format-patch" => &FORMAT_PATCH,
        "push" => &PUSH,
        "rebase" => &REBASE,
        "reset" => &RESET,
        "restore" => &RESTORE,
        "rm" => &RM,
        "switch" => &SWITCH,
        "tag" => &TAG_CHANGE,
        _ => return None,
    })
}

/// The allow-list of a read-only sub-command's options; every sub-command
/// in [`READ_ONLY`] has one.
fn read_only_options(sub: &str) -> Option<&'static SafeOptions> {
    Some(match sub {
        "annotate" | "blame" => &BLAME,
        "cat-file" => &CAT_FILE,
        "check-attr" => &CHECK_ATTR,
        "check-ignore" => &CHECK_IGNORE,
        "cherry" => &CHERRY,
        "count-objects" => &COUNT_OBJECTS,
        "describe" => &DESCRIBE,
        "diff" => &DIFF,
        "diff-files" | "diff-index" | "diff-tree" => &DIFF_PLUMBING,
        "for-each-ref" => &FOR_EACH_REF,
        "fsck" => &FSCK,
        "grep" => &GREP,
        "help" => &HELP,
        "log" => &LOG,
        "ls-files" => &LS_FILES,
        "ls-tree" => &LS_TREE,
        "merge-base" => &MERGE_BASE,
        "name-rev" => &NAME_REV,
        "range-diff" => &RANGE_DIFF,
        "rev-list" => &REV_LIST,
        "rev-parse" => &REV_PARSE,
        "shortlog" => &SHORTLOG,
        "show" => &SHOW,
        "show-branch" => &SHOW_BRANCH,
        "show-ref" => &SHOW_REF,
        "status" => &STATUS,
        "var" => &VAR,
        "verify-commit" | "verify-tag" => &VERIFY,
        "version" => &VERSION,
        "whatchanged" => &WHATCHANGED,
        _ => return None,
    })
}

/// True when `git branch`/`git tag` is asked to list: an option that only
/// makes sense when listing is given (`-a`, `--list`, `--contains`, …).
fn lists_refs(sub: &str, words: &[Word]) -> bool {
    let flags: &[&str] = if sub == "branch" {
        &[
            "-a",
            "-l",
            "-r",
            "-v",
            "-vv",
            "--all",
            "--list",
            "--remotes",
            "--show-current",
            "--verbose",
        ]
    } else {
        &["-l", "-n", "--list", "-v", "--verify"]
    };
    words.iter().any(|w| {
        let name = w.text.split('=').next().unwrap_or(&w.text);
        flags.contains(&name)
            || matches!(
                name,
                "--contains" | "--no-contains" | "--merged" | "--no-merged" | "--points-at"
            )
    })
}

/// The read-only shape of `git SUB WORDS`, if it has one: the table its
/// options must come from and the words that table judges (those after a
/// second-level sub-command such as `stash list`). `None` for sub-commands
/// that change something; they are judged by [`git_judgement_here`]'s arms.
fn read_shape<'w>(sub: &str, words: &'w [Word]) -> Option<(&'static SafeOptions, &'w [Word])> {
    if let Some(table) = read_only_options(sub) {
        return Some((table, words));
    }
    let first = words.first().map(|w| w.text.as_str());
    let after_first = words.get(1..).unwrap_or_default();
    match sub {
        "branch" | "tag" => {
            let table = if sub == "branch" {
                &BRANCH_LIST
            } else {
                &TAG_LIST
            };
            // Without an operand (`git branch --sort=-committerdate`) git lists.
            let no_operand = crate::safe_options::check_spec(table, words)
                .is_ok_and(|operands| operands.is_empty());
            (no_operand || lists_refs(sub, words)).then_some((table, words))
        }
        "stash" => match first {
            Some("list") => Some((&STASH_LIST, after_first)),
            Some("show") => Some((&STASH_SHOW, after_first)),
            _ => None,
        },
        "remote" => match words.iter().find(|w| !w.text.starts_with('-')) {
            None => Some((&REMOTE_READ, words)),
            Some(w) if matches!(w.text.as_str(), "show" | "get-url") => Some((&REMOTE_READ, words)),
            Some(_) => None,
        },
        "reflog" => match first {
            Some("expire" | "delete") => None,
            Some("show") => Some((&REFLOG, after_first)),
            _ => Some((&REFLOG, words)),
        },
        "worktree" if first == Some("list") => Some((&WORKTREE_LIST, after_first)),
        "submodule" if matches!(first, Some("status" | "summary")) => {
            Some((&SUBMODULE_READ, after_first))
        }
        _ => None,
    }
}

/// Judges the options of a read-only shape against its table: every option
/// must be listed, and no word known only at run time may start with what is
/// not known (`$X`, `"$B"..HEAD` could be any option; `"origin/$B"` cannot) or
/// be split into more words by the shell (`origin/$B` unquoted may hold
/// ` --output=x`). `None` when all are understood.
fn read_options_judgement(
    table: &SafeOptions,
    words: &[Word],
    texts: &[&str],
    read_only: bool,
) -> Result<Reading, SegmentJudgement> {
    let known_start = |w: &Word| {
        w.opaque.is_none()
            && w.text
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | ':'))
    };
    let splits = |w: &Word| w.expands && w.text.contains('$');
    if let Some(word) = words
        .iter()
        .find(|w| w.dynamic && (!known_start(w) || splits(w)))
    {
        return Err(SegmentJudgement::owned(
            Ask,
            format!(
                "{} `{}` is only known at run time, so the option it may be is not analysed",
                table.program, word.text
            ),
        ));
    }
    crate::safe_options::read_spec(table, texts).map_err(|why| {
        let list = if read_only {
            "not on its read-only allow-list, so it may write a file or run a program"
        } else {
            "not among the options whose effect is analysed"
        };
        SegmentJudgement::owned(Ask, format!("{why}: {list}"))
    })
}

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
/// files and directories holding them ask). The operands are those of the
/// sub-command's option table (the values of `-e`, `-A`, … are not paths); the
/// pattern is the first unless `-e` gave it, and no path is the working
/// directory, judged like any other.
fn no_index_judgement(
    sub: &str,
    reading: &Option<Reading>,
    operands: &[&Word],
    judge: PathJudge<'_>,
) -> SegmentJudgement {
    let Some(reading) = reading else {
        return SegmentJudgement::new(Ask, "git --no-index options not analysed");
    };
    let mut paths: Vec<&Word> = operands.to_vec();
    let pattern_given = reading.has(&["e", "regexp"]);
    if sub == "grep" && !pattern_given && !paths.is_empty() {
        paths.remove(0);
    }
    if sub == "diff" && paths.len() != 2 {
        return SegmentJudgement::new(Ask, "git diff --no-index without two paths");
    }
    let read = judge.reads(paths.iter().copied());
    if read.level > Safe {
        return read;
    }
    // No path: the working directory (`credential_holder` of nothing).
    if let Some(dir) = judge.credential_holder(&paths) {
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
    // Git runs programs its repository's configuration names, whatever the
    // sub-command; only `version` and `help` (and the global `--version`,
    // `--help`) use no repository.
    let sub = args
        .iter()
        .map(|w| w.text.as_str())
        .find(|w| !w.starts_with('-'));
    if judgement.level < Ask
        && sub.is_some_and(|s| !matches!(s, "version" | "help"))
        && let Some(question) = crate::git_repo::repository_question(judge)
    {
        return question;
    }
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
        return SegmentJudgement::new(Ask, "sets git configuration that can run commands")
            .unseen("it sets git configuration, which can name programs git runs");
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
            return SegmentJudgement::owned(Ask, format!("`{word}`: {why}")).unseen(
                "a git global option it is given is not analysed, and the repository it points \
                 git at can alias or configure any program",
            );
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
    // Each sub-command whose judgement depends on its options is read as git
    // reads them (short options cluster, and a valued one takes the rest of
    // its word or the next word: `-fen` is `-f -e n`); an option not listed
    // asks. A read-only shape is `Safe` only with options its table lists.
    let read = read_shape(sub, &args[index + 1..]);
    let (reading, words) = if let Some((table, words)) = read {
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        match read_options_judgement(table, words, &texts, true) {
            Ok(reading) => (Some(reading), words),
            Err(unknown) => return unknown,
        }
    } else if let Some(table) = change_options(sub) {
        let words = &args[index + 1..];
        match read_options_judgement(table, words, &rest, false) {
            Ok(reading) => (Some(reading), words),
            Err(unknown) if sub == "push" => {
                return SegmentJudgement::owned(
                    Ask,
                    format!("{NETWORK_REASON}; {}", unknown.reason),
                );
            }
            Err(unknown) => return unknown,
        }
    } else {
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
        (None, &args[index + 1..])
    };
    let has = |names: &[&str]| reading.as_ref().is_some_and(|r| r.has(names));
    let operands: Vec<&Word> = reading
        .as_ref()
        .map(|r| r.operands.iter().filter_map(|&i| words.get(i)).collect())
        .unwrap_or_default();
    let value_of = |names: &[&str]| -> Option<Word> {
        let r = reading.as_ref()?;
        let given = r.opts.iter().find(|o| names.contains(&o.name.as_str()))?;
        match given.value_at {
            Some(i) => words.get(i).cloned(),
            None => given.value.as_deref().map(Word::literal),
        }
    };
    match sub {
        "difftool" | "mergetool" => {
            SegmentJudgement::new(Ask, "runs a configured diff or merge program")
        }
        "rebase" if has(&["x", "exec"]) => {
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
        "format-patch" if has(&["o", "output-directory"]) => {
            match value_of(&["o", "output-directory"]) {
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
        // and directories named (`git grep --no-index KEY ~`), or the
        // working directory when none is.
        "diff" | "grep" if has(&["no-index"]) => {
            no_index_judgement(sub, &reading, &operands, _judge)
        }
        "blame" | "annotate" if has(&["contents"]) => match value_of(&["contents"]) {
            Some(file) => _judge
                .reads([&file])
                .max(SegmentJudgement::new(Safe, "reads repository state")),
            None => SegmentJudgement::new(Ask, "git blame --contents without a file"),
        },
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
        // `+refspec` forces; `:branch` (nothing pushed onto it) deletes it.
        "push"
            if has(&[
                "force",
                "f",
                "force-with-lease",
                "mirror",
                "delete",
                "d",
                "prune",
            ]) || operands
                .iter()
                .skip(1)
                .any(|w| w.text.starts_with(['+', ':'])) =>
        {
            SegmentJudgement::owned(
                Ask,
                format!("{NETWORK_REASON}; it force-pushes or deletes remote history"),
            )
        }
        s if NETWORK.contains(&s) => SegmentJudgement::new(Ask, NETWORK_REASON),
        "reset" if has(&["hard", "merge", "keep"]) => {
            SegmentJudgement::new(Ask, "discards uncommitted changes")
        }
        "reset" => SegmentJudgement::new(WorkspaceSafe, "moves the branch or unstages files"),
        "clean" if has(&["n", "dry-run"]) => SegmentJudgement::new(Safe, "lists untracked files"),
        "clean" => SegmentJudgement::new(Ask, "deletes untracked files"),
        "checkout"
            if reading.as_ref().is_some_and(|r| r.dash_dash)
                || operands.iter().any(|w| w.text == ".")
                || has(&["f", "force", "B", "ours", "theirs", "2", "3", "p", "patch"]) =>
        {
            SegmentJudgement::new(Ask, "may overwrite uncommitted changes")
        }
        "checkout" if !has(&["b", "orphan"]) && checkout_names_paths(&operands, _judge) => {
            SegmentJudgement::new(
                Ask,
                "git checkout of paths overwrites their uncommitted changes (the snapshot may \
                 not hold them); commit or stash first, or approve it",
            )
        }
        "rm" if has(&["f", "force"]) && !has(&["cached"]) => SegmentJudgement::new(
            Ask,
            "git rm -f deletes files even with uncommitted changes (the snapshot may not hold \
             them); approve it, or use --cached",
        ),
        "tag" if has(&["d", "delete"]) => SegmentJudgement::new(
            Ask,
            "git tag -d deletes a tag (where it pointed is not kept); approve it if intended",
        ),
        "branch" if read.is_none() && has(&["u", "set-upstream-to", "t", "track"]) => {
            SegmentJudgement::new(
                Ask,
                "sets the branch's upstream (the next push or pull goes there); approve it if \
                 intended",
            )
        }
        "checkout" => SegmentJudgement::new(WorkspaceSafe, "switches or creates a branch"),
        "restore" if has(&["staged", "S"]) && !has(&["worktree", "W"]) => {
            SegmentJudgement::new(WorkspaceSafe, "unstages files")
        }
        "restore" => SegmentJudgement::new(Ask, "discards uncommitted changes"),
        "switch" if has(&["discard-changes", "f", "force", "C", "force-create"]) => {
            SegmentJudgement::new(Ask, "may discard uncommitted changes")
        }
        "branch"
            if read.is_none()
                && (has(&["D", "M", "C", "f", "force"])
                    || (has(&["delete", "d"]) && has(&["force"]))) =>
        {
            SegmentJudgement::new(Ask, "deletes or overwrites a branch")
        }
        "branch" | "tag" => {
            if read.is_some() {
                SegmentJudgement::new(Safe, "lists refs")
            } else {
                SegmentJudgement::new(WorkspaceSafe, "creates or deletes a local ref")
            }
        }
        "stash" => match rest.iter().find(|w| !w.starts_with('-')).copied() {
            // With an option before it, `list` is a pathspec of `git stash push`.
            Some("list" | "show") if read.is_some() => SegmentJudgement::new(Safe, "reads stashes"),
            Some("drop" | "clear") => SegmentJudgement::new(Ask, "discards stashed changes"),
            _ => SegmentJudgement::new(WorkspaceSafe, "stashes or restores local changes"),
        },
        // `git remote show NAME` asks the remote for its branches, as
        // `ls-remote` does, unless `-n` keeps it to the cached refs.
        "remote" => match operands.first().map(|w| w.text.as_str()) {
            Some("show") if operands.len() > 1 && !has(&["n"]) => SegmentJudgement::owned(
                Ask,
                format!(
                    "{NETWORK_REASON} (git remote show NAME queries the remote; `-n` reads only \
                     what is cached)"
                ),
            ),
            None | Some("show" | "get-url") if read.is_some() => {
                SegmentJudgement::new(Safe, "reads remotes")
            }
            Some("update" | "prune") => SegmentJudgement::new(Ask, NETWORK_REASON),
            _ => SegmentJudgement::new(
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
        "mv" => mv_judgement(&args[index + 1..], &rest, _judge),
        "rm" if !has(&["cached"]) => {
            // What git rm deletes is guarded as any write of those paths is.
            let written = _judge.writes(operands.iter().copied());
            if written.level > WorkspaceSafe {
                return SegmentJudgement::owned(Ask, format!("git rm {}", written.reason));
            }
            SegmentJudgement::new(WorkspaceSafe, "changes the local repository")
        }
        s if LOCAL_WRITES.contains(&s) => {
            SegmentJudgement::new(WorkspaceSafe, "changes the local repository")
        }
        _ => SegmentJudgement::new(Ask, "unknown git sub-command")
            .unseen(crate::program_rules::UNKNOWN_SUB_COMMAND),
    }
}

/// Judges `git mv WORDS` (`expanded`: the same words with long options
/// spelled out) by every path it names: each source leaves its place and the
/// destination (or a path inside it) is created, so all are held to the guard
/// every write is ([`PathJudge::writes`]: `.git` at any depth, `.codesmith/`,
/// instruction files, places outside the workspace). An option not listed asks.
fn mv_judgement(words: &[Word], expanded: &[&str], judge: PathJudge<'_>) -> SegmentJudgement {
    let mut paths: Vec<&Word> = Vec::new();
    let mut dash_dash = false;
    for (word, text) in words.iter().zip(expanded) {
        if !dash_dash && *text == "--" {
            dash_dash = true;
            continue;
        }
        if !dash_dash && text.starts_with('-') && text.len() > 1 {
            let known = matches!(*text, "--force" | "--dry-run" | "--verbose" | "--sparse")
                || (!text.starts_with("--") && text[1..].chars().all(|c| "fknv".contains(c)));
            if !known {
                return SegmentJudgement::owned(
                    Ask,
                    format!("git mv: the option `{text}` is not analysed"),
                );
            }
            continue;
        }
        paths.push(word);
    }
    if paths.len() < 2 {
        return SegmentJudgement::new(Ask, "git mv without a source and a destination");
    }
    let written = judge.writes(paths.iter().copied());
    if written.level > WorkspaceSafe {
        return SegmentJudgement::owned(Ask, format!("git mv {}", written.reason));
    }
    SegmentJudgement::new(WorkspaceSafe, "moves files in the work tree and the index")
}

/// True when `git checkout` is given paths (`git checkout HEAD src/x`,
/// `git checkout README.md`): more than one operand, or one that names an
/// existing file.
fn checkout_names_paths(operands: &[&Word], judge: PathJudge<'_>) -> bool {
    match operands {
        [] => false,
        [one] => judge
            .resolve(one)
            .is_some_and(|p| judge.facts.exists(&p) == Some(true)),
        _ => true,
    }
}
