//! Shared helpers of the policy's verdict tests: paths are judged with no
//! file system (`LexicalPaths`), home `/root`, workspace [`WS`].
#![allow(dead_code)]

use codesmith_policy::SafetyLevel::{self, Ask};
use codesmith_policy::{LexicalPaths, PathFacts, classify_command_with};

pub(crate) const WS: &str = "/home/dev/proj";

/// Home `/root`, nothing exists (writes create files), no snapshot.
pub(crate) fn facts() -> LexicalPaths {
    LexicalPaths {
        home: Some("/root".to_string()),
        existing: Some(Vec::new()),
        ..LexicalPaths::default()
    }
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
