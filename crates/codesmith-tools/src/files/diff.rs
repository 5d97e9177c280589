//! The diff of one written file, computed by the tool that wrote it and carried to front
//! ends as [`ChangedFile`] (the model never reads it).

use codesmith_protocol::{ChangeKind, ChangedFile};

/// Lines of context around each change, as `diff -u` prints by default.
const CONTEXT: usize = 3;

/// Longest time spent looking for a minimal diff; past it the diff is still correct, just
/// coarser (`similar`'s deadline).
const DEADLINE: std::time::Duration = std::time::Duration::from_millis(200);

/// The text diff between `before` and `after`, as [`ChangedFile`]'s fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextDiff {
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
    /// Unified hunks (see [`ChangedFile::diff`]), cut after [`ChangedFile::DIFF_LIMIT`].
    pub hunks: String,
    /// True when `hunks` was cut.
    pub truncated: bool,
}

impl TextDiff {
    /// Diffs `before` against `after` line by line. A line ends at `\n` only, as the
    /// tools count lines: a lone CR stays inside its line (and is shown, see
    /// [`ChangedFile::diff`]) instead of splitting it in two, which would hide it.
    pub fn between(before: &str, after: &str) -> Self {
        let old: Vec<&str> = before.split_inclusive('\n').collect();
        let new: Vec<&str> = after.split_inclusive('\n').collect();
        let diff = similar::TextDiff::configure()
            .algorithm(similar::Algorithm::Myers)
            .deadline(std::time::Instant::now() + DEADLINE)
            .diff_slices(&old, &new);
        let mut out = TextDiff::default();
        for change in diff.iter_all_changes() {
            match change.tag() {
                similar::ChangeTag::Insert => out.added = out.added.saturating_add(1),
                similar::ChangeTag::Delete => out.removed = out.removed.saturating_add(1),
                similar::ChangeTag::Equal => {}
            }
        }
        for hunk in diff.unified_diff().context_radius(CONTEXT).iter_hunks() {
            let mut text = hunk.header().to_string();
            text.push('\n');
            for change in hunk.iter_changes() {
                let sign = match change.tag() {
                    similar::ChangeTag::Insert => '+',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Equal => ' ',
                };
                text.push(sign);
                text.push_str(line_text(change.value()));
                text.push('\n');
            }
            if out.hunks.len() + text.len() > ChangedFile::DIFF_LIMIT {
                out.truncated = true;
                for line in text.split_inclusive('\n') {
                    if out.hunks.len() + line.len() > ChangedFile::DIFF_LIMIT {
                        break;
                    }
                    out.hunks.push_str(line);
                }
                break;
            }
            out.hunks.push_str(&text);
        }
        out
    }

    /// The change record of `path`.
    pub fn into_change(self, path: &str, kind: ChangeKind, moved_to: Option<&str>) -> ChangedFile {
        ChangedFile {
            path: path.to_string(),
            kind,
            moved_to: moved_to.map(str::to_string),
            added: self.added,
            removed: self.removed,
            diff: self.hunks,
            truncated: self.truncated,
        }
    }
}

/// `line` without its line ending (`\n` or `\r\n`); any other CR is kept.
fn line_text(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_line_is_one_hunk_with_context() {
        let d = TextDiff::between("a\nb\nc\n", "a\nB\nc\n");
        assert_eq!((d.added, d.removed), (1, 1));
        assert_eq!(d.hunks, "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
        assert!(!d.truncated);
    }

    #[test]
    fn a_lone_cr_stays_in_its_line_and_line_endings_are_not_shown() {
        let d = TextDiff::between("", "world\rcr\n");
        assert_eq!(
            (d.added, d.removed),
            (1, 0),
            "one line, as the tools count it"
        );
        assert_eq!(d.hunks, "@@ -0,0 +1 @@\n+world\rcr\n");
        let d = TextDiff::between("a\r\nb\r\n", "a\r\nB\r\n");
        assert_eq!(d.hunks, "@@ -1,2 +1,2 @@\n a\n-b\n+B\n");
        let d = TextDiff::between("a\rb\r", "a\rb\rc\r");
        assert_eq!((d.added, d.removed), (1, 1), "a CR-only file is one line");
    }

    #[test]
    fn a_created_file_is_all_additions_and_a_huge_diff_is_cut_at_a_line() {
        let d = TextDiff::between("", "x\ny\n");
        assert_eq!(d.hunks, "@@ -0,0 +1,2 @@\n+x\n+y\n");
        let big: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        let d = TextDiff::between("", &big);
        assert_eq!(d.added, 20_000, "counts stay exact past the cut");
        assert!(d.truncated);
        assert!(d.hunks.len() <= ChangedFile::DIFF_LIMIT);
        assert!(d.hunks.ends_with('\n'));
    }
}
