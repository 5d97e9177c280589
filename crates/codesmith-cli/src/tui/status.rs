//! The status line: provider and model, usage and cost, context fill, approval
//! mode, sandbox state, and the retry banner while the engine waits to retry.

use std::time::{Duration, Instant};

use codesmith_protocol::Usage;
use ratatui::text::{Line, Span};

use super::theme::Theme;

/// A retry the engine announced: shown until its wait is over or the next event arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RetryBanner {
    /// 1-based attempt number.
    pub attempt: u32,
    /// When the retry fires.
    pub until: Instant,
    /// Why the last request failed.
    pub reason: String,
}

/// What the engine is busy with: shown first on the status line, with a spinner and
/// the seconds it has taken so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Activity {
    /// What it is doing ("working", "compacting").
    pub label: &'static str,
    /// When it started.
    pub since: Instant,
}

/// Spinner frames, one per [`SPINNER_FRAME`] of elapsed time.
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// How long each spinner frame shows (the UI redraws at least this often while busy).
pub(crate) const SPINNER_FRAME: Duration = Duration::from_millis(250);

impl Activity {
    /// `⠹ compacting 3s` at `now`.
    pub(crate) fn text(&self, now: Instant) -> String {
        let elapsed = now.saturating_duration_since(self.since);
        let frame = (elapsed.as_millis() / SPINNER_FRAME.as_millis()) as usize % SPINNER.len();
        format!("{} {} {}s", SPINNER[frame], self.label, elapsed.as_secs())
    }
}

/// Everything the status line shows.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    /// Provider short name (`openai`, `anthropic`, `local`).
    pub provider: String,
    /// Model name.
    pub model: String,
    /// Usage summed over the session's rounds seen in this UI.
    pub usage: Usage,
    /// Prompt tokens of the latest round: how full the context is.
    pub context_tokens: u64,
    /// `auto`, `suggest` or `never`.
    pub approval: String,
    /// Sandbox backend name (`bwrap`, `none`).
    pub sandbox: String,
    /// Whether the backend really isolates commands on this host.
    pub isolates: bool,
    /// The retry banner, while one is pending.
    pub retry: Option<RetryBanner>,
    /// What the engine is busy with, if anything.
    pub activity: Option<Activity>,
    /// Bytes of text (answer and thinking) the model streamed in the running round: its
    /// output so far, before the round's usage arrives.
    pub streamed_bytes: usize,
}

impl Status {
    /// A status for a fresh session.
    pub(crate) fn new(
        provider: &str,
        model: &str,
        approval: &str,
        sandbox: &str,
        isolates: bool,
    ) -> Self {
        Status {
            provider: provider.to_string(),
            model: model.to_string(),
            usage: Usage::default(),
            context_tokens: 0,
            approval: approval.to_string(),
            sandbox: sandbox.to_string(),
            isolates,
            retry: None,
            activity: None,
            streamed_bytes: 0,
        }
    }

