//! Reading memory: its index for the system prompt (within budget) and its entries for
//! `recall`.

use std::path::Path;

use super::{INDEX_FILE, curate, project_memory_dir, user_memory_dir};

/// The most of one memory file that is read; a larger one is skipped.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Most lines of the memory index a prompt carries (labels and titles together).
pub const MAX_INDEX_LINES: usize = 60;
/// Most bytes of the memory index a prompt carries.
pub const MAX_INDEX_BYTES: usize = 8 * 1024;
/// Most characters of one title in the index; a longer line is cut with `…`.
pub const TITLE_CHARS: usize = 100;

/// One memory entry: a non-blank line of an index or a topic file, pointer lines to topic
/// files (`- [build](build.md)`) and headings excluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Where it is stored: `[user memory: MEMORY.md]`, `[project memory: build.md]`.
    pub source: String,
    /// The line as stored, without its `- ` bullet.
    pub text: String,
}

/// The memory files of both stores, in order: the user index, the user's topic files by
/// name, then the project index and the project's topic files; each with its label
/// (`[user memory: build.md]`) and text. Unreadable files, and those that are not regular
/// files or are larger than [`MAX_FILE_BYTES`], are skipped; blank ones too.
fn sources(home: &Path, workspace: &Path) -> Vec<(String, String)> {
    let mut sources = Vec::new();
    for (label, dir) in [
        ("user memory", user_memory_dir(home)),
        ("project memory", project_memory_dir(workspace)),
    ] {
        let mut files = vec![INDEX_FILE.to_string()];
        files.extend(curate::topic_files(&dir).unwrap_or_default());
        for name in files {
            // A FIFO or a device (a project's `MEMORY.md` may be a symlink to one) is
            // skipped, not read without end.
            let Ok(text) = crate::fs::bounded::read_regular_text(&dir.join(&name), MAX_FILE_BYTES)
            else {
                continue;
            };
            if !text.trim().is_empty() {
                sources.push((format!("[{label}: {name}]"), text));
            }
        }
    }
    sources
}

/// `text` without a leading `---` front matter block.
fn without_front_matter(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("---\n") else {
        return text;
    };
    match rest.find("\n---\n") {
        Some(end) => &rest[end + 5..],
        None => text,
    }
}

/// Whether `line` is an entry: not blank, not a heading, not a pointer to a topic file.
fn entry_text(line: &str) -> Option<&str> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let text = line.strip_prefix("- ").unwrap_or(line).trim();
    let pointer = text.starts_with('[') && text.ends_with(".md)") && text.contains("](");
    (!pointer && !text.is_empty()).then_some(text)
}

