//! Git sub-commands read as git reads their options: a short option that
//! takes a value eats the rest of its cluster or the next word (`-fen` is
//! `-f -e n`, no dry run), operands are what is left after the values (the
//! value of `-e` or `-A` is not a path), and no path means the working
//! directory.

use codesmith_policy::LexicalPaths;
use codesmith_policy::SafetyLevel::{Ask, Safe, WorkspaceSafe};

use crate::common;
use common::{WS, asks, check, check_with};

#[test]
fn a_value_eaten_by_a_short_option_is_no_dry_run() {
    asks(&[
        "git clean -fen",
        "git clean -fdxen",
        "git clean -f -e -n",
        "git clean -f -e n",
        "git clean -fe -n",
        "git clean -f --exclude -n",
        "git clean -f --exclude=x",
        "git clean -fd",
        "git clean -fi -n",
        "git clean -f $X",
        "git rm -rf src",
        "git rm -qrf src",
        "git rm --force -r src",
        "git reset --hard",
        "git reset -q --hard HEAD~1",
        "git reset --har",
        "git reset --keep HEAD~",
        "git reset --frob",
        "git checkout -qf main",
        "git checkout -fq main",
        "git checkout -3 x",
        "git checkout -- src",
        "git checkout HEAD .",
        "git checkout -B main origin/main",
        "git switch -fc x",
        "git switch --discard-changes main",
        "git restore src",
        "git restore -SW src",
        "git branch -fD x",
        "git branch -qD x",
        "git branch -vD x",
        "git tag -fd v1",
        "git rebase -ix 'sh evil' main",
        "git rebase -i --exec=sh main",
        "git rebase -s ours main",
        "git push origin :main",
        "git push origin +main",
        "git push -qf origin main",
        "git format-patch -ko /etc/x HEAD~1",
        "git format-patch -o/etc/x HEAD~1",
        "git help -aw log",
    ]);
    check(&[
        ("git clean -n", Safe),
        ("git clean -fn", Safe),
        ("git clean -nf", Safe),
        ("git clean -fdxn", Safe),
        ("git clean -f --dry-run", Safe),
        // git takes a unique prefix of a long option.
        ("git clean -f --dry-ru", Safe),
        ("git clean -fn -e '*.log'", Safe),
        ("git clean -n -e -f", Safe),
        ("git reset -q HEAD~1", WorkspaceSafe),
        ("git reset --soft HEAD~1", WorkspaceSafe),
        ("git reset -- src/a.rs", WorkspaceSafe),
        ("git rm -r --cached -f build", WorkspaceSafe),
        ("git rm -q a.txt", WorkspaceSafe),
        ("git checkout -b feature", WorkspaceSafe),
        ("git checkout -qb feature origin/main", WorkspaceSafe),
        ("git checkout main", WorkspaceSafe),
        ("git switch -c x", WorkspaceSafe),
        ("git restore --staged src", WorkspaceSafe),
        ("git branch -d x", WorkspaceSafe),
        ("git branch new-feature", WorkspaceSafe),
        ("git tag -a v1 -m 'release -d'", WorkspaceSafe),
        ("git rebase -i main", WorkspaceSafe),
        ("git format-patch -o patches HEAD~1", WorkspaceSafe),
    ]);
}

/// The facts of [`common::facts`], with an ignored `.env` in the workspace.
fn with_dotenv() -> LexicalPaths {
    LexicalPaths {
        existing: Some(vec![format!("{WS}/.env")]),
        ..common::facts()
    }
}

