//! What a file's bytes are: text in UTF-8, UTF-16 or UTF-32 (with or without a byte-order
//! mark), text in a legacy single-byte encoding (read as Windows-1252), or binary.
//!
//! - A NUL byte makes a file binary, even when it is valid UTF-8 (a `tar` archive of text
//!   files is), unless the pattern of zero bytes is that of UTF-16 or UTF-32 text and the
//!   whole file decodes as such.
//! - UTF-16 is decoded with `encoding_rs`; UTF-32 (which it does not cover) by hand.
//! - Bytes that are neither UTF-8 nor binary are decoded as Windows-1252 (a superset of
//!   the printable Latin-1 range, as the WHATWG Encoding Standard maps `ISO-8859-1` labels).
//!   That is a guess, so edits may add only ASCII there (see [`Encoding::is_guess`]).
//!
//! [`encode`] writes text back in the encoding it was read in, with the same BOM.

/// A text encoding a file was read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 (the default).
    Utf8,
    /// UTF-16, little-endian.
    Utf16Le,
    /// UTF-16, big-endian.
    Utf16Be,
    /// UTF-32, little-endian.
    Utf32Le,
    /// UTF-32, big-endian.
    Utf32Be,
    /// Not UTF-8 and no NUL bytes: read as Windows-1252 (Latin-1 and its superset).
    Windows1252,
}

impl Encoding {
    /// The encoding's usual name (`UTF-16LE`, `Windows-1252`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
            Encoding::Utf32Le => "UTF-32LE",
            Encoding::Utf32Be => "UTF-32BE",
            Encoding::Windows1252 => "Windows-1252",
        }
    }

    /// True when the encoding was guessed rather than recognised (legacy single-byte text).
    pub fn is_guess(self) -> bool {
        self == Encoding::Windows1252
    }

    /// The byte-order mark of the encoding.
    pub fn bom(self) -> &'static [u8] {
        match self {
            Encoding::Utf8 => b"\xEF\xBB\xBF",
            Encoding::Utf16Le => b"\xFF\xFE",
            Encoding::Utf16Be => b"\xFE\xFF",
            Encoding::Utf32Le => b"\xFF\xFE\x00\x00",
            Encoding::Utf32Be => b"\x00\x00\xFE\xFF",
            Encoding::Windows1252 => b"",
        }
    }
}

/// A file's bytes, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sniffed {
    /// Text.
    Text {
        /// The text, BOM removed.
        text: String,
        /// How it was encoded.
        encoding: Encoding,
        /// It started with the encoding's BOM.
        bom: bool,
        /// Decoding lost nothing: encoding the text again gives the same bytes.
        exact: bool,
    },
    /// Not text.
    Binary {
        /// Offset of the first NUL byte, when there is one.
        nul_at: Option<usize>,
        /// A recognised file type (`tar archive`, `PNG image`, ...), when known.
        kind: Option<&'static str>,
    },
}

/// Classifies and decodes `bytes`.
pub fn sniff(bytes: Vec<u8>) -> Sniffed {
    for enc in [Encoding::Utf32Le, Encoding::Utf32Be] {
        if bytes.starts_with(enc.bom()) {
            return decode_wide(&bytes[4..], enc, true, &bytes);
        }
    }
    for enc in [Encoding::Utf16Le, Encoding::Utf16Be] {
        if bytes.starts_with(enc.bom()) {
            return decode_wide(&bytes[2..], enc, true, &bytes);
        }
    }
    let nul_at = memchr::memchr(0, &bytes);
    if nul_at.is_some() {
        return match wide_pattern(&bytes) {
            Some(enc) => decode_wide(&bytes, enc, false, &bytes),
            None => binary(&bytes, nul_at),
        };
    }
    match String::from_utf8(bytes) {
        Ok(mut text) => {
            let bom = text.starts_with('\u{feff}');
            if bom {
                text.drain(..'\u{feff}'.len_utf8());
            }
            Sniffed::Text {
                text,
                encoding: Encoding::Utf8,
                bom,
                exact: true,
            }
        }
        Err(e) => legacy(e.into_bytes()),
    }
}

/// The UTF-16/32 variant whose zero-byte pattern `bytes` shows (in its first 4 KB): mostly
/// ASCII text in UTF-16LE has a zero in nearly every odd byte and almost none in even ones.
fn wide_pattern(bytes: &[u8]) -> Option<Encoding> {
    let n = bytes.len().min(4096) & !3;
    if n < 4 {
        return None;
    }
    let mut zeros = [0usize; 4];
    for (i, &b) in bytes[..n].iter().enumerate() {
        if b == 0 {
            zeros[i % 4] += 1;
        }
    }
    let units = n / 4;
    let few = |z: usize| z * 10 <= units;
    if bytes.len().is_multiple_of(4) {
        if zeros[2] == units && zeros[3] == units && few(zeros[0]) {
            return Some(Encoding::Utf32Le);
        }
        if zeros[0] == units && zeros[1] == units && few(zeros[3]) {
            return Some(Encoding::Utf32Be);
        }
    }
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    let (even, odd) = (zeros[0] + zeros[2], zeros[1] + zeros[3]);
    let half = units * 2;
    if odd * 10 >= half * 7 && even * 10 <= half {
        Some(Encoding::Utf16Le)
    } else if even * 10 >= half * 7 && odd * 10 <= half {
        Some(Encoding::Utf16Be)
    } else {
        None
    }
}

