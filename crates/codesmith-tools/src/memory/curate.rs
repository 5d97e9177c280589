//! Offline tidying of a memory index (`codesmith memory consolidate`).
//!
//! Two layers:
//! - [`tidy`]: deterministic, no judgment. Drops pointer lines identical to an earlier one
//!   (the first stays), drops pointers to files that do not exist, reports (never deletes)
//!   orphan topic files and checks the budget of 200 lines / 25 KB.
//! - [`validate_index`]: the check an LLM-proposed index must pass before it may replace the
//!   tidied one: no pointer to a missing file, no file pointed at twice, no existing topic
//!   file left without a pointer, not empty, within budget, and no fact line of the tidied
//!   index lost. A proposal that fails any rule is discarded whole.
//!
//! Both functions are pure: the caller says which topic files exist.

use std::collections::BTreeSet;
use std::fmt;
use std::io;
use std::path::Path;

use super::{INDEX_FILE, MAX_BYTES, MAX_LINES};

/// One pointer line of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    /// 0-based line number in the index.
    pub line: usize,
    /// The linked file name, without a leading `./` (e.g. `build.md`).
    pub target: String,
}

/// The target of the first Markdown link to a `.md` file in `line`
/// (`- [build](build.md) — how to build` → `build.md`). URLs, anchors-only links and
/// non-Markdown targets are not pointers.
pub fn pointer_target(line: &str) -> Option<String> {
    let mut rest = line;
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        let raw = after[..end].trim();
        let raw = raw.split_whitespace().next().unwrap_or("");
        let raw = raw.trim_start_matches('<').trim_end_matches('>');
        let raw = raw.split('#').next().unwrap_or("");
        let raw = raw.strip_prefix("./").unwrap_or(raw);
        if raw.ends_with(".md") && !raw.contains("://") && raw != INDEX_FILE {
            return Some(raw.to_string());
        }
        rest = &after[end..];
    }
    None
}

/// Every pointer line of `index`, in order.
pub fn pointers(index: &str) -> Vec<Pointer> {
    index
        .lines()
        .enumerate()
        .filter_map(|(line, text)| pointer_target(text).map(|target| Pointer { line, target }))
        .collect()
}

/// The topic files in `dir`: `*.md` files other than `MEMORY.md`, sorted by name.
/// A missing directory has none.
///
/// # Errors
/// Reading the directory failed for another reason than its absence.
pub fn topic_files(dir: &Path) -> io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.ends_with(".md") && name != INDEX_FILE && entry.file_type()?.is_file() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// The size of an index against the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Lines in the index.
    pub lines: usize,
    /// Bytes in the index.
    pub bytes: usize,
}

impl Budget {
    /// Measures `text`.
    pub fn of(text: &str) -> Self {
        Budget {
            lines: text.lines().count(),
            bytes: text.len(),
        }
    }

    /// True when within [`MAX_LINES`] lines and [`MAX_BYTES`] bytes.
    pub fn fits(&self) -> bool {
        self.lines <= MAX_LINES && self.bytes <= MAX_BYTES
    }
}

/// The result of [`tidy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tidy {
    /// The tidied index text.
    pub index: String,
    /// Pointer lines dropped because an identical line came earlier.
    pub duplicates: Vec<String>,
    /// Pointer lines dropped because their file does not exist.
    pub dead: Vec<String>,
    /// Topic files no pointer names (reported, never deleted).
    pub orphans: Vec<String>,
    /// Files that different pointer lines still name more than once.
    pub pointed_twice: Vec<String>,
    /// Size of the tidied index.
    pub budget: Budget,
}

