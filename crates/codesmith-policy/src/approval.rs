//! Approval modes, the combined decision for a shell command, and approval
//! fingerprints.
//!
//! [`decide`] combines the classifier, the exec-policy rules and the mode:
//!
//! 1. `Dangerous` (catastrophic literal, pipe into a shell) → `Deny`, in
//!    every mode, whatever the rules say.
//! 2. Any segment matching a `deny` rule → `Deny`. Then, in `read-only` (plan
//!    mode): `Allow` only when the policy proves the line reads only (parsed,
//!    every part `Safe`, no writing redirection; an `ask` rule still asks about
//!    such a line), else `Deny`.
//! 3. Any segment matching an `ask` rule → `Ask` (`Deny` in `never`).
//!    This holds in `auto` too: an explicit rule beats the mode's leniency.
//! 4. Every segment matching an `allow` rule → `Allow`, unless a
//!    redirection writes outside the workspace or the line did not parse.
//! 5. Otherwise the level decides: `Safe` and `WorkspaceSafe` run;
//!    `Ask` runs in `auto`, asks in `suggest` and `auto-edit`, is refused in
//!    `never`.

use serde::Serialize;

use crate::SafetyLevel::{self, Ask, Dangerous, WorkspaceSafe};
use crate::exec_rules::{Decision, MatchedRule, Rules};
use crate::{PathFacts, Segment, classify_command};

/// How much the user wants to be asked: the approval ladder.
///
/// | mode | reads | file writes | shell commands | network |
/// |---|---|---|---|---|
/// | `read-only` (plan mode) | run | refused | only those the policy proves read-only | ask |
/// | `suggest` | run | ask | run only those the policy proves read-only (or a user rule allows); ask the rest | ask |
/// | `auto-edit` (the default) | run | run, except files run later, instruction files and secrets | ask unless the policy allows | ask |
/// | `auto` | run | run | run unless the policy refuses | by policy |
/// | `never` | run | as `auto-edit` | refused unless the policy allows | refused unless allowed |
///
/// The names are Codex's (`read-only`, `auto-edit`) and Claude Code's plan mode;
/// `auto-edit` was called `suggest` before the ladder had a rung that asks before writes.
/// Parsed once, by [`std::str::FromStr`] (clap and the config file use it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Plan mode: reads run, file writes are refused, and only shell commands the
    /// policy proves read-only run.
    ReadOnly,
    /// Ask before every file write, and before anything else that needs approval.
    Suggest,
    /// File writes run (the task's snapshot can undo them) except those that outlive
    /// the session; ask before anything else that needs approval (the default).
    #[default]
    AutoEdit,
    /// Run everything the policy does not refuse outright.
    Auto,
    /// Never ask: what would need approval is refused.
    Never,
}

/// How strictly a mode treats each kind of call, higher is stricter:
/// (file writes, shell commands, network).
fn strictness(mode: ApprovalMode) -> [u8; 3] {
    match mode {
        ApprovalMode::Auto => [0, 0, 0],
        ApprovalMode::AutoEdit => [1, 1, 1],
        ApprovalMode::Suggest => [2, 1, 1],
        ApprovalMode::Never => [1, 2, 2],
        ApprovalMode::ReadOnly => [3, 3, 1],
    }
}

impl ApprovalMode {
    /// Every mode, from the loosest rung of the ladder to the strictest, then `never`
    /// (the order Shift-Tab cycles through and help texts list).
    pub const ALL: [ApprovalMode; 5] = [
        ApprovalMode::ReadOnly,
        ApprovalMode::Suggest,
        ApprovalMode::AutoEdit,
        ApprovalMode::Auto,
        ApprovalMode::Never,
    ];

    /// `read-only`, `suggest`, `auto-edit`, `auto` or `never`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::ReadOnly => "read-only",
            ApprovalMode::Suggest => "suggest",
            ApprovalMode::AutoEdit => "auto-edit",
            ApprovalMode::Auto => "auto",
            ApprovalMode::Never => "never",
        }
    }

    /// True when this mode is at least as strict as `other` for every kind of call (file
    /// writes, shell commands, network), so a project config may set it: a project may
    /// only tighten. The modes are partly ordered: `suggest` and `never` are each stricter
    /// than the other somewhere, so neither tightens the other.
    pub fn tightens(self, other: ApprovalMode) -> bool {
        let (a, b) = (strictness(self), strictness(other));
        a.iter().zip(b.iter()).all(|(x, y)| x >= y)
    }

    /// This mode, or `floor` when this one is not at least as strict.
    pub fn at_least(self, floor: ApprovalMode) -> ApprovalMode {
        if self.tightens(floor) { self } else { floor }
    }

    /// The next mode Shift-Tab moves to: `read-only` → `suggest` → `auto-edit` → `auto`
    /// → `read-only` (`never`, which is for unattended runs, goes to `read-only`).
    pub fn cycled(self) -> ApprovalMode {
        match self {
            ApprovalMode::ReadOnly => ApprovalMode::Suggest,
            ApprovalMode::Suggest => ApprovalMode::AutoEdit,
            ApprovalMode::AutoEdit => ApprovalMode::Auto,
            ApprovalMode::Auto | ApprovalMode::Never => ApprovalMode::ReadOnly,
        }
    }
}

