//! Text files as the tools see them: UTF-8 only, BOM kept, line endings preserved.
//!
//! A CRLF file stays CRLF after every edit: text the model supplies (usually LF) is
//! converted to the file's dominant ending with [`convert_line_endings`] before it is
//! matched or inserted, so an edit never introduces mixed endings. A UTF-8 byte-order mark
//! is stripped for matching and written back. A file that is not valid UTF-8 is refused by
//! the text tools rather than corrupted ([`load_text`]).

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::fs::paths::ResolvedPath;
use crate::{ErrorCode, Refusal};

/// The UTF-8 byte-order mark.
pub const BOM: &str = "\u{feff}";

/// Largest file the text tools load: 10 MB (the grep size limit, seed 002).
pub const MAX_TEXT_BYTES: u64 = 10 * 1024 * 1024;

/// A file's line-ending convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    /// `\n`.
    Lf,
    /// `\r\n`.
    Crlf,
}

impl LineEnding {
    /// The ending as a string.
    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "\n",
            LineEnding::Crlf => "\r\n",
        }
    }
}

/// A decoded text file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// The text without its BOM, with its line endings exactly as on disk.
    pub text: String,
    /// True when the file started with a UTF-8 BOM.
    pub bom: bool,
    /// The dominant line ending (see [`detect_line_ending`]).
    pub ending: LineEnding,
}

impl TextFile {
    /// Decodes `bytes`; `None` when they are not valid UTF-8.
    pub fn decode(bytes: &[u8]) -> Option<TextFile> {
        TextFile::decode_owned(bytes.to_vec())
    }

    /// Like [`TextFile::decode`], without copying `bytes`.
    pub fn decode_owned(bytes: Vec<u8>) -> Option<TextFile> {
        let mut text = String::from_utf8(bytes).ok()?;
        let bom = text.starts_with(BOM);
        if bom {
            text.drain(..BOM.len());
        }
        let ending = detect_line_ending(&text);
        Some(TextFile { text, bom, ending })
    }

    /// The bytes to write for `text` (BOM restored when the file had one). `text` should
    /// already use [`TextFile::ending`].
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() + 3);
        if self.bom {
            out.extend_from_slice(BOM.as_bytes());
        }
        out.extend_from_slice(text.as_bytes());
        out
    }
}

/// `Crlf` when `\r\n` terminates more lines than bare `\n`; otherwise `Lf` (also for a
/// file without newlines).
pub fn detect_line_ending(text: &str) -> LineEnding {
    let bytes = text.as_bytes();
    let (mut newlines, mut crlf) = (0usize, 0usize);
    for i in memchr::memchr_iter(b'\n', bytes) {
        newlines += 1;
        if i > 0 && bytes[i - 1] == b'\r' {
            crlf += 1;
        }
    }
    if crlf > 0 && crlf * 2 >= newlines {
        LineEnding::Crlf
    } else {
        LineEnding::Lf
    }
}

/// Rewrites every line break of `text` (`\r\n` or `\n`) as `ending`. Lone `\r` is left
/// alone.
pub fn convert_line_endings(text: &str, ending: LineEnding) -> String {
    let lf = text.replace("\r\n", "\n");
    match ending {
        LineEnding::Lf => lf,
        LineEnding::Crlf => lf.replace('\n', "\r\n"),
    }
}

/// Lowercase hex SHA-256 of `bytes` (the digest `read_file` reports and `edit_file` checks).
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A loaded text file with its raw-byte digest.
#[derive(Debug, Clone)]
pub struct LoadedText {
    /// The decoded file.
    pub file: TextFile,
    /// SHA-256 (hex) of the bytes on disk, BOM included.
    pub sha256: String,
}

/// Reads `path` as UTF-8 text for a text tool.
///
/// Errors: `NOT_FOUND` when nothing exists there; `INVALID_ARGUMENTS` for a directory or a
/// file that is not UTF-8 (details `reason: "not_utf8"`); `TOO_LARGE` above
/// [`MAX_TEXT_BYTES`]; `INTERNAL` for host errors.
pub fn load_text(path: &ResolvedPath) -> Result<LoadedText, Refusal> {
    let bytes = load_bytes(path)?;
    let sha256 = sha256_hex(&bytes);
    let file = TextFile::decode_owned(bytes).ok_or_else(|| not_utf8(&path.rel))?;
    Ok(LoadedText { file, sha256 })
}