/// Tidies `index` given the existing `topics` (file names in the memory directory).
/// Lines that are not pointers are kept as they are; the line ending style is `\n`.
pub fn tidy(index: &str, topics: &[String]) -> Tidy {
    let existing: BTreeSet<&str> = topics.iter().map(String::as_str).collect();
    let mut seen_lines = BTreeSet::new();
    let mut kept = Vec::new();
    let (mut duplicates, mut dead) = (Vec::new(), Vec::new());
    for line in index.lines() {
        let Some(target) = pointer_target(line) else {
            kept.push(line);
            continue;
        };
        if !seen_lines.insert(line.trim()) {
            duplicates.push(line.to_string());
        } else if !existing.contains(target.as_str()) {
            dead.push(line.to_string());
        } else {
            kept.push(line);
        }
    }
    let mut text = kept.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    let counts = target_counts(&text);
    let orphans = topics
        .iter()
        .filter(|t| !counts.iter().any(|(name, _)| name == *t))
        .cloned()
        .collect();
    let pointed_twice = counts
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(name, _)| name)
        .collect();
    Tidy {
        budget: Budget::of(&text),
        index: text,
        duplicates,
        dead,
        orphans,
        pointed_twice,
    }
}

/// Each pointed file with how many pointer lines name it, sorted by name.
fn target_counts(index: &str) -> Vec<(String, usize)> {
    let mut counts = std::collections::BTreeMap::new();
    for p in pointers(index) {
        *counts.entry(p.target).or_insert(0usize) += 1;
    }
    counts.into_iter().collect()
}

/// One reason a proposed index is rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// The proposal is blank, or points to nothing while topic files exist.
    Empty,
    /// A pointer names a file that does not exist.
    MissingFile(String),
    /// Two or more pointer lines name the same file.
    PointedTwice(String),
    /// An existing topic file has no pointer.
    Unpointed(String),
    /// Over [`MAX_LINES`] lines or [`MAX_BYTES`] bytes.
    OverBudget(Budget),
    /// A fact line of the tidied index is missing from the proposal.
    LostFact(String),
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Empty => write!(f, "the proposal is empty or points to no file"),
            Violation::MissingFile(t) => write!(f, "points to {t}, which does not exist"),
            Violation::PointedTwice(t) => write!(f, "points to {t} more than once"),
            Violation::Unpointed(t) => write!(f, "leaves {t} without a pointer"),
            Violation::OverBudget(b) => write!(
                f,
                "is {} lines / {} bytes, over the budget of {MAX_LINES} lines / {MAX_BYTES} bytes",
                b.lines, b.bytes
            ),
            Violation::LostFact(line) => write!(f, "drops the fact line {line:?}"),
        }
    }
}

/// Checks a proposed index against the existing `topics` and the `tidied` index it would
/// replace. Empty result: the proposal may land. Rules are listed on [`Violation`].
pub fn validate_index(proposed: &str, tidied: &str, topics: &[String]) -> Vec<Violation> {
    let mut out = Vec::new();
    let counts = target_counts(proposed);
    if proposed.trim().is_empty() || (counts.is_empty() && !topics.is_empty()) {
        out.push(Violation::Empty);
    }
    for (name, n) in &counts {
        if !topics.contains(name) {
            out.push(Violation::MissingFile(name.clone()));
        }
        if *n > 1 {
            out.push(Violation::PointedTwice(name.clone()));
        }
    }
    for t in topics {
        if !counts.iter().any(|(name, _)| name == t) {
            out.push(Violation::Unpointed(t.clone()));
        }
    }
    let budget = Budget::of(proposed);
    if !budget.fits() {
        out.push(Violation::OverBudget(budget));
    }
    let proposed_lines: BTreeSet<&str> = proposed.lines().map(str::trim).collect();
    for line in tidied.lines().filter(|l| is_fact_line(l)) {
        if !proposed_lines.contains(line.trim()) {
            out.push(Violation::LostFact(line.trim().to_string()));
        }
    }
    out
}

