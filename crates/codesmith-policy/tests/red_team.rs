//! Kinds of command the red-team pass found wrongly allowed or judged too
//! softly, each with more instances than were found: attached and
//! clustered option values, abbreviated long options, redirections,
//! copy targets, run-time paths, truncation, git configuration,
//! catastrophic commands, archives and patches, secrets printed to the
//! transcript. Paths are judged with no file system (`LexicalPaths`), home
//! `/root`.
#![allow(clippy::unwrap_used)]

use codesmith_policy::SafetyLevel::{self, RequiresApproval, Safe, WorkspaceSafe};
use codesmith_policy::{LexicalPaths, classify_command_with};

const WS: &str = "/home/dev/proj";

fn facts() -> LexicalPaths {
    LexicalPaths {
        home: Some("/root".to_string()),
        ..LexicalPaths::default()
    }
}

fn check_with(facts: &LexicalPaths, cases: &[(&str, SafetyLevel)]) {
    let mut wrong = Vec::new();
    for (command, expected) in cases {
        let got = classify_command_with(command, WS, facts);
        if got.level != *expected {
            wrong.push(format!(
                "{command:?}: expected {expected}, got {} ({})",
                got.level, got.reason
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

fn check(cases: &[(&str, SafetyLevel)]) {
    check_with(&facts(), cases);
}

fn asks(commands: &[&str]) {
    let cases: Vec<(&str, SafetyLevel)> = commands.iter().map(|c| (*c, RequiresApproval)).collect();
    check(&cases);
}

fn reason(command: &str) -> String {
    classify_command_with(command, WS, &facts()).reason
}

#[test]
fn every_redirection_that_opens_a_file_is_judged() {
    asks(&[
        "echo x >& /tmp/x",
        "echo x >&/tmp/x",
        "echo x 1>&/tmp/x",
        "echo x 2>&/etc/x",
        "echo x &> /tmp/x",
        "echo x &>> /tmp/x",
        "echo x >| /etc/x",
        "echo x <> /etc/x",
        "> /etc/x",
        ">> /root/.bashrc",
        "echo hi; > /etc/passwd",
        ">/tmp/x cat",
        "cat < ~/.ssh/id_rsa",
        "cat < /root/.ssh/id_rsa",
        "wc < .env",
        "wc -c 0< ~/.netrc",
        "cat <&0 < /root/.aws/credentials",
        "cat .env.local",
        "grep KEY < config/.env.production",
    ]);
    check(&[
        ("echo x >& 2", Safe),
        ("echo x 2>&1", Safe),
        ("echo x 2>&-", Safe),
        ("cat < src/main.rs", Safe),
        ("cat .env.example", Safe),
        ("> out.txt", WorkspaceSafe),
    ]);
    assert!(reason("wc < .env").contains("credential"));
}

#[test]
fn the_write_target_of_copies_and_moves_is_judged_in_every_spelling() {
    asks(&[
        "cp --target-directory=/etc a",
        "cp --target-directory /etc a",
        "cp --target=/etc a",
        "cp --targ /etc a",
        "cp -t /etc a",
        "cp -t/etc a",
        "cp -at/etc a",
        "cp -rt /usr/local/bin a b",
        "mv -t/etc a",
        "mv --target-directory=/etc a",
        "mv --t=/root a",
        "install -t /etc a",
        "install -t/usr/bin a",
        "install -m755 -t/usr/bin a",
        "install -d /opt/x",
        "ln -s -t /etc a",
        "ln -st/etc a",
        "ln -sft /root/.config a",
        "cp -T a /etc/x",
        "mv -T a /etc/x",
        "cp -S .bak a /etc/x",
        "cp --frobnicate a b",
        "cp --re a b",
        "mv a.txt /dev/null",
        "mv -f src/lib.rs /dev/null",
    ]);
    check(&[
        ("cp -t build a b", WorkspaceSafe),
        ("cp -at build a", WorkspaceSafe),
        ("cp --target=build a", WorkspaceSafe),
        ("mv -T a b", WorkspaceSafe),
        ("install -m 644 a build/a", WorkspaceSafe),
        ("cp -r src backup", WorkspaceSafe),
    ]);
}
