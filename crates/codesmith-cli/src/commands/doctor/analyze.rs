//! `doctor --analyze`: one advisory model call over the findings.
//!
//! Contract: the deterministic report is
//! printed first and never changed; only warnings and errors are sent (at most
//! [`MAX_FINDINGS`], each cut to [`MAX_FINDING_CHARS`] characters); the request carries no
//! tools, so nothing can be executed; the answer is cut to [`MAX_LINES`] lines; any
//! failure, an empty answer or [`DEADLINE`] passing leaves exactly one `· analysis
//! skipped: ...` line.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::advisory::{Advisory, one_call};
use super::report::{Finding, Status};

/// Whole-call deadline.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);
/// Most findings sent.
pub(crate) const MAX_FINDINGS: usize = 40;
/// Characters kept of each finding's JSON.
pub(crate) const MAX_FINDING_CHARS: usize = 400;
/// Most lines of advice printed.
pub(crate) const MAX_LINES: usize = 15;
/// Output-token cap of the call.
pub(crate) const MAX_TOKENS: u32 = 1_600;

const SYSTEM: &str = "You review the output of `codesmith doctor`, a self-check of a \
terminal coding agent. You get the warnings and errors as JSON lines, each with a built-in \
hint. Look for causes that connect several findings (a proxy breaking the endpoint, an \
environment variable overriding a config value, a custom endpoint with an unexpected \
model). Skip findings whose hint already says everything. Give at most one concrete next \
step per finding. You cannot run anything: never claim to have run, fixed or verified \
anything. Plain text, at most 15 lines, no preamble.";

/// The user message: one JSON object per line for each warning or error.
pub(crate) fn payload(findings: &[Finding]) -> Option<String> {
    let lines: Vec<String> = findings
        .iter()
        .filter(|f| matches!(f.status, Status::Warn | Status::Error))
        .take(MAX_FINDINGS)
        .map(|f| {
            let line = json!({"id": f.id, "status": f.status.as_str(), "summary": f.summary, "hint": f.hint}).to_string();
            line.chars().take(MAX_FINDING_CHARS).collect()
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The advice section, or the one `skipped` line; always ends with a newline.
pub(crate) async fn run(findings: &[Finding], workspace: Option<&Path>) -> String {
    let Some(user) = payload(findings) else {
        return "· analysis skipped: no warnings or errors to analyze\n".to_string();
    };
    let ask = Advisory {
        workspace,
        system: SYSTEM.to_string(),
        user,
        max_tokens: MAX_TOKENS,
        deadline: DEADLINE,
    };
    match one_call(ask).await {
        Ok(text) => render(&text),
        Err(why) => format!("· analysis skipped: {}\n", one_line(&why)),
    }
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    joined.chars().take(200).collect()
}

/// The advice under a heading, cut to [`MAX_LINES`] non-blank lines.
pub(crate) fn render(text: &str) -> String {
    let mut out = String::from("\nAnalysis (advice from the model; nothing was run or changed):\n");
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(MAX_LINES)
    {
        out.push_str("  ");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_problems_are_sent_and_cut() {
        let findings = vec![
            Finding::new("version", Status::Ok, "fine"),
            Finding::new("keys.openai", Status::Error, "x".repeat(1000)).hint("set it"),
        ];
        let p = payload(&findings).unwrap_or_default();
        assert_eq!(p.lines().count(), 1);
        assert_eq!(p.chars().count(), MAX_FINDING_CHARS);
        assert!(payload(&findings[..1]).is_none());
    }

    #[test]
    fn advice_is_capped_at_fifteen_lines() {
        let text: String = (0..30).map(|i| format!("line {i}\n\n")).collect();
        let r = render(&text);
        assert_eq!(
            r.lines().filter(|l| l.starts_with("  line")).count(),
            MAX_LINES
        );
    }
}
