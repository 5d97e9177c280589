//! Context recovery: what the
//! engine does when the provider says the request no longer fits the context
//! window.
//!
//! Levels, cheapest first; each refusal of the request moves one level on:
//! 1. clear the bodies of old tool results (a stub stays, so every call keeps its result);
//! 2. compaction: an LLM summary of the older turns replaces them, or, when the
//!    summary cannot be had (it failed, it overflowed too, the breaker is open),
//!    they are dropped locally;
//! 3. the least the task needs: its first user message and the latest user message
//!    (with the call it answers), everything between folded into a note;
//! 4. nothing is left to cut: the turn fails, saying the task itself is larger than
//!    the window.
//!
//! Every level keeps the first user message of the running task verbatim (its
//! identifying text, a ticket id, must survive) and the latest user message;
//! only what lies between (and earlier tasks) is summarized or dropped. The
//! last [`KEEP_TAIL`] messages are untouched until level 3, and a kept tail
//! never starts with tool results whose calls were dropped. Compaction runs
//! through a [`CircuitBreaker`] so a failing summarizer is not hammered, and the
//! summary request itself is bounded ([`MAX_SUMMARY_INPUT_BYTES`]).

use std::time::{Duration, Instant};

use codesmith_protocol::{ContentBlock, Message, Role, ToolResult};

/// Messages at the end of the transcript that recovery never rewrites.
pub(crate) const KEEP_TAIL: usize = 4;
/// What a cleared tool result says instead of its body.
pub(crate) const CLEARED_STUB: &str =
    "[tool result cleared to save context; run the tool again if you need it]";
/// Consecutive compaction failures that open the breaker.
pub(crate) const BREAKER_THRESHOLD: u32 = 3;
/// How long an open breaker waits before letting one probe through.
pub(crate) const BREAKER_COOLDOWN: Duration = Duration::from_secs(300);

/// Most bytes of transcript text sent to the summarizer (about 8k tokens); a longer
/// text keeps its head and tail with a marker between.
pub(crate) const MAX_SUMMARY_INPUT_BYTES: usize = 32 * 1024;

/// The text bytes one image is counted as in [`estimate_tokens`].
const IMAGE_BYTES: usize = (codesmith_protocol::ImagePart::ESTIMATED_TOKENS
    * codesmith_protocol::BYTES_PER_TOKEN) as usize;

/// A rough token estimate of the system prompt and the transcript
/// ([`codesmith_protocol::approx_tokens`] of their text bytes; each image counted as
/// [`codesmith_protocol::ImagePart::ESTIMATED_TOKENS`]).
pub(crate) fn estimate_tokens(system: &str, messages: &[Message]) -> u64 {
    let bytes: usize = system.len()
        + messages
            .iter()
            .flat_map(|m| &m.content)
            .map(|b| match b {
                ContentBlock::Text { text } | ContentBlock::Thinking { text } => text.len(),
                ContentBlock::ToolCall(c) => c.name.len() + c.arguments.len(),
                ContentBlock::ToolResult(r) => r.content.len() + r.images.len() * IMAGE_BYTES,
                ContentBlock::Image(_) => IMAGE_BYTES,
            })
            .sum::<usize>();
    codesmith_protocol::approx_tokens(bytes)
}

