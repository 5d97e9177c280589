//! Text files as the tools see them: decoded from their encoding, BOM kept, line endings
//! preserved.
//!
//! A CRLF file stays CRLF after every edit: text the model supplies (usually LF) is
//! converted to the file's dominant ending with [`convert_line_endings`] before it is
//! matched or inserted, so an edit never introduces mixed endings. A byte-order mark is
//! stripped for matching and written back. UTF-16/UTF-32 files are decoded and written
//! back in the same encoding; legacy single-byte files are read as Windows-1252 and may
//! only gain ASCII; binary files (NUL bytes) are refused by the text tools rather than
//! shown or corrupted ([`load_text`], [`super::encoding`]).

use sha2::{Digest, Sha256};

use crate::fs::encoding::{Encoding, Sniffed, Unencodable, encode, sniff};
use crate::fs::os_error::{Access, io_refusal};
use crate::fs::paths::ResolvedPath;
use crate::{ErrorCode, Refusal};

/// The UTF-8 byte-order mark.
pub const BOM: &str = "\u{feff}";

/// Largest file the text tools load: 10 MB (the grep size limit).
pub const MAX_TEXT_BYTES: u64 = 10 * 1024 * 1024;

/// A file's line-ending convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    /// `\n`.
    Lf,
    /// `\r\n`.
    Crlf,
    /// A lone `\r` (classic Mac OS): a file with carriage returns and no `\n` at all.
    Cr,
}

impl LineEnding {
    /// The ending as a string.
    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "\n",
            LineEnding::Crlf => "\r\n",
            LineEnding::Cr => "\r",
        }
    }
}

/// A decoded text file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// The text without its BOM, with its line endings exactly as on disk.
    pub text: String,
    /// True when the file started with its encoding's BOM.
    pub bom: bool,
    /// The dominant line ending (see [`detect_line_ending`]).
    pub ending: LineEnding,
    /// The encoding the file was read in.
    pub encoding: Encoding,
    /// Decoding lost nothing, so writing the text back reproduces the bytes.
    pub exact: bool,
}

/// Bytes the text tools do not treat as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotText {
    /// File size in bytes.
    pub bytes: usize,
    /// Offset of the first NUL byte, when there is one.
    pub nul_at: Option<usize>,
    /// A recognised file type, when known.
    pub kind: Option<&'static str>,
}

impl TextFile {
    /// Decodes `bytes`; `None` when they are binary.
    pub fn decode(bytes: &[u8]) -> Option<TextFile> {
        TextFile::decode_owned(bytes.to_vec()).ok()
    }

    /// Like [`TextFile::decode`], without copying `bytes`, and saying why not text.
    ///
    /// # Errors
    /// The bytes are binary (see [`super::encoding::sniff`]).
    pub fn decode_owned(bytes: Vec<u8>) -> Result<TextFile, NotText> {
        let len = bytes.len();
        match sniff(bytes) {
            Sniffed::Text {
                text,
                encoding,
                bom,
                exact,
            } => {
                let ending = detect_line_ending(&text);
                Ok(TextFile {
                    text,
                    bom,
                    ending,
                    encoding,
                    exact,
                })
            }
            Sniffed::Binary { nul_at, kind } => Err(NotText {
                bytes: len,
                nul_at,
                kind,
            }),
        }
    }

    /// The bytes to write for `text`: in the file's encoding, BOM restored when the file
    /// had one. `text` should already use [`TextFile::ending`].
    ///
    /// # Errors
    /// A character of `text` the file's encoding cannot represent.
    pub fn encode(&self, text: &str) -> Result<Vec<u8>, Unencodable> {
        encode(self.encoding, self.bom, text)
    }

    /// True when the file is plain, well-formed UTF-8 (with or without BOM), so its text is
    /// its bytes.
    pub fn is_utf8(&self) -> bool {
        self.encoding == Encoding::Utf8 && self.exact
    }

