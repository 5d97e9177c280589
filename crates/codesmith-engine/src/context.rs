//! Context recovery (seed 002, "Failures, Recovery, and Takeover"): what the
//! engine does when the provider says the request no longer fits the context
//! window.
//!
//! Stages, cheapest first, at most two per request:
//! 1. clear the bodies of old tool results (a stub stays, so every call keeps its result);
//! 2. compaction: an LLM summary of the older turns replaces them;
//! 3. when the summary cannot be had, drop the oldest turns locally.
//!
//! The last [`KEEP_TAIL`] messages are never touched, and the kept tail never
//! starts with tool results whose calls were dropped. Compaction runs through
//! a [`CircuitBreaker`] so a failing summarizer is not hammered.

use std::time::{Duration, Instant};

use codesmith_protocol::{ContentBlock, Message, Role, ToolResult};

/// Messages at the end of the transcript that recovery never rewrites.
pub const KEEP_TAIL: usize = 4;
/// What a cleared tool result says instead of its body.
pub const CLEARED_STUB: &str =
    "[tool result cleared to save context; run the tool again if you need it]";
/// Consecutive compaction failures that open the breaker.
pub const BREAKER_THRESHOLD: u32 = 3;
/// How long an open breaker waits before letting one probe through.
pub const BREAKER_COOLDOWN: Duration = Duration::from_secs(300);

/// A rough token estimate: about four bytes of text per token.
pub fn estimate_tokens(system: &str, messages: &[Message]) -> u64 {
    let bytes: usize = system.len()
        + messages
            .iter()
            .flat_map(|m| &m.content)
            .map(|b| match b {
                ContentBlock::Text { text } | ContentBlock::Thinking { text } => text.len(),
                ContentBlock::ToolCall(c) => c.name.len() + c.arguments.len(),
                ContentBlock::ToolResult(r) => r.content.len(),
            })
            .sum::<usize>();
    (bytes as u64).div_ceil(4)
}

/// Stage one: replaces the bodies of tool results outside the kept tail with a
/// stub. Returns `None` when there was nothing to clear.
pub fn clear_old_tool_results(messages: &[Message]) -> Option<Vec<Message>> {
    let protected = messages.len().saturating_sub(KEEP_TAIL);
    let mut changed = false;
    let out = messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if i >= protected {
                return m.clone();
            }
            let content = m
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::ToolResult(r) if r.content != CLEARED_STUB => {
                        changed = true;
                        ContentBlock::ToolResult(ToolResult {
                            content: CLEARED_STUB.to_string(),
                            ..r.clone()
                        })
                    }
                    other => other.clone(),
                })
                .collect();
            Message {
                role: m.role,
                content,
            }
        })
        .collect();
    changed.then_some(out)
}

/// Where the kept tail may start: at least [`KEEP_TAIL`] messages from the end,
/// on a message that is not a tool-result turn (so no result loses its call).
/// `None` when no such cut leaves anything to drop.
pub fn tail_start(messages: &[Message]) -> Option<usize> {
    let latest = messages.len().checked_sub(KEEP_TAIL)?;
    (1..=latest).rev().find(|&i| !is_tool_results(&messages[i]))
}

fn is_tool_results(m: &Message) -> bool {
    m.role == Role::User
        && m.content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult(_)))
}

/// Stage two's result: the summary as the first message, then the kept tail.
pub fn compacted(summary: &str, messages: &[Message], cut: usize) -> Vec<Message> {
    let mut out = vec![Message::user_text(format!(
        "[Summary of the earlier part of this session, written to fit the context window]\n{}",
        summary.trim()
    ))];
    if messages[cut].role == Role::User {
        out.push(Message::assistant_text(
            "Understood; continuing from the summary.",
        ));
    }
    out.extend_from_slice(&messages[cut..]);
    out
}

/// Stage three: the oldest turns dropped without a summary.
pub fn trimmed(messages: &[Message], cut: usize) -> Vec<Message> {
    compacted(
        &format!(
            "{cut} earlier messages were dropped to fit the context window; their content is no longer available."
        ),
        messages,
        cut,
    )
}