#[test]
fn no_index_paths_are_the_operands_and_none_is_the_working_directory() {
    let facts = with_dotenv();
    check_with(
        &facts,
        &[
            ("git grep --no-index -e TOK", Ask),
            ("git grep --no-index -A 1 TOK", Ask),
            ("git grep --no-index -B1 -C 2 TOK", Ask),
            ("git grep --no-index -m 3 TOK", Ask),
            ("git grep --no-index -eTOK", Ask),
            ("git grep --no-index -e TOK -e X", Ask),
            ("git grep --no-index -e TOK src .", Ask),
            ("git grep --no-index -i TOK -- .", Ask),
            ("git diff --no-index -U 3 src .env", Ask),
            ("git diff --no-index src", Ask),
            ("grep -r TOK", Ask),
            ("git grep --no-index -e TOK src", Safe),
            ("git grep --no-index -A 1 TOK src", Safe),
            ("git diff --no-index -U3 src/a src/b", Safe),
        ],
    );
}

#[test]
fn remote_show_without_n_reaches_the_network() {
    asks(&[
        "git remote show origin",
        "git remote -v show origin",
        "git remote show -v origin",
        "git remote show $R",
    ]);
    check(&[
        ("git remote show -n origin", Safe),
        ("git remote show", Safe),
        ("git remote", Safe),
        ("git remote get-url origin", Safe),
    ]);
}

/// [`common::facts`] with these files (absolute path, text) instead of the
/// inert repository at [`WS`].
fn with_files(files: &[(&str, &str)]) -> LexicalPaths {
    LexicalPaths {
        files: files
            .iter()
            .map(|(p, t)| (p.replace("WS", WS), (*t).to_string()))
            .collect(),
        ..common::facts()
    }
}

/// Git runs programs its repository's configuration names: a git command is
/// let run only when the repository git will use is found and every key of its
/// configuration is known to be inert; otherwise it asks, naming the key.
#[test]
fn a_repository_config_naming_anything_not_known_inert_asks() {
    for (config, key) in [
        (
            "[core]\n\tfsmonitor = \"echo pwned > PWNED; false\"\n",
            "core.fsmonitor",
        ),
        ("[core]\n\tbare = false\n\tworktree = ..\n", "core.worktree"),
        ("[diff]\n\texternal = tools/run.sh\n", "diff.external"),
        (
            "[diff \"x\"]\n\ttextconv = tools/run.sh\n",
            "diff.x.textconv",
        ),
        ("[filter \"f\"]\n\tclean = tools/run.sh\n", "filter.f.clean"),
        ("[gpg]\n\tprogram = tools/run.sh\n", "gpg.program"),
        ("[core]\n\tsshCommand = tools/run.sh\n", "core.sshcommand"),
        ("[core]\n\tpager = tools/run.sh\n", "core.pager"),
        ("[include]\n\tpath = ../x.cfg\n", "include.path"),
        ("[core] fsmonitor = x\n", "core.fsmonitor"),
    ] {
        let facts = with_files(&[("WS/.git/config", config)]);
        for command in [
            "git status",
            "git grep TODO",
            "git ls-files",
            "git diff --stat",
            "git log -p",
            "git show HEAD",
            "git blame a.txt",
            "git verify-commit HEAD",
            "git tag -v v1",
            "git add a.txt",
            "git commit -m x",
            "cd src && git status",
        ] {
            let got = codesmith_policy::classify_command_with(command, WS, &facts);
            assert_eq!(got.level, Ask, "{command} with {config:?}: {}", got.reason);
            assert!(got.reason.contains(key), "{command}: {}", got.reason);
        }
    }
    let facts = with_files(&[("WS/.git/config", "[core]\n\tfsmonitor = x\n")]);
    check_with(
        &facts,
        &[
            ("git version", Safe),
            ("git --version", Safe),
            ("git help log", Safe),
        ],
    );
}

/// Files (path, text), a command, and its expected level.
type RepoCase = (
    &'static [(&'static str, &'static str)],
    &'static str,
    codesmith_policy::SafetyLevel,
);

