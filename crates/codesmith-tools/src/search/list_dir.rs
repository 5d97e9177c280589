//! `list_dir`: a directory's entries, optionally a few levels deep.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::text::not_found;
use crate::{Capability, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::walk::{EXCLUDED_DIRS, builder, rel};

/// Default depth (1: direct entries only).
pub(super) const DEFAULT_DEPTH: usize = 1;
/// Deepest listing allowed.
pub(super) const MAX_DEPTH: usize = 5;
/// Entries shown at most; the rest are counted.
pub(super) const MAX_ENTRIES: usize = 500;

const EXAMPLE: &str = r#"{"path": "src"}"#;

const DESCRIPTION: &str = "List the files and directories under a workspace directory (directories end \
with `/`), sorted. Use this instead of ls, ls -R or tree in the shell. depth 1 (default) shows direct \
entries; up to 5 levels are allowed. Entries that .gitignore ignores are left out; .git, node_modules, \
target, dist, build, __pycache__ and .venv are shown but not entered. At most 500 entries are shown; \
meta.total_entries counts them all.\n\
Examples: {} (the workspace root); {\"path\": \"src\", \"depth\": 2}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: Option<String>,
    depth: Option<i64>,
}

/// The `list_dir` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ListDir;

#[async_trait]
impl Tool for ListDir {
    fn name(&self) -> &'static str {
        "list_dir"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory, workspace-relative (default: the workspace root)."},
                "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "Levels to descend (default 1, at most 5)."}
            },
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ReadOnly
    }

    fn supports_parallel(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let args: Args = crate::files::parse_args("list_dir", args, EXAMPLE)?;
        let path = ctx.resolve_for_read(args.path.as_deref().unwrap_or("."))?;
        if !path.exists {
            return Err(not_found(&path.rel));
        }
        if !path.abs.is_dir() {
            return Err(crate::files::invalid_args(
                format!("\"{}\" is a file, not a directory.", path.rel),
                "Use read_file to read a file; list_dir takes a directory.",
            ));
        }
        let depth = args
            .depth
            .unwrap_or(DEFAULT_DEPTH as i64)
            .clamp(1, MAX_DEPTH as i64) as usize;
        let start = path.abs.clone();
        let shown_rel = path.rel.clone();
        let skip = ctx.private_home();
        tokio::task::spawn_blocking(move || list(&start, &shown_rel, depth, skip))
            .await
            .map_err(|e| crate::tool::join_refusal("list_dir", &e))
    }
}

/// What a directory entry that is neither a file, a directory nor a symlink is.
fn special_kind(t: Option<std::fs::FileType>) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        match t {
            Some(t) if t.is_fifo() => return "named pipe",
            Some(t) if t.is_socket() => return "socket",
            Some(t) if t.is_block_device() || t.is_char_device() => return "device",
            _ => {}
        }
    }
    let _ = t;
    "not a regular file"
}

fn list(
    start: &std::path::Path,
    shown_rel: &str,
    depth: usize,
    skip: Option<std::path::PathBuf>,
) -> ToolOutput {
    let mut entries = Vec::new();
    for entry in builder(start, Some(depth), skip).build().flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let name = rel(start, entry.path());
        entries.push(match entry.file_type() {
            Some(t) if t.is_dir() => format!("{name}/"),
            Some(t) if t.is_file() => name,
            // Not a plain file: say what it is, so a link to a directory or a pipe is not
            // taken for a file to read.
            Some(t) if t.is_symlink() => match std::fs::read_link(entry.path()) {
                Ok(to) => format!("{name} -> {} (symlink)", to.display()),
                Err(_) => format!("{name} (symlink)"),
            },
            t => format!("{name} ({})", special_kind(t)),
        });
    }
    // The excluded directories are not walked, but their existence is worth showing.
    if let Ok(rd) = std::fs::read_dir(start) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if EXCLUDED_DIRS.contains(&n.as_str()) && e.path().is_dir() {
                entries.push(format!("{n}/ (not listed)"));
            }
        }
    }
    entries.sort();
    let total = entries.len();
    let truncated = total > MAX_ENTRIES;
    entries.truncate(MAX_ENTRIES);
    let mut out = if total == 0 {
        format!("\"{shown_rel}\" is empty.")
    } else {
        entries.join("\n")
    };
    if truncated {
        out.push_str(&format!(
            "\n[{total} entries; showing the first {MAX_ENTRIES}. List a subdirectory or a \
             smaller depth.]"
        ));
    }
    ToolOutput::new(out)
        .with("path", shown_rel)
        .with("total_entries", total)
        .with("truncated", truncated)
}
