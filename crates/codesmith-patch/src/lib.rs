//! CodeSmith's patch engine, pure: it parses a patch, finds where each hunk belongs, and
//! computes the new contents of every file it touches, without touching the disk.
//!
//! Two syntaxes are accepted: unified diffs (`--- a/x`, `+++ b/x`, `@@ -l,n +l,n @@`, several
//! files, `/dev/null` for creation and deletion, `\ No newline at end of file`) and the
//! `*** Begin Patch` envelope (`*** Update File:`, `*** Add File:`, `*** Delete File:`,
//! `*** Move to:`, `@@ anchor`, `*** End of File`, `*** End Patch`) many models emit. A
//! heredoc or Markdown fence around the patch is stripped.
//!
//! Hunks are found by content (see [`MatchLevel`] and [`MAX_FUZZ`]); a hunk that does not match
//! comes back as a [`HunkFailure`] showing what was expected next to what the file holds.
//!
//! ```
//! let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n";
//! let read = |p: &str| (p == "a.txt").then(|| "keep\nold\n".to_string());
//! let changes = codesmith_patch::plan(patch, &read).unwrap();
//! assert!(matches!(&changes[0],
//!     codesmith_patch::FileChange::Update { new_content, .. } if new_content == "keep\nnew\n"));
//! ```
//!
//! [`apply_to_dir`] is the one function that does I/O: it plans first, then writes all files
//! or none.

mod apply;
mod dir;
mod error;
mod matcher;
mod model;
mod parse;
mod plan;
mod text;

pub use apply::HunkReport;
pub use dir::{ApplyError, ApplySummary, apply_to_dir, write_plan};
pub use error::{HunkFailure, ParseError, ParseErrorKind, PatchError};
pub use matcher::{MAX_FUZZ, MatchLevel};
pub use model::{FileOp, Hunk, HunkLine, ModeChange, Patch, PatchFormat};
pub use parse::parse;
pub use plan::{FileChange, plan, plan_parsed};
