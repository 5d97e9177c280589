//! Runs the openai/codex apply-patch scenarios kept in `../shared/suites/codex-apply-patch/`
//! (outside this repository; see `codesmith_testkit::suite_dir` for what happens when it is absent).
//!
//! Each scenario: copy `input/` to an empty directory, apply `patch.txt`, compare every file
//! with `expected/` byte for byte.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use codesmith_patch::apply_to_dir;

/// Scenarios where our rule differs on purpose. codex applies multi-file patches file by file
/// and leaves earlier files written when a later one fails; CodeSmith is all-or-nothing, so for
/// these the tree must come out exactly as `input/`.
const INTENDED_DIFFERENCES: &[&str] = &["015_failure_after_partial_success_leaves_changes"];

fn scenarios_dir() -> Option<PathBuf> {
    codesmith_testkit::suite_dir("codex-apply-patch/codex-rs/apply-patch/tests/fixtures/scenarios")
}

fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in snapshot(from) {
        let dest = to.join(rel);
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::write(dest, bytes).unwrap();
    }
}

#[test]
fn codex_apply_patch_scenarios() {
    let Some(dir) = scenarios_dir() else { return };
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut failures = Vec::new();
    let mut passed = 0;
    for name in &names {
        let case = dir.join(name);
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&case.join("input"), tmp.path());
        let patch = fs::read_to_string(case.join("patch.txt")).unwrap();
        let outcome = apply_to_dir(tmp.path(), &patch);
        let want = if INTENDED_DIFFERENCES.contains(&name.as_str()) {
            snapshot(&case.join("input"))
        } else {
            snapshot(&case.join("expected"))
        };
        let got = snapshot(tmp.path());
        if got == want {
            passed += 1;
            println!(
                "pass {name} ({})",
                outcome.map_or_else(|e| format!("refused: {e}"), |_| "applied".into())
            );
        } else {
            failures.push(format!(
                "{name}: outcome {outcome:?}\n got {got:?}\nwant {want:?}"
            ));
        }
    }
    println!(
        "codex scenarios: {passed}/{} pass ({} judged by our all-or-nothing rule: {:?})",
        names.len(),
        INTENDED_DIFFERENCES.len(),
        INTENDED_DIFFERENCES
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
