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