/// Every entry of the user's and the project's memory (see [`Entry`]), in the order of
/// [`load_memory`]'s sources: what `recall` searches.
pub fn memory_entries(home: &Path, workspace: &Path) -> Vec<Entry> {
    sources(home, workspace)
        .into_iter()
        .flat_map(|(source, text)| {
            without_front_matter(&text)
                .lines()
                .filter_map(entry_text)
                .map(|t| Entry {
                    source: source.clone(),
                    text: t.to_string(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Reads the index of the user's and the project's memory for the system prompt: each
/// store's `MEMORY.md`, one title per line (a line longer than [`TITLE_CHARS`] is cut),
/// and one line per topic file naming it and how many entries it holds. The entries of
/// topic files are not pasted: the `recall` tool returns the ones a query matches.
///
/// Order (byte-stable for a given state): the user index, the user's topic files by name,
/// then the project index and the project's topic files, each introduced by a
/// `[user memory: MEMORY.md]`-style label. The whole text stays within [`MAX_INDEX_LINES`]
/// lines and [`MAX_INDEX_BYTES`] bytes: when it would not, it stops at a line boundary and
/// a last line says how many lines were left out and that `recall` finds them. The caller
/// frames the result as facts, never commands.
///
/// Returns `None` when no memory file exists or all are blank.
pub fn load_memory(home: &Path, workspace: &Path) -> Option<String> {
    let sources = sources(home, workspace);
    if sources.is_empty() {
        return None;
    }
    let mut lines: Vec<String> = Vec::new();
    for (label, text) in &sources {
        if label.ends_with(&format!(": {INDEX_FILE}]")) {
            lines.push(label.clone());
            lines.extend(
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| title(l.trim_end())),
            );
        } else {
            let n = without_front_matter(text)
                .lines()
                .filter_map(entry_text)
                .count();
            let s = if n == 1 { "entry" } else { "entries" };
            lines.push(format!("{label} {n} {s}"));
        }
    }
    Some(fit(&lines))
}

/// `line` cut to [`TITLE_CHARS`] characters, with `…` when it was longer.
fn title(line: &str) -> String {
    let mut out: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        out.push('…');
    }
    out
}

/// Joins `lines`, stopping before the budget (one line kept for the marker).
fn fit(lines: &[String]) -> String {
    let mut out = String::new();
    let (mut kept, mut left_out) = (0usize, 0usize);
    let reserve = 160;
    for line in lines {
        if left_out > 0
            || kept + 2 > MAX_INDEX_LINES
            || out.len() + line.len() + 1 + reserve > MAX_INDEX_BYTES
        {
            left_out += 1;
            continue;
        }
        out.push_str(line);
        out.push('\n');
        kept += 1;
    }
    if left_out > 0 {
        out.push_str(&format!(
            "[{left_out} more memory index lines not shown; recall finds every entry by a \
             query word; `codesmith memory consolidate` tidies the index]\n"
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nothing_stored_is_none() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(load_memory(&d.path().join("h"), &d.path().join("w")), None);
    }

    #[test]
    fn loads_user_then_project_with_labels() {
        let d = tempfile::tempdir().unwrap();
        let (home, ws) = (d.path().join("h"), d.path().join("w"));
        crate::memory::append_fact(&user_memory_dir(&home), "likes tabs", None).unwrap();
        crate::memory::append_fact(&project_memory_dir(&ws), "tests: make check", Some("build"))
            .unwrap();
        let text = load_memory(&home, &ws).unwrap();
        assert_eq!(
            text,
            "[user memory: MEMORY.md]\n- likes tabs\n[project memory: MEMORY.md]\n\
             - [build](build.md)\n[project memory: build.md] 1 entry\n"
        );
        let entries = memory_entries(&home, &ws);
        assert_eq!(
            entries,
            vec![
                Entry {
                    source: "[user memory: MEMORY.md]".into(),
                    text: "likes tabs".into()
                },
                Entry {
                    source: "[project memory: build.md]".into(),
                    text: "tests: make check".into()
                },
            ]
        );
    }

    #[test]
    fn stays_within_budget() {
        let d = tempfile::tempdir().unwrap();
        let dir = user_memory_dir(d.path());
        std::fs::create_dir_all(&dir).unwrap();
        let many: String = (0..500).map(|i| format!("- fact {i}\n")).collect();
        std::fs::write(dir.join(INDEX_FILE), many).unwrap();
        let text = load_memory(d.path(), &d.path().join("w")).unwrap();
        assert!(text.lines().count() <= MAX_INDEX_LINES);
        assert!(!text.contains("- fact 499"), "{text}");
        assert!(text.ends_with("tidies the index]\n"), "{text}");
        let wide: String = (0..100)
            .map(|i| format!("- {i} {}\n", "w".repeat(900)))
            .collect();
        std::fs::write(dir.join(INDEX_FILE), wide).unwrap();
        let text = load_memory(d.path(), &d.path().join("w")).unwrap();
        assert!(text.len() <= MAX_INDEX_BYTES, "{}", text.len());
        assert!(
            text.lines()
                .filter(|l| !l.starts_with('['))
                .all(|l| l.chars().count() <= TITLE_CHARS + 1)
        );
    }
}
