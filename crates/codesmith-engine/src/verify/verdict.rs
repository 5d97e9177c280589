//! The verdict four-tuple: conclusion, dimension, evidence
//! location, failure type; and how it is rendered as a runtime event.

use serde::Serialize;
use serde_json::json;

use super::claim::ClaimKind;

/// Tag that marks a runtime event in the transcript.
pub const RUNTIME_EVENT_OPEN: &str = "<runtime_event type=\"verdict\">";
/// Closing tag of a runtime event.
pub const RUNTIME_EVENT_CLOSE: &str = "</runtime_event>";

/// Longest output head kept as evidence, in characters.
pub const OUTPUT_HEAD_CHARS: usize = 1_000;
/// Most output lines kept as evidence.
pub const OUTPUT_HEAD_LINES: usize = 20;

/// The conclusion of one claim check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// The replay exited 0: the claim stands.
    VerifiedPass,
    /// The replay exited non-zero, or the task's latest run of the
    /// verification command did and no later run passed: the claim is
    /// contradicted.
    VerifiedFail,
    /// The replay could not run (timeout, denial, tool unavailable). Never
    /// counted as pass or fail.
    VerifyError,
    /// A claim with no verification command behind it in this task; nothing
    /// is replayed.
    Unsubstantiated,
}

impl VerdictKind {
    /// The snake_case name used in events and the ledger.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::VerifiedPass => "verified_pass",
            VerdictKind::VerifiedFail => "verified_fail",
            VerdictKind::VerifyError => "verify_error",
            VerdictKind::Unsubstantiated => "unsubstantiated",
        }
    }
}

/// Where the evidence came from and what it showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// The replayed command, verbatim.
    pub command: String,
    /// The id of the original tool call that ran it.
    pub call_id: String,
    /// Exit code of the replay (or of the failing run that needed none), when
    /// it ran to completion.
    pub exit_code: Option<i32>,
    /// The first lines of the replay's output (at most [`OUTPUT_HEAD_LINES`]
    /// lines and [`OUTPUT_HEAD_CHARS`] characters).
    pub output_head: String,
}

/// One verdict on a success claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The conclusion.
    pub verdict: VerdictKind,
    /// The dimension judged; always `result` (the outcome layer).
    pub dimension: &'static str,
    /// What was claimed (`tests` or `build`).
    pub claim_kind: ClaimKind,
    /// The claim sentence.
    pub claim: String,
    /// The replay's evidence; `None` for an unsubstantiated claim.
    pub evidence: Option<Evidence>,
    /// `test-failure`, `build-failure`, `timeout`, `denied`, `could-not-run`
    /// or `no-evidence`; `None` for a pass.
    pub failure_type: Option<&'static str>,
    /// One plain sentence for the model and the person.
    pub note: String,
}

impl Verdict {
    /// The verdict as a user-message text: a marked runtime event holding
    /// the verdict as JSON. It is evidence, not an instruction.
    pub fn runtime_event_text(&self) -> String {
        let body = json!({
            "verdict": self.verdict,
            "dimension": self.dimension,
            "claim_kind": self.claim_kind,
            "claim": self.claim,
            "evidence": self.evidence,
            "failure_type": self.failure_type,
            "note": self.note,
        });
        format!("{RUNTIME_EVENT_OPEN}{body}{RUNTIME_EVENT_CLOSE}")
    }

    /// The front-end event for this verdict.
    pub fn event(&self) -> codesmith_protocol::VerdictEvent {
        codesmith_protocol::VerdictEvent {
            verdict: self.verdict.as_str().to_string(),
            claim: self.claim.clone(),
            command: self.evidence.as_ref().map(|e| e.command.clone()),
            exit_code: self.evidence.as_ref().and_then(|e| e.exit_code),
        }
    }
}

/// The head of `output`: at most [`OUTPUT_HEAD_LINES`] lines and
/// [`OUTPUT_HEAD_CHARS`] characters.
pub fn output_head(output: &str) -> String {
    let lines: Vec<&str> = output.lines().take(OUTPUT_HEAD_LINES).collect();
    lines.join("\n").chars().take(OUTPUT_HEAD_CHARS).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_event_is_marked_json() {
        let v = Verdict {
            verdict: VerdictKind::VerifiedFail,
            dimension: "result",
            claim_kind: ClaimKind::Tests,
            claim: "all tests pass".into(),
            evidence: Some(Evidence {
                command: "make test".into(),
                call_id: "c1".into(),
                exit_code: Some(2),
                output_head: "FAIL".into(),
            }),
            failure_type: Some("test-failure"),
            note: "n".into(),
        };
        let text = v.runtime_event_text();
        let inner = text
            .strip_prefix(RUNTIME_EVENT_OPEN)
            .and_then(|t| t.strip_suffix(RUNTIME_EVENT_CLOSE))
            .unwrap();
        let parsed: serde_json::Value = serde_json::from_str(inner).unwrap();
        assert_eq!(parsed["verdict"], "verified_fail");
        assert_eq!(parsed["evidence"]["call_id"], "c1");
        assert_eq!(parsed["evidence"]["exit_code"], 2);
        assert_eq!(parsed["failure_type"], "test-failure");
        assert_eq!(v.event().exit_code, Some(2));
    }

    #[test]
    fn the_output_head_is_bounded() {
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        assert_eq!(output_head(&long).lines().count(), OUTPUT_HEAD_LINES);
        assert!(output_head(&"x".repeat(5000)).chars().count() <= OUTPUT_HEAD_CHARS);
    }
}