/// The raw bytes of the file at `path`, with the same checks and refusals as [`load_text`]
/// except the UTF-8 check (`NOT_FOUND`, `INVALID_ARGUMENTS` for a directory, `TOO_LARGE`,
/// `INTERNAL`).
pub fn load_bytes(path: &ResolvedPath) -> Result<Vec<u8>, Refusal> {
    let meta = match std::fs::metadata(&path.abs) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found(&path.rel)),
        Err(_) => return Err(Refusal::internal()),
    };
    if meta.is_dir() {
        return Err(Refusal::new(
            ErrorCode::InvalidArguments,
            format!("\"{}\" is a directory, not a file.", path.rel),
            "Use list_dir to see its entries, then name a file inside it.",
        )
        .with("path", path.rel.as_str()));
    }
    if !meta.is_file() {
        // A FIFO, socket or device would block the read forever or never end.
        return Err(Refusal::new(
            ErrorCode::InvalidArguments,
            format!(
                "\"{}\" is not a regular file (a pipe, socket or device).",
                path.rel
            ),
            "The file tools read and write regular files only; leave this path alone.",
        )
        .with("path", path.rel.as_str()));
    }
    if meta.len() > MAX_TEXT_BYTES {
        return Err(Refusal::new(
            ErrorCode::TooLarge,
            format!(
                "\"{}\" is {} bytes; the text tools handle files up to {} bytes.",
                path.rel,
                meta.len(),
                MAX_TEXT_BYTES
            ),
            "Use grep_files to find the part you need, or exec_shell for bulk processing.",
        )
        .with("path", path.rel.as_str())
        .with("bytes", meta.len()));
    }
    // The checks above name the file; the read itself goes through the workspace handle,
    // so a symlink swapped in since the check cannot make it read outside.
    let file = match path.open_read() {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found(&path.rel)),
        Err(e) if crate::fs::beneath::is_escape(&e) => {
            return Err(crate::fs::paths::outside(&path.rel));
        }
        Err(_) => return Err(Refusal::internal()),
    };
    match file.metadata() {
        Ok(m) if m.is_file() && m.len() <= MAX_TEXT_BYTES => {}
        Ok(_) => return Err(Refusal::internal()),
        Err(_) => return Err(Refusal::internal()),
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_TEXT_BYTES + 1),
        &mut bytes,
    )
    .map_err(|_| Refusal::internal())?;
    Ok(bytes)
}

/// `NOT_FOUND` for `rel`.
pub fn not_found(rel: &str) -> Refusal {
    Refusal::new(
        ErrorCode::NotFound,
        format!("No file exists at \"{rel}\"."),
        "Check the spelling with file_search or list_dir; to create the file, use write_file.",
    )
    .with("path", rel)
}

/// The refusal for a file that is not UTF-8 text.
pub fn not_utf8(rel: &str) -> Refusal {
    Refusal::new(
        ErrorCode::InvalidArguments,
        format!("\"{rel}\" is not UTF-8 text; the text tools do not change it."),
        "Leave binary or non-UTF-8 files alone, or convert them with a dedicated command.",
    )
    .with("path", rel)
    .with("reason", "not_utf8")
}

/// Extension check helper: true when `path`'s file name is exactly `name`.
pub fn file_name_is(path: &Path, name: &str) -> bool {
    path.file_name().is_some_and(|n| n == name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bom_and_endings() {
        let f = TextFile::decode("\u{feff}a\r\nb\r\n".as_bytes()).unwrap();
        assert!(f.bom);
        assert_eq!(f.text, "a\r\nb\r\n");
        assert_eq!(f.ending, LineEnding::Crlf);
        assert_eq!(f.encode(&f.text), "\u{feff}a\r\nb\r\n".as_bytes());
        assert_eq!(detect_line_ending("a\nb\n"), LineEnding::Lf);
        assert_eq!(detect_line_ending("none"), LineEnding::Lf);
        assert_eq!(
            convert_line_endings("x\ny\r\nz", LineEnding::Crlf),
            "x\r\ny\r\nz"
        );
        assert_eq!(convert_line_endings("x\r\ny\n", LineEnding::Lf), "x\ny\n");
        assert!(TextFile::decode(&[0xff, 0xfe, b'a']).is_none());
    }

    #[test]
    fn digest() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