/// Stage one: replaces the bodies of tool results outside the kept tail with a
/// stub. Returns `None` when there was nothing to clear.
pub(crate) fn clear_old_tool_results(messages: &[Message]) -> Option<Vec<Message>> {
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
                    ContentBlock::ToolResult(r)
                        if r.content != CLEARED_STUB || !r.images.is_empty() =>
                    {
                        changed = true;
                        ContentBlock::ToolResult(ToolResult {
                            content: CLEARED_STUB.to_string(),
                            images: Vec::new(),
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
pub(crate) fn tail_start(messages: &[Message]) -> Option<usize> {
    let latest = messages.len().checked_sub(KEEP_TAIL)?;
    (1..=latest).rev().find(|&i| !is_tool_results(&messages[i]))
}

fn is_tool_results(m: &Message) -> bool {
    m.role == Role::User
        && m.content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult(_)))
}

/// Where the running task starts: the last user message whose content begins with that
/// of `task` (its first user message, perhaps with a compaction note added), if it is
/// still in the transcript.
pub(crate) fn task_index(messages: &[Message], task: Option<&Message>) -> Option<usize> {
    let task = task?;
    messages
        .iter()
        .rposition(|m| m.role == task.role && m.content.starts_with(&task.content))
}

/// The messages a compaction at `cut` folds away: everything before the kept tail
/// except the task's first message (at index `task`).
pub(crate) fn folded(messages: &[Message], cut: usize, task: Option<usize>) -> Vec<Message> {
    messages[..cut]
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != task)
        .map(|(_, m)| m.clone())
        .collect()
}

/// The transcript after folding everything before `cut` (except the task's first
/// message) into `note`: the task message verbatim with the note added as a second
/// text block, then the tail from `cut`. When the task message is itself in the tail,
/// the note becomes the first message. An assistant acknowledgement keeps user and
/// assistant messages alternating. `None` when nothing would be folded.
pub(crate) fn compacted(
    note: &str,
    messages: &[Message],
    cut: usize,
    task: Option<(usize, &Message)>,
) -> Option<Vec<Message>> {
    let task = task.filter(|&(t, _)| t < cut);
    let folded = cut - usize::from(task.is_some());
    if folded == 0 || cut > messages.len() {
        return None;
    }
    let note = note.trim();
    let mut out = match task {
        Some((_, original)) => {
            let mut first = original.clone();
            first.content.push(ContentBlock::Text {
                text: format!("\n{note}"),
            });
            vec![first]
        }
        None => vec![Message::user_text(note)],
    };
    if messages.get(cut).is_none_or(|m| m.role == Role::User) {
        out.push(Message::assistant_text(
            "Understood; continuing from the summary.",
        ));
    }
    out.extend_from_slice(&messages[cut..]);
    Some(out)
}

/// The note that stands for a summary of `folded` messages.
pub(crate) fn summary_note(summary: &str) -> String {
    format!(
        "[Summary of the earlier part of this session, written to fit the context window]\n{}",
        summary.trim()
    )
}

/// The note that stands for `folded` messages dropped without a summary.
pub(crate) fn trim_note(folded: usize) -> String {
    format!(
        "[{folded} earlier messages were dropped to fit the context window; their content is \
         no longer available. The task above is the original request.]"
    )
}

/// Where the least the task needs begins: the latest user message, preceded by the
/// assistant message whose calls it answers.
pub(crate) fn minimal_tail_start(messages: &[Message]) -> Option<usize> {
    let last = messages.len().checked_sub(1)?;
    if is_tool_results(&messages[last]) {
        last.checked_sub(1)
    } else {
        Some(last)
    }
}

/// The older part rendered as plain text for the summarizer, at most
/// [`MAX_SUMMARY_INPUT_BYTES`]: a longer text keeps its first and last parts.
pub(crate) fn transcript_text(messages: &[Message]) -> String {
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
                ContentBlock::Image(part) => {
                    format!("{who} attached an image ({})", part.media_type)
                }
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    bound(out, MAX_SUMMARY_INPUT_BYTES)
}

/// `text` cut to at most about `max` bytes: the first and last halves, on character
/// boundaries, with a marker saying how much was left out.
fn bound(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let half = max / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[... {} bytes of the session left out here ...]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

/// What an escalated compaction's note tells the model: the context refilled quickly.
pub(crate) const PAGING_HINT: &str = "[The context filled up again soon after the last compaction. From now on read \
files in pages (read_file with start_line and max_lines) instead of whole, narrow searches with globs and patterns, and keep command \
output short (pipe through head or tail).]";

/// Instructions for the summarizing request.
pub(crate) const SUMMARY_PROMPT: &str = "You summarize a coding session so it can continue in a smaller context. Keep: the \
user's goal and constraints, files read or changed and how, commands run and their outcomes, decisions made, and \
what remains to do. Be factual and brief; use at most 300 words. Do not call tools.";

/// A circuit breaker for compaction: after [`BREAKER_THRESHOLD`] consecutive
/// failures it opens; after [`BREAKER_COOLDOWN`] it lets a single probe
/// through. A manual `/compact` bypasses it.
#[derive(Debug, Default)]
pub(crate) struct CircuitBreaker {
    failures: u32,
    opened_at: Option<Instant>,
}

impl CircuitBreaker {
    /// True when an automatic compaction may run now.
    pub(crate) fn allows(&self, now: Instant) -> bool {
        match self.opened_at {
            None => true,
            Some(at) => now.duration_since(at) >= BREAKER_COOLDOWN,
        }
    }

    /// Opens the breaker at once: the summary request itself did not fit, so asking
    /// again before the cooldown would only overflow again.
    pub(crate) fn trip(&mut self, now: Instant) {
        self.failures = self.failures.max(BREAKER_THRESHOLD);
        self.opened_at = Some(now);
    }

    /// Records the outcome of an attempt.
    pub(crate) fn record(&mut self, ok: bool, now: Instant) {
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
                images: Vec::new(),
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
        let c = compacted("did things", &h, cut, Some((0, &h[0]))).unwrap();
        assert_eq!(c[0].role, Role::User);
        assert_eq!(c.last(), h.last());
        assert!(tail_start(&h[..4]).is_none());
    }

    #[test]
    fn every_level_keeps_the_task_message_verbatim() {
        let h = history();
        let original = Message::user_text("task");
        assert_eq!(task_index(&h, Some(&original)), Some(0));
        let task = Some((0, &original));
        let cut = tail_start(&h).unwrap();
        let c = compacted(&trim_note(cut - 1), &h, cut, task).unwrap();
        assert_eq!(task_index(&c, Some(&original)), Some(0));
        assert_eq!(c[0].content[0], h[0].content[0]);
        assert!(c[0].text().starts_with("task\n["));
        assert_eq!(c[1..], h[cut..]);
        let minimal = minimal_tail_start(&c).unwrap();
        assert_eq!(c[minimal..], h[5..], "the latest result keeps its call");
        let m = compacted(&trim_note(1), &c, minimal, task).unwrap();
        assert_eq!(m[0].content[0], h[0].content[0]);
        assert_eq!(m.last(), h.last());
        // Nothing left between the task and the latest exchange: nothing to fold.
        assert!(compacted("x", &m, minimal_tail_start(&m).unwrap(), task).is_none());
        let roles: Vec<Role> = m.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
    }

    #[test]
    fn the_summary_input_is_bounded() {
        let big = vec![Message::user_text("é".repeat(MAX_SUMMARY_INPUT_BYTES))];
        let text = transcript_text(&big);
        assert!(
            text.len() <= MAX_SUMMARY_INPUT_BYTES + 100,
            "{}",
            text.len()
        );
        assert!(text.contains("bytes of the session left out"));
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
