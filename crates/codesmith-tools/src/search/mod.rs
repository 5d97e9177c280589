//! Search tools: `grep_files` (content), `file_search` (names) and `list_dir`, all built on
//! ripgrep's own crates (`ignore` for walking, `grep-searcher`/`grep-regex` for matching).
//!
//! Every walk skips the same things: `.git`, `node_modules`, `target`,
//! `dist`, `build`, `__pycache__`, `.venv`, `*.min.js`, files over 10 MB, and whatever
//! `.gitignore` ignores (even outside a git repository). Results are counted in full first
//! and then truncated, so a result says how many there were.

mod file_search;
mod grep_files;
mod list_dir;
mod walk;

pub use file_search::{FileSearch, glob_paths};
pub use grep_files::{GrepFiles, grep_count};
pub use list_dir::ListDir;
pub use walk::{EXCLUDED_DIRS, MAX_FILE_BYTES};