/// Decodes UTF-16/32 `body`; malformed input or a NUL character makes it binary.
fn decode_wide(body: &[u8], enc: Encoding, bom: bool, all: &[u8]) -> Sniffed {
    let text = match enc {
        Encoding::Utf16Le | Encoding::Utf16Be => {
            let codec = if enc == Encoding::Utf16Le {
                encoding_rs::UTF_16LE
            } else {
                encoding_rs::UTF_16BE
            };
            codec
                .decode_without_bom_handling_and_without_replacement(body)
                .map(|c| c.into_owned())
        }
        _ => decode_utf32(body, enc == Encoding::Utf32Le),
    };
    match text {
        Some(text) if !text.contains('\0') => Sniffed::Text {
            text,
            encoding: enc,
            bom,
            exact: true,
        },
        _ => binary(all, memchr::memchr(0, all)),
    }
}

fn decode_utf32(body: &[u8], le: bool) -> Option<String> {
    if !body.len().is_multiple_of(4) {
        return None;
    }
    body.chunks_exact(4)
        .map(|c| {
            let a = [c[0], c[1], c[2], c[3]];
            char::from_u32(if le {
                u32::from_le_bytes(a)
            } else {
                u32::from_be_bytes(a)
            })
        })
        .collect()
}

/// Non-UTF-8 bytes without NULs: Windows-1252 text, unless control bytes other than tab,
/// line breaks, form feed and escape make up more than 1 % of it, or unless the bytes are
/// mostly UTF-8 (see [`mostly_utf8`]): then they are UTF-8 text with each malformed
/// sequence shown as U+FFFD, not exact, so edits are refused rather than re-encoding it.
fn legacy(bytes: Vec<u8>) -> Sniffed {
    if mostly_utf8(&bytes) {
        let text = String::from_utf8_lossy(&bytes);
        let bom = text.starts_with('\u{feff}');
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned();
        return Sniffed::Text {
            text,
            encoding: Encoding::Utf8,
            bom,
            exact: false,
        };
    }
    let controls = bytes
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b))
        .count();
    if controls * 100 > bytes.len() {
        return binary(&bytes, None);
    }
    let (text, _, _) = encoding_rs::WINDOWS_1252.decode(&bytes);
    let text = text.into_owned();
    let exact = encode(Encoding::Windows1252, false, &text).is_ok_and(|b| b == bytes);
    Sniffed::Text {
        text,
        encoding: Encoding::Windows1252,
        bom: false,
        exact,
    }
}

/// True when `bytes` hold at least as many well-formed multi-byte UTF-8 characters as
/// malformed sequences: a UTF-8 file with a stray byte, not legacy text (where `é` is the
/// single byte `E9`, and byte pairs that happen to form UTF-8, like `Ã©`, are rare).
fn mostly_utf8(bytes: &[u8]) -> bool {
    let (mut wide, mut bad) = (0usize, 0usize);
    for chunk in bytes.utf8_chunks() {
        wide += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        bad += usize::from(!chunk.invalid().is_empty());
    }
    wide > 0 && wide >= bad
}

fn binary(bytes: &[u8], nul_at: Option<usize>) -> Sniffed {
    Sniffed::Binary {
        nul_at,
        kind: kind_of(bytes),
    }
}

/// A few common binary formats by their magic numbers (for the refusal's wording only;
/// `file` in the shell knows many more).
fn kind_of(bytes: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xFF\xD8\xFF", "JPEG image"),
        (b"GIF8", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "zip archive"),
        (b"\x1F\x8B", "gzip archive"),
        (b"\x7FELF", "ELF executable"),
        (b"\0asm", "WebAssembly module"),
        (b"SQLite format 3\0", "SQLite database"),
    ];
    if bytes.get(257..262) == Some(b"ustar") {
        return Some("tar archive");
    }
    MAGIC
        .iter()
        .find(|(m, _)| bytes.starts_with(m))
        .map(|&(_, k)| k)
}

/// A character the target encoding cannot represent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unencodable {
    /// The character.
    pub ch: char,
    /// Its byte offset in the text.
    pub at: usize,
}

