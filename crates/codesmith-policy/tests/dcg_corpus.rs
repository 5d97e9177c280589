//! The labelled destructive_command_guard corpus in
//! `../shared/suites/dcg-command-corpus` (read in place, never copied).
//!
//! Their `deny` means "must not run without a person saying yes", so for us
//! it must be `ask` or `deny`: no deny-labelled case may be decided `allow`
//! (hard assertion). Allow-labelled cases that we send to `ask` are the cost
//! of caution; the test prints the count, and it may not grow past the
//! recorded ceiling. A missing suite folder is reported by
//! `codesmith_testkit::suite_dir` (`SUITE MISSING:`, or a failure with
//! `CODESMITH_REQUIRE_SUITES=1`).

use std::path::{Path, PathBuf};

use codesmith_policy::{ApprovalMode, Decision, PathFacts, PrivateTmp, Rules, decide_with};

use crate::common::{classify_here, decide_here};

const WS: &str = "/home/dev/proj";

struct Case {
    file: String,
    command: String,
    expected: String,
}

fn corpus_dir() -> Option<PathBuf> {
    codesmith_testkit::suite_dir("dcg-command-corpus/tests/corpus")
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

fn load(dir: &Path) -> Vec<Case> {
    let mut files = Vec::new();
    collect(dir, &mut files);
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("corpus file is readable");
        let value: toml::Value = toml::from_str(&text).expect("corpus file is TOML");
        let name = file
            .strip_prefix(dir)
            .unwrap_or(&file)
            .display()
            .to_string();
        for case in value
            .get("case")
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            let Some(command) = case.get("command").and_then(|c| c.as_str()) else {
                continue; // hook_json cases carry no command
            };
            let expected = case
                .get("expected")
                .or_else(|| case.get("expected_decision"))
                .and_then(|e| e.as_str())
                .unwrap_or("")
                .to_string();
            cases.push(Case {
                file: name.clone(),
                command: command.to_string(),
                expected,
            });
        }
    }
    cases
}

/// The corpus judged in one context: counts and the cost lines.
struct Tally {
    allow_total: usize,
    deny_total: usize,
    allow_to_ask: usize,
    allow_to_deny: usize,
    deny_to_ask: usize,
    deny_to_deny: usize,
    leaks: Vec<String>,
    cost: Vec<String>,
}

fn tally(cases: &[Case], facts: &dyn PathFacts) -> Tally {
    let rules = Rules::new();
    let mut t = Tally {
        allow_total: 0,
        deny_total: 0,
        allow_to_ask: 0,
        allow_to_deny: 0,
        deny_to_ask: 0,
        deny_to_deny: 0,
        leaks: Vec::new(),
        cost: Vec::new(),
    };
    for case in cases {
        let evaluation = decide_with(&case.command, WS, &rules, ApprovalMode::AutoEdit, facts);
        match (case.expected.as_str(), evaluation.decision) {
            ("deny", Decision::Allow) => t.leaks.push(format!(
                "{}: {:?} ({})",
                case.file, case.command, evaluation.reason
            )),
            ("deny", Decision::Ask) => t.deny_to_ask += 1,
            ("deny", Decision::Deny) => t.deny_to_deny += 1,
            ("allow", Decision::Ask) => {
                t.allow_to_ask += 1;
                t.cost
                    .push(format!("ask  {:?}: {}", case.command, evaluation.reason));
            }
            ("allow", Decision::Deny) => {
                t.allow_to_deny += 1;
                t.cost
                    .push(format!("deny {:?}: {}", case.command, evaluation.reason));
            }
            _ => {}
        }
        match case.expected.as_str() {
            "allow" => t.allow_total += 1,
            "deny" => t.deny_total += 1,
            _ => {}
        }
    }
    t
}

fn report(context: &str, t: &Tally) {
    println!(
        "{context}: deny-labelled: {} ask, {} deny, {} allow; allow-labelled: {} allow, {} ask, {} deny (the cost of caution)",
        t.deny_to_ask,
        t.deny_to_deny,
        t.leaks.len(),
        t.allow_total - t.allow_to_ask - t.allow_to_deny,
        t.allow_to_ask,
        t.allow_to_deny
    );
    if std::env::var_os("DCG_CORPUS_VERBOSE").is_some() {
        for line in &t.cost {
            println!("  {line}");
        }
    }
}

