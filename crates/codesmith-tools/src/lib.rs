//! CodeSmith's tools.
//!
//! Every tool implements [`Tool`] and answers with a [`ToolOutcome`]: either a
//! [`ToolOutput`] or a typed [`Refusal`]. Both serialize into one envelope
//! (`{"ok": true, "output", "meta"}` or `{"ok": false, "error": {code, message, hint, details}}`)
//! that the model reads. The [`Registry`] holds the catalogue sorted by name.

mod builtin;
mod context;
pub mod deferred;
mod envelope;
pub mod extensions;
pub mod fetch;
pub mod files;
pub mod fs;
pub mod hooks;
pub mod host_programs;
pub mod image;
pub mod instructions;
pub mod lsp;
pub mod mcp;
pub mod memory;
pub mod private;
mod registry;
pub mod sandbox;
pub mod sanitize;
pub mod search;
pub mod shell;
pub mod skills;
pub mod slop;
pub mod spill;
pub mod syntax_check;
mod tool;
pub mod trust;

pub use builtin::{builtin_registry, builtin_tools};
pub use context::{ChildUsage, LiveOutput, ToolContext};
pub use envelope::{
    ErrorCode, Refusal, SHA256_PREFIX_LEN, ToolOutcome, ToolOutput, envelope_json, model_text,
    stored_refusal,
};
pub use files::{file_tools, register_file_tools};
pub use registry::{LateAdded, LateTools, Registry};
pub use tokio_util::sync::CancellationToken;
pub use tool::{Capability, McpTrust, Tool, ToolOrigin, call_tool, cancelled};
