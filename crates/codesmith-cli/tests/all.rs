//! The integration tests of `codesmith-cli`, gathered into one test binary: one link
//! instead of one per file. Each file under `tests/` is a module here, so a test's
//! path is `FILE::NAME` (`cargo test -p codesmith-cli --test integration FILE`).

// Tests may report what they measured (suite counts, timings) on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

mod approvals;

mod config;
mod container;
mod crash;
mod doctor;
mod early_start;
mod exec;
mod extensions;
mod fim_edit;
mod fleet;
mod hooks;
mod images;
mod interactive;
mod local_model;
mod long_sessions;
mod mcp;
mod mcp_client;
mod mcp_everything;
mod mcp_http;
mod mcp_mention;
mod mcp_protocol;
mod memory;
mod model_fetch;
mod real_streams;
mod refusal_registry;
mod release;
mod sandbox;
mod sessions;
mod signals;
mod skills;
mod slop;
mod stream_guards;
mod subagents;
mod terminal_escapes;
mod tool;
mod trust;
mod tui;
mod verify;

/// A file under `tests/` that this root does not declare would never be built.
#[test]
fn every_test_file_is_declared_here() {
    codesmith_testkit::assert_every_test_file_declared(env!("CARGO_MANIFEST_DIR"));
}
