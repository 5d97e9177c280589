//! Test support: the scripted model server, [`suite_dir`] for the shared test suites,
//! [`mcp_python`] for the Python MCP SDK, [`assert_every_test_file_declared`] for the
//! one-binary integration-test layout, and [`ticks_beside`] for work that must leave its
//! executor free.
//!
//! [`ScriptedServer`] is a real HTTP server on `127.0.0.1` that speaks both
//! wire dialects CodeSmith's remote providers use — OpenAI Chat Completions
//! (`POST …/chat/completions`) and Anthropic Messages (`POST …/messages`) —
//! and plays a script: a queue of [`Scripted`] model turns (text, thinking,
//! tool calls with raw argument strings, finish reason, usage, streamed as
//! SSE in small pieces) and [`Fault`]s (HTTP errors with `Retry-After`,
//! stalls, hangs, dropped connections). Every request is recorded for
//! assertions.
//!
//! ```no_run
//! # async fn demo() {
//! use codesmith_testkit::{Fault, Finish, Scripted, ScriptedServer};
//!
//! let server = ScriptedServer::start().await;
//! server
//!     .push(Fault::status(503))
//!     .push(Scripted::text("partial answer").drop_after(2))
//!     .push(Scripted::truncated_tool_call("c1", "exec_shell", r#"{"command": "rm -rf /tmp/le"#))
//!     .push(Scripted::text("hi").with_thinking("let me think").finish(Finish::Omitted));
//! let base_url = server.base_url(); // give this to the provider
//! # let _ = base_url;
//! let bodies = server.request_bodies(); // serde_json::Value per request
//! # let _ = bodies;
//! # }
//! ```

// Test support reports what it skipped or measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cache;
mod executor;
mod layout;
mod procs;
mod python;
mod script;
mod server;
mod sse;
mod suites;

pub use cache::{CacheUsage, LOOKBACK_BLOCKS};
pub use executor::ticks_beside;
pub use layout::assert_every_test_file_declared;
pub use procs::{live_processes, survivors_after};
pub use python::{mcp_python, mcp_venv};
pub use script::{Fault, Finish, MAX_PACE_MS, Reply, Scripted, ScriptedCall};
pub use server::{RecordedRequest, ScriptedServer};
pub use sse::Dialect;
pub use suites::{REQUIRE_SUITES_VAR, SUITES_DIR_VAR, missing, suite_dir, suites_root};
