//! `apply_patch`: several hunks over several files in one call, all or nothing (fuzz
//! 0–50 with a carried offset, failure previews, reverse-order
//! rollback). Parsing, matching and planning live in the pure `codesmith-patch` crate; this
//! module adds the checks every writing tool passes: containment, per-path locks, freshness,
//! the syntax check, atomic writes.

mod refusal;
mod tx;

use std::collections::HashMap;

use async_trait::async_trait;
use codesmith_patch::{FileChange, FileOp, MatchLevel, Patch, plan_parsed};
use codesmith_protocol::{ChangeKind, ChangedFile};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::lock::path_locks;
use crate::fs::os_error::{Access, io_refusal};
use crate::fs::paths::ResolvedPath;
use crate::fs::text::{TextFile, load_text};
use crate::syntax_check::syntax;
use crate::{Capability, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::TextDiff;
use super::args::{invalid, parse};
use tx::Tx;

const EXAMPLE: &str = r#"{"patch": "*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn total() {\n-    a + b\n+    a + b + c\n*** End Patch\n"}"#;

const DESCRIPTION: &str = "Apply several edits at once: many hunks in one file, or changes across \
files that must land together (create, delete, rename, update). Use this instead of patch, git apply, \
chains of sed -i, or shell heredocs; for one replacement in one file, edit_file is simpler. Two forms \
are accepted. (1) A unified diff: `--- a/path`, `+++ b/path`, then `@@ -l,n +l,n @@` hunks; /dev/null \
on one side creates or deletes the file. (2) The envelope: `*** Begin Patch`, then sections \
`*** Update File: path` (optionally followed by `*** Move to: new/path`), `*** Add File: path` (every \
content line starts with `+`) or `*** Delete File: path`, then `*** End Patch`; update hunks start \
with `@@`, optionally `@@ <a line above the change>` to narrow the search. Hunk lines start with a \
space (unchanged), `-` (removed) or `+` (added); give about 3 unchanged lines around each change, \
copied from a read_file result without the line-number prefixes, and list hunks in file order. Hunks \
are located by content: a stated line number may be off by up to 50 lines, and whitespace \
differences are tolerated as a last resort. Each existing file the patch changes must have been \
read in this session and be unchanged since. All or nothing: if any hunk or file fails, no file is \
changed and the refusal shows the lines expected next to the file's current lines. CRLF files stay \
CRLF; Rust/TOML/JSON files that parsed before must still parse.\n\
Examples: {\"patch\": \"*** Begin Patch\\n*** Update File: src/lib.rs\\n@@ fn total() {\\n-    a + b\\n+    a + b + c\\n*** End Patch\\n\"}; \
{\"patch\": \"--- a/README.md\\n+++ b/README.md\\n@@ -1,2 +1,2 @@\\n # Demo\\n-old line\\n+new line\\n\"}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    patch: String,
    #[serde(default)]
    force_fresh: bool,
}

/// The `apply_patch` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ApplyPatch;

#[async_trait]
impl Tool for ApplyPatch {
    fn name(&self) -> &'static str {
        "apply_patch"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "patch": {"type": "string", "description": "A unified diff, or a *** Begin Patch ... *** End Patch envelope."}
            },
            "required": ["patch"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::WritesFiles
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let args: Args = parse("apply_patch", args, EXAMPLE)?;
        apply(ctx, &args)
    }
}

/// The files a patch touches, resolved and loaded.
struct Files {
    /// By workspace-relative spelling.
    resolved: HashMap<String, ResolvedPath>,
    /// Current text of every existing path, by workspace-relative spelling.
    loaded: HashMap<String, TextFile>,
}

fn apply(ctx: &ToolContext, args: &Args) -> ToolOutcome {
    crate::files::args::allow_force_fresh(
        ctx,
        args.force_fresh,
        "Read the files with read_file first, then apply the patch.",
    )?;
    let mut patch = codesmith_patch::parse(&args.patch).map_err(refusal::parse)?;
    let resolved = resolve_all(ctx, &mut patch)?;
    let locks = path_locks(resolved.values().map(|p| p.abs.as_path()));
    let _guards: Vec<_> = locks.iter().map(|l| l.lock()).collect();
    let files = load_all(resolved)?;
    check_removals(&patch, &files)?;
    if !args.force_fresh {
        check_fresh(ctx, &patch, &files)?;
    }
    let read = |rel: &str| files.loaded.get(rel).map(|f| f.text.clone());
    let changes = plan_parsed(&patch, &read).map_err(refusal::patch)?;
    check_all(&changes, &files)?;
    let mut tx = Tx::new(ctx);
    let mut lines = Vec::new();
    let mut metas = Vec::new();
    let mut changed = Vec::new();
    for change in &changes {
        match write_one(&mut tx, change, &files) {
            Ok((line, meta, file)) => {
                lines.push(line);
                metas.push(meta);
                changed.push(file);
            }
            Err(refusal) => {
                tx.rollback();
                return Err(refusal);
            }
        }
    }
    let modes = match set_modes(&patch, &files) {
        Ok(m) => m,
        Err(refusal) => {
            tx.rollback();
            return Err(refusal);
        }
    };
    Ok(summary(lines, metas, &modes, tx.created_dirs()).with_changes(changed))
}