/// A bullet line that is not a pointer: a fact `remember` stored in the index.
fn is_fact_line(line: &str) -> bool {
    let t = line.trim_start();
    (t.starts_with("- ") || t.starts_with("* ")) && pointer_target(line).is_none()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn topics(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pointer_targets() {
        assert_eq!(
            pointer_target("- [b](build.md) — how").as_deref(),
            Some("build.md")
        );
        assert_eq!(
            pointer_target("- [b](./build.md#x)").as_deref(),
            Some("build.md")
        );
        assert_eq!(pointer_target("see [site](https://x.io/a.md)"), None);
        assert_eq!(pointer_target("- plain fact"), None);
        assert_eq!(
            pointer_target("[x](https://a) and [y](y.md)").as_deref(),
            Some("y.md")
        );
    }

    #[test]
    fn tidy_drops_duplicates_and_dead_pointers_and_reports_orphans() {
        let index =
            "# Memory\n- [a](a.md)\n- fact\n- [a](a.md)\n- [gone](gone.md)\n- [a](a.md) again\n";
        let t = tidy(index, &topics(&["a.md", "orphan.md"]));
        assert_eq!(
            t.index,
            "# Memory\n- [a](a.md)\n- fact\n- [a](a.md) again\n"
        );
        assert_eq!(t.duplicates, vec!["- [a](a.md)"]);
        assert_eq!(t.dead, vec!["- [gone](gone.md)"]);
        assert_eq!(t.orphans, vec!["orphan.md"]);
        assert_eq!(t.pointed_twice, vec!["a.md"]);
        assert_eq!(
            t.budget,
            Budget {
                lines: 4,
                bytes: t.index.len()
            }
        );
        assert!(t.budget.fits());
    }

    #[test]
    fn tidy_checks_the_budget() {
        let index = "- x\n".repeat(MAX_LINES + 1);
        assert!(!tidy(&index, &[]).budget.fits());
        let long = format!("- {}\n", "y".repeat(MAX_BYTES));
        assert!(!tidy(&long, &[]).budget.fits());
    }

    #[test]
    fn a_good_proposal_passes() {
        let t = topics(&["a.md", "b.md"]);
        let tidied = "- fact\n- [a](a.md)\n- [b](b.md)\n";
        let proposed = "# Build\n- [a](a.md) — builds\n# Style\n- [b](b.md) — style\n- fact\n";
        assert_eq!(validate_index(proposed, tidied, &t), vec![]);
    }

    #[test]
    fn rule_missing_file() {
        let v = validate_index("- [a](a.md)\n- [x](x.md)\n", "", &topics(&["a.md"]));
        assert_eq!(v, vec![Violation::MissingFile("x.md".into())]);
    }

    #[test]
    fn rule_pointed_twice() {
        let v = validate_index("- [a](a.md)\n- [a2](a.md) dup\n", "", &topics(&["a.md"]));
        assert_eq!(v, vec![Violation::PointedTwice("a.md".into())]);
    }

    #[test]
    fn rule_unpointed_topic() {
        let v = validate_index("- [a](a.md)\n", "", &topics(&["a.md", "b.md"]));
        assert_eq!(v, vec![Violation::Unpointed("b.md".into())]);
    }

    #[test]
    fn rule_empty() {
        assert_eq!(validate_index("  \n", "", &[]), vec![Violation::Empty]);
        let v = validate_index("# nothing here\n", "", &topics(&["a.md"]));
        assert_eq!(
            v,
            vec![Violation::Empty, Violation::Unpointed("a.md".into())]
        );
    }

    #[test]
    fn rule_over_budget() {
        let mut proposed = "- [a](a.md)\n".to_string();
        proposed.push_str(&"# filler\n".repeat(MAX_LINES));
        let v = validate_index(&proposed, "", &topics(&["a.md"]));
        assert!(matches!(v.as_slice(), [Violation::OverBudget(b)] if b.lines == MAX_LINES + 1));
    }

    #[test]
    fn rule_lost_fact() {
        let v = validate_index(
            "- [a](a.md)\n",
            "- keep me\n- [a](a.md)\n",
            &topics(&["a.md"]),
        );
        assert_eq!(v, vec![Violation::LostFact("- keep me".into())]);
    }
}
