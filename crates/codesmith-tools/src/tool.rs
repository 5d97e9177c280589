//! The tool trait.

use async_trait::async_trait;
use serde_json::Value;

use crate::{ToolContext, ToolOutcome};

/// What a tool can do to the world; sets its default approval requirement
/// (executes code: required; writes files: suggested; otherwise: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Capability {
    /// Reads the workspace only.
    ReadOnly,
    /// Writes files inside the workspace.
    WritesFiles,
    /// Reaches the network.
    Network,
    /// Runs arbitrary code.
    ExecutesCode,
}

/// One tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's name (snake_case, unique in a registry).
    fn name(&self) -> &'static str;
    /// Byte-stable description for the model: when to use it, what to use it
    /// instead of, and one or two call examples.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object. Must be byte-stable.
    fn input_schema(&self) -> Value;
    /// What the tool can do to the world.
    fn capability(&self) -> Capability;
    /// True when calls may run concurrently with other parallel-safe read-only calls.
    fn supports_parallel(&self) -> bool {
        false
    }
    /// Runs one call with already-parsed arguments.
    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome;
}