/// A mode line of the patch as applied: the file and its permission bits before and after
/// (equal when the file already had the mode).
struct ModeSet {
    path: String,
    before: u32,
    after: u32,
}

/// Applies the patch's git mode lines after its writes: `100755` adds the execute bits
/// where the read bits are (as git does on checkout), `100644` clears them. A mode change
/// that cannot be made undoes the ones made before it.
///
/// Errors: `NOT_FOUND` for a mode change on a file that does not exist after the patch;
/// the refusal [`io_refusal`] gives when the mode cannot be set (`DENIED` for a file
/// CodeSmith may not change).
fn set_modes(patch: &Patch, files: &Files) -> Result<Vec<ModeSet>, Refusal> {
    let mut out = Vec::new();
    use std::os::unix::fs::PermissionsExt;
    // Modes are changed with fchmod on descriptors opened below the workspace handle.
    let mut done: Vec<(std::fs::File, std::fs::Permissions)> = Vec::new();
    let undo = |done: &[(std::fs::File, std::fs::Permissions)]| {
        for (file, perms) in done.iter().rev() {
            let _ = file.set_permissions(perms.clone());
        }
    };
    for m in &patch.modes {
        let Some(path) = files.resolved.get(&m.path) else {
            undo(&done);
            return Err(Refusal::internal());
        };
        let opened = path
            .open_read()
            .and_then(|f| f.metadata().map(|meta| (f, meta.permissions())));
        let (file, before) = match opened {
            Ok(x) => x,
            Err(_) => {
                undo(&done);
                return Err(crate::fs::text::not_found(&path.rel));
            }
        };
        let bits = before.mode() & 0o7777;
        let after = if m.executable {
            bits | ((bits & 0o444) >> 2)
        } else {
            bits & !0o111
        };
        if after != bits {
            if let Err(e) = file.set_permissions(std::fs::Permissions::from_mode(after)) {
                undo(&done);
                return Err(io_refusal(&path.rel, Access::Write, &e));
            }
            done.push((file, before));
        }
        out.push(ModeSet {
            path: path.rel.clone(),
            before: bits,
            after,
        });
    }
    Ok(out)
}

/// Resolves every path (containment), and rewrites the patch to the workspace-relative
/// spellings so absolute paths inside the workspace and `./x` forms work.
fn resolve_all(
    ctx: &ToolContext,
    patch: &mut Patch,
) -> Result<HashMap<String, ResolvedPath>, Refusal> {
    let paths: Vec<String> = patch.paths().into_iter().map(str::to_string).collect();
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let resolved = ctx.resolve_all_for_write(&refs)?;
    let by_model: HashMap<String, ResolvedPath> = paths.into_iter().zip(resolved).collect();
    let rel = |p: &mut String| {
        if let Some(r) = by_model.get(p.as_str()) {
            *p = r.rel.clone();
        }
    };
    for m in &mut patch.modes {
        rel(&mut m.path);
    }
    for op in &mut patch.ops {
        match op {
            FileOp::Add { path, .. } | FileOp::Delete { path } => rel(path),
            FileOp::Update { path, move_to, .. } => {
                rel(path);
                if let Some(dest) = move_to {
                    rel(dest);
                }
            }
        }
    }
    Ok(by_model.into_values().map(|r| (r.rel.clone(), r)).collect())
}

fn load_all(resolved: HashMap<String, ResolvedPath>) -> Result<Files, Refusal> {
    let mut loaded = HashMap::new();
    for (rel, path) in &resolved {
        if path.rel == "." {
            return Err(invalid(
                "The patch names the workspace root instead of a file.",
                "Give each section a file path such as \"src/main.rs\".",
            ));
        }
        if path.abs.exists() {
            loaded.insert(rel.clone(), load_text(path)?.file);
        }
    }
    Ok(Files { resolved, loaded })
}

