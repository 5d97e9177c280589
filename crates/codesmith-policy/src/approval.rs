//! Approval modes, the combined decision for a shell command, and approval
//! fingerprints.
//!
//! [`decide`] combines the classifier, the exec-policy rules and the mode:
//!
//! 1. `Dangerous` (catastrophic literal, pipe into a shell) → `Deny`, in
//!    every mode, whatever the rules say.
//! 2. Any segment matching a `deny` rule → `Deny`.
//! 3. Any segment matching an `ask` rule → `Ask` (`Deny` in `never`).
//!    This holds in `auto` too: an explicit rule beats the mode's leniency.
//! 4. Every segment matching an `allow` rule → `Allow`, unless a
//!    redirection writes outside the workspace or the line did not parse.
//! 5. Otherwise the level decides: `Safe` and `WorkspaceSafe` run;
//!    `Ask` runs in `auto`, asks in `suggest`, is refused in
//!    `never`.

use serde::Serialize;

use crate::SafetyLevel::{self, Ask, Dangerous, WorkspaceSafe};
use crate::exec_rules::{Decision, MatchedRule, Rules};
use crate::{PathFacts, Segment, classify_command};

/// How much the user wants to be asked, ranked `Auto` (0) < `Suggest` (1)
/// < `Never` (2). A project config may only raise the rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Run everything the policy does not refuse outright.
    Auto,
    /// Ask before anything that needs approval (the default).
    Suggest,
    /// Never ask: what would need approval is refused.
    Never,
}

impl ApprovalMode {
    /// The rank used for "may only tighten" comparisons: 0, 1 or 2.
    pub fn rank(self) -> u8 {
        match self {
            ApprovalMode::Auto => 0,
            ApprovalMode::Suggest => 1,
            ApprovalMode::Never => 2,
        }
    }

    /// `auto`, `suggest` or `never`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Auto => "auto",
            ApprovalMode::Suggest => "suggest",
            ApprovalMode::Never => "never",
        }
    }

    /// Parses `auto`, `suggest` or `never` (exact, lower case); `None` for
    /// anything else, so a typo is an error for the caller, not a default.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(ApprovalMode::Auto),
            "suggest" => Some(ApprovalMode::Suggest),
            "never" => Some(ApprovalMode::Never),
            _ => None,
        }
    }
}

/// The full answer for one shell command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evaluation {
    /// Run, ask, or refuse.
    pub decision: Decision,
    /// The classifier's level for the whole line.
    pub level: SafetyLevel,
    /// Exec-policy rules that matched, per segment.
    pub matched_rules: Vec<MatchedRule>,
    /// The parsed simple commands.
    pub segments: Vec<Segment>,
    /// One sentence saying why.
    pub reason: String,
    /// False when the line could not be parsed as shell.
    pub parsed: bool,
}

impl Evaluation {
    /// True when an "always allow" grant may be offered and stored for this
    /// command: never for `Dangerous` commands or denied ones
    /// (a catastrophic command never shows the persistent tier).
    pub fn grant_persistable(&self) -> bool {
        self.level != Dangerous && self.decision != Decision::Deny
    }

    /// [`approval_fingerprint`] of `command` from this evaluation's
    /// segments, without parsing again. `command` must be the line that was
    /// evaluated.
    pub fn approval_fingerprint(&self, command: &str) -> String {
        fingerprint_from(command, &self.segments, self.parsed)
    }

    /// The arity-aware prefixes (with their widening flags) that approving this command
    /// covers, one per segment, as [`approval_fingerprint`] joins them; `None` when only
    /// the exact input can be approved (a line that did not parse, a redirection that
    /// writes outside the workspace, no segments). This is the typed value a persistent
    /// grant stores, so nothing parses a fingerprint string back.
    pub fn approval_prefixes(&self) -> Option<Vec<String>> {
        prefixes_from(&self.segments, self.parsed)
    }
}

/// Decides whether `command` runs in `workspace` under `rules` and `mode`.
/// Nothing is written; symlinks are read through [`crate::SystemPaths`],
/// which knows nothing of the task's snapshot (so deletions outside
/// regenerable build output ask). See [`decide_with`].
pub fn decide(command: &str, workspace: &str, rules: &Rules, mode: ApprovalMode) -> Evaluation {
    decide_classified(classify_command(command, workspace), rules, mode)
}

/// [`decide`] with what `facts` tells about the file system and the turn's
/// snapshot (what [`PathFacts::snapshot_holds`] answers `Some(true)` for may
/// be deleted without a prompt).
pub fn decide_with(
    command: &str,
    workspace: &str,
    rules: &Rules,
    mode: ApprovalMode,
    facts: &dyn PathFacts,
) -> Evaluation {
    decide_classified(
        crate::classify_command_with(command, workspace, facts),
        rules,
        mode,
    )
}

