//! `codesmith memory consolidate`: offline tidying of a memory index.
//!
//! Order: the deterministic tidy of [`codesmith_tools::memory::curate::tidy`] always
//! runs first and is the floor; with `--llm`, one model call may propose a rewritten
//! index, which lands only if [`codesmith_tools::memory::curate::validate_index`] finds
//! nothing wrong. Dry run by default (a unified diff on stdout); `--apply` saves
//! `MEMORY.md.bak` and replaces `MEMORY.md` atomically. Topic files are only read, never
//! written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use codesmith_tools::fs::atomic::write_atomic;
use codesmith_tools::memory::curate::{self, Tidy};
use codesmith_tools::memory::{
    BACKUP_FILE, INDEX_FILE, MAX_BYTES, MAX_LINES, project_memory_dir, user_memory_dir,
};

use super::doctor::advisory::{Advisory, one_call};
use crate::args::{ConsolidateArgs, MemoryCommand};
use crate::config;
use crate::exit::{Exit, usage};

/// Deadline of the proposal call: 60 s.
pub(crate) const PROPOSAL_DEADLINE: Duration = Duration::from_secs(60);
/// Output-token cap of the proposal call: 2000.
pub(crate) const PROPOSAL_MAX_TOKENS: u32 = 2_000;
/// Characters of each topic file's head shown to the model.
const TOPIC_HEAD_CHARS: usize = 400;

/// Runs `codesmith memory ...`.
pub(crate) async fn run(command: MemoryCommand) -> Exit {
    let MemoryCommand::Consolidate(args) = command;
    match consolidate(&args).await {
        Ok(()) => Exit::Ok,
        Err(exit) => exit,
    }
}

/// Which index a proposal came from, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Chosen {
    /// The deterministic tidy (no `--llm`).
    Tidy,
    /// The model's proposal passed the validator.
    Proposal,
    /// The proposal was unusable; the reason, and the deterministic result stands.
    Fallback(String),
}

/// Picks the index to land: the proposal when it validates, else the tidy result.
pub(crate) fn choose(
    tidied: &Tidy,
    topics: &[String],
    proposal: Option<Result<String, String>>,
) -> (String, Chosen) {
    let Some(proposal) = proposal else {
        return (tidied.index.clone(), Chosen::Tidy);
    };
    let text = match proposal {
        Ok(text) => normalize(&text),
        Err(reason) => return (tidied.index.clone(), Chosen::Fallback(reason)),
    };
    let violations = curate::validate_index(&text, &tidied.index, topics);
    if violations.is_empty() {
        return (text, Chosen::Proposal);
    }
    let reasons: Vec<String> = violations.iter().map(ToString::to_string).collect();
    (
        tidied.index.clone(),
        Chosen::Fallback(format!("the proposal {}", reasons.join("; "))),
    )
}

/// Strips a surrounding code fence and ends the text with one newline.
fn normalize(text: &str) -> String {
    let mut t = text.trim();
    if t.starts_with("```") {
        t = t.split_once('\n').map_or("", |(_, rest)| rest);
        t = t.trim_end().strip_suffix("```").unwrap_or(t).trim_end();
    }
    let mut out = t.to_string();
    out.push('\n');
    out
}

fn memory_dir(args: &ConsolidateArgs) -> Result<PathBuf, Exit> {
    if args.project {
        let ws = config::workspace(args.workspace.workspace.as_deref()).map_err(usage)?;
        Ok(project_memory_dir(&ws))
    } else {
        Ok(user_memory_dir(&config::home_dir().map_err(usage)?))
    }
}

async fn consolidate(args: &ConsolidateArgs) -> Result<(), Exit> {
    let dir = memory_dir(args)?;
    let index_path = dir.join(INDEX_FILE);
    let original = match std::fs::read_to_string(&index_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!(
                "nothing to consolidate: {} does not exist",
                index_path.display()
            );
            return Ok(());
        }
        Err(e) => {
            return Err(Exit::failed(
                anyhow::Error::new(e).context(format!("cannot read {}", index_path.display())),
            ));
        }
    };
    let topics = curate::topic_files(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))
        .map_err(Exit::failed)?;
    let tidied = curate::tidy(&original, &topics);
    print_report(&tidied);
    let proposal = if args.llm {
        Some(propose(args, &dir, &tidied, &topics).await)
    } else {
        None
    };
    let (result, chosen) = choose(&tidied, &topics, proposal);
    match &chosen {
        Chosen::Tidy => {}
        Chosen::Proposal => println!("llm: the proposed index passed validation"),
        Chosen::Fallback(reason) => {
            println!(
                "llm: proposal discarded ({}); keeping the deterministic result",
                codesmith_policy::terminal_safe(reason)
            )
        }
    }
    if result == original {
        println!("{} needs no change", index_path.display());
        return Ok(());
    }
    if !args.apply {
        // Memory lines were written by a model: shown, never acted on by the terminal.
        print!(
            "{}",
            codesmith_policy::terminal_safe(&unified_diff(&original, &result, &index_path))
        );
        println!("dry run: nothing written; pass --apply to write (a backup is kept)");
        return Ok(());
    }
    apply(&dir, &original, &result).map_err(Exit::failed)?;
    println!(
        "wrote {} (previous version in {})",
        index_path.display(),
        dir.join(BACKUP_FILE).display()
    );
    Ok(())
}

