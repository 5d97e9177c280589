//! Appending facts to a memory directory (the only write the online loop may make).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::{INDEX_FILE, MAX_FACT_BYTES};
use crate::fs::atomic::write_atomic;

/// Why a fact was not stored.
#[derive(Debug)]
pub enum MemoryError {
    /// The fact is empty after trimming.
    EmptyFact,
    /// The fact is longer than [`MAX_FACT_BYTES`](super::MAX_FACT_BYTES).
    FactTooLong(usize),
    /// The topic has no usable characters (letters, digits, `-`, `_`).
    BadTopic(String),
    /// Reading or writing a memory file failed.
    Io(PathBuf, io::Error),
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::EmptyFact => write!(f, "the fact is empty"),
            MemoryError::FactTooLong(n) => {
                write!(f, "the fact is {n} bytes; the limit is {MAX_FACT_BYTES}")
            }
            MemoryError::BadTopic(t) => write!(
                f,
                "topic {t:?} has no letters or digits; use a short name like \"build\""
            ),
            MemoryError::Io(path, e) => write!(f, "cannot update {}: {e}", path.display()),
        }
    }
}

impl std::error::Error for MemoryError {}

/// What [`append_fact`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The file the fact belongs to (the index, or the topic file).
    pub file: PathBuf,
    /// The line as stored (`- fact`).
    pub line: String,
    /// False when an identical line was already there (nothing was written).
    pub added: bool,
    /// True when a pointer to a new topic file was added to the index.
    pub pointer_added: bool,
}

/// The topic file name for `topic`: lower-case ASCII letters, digits, `-` and `_`, other
/// runs of characters become one `-`, at most 64 characters, plus `.md`. A trailing `.md`
/// in `topic` is ignored. `None` when nothing usable remains.
pub fn topic_file_name(topic: &str) -> Option<String> {
    let topic = topic.trim();
    let topic = topic.strip_suffix(".md").unwrap_or(topic);
    let mut slug = String::new();
    for c in topic.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(64).collect();
    let slug = slug.trim_matches('-');
    (!slug.is_empty() && slug.chars().any(|c| c.is_ascii_alphanumeric()))
        .then(|| format!("{slug}.md"))
}

/// The stored form of a fact: one `- ` line, inner whitespace runs (newlines too) collapsed.
fn fact_line(fact: &str) -> Result<String, MemoryError> {
    let joined = fact.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.is_empty() {
        return Err(MemoryError::EmptyFact);
    }
    if joined.len() > MAX_FACT_BYTES {
        return Err(MemoryError::FactTooLong(joined.len()));
    }
    Ok(format!("- {joined}"))
}

/// Appends `fact` to the memory directory `dir` (created when missing).
///
/// Without a topic the fact goes to `MEMORY.md`; with one it goes to the topic file (see
/// [`topic_file_name`]) and, when the index does not point to that file yet, a pointer
/// line `- [topic](topic.md)` is appended to the index. A line identical to one already in
/// the file is not written twice. Writes are atomic; nothing is ever removed.
///
/// # Errors
/// [`MemoryError`] for an empty or oversized fact, an unusable topic, or an I/O failure.
pub fn append_fact(dir: &Path, fact: &str, topic: Option<&str>) -> Result<Appended, MemoryError> {
    let line = fact_line(fact)?;
    std::fs::create_dir_all(dir).map_err(|e| MemoryError::Io(dir.to_path_buf(), e))?;
    let index = dir.join(INDEX_FILE);
    let Some(topic) = topic.filter(|t| !t.trim().is_empty()) else {
        let added = append_unique(&index, &line)?;
        return Ok(Appended {
            file: index,
            line,
            added,
            pointer_added: false,
        });
    };
    let name = topic_file_name(topic).ok_or_else(|| MemoryError::BadTopic(topic.to_string()))?;
    let file = dir.join(&name);
    let added = append_unique(&file, &line)?;
    let index_text = read_or_empty(&index)?;
    let pointed = super::curate::pointers(&index_text)
        .iter()
        .any(|p| p.target == name);
    let pointer_added = if pointed {
        false
    } else {
        let stem = name.trim_end_matches(".md");
        append_unique(&index, &format!("- [{stem}]({name})"))?
    };
    Ok(Appended {
        file,
        line,
        added,
        pointer_added,
    })
}

fn read_or_empty(path: &Path) -> Result<String, MemoryError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(MemoryError::Io(path.to_path_buf(), e)),
    }
}

/// Appends `line` unless an identical (trimmed) line exists; true when written.
fn append_unique(path: &Path, line: &str) -> Result<bool, MemoryError> {
    let mut text = read_or_empty(path)?;
    if text.lines().any(|l| l.trim() == line.trim()) {
        return Ok(false);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
    text.push('\n');
    write_atomic(path, text.as_bytes()).map_err(|e| MemoryError::Io(path.to_path_buf(), e))?;
    Ok(true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn facts_append_once_and_topics_get_one_pointer() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("memory");
        let a = append_fact(&d, "  prefers   tabs\n", None).unwrap();
        assert!(a.added);
        assert_eq!(a.line, "- prefers tabs");
        assert!(!append_fact(&d, "prefers tabs", None).unwrap().added);
        let t = append_fact(&d, "run cargo test -p x", Some("Build Tips")).unwrap();
        assert!(t.added && t.pointer_added);
        assert_eq!(t.file, d.join("build-tips.md"));
        let t2 = append_fact(&d, "use --release for benches", Some("build tips.md")).unwrap();
        assert!(t2.added && !t2.pointer_added);
        assert_eq!(
            std::fs::read_to_string(d.join("MEMORY.md")).unwrap(),
            "- prefers tabs\n- [build-tips](build-tips.md)\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("build-tips.md")).unwrap(),
            "- run cargo test -p x\n- use --release for benches\n"
        );
    }

    #[test]
    fn bad_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            append_fact(dir.path(), " \n ", None),
            Err(MemoryError::EmptyFact)
        ));
        assert!(matches!(
            append_fact(dir.path(), &"x".repeat(2000), None),
            Err(MemoryError::FactTooLong(2000))
        ));
        assert!(matches!(
            append_fact(dir.path(), "x", Some("../..")),
            Err(MemoryError::BadTopic(_))
        ));
        assert_eq!(
            topic_file_name("../etc/passwd").as_deref(),
            Some("etc-passwd.md")
        );
        assert_eq!(topic_file_name("---"), None);
    }
}
