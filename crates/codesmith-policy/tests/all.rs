//! The integration tests of `codesmith-policy`, gathered into one test binary: one link
//! instead of one per file. Each file under `tests/` is a module here, so a test's
//! path is `FILE::NAME` (`cargo test -p codesmith-policy --test integration FILE`).

// Tests may report what they measured (suite counts, timings) on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

mod blind_kinds;
mod classifier;
mod dcg_corpus;
mod exec_policy_examples;
mod fail_closed;
mod file_gates;
mod git_options;
mod harmful_cores;
mod kind_cores;
mod private_tmp;
mod red_team;
mod red_team_outside;
mod shell_reading;

/// A file under `tests/` that this root does not declare would never be built.
#[test]
fn every_test_file_is_declared_here() {
    codesmith_testkit::assert_every_test_file_declared(env!("CARGO_MANIFEST_DIR"));
}