#[test]
fn the_repository_is_found_as_git_finds_it() {
    const BAD: &str = "[core]\n\tfsmonitor = x\n";
    let cases: &[RepoCase] = &[
        // The nearest `.git` wins: a nested clean repository under a bad one.
        (
            &[
                ("WS/.git/config", BAD),
                ("WS/sub/.git/config", common::INERT_CONFIG),
            ],
            "cd sub && git status",
            Safe,
        ),
        (
            &[
                ("WS/.git/config", common::INERT_CONFIG),
                ("WS/sub/.git/config", BAD),
            ],
            "cd sub && git log",
            Ask,
        ),
        // A gitfile (worktree or submodule) names the git directory.
        (
            &[
                ("WS/.git", "gitdir: ../store/wt\n"),
                ("/home/dev/store/wt/config", BAD),
            ],
            "git status",
            Ask,
        ),
        (
            &[
                ("WS/.git", "gitdir: /home/dev/store/wt\n"),
                ("/home/dev/store/wt/commondir", "../main\n"),
                ("/home/dev/store/main/config", BAD),
            ],
            "git status",
            Ask,
        ),
        (
            &[
                ("WS/.git", "gitdir: /home/dev/store/wt\n"),
                ("/home/dev/store/wt/commondir", "../main\n"),
                ("/home/dev/store/main/config", common::INERT_CONFIG),
                ("/home/dev/store/wt/config.worktree", BAD),
            ],
            "git status",
            Ask,
        ),
        (
            &[
                ("WS/.git", "gitdir: /home/dev/store/wt\n"),
                ("/home/dev/store/wt/commondir", "../main\n"),
                ("/home/dev/store/main/config", common::INERT_CONFIG),
            ],
            "git status",
            Safe,
        ),
        (&[("WS/.git", "not a gitfile\n")], "git status", Ask),
        // The planted implicit bare repository of the report.
        (
            &[
                ("WS/.git/config", common::INERT_CONFIG),
                ("WS/b/HEAD", "ref: refs/heads/master\n"),
                ("WS/b/objects/.keep", ""),
                (
                    "WS/b/config",
                    "[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = x\n",
                ),
            ],
            "cd b && git status",
            Ask,
        ),
        // A gitfile is read as git reads it: `gitdir:  g` names ` g`, not `g`.
        (
            &[
                ("WS/.git/config", common::INERT_CONFIG),
                ("WS/sub3/g/config", common::INERT_CONFIG),
                ("WS/sub3/ g/HEAD", "ref: refs/heads/main\n"),
                ("WS/sub3/ g/config", BAD),
                ("WS/sub3/.git", "gitdir:  g\n"),
            ],
            "cd sub3 && git status",
            Ask,
        ),
        (
            &[
                ("WS/sub3/g/config", common::INERT_CONFIG),
                ("WS/sub3/.git", "gitdir: g\nevil\n"),
            ],
            "cd sub3 && git status",
            Ask,
        ),
        // The named git directory must exist and hold a config.
        (&[("WS/.git", "gitdir: ../nowhere\n")], "git status", Ask),
        (
            &[
                ("WS/.git", "gitdir: g\n"),
                ("WS/g/HEAD", "ref: refs/heads/main\n"),
            ],
            "git status",
            Ask,
        ),
        (
            &[
                ("WS/.git", "gitdir: g\n"),
                ("WS/g/config", common::INERT_CONFIG),
            ],
            "git status",
            Safe,
        ),
        // No repository at all: git would read files as `--no-index` does.
        (&[], "git diff a.txt .env", Ask),
        (&[], "git status", Ask),
    ];
    for (files, command, level) in cases {
        let facts = with_files(files);
        let got = codesmith_policy::classify_command_with(command, WS, &facts);
        assert_eq!(
            got.level, *level,
            "{command} with {files:?}: {}",
            got.reason
        );
    }
}

