//! The shell side of two judgements the file tools share: writing a file another
//! program runs later (`.cargo/config.toml`, `.npmrc`, `.envrc.local`, a `.pth`) asks
//! with the program named, and reading a secret (`.env*`, private keys by name,
//! credential stores such as `.s3cfg` or `rclone.conf`) asks, by the same functions
//! (`runs_later`, `secret_file`) `write_file` and `read_file` use.

use crate::common;

use codesmith_policy::SafetyLevel::{Ask, Safe, WorkspaceSafe};
use codesmith_policy::{LexicalPaths, classify_command_with};
use common::{WS, check, facts};

#[test]
fn writing_a_file_another_program_runs_asks_and_names_the_program() {
    for (command, program) in [
        ("echo '[build]' > .cargo/config.toml", "cargo"),
        ("printf x >> crates/a/.cargo/config", "cargo"),
        ("echo x > ./src/../.Cargo/Config.toml", "cargo"),
        ("echo '[toolchain]' > rust-toolchain.toml", "rustup"),
        ("echo script-shell=./x > .npmrc", "npm"),
        ("tee .yarnrc.yml < /dev/null", "yarn"),
        ("echo 'eval x' > sub/.envrc.local", "direnv"),
        (
            "echo 'import os' > .venv/lib/python3.12/site-packages/x.pth",
            "python",
        ),
        ("cp a .husky/pre-commit", "git"),
        ("echo x > .github/workflows/ci.yml", "GitHub Actions"),
        ("echo x > .vscode/tasks.json", "VS Code"),
        ("echo '* filter=x' > .gitattributes", "git"),
        ("mv x .pre-commit-config.yaml", "pre-commit"),
    ] {
        let got = classify_command_with(command, WS, &facts());
        assert_eq!(got.level, Ask, "{command}: {}", got.reason);
        assert!(
            got.reason.contains(program),
            "{command}: the reason names {program}: {}",
            got.reason
        );
    }
    check(&[
        ("echo x > Makefile", WorkspaceSafe),
        ("echo x > build.rs", WorkspaceSafe),
        ("echo x > src/config.toml", WorkspaceSafe),
        ("cat .cargo/config.toml", Safe),
    ]);
}

#[test]
fn a_symlink_into_a_listed_file_is_judged_where_it_lands() {
    let facts = LexicalPaths {
        links: vec![(format!("{WS}/alias"), format!("{WS}/.cargo"))],
        ..facts()
    };
    let got = classify_command_with("echo x > alias/config.toml", WS, &facts);
    assert_eq!(got.level, Ask, "{}", got.reason);
    assert!(got.reason.contains("cargo"), "{}", got.reason);
}

#[test]
fn reading_secrets_asks_by_the_shared_judgement() {
    check(&[
        ("cat .env", Ask),
        ("cat .envrc.local", Ask),
        ("cat deploy/id_ed25519", Ask),
        ("cat keys/id_deploy", Ask),
        ("cat conf/.s3cfg", Ask),
        ("cat rclone.conf", Ask),
        ("cat .my.cnf", Ask),
        ("cat .terraformrc", Ask),
        ("cat .yarnrc.yml", Ask),
        ("cat deploy/id_ed25519.pub", Safe),
        ("cat .env.example", Safe),
        ("cat README.md", Safe),
    ]);
}