/// The older part rendered as plain text for the summarizer.
pub fn transcript_text(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        let who = if m.role == Role::User {
            "user"
        } else {
            "assistant"
        };
        for b in &m.content {
            let line = match b {
                ContentBlock::Text { text } => format!("{who}: {text}"),
                ContentBlock::Thinking { .. } => continue,
                ContentBlock::ToolCall(c) => format!("{who} called {} {}", c.name, c.arguments),
                ContentBlock::ToolResult(r) => {
                    let body: String = r.content.chars().take(2000).collect();
                    format!("tool result: {body}")
                }
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// Instructions for the summarizing request.
pub const SUMMARY_PROMPT: &str = "You summarize a coding session so it can continue in a smaller context. Keep: the \
user's goal and constraints, files read or changed and how, commands run and their outcomes, decisions made, and \
what remains to do. Be factual and brief; use at most 300 words. Do not call tools.";

/// A circuit breaker for compaction: after [`BREAKER_THRESHOLD`] consecutive
/// failures it opens; after [`BREAKER_COOLDOWN`] it lets a single probe
/// through. A manual `/compact` bypasses it.
#[derive(Debug, Default)]
pub struct CircuitBreaker {
    failures: u32,
    opened_at: Option<Instant>,
}

impl CircuitBreaker {
    /// True when an automatic compaction may run now.
    pub fn allows(&self, now: Instant) -> bool {
        match self.opened_at {
            None => true,
            Some(at) => now.duration_since(at) >= BREAKER_COOLDOWN,
        }
    }

    /// Records the outcome of an attempt.
    pub fn record(&mut self, ok: bool, now: Instant) {
        if ok {
            *self = CircuitBreaker::default();
            return;
        }
        self.failures += 1;
        if self.failures >= BREAKER_THRESHOLD {
            self.opened_at = Some(now);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use codesmith_protocol::ToolCall;

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall(ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            })],
        }
    }

    fn result(id: &str, body: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult {
                call_id: id.into(),
                content: body.into(),
                is_error: false,
            })],
        }
    }

    fn history() -> Vec<Message> {
        vec![
            Message::user_text("task"),
            call("a"),
            result("a", &"x".repeat(1000)),
            call("b"),
            result("b", "short"),
            call("c"),
            result("c", "latest"),
        ]
    }

    #[test]
    fn clearing_keeps_the_tail_and_every_result_slot() {
        let h = history();
        let cleared = clear_old_tool_results(&h).unwrap();
        assert_eq!(cleared.len(), h.len());
        assert!(
            matches!(&cleared[2].content[0], ContentBlock::ToolResult(r) if r.content == CLEARED_STUB)
        );
        assert_eq!(cleared[6], h[6]);
        assert!(estimate_tokens("", &cleared) < estimate_tokens("", &h));
        assert!(
            clear_old_tool_results(&cleared).is_none(),
            "nothing left to clear"
        );
    }

    #[test]
    fn the_tail_never_starts_with_orphan_results() {
        let h = history();
        let cut = tail_start(&h).unwrap();
        assert!(h.len() - cut >= KEEP_TAIL);
        assert!(!is_tool_results(&h[cut]));
        let c = compacted("did things", &h, cut);
        assert_eq!(c[0].role, Role::User);
        assert_eq!(c.last(), h.last());
        assert!(tail_start(&h[..4]).is_none());
    }

    #[test]
    fn the_breaker_opens_after_three_failures_and_probes_after_cooldown() {
        let mut b = CircuitBreaker::default();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(b.allows(t0));
            b.record(false, t0);
        }
        assert!(!b.allows(t0 + Duration::from_secs(10)));
        assert!(b.allows(t0 + BREAKER_COOLDOWN));
        b.record(true, t0 + BREAKER_COOLDOWN);
        assert!(b.allows(t0 + BREAKER_COOLDOWN));
    }
}
