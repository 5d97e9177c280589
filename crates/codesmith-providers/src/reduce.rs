//! The stream reducer: [`ProviderEvent`]s folded into one [`AssistantResponse`].
//!
//! Each call's raw argument text is kept exactly as received and also parsed
//! strictly (by [`codesmith_protocol::parse_arguments`], which also refuses a
//! key named twice); a parse failure leaves [`ReducedCall::parsed`] as `None`, the
//! "truncated" marker the engine's truncation check reads. A stream without
//! [`ProviderEvent::Completed`] yields an interrupted response; a missing wire
//! stop reason is derived.

use std::collections::BTreeMap;

use codesmith_protocol::{StopReason, ToolCall, Usage};
use serde_json::Value;

use crate::provider::ProviderEvent;

/// A tool call as received, with its strictly parsed arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ReducedCall {
    /// The call; `arguments` is the raw text, byte for byte.
    pub call: ToolCall,
    /// `arguments` parsed strictly as JSON; `None` when the text is empty,
    /// truncated, malformed or names a key twice (no repair happens here).
    pub parsed: Option<Value>,
}

/// One complete (or interrupted) model response.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantResponse {
    /// Visible text, concatenated.
    pub text: String,
    /// Thinking text, concatenated.
    pub thinking: String,
    /// Tool calls in response order.
    pub tool_calls: Vec<ReducedCall>,
    /// From the wire, derived when the wire omitted it, or
    /// [`StopReason::Interrupted`] when the stream never terminated.
    pub stop_reason: StopReason,
    /// Usage as last reported (zero when the provider reported none).
    pub usage: Usage,
    /// True when the stream ended, stalled or failed after content arrived
    /// but before its terminal signal. The content is partial; do not retry
    /// (it was billed), present it as interrupted.
    pub interrupted: bool,
    /// Why the stream was interrupted (scrubbed error text), when it was.
    pub interruption: Option<String>,
    /// True when the text is a refusal (OpenAI `refusal`), not an answer.
    pub refusal: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Folds provider events into an [`AssistantResponse`].
#[derive(Debug, Default)]
pub struct StreamReducer {
    text: String,
    thinking: String,
    calls: BTreeMap<usize, PartialCall>,
    usage: Usage,
    completed: Option<Option<StopReason>>,
    has_content: bool,
    refusal: bool,
}

impl StreamReducer {
    /// An empty reducer.
    pub fn new() -> Self {
        StreamReducer::default()
    }

    /// Folds one event in. Events after `Completed` are ignored; the last
    /// `Usage` wins (providers report cumulative figures).
    pub fn push(&mut self, event: &ProviderEvent) {
        if self.completed.is_some() {
            return;
        }
        match event {
            ProviderEvent::TextDelta(text) => {
                self.has_content = true;
                self.text.push_str(text);
            }
            ProviderEvent::ThinkingDelta(text) => {
                self.has_content = true;
                self.thinking.push_str(text);
            }
            ProviderEvent::RefusalDelta(text) => {
                self.refusal = true;
                if !text.is_empty() {
                    self.has_content = true;
                    self.text.push_str(text);
                }
            }
            ProviderEvent::ToolCallStart { index, id, name } => {
                self.has_content = true;
                let call = self.calls.entry(*index).or_default();
                call.id = id.clone();
                call.name = name.clone();
            }
            ProviderEvent::ToolCallDelta { index, arguments } => {
                self.has_content = true;
                self.calls
                    .entry(*index)
                    .or_default()
                    .arguments
                    .push_str(arguments);
            }
            ProviderEvent::Usage(usage) => self.usage = *usage,
            ProviderEvent::Notice(_) | ProviderEvent::KeepAlive => {}
            ProviderEvent::Completed { stop_reason } => {
                self.completed = Some(stop_reason.clone());
            }
        }
    }

    /// True once any text, thinking or tool-call event arrived.
    pub fn has_content(&self) -> bool {
        self.has_content
    }

    /// True once the terminal signal arrived.
    pub fn is_completed(&self) -> bool {
        self.completed.is_some()
    }