fn decide_classified(
    classification: crate::Classification,
    rules: &Rules,
    mode: ApprovalMode,
) -> Evaluation {
    let ruled = rules.evaluate(&classification.segments);
    let level = classification.level;
    let rule_reason = |d: Decision| {
        ruled
            .matched
            .iter()
            .find(|m| m.decision == d)
            .map(|m| {
                let why = m
                    .reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                format!("matches the {} rule `{}`{why}", d.as_str(), m.pattern)
            })
            .unwrap_or_default()
    };
    let (decision, reason) = if level == Dangerous {
        (Decision::Deny, classification.reason.clone())
    } else if ruled.decision == Some(Decision::Deny) {
        (Decision::Deny, rule_reason(Decision::Deny))
    } else if ruled.decision == Some(Decision::Ask) {
        if mode == ApprovalMode::Never {
            (
                Decision::Deny,
                format!("{}; approval mode is never", rule_reason(Decision::Ask)),
            )
        } else {
            (Decision::Ask, rule_reason(Decision::Ask))
        }
    } else if ruled.decision == Some(Decision::Allow)
        && allow_rules_cover(&classification.segments, level, classification.parsed)
    {
        (Decision::Allow, rule_reason(Decision::Allow))
    } else {
        by_level(level, mode, &classification.reason)
    };
    Evaluation {
        decision,
        level,
        matched_rules: ruled.matched,
        segments: classification.segments,
        reason,
        parsed: classification.parsed,
    }
}

/// Allow rules cover commands, not where they write or a line we could not
/// read: they apply only when no redirection leaves the workspace, the line
/// parsed, and no whole-line check raised the level above the segments.
fn allow_rules_cover(segments: &[Segment], level: SafetyLevel, parsed: bool) -> bool {
    let segment_max = segments
        .iter()
        .map(|s| s.level)
        .max()
        .unwrap_or(SafetyLevel::Safe);
    parsed && level <= segment_max && segments.iter().all(|s| s.redirect_level <= WorkspaceSafe)
}

fn by_level(level: SafetyLevel, mode: ApprovalMode, reason: &str) -> (Decision, String) {
    if level < Ask {
        return (Decision::Allow, reason.to_string());
    }
    match mode {
        ApprovalMode::Auto => (Decision::Allow, format!("{reason}; approval mode is auto")),
        ApprovalMode::Suggest => (Decision::Ask, reason.to_string()),
        ApprovalMode::Never => (Decision::Deny, format!("{reason}; approval mode is never")),
    }
}

/// Session-cache key for a refusal: the exact input, so refusing
/// `rm -rf /tmp/x` never suppresses a different command.
pub fn denial_fingerprint(command: &str) -> String {
    format!("shell-exact:{command}")
}

/// Session-cache and grant key for an approval: the arity-aware prefixes of
/// the segments joined by ` ; ` (`cargo build --release` → `cargo build`), so
/// approving `cargo build` covers `cargo build --release` but not
/// `cargo build && curl x`. Each prefix carries the segment's widening flags
/// ([`crate::widening_flags`]): `rm -rf x` → `rm -r -f`, so a grant for `rm`
/// never covers `rm -rf`, nor `git push` a `git push --force`. Falls back to the exact input when the line did
/// not parse, when a redirection writes outside the workspace, or when it
/// has no segments.
pub fn approval_fingerprint(command: &str, workspace: &str) -> String {
    let classification = classify_command(command, workspace);
    fingerprint_from(command, &classification.segments, classification.parsed)
}

fn fingerprint_from(command: &str, segments: &[Segment], parsed: bool) -> String {
    match prefixes_from(segments, parsed) {
        Some(prefixes) => format!("shell-prefix:{}", prefixes.join(" ; ")),
        None => denial_fingerprint(command),
    }
}

fn prefixes_from(segments: &[Segment], parsed: bool) -> Option<Vec<String>> {
    let exact =
        segments.is_empty() || !parsed || segments.iter().any(|s| s.redirect_level > WorkspaceSafe);
    if exact {
        return None;
    }
    Some(
        segments
            .iter()
            .map(|s| {
                let flags = crate::arity::widening_flags(&s.argv);
                if flags.is_empty() {
                    s.prefix.clone()
                } else {
                    format!("{} {}", s.prefix, flags.join(" "))
                }
            })
            .collect(),
    )
}

/// The JSON object `codesmith policy check` prints: the verdict under
/// `rules` with approval mode `suggest`, for a command run bare
/// (`private_tmp` false: its `/tmp` is the host's) or under an isolating
/// sandbox with a private `/tmp` ([`crate::PrivateTmp`]).
///
/// Shape: `{"decision": "allow"|"ask"|"deny", "level": "safe"|"workspace_safe"|
/// "requires_approval"|"dangerous", "context": "bare"|"sandboxed", "rules":
/// [{"segment", "pattern", "decision", "source", "reason"?}], "segments":
/// [{"text", "argv", "wrappers", "prefix", "level", "reason",
/// "needs_network", "depth"}], "reason": "…"}`.
pub fn check_report(
    command: &str,
    workspace: &str,
    rules: &Rules,
    private_tmp: bool,
) -> serde_json::Value {
    let evaluation = if private_tmp {
        let facts = crate::PrivateTmp(crate::SystemPaths::new());
        decide_with(command, workspace, rules, ApprovalMode::Suggest, &facts)
    } else {
        decide(command, workspace, rules, ApprovalMode::Suggest)
    };
    serde_json::json!({
        "decision": evaluation.decision,
        "level": evaluation.level,
        "context": if private_tmp { "sandboxed" } else { "bare" },
        "rules": evaluation.matched_rules,
        "segments": evaluation.segments,
        "reason": evaluation.reason,
    })
}
