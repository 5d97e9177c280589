//! The file tools: `read_file`, `write_file`, `edit_file`, `fim_edit` (and the shared write path that
//! `apply_patch` can reuse: [`commit::commit_text`]).

mod apply_patch;
mod args;
mod closest;
pub mod commit;
pub mod concerns;
pub mod diff;
mod edit_file;
mod fim_edit;
pub mod matching;
mod read_file;
mod write_file;

pub use apply_patch::ApplyPatch;
pub use edit_file::EditFile;
pub use fim_edit::FimEdit;
pub use read_file::ReadFile;
pub use write_file::WriteFile;

pub(crate) use args::invalid as invalid_args;
pub(crate) use args::parse as parse_args;
pub use diff::TextDiff;

/// The file and search tools this crate provides, ready to register: `apply_patch`,
/// `edit_file`, `file_search`, `fim_edit`, `grep_files`, `list_dir`, `read_file`, `write_file` (sorted by
/// name).
pub fn file_tools() -> Vec<std::sync::Arc<dyn crate::Tool>> {
    use crate::search::{FileSearch, GrepFiles, ListDir};
    vec![
        std::sync::Arc::new(ApplyPatch),
        std::sync::Arc::new(EditFile),
        std::sync::Arc::new(FileSearch),
        std::sync::Arc::new(FimEdit),
        std::sync::Arc::new(GrepFiles),
        std::sync::Arc::new(ListDir),
        std::sync::Arc::new(ReadFile),
        std::sync::Arc::new(WriteFile),
    ]
}

/// Registers [`file_tools`] into `registry`.
pub fn register_file_tools(registry: &mut crate::Registry) {
    for tool in file_tools() {
        registry.register(tool);
    }
}
