//! The integration tests of `codesmith-engine`, gathered into one test binary: one link
//! instead of one per file. Each file under `tests/` is a module here, so a test's
//! path is `FILE::NAME` (`cargo test -p codesmith-engine --test integration FILE`).

// Tests may report what they measured (suite counts, timings) on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

mod approvals;
mod catalog;
mod economics;
mod faults;
mod file_gates;
mod interrupt;
mod json_repair_suite;
mod ladder;
mod long_sessions;
mod mcp_grants;
mod persistent_writes;
mod queues;
mod results;
mod rlm;
mod shaky;
mod snapshot;
mod subagents;
mod verify;

/// A file under `tests/` that this root does not declare would never be built.
#[test]
fn every_test_file_is_declared_here() {
    codesmith_testkit::assert_every_test_file_declared(env!("CARGO_MANIFEST_DIR"));
}
