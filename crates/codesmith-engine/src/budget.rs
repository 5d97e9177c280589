//! The context budget: how large the model's context window is, how full the next request
//! will make it, and when to compact before sending it.
//!
//! The window comes, first found first: from `--context-window N`, from `context_window`
//! in the provider's config section, from what the server reports, from a built-in table
//! of common models ([`table_window`]), or else it is a conservative guess
//! ([`GUESSED_WINDOW`]) that front ends label as one.
//!
//! The fill of the next request is the provider's reported input and output tokens of
//! the previous request plus an estimate of what was appended since (the JSON bytes of
//! the new messages, about four bytes per token, [`codesmith_protocol::approx_tokens`]).
//! A reported figure that is implausibly small against the estimate of the same prefix
//! (a server that does not count) is ignored for the estimate. Each message's size is
//! computed once, so a turn's decision costs the new messages only.

use codesmith_protocol::{Message, Usage, approx_tokens};
use serde::{Deserialize, Serialize};

/// The window assumed when nothing says what it is: small enough for most models served
/// today, so compaction comes early rather than too late.
pub const GUESSED_WINDOW: u64 = 32_768;
/// The default compaction threshold, in percent of the window.
pub const DEFAULT_COMPACT_AT_PERCENT: u8 = 80;

/// Where a model's context window figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `--context-window N`.
    Flag,
    /// `context_window` in the config.
    Config,
    /// The server's model listing or properties.
    Server,
    /// The built-in table of common models.
    Table,
    /// Nothing said: [`GUESSED_WINDOW`].
    Guess,
}

impl WindowSource {
    /// `flag`, `config`, `server`, `table` or `guess`.
    pub fn as_str(self) -> &'static str {
        match self {
            WindowSource::Flag => "flag",
            WindowSource::Config => "config",
            WindowSource::Server => "server",
            WindowSource::Table => "table",
            WindowSource::Guess => "guess",
        }
    }
}

/// The model's context window and the share of it at which the engine compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextBudget {
    /// The window in tokens (input and output together), at least 1.
    pub window: u64,
    /// Where [`ContextBudget::window`] came from.
    pub source: WindowSource,
    /// Compact before a request whose input would pass this percentage of the window
    /// (1 to 100; `compact_at`, default [`DEFAULT_COMPACT_AT_PERCENT`]).
    pub compact_at_percent: u8,
}

impl Default for ContextBudget {
    fn default() -> Self {
        ContextBudget {
            window: GUESSED_WINDOW,
            source: WindowSource::Guess,
            compact_at_percent: DEFAULT_COMPACT_AT_PERCENT,
        }
    }
}

impl ContextBudget {
    /// The window for `model`, from the first source that knows it (see the module docs).
    pub fn resolve(
        model: &str,
        flag: Option<u64>,
        config: Option<u64>,
        server: Option<u64>,
        compact_at_percent: u8,
    ) -> ContextBudget {
        let (window, source) = flag
            .map(|w| (w, WindowSource::Flag))
            .or(config.map(|w| (w, WindowSource::Config)))
            .or(server.map(|w| (w, WindowSource::Server)))
            .or(table_window(model).map(|w| (w, WindowSource::Table)))
            .unwrap_or((GUESSED_WINDOW, WindowSource::Guess));
        ContextBudget {
            window: window.max(1),
            source,
            compact_at_percent: compact_at_percent.clamp(1, 100),
        }
    }

    /// Input tokens past which the engine compacts before sending.
    pub fn threshold(&self) -> u64 {
        self.window
            .saturating_mul(u64::from(self.compact_at_percent))
            / 100
    }
}

/// The context windows of common models, by name prefix (case-insensitive, after a
/// router's `vendor/` prefix): the vendors' published figures.
pub fn table_window(model: &str) -> Option<u64> {
    const TABLE: &[(&str, u64)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("codex-mini", 200_000),
        ("claude", 200_000),
        ("deepseek", 128_000),
        ("qwen3-coder", 262_144),
        ("qwen2.5-coder", 32_768),
        ("qwen", 32_768),
        ("llama-3", 131_072),
        ("llama3", 131_072),
        ("mistral-large", 131_072),
        ("codestral", 256_000),
        ("mistral", 32_768),
        ("gemma3", 131_072),
        ("gemma-3", 131_072),
        ("gemini", 1_048_576),
        ("kimi-k2", 131_072),
        ("glm-4", 131_072),
    ];
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    TABLE
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|&(_, window)| window)
}

/// How full the next request is, kept turn by turn (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Fill {
    /// JSON bytes of each transcript message counted so far (the transcript's prefix).
    sizes: Vec<u64>,
    /// The provider's figure for the request that ended with the message at this index
    /// (exclusive), and the tokens it reported.
    reported: Option<(usize, u64)>,
}

impl Fill {
    /// The transcript was rewritten (a compaction): count it afresh.
    pub(crate) fn reset(&mut self) {
        *self = Fill::default();
    }

