//! Exec-policy rules: prefix rules with wildcard tokens, each `allow`, `ask`
//! or `deny`, indexed by program name.
//!
//! The caller reads the files and passes their text: the user's
//! `$CODESMITH_HOME/policy.toml` as [`RuleSource::User`] and the project's
//! `.codesmith/policy.toml` as [`RuleSource::Project`]. A project is
//! untrusted: its `allow` rules are dropped with a warning, so cloning a
//! repository can add caution but never remove it.
//!
//! ```toml
//! [[rule]]
//! pattern = "git status"          # or ["git", "status"]
//! decision = "allow"              # allow | ask | deny
//! reason = "read-only"            # optional, shown to the user
//!
//! [[rule]]
//! pattern = "cargo *"             # `*` matches exactly one word
//! decision = "allow"
//! ```
//!
//! A rule matches one simple command when its words equal the command's
//! first words (`*` matching any single word); the command may have more
//! words after them. Rules are matched per segment, so a wildcard never
//! crosses `&&`, `||`, `;`, `|` or `&`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::Segment;

/// The three-valued exec-policy verdict, ordered so the combined verdict
/// of several matches is `.max()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Decision {
    /// Run without asking.
    #[serde(rename = "allow")]
    Allow,
    /// Ask a person first (refused when the approval mode is `never`).
    #[serde(rename = "ask")]
    Ask,
    /// Refuse without asking.
    #[serde(rename = "deny")]
    Deny,
}

impl Decision {
    /// `allow`, `ask` or `deny`, as written in rule files and JSON reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// Where a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleSource {
    /// The user's own policy file (trusted).
    User,
    /// The project's policy file (untrusted: `allow` rules are ignored).
    Project,
    /// Added by code, for example built-in defaults or tests (trusted).
    Builtin,
}

/// One prefix rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Words to match against the start of a simple command; `*` matches
    /// exactly one word. Never empty; the first word is never `*`.
    pub pattern: Vec<String>,
    /// What to do when it matches.
    pub decision: Decision,
    /// Optional explanation from the rule file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where it came from.
    pub source: RuleSource,
}

impl Rule {
    /// True when the rule's words match the start of `argv`.
    pub fn matches<S: AsRef<str>>(&self, argv: &[S]) -> bool {
        self.pattern.len() <= argv.len()
            && self
                .pattern
                .iter()
                .zip(argv)
                .all(|(p, a)| p == "*" || p == a.as_ref())
    }

    /// The pattern words joined by spaces.
    pub fn pattern_text(&self) -> String {
        self.pattern.join(" ")
    }
}

/// A rule file that could not be used. Nothing from that file is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesError {
    /// Which file.
    pub source: RuleSource,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl std::fmt::Display for RulesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = match self.source {
            RuleSource::User => "user policy file ($CODESMITH_HOME/policy.toml)",
            RuleSource::Project => "project policy file (.codesmith/policy.toml)",
            RuleSource::Builtin => "built-in policy",
        };
        write!(f, "invalid {file}: {}", self.message)
    }
}

impl std::error::Error for RulesError {}

/// The rule set, indexed by program name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    by_program: HashMap<String, Vec<Rule>>,
}

/// One segment's match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatchedRule {
    /// Index of the segment in the classification.
    pub segment: usize,
    /// The rule's pattern, words joined by spaces.
    pub pattern: String,
    /// The rule's decision.
    pub decision: Decision,
    /// Where the rule came from.
    pub source: RuleSource,
    /// The rule's reason, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What the rules say about a whole command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuleEvaluation {
    /// `Deny` if any segment is denied; else `Ask` if any segment
    /// matched an `ask` rule; else `Allow` if every segment is allowed; else
    /// `None` (the rules have no opinion and the classifier decides).
    pub decision: Option<Decision>,
    /// Every rule that matched, in segment order.
    pub matched: Vec<MatchedRule>,
    /// Per segment: the strongest matching decision, if any.
    pub per_segment: Vec<Option<Decision>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    pattern: RawPattern,
    decision: String,
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawPattern {
    Text(String),
    Words(Vec<String>),
}

impl Rules {
    /// An empty rule set (the classifier alone decides).
    pub fn new() -> Self {
        Rules::default()
    }

