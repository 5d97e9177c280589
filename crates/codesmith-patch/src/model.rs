//! The parsed form of a patch, independent of the syntax it came in.

/// A parsed patch: file operations in the order they appear in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Which syntax the text used.
    pub format: PatchFormat,
    /// File operations, in patch order. Empty after a successful parse only when the patch
    /// changes modes alone.
    pub ops: Vec<FileOp>,
    /// File-mode changes (git's `new file mode` and `new mode` lines), in patch order.
    pub modes: Vec<ModeChange>,
}

/// A file's mode as a git diff sets it: `new file mode 100755` for an added file,
/// `old mode 100644` / `new mode 100755` for an existing one. Git records only whether a
/// file is executable, so that is all this carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeChange {
    /// Workspace-relative path as written in the patch (the new path of a rename).
    pub path: String,
    /// True for `100755`, false for `100644`.
    pub executable: bool,
}

impl Patch {
    /// Every path the patch reads or writes (sources and move destinations), in order of first
    /// appearance, without duplicates. A caller checks containment and freshness on these
    /// before planning.
    pub fn paths(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for op in &self.ops {
            let (path, dest) = match op {
                FileOp::Add { path, .. } | FileOp::Delete { path } => (path, None),
                FileOp::Update { path, move_to, .. } => (path, move_to.as_ref()),
            };
            for p in std::iter::once(path).chain(dest) {
                if !out.contains(&p.as_str()) {
                    out.push(p);
                }
            }
        }
        for m in &self.modes {
            if !out.contains(&m.path.as_str()) {
                out.push(&m.path);
            }
        }
        out
    }
}

/// The syntax a patch was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchFormat {
    /// `--- a/x` / `+++ b/x` / `@@ -l,n +l,n @@` (GNU diff, `git diff`).
    Unified,
    /// `*** Begin Patch` … `*** End Patch` (the format codex and many models emit).
    Envelope,
}

/// One operation on one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// Create (or overwrite) a file with the given lines.
    Add {
        /// Workspace-relative path as written in the patch.
        path: String,
        /// The file's lines, without terminators.
        lines: Vec<String>,
        /// Whether the file ends with a newline (false only after `\ No newline at end of file`).
        final_newline: bool,
    },
    /// Remove an existing file.
    Delete {
        /// Workspace-relative path as written in the patch.
        path: String,
    },
    /// Change an existing file in place, optionally renaming it.
    Update {
        /// Workspace-relative path of the existing file.
        path: String,
        /// New path when the file is also renamed (`*** Move to:` or a git rename).
        move_to: Option<String>,
        /// Hunks in patch order. Empty only for a pure rename.
        hunks: Vec<Hunk>,
    },
}

/// One hunk: a run of context, removed and added lines located by content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// 1-based line in the patch text where the hunk starts (for messages).
    pub patch_line: usize,
    /// Lines to find, in order, before the hunk (`@@ fn main()` in the envelope format). Each is
    /// searched forward from the previous one; the hunk is then sought after the last.
    pub anchors: Vec<String>,
    /// 0-based line in the old file where the hunk claims to start (unified diffs with
    /// numbers); `None` when the patch gives no position.
    pub old_start: Option<usize>,
    /// Whether the hunk must match at the end of the file (`*** End of File`).
    pub at_eof: bool,
    /// The hunk body.
    pub lines: Vec<HunkLine>,
}

impl Hunk {
    /// The lines the hunk expects to find in the file (context and removed lines).
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
                HunkLine::Add { .. } => None,
            })
            .collect()
    }

    /// Whether the hunk only adds lines (no context, nothing removed).
    pub fn is_pure_addition(&self) -> bool {
        self.lines.iter().all(|l| matches!(l, HunkLine::Add { .. }))
    }
}

/// One line of a hunk body, without its prefix character or terminator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` text`: must be present; kept as the file has it.
    Context(String),
    /// `-text`: must be present; removed.
    Remove(String),
    /// `+text`: inserted with the file's line ending.
    Add {
        /// The line's text.
        text: String,
        /// Set by `\ No newline at end of file` after this line: if it ends up last, the file
        /// gets no final newline.
        no_newline: bool,
    },
}
