//! The CodeSmith agent loop.
//!
//! An [`Engine`] runs tasks against a provider: it renders each request from
//! the append-only [`Session`] transcript, streams the response, plans and
//! dispatches tool calls through the checks (truncation, argument and name
//! repair, loop guard, the approval gate), and appends the results. Front ends consume
//! [`codesmith_protocol::Event`]s; approvals come back through an [`Approver`].

mod agent;
pub mod approval;
pub mod context;
mod dispatch;
mod gate;
pub mod guard;
pub mod prompt;
pub mod repair;
pub mod rlm;
mod runtime;
pub mod session;
mod single;
pub mod snapshot;
pub mod subagent;
pub mod verify;

pub use agent::{
    Compaction, Engine, EngineConfig, EngineError, INTERRUPTED, INTERRUPTION_NOTE, TaskOutcome,
    TaskStatus,
};
pub use approval::{ApprovalAnswer, ApprovalRequest, Approver, NoApprover};
pub use dispatch::result_text;
pub use prompt::{PromptInputs, PromptStyle, system_prompt};
pub use session::Session;
pub use single::{CallPolicy, run_one};
pub use subagent::{AgentSettings, AgentTool, AgentType};
