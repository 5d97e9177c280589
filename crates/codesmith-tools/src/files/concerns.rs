//! What a file tool call touches that needs a person, found before it runs: the approval
//! gate asks about it (in `suggest`), refuses it (`never`, headless) or lets it run
//! (`auto`, where secrets come back masked and linked files are still refused by the
//! tools themselves).
//!
//! - Reading a secret ([`codesmith_policy::secret_file`], by path and by the file's
//!   first [`HEAD_BYTES`]) or a file with other hard links.
//! - Writing a file another program runs later ([`codesmith_policy::runs_later`],
//!   including the directory `core.hooksPath` names) or a file with other hard links.
//!
//! Each path is judged as the model spelled it (normalised) and where it really lands
//! (symlinks followed, relative to the canonical workspace), so `./x/../.cargo/config.toml`
//! and a symlink to `.cargo/` are the same file. Paths that do not resolve are left to the
//! tool, which refuses them.

use std::io::Read;

use codesmith_policy::{SecretKind, secret_file};
use serde_json::Value;

use crate::ToolContext;
use crate::fs::paths::ResolvedPath;

/// How much of a file is read to judge its content (a private key header, a registry
/// token, git credentials): 64 KiB.
pub const HEAD_BYTES: u64 = 64 * 1024;

/// Why a call needs a person, for one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Concern {
    /// Reading it shows a secret.
    Secret {
        /// Workspace-relative path.
        path: String,
        /// What it holds.
        kind: SecretKind,
    },
    /// A regular file with other hard links: they may lie outside the workspace, and a
    /// write changes all of them.
    Linked {
        /// Workspace-relative path.
        path: String,
        /// Its link count (2 or more).
        links: u64,
    },
    /// Another program runs the file later on its own.
    RunsLater {
        /// Workspace-relative path.
        path: String,
        /// Who, and when.
        by: codesmith_policy::RunsLater,
    },
}

impl Concern {
    /// The workspace-relative path it is about.
    pub fn path(&self) -> &str {
        match self {
            Concern::Secret { path, .. }
            | Concern::Linked { path, .. }
            | Concern::RunsLater { path, .. } => path,
        }
    }

    /// One sentence for the approval request.
    pub fn reason(&self) -> String {
        match self {
            Concern::Secret { path, kind } => format!(
                "`{path}` is {}: its content would be sent to the model provider",
                kind.describe()
            ),
            Concern::Linked { path, links } => linked_reason(path, *links),
            Concern::RunsLater { path, by } => by.reason(path),
        }
    }
}

fn linked_reason(path: &str, links: u64) -> String {
    format!(
        "`{path}` is a file with {links} hard links: its other names are unknown and may lie \
         outside the workspace (a write changes every one of them)"
    )
}

/// The paths a call of the file tool `tool` writes, as the model wrote them: `path` of
/// `write_file`/`edit_file`/`fim_edit`; every path of an `apply_patch` patch (added, updated,
/// deleted, and the destination of a move). A patch that does not parse gives none (the
/// tool refuses it).
pub fn written_paths(tool: &str, args: &Value) -> Vec<String> {
    match tool {
        "write_file" | "edit_file" | "fim_edit" => args
            .get("path")
            .and_then(Value::as_str)
            .map(str::to_string)
            .into_iter()
            .collect(),
        "apply_patch" => args
            .get("patch")
            .and_then(Value::as_str)
            .and_then(|p| codesmith_patch::parse(p).ok())
            .map(|p| p.paths().into_iter().map(str::to_string).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// What writing `model_paths` touches: files another program runs later and existing
/// regular files with other hard links. A path that does not resolve is skipped (the
/// tool refuses it).
pub fn write_concerns(ctx: &ToolContext, model_paths: &[String]) -> Vec<Concern> {
    let hooks = crate::sandbox::exposure::hooks_path_rel(&ctx.workspace);
    let mut out = Vec::new();
    for model_path in model_paths {
        let Ok(path) = ctx.resolve(model_path) else {
            continue;
        };
        let real = real_rel(&path);
        let by = codesmith_policy::runs_later(&path.rel, hooks.as_deref())
            .or_else(|| codesmith_policy::runs_later(&real, hooks.as_deref()));
        if let Some(by) = by {
            out.push(Concern::RunsLater {
                path: path.rel.clone(),
                by,
            });
        }
        if let Some(links) = other_links(&path) {
            out.push(Concern::Linked {
                path: path.rel.clone(),
                links,
            });
        }
    }
    out
}

/// What reading `model_path` shows that needs a person: a secret (by its name as
/// written, its real location, or its first [`HEAD_BYTES`]), or a regular file with other
/// hard links (whose other names may be anywhere: reading it may read a file outside the
/// workspace). `None` for an ordinary file or a path that does not resolve.
pub fn read_concern(ctx: &ToolContext, model_path: &str) -> Option<Concern> {
    let path = ctx.resolve(model_path).ok()?;
    if let Some(kind) = secret_of(&path) {
        return Some(Concern::Secret {
            path: path.rel.clone(),
            kind,
        });
    }
    other_links(&path).map(|links| Concern::Linked {
        path: path.rel.clone(),
        links,
    })
}

/// The secret `path` holds, by [`codesmith_policy::secret_file`] over its name as written,
/// its real location and its content as `read_file` would show it (see [`secret_in`]).
pub fn secret_of(path: &ResolvedPath) -> Option<SecretKind> {
    let content = content_of(path);
    secret_in(path, content.as_deref())
}

/// The secret `path` holds when `content` is what a tool shows of it: the whole text,
/// decoded as `read_file` decodes it (a key in a UTF-16 file, or after the first
/// [`HEAD_BYTES`], is found there), or `None` to judge by the path alone.
pub fn secret_in(path: &ResolvedPath, content: Option<&[u8]>) -> Option<SecretKind> {
    secret_file(&path.rel, content).or_else(|| secret_file(&real_rel(path), content))
}

/// The content of the regular file at `path` as the file tools show it: its text decoded
/// (UTF-16, Latin-1, …) when it is text, else its first [`HEAD_BYTES`]; `None` when it
/// cannot be read.
fn content_of(path: &ResolvedPath) -> Option<Vec<u8>> {
    let file = path.open_read().ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(crate::fs::text::MAX_TEXT_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    match crate::fs::text::TextFile::decode_owned(bytes) {
        Ok(text) => Some(text.text.into_bytes()),
        Err(_) => {
            let mut head = Vec::new();
            path.open_read()
                .ok()?
                .take(HEAD_BYTES)
                .read_to_end(&mut head)
                .ok()?;
            Some(head)
        }
    }
}

/// `path`'s real location relative to the workspace root (`/`-separated).
fn real_rel(path: &ResolvedPath) -> String {
    path.inner
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The link count of the regular file at `path` when it has other hard links.
pub fn other_links(path: &ResolvedPath) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(&path.abs).ok()?;
    (meta.is_file() && meta.nlink() > 1).then(|| meta.nlink())
}

/// The `DENIED` refusal of a write to a file with other hard links that nobody approved.
pub(crate) fn linked_refusal(rel: &str, links: u64) -> crate::Refusal {
    crate::Refusal::new(
        crate::ErrorCode::Denied,
        format!(
            "{}; the file tools do not write it without the user's approval.",
            linked_reason(rel, links)
        ),
        "Ask the user to approve this write in an interactive session, or write a new file \
         instead (delete this name first if the task needs the path: that leaves the other \
         names untouched).",
    )
    .with("path", rel)
    .with("links", links)
}
