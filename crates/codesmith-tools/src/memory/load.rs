//! Reading memory into the system prompt, within budget.

use std::path::Path;

use super::{INDEX_FILE, MAX_BYTES, MAX_LINES, curate, project_memory_dir, user_memory_dir};

/// The most of one memory file that is read; a larger one is skipped (the prompt's budget,
/// [`MAX_BYTES`], is far smaller).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Reads the user's and the project's memory for the system prompt.
///
/// Order (byte-stable for a given state): the user index, the user's topic files by name,
/// then the project index and the project's topic files. Each file is introduced by a
/// `[user memory: build.md]`-style label so the model sees where a fact came from. The
/// whole text stays within [`MAX_LINES`] lines and [`MAX_BYTES`] bytes: when it would not,
/// loading stops at a line boundary and a last line says how many lines were left out.
/// The caller frames the result as facts, never commands.
///
/// Returns `None` when no memory file exists or all are blank. Unreadable files, and those
/// that are not regular files or are larger than [`MAX_FILE_BYTES`], are skipped.
pub fn load_memory(home: &Path, workspace: &Path) -> Option<String> {
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
    if sources.is_empty() {
        return None;
    }
    Some(fit(&sources))
}

/// Joins labelled sources, stopping before the budget (one line kept for the marker).
fn fit(sources: &[(String, String)]) -> String {
    let mut out = String::new();
    let (mut lines, mut left_out) = (0usize, 0usize);
    let reserve = 120;
    for (label, text) in sources {
        let body = text.lines().filter(|l| !l.trim().is_empty());
        for line in std::iter::once(label.as_str()).chain(body) {
            if left_out > 0
                || lines + 2 > MAX_LINES
                || out.len() + line.len() + 1 + reserve > MAX_BYTES
            {
                left_out += 1;
                continue;
            }
            out.push_str(line);
            out.push('\n');
            lines += 1;
        }
    }
    if left_out > 0 {
        out.push_str(&format!(
            "[{left_out} more memory lines not loaded: over the budget of {MAX_LINES} lines / \
             {MAX_BYTES} bytes; ask the user to run `codesmith memory consolidate`]\n"
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
             - [build](build.md)\n[project memory: build.md]\n- tests: make check\n"
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
        assert!(text.lines().count() <= MAX_LINES);
        assert!(
            text.ends_with("`codesmith memory consolidate`]\n"),
            "{text}"
        );
        let wide: String = (0..100)
            .map(|i| format!("- {i} {}\n", "w".repeat(900)))
            .collect();
        std::fs::write(dir.join(INDEX_FILE), wide).unwrap();
        let text = load_memory(d.path(), &d.path().join("w")).unwrap();
        assert!(text.len() <= MAX_BYTES, "{}", text.len());
    }
}
