//! Shared helpers of the policy's verdict tests: paths are judged with no
//! file system (`LexicalPaths`), home `/root`, workspace [`WS`].
#![allow(dead_code)]

use codesmith_policy::SafetyLevel::{self, Ask};
use codesmith_policy::{FileProbe, LexicalPaths, PathFacts, SystemPaths, classify_command_with};

pub(crate) const WS: &str = "/home/dev/proj";

/// Home `/root`, nothing exists (writes create files), no snapshot.
pub(crate) fn facts() -> LexicalPaths {
    LexicalPaths {
        home: Some("/root".to_string()),
        existing: Some(Vec::new()),
        files: inert_repo(),
        ..LexicalPaths::default()
    }
}

/// The configuration of a fresh clone: only keys known to be inert.
pub(crate) const INERT_CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\
    \tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://example.com/x.git\n\
    \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\
    \tmerge = refs/heads/main\n";

/// A repository at [`WS`] (`.git/config` holding [`INERT_CONFIG`]), for
/// [`LexicalPaths::files`].
pub(crate) fn inert_repo() -> Vec<(String, String)> {
    vec![(format!("{WS}/.git/config"), INERT_CONFIG.to_string())]
}

/// Asserts every command's level, listing all that differ.
pub(crate) fn check_with(facts: &impl PathFacts, cases: &[(&str, SafetyLevel)]) {
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

/// [`check_with`] under [`facts`].
pub(crate) fn check(cases: &[(&str, SafetyLevel)]) {
    check_with(&facts(), cases);
}

/// Every listed command asks.
pub(crate) fn asks(commands: &[&str]) {
    let cases: Vec<(&str, SafetyLevel)> = commands.iter().map(|c| (*c, Ask)).collect();
    check(&cases);
}

/// The classifier's reason for `command` under [`facts`].
pub(crate) fn reason(command: &str) -> String {
    classify_command_with(command, WS, &facts()).reason
}

/// The real file system ([`SystemPaths`]) with a repository at [`WS`] whose
/// configuration is [`INERT_CONFIG`]: what a git command finds in an ordinary clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct SystemWithRepo(pub(crate) SystemPaths);

/// [`SystemWithRepo`] over this process's file system.
pub(crate) fn system_facts() -> SystemWithRepo {
    SystemWithRepo(SystemPaths::new())
}

impl PathFacts for SystemWithRepo {
    fn resolve(&self, path: &str) -> String {
        self.0.resolve(path)
    }
    fn home(&self) -> Option<&str> {
        self.0.home()
    }
    fn exists(&self, path: &str) -> Option<bool> {
        self.0.exists(path)
    }
    fn probe(&self, path: &str) -> FileProbe {
        match path.strip_prefix(WS) {
            Some("/.git") => FileProbe::Directory,
            Some("/.git/config") => FileProbe::Text(INERT_CONFIG.to_string()),
            Some("/.git/commondir" | "/.git/config.worktree") => FileProbe::Missing,
            _ => self.0.probe(path),
        }
    }
}

/// `classify_command` as the engine calls it, under [`system_facts`].
pub(crate) fn classify_here(command: &str, workspace: &str) -> codesmith_policy::Classification {
    classify_command_with(command, workspace, &system_facts())
}

/// `decide` under [`system_facts`].
pub(crate) fn decide_here(
    command: &str,
    workspace: &str,
    rules: &codesmith_policy::Rules,
    mode: codesmith_policy::ApprovalMode,
) -> codesmith_policy::Evaluation {
    codesmith_policy::decide_with(command, workspace, rules, mode, &system_facts())
}