impl std::fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not an approval mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownApprovalMode(pub String);

impl std::fmt::Display for UnknownApprovalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown approval mode {:?}: use read-only, suggest, auto-edit, auto or never",
            self.0
        )
    }
}

impl std::error::Error for UnknownApprovalMode {}

impl std::str::FromStr for ApprovalMode {
    type Err = UnknownApprovalMode;

    /// `read-only`, `suggest`, `auto-edit`, `auto` or `never` (exact, lower case; `plan`
    /// is accepted for `read-only`). Anything else is an error, never a default.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "read-only" | "plan" => Ok(ApprovalMode::ReadOnly),
            "suggest" => Ok(ApprovalMode::Suggest),
            "auto-edit" => Ok(ApprovalMode::AutoEdit),
            "auto" => Ok(ApprovalMode::Auto),
            "never" => Ok(ApprovalMode::Never),
            other => Err(UnknownApprovalMode(other.to_string())),
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
    /// True when the decision is `ask` (or `deny` in `never` mode) only because deny
    /// rules exist that the policy cannot show do not apply (see [`decide`]); neither an
    /// allow rule nor `auto` mode lifts it.
    pub deny_unchecked: bool,
    /// True when, besides, a part of the line names a program a deny rule refuses
    /// ([`Rules::may_deny`]): held even where the line is not shell (a REPL's line).
    pub deny_named: bool,
}

impl Evaluation {
    /// True when an "always allow" grant may be offered and stored for this
    /// command: never for `Dangerous` commands or denied ones
    /// (a catastrophic command never shows the persistent tier).
    pub fn grant_persistable(&self) -> bool {
        self.level != Dangerous && self.decision != Decision::Deny
    }

    /// The arity-aware prefixes (with their widening flags) that approving this command
    /// covers, one per segment (see [`approval_prefixes`]); `None` when only
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
    let mut deny_unchecked = false;
    let mut deny_named = false;
    let (decision, reason) = if level == Dangerous {
        (Decision::Deny, classification.reason.clone())
    } else if ruled.decision == Some(Decision::Deny) {
        (Decision::Deny, rule_reason(Decision::Deny))
    } else if mode == ApprovalMode::ReadOnly {
        match read_only(&classification) {
            // An `ask` rule still asks about a command proven read-only.
            (Decision::Allow, _) if ruled.decision == Some(Decision::Ask) => {
                (Decision::Ask, rule_reason(Decision::Ask))
            }
            verdict => verdict,
        }
    } else if let Some((why, named)) = unchecked_deny(&classification, rules) {
        deny_unchecked = true;
        deny_named = named;
        if mode == ApprovalMode::Never {
            (Decision::Deny, format!("{why}; approval mode is never"))
        } else {
            (Decision::Ask, why)
        }
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
        match by_level(level, mode, &classification.reason) {
            // `suggest` asks before every file write: without a rule of the user's saying
            // so, a shell command runs unasked only when the policy proves it reads only.
            (Decision::Allow, reason)
                if mode == ApprovalMode::Suggest
                    && read_only(&classification).0 != Decision::Allow =>
            {
                (
                    Decision::Ask,
                    format!(
                        "{}; approval mode is suggest, which asks before every command not \
                         proven read-only (it may write files)",
                        reason.trim_end_matches('.')
                    ),
                )
            }
            verdict => verdict,
        }
    };
    Evaluation {
        decision,
        level,
        matched_rules: ruled.matched,
        segments: classification.segments,
        reason,
        parsed: classification.parsed,
        deny_unchecked,
        deny_named,
    }
}

/// Why the deny rules cannot be said not to apply to the line, when they cannot: a part
/// may be a command a deny rule refuses ([`Rules::may_deny`]), or a part may start a
/// program the policy cannot name ([`Segment::runs_unseen`]). Such a line is asked about
/// in every approval mode that asks (`auto` included, whose asks would otherwise run in
/// the sandbox unasked) and refused where nothing is asked: a deny rule holds until the
/// policy shows it does not apply. `None` without deny rules.
fn unchecked_deny(classification: &crate::Classification, rules: &Rules) -> Option<(String, bool)> {
    if !rules.has_deny() {
        return None;
    }
    let segments = &classification.segments;
    let named = segments
        .iter()
        .find_map(|s| rules.may_deny(s).map(|r| (s, r)));
    if !classification.parsed || classification.line_note.is_some() {
        let why = classification
            .line_note
            .as_deref()
            .unwrap_or(classification.reason.as_str());
        let why = format!(
            "{}; the exec policy could not read the whole line, so the deny rules cannot be \
             checked against it and it is asked about even in auto mode; write it as plain \
             commands, or approve it",
            why.trim_end_matches('.')
        );
        return Some((why, named.is_some()));
    }
    if let Some((segment, (rule, same_program))) = named {
        let text = segment.text.trim();
        let pattern = rule.pattern_text();
        let how = if same_program {
            format!(
                "`{text}` may be `{pattern}` with words between the rule's words, which a \
                 prefix rule does not read"
            )
        } else {
            format!(
                "`{text}` is not fully understood by the exec policy and names `{pattern}`, \
                 which it may run"
            )
        };
        let why = format!(
            "{how}; the deny rule `{pattern}` cannot be said not to apply, so it is asked \
             about even in auto mode; write the command so the rule can read it, or approve it"
        );
        return Some((why, true));
    }
    let (segment, unseen) = segments
        .iter()
        .find_map(|s| s.runs_unseen.map(|why| (s, why)))?;
    let why = format!(
        "`{}`: {unseen}, so the deny rules cannot be checked against it and it is asked about \
         even in auto mode; write it so the programs it runs are named on the line, or approve \
         it",
        segment.text.trim()
    );
    Some((why, false))
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
        ApprovalMode::Suggest | ApprovalMode::AutoEdit => (Decision::Ask, reason.to_string()),
        ApprovalMode::Never | ApprovalMode::ReadOnly => {
            (Decision::Deny, format!("{reason}; approval mode is {mode}"))
        }
    }
}