fn print_report(t: &Tidy) {
    let safe = codesmith_policy::terminal_safe;
    let name = |n: &str| codesmith_policy::visible_line(n, 200);
    for line in &t.duplicates {
        println!("tidy: dropped duplicate pointer: {}", safe(line));
    }
    for line in &t.dead {
        println!("tidy: dropped pointer to a missing file: {}", safe(line));
    }
    for n in &t.orphans {
        println!("tidy: orphan topic file (kept, not indexed): {}", name(n));
    }
    for n in &t.pointed_twice {
        println!("tidy: {} is named by more than one pointer line", name(n));
    }
    let fits = if t.budget.fits() { "within" } else { "OVER" };
    println!(
        "tidy: index is {} lines / {} bytes, {fits} the budget of {MAX_LINES} lines / {MAX_BYTES} bytes",
        t.budget.lines, t.budget.bytes
    );
}

/// Saves the backup, then replaces the index; both writes are atomic.
fn apply(dir: &Path, original: &str, result: &str) -> anyhow::Result<()> {
    let backup = dir.join(BACKUP_FILE);
    write_atomic(&backup, original.as_bytes())
        .with_context(|| format!("cannot write the backup {}", backup.display()))?;
    let index = dir.join(INDEX_FILE);
    write_atomic(&index, result.as_bytes())
        .with_context(|| format!("cannot write {}", index.display()))
}

/// A unified diff of the index, with three lines of context.
pub(crate) fn unified_diff(old: &str, new: &str, path: &Path) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{name} (current)"),
            &format!("{name} (consolidated)"),
        )
        .to_string()
}

const PROPOSAL_SYSTEM: &str = "You tidy the index file MEMORY.md of a coding agent's \
long-lived memory. Reply with the complete new index and nothing else (no commentary, no \
code fence). Rules: keep exactly one pointer line `- [title](file.md) — description` for \
every topic file listed, and no pointer to any other file; never invent or drop a file; keep \
every other `- ` fact line word for word; you may sharpen descriptions, reorder lines and \
group them under `#` headings. Stay under 200 lines. Your reply is checked by a validator and \
discarded if it breaks any rule.";

async fn propose(
    args: &ConsolidateArgs,
    dir: &Path,
    tidied: &Tidy,
    topics: &[String],
) -> Result<String, String> {
    let mut user = format!(
        "Current MEMORY.md:\n<<<\n{}>>>\n\nTopic files:\n",
        tidied.index
    );
    for name in topics {
        let head = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        let head: String = head.chars().take(TOPIC_HEAD_CHARS).collect();
        user.push_str(&format!("\n## {name}\n{}\n", head.trim_end()));
    }
    one_call(Advisory {
        workspace: args.workspace.workspace.as_deref(),
        system: PROPOSAL_SYSTEM.to_string(),
        user,
        max_tokens: PROPOSAL_MAX_TOKENS,
        deadline: PROPOSAL_DEADLINE,
    })
    .await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn setup() -> (Tidy, Vec<String>) {
        let topics = vec!["a.md".to_string(), "b.md".to_string()];
        let t = curate::tidy(
            "- [a](a.md)\n- [a](a.md)\n- [b](b.md)\n- [x](x.md)\n",
            &topics,
        );
        (t, topics)
    }

    #[test]
    fn without_llm_the_tidy_lands() {
        let (t, topics) = setup();
        let (text, chosen) = choose(&t, &topics, None);
        assert_eq!(text, "- [a](a.md)\n- [b](b.md)\n");
        assert_eq!(chosen, Chosen::Tidy);
    }

    #[test]
    fn a_valid_proposal_lands_even_in_a_fence() {
        let (t, topics) = setup();
        let p = "```markdown\n# Topics\n- [b](b.md) — style\n- [a](a.md) — build\n```";
        let (text, chosen) = choose(&t, &topics, Some(Ok(p.into())));
        assert_eq!(text, "# Topics\n- [b](b.md) — style\n- [a](a.md) — build\n");
        assert_eq!(chosen, Chosen::Proposal);
    }

    #[test]
    fn an_invalid_proposal_falls_back_to_the_tidy() {
        let (t, topics) = setup();
        for bad in [
            "- [a](a.md)\n",
            "- [a](a.md)\n- [b](b.md)\n- [z](z.md)\n",
            "",
        ] {
            let (text, chosen) = choose(&t, &topics, Some(Ok(bad.into())));
            assert_eq!(text, t.index);
            assert!(matches!(chosen, Chosen::Fallback(_)), "{bad:?}");
        }
        let (text, chosen) = choose(&t, &topics, Some(Err("HTTP 500".into())));
        assert_eq!(text, t.index);
        assert_eq!(chosen, Chosen::Fallback("HTTP 500".into()));
    }

    #[test]
    fn diff_is_unified() {
        let d = unified_diff("a\nb\n", "a\n", Path::new("MEMORY.md"));
        assert!(d.contains("--- MEMORY.md (current)"), "{d}");
        assert!(d.contains("-b"), "{d}");
    }
}