    /// Builds the rule set from the user's and the project's file text
    /// (either may be absent). Returns the rules and the warnings to show
    /// (ignored project `allow` rules).
    ///
    /// # Errors
    /// [`RulesError`] when a file is not valid TOML, has unknown keys, an
    /// empty pattern, a pattern starting with `*`, or a decision other than
    /// `allow`, `ask` or `deny`.
    pub fn from_sources(
        user: Option<&str>,
        project: Option<&str>,
    ) -> Result<(Rules, Vec<String>), RulesError> {
        let mut rules = Rules::new();
        let mut warnings = Vec::new();
        if let Some(text) = user {
            warnings.extend(rules.add_toml(text, RuleSource::User)?);
        }
        if let Some(text) = project {
            warnings.extend(rules.add_toml(text, RuleSource::Project)?);
        }
        Ok((rules, warnings))
    }

    /// Parses one rule file and adds its rules. All or nothing: on error no
    /// rule of this file is added. Returns warnings for ignored rules.
    ///
    /// # Errors
    /// See [`Rules::from_sources`].
    pub fn add_toml(&mut self, text: &str, source: RuleSource) -> Result<Vec<String>, RulesError> {
        let error = |message: String| RulesError { source, message };
        let file: RuleFile =
            toml::from_str(text).map_err(|e| error(e.to_string().trim().to_string()))?;
        let mut accepted = Vec::new();
        let mut warnings = Vec::new();
        for (index, raw) in file.rule.into_iter().enumerate() {
            let pattern: Vec<String> = match raw.pattern {
                RawPattern::Text(text) => text.split_whitespace().map(str::to_string).collect(),
                RawPattern::Words(words) => words,
            };
            let decision = match raw.decision.as_str() {
                "allow" => Decision::Allow,
                "ask" => Decision::Ask,
                "deny" => Decision::Deny,
                other => {
                    return Err(error(format!(
                        "rule {}: decision {other:?} is not one of \"allow\", \"ask\", \"deny\"",
                        index + 1
                    )));
                }
            };
            let rule = Rule {
                pattern,
                decision,
                reason: raw.reason,
                source,
            };
            validate(&rule).map_err(|m| error(format!("rule {}: {m}", index + 1)))?;
            if source == RuleSource::Project && decision == Decision::Allow {
                warnings.push(format!(
                    "ignored allow rule `{}` from the project policy: a project may add ask and deny rules but never allow",
                    rule.pattern_text()
                ));
                continue;
            }
            accepted.push(rule);
        }
        for rule in accepted {
            self.insert(rule);
        }
        Ok(warnings)
    }

    fn insert(&mut self, rule: Rule) {
        let program = rule.pattern[0].clone();
        self.by_program.entry(program).or_default().push(rule);
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.by_program.values().map(Vec::len).sum()
    }

    /// True when there are no rules.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rules that match the simple command `argv`.
    pub fn matching<S: AsRef<str>>(&self, argv: &[S]) -> Vec<&Rule> {
        let Some(program) = argv.first() else {
            return Vec::new();
        };
        self.by_program
            .get(program.as_ref())
            .map(|rules| rules.iter().filter(|r| r.matches(argv)).collect())
            .unwrap_or_default()
    }

    /// True when at least one rule refuses (`deny`).
    pub fn has_deny(&self) -> bool {
        self.deny_rules().next().is_some()
    }

    fn deny_rules(&self) -> impl Iterator<Item = &Rule> {
        self.by_program
            .values()
            .flatten()
            .filter(|r| r.decision == Decision::Deny)
    }

    /// The same rules without the `deny` ones: for text that is not shell (a line typed
    /// into a Python REPL), where a deny rule has no program to read.
    pub fn without_deny(&self) -> Rules {
        let mut out = Rules::new();
        for rule in self.by_program.values().flatten() {
            if rule.decision != Decision::Deny {
                out.insert(rule.clone());
            }
        }
        out
    }