/// A deleted or moved-away path must name the file itself: removing a symlink's resolved
/// location would delete the file it points to and leave the link dangling, and a move
/// onto another spelling of the same file would write it and then delete it.
///
/// Errors: `INVALID_ARGUMENTS` naming the link or the two spellings, before anything is
/// written.
fn check_removals(patch: &Patch, files: &Files) -> Result<(), Refusal> {
    for op in &patch.ops {
        let (path, dest) = match op {
            FileOp::Delete { path } => (path, None),
            FileOp::Update {
                path,
                move_to: Some(dest),
                ..
            } => (path, Some(dest)),
            _ => continue,
        };
        let Some(src) = files.resolved.get(path) else {
            continue;
        };
        let named = src.root.path().join(&src.rel);
        if std::fs::symlink_metadata(&named).is_ok_and(|m| m.file_type().is_symlink()) {
            let target = src
                .abs
                .strip_prefix(src.root.path())
                .map_or_else(|_| src.rel.clone(), |t| t.to_string_lossy().into_owned());
            return Err(invalid(
                format!(
                    "\"{path}\" is a symbolic link to \"{target}\": {} it here would remove \
                     \"{target}\", the file it points to, and leave the link dangling. The \
                     patch was not applied (no file was changed).",
                    if dest.is_some() { "moving" } else { "deleting" }
                ),
                format!(
                    "Edit \"{target}\" in place, or move or delete the link itself with \
                     exec_shell (`mv`, `rm`)."
                ),
            )
            .with("path", path.as_str())
            .with("reason", "symlink"));
        }
        if let Some(d) = dest.and_then(|d| files.resolved.get(d))
            && d.abs == src.abs
        {
            return Err(invalid(
                format!(
                    "\"{path}\" and \"{}\" are the same file: moving it onto itself would \
                     delete it. The patch was not applied (no file was changed).",
                    d.rel
                ),
                "Drop the `*** Move to:` line to edit the file in place.",
            )
            .with("path", path.as_str())
            .with("reason", "same_file"));
        }
    }
    Ok(())
}

/// Every existing file the patch changes, deletes or overwrites must be fresh.
fn check_fresh(ctx: &ToolContext, patch: &Patch, files: &Files) -> Result<(), Refusal> {
    for rel in patch.paths() {
        if let (Some(path), true) = (files.resolved.get(rel), files.loaded.contains_key(rel)) {
            ctx.freshness.check(&path.abs, &path.rel)?;
        }
    }
    Ok(())
}

/// Runs the syntax check on every new text before anything is written.
fn check_all(changes: &[FileChange], files: &Files) -> Result<(), Refusal> {
    for change in changes {
        let (src, dest, text) = match change {
            FileChange::Add { path, content } => (path, path, content),
            FileChange::Update {
                path,
                new_content,
                move_to,
                ..
            } => (path, move_to.as_ref().unwrap_or(path), new_content),
            FileChange::Delete { .. } => continue,
        };
        if let Some(target) = files.resolved.get(dest) {
            let old = files.loaded.get(src).map(|f| f.text.as_str());
            syntax::check_edit(&target.abs, &target.rel, old, text)?;
        }
    }
    Ok(())
}