    /// The status line, fitted to `width` cells by dropping the least useful parts.
    pub(crate) fn line(&self, theme: &Theme, width: usize) -> Line<'static> {
        let mut parts = Vec::new();
        if let Some(activity) = &self.activity {
            let mut text = activity.text(Instant::now());
            // The round's output as it streams, estimated from its text until its usage
            // arrives.
            if self.streamed_bytes > 0 {
                let tokens = codesmith_protocol::approx_tokens(self.streamed_bytes);
                text.push_str(&format!(" · ↓ ~{} tok", compact(tokens)));
            }
            parts.push(text);
        }
        let first = parts.len();
        parts.push(format!("{} {}", self.provider, self.model));
        let tokens = self.usage.input_tokens + self.usage.output_tokens;
        let mut usage = format!("{} tok", compact(tokens));
        let (read, written) = (
            self.usage.cached_input_tokens,
            self.usage.cache_write_input_tokens,
        );
        if read > 0 || written > 0 {
            usage.push_str(&format!(
                " (cache {} read, {} written)",
                compact(read),
                compact(written)
            ));
        }
        if let Some(cost) = estimated_cost(&self.provider, &self.model, &self.usage) {
            usage.push_str(&format!(" ${cost:.2}"));
        }
        parts.push(usage);
        parts.push(match context_window(&self.provider, &self.model) {
            Some(window) if self.context_tokens > 0 => match self.context_tokens * 100 / window {
                0 => "ctx <1%".to_string(),
                pct => format!("ctx {}%", pct.min(100)),
            },
            _ => format!("ctx {}", compact(self.context_tokens)),
        });
        parts.push(format!("approval {}", self.approval));
        parts.push(if self.isolates {
            format!("sandbox {}", self.sandbox)
        } else {
            "no isolation".to_string()
        });
        // Too wide: drop context fill, then usage, then the approval mode.
        let mut text = parts.join(" │ ");
        for drop in [first + 2, first + 1, first + 1] {
            if text.chars().count() <= width || parts.len() <= drop + 1 {
                break;
            }
            parts.remove(drop);
            text = parts.join(" │ ");
        }
        let text: String = codesmith_policy::terminal_safe(&text)
            .chars()
            .take(width)
            .collect();
        let pad = width.saturating_sub(text.chars().count());
        Line::from(Span::styled(
            format!("{text}{}", " ".repeat(pad)),
            theme.status,
        ))
    }

    /// The retry banner text at `now`, if a retry is pending.
    pub(crate) fn retry_text(&self, now: Instant) -> Option<String> {
        let r = self.retry.as_ref()?;
        let left = r.until.saturating_duration_since(now);
        Some(format!(
            "↻ retrying (attempt {}) in {}s: {}",
            r.attempt,
            left.as_secs() + u64::from(left.subsec_millis() > 0),
            r.reason
        ))
    }

    /// Starts the retry banner for a wait of `wait_ms` from `now`.
    pub(crate) fn set_retry(&mut self, attempt: u32, wait_ms: u64, reason: &str, now: Instant) {
        self.retry = Some(RetryBanner {
            attempt,
            until: now + Duration::from_millis(wait_ms),
            // A provider's message: shown, never acted on by the terminal.
            reason: codesmith_policy::visible_line(reason, 200),
        });
    }
}