    /// A note for the reader when the file is not UTF-8: the encoding it was decoded from
    /// and what edits do with it. `None` for UTF-8.
    pub fn note(&self) -> Option<String> {
        let bom = if self.bom { " with a BOM" } else { "" };
        match self.encoding {
            Encoding::Utf8 if self.exact => None,
            Encoding::Utf8 => {
                let bad = self.text.matches('\u{fffd}').count();
                let line = self
                    .text
                    .lines()
                    .position(|l| l.contains('\u{fffd}'))
                    .map_or(1, |n| n + 1);
                Some(format!(
                    "[Not valid UTF-8: {bad} malformed byte sequence{} shown as `\u{fffd}`, the \
                     first on line {line}. Edits are refused, since writing the text back would \
                     change those bytes.]",
                    if bad == 1 { "" } else { "s" }
                ))
            }
            Encoding::Windows1252 => {
                let outside: Vec<(usize, char)> = self
                    .text
                    .lines()
                    .enumerate()
                    .flat_map(|(n, l)| l.chars().filter(|c| !c.is_ascii()).map(move |c| (n + 1, c)))
                    .collect();
                let first = outside
                    .first()
                    .map(|(n, c)| format!(", the first `{c}` on line {n}"))
                    .unwrap_or_default();
                Some(format!(
                    "[Not UTF-8: decoded as Windows-1252 (Latin-1), a guess; {} non-ASCII \
                     character{} shown decoded{first}. {}]",
                    outside.len(),
                    if outside.len() == 1 { "" } else { "s" },
                    if self.exact {
                        "Edits keep every other byte and may add only ASCII text."
                    } else {
                        "Some bytes do not decode cleanly, so edits are refused."
                    }
                ))
            }
            enc => Some(format!(
                "[Decoded from {}{bom}; edits are written back in {} the same way.]",
                enc.name(),
                enc.name()
            )),
        }
    }
}

/// `Crlf` when `\r\n` terminates more lines than bare `\n`; `Cr` when the text has
/// carriage returns and no `\n`; otherwise `Lf` (also for a file without line breaks).
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
    } else if newlines == 0 && memchr::memchr(b'\r', bytes).is_some() {
        LineEnding::Cr
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
        LineEnding::Cr => lf.replace('\n', "\r"),
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
/// binary file (details `reason: "binary"`, see [`not_text`]); `TOO_LARGE` above
/// [`MAX_TEXT_BYTES`]; for a system error, the refusal [`io_refusal`] names (`DENIED` for a
/// file CodeSmith may not read).
pub fn load_text(path: &ResolvedPath) -> Result<LoadedText, Refusal> {
    let bytes = load_bytes(path)?;
    let sha256 = sha256_hex(&bytes);
    let file = TextFile::decode_owned(bytes).map_err(|e| not_text(&path.rel, &e))?;
    Ok(LoadedText { file, sha256 })
}

/// The raw bytes of the file at `path`, with the same checks and refusals as [`load_text`]
/// except the UTF-8 check (`NOT_FOUND`, `INVALID_ARGUMENTS` for a directory, `TOO_LARGE`,
/// `INTERNAL`).
pub fn load_bytes(path: &ResolvedPath) -> Result<Vec<u8>, Refusal> {
    load_bytes_within(path, false)
}

/// As [`load_bytes`], for a tool that also reads images (`read_file`): a file whose first
/// bytes say it is an image ([`crate::image::sniff`]) is held to the one image cap,
/// [`crate::image::MAX_FILE_BYTES`], and refused above it with the image sentence
/// ([`crate::image::too_large`]); any other file to [`MAX_TEXT_BYTES`].
pub fn load_bytes_or_image(path: &ResolvedPath) -> Result<Vec<u8>, Refusal> {
    load_bytes_within(path, true)
}

/// Whether the file at `path` starts like an image (an unreadable file does not).
fn starts_as_image(path: &ResolvedPath) -> bool {
    let Ok(file) = path.open_read() else {
        return false;
    };
    let mut head = Vec::with_capacity(16);
    std::io::Read::read_to_end(&mut std::io::Read::take(file, 16), &mut head)
        .is_ok_and(|_| crate::image::sniff(&head).is_some())
}

fn load_bytes_within(path: &ResolvedPath, images: bool) -> Result<Vec<u8>, Refusal> {
    let meta = match std::fs::metadata(&path.abs) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found(&path.rel)),
        Err(e) => return Err(io_refusal(&path.rel, Access::Read, &e)),
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
        return Err(not_regular(&path.rel));
    }
    // The image cap is the larger: only a file over the text cap needs its first bytes read.
    let image = images && meta.len() > MAX_TEXT_BYTES && starts_as_image(path);
    let limit = if image {
        crate::image::MAX_FILE_BYTES
    } else {
        MAX_TEXT_BYTES
    };
    if image && meta.len() > limit {
        return Err(Refusal::new(
            ErrorCode::TooLarge,
            format!("{}.", crate::image::too_large(&format!("\"{}\"", path.rel), meta.len())),
            "Ask the user for a smaller copy of the image, or make one with exec_shell and read that.",
        )
        .with("path", path.rel.as_str())
        .with("bytes", meta.len()));
    }
    if meta.len() > limit {
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
        Err(e) => return Err(io_refusal(&path.rel, Access::Read, &e)),
    };
    match file.metadata() {
        Ok(m) if m.is_file() && m.len() <= limit => {}
        // Swapped for something else, or grown, since the check above.
        Ok(m) if !m.is_file() => return Err(not_regular(&path.rel)),
        Ok(_) => {
            return Err(Refusal::new(
                ErrorCode::TooLarge,
                format!(
                    "\"{}\" grew past {limit} bytes while it was opened.",
                    path.rel
                ),
                "Use grep_files to find the part you need, or exec_shell for bulk processing.",
            )
            .with("path", path.rel.as_str()));
        }
        Err(e) => return Err(io_refusal(&path.rel, Access::Read, &e)),
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, limit + 1), &mut bytes)
        .map_err(|e| io_refusal(&path.rel, Access::Read, &e))?;
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