    /// The `deny` rule `segment` may fall under although its words do not match the rule
    /// exactly, so the rule cannot be said not to apply. Only a segment the exec policy does
    /// not fully understand (level `ask` or above) is read this way; one it understands is
    /// judged by exact matches alone (`git log --grep push` is not `git push`):
    ///
    /// - it runs the rule's program with other words between the rule's words (`git -C .
    ///   push` for `git push`; options before a sub-command are not read by a prefix rule);
    ///   or
    /// - one of its words names the rule's program, followed by the rule's other words, so
    ///   it may run it (`watch touch x`, `alias t=touch`, `git -c alias.p=push p`). Words
    ///   are split at spaces and shell punctuation, a path counts by its last component
    ///   (`/usr/bin/touch`), and a word (or the value after `=` in it) is also read as the
    ///   script a shell would make of it, so quotes and escapes do not hide a name
    ///   (`trap 't\ouch x' EXIT`, `su -c "tou''ch x"`).
    ///
    /// Returns the rule and whether the segment runs the rule's program itself (the first
    /// case) or only names it (the second). `None` when no deny rule is in reach. Exact
    /// matches are [`Rules::evaluate`]'s.
    pub fn may_deny(&self, segment: &Segment) -> Option<(&Rule, bool)> {
        if segment.level < crate::SafetyLevel::Ask {
            return None;
        }
        let mut words: Vec<String> = segment.argv.clone();
        words.push(segment.text.clone());
        for word in segment.argv.iter().skip(1) {
            let value = word.split_once('=').map_or(word.as_str(), |(_, v)| v);
            // Only a word a shell would read differently from its text needs the parse:
            // one with blanks, quotes, escapes or shell punctuation.
            let plain =
                |w: &str| !w.contains(|c: char| c.is_whitespace() || SCRIPT_CHARS.contains(&c));
            if plain(word) {
                continue;
            }
            for script in [word.as_str(), value] {
                if script.len() > MAX_SCRIPT_WORD || plain(script) {
                    continue;
                }
                let nested = crate::classify_command(script, "/");
                words.extend(nested.segments.into_iter().flat_map(|s| s.argv));
            }
        }
        let tokens: Vec<&str> = words
            .iter()
            .flat_map(|word| word.split(|c: char| c.is_whitespace() || SPLIT_AT.contains(&c)))
            .filter(|t| !t.is_empty())
            .map(|t| t.rsplit('/').next().unwrap_or(t))
            .collect();
        self.deny_rules().find_map(|rule| {
            let (program, rest) = rule.pattern.split_first()?;
            let rest: Vec<&str> = rest
                .iter()
                .map(String::as_str)
                .filter(|w| *w != "*")
                .collect();
            // `git-push` (git's own program for a sub-command, run by path) is `git push`.
            let dashed = rest.first().is_some_and(|sub| {
                segment.argv.first().is_some_and(|p| {
                    p.rsplit('/').next() == Some(format!("{program}-{sub}").as_str())
                })
            });
            let same_program = (segment.argv.first().is_some_and(|p| p == program)
                && is_subsequence(&rest, segment.argv[1..].iter().map(String::as_str)))
                || (dashed
                    && is_subsequence(&rest[1..], segment.argv[1..].iter().map(String::as_str)));
            let names_it = tokens.iter().enumerate().any(|(at, t)| {
                t == program && is_subsequence(&rest, tokens[at + 1..].iter().copied())
            });
            (same_program || names_it).then_some((rule, same_program))
        })
    }

    /// Applies the rules to every segment of a classified command line.
    pub fn evaluate(&self, segments: &[Segment]) -> RuleEvaluation {
        let mut out = RuleEvaluation::default();
        for (index, segment) in segments.iter().enumerate() {
            let mut matched = self.matching(&segment.argv);
            if matched.is_empty() {
                // The command as the tool reads it: options before the sub-command set
                // aside (`git -C . push` is `git push`, `npm --prefix . publish` is
                // `npm publish`); rules with `*` match only the words as written, and
                // allow rules never match this way.
                let prefix: Vec<&str> = segment.prefix.split_whitespace().collect();
                matched = self
                    .matching(&prefix)
                    .into_iter()
                    .filter(|r| {
                        // Only to tighten: an allow rule covers the words as written, never
                        // options it did not name (`git -c core.pager=x status`).
                        r.decision != Decision::Allow
                            && r.pattern.len() > 1
                            && !r.pattern.iter().any(|w| w == "*")
                    })
                    .collect();
            }
            let strongest = matched.iter().map(|r| r.decision).max();
            out.per_segment.push(strongest);
            out.matched.extend(matched.into_iter().map(|r| MatchedRule {
                segment: index,
                pattern: r.pattern_text(),
                decision: r.decision,
                source: r.source,
                reason: r.reason.clone(),
            }));
        }
        let any = |d: Decision| out.per_segment.contains(&Some(d));
        out.decision = if any(Decision::Deny) {
            Some(Decision::Deny)
        } else if any(Decision::Ask) {
            Some(Decision::Ask)
        } else if !out.per_segment.is_empty()
            && out.per_segment.iter().all(|d| *d == Some(Decision::Allow))
        {
            Some(Decision::Allow)
        } else {
            None
        };
        out
    }
}