/// `text` encoded as `enc`, with its BOM first when `bom`.
///
/// # Errors
/// The first character `enc` cannot represent (only Windows-1252 has such characters).
pub fn encode(enc: Encoding, bom: bool, text: &str) -> Result<Vec<u8>, Unencodable> {
    let mut out = Vec::with_capacity(text.len() * 2 + 4);
    if bom {
        out.extend_from_slice(enc.bom());
    }
    match enc {
        Encoding::Utf8 => out.extend_from_slice(text.as_bytes()),
        Encoding::Utf16Le => text
            .encode_utf16()
            .for_each(|u| out.extend_from_slice(&u.to_le_bytes())),
        Encoding::Utf16Be => text
            .encode_utf16()
            .for_each(|u| out.extend_from_slice(&u.to_be_bytes())),
        Encoding::Utf32Le => text
            .chars()
            .for_each(|c| out.extend_from_slice(&u32::from(c).to_le_bytes())),
        Encoding::Utf32Be => text
            .chars()
            .for_each(|c| out.extend_from_slice(&u32::from(c).to_be_bytes())),
        Encoding::Windows1252 => {
            let mut buf = [0u8; 4];
            for (at, ch) in text.char_indices() {
                let s = ch.encode_utf8(&mut buf);
                let (bytes, _, bad) = encoding_rs::WINDOWS_1252.encode(s);
                if bad {
                    return Err(Unencodable { ch, at });
                }
                out.extend_from_slice(&bytes);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn utf16le(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    #[test]
    fn nul_bytes_make_valid_utf8_binary() {
        let mut tar = vec![0u8; 512];
        tar[..9].copy_from_slice(b"hello.txt");
        tar[257..262].copy_from_slice(b"ustar");
        tar.extend_from_slice(b"hello world\n");
        assert!(std::str::from_utf8(&tar).is_ok());
        assert_eq!(
            sniff(tar),
            Sniffed::Binary {
                nul_at: Some(9),
                kind: Some("tar archive")
            }
        );
        assert!(matches!(
            sniff(b"abc\0def".to_vec()),
            Sniffed::Binary {
                nul_at: Some(3),
                kind: None
            }
        ));
    }

    #[test]
    fn utf16_and_utf32_with_and_without_bom() {
        let text = "héllo wörld\r\nline 2 ✓\n";
        let cases: Vec<(Vec<u8>, Encoding, bool)> = vec![
            (utf16le(text), Encoding::Utf16Le, false),
            (
                [b"\xFF\xFE".as_slice(), &utf16le(text)].concat(),
                Encoding::Utf16Le,
                true,
            ),
            (
                text.encode_utf16().flat_map(u16::to_be_bytes).collect(),
                Encoding::Utf16Be,
                false,
            ),
            (
                encode(Encoding::Utf16Be, true, text).unwrap(),
                Encoding::Utf16Be,
                true,
            ),
            (
                encode(Encoding::Utf32Le, false, text).unwrap(),
                Encoding::Utf32Le,
                false,
            ),
            (
                encode(Encoding::Utf32Be, true, text).unwrap(),
                Encoding::Utf32Be,
                true,
            ),
        ];
        for (bytes, enc, bom) in cases {
            let Sniffed::Text {
                text: t,
                encoding,
                bom: b,
                exact,
            } = sniff(bytes.clone())
            else {
                panic!("{enc:?} not text");
            };
            assert_eq!((t.as_str(), encoding, b, exact), (text, enc, bom, true));
            assert_eq!(encode(enc, bom, &t).unwrap(), bytes, "{enc:?}");
        }
    }

    #[test]
    fn latin1_is_read_as_windows_1252_and_round_trips() {
        let bytes = b"caf\xe9 \x80 na\xefve\n".to_vec();
        let Sniffed::Text {
            text,
            encoding,
            exact,
            ..
        } = sniff(bytes.clone())
        else {
            panic!()
        };
        assert_eq!(text, "café € naïve\n");
        assert_eq!(encoding, Encoding::Windows1252);
        assert!(exact);
        assert_eq!(encode(encoding, false, &text).unwrap(), bytes);
        assert_eq!(
            encode(encoding, false, "a→b"),
            Err(Unencodable { ch: '→', at: 1 })
        );
        // Every byte value without NUL or many controls round-trips.
        let all: Vec<u8> = (0x20..=0xffu8).collect();
        assert!(matches!(sniff(all), Sniffed::Text { exact: true, .. }));
    }

    #[test]
    fn utf8_with_a_stray_byte_stays_utf8_and_inexact() {
        let bytes = b"h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93\nbad \xff byte\n".to_vec();
        let Sniffed::Text {
            text,
            encoding,
            exact,
            ..
        } = sniff(bytes)
        else {
            panic!()
        };
        assert_eq!(text, "héllo wörld ✓\nbad \u{fffd} byte\n");
        assert_eq!((encoding, exact), (Encoding::Utf8, false));
        // Legacy text stays legacy, even with one pair of bytes that forms UTF-8.
        let latin = b"caf\xe9 na\xefve \xc3\xa9 d\xe9j\xe0\n".to_vec();
        assert!(matches!(
            sniff(latin),
            Sniffed::Text {
                encoding: Encoding::Windows1252,
                exact: true,
                ..
            }
        ));
    }

    #[test]
    fn control_heavy_bytes_are_binary() {
        let bytes: Vec<u8> = (1..=0x1fu8).chain([0xff, 0xfe, 0x80]).collect();
        assert!(matches!(sniff(bytes), Sniffed::Binary { nul_at: None, .. }));
    }
}