    /// The response. `max_tokens` is the request's output cap, used to
    /// derive a stop reason the wire omitted. Without `Completed` the
    /// response is marked interrupted with [`StopReason::Interrupted`].
    pub fn finish(self, max_tokens: Option<u32>) -> AssistantResponse {
        let tool_calls: Vec<ReducedCall> = self
            .calls
            .into_values()
            .map(|c| ReducedCall {
                parsed: codesmith_protocol::parse_arguments(&c.arguments).ok(),
                call: ToolCall {
                    id: c.id,
                    name: c.name,
                    arguments: c.arguments,
                },
            })
            .collect();
        let (stop_reason, interrupted) = match self.completed {
            Some(Some(reason)) => (reason, false),
            Some(None) => (
                derive_stop_reason(!tool_calls.is_empty(), &self.usage, max_tokens),
                false,
            ),
            None => (StopReason::Interrupted, true),
        };
        AssistantResponse {
            text: self.text,
            thinking: self.thinking,
            tool_calls,
            stop_reason,
            usage: self.usage,
            interrupted,
            interruption: None,
            refusal: self.refusal,
        }
    }
}

/// The stop reason when the wire gave none:
/// billed output reaching the requested cap → `MaxTokens`; a tool call seen
/// → `ToolUse`; else `EndTurn`.
pub fn derive_stop_reason(
    saw_tool_call: bool,
    usage: &Usage,
    max_tokens: Option<u32>,
) -> StopReason {
    match max_tokens {
        Some(max) if max > 0 && usage.output_tokens >= u64::from(max) => StopReason::MaxTokens,
        _ if saw_tool_call => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn start(index: usize, id: &str) -> ProviderEvent {
        ProviderEvent::ToolCallStart {
            index,
            id: id.into(),
            name: "exec_shell".into(),
        }
    }

    fn delta(index: usize, s: &str) -> ProviderEvent {
        ProviderEvent::ToolCallDelta {
            index,
            arguments: s.into(),
        }
    }

    #[test]
    fn calls_are_assembled_and_parsed_strictly() {
        let mut r = StreamReducer::new();
        r.push(&start(0, "a"));
        r.push(&delta(0, r#"{"command":"#));
        r.push(&start(1, "b"));
        r.push(&delta(1, r#"{"command": "rm -rf /tmp/leg"#));
        r.push(&delta(0, r#""ls"}"#));
        r.push(&ProviderEvent::Completed {
            stop_reason: Some(StopReason::MaxTokens),
        });
        let resp = r.finish(None);
        assert_eq!(resp.tool_calls[0].parsed, Some(json!({"command": "ls"})));
        assert_eq!(resp.tool_calls[1].parsed, None);
        assert_eq!(
            resp.tool_calls[1].call.arguments,
            r#"{"command": "rm -rf /tmp/leg"#
        );
        assert_eq!(resp.stop_reason, StopReason::MaxTokens);
        assert!(!resp.interrupted);
    }

    #[test]
    fn missing_stop_reason_is_derived() {
        let usage = |out| Usage {
            input_tokens: 1,
            output_tokens: out,
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
        };
        assert_eq!(
            derive_stop_reason(true, &usage(100), Some(100)),
            StopReason::MaxTokens
        );
        assert_eq!(
            derive_stop_reason(true, &usage(99), Some(100)),
            StopReason::ToolUse
        );
        assert_eq!(
            derive_stop_reason(false, &usage(5), None),
            StopReason::EndTurn
        );
        let mut r = StreamReducer::new();
        r.push(&start(0, "a"));
        r.push(&delta(0, "{}"));
        r.push(&ProviderEvent::Completed { stop_reason: None });
        assert_eq!(r.finish(Some(10)).stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn no_terminal_signal_means_interrupted() {
        let mut r = StreamReducer::new();
        r.push(&ProviderEvent::TextDelta("half".into()));
        assert!(r.has_content());
        let resp = r.finish(None);
        assert!(resp.interrupted);
        assert_eq!(resp.stop_reason, StopReason::Interrupted);
        assert_eq!(resp.text, "half");
    }
}