/// The verdict in `read-only` (plan) mode: a command runs only when the policy proves it
/// reads only — the line parsed, every part is judged `safe` and no redirection writes —
/// and everything else is refused. Allow rules do not widen it: a rule says a command
/// may run, not that it writes nothing.
fn read_only(classification: &crate::Classification) -> (Decision, String) {
    let proven = classification.parsed
        && classification.level == SafetyLevel::Safe
        && !classification.segments.is_empty()
        && classification
            .segments
            .iter()
            .all(|s| s.level == SafetyLevel::Safe && s.redirect_level == SafetyLevel::Safe);
    if proven {
        (Decision::Allow, classification.reason.clone())
    } else {
        let why = classification.reason.trim_end_matches('.');
        (
            Decision::Deny,
            format!(
                "approval mode is read-only (plan mode), which runs only commands the exec \
                 policy proves read-only, and this one is not ({why})"
            ),
        )
    }
}

/// The arity-aware prefixes of the segments of `command` (`cargo build --release` →
/// `["cargo build"]`), which an approval of the command covers: approving `cargo build`
/// covers `cargo build --release` but not `cargo build && curl x` (a compound's list is
/// its own). Each prefix carries the segment's widening flags ([`crate::widening_flags`]):
/// `rm -rf x` → `rm -r -f`, so a grant for `rm` never covers `rm -rf`, nor `git push` a
/// `git push --force`. `None` when only the exact input can be approved: the line did not
/// parse, a redirection writes outside the workspace, it has no segments, or a segment is
/// not fully understood by the key (an environment assignment, a wrapper, an option the
/// prefix's table does not name).
pub fn approval_prefixes(command: &str, workspace: &str) -> Option<Vec<String>> {
    let classification = classify_command(command, workspace);
    prefixes_from(&classification.segments, classification.parsed)
}

fn prefixes_from(segments: &[Segment], parsed: bool) -> Option<Vec<String>> {
    let exact =
        segments.is_empty() || !parsed || segments.iter().any(|s| s.redirect_level > WorkspaceSafe);
    if exact {
        return None;
    }
    // A grant covers what the user saw: a command whose environment is set on the line or
    // through a wrapper, or with an option the key does not understand, is approved
    // exactly (its prefix would cover other commands than the one asked about).
    let understood = segments.iter().all(|s| {
        s.assignments.is_empty()
            && s.wrappers.is_empty()
            && crate::arity::key_understands(&s.prefix, &s.argv)
    });
    if !understood {
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

/// The JSON object `codesmith policy check` prints: the verdict under `rules` in approval
/// mode `mode`, for a command run bare (`private_tmp` false: its `/tmp` is the host's) or
/// under an isolating sandbox with a private `/tmp` ([`crate::PrivateTmp`]).
///
/// Shape: `{"decision": "allow"|"ask"|"deny", "mode": "auto"|…, "level": "safe"|
/// "workspace_safe"|"requires_approval"|"dangerous", "context": "bare"|"sandboxed",
/// "rules": [{"segment", "pattern", "decision", "source", "reason"?}], "segments":
/// [{"text", "argv", "wrappers", "prefix", "level", "reason", "needs_network", "depth",
/// "runs_unseen"?}], "deny_unchecked": bool, "reason": "…"}`.
pub fn check_report(
    command: &str,
    workspace: &str,
    rules: &Rules,
    private_tmp: bool,
    mode: ApprovalMode,
) -> serde_json::Value {
    let evaluation = if private_tmp {
        let facts = crate::PrivateTmp(crate::SystemPaths::new());
        decide_with(command, workspace, rules, mode, &facts)
    } else {
        decide(command, workspace, rules, mode)
    };
    serde_json::json!({
        "decision": evaluation.decision,
        "mode": mode,
        "level": evaluation.level,
        "context": if private_tmp { "sandboxed" } else { "bare" },
        "rules": evaluation.matched_rules,
        "segments": evaluation.segments,
        "deny_unchecked": evaluation.deny_unchecked,
        "reason": evaluation.reason,
    })
}
