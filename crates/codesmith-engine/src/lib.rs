//! The CodeSmith agent loop.
//!
//! An [`Engine`] runs tasks against a provider: it renders each request from
//! the append-only [`Session`] transcript, streams the response, plans and
//! dispatches tool calls through the checks (truncation, argument and name
//! repair, loop guard, the approval gate), and appends the results. Front ends drive it
//! through its queues ([`Engine::spawn`] → [`EngineHandle`]): they send
//! [`codesmith_protocol::Submission`]s and read [`codesmith_protocol::Event`]s, and
//! approval requests are events answered by `Op::Approval`.

mod agent;
pub mod approval;
pub mod budget;
mod context;
mod dispatch;
mod early;
mod finish;
mod guard;
mod handle;
mod hooks;
pub mod plan;
pub mod prompt;
pub mod repair;
pub mod replay;
pub mod rlm;
mod runtime;
pub mod session;
mod single;
pub mod snapshot;
pub mod subagent;
pub mod verify;

pub use agent::{
    Compaction, Engine, EngineConfig, EngineError, INTERRUPTED, INTERRUPTION_NOTE, PARTIAL_MARK,
    TaskOutcome,
};
pub use approval::{Approver, NoApprover};
pub use budget::{ContextBudget, WindowSource};
pub use finish::{FinishedResult, finish_outcome};
pub use handle::{
    Approvals, EngineGone, EngineHandle, INTERRUPT_GRACE, MAX_WAITING, SUBMISSION_QUEUE, Submitter,
    TrySubmitError,
};
pub use hooks::MAX_STOP_CONTINUATIONS;
pub use plan::{PLAN_TOOL, Plan, UpdatePlan};
pub use prompt::{PromptInputs, PromptStyle, system_prompt};
pub use session::Session;
pub use single::{CallPolicy, OneCall, run_one};
pub use subagent::{AgentSettings, AgentTool, AgentType};
