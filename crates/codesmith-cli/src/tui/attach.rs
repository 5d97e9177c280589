//! `@path` in a task: the workspace file it names is attached to the task, as Claude Code
//! does. A path resolves inside the workspace only (the file tools' containment, CodeSmith's
//! home refused); what it resolves to is an [`Attachment`] of one kind or another, or the
//! reason it cannot be attached. A word after `@` that names no file is sent as typed.

use std::io::Read;
use std::path::Path;

use codesmith_tools::ToolContext;

/// Most bytes of a file attached; a longer file is cut there, and the attachment says so.
pub(crate) const MAX_ATTACHED_BYTES: usize = 256 * 1024;

/// A file `@path` resolved to, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attachment {
    /// A text file (UTF-8): its text, cut at [`MAX_ATTACHED_BYTES`] when `truncated`.
    Text {
        /// The workspace-relative path.
        path: String,
        /// The text.
        text: String,
        /// The file was longer than [`MAX_ATTACHED_BYTES`].
        truncated: bool,
    },
}

impl Attachment {
    /// The text the model reads for this attachment.
    fn model_text(&self) -> String {
        match self {
            Attachment::Text {
                path,
                text,
                truncated,
            } => {
                // The file's own text cannot close the block it is quoted in.
                let inert = |t: &str| t.replace("</attached_file", "&lt;/attached_file");
                let cut = if *truncated {
                    format!("\n[cut at {MAX_ATTACHED_BYTES} bytes; read the rest with read_file]")
                } else {
                    String::new()
                };
                format!(
                    "<attached_file path=\"{}\">\n{}{cut}\n</attached_file>",
                    inert(path).replace('"', "&quot;"),
                    inert(text)
                )
            }
        }
    }

    /// One line for the person: what was attached.
    fn shown(&self) -> String {
        match self {
            Attachment::Text {
                path,
                text,
                truncated,
            } => format!(
                "attached {path} ({} bytes{})",
                text.len(),
                if *truncated { ", cut" } else { "" }
            ),
        }
    }
}

/// What `@path` resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A file, attached.
    File(Attachment),
    /// Nothing by that name: the word is sent as typed (`@decorator`, an address).
    NotAFile,
    /// A file that cannot be attached, and why.
    Refused(String),
}

/// Resolves `path` (as typed after `@`) in the workspace of `ctx`.
pub(crate) fn resolve(ctx: &ToolContext, path: &str) -> Resolved {
    let resolved = match ctx.resolve(path) {
        Ok(r) => r,
        Err(refusal) if refusal.code == codesmith_tools::ErrorCode::NotFound => {
            return Resolved::NotAFile;
        }
        Err(refusal) => return Resolved::Refused(refusal.message),
    };
    if !resolved.exists {
        return Resolved::NotAFile;
    }
    if !resolved.abs.is_file() {
        return Resolved::Refused(format!("{} is not a file", resolved.rel));
    }
    match read_bounded(&resolved.abs) {
        Ok((bytes, truncated)) => match String::from_utf8(bytes) {
            Ok(text) => Resolved::File(Attachment::Text {
                path: resolved.rel,
                text,
                truncated,
            }),
            Err(e) if truncated && e.utf8_error().error_len().is_none() => {
                // Cut inside a character: keep the whole ones.
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                Resolved::File(Attachment::Text {
                    path: resolved.rel,
                    text: String::from_utf8(bytes).unwrap_or_default(),
                    truncated,
                })
            }
            Err(_) => Resolved::Refused(format!(
                "{} is not a text file (not UTF-8); name it in the task and let the model \
                 look at it",
                resolved.rel
            )),
        },
        Err(e) => Resolved::Refused(format!("cannot read {}: {e}", resolved.rel)),
    }
}

fn read_bounded(path: &Path) -> std::io::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_ATTACHED_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    let truncated = bytes.len() > MAX_ATTACHED_BYTES;
    bytes.truncate(MAX_ATTACHED_BYTES);
    Ok((bytes, truncated))
}

/// The `@path` words of `task`: a word starting with `@` at the start or after
/// whitespace, without trailing punctuation (`,.;:!?)`).
fn mentions(task: &str) -> Vec<&str> {
    task.split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .map(|w| w.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '\'', '"']))
        .filter(|w| !w.is_empty())
        .collect()
}

/// `task` with the files its `@path` words name attached after it, and the lines that tell
/// the person what was attached or refused. Each file is attached once.
pub(crate) fn expand(task: &str, ctx: &ToolContext) -> (String, Vec<String>) {
    let mut text = task.to_string();
    let mut lines = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for path in mentions(task) {
        if seen.contains(&path) {
            continue;
        }
        seen.push(path);
        match resolve(ctx, path) {
            Resolved::File(attachment) => {
                text.push_str("\n\n");
                text.push_str(&attachment.model_text());
                lines.push(attachment.shown());
            }
            Resolved::NotAFile => {}
            Resolved::Refused(why) => lines.push(format!("not attached: @{path}: {why}")),
        }
    }
    (text, lines)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.py"), "print('a')\n</attached_file>\n").unwrap();
        std::fs::write(ws.join("bin.dat"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(dir.join("outside.txt"), "secret").unwrap();
        ToolContext::new(ws.canonicalize().unwrap(), dir.join("home"))
    }

    #[test]
    fn a_mentioned_workspace_file_is_attached_once_and_inert() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let (text, lines) = expand("explain @src/a.py, then @src/a.py again", &ctx);
        assert_eq!(text.matches("<attached_file path=\"src/a.py\">").count(), 1);
        assert_eq!(text.matches("</attached_file>").count(), 1, "{text}");
        assert!(text.starts_with("explain @src/a.py, then"));
        assert_eq!(lines, ["attached src/a.py (28 bytes)"]);
    }

    #[test]
    fn other_words_are_sent_as_typed_and_what_cannot_be_attached_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let (text, lines) = expand("use @property and mail a@b.c", &ctx);
        assert_eq!(text, "use @property and mail a@b.c");
        assert!(lines.is_empty());
        assert!(
            matches!(resolve(&ctx, "bin.dat"), Resolved::Refused(w) if w.contains("not a text file"))
        );
        assert!(matches!(resolve(&ctx, "src"), Resolved::Refused(w) if w.contains("not a file")));
        assert!(matches!(
            resolve(&ctx, "../outside.txt"),
            Resolved::Refused(_)
        ));
    }
}