/// The refusal for a binary file: its size, its type when known, where the first NUL
/// byte is, and how to look at it from the shell.
pub fn not_text(rel: &str, e: &NotText) -> Refusal {
    let kind = e.kind.unwrap_or("binary file");
    let nul = e
        .nul_at
        .map(|at| format!(", with a NUL byte at offset {at}"))
        .unwrap_or_default();
    Refusal::new(
        ErrorCode::InvalidArguments,
        format!(
            "\"{rel}\" is not text: {} bytes, {kind}{nul}. The text tools neither show nor \
             change binary files.",
            e.bytes,
        ),
        format!(
            "Inspect it with exec_shell: `file {rel}`, `xxd {rel} | head -40`{}.",
            if e.kind == Some("tar archive") {
                format!(", `tar -tvf {rel}`")
            } else {
                String::new()
            }
        ),
    )
    .with("path", rel)
    .with("reason", "binary")
    .with("bytes", e.bytes)
    .with("type", kind)
}

/// The refusal for a path that is neither a regular file nor a directory (a FIFO, socket or
/// device), which the file and search tools never open.
pub fn not_regular(rel: &str) -> Refusal {
    Refusal::new(
        ErrorCode::InvalidArguments,
        format!("\"{rel}\" is not a regular file (a pipe, socket or device)."),
        "The file tools read, search and write regular files only; leave this path alone.",
    )
    .with("path", rel)
}

/// The refusal for an edit the file's encoding cannot hold, or that would re-encode bytes
/// outside the edit.
pub fn cannot_encode(rel: &str, file: &TextFile, why: &str) -> Refusal {
    Refusal::new(
        ErrorCode::InvalidArguments,
        format!(
            "\"{rel}\" is {} text and {why}; the file was NOT modified, so it never mixes \
             encodings.",
            file.encoding.name()
        ),
        if file.encoding == Encoding::Utf8 {
            "Repair the malformed bytes with exec_shell first (`iconv -c -f UTF-8 -t UTF-8` \
             drops them; `grep -naxv '.*' FILE` shows the lines), or leave the file alone."
        } else if file.encoding.is_guess() {
            "Write the new text with ASCII characters only (escape sequences or entities for \
             the rest), or convert the file to UTF-8 with exec_shell (`iconv -f WINDOWS-1252 \
             -t UTF-8`) first."
        } else {
            "Convert the file to UTF-8 with exec_shell (`iconv`) first, or leave it alone."
        },
    )
    .with("path", rel)
    .with("reason", "encoding")
    .with("encoding", file.encoding.name())
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
        assert_eq!(f.encode(&f.text).unwrap(), "\u{feff}a\r\nb\r\n".as_bytes());
        assert_eq!(detect_line_ending("a\nb\n"), LineEnding::Lf);
        assert_eq!(detect_line_ending("none"), LineEnding::Lf);
        assert_eq!(
            convert_line_endings("x\ny\r\nz", LineEnding::Crlf),
            "x\r\ny\r\nz"
        );
        assert_eq!(convert_line_endings("x\r\ny\n", LineEnding::Lf), "x\ny\n");
        // Classic Mac OS text: carriage returns only.
        assert_eq!(detect_line_ending("a\rb\rc\r"), LineEnding::Cr);
        assert_eq!(detect_line_ending("a\rb\nc"), LineEnding::Lf);
        assert_eq!(convert_line_endings("x\ny\r\n", LineEnding::Cr), "x\ry\r");
        assert!(TextFile::decode(&[0xff, 0xfe, b'a']).is_none());
        assert!(TextFile::decode(b"tar\0of text").is_none());
    }

    #[test]
    fn digest() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