/// Writes one file change; returns its summary line, its `meta.files` entry and the
/// change as front ends show it (with the diff of what was written).
fn write_one(
    tx: &mut Tx<'_>,
    change: &FileChange,
    files: &Files,
) -> Result<(String, Value, ChangedFile), Refusal> {
    let path_of = |rel: &str| files.resolved.get(rel).ok_or_else(Refusal::internal);
    match change {
        FileChange::Add { path, content } => {
            let target = path_of(path)?;
            let old = files.loaded.get(path);
            let report = tx.write(target, old, content, None)?;
            let verb = if old.is_some() { "replaced" } else { "created" };
            let kind = if old.is_some() {
                ChangeKind::Modified
            } else {
                ChangeKind::Created
            };
            let file = report.diff.clone().into_change(path, kind, None);
            Ok((
                format!("{verb} {path}"),
                json!({"path": path, "action": verb, "sha256": report.sha256, "formatted": report.formatted}),
                file,
            ))
        }
        FileChange::Update {
            path,
            new_content,
            move_to,
            hunks,
        } => {
            let dest = move_to.as_ref().unwrap_or(path);
            let old = files.loaded.get(path);
            // A move keeps the file's mode and owner (an executable script stays
            // executable).
            let like = match move_to {
                Some(_) => path_of(path)?
                    .ownership()
                    .map_err(|e| io_refusal(path, Access::Read, &e))?,
                None => None,
            };
            let target = path_of(dest)?;
            let report = tx.write(target, old, new_content, like)?;
            if move_to.is_some() {
                tx.remove(path_of(path)?)?;
            }
            // A move onto an existing file replaces it: say so.
            let replaced = move_to
                .as_ref()
                .is_some_and(|d| files.loaded.contains_key(d));
            let mut line = match move_to {
                Some(d) if replaced => {
                    format!("moved {path} -> {d}, replacing the {d} that was there")
                }
                Some(d) => format!("moved {path} -> {d}"),
                None => format!("updated {path}"),
            };
            if !hunks.is_empty() {
                let n = hunks.len();
                line.push_str(&format!(" ({n} hunk{})", if n == 1 { "" } else { "s" }));
            }
            for h in hunks.iter().filter(|h| h.level != MatchLevel::Exact) {
                line.push_str(&format!(
                    "; hunk {} matched at line {} only {}",
                    h.hunk,
                    h.line,
                    loose_note(h.level)
                ));
            }
            let hunks_json: Vec<Value> = hunks
                .iter()
                .map(|h| json!({"hunk": h.hunk, "line": h.line, "offset": h.offset, "match": level_id(h.level)}))
                .collect();
            let kind = if move_to.is_some() {
                ChangeKind::Moved
            } else {
                ChangeKind::Modified
            };
            let file = report
                .diff
                .clone()
                .into_change(path, kind, move_to.as_deref());
            Ok((
                line,
                json!({"path": path, "action": if move_to.is_some() { "moved" } else { "updated" },
                       "moved_to": move_to, "replaced_existing": replaced,
                       "sha256": report.sha256, "formatted": report.formatted,
                       "hunks": hunks_json}),
                file,
            ))
        }
        FileChange::Delete { path } => {
            tx.remove(path_of(path)?)?;
            let before = files.loaded.get(path).map_or("", |f| f.text.as_str());
            let file = TextDiff::between(before, "").into_change(path, ChangeKind::Deleted, None);
            Ok((
                format!("deleted {path}"),
                json!({"path": path, "action": "deleted"}),
                file,
            ))
        }
    }
}

fn loose_note(level: MatchLevel) -> &'static str {
    match level {
        MatchLevel::Exact => "exactly",
        MatchLevel::TrailingWhitespace => "when trailing whitespace was ignored",
        MatchLevel::Whitespace => "when indentation and trailing whitespace were ignored",
        MatchLevel::Punctuation => "when whitespace and typographic punctuation were ignored",
    }
}

fn level_id(level: MatchLevel) -> &'static str {
    match level {
        MatchLevel::Exact => "exact",
        MatchLevel::TrailingWhitespace => "trailing_whitespace",
        MatchLevel::Whitespace => "whitespace",
        MatchLevel::Punctuation => "punctuation",
    }
}

/// The result: one line and one `meta.files` entry per changed file. A mode change is
/// named on its file's line (and entry) when the patch also wrote that file, and is a file
/// change of its own otherwise; a mode line that changed nothing is reported as such and
/// not counted.
fn summary(
    mut lines: Vec<String>,
    mut metas: Vec<Value>,
    modes: &[ModeSet],
    created: Vec<String>,
) -> ToolOutput {
    let mut unchanged = Vec::new();
    for m in modes {
        let written = metas
            .iter()
            .position(|f| f["moved_to"].as_str().or(f["path"].as_str()) == Some(m.path.as_str()));
        if m.before == m.after {
            if written.is_none() {
                unchanged.push(format!("{} is already {:o}", m.path, m.after));
            }
            continue;
        }
        let note = format!("mode changed {} {:o} -> {:o}", m.path, m.before, m.after);
        match written {
            Some(i) => {
                lines[i].push_str(&format!("; {note}"));
                metas[i]["mode"] = json!(format!("{:o}", m.after));
            }
            None => {
                lines.push(note);
                metas.push(json!({"path": m.path, "action": "mode_changed",
                                  "mode_before": format!("{:o}", m.before),
                                  "mode": format!("{:o}", m.after)}));
            }
        }
    }
    let n = metas.len();
    let mut msg = format!(
        "Applied the patch ({n} file change{}):",
        if n == 1 { "" } else { "s" }
    );
    for line in lines.iter().chain(&unchanged) {
        msg.push_str("\n  ");
        msg.push_str(line);
    }
    if !created.is_empty() {
        let names: Vec<String> = created.iter().map(|d| format!("{d}/")).collect();
        msg.push_str(&format!("\nCreated directories: {}.", names.join(", ")));
    }
    if metas.iter().any(|m| m["formatted"] == json!(true)) {
        msg.push_str("\nSome Rust files were reformatted with rustfmt (they were rustfmt-clean before); re-read before quoting them.");
    }
    ToolOutput::new(msg)
        .with("files", Value::Array(metas))
        .with("created_directories", json!(created))
}
