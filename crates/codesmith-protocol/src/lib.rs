//! Neutral data types for CodeSmith.
//!
//! Everything that crosses a layer boundary lives here: the vendor-neutral
//! transcript ([`Message`], [`ContentBlock`], [`ToolCall`], [`ToolResult`]),
//! the facts of one model response ([`StopReason`], [`Usage`]), the tool
//! catalogue entry ([`ToolSpec`]) and the events a front end consumes
//! ([`Event`]). The crate has no behaviour beyond serde.
//!
//! The transcript is vendor-neutral (seed 002, "Takeover"): thinking is stored
//! as plain text with no vendor signature, and a vendor dialect is applied only
//! when a request is rendered by a provider.

mod event;
mod message;

pub use event::{Event, VerdictEvent};
pub use message::{ContentBlock, Message, Role, StopReason, ToolCall, ToolResult, ToolSpec, Usage};