    /// Counts messages appended since the last call.
    fn sync(&mut self, messages: &[Message]) {
        if messages.len() < self.sizes.len() {
            self.reset();
        }
        for m in &messages[self.sizes.len()..] {
            let bytes = serde_json::to_string(m).map_or(0, |t| t.len());
            self.sizes.push(bytes as u64);
        }
    }

    /// Records the usage the provider reported for the request whose answer is now the
    /// last message of `messages`.
    pub(crate) fn reported(&mut self, usage: &Usage, messages: &[Message]) {
        self.sync(messages);
        let tokens = usage.input_tokens.saturating_add(usage.output_tokens);
        self.reported = (tokens > 0).then_some((messages.len(), tokens));
    }

    /// Tokens of the next request: `fixed_bytes` (system prompt and tool catalogue) plus
    /// `messages`, from the last reported figure when it is plausible.
    pub(crate) fn tokens(&mut self, fixed_bytes: u64, messages: &[Message]) -> u64 {
        self.sync(messages);
        let bytes = |range: &[u64]| range.iter().sum::<u64>();
        let whole = approx_tokens((fixed_bytes + bytes(&self.sizes)) as usize);
        match self.reported {
            Some((at, tokens)) if at <= self.sizes.len() => {
                let prefix = approx_tokens((fixed_bytes + bytes(&self.sizes[..at])) as usize);
                // A server that does not count (or counts only part) is not believed.
                if tokens.saturating_mul(2) < prefix {
                    return whole;
                }
                tokens + approx_tokens(bytes(&self.sizes[at..]) as usize)
            }
            _ => whole,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_first_source_that_knows_wins() {
        let b = ContextBudget::resolve("gpt-4o-mini", Some(12_000), Some(50_000), None, 80);
        assert_eq!((b.window, b.source), (12_000, WindowSource::Flag));
        assert_eq!(b.threshold(), 9_600);
        let b = ContextBudget::resolve("gpt-4o-mini", None, Some(50_000), Some(7), 80);
        assert_eq!(b.source, WindowSource::Config);
        let b =
            ContextBudget::resolve("openrouter/anthropic/claude-sonnet-4", None, None, None, 80);
        assert_eq!((b.window, b.source), (200_000, WindowSource::Table));
        let b = ContextBudget::resolve("my-finetune", None, None, None, 0);
        assert_eq!((b.window, b.source), (GUESSED_WINDOW, WindowSource::Guess));
        assert_eq!(b.compact_at_percent, 1);
    }

    /// The per-turn decision on a 300-call transcript of ~2 KB results: the count of the
    /// next request, made once per round before it is sent.
    #[test]
    #[allow(clippy::print_stdout)] // reports what it measured
    fn a_turns_decision_takes_well_under_a_millisecond() {
        use codesmith_protocol::{ContentBlock, Role, ToolCall, ToolResult};
        let budget = ContextBudget::resolve("gpt-4.1", None, None, None, 80);
        let mut fill = Fill::default();
        let mut messages = vec![Message::user_text("the task")];
        let started = std::time::Instant::now();
        let mut over = 0;
        for i in 0..300 {
            messages.push(Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolCall(ToolCall {
                    id: format!("c{i}"),
                    name: "read_file".into(),
                    arguments: format!(r#"{{"path": "big.txt", "max_lines": {i}}}"#),
                })],
            });
            messages.push(Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult(ToolResult {
                    call_id: format!("c{i}"),
                    content: "x".repeat(2048),
                    is_error: false,
                    images: Vec::new(),
                })],
            });
            if fill.tokens(30_000, &messages) > budget.threshold() {
                over += 1;
            }
        }
        let per_turn = started.elapsed() / 300;
        println!("compaction decision, 300-call transcript of 2 KB results: {per_turn:?} per turn");
        assert_eq!(over, 0);
        assert!(
            per_turn < std::time::Duration::from_millis(1),
            "{per_turn:?}"
        );
    }

    #[test]
    fn reported_usage_plus_the_appended_estimate() {
        let mut fill = Fill::default();
        let mut messages = vec![Message::user_text("x".repeat(4000))];
        let estimate = fill.tokens(0, &messages);
        assert!((1000..1100).contains(&estimate), "{estimate}");
        messages.push(Message::assistant_text("ok"));
        fill.reported(
            &Usage {
                input_tokens: 1500,
                output_tokens: 10,
                ..Usage::default()
            },
            &messages,
        );
        assert_eq!(fill.tokens(0, &messages), 1510);
        messages.push(Message::user_text("y".repeat(400)));
        let next = fill.tokens(0, &messages);
        assert!((1610..1630).contains(&next), "{next}");
        // A server that reports 10 tokens for all that is not believed.
        fill.reported(
            &Usage {
                input_tokens: 10,
                ..Usage::default()
            },
            &messages,
        );
        assert!(fill.tokens(0, &messages) > 1100);
    }
}