/// `1234` → `1.2k`, `2_500_000` → `2.5M`.
pub(crate) fn compact(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=99_999 => format!("{:.1}k", n as f64 / 1e3),
        100_000..=999_999 => format!("{}k", n / 1_000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// List prices of a model in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Prices {
    /// Prompt tokens billed at the full price.
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens read from the provider's prompt cache.
    pub cache_read: f64,
    /// Prompt tokens written to the prompt cache (Anthropic bills 1.25× input for its
    /// 5-minute cache; OpenAI-compatible caches charge nothing extra).
    pub cache_write: f64,
}

/// List prices for models whose price is known; `None` otherwise (the line then
/// shows tokens only). The embedded model runs locally and costs nothing.
pub(crate) fn prices(provider: &str, model: &str) -> Option<Prices> {
    if provider == "local" {
        return Some(Prices {
            input: 0.0,
            output: 0.0,
            cache_read: 0.0,
            cache_write: 0.0,
        });
    }
    // (model prefix, input, output, cache read, cache write), from the vendors' price pages.
    const TABLE: &[(&str, f64, f64, f64, f64)] = &[
        ("gpt-4.1-nano", 0.10, 0.40, 0.025, 0.10),
        ("gpt-4.1-mini", 0.40, 1.60, 0.10, 0.40),
        ("gpt-4.1", 2.00, 8.00, 0.50, 2.00),
        ("gpt-4o-mini", 0.15, 0.60, 0.075, 0.15),
        ("gpt-4o", 2.50, 10.00, 1.25, 2.50),
        ("claude-haiku-4-5", 1.00, 5.00, 0.10, 1.25),
        ("claude-sonnet-4", 3.00, 15.00, 0.30, 3.75),
        ("claude-opus-4", 15.00, 75.00, 1.50, 18.75),
        ("deepseek-chat", 0.27, 1.10, 0.07, 0.27),
    ];
    TABLE
        .iter()
        .find(|(prefix, ..)| model.starts_with(prefix))
        .map(|&(_, input, output, cache_read, cache_write)| Prices {
            input,
            output,
            cache_read,
            cache_write,
        })
}

/// The session's estimated cost in USD, when the model's price is known: cache reads
/// and writes at their own prices, the rest of the prompt at the input price.
pub(crate) fn estimated_cost(provider: &str, model: &str, usage: &Usage) -> Option<f64> {
    let p = prices(provider, model)?;
    let cached = usage.cached_input_tokens + usage.cache_write_input_tokens;
    let plain = usage.input_tokens.saturating_sub(cached);
    Some(
        (plain as f64 * p.input
            + usage.cached_input_tokens as f64 * p.cache_read
            + usage.cache_write_input_tokens as f64 * p.cache_write
            + usage.output_tokens as f64 * p.output)
            / 1e6,
    )
}

/// Context window in tokens for well-known model families.
pub(crate) fn context_window(provider: &str, model: &str) -> Option<u64> {
    if provider == "local" {
        return Some(8_192);
    }
    if model.starts_with("gpt-4.1") {
        Some(1_047_576)
    } else if model.starts_with("gpt-4o") || model.starts_with("deepseek") {
        Some(128_000)
    } else if model.starts_with("claude") {
        Some(200_000)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::theme::ThemeKind;
    use super::super::wrap::line_text;
    use super::*;

    #[test]
    fn line_is_honest_about_isolation_and_fits_80_columns() {
        let theme = Theme::new(ThemeKind::Dark);
        let mut s = Status::new("openai", "gpt-4.1-mini", "suggest", "none", false);
        s.usage = Usage {
            input_tokens: 120_000,
            output_tokens: 3_000,
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
        };
        s.context_tokens = 10_476;
        let text = line_text(&s.line(&theme, 80));
        assert_eq!(text.chars().count(), 80);
        assert!(text.contains("openai gpt-4.1-mini"), "{text}");
        assert!(text.contains("123k tok $0.05 │ ctx 1%"), "{text}");
        assert!(text.contains("no isolation"), "{text}");
        s.isolates = true;
        s.sandbox = "bwrap".into();
        assert!(line_text(&s.line(&theme, 80)).contains("sandbox bwrap"));
        // Narrow terminals drop the middle parts first.
        let narrow = line_text(&s.line(&theme, 30));
        assert!(narrow.starts_with("openai gpt-4.1-mini"), "{narrow}");
    }

    #[test]
    fn the_tokens_of_a_streaming_answer_show_while_it_streams() {
        let theme = Theme::new(ThemeKind::Dark);
        let mut s = Status::new("openai", "scripted", "suggest", "none", false);
        s.activity = Some(Activity {
            label: "working",
            since: Instant::now(),
        });
        s.streamed_bytes = 4_000;
        let text = line_text(&s.line(&theme, 120));
        assert!(text.contains("working 0s · ↓ ~1.0k tok"), "{text}");
    }

    #[test]
    fn unknown_models_show_tokens_only() {
        assert_eq!(
            estimated_cost("openai", "scripted", &Usage::default()),
            None
        );
        assert_eq!(compact(1234), "1.2k");
    }

    #[test]
    fn cache_reads_and_writes_are_shown_and_priced_apart() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 0,
            cached_input_tokens: 900_000,
            cache_write_input_tokens: 50_000,
        };
        // Sonnet: 50k at $3, 900k read at $0.30, 50k written at $3.75 (per million).
        let cost = estimated_cost("anthropic", "claude-sonnet-4-5", &usage).unwrap_or_default();
        assert!((cost - (0.15 + 0.27 + 0.1875)).abs() < 1e-9, "{cost}");
        let theme = Theme::new(ThemeKind::Dark);
        let mut s = Status::new("anthropic", "claude-sonnet-4-5", "suggest", "bwrap", true);
        s.usage = usage;
        let text = line_text(&s.line(&theme, 120));
        assert!(
            text.contains("1.0M tok (cache 900k read, 50.0k written) $0.61"),
            "{text}"
        );
    }

    #[test]
    fn retry_banner_counts_down() {
        let now = Instant::now();
        let mut s = Status::new("openai", "m", "auto", "none", false);
        s.set_retry(2, 2_500, "rate limited (429)", now);
        let text = s.retry_text(now).unwrap_or_default();
        assert_eq!(text, "↻ retrying (attempt 2) in 3s: rate limited (429)");
        assert!(s.retry_text(now + Duration::from_secs(9)).is_some());
    }
}
