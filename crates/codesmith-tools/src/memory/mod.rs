//! Long-lived memory: a bounded `MEMORY.md` index plus one Markdown file per topic.
//!
//! Two stores share one layout: the user's under `$CODESMITH_HOME/memory/` and the
//! project's under `<workspace>/.codesmith/memory/`. Each holds `MEMORY.md` (fact lines and
//! pointer lines such as `- [build](build.md)`) and topic files (`build.md`, ...).
//!
//! The online loop may only append: the
//! [`Remember`] tool adds one fact line and never rewrites or prunes. Tidying is the
//! offline job of [`curate`] (`codesmith memory consolidate`), started by a person.
//! [`load_memory`] reads the index of both stores (titles, one line each, and the topic
//! files with their entry counts) into the system prompt within [`MAX_INDEX_LINES`] lines
//! and [`MAX_INDEX_BYTES`] bytes; the [`Recall`] tool returns the entries a query matches.

pub mod curate;
mod load;
mod recall;
mod remember;
mod store;

use std::path::{Path, PathBuf};

pub use load::{
    Entry, MAX_FILE_BYTES, MAX_INDEX_BYTES, MAX_INDEX_LINES, TITLE_CHARS, load_memory,
    memory_entries,
};
pub use recall::{MAX_RECALL, Recall, rank};
pub use remember::Remember;
pub use store::{Appended, MemoryError, append_fact, topic_file_name};

/// Name of the index file in a memory directory.
pub const INDEX_FILE: &str = "MEMORY.md";
/// Name of the backup `codesmith memory consolidate --apply` writes before replacing the index.
pub const BACKUP_FILE: &str = "MEMORY.md.bak";
/// Line budget of an index (what `codesmith memory consolidate` keeps it within): 200 lines.
pub const MAX_LINES: usize = 200;
/// Byte budget of an index: 25 KB.
pub const MAX_BYTES: usize = 25 * 1024;
/// Longest fact `remember` accepts, in bytes.
pub const MAX_FACT_BYTES: usize = 1_000;

/// Which store a fact goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `$CODESMITH_HOME/memory/`: facts about the user, true in every project.
    User,
    /// `<workspace>/.codesmith/memory/`: facts about this repository.
    Project,
}

/// The user's memory directory: `<home>/memory`.
pub fn user_memory_dir(home: &Path) -> PathBuf {
    home.join("memory")
}

/// The project's memory directory: `<workspace>/.codesmith/memory`.
pub fn project_memory_dir(workspace: &Path) -> PathBuf {
    workspace.join(".codesmith").join("memory")
}

/// The directory of `scope`.
pub fn memory_dir(scope: Scope, home: &Path, workspace: &Path) -> PathBuf {
    match scope {
        Scope::User => user_memory_dir(home),
        Scope::Project => project_memory_dir(workspace),
    }
}

/// Whether `text` fits the index budget ([`MAX_LINES`] lines, [`MAX_BYTES`] bytes).
pub fn within_budget(text: &str) -> bool {
    text.lines().count() <= MAX_LINES && text.len() <= MAX_BYTES
}
