//! `write_file`: create a file (and its missing parents) or overwrite one already read.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::lock::path_lock;
use crate::fs::text::{convert_line_endings, load_text};
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::args::{check_fresh, invalid, parse};
use super::commit::commit_text;

const EXAMPLE: &str = r#"{"path": "src/util.rs", "content": "pub fn one() -> u32 {\n    1\n}\n"}"#;

const DESCRIPTION: &str = "Create a new file, or replace a whole file, with the given content. Use this \
instead of shell heredocs (cat <<EOF > file), echo redirection or tee. Missing parent directories are \
created and named in the result; check that list for typos. An existing file is replaced only if you \
read it in this session (or pass overwrite=true after reading it) and it has not changed since; to \
change part of a file use edit_file instead, which cannot drop code you did not quote. A CRLF file keeps \
CRLF and a BOM is kept. Text only: content with a NUL character is refused (create binary data with \
exec_shell). Rust, TOML and JSON files that parsed before must still parse after, or the \
write is refused and nothing changes.\n\
Examples: {\"path\": \"src/util.rs\", \"content\": \"pub fn one() -> u32 {\\n    1\\n}\\n\"}; \
{\"path\": \"README.md\", \"content\": \"# Title\\n\", \"overwrite\": true}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
    #[serde(default)]
    overwrite: bool,
    #[serde(default)]
    force_fresh: bool,
}

/// The `write_file` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteFile;

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Workspace-relative file path."},
                "content": {"type": "string", "description": "The complete new file content."},
                "overwrite": {"type": "boolean", "description": "Replace an existing file you have read (default false)."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::WritesFiles
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let args: Args = parse("write_file", args, EXAMPLE)?;
        write(ctx, &args)
    }
}

fn write(ctx: &ToolContext, args: &Args) -> ToolOutcome {
    crate::files::args::allow_force_fresh(
        ctx,
        args.force_fresh,
        "Read the file with read_file first, then write it.",
    )?;
    let path = ctx.resolve_for_write(&args.path)?;
    if path.rel == "." || path.abs.is_dir() {
        return Err(invalid(
            format!(
                "\"{}\" is a directory; write_file needs a file path.",
                path.rel
            ),
            "Name a file inside the directory, e.g. \"dir/file.txt\".",
        ));
    }
    if let Some(file) = file_ancestor(&path.abs) {
        let shown = file
            .strip_prefix(&ctx.workspace)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        return Err(invalid(
            format!(
                "\"{}\" cannot be created: \"{shown}\" is a file, not a directory.",
                path.rel
            ),
            "Choose a path whose parent directories are directories (check with list_dir).",
        )
        .with("path", path.rel.as_str()));
    }
    let lock = path_lock(&path.abs);
    let _guard = lock.lock();
    let exists = path.abs.exists();
    let old = if exists {
        let loaded = load_text(&path)?;
        let fresh = (args.force_fresh && ctx.force_fresh_allowed)
            || ctx.freshness.check(&path.abs, &path.rel).is_ok();
        if !fresh {
            if !args.overwrite {
                return Err(already_exists(&path.rel));
            }
            check_fresh(ctx, &path.abs, &path.rel)?;
        }
        Some(loaded.file)
    } else {
        None
    };
    let content = match &old {
        Some(f) => convert_line_endings(&args.content, f.ending),
        None => args.content.clone(),
    };
    let report = commit_text(ctx, &path, old.as_ref(), &content, None)?;
    let verb = if exists { "Overwrote" } else { "Created" };
    let mut msg = format!(
        "{verb} \"{}\" ({} bytes, {} lines).",
        path.rel, report.bytes, report.lines
    );
    for note in [
        report.created_note(),
        report.formatted_note().map(String::from),
    ]
    .into_iter()
    .flatten()
    {
        msg.push(' ');
        msg.push_str(&note);
    }
    let kind = if exists {
        codesmith_protocol::ChangeKind::Modified
    } else {
        codesmith_protocol::ChangeKind::Created
    };
    let change = report.diff.clone().into_change(&path.rel, kind, None);
    Ok(ToolOutput::new(msg)
        .with_changes([change])
        .with("path", path.rel.as_str())
        .with("sha256", report.sha256.as_str())
        .with("bytes", report.bytes)
        .with("created", !exists)
        .with("created_directories", report.created_json())
        .with("formatted", report.formatted))
}

/// The nearest existing ancestor of `abs`, when it is not a directory.
fn file_ancestor(abs: &std::path::Path) -> Option<std::path::PathBuf> {
    let mut cur = abs.parent()?;
    loop {
        match std::fs::metadata(cur) {
            Ok(m) if m.is_dir() => return None,
            Ok(_) => return Some(cur.to_path_buf()),
            Err(_) => cur = cur.parent()?,
        }
    }
}

fn already_exists(rel: &str) -> Refusal {
    Refusal::new(
        ErrorCode::AlreadyExists,
        format!("\"{rel}\" already exists and has not been read in this session."),
        format!(
            "To change part of it, read it with read_file and use edit_file. To replace it \
             entirely, read it with read_file, then call write_file with path=\"{rel}\" and \
             overwrite=true."
        ),
    )
    .with("path", rel)
}
