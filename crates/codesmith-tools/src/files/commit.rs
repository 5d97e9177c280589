//! The common write path: syntax check → rustfmt → parents → atomic write → mark fresh.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::fs::beneath::Ownership;
use crate::fs::encoding::{Sniffed, sniff};
use crate::fs::os_error::{Access, io_refusal};
use crate::fs::paths::ResolvedPath;
use crate::fs::text::{LineEnding, TextFile, cannot_encode, convert_line_endings, sha256_hex};
use crate::syntax_check::{rustfmt, syntax};
use crate::{ErrorCode, Refusal, ToolContext};

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
    /// The diff from the old text (empty when creating) to the text written.
    pub diff: super::TextDiff,
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

/// Writes `new_text` to `path` through every write check. Hold the path's lock
/// ([`crate::fs::lock::path_lock`]) around the read that produced `old` and this call.
///
/// - `old`: the current file (`None` when creating). Its BOM is kept; `new_text` should
///   already use its line ending (rustfmt output is converted back to CRLF when needed).
/// - Syntax check ([`syntax::check_edit`]): `PARSE_REJECTED`, nothing written.
/// - rustfmt ([`rustfmt::normalize`]) when a Rust file was rustfmt-clean.
/// - Encoding in `old`'s encoding (see [`cannot_encode`]), then the readability check
///   ([`readable_again`]): bytes the text tools would read back as binary are refused.
/// - Missing parents are created and named in [`WriteReport::created_dirs`].
/// - Atomic write below the workspace handle ([`ResolvedPath::write_atomic_as`]), keeping
///   the replaced file's mode and owner, or `like`'s when given (a moved file's); the file
///   is then marked fresh in `ctx.freshness`.
///
/// Errors: `PARSE_REJECTED`; `INVALID_ARGUMENTS` with `reason: "encoding"` or
/// `reason: "binary_content"`; `INTERNAL` (generic) for host I/O errors.
pub fn commit_text(
    ctx: &ToolContext,
    path: &ResolvedPath,
    old: Option<&TextFile>,
    new_text: &str,
    like: Option<Ownership>,
) -> Result<WriteReport, Refusal> {
    syntax::check_edit(&path.abs, &path.rel, old.map(|f| f.text.as_str()), new_text)?;
    let mut text = Cow::Borrowed(new_text);
    let mut formatted = false;
    if let Some(f) = rustfmt::normalize(
        &ctx.workspace,
        &path.abs,
        old.map(|f| f.text.as_str()),
        new_text,
    ) {
        let ending = old.map_or(LineEnding::Lf, |o| o.ending);
        let f = if ending != LineEnding::Lf {
            convert_line_endings(&f, ending)
        } else {
            f
        };
        formatted = f != new_text;
        text = Cow::Owned(f);
    }
    let bytes: Cow<'_, [u8]> = match old {
        Some(o) if o.bom || !o.is_utf8() => Cow::Owned(encoded(path, o, &text)?),
        _ => Cow::Borrowed(text.as_bytes()),
    };
    readable_again(&path.rel, old, &text, &bytes)?;
    let refused = |e: std::io::Error| io_refusal(&path.rel, Access::Write, &e);
    let created = path.create_parents().map_err(refused)?;
    path.write_atomic_as(&bytes, like).map_err(refused)?;
    ctx.freshness.mark_fresh(&path.abs);
    let created_dirs = created.iter().map(|d| rel_of(ctx, d, path)).collect();
    let diff = super::TextDiff::between(old.map_or("", |f| f.text.as_str()), &text);
    Ok(WriteReport {
        diff,
        created_dirs,
        formatted,
        sha256: sha256_hex(&bytes),
        bytes: bytes.len(),
        lines: memchr::memchr_iter(b'\n', text.as_bytes()).count()
            + usize::from(!text.is_empty() && !text.ends_with('\n')),
    })
}

/// Refuses `bytes` (the encoding of `text`) when the text tools' own detector
/// ([`sniff`]) would not read them back as text in the file's encoding, so every file a
/// text tool writes can be read, edited and searched again:
///
/// - a NUL character (U+0000): NUL bytes make any file binary;
/// - in a file read as Windows-1252, C0 control characters other than tab, line breaks,
///   form feed and escape beyond 1 % of the bytes;
/// - in a UTF-16/32 file without a byte-order mark, text whose zero-byte pattern no longer
///   shows the encoding.
///
/// UTF-8 output is checked for NUL only: without one, it always reads back as UTF-8.
///
/// Errors: `INVALID_ARGUMENTS` with `reason: "binary_content"`, naming the first
/// offending character and where it is.
pub fn readable_again(
    rel: &str,
    old: Option<&TextFile>,
    text: &str,
    bytes: &[u8],
) -> Result<(), Refusal> {
    if let Some(at) = text.find('\0') {
        return Err(binary_content(
            rel,
            text,
            at,
            "a NUL character (U+0000), and a file with NUL bytes reads as binary",
        ));
    }
    let Some(old) = old.filter(|o| !o.is_utf8()) else {
        return Ok(());
    };
    match sniff(bytes.to_vec()) {
        // Legacy text may come back as UTF-8 (the edit removed its last non-ASCII byte).
        Sniffed::Text { encoding, .. } if encoding == old.encoding || old.encoding.is_guess() => {
            Ok(())
        }
        _ => {
            let control = text.char_indices().find(|&(_, c)| {
                old.encoding.is_guess()
                    && c.is_ascii_control()
                    && !matches!(c, '\t' | '\n' | '\r' | '\x0c' | '\x1b' | '\x7f')
            });
            Err(match control {
                Some((at, c)) => binary_content(
                    rel,
                    text,
                    at,
                    &format!(
                        "control characters (the first is U+{:04X}), too many for {} text: \
                         the file would read as binary",
                        u32::from(c),
                        old.encoding.name()
                    ),
                ),
                None => Refusal::new(
                    ErrorCode::InvalidArguments,
                    format!(
                        "\"{rel}\" is {} text without a byte-order mark, and the new content \
                         would no longer be recognisable as {}; the file was NOT modified.",
                        old.encoding.name(),
                        old.encoding.name()
                    ),
                    "Convert the file to UTF-8 with exec_shell (`iconv`) first, then edit it.",
                )
                .with("path", rel)
                .with("reason", "encoding")
                .with("encoding", old.encoding.name()),
            })
        }
    }
}

/// The refusal for content that would make the file binary: `what` is at byte `at` of
/// `text`.
fn binary_content(rel: &str, text: &str, at: usize, what: &str) -> Refusal {
    let line = text[..at].matches('\n').count() + 1;
    let column = text[..at]
        .rfind('\n')
        .map_or(text[..at].chars().count(), |nl| {
            text[nl + 1..at].chars().count()
        })
        + 1;
    Refusal::new(
        ErrorCode::InvalidArguments,
        format!(
            "The new content of \"{rel}\" has {what} (line {line}, column {column}). A text \
             tool writes only what it can read back as text; the file was NOT modified."
        ),
        "Remove the control character, or write it as an escape sequence of the file's \
         language (`\\0`, `\\x00`, `\\u0000`). To create binary data, use exec_shell \
         (`printf '\\000'`, `xxd -r`, `base64 -d`).",
    )
    .with("path", rel)
    .with("reason", "binary_content")
    .with("line", line)
    .with("column", column)
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