/// Judged twice: as the engine's approval gate judges a command that runs under an
/// isolating sandbox with a private `/tmp` (bubblewrap), and bare (no
/// sandbox: `/tmp` is the host's). No deny-labelled case may be allowed in
/// either; the allow-labelled cases asked may not exceed each context's
/// ceiling.
#[test]
fn no_deny_labelled_case_is_allowed() {
    let Some(dir) = corpus_dir() else { return };
    let cases = load(&dir);
    assert!(
        cases.len() > 300,
        "expected the 354-case corpus, found {}",
        cases.len()
    );
    let sandboxed = tally(&cases, &PrivateTmp(crate::common::system_facts()));
    let bare = tally(&cases, &crate::common::system_facts());
    println!(
        "dcg corpus: {} cases ({} labelled allow, {} labelled deny)",
        cases.len(),
        bare.allow_total,
        bare.deny_total
    );
    report("sandboxed, private /tmp", &sandboxed);
    report("bare", &bare);
    for (context, t) in [("sandboxed", &sandboxed), ("bare", &bare)] {
        assert!(
            t.leaks.is_empty(),
            "{context}: deny-labelled cases decided allow:\n{}",
            t.leaks.join("\n")
        );
    }
    // The cost of caution may not grow. An allow is earned: setting a
    // variable not known to be inert (`VAR=value echo test`, `env FOO=1 …`,
    // `GIT_DIR=…`), `command …`, `make`, inline code, network access and
    // deletions no snapshot is known to hold (`rm file.txt`,
    // `find … -exec rm {} \;`) ask by design. Bare, writes and deletions
    // under the host's `/tmp` (`rm -rf /tmp/build`, `tee /tmp/x`) ask too.
    for (context, t, ceiling) in [
        ("sandboxed", &sandboxed, MAX_ASKED_SANDBOXED),
        ("bare", &bare, MAX_ASKED_BARE),
    ] {
        assert!(
            t.allow_to_ask + t.allow_to_deny <= ceiling,
            "{context}: {} allow-labelled cases were asked or denied (ceiling {ceiling}):\n{}",
            t.allow_to_ask + t.allow_to_deny,
            t.cost.join("\n")
        );
    }
}

/// Most allow-labelled corpus cases that may be sent to ask or deny when
/// the command runs under a sandbox with a private `/tmp` (the target is
/// at most 61, the figure of the enumerate-the-bad classifier).
const MAX_ASKED_SANDBOXED: usize = 58;

/// The same, for a command run bare.
const MAX_ASKED_BARE: usize = 71;

/// The e2e command fixtures of the same suite: `dangerous.txt` (every line
/// must be blocked) and `EXPECT:command` lines in the other files. A
/// `BLOCK` line must not be decided `allow`.
#[test]
fn e2e_fixtures_block_lines_are_not_allowed() {
    let Some(dir) = codesmith_testkit::suite_dir("dcg-command-corpus/tests/e2e/fixtures/commands")
    else {
        return;
    };
    let rules = Rules::new();
    let mut leaks = Vec::new();
    let (mut block, mut allow, mut allow_asked) = (0, 0, 0);
    for name in [
        "dangerous.txt",
        "edge_cases.txt",
        "heredocs.txt",
        "safe.txt",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        for line in text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        {
            let (expect, command) = match line.split_once(':') {
                Some((e @ ("BLOCK" | "ALLOW" | "WARN"), c)) => (e, c.replace("\\n", "\n")),
                _ if name == "dangerous.txt" => ("BLOCK", line.to_string()),
                _ if name == "safe.txt" => ("ALLOW", line.to_string()),
                _ => continue,
            };
            let decision = decide_here(&command, WS, &rules, ApprovalMode::AutoEdit).decision;
            match expect {
                "BLOCK" => {
                    block += 1;
                    if decision == Decision::Allow {
                        leaks.push(format!("{name}: {command:?}"));
                    }
                }
                "ALLOW" => {
                    allow += 1;
                    allow_asked += usize::from(decision != Decision::Allow);
                }
                _ => {}
            }
        }
    }
    println!(
        "dcg e2e fixtures: {block} block lines ({} allowed), {allow} allow lines ({allow_asked} asked or denied)",
        leaks.len()
    );
    assert!(
        leaks.is_empty(),
        "BLOCK lines decided allow:\n{}",
        leaks.join("\n")
    );
}

/// Every prefix of every corpus command (cut at character boundaries), and
/// some hostile bytes, is classified without a panic.
#[test]
fn truncated_and_hostile_inputs_never_panic() {
    let mut inputs: Vec<String> = match corpus_dir() {
        Some(dir) => load(&dir).into_iter().map(|c| c.command).collect(),
        None => Vec::new(),
    };
    inputs.extend(
        [
            "\"é",
            "'é",
            "$'\\",
            "\\",
            "a | | b",
            "cat <<EOF | sh",
            "$(((((((",
            "`",
            "${",
            "echo \u{202e}evil\u{200b} | sh",
            "rm -rf \u{0000}/",
            "((x)) | a | b | c",
        ]
        .map(str::to_string),
    );
    let nested = format!("{}ls{}", "bash -c '".repeat(20), "'".repeat(20));
    inputs.push(nested);
    for input in &inputs {
        let cuts: Vec<usize> = input
            .char_indices()
            .map(|(i, _)| i)
            .chain([input.len()])
            .collect();
        let step = cuts.len().div_ceil(40).max(1);
        for cut in cuts.into_iter().step_by(step) {
            let _ = classify_here(&input[..cut], WS);
        }
    }
}
