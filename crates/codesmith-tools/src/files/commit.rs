//! The common write path: syntax gate → rustfmt → parents → atomic write → mark fresh.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::fs::paths::ResolvedPath;
use crate::fs::text::{LineEnding, TextFile, cannot_encode, convert_line_endings, sha256_hex};
use crate::gate::{rustfmt, syntax};
use crate::{Refusal, ToolContext};

/// What a committed write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteReport {
    /// Directories created for the file, workspace-relative, outermost first.
    pub created_dirs: Vec<String>,
    /// True when rustfmt changed the text that was written.
    pub formatted: bool,
    /// SHA-256 (hex) of the bytes now on disk.
    pub sha256: String,
    /// Bytes written (BOM included).
    pub bytes: usize,
    /// Lines in the text written (after any rustfmt normalisation).
    pub lines: usize,
}

impl WriteReport {
    /// One sentence naming the created directories, or `None`.
    pub fn created_note(&self) -> Option<String> {
        if self.created_dirs.is_empty() {
            return None;
        }
        let names: Vec<String> = self.created_dirs.iter().map(|d| format!("{d}/")).collect();
        Some(format!("Created directories: {}.", names.join(", ")))
    }

    /// The rustfmt disclosure, or `None`.
    pub fn formatted_note(&self) -> Option<&'static str> {
        self.formatted.then_some(
            "The new content was reformatted with rustfmt (the file was rustfmt-clean before); \
             re-read before quoting it.",
        )
    }

    /// The created directories as a JSON array.
    pub fn created_json(&self) -> Value {
        json!(self.created_dirs)
    }
}

/// Writes `new_text` to `path` through every write gate. Hold the path's lock
/// ([`crate::fs::lock::path_lock`]) around the read that produced `old` and this call.
///
/// - `old`: the current file (`None` when creating). Its BOM is kept; `new_text` should
///   already use its line ending (rustfmt output is converted back to CRLF when needed).
/// - Syntax gate ([`syntax::gate`]): `PARSE_REJECTED`, nothing written.
/// - rustfmt ([`rustfmt::normalize`]) when a Rust file was rustfmt-clean.
/// - Missing parents are created and named in [`WriteReport::created_dirs`].
/// - Atomic write below the workspace handle ([`ResolvedPath::write_atomic`]); the file is then marked fresh in `ctx.freshness`.
///
/// Errors: `PARSE_REJECTED`; `INTERNAL` (generic) for host I/O errors.
pub fn commit_text(
    ctx: &ToolContext,
    path: &ResolvedPath,
    old: Option<&TextFile>,
    new_text: &str,
) -> Result<WriteReport, Refusal> {
    syntax::gate(&path.abs, &path.rel, old.map(|f| f.text.as_str()), new_text)?;
    let mut text = Cow::Borrowed(new_text);
    let mut formatted = false;
    if let Some(f) = rustfmt::normalize(&path.abs, old.map(|f| f.text.as_str()), new_text) {
        let ending = old.map_or(LineEnding::Lf, |o| o.ending);
        let f = if ending == LineEnding::Crlf {
            convert_line_endings(&f, ending)
        } else {
            f
        };
        formatted = f != new_text;
        text = Cow::Owned(f);
    }
    let created = path.create_parents().map_err(|_| Refusal::internal())?;
    let bytes: Cow<'_, [u8]> = match old {
        Some(o) if o.bom || !o.is_utf8() => Cow::Owned(encoded(path, o, &text)?),
        _ => Cow::Borrowed(text.as_bytes()),
    };
    path.write_atomic(&bytes).map_err(|_| Refusal::internal())?;
    ctx.freshness.mark_fresh(&path.abs);
    let created_dirs = created.iter().map(|d| rel_of(ctx, d, path)).collect();
    Ok(WriteReport {
        created_dirs,
        formatted,
        sha256: sha256_hex(&bytes),
        bytes: bytes.len(),
        lines: memchr::memchr_iter(b'\n', text.as_bytes()).count()
            + usize::from(!text.is_empty() && !text.ends_with('\n')),
    })
}

/// `text` in `old`'s encoding. A file decoded with losses is never rewritten; in a guessed
/// encoding the changed part must be ASCII, so the bytes outside the edit stay exactly as
/// they were and the file never mixes encodings.
fn encoded(path: &ResolvedPath, old: &TextFile, text: &str) -> Result<Vec<u8>, Refusal> {
    if !old.exact {
        return Err(cannot_encode(
            &path.rel,
            old,
            "some of its bytes do not decode cleanly, so rewriting it would change them",
        ));
    }
    if old.encoding.is_guess() {
        let (a, b) = (old.text.as_bytes(), text.as_bytes());
        let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let suffix = a[prefix..]
            .iter()
            .rev()
            .zip(b[prefix..].iter().rev())
            .take_while(|(x, y)| x == y)
            .count();
        let changed = &b[prefix..b.len() - suffix];
        if let Some(c) = String::from_utf8_lossy(changed)
            .chars()
            .find(|c| !c.is_ascii())
        {
            let line = text[..prefix.min(text.len())].matches('\n').count() + 1;
            return Err(cannot_encode(
                &path.rel,
                old,
                &format!(
                    "the new text adds `{c}` (near line {line}), a non-ASCII character, to a file \
                     whose encoding is only a guess"
                ),
            ));
        }
    }
    old.encode(text).map_err(|u| {
        let line = text[..u.at].matches('\n').count() + 1;
        cannot_encode(
            &path.rel,
            old,
            &format!("cannot represent `{}` (line {line}) of the new text", u.ch),
        )
    })
}

/// Workspace-relative spelling of a created directory: the prefix of `path.rel` with the
/// same number of components as `dir` below the canonical root.
fn rel_of(ctx: &ToolContext, dir: &std::path::Path, path: &ResolvedPath) -> String {
    let depth_below_file = path
        .abs
        .strip_prefix(dir)
        .map(|r| r.components().count())
        .unwrap_or(0);
    let parts: Vec<&str> = path.rel.split('/').collect();
    let keep = parts.len().saturating_sub(depth_below_file);
    if keep == 0 {
        return dir
            .strip_prefix(&ctx.workspace)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
    }
    parts[..keep].join("/")
}
