//! The integration-test layout: each crate gathers its `tests/*.rs` files into one test
//! binary whose root, `tests/all.rs`, declares every file as a module (the layout of
//! ripgrep's `tests/tests.rs`), so the crate links one test binary instead of one per file.

use std::collections::BTreeSet;
use std::path::Path;

/// Asserts that every `tests/*.rs` file of the crate at `manifest_dir` (pass
/// `env!("CARGO_MANIFEST_DIR")`), other than the root `tests/all.rs`, is declared there
/// as `mod NAME;`.
///
/// The crates set `autotests = false`, so Cargo builds no file that `all.rs` does not
/// declare: a forgotten file would pass without running. This turns that into a failure
/// naming each such file and the line to add.
///
/// # Panics
/// When a file is undeclared, or `tests/` or `tests/all.rs` cannot be read.
pub fn assert_every_test_file_declared(manifest_dir: &str) {
    let tests = Path::new(manifest_dir).join("tests");
    let root = tests.join("all.rs");
    let text = std::fs::read_to_string(&root)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", root.display()));
    let declared: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::trim)
        .collect();
    let entries = std::fs::read_dir(&tests)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", tests.display()));
    let mut missing: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| Some(name.strip_suffix(".rs")?.to_string()))
        .filter(|stem| stem != "all" && !declared.contains(stem.as_str()))
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "tests/{{{}}}.rs not declared in {}, so their tests never run: add {} there",
        missing.join(","),
        root.display(),
        missing
            .iter()
            .map(|m| format!("`mod {m};`"))
            .collect::<Vec<_>>()
            .join(" ")
    );
}