/// Longest word [`Rules::may_deny`] also reads as a script (longer words are still split).
const MAX_SCRIPT_WORD: usize = 8 * 1024;

/// Characters that make [`Rules::may_deny`] read a word as a script (with white space).
const SCRIPT_CHARS: &[char] = &['\\', '\'', '"', ';', '&', '|', '$', '`', '(', ')', '<', '>'];

/// Where [`Rules::may_deny`] splits words, besides white space: the shell's punctuation.
const SPLIT_AT: &[char] = &[
    '=', '\'', '"', ';', '&', '|', '(', ')', '`', '{', '}', '<', '>', ',', '$', '[', ']', '@', '%',
    ':', '!', '#', '^', '~', '+', '*', '?',
];

/// True when every word of `wanted` occurs in `words` in order (others may come between).
fn is_subsequence<'a>(wanted: &[&str], words: impl Iterator<Item = &'a str>) -> bool {
    let mut wanted = wanted.iter().peekable();
    for word in words {
        if wanted.peek().is_some_and(|w| **w == word) {
            wanted.next();
        }
    }
    wanted.peek().is_none()
}

fn validate(rule: &Rule) -> Result<(), String> {
    match rule.pattern.first() {
        None => Err("the pattern is empty; write at least the program name".to_string()),
        Some(first) if first == "*" => Err(
            "the pattern starts with `*`; rules are indexed by program, so name the program first"
                .to_string(),
        ),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_string_and_array_patterns() {
        let mut rules = Rules::new();
        let warnings = rules
            .add_toml(
                "[[rule]]\npattern = \"git status\"\ndecision = \"allow\"\n\n[[rule]]\npattern = [\"cargo\", \"*\"]\ndecision = \"ask\"\nreason = \"builds\"\n",
                RuleSource::User,
            )
            .unwrap();
        assert!(warnings.is_empty());
        assert_eq!(rules.len(), 2);
        assert_eq!(rules.matching(&["git", "status", "-s"]).len(), 1);
        assert!(rules.matching(&["git", "push"]).is_empty());
        assert_eq!(rules.matching(&["cargo", "build"]).len(), 1);
        assert!(rules.matching(&["cargo"]).is_empty());
    }

    #[test]
    fn project_allow_rules_are_ignored_with_a_warning() {
        let project = "[[rule]]\npattern = \"curl *\"\ndecision = \"allow\"\n[[rule]]\npattern = \"git push\"\ndecision = \"deny\"\n";
        let (rules, warnings) = Rules::from_sources(None, Some(project)).unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("curl *"), "{}", warnings[0]);
    }

    #[test]
    fn bad_files_are_errors_that_say_what_to_fix() {
        let cases = [
            (
                "[[rule]]\npattern = \"git\"\ndecision = \"alow\"\n",
                "not one of",
            ),
            ("[[rule]]\npattern = \"\"\ndecision = \"deny\"\n", "empty"),
            (
                "[[rule]]\npattern = \"* x\"\ndecision = \"deny\"\n",
                "starts with",
            ),
            (
                "[[rule]]\npattern = \"git\"\ndecison = \"deny\"\n",
                "unknown field",
            ),
            ("[[rule]\n", ""),
        ];
        for (text, needle) in cases {
            let err = Rules::new().add_toml(text, RuleSource::User).unwrap_err();
            assert!(err.to_string().contains(needle), "{err}");
        }
    }
}
