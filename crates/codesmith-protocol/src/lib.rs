//! Neutral data types for CodeSmith.
//!
//! Everything that crosses a layer boundary lives here: the vendor-neutral
//! transcript ([`Message`], [`ContentBlock`], [`ToolCall`], [`ToolResult`]),
//! the facts of one model response ([`StopReason`], [`Usage`]), the tool
//! catalogue entry ([`ToolSpec`]), the events a front end consumes
//! ([`Event`]), the submissions it sends ([`Submission`], [`Op`]) and the typed outcome a
//! tool result carries in its events ([`ToolError`], [`ChangedFile`]). The crate has no
//! behaviour beyond serde and the one strict
//! reader of a call's argument text ([`parse_arguments`]), which every layer
//! shares so that they agree on what a call asked for.
//!
//! The transcript is vendor-neutral, so another provider can take over a session:
//! thinking is stored as plain text with no vendor signature, and a vendor dialect is
//! applied only when a request is rendered by a provider.

mod arguments;
mod event;
mod message;
mod op;
mod result;

pub use arguments::{ArgumentsError, ArgumentsErrorKind, parse_arguments};
pub use event::{
    CompactionOutcome, Event, EventSink, PlanStep, RestoreReport, StepStatus, TaskStatus,
    VerdictEvent,
};
pub use message::{
    BYTES_PER_TOKEN, ContentBlock, ImagePart, Message, Role, StopReason, ToolCall, ToolResult,
    ToolSpec, Usage, approx_tokens,
};
pub use op::{ApprovalAnswer, ApprovalRequest, Op, Submission};
pub use result::{ChangeKind, ChangedFile, ErrorCode, ToolError};
