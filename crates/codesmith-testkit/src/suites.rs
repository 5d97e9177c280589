//! Test data from other projects, read in place from the folder next to the repository.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment variable that turns a missing suite into a test failure (`1`).
pub const REQUIRE_SUITES_VAR: &str = "CODESMITH_REQUIRE_SUITES";

/// The environment variable naming the suites folder when it is not next to the repository.
pub const SUITES_DIR_VAR: &str = "CODESMITH_SUITES_DIR";

/// The folder holding the shared suites: `$CODESMITH_SUITES_DIR` when set, else
/// `shared/suites` next to the repository (`<repo>/../shared/suites`).
pub fn suites_root() -> PathBuf {
    if let Some(dir) = std::env::var_os(SUITES_DIR_VAR).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    // This crate lives at `<repo>/crates/codesmith-testkit`.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let beside_repo = manifest
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent);
    match beside_repo {
        Some(dir) => dir.join("shared").join("suites"),
        None => manifest.join("../../../shared/suites"),
    }
}

/// The directory `relative` inside [`suites_root`], when it exists.
///
/// When it does not, the test that asked checks nothing, and that must not pass
/// unnoticed: this writes `SUITE MISSING: <path>` straight to the process's stderr (past
/// the test harness's output capture, so it shows in a normal `cargo test` run) and
/// returns `None` for the caller to skip. With `CODESMITH_REQUIRE_SUITES=1` (CI sets it)
/// it panics instead, failing the test.
pub fn suite_dir(relative: &str) -> Option<PathBuf> {
    let required = std::env::var(REQUIRE_SUITES_VAR).is_ok_and(|v| v == "1");
    present_or_reported(suites_root().join(relative), required)
}

/// `dir` when it is a directory; else the `SUITE MISSING:` line, then `None` or a panic.
fn present_or_reported(dir: PathBuf, required: bool) -> Option<PathBuf> {
    if dir.is_dir() {
        return Some(dir);
    }
    report_missing(
        "SUITE",
        &format!(
            "{} (this test checked nothing; set {SUITES_DIR_VAR} to the suites folder)",
            dir.display()
        ),
        required,
    );
    None
}

/// Reports that something a test needs from outside the repository (a suite, an MCP
/// server package) is absent, so the test checks nothing: writes `KIND MISSING: what`
/// straight to the process's stderr (past the harness's output capture). With
/// `CODESMITH_REQUIRE_SUITES=1` (CI sets it) it panics instead, failing the test.
///
/// `kind` is upper-case (`SUITE`, `MCP SERVER`); `what` names the thing and how to get it.
pub fn missing(kind: &str, what: &str) {
    let required = std::env::var(REQUIRE_SUITES_VAR).is_ok_and(|v| v == "1");
    report_missing(kind, what, required);
}

fn report_missing(kind: &str, what: &str, required: bool) {
    let line = format!("{kind} MISSING: {what}");
    let _ = writeln!(std::io::stderr(), "{line}");
    if required {
        panic!("{line}; {REQUIRE_SUITES_VAR}=1 requires it");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_present_suite_is_returned() {
        let dir = std::env::temp_dir();
        assert_eq!(present_or_reported(dir.clone(), true), Some(dir));
    }

    #[test]
    fn a_missing_suite_is_skipped_or_fails_when_required() {
        let missing = std::env::temp_dir().join("no-such-suite");
        assert_eq!(present_or_reported(missing.clone(), false), None);
        let panic = std::panic::catch_unwind(|| present_or_reported(missing, true)).unwrap_err();
        let msg = panic.downcast_ref::<String>().unwrap();
        assert!(msg.starts_with("SUITE MISSING: "), "{msg}");
        assert!(msg.contains("no-such-suite"), "{msg}");
        assert!(msg.contains(REQUIRE_SUITES_VAR), "{msg}");
        let panic =
            std::panic::catch_unwind(|| report_missing("MCP SERVER", "x", true)).unwrap_err();
        let msg = panic.downcast_ref::<String>().unwrap();
        assert!(msg.starts_with("MCP SERVER MISSING: x"), "{msg}");
        report_missing("MCP SERVER", "y", false);
    }
}
