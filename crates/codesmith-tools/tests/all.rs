//! The integration tests of `codesmith-tools`, gathered into one test binary: one link
//! instead of one per file. Each file under `tests/` is a module here, so a test's
//! path is `FILE::NAME` (`cargo test -p codesmith-tools --test integration FILE`).

// Tests may report what they measured (suite counts, timings) on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

mod apply_patch;
mod boundary;
mod detached;
mod drift;
mod executor;
mod fetch_url;
mod file_modes;
mod file_tools;
mod host_programs;
mod lsp;
mod sandbox_bwrap;
mod shell;
mod ssrf_suite;
mod web_search;

/// A file under `tests/` that this root does not declare would never be built.
#[test]
fn every_test_file_is_declared_here() {
    codesmith_testkit::assert_every_test_file_declared(env!("CARGO_MANIFEST_DIR"));
}