/// Setting git configuration through the environment on the line asks, so the
/// sandbox's protected `safe.bareRepository` cannot be undone by the command.
#[test]
fn the_command_cannot_replace_the_protected_git_config() {
    asks(&[
        "GIT_CONFIG_COUNT=0 git status",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.bareRepository GIT_CONFIG_VALUE_0=all git status",
        "export GIT_CONFIG_COUNT=0; git status",
        "env GIT_CONFIG_PARAMETERS=x git status",
        "git -c safe.bareRepository=all status",
        "unset GIT_CONFIG_COUNT; git status",
        "unset -v GIT_CONFIG_KEY_0 && git status",
        "env -u GIT_CONFIG_COUNT git status",
        "env -uGIT_CONFIG_COUNT git status",
        "env --unset=GIT_CONFIG_COUNT git status",
        "env -i git status",
        "env -i PATH=/usr/bin git status",
        "env --ignore-environment git status",
        "declare +x GIT_CONFIG_COUNT; git status",
        "export -n GIT_CONFIG_COUNT; git status",
    ]);
    check(&[
        ("unset FOO; git status", Safe),
        ("env -u FOO git status", Safe),
    ]);
}

/// A `.git` at any depth, file (a gitfile naming another git directory) as well
/// as directory, is protected like the top-level one.
#[test]
fn writes_to_a_dot_git_at_any_depth_ask() {
    asks(&[
        "printf 'gitdir: ../b\\n' > sub/.git",
        "echo 'gitdir: /tmp/x' > a/b/c/.git",
        "cp evil.txt vendor/lib/.git",
        "mv x sub/.GIT",
        "mkdir -p sub/.git/hooks",
        "tee sub/.git < x",
        "ln -s ../b sub/.git",
        "rm sub/.git",
    ]);
}

/// `git mv` creates its destination as `mv` does, so it meets the same guard:
/// a `.git` at any depth, the repository's hooks and config, `.codesmith/`.
#[test]
fn git_mv_and_rm_name_paths_held_to_the_write_guard() {
    asks(&[
        "git mv b sub5/.git",
        "git add gf && git mv gf sub3/.git",
        "git mv h .git/hooks/pre-commit",
        "git mv c .git/config",
        "git mv -f x .codesmith/policy.toml",
        "git mv -- x sub/.GIT",
        "git mv .git y",
        "git mv x /tmp/elsewhere",
        "git mv --bogus x y",
        "git rm .codesmith/policy.toml",
        "git rm -r sub/.git",
    ]);
    check(&[
        ("git mv a.txt b.txt", WorkspaceSafe),
        ("git mv -k src/a.rs src/b.rs", WorkspaceSafe),
        ("git rm a.txt", WorkspaceSafe),
        ("git rm --cached a.txt", WorkspaceSafe),
    ]);
}

/// A directory git would take as a bare repository is checked even when its
/// `HEAD` is a symlink (git accepts one into `refs/`, even dangling); with no
/// config there, the command asks.
#[test]
#[allow(clippy::unwrap_used)]
fn a_bare_looking_directory_with_a_symlinked_head_is_checked() {
    let root = std::env::temp_dir().join(format!("codesmith-bare-head-{}", std::process::id()));
    let ws = root.join("ws");
    let bare = ws.join("b");
    std::fs::create_dir_all(bare.join("objects")).unwrap();
    std::fs::create_dir_all(bare.join("refs")).unwrap();
    std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
    std::fs::write(ws.join(".git/config"), common::INERT_CONFIG).unwrap();
    std::os::unix::fs::symlink("refs/heads/master", bare.join("HEAD")).unwrap();
    let ws_text = ws.to_str().unwrap();
    let facts = codesmith_policy::SystemPaths::new();
    let judged = |command: &str| codesmith_policy::classify_command_with(command, ws_text, &facts);
    let missing = judged("cd b && git status");
    std::fs::write(
        bare.join("config"),
        "[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = \"echo pwned; false\"\n",
    )
    .unwrap();
    let planted = judged("cd b && git status");
    std::fs::write(bare.join("config"), common::INERT_CONFIG).unwrap();
    let inert = judged("cd b && git status");
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(missing.level, Ask, "{}", missing.reason);
    assert!(missing.reason.contains("missing"), "{}", missing.reason);
    assert_eq!(planted.level, Ask, "{}", planted.reason);
    assert!(
        planted.reason.contains("core.worktree"),
        "{}",
        planted.reason
    );
    assert_eq!(inert.level, Safe, "{}", inert.reason);
}
