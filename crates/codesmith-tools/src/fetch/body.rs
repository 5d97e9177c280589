//! Response bodies: bytes to text, HTML to readable text, cut to a budget.

use encoding_rs::{Encoding, UTF_8};

use super::html::html_to_text;

/// Default `max_bytes`: 100 KB of text for the model.
pub const DEFAULT_MAX_BYTES: usize = 100 * 1024;

/// Largest `max_bytes` a caller may ask for.
pub const MAX_MAX_BYTES: usize = 1024 * 1024;

/// Most raw bytes read from the network for one response (before reduction).
pub const RAW_READ_CAP: usize = 8 * 1024 * 1024;

/// The charset label in a `Content-Type` value, if any.
fn charset(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"'))
    })
}

/// True for HTML by content type, or by sniffing the start when the type is absent.
pub fn is_html(content_type: Option<&str>, body: &[u8]) -> bool {
    match content_type {
        Some(ct) => {
            let mime = ct.split(';').next().unwrap_or("").trim();
            mime.eq_ignore_ascii_case("text/html")
                || mime.eq_ignore_ascii_case("application/xhtml+xml")
        }
        None => {
            let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
            let head = head.trim_start();
            head.starts_with("<!doctype html") || head.starts_with("<html")
        }
    }
}

/// Decodes bytes by the declared charset (BOM wins), UTF-8 by default;
/// malformed sequences become U+FFFD.
pub fn decode(body: &[u8], content_type: Option<&str>) -> String {
    let declared = content_type
        .and_then(charset)
        .and_then(|l| Encoding::for_label(l.as_bytes()))
        .unwrap_or(UTF_8);
    let (text, _, _) = declared.decode(body);
    text.into_owned()
}

/// Cuts `text` to at most `max` bytes on a char boundary. Returns the kept
/// prefix and whether anything was cut.
pub fn cut(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// Body bytes to the text the model reads: decoded, HTML reduced.
pub fn to_text(body: &[u8], content_type: Option<&str>) -> String {
    let text = decode(body, content_type);
    if is_html(content_type, body) {
        html_to_text(&text)
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_and_sniffing() {
        assert_eq!(
            decode(b"caf\xe9", Some("text/plain; charset=ISO-8859-1")),
            "café"
        );
        assert_eq!(decode("café".as_bytes(), Some("text/plain")), "café");
        assert_eq!(decode(b"a\xffb", None), "a\u{FFFD}b");
        assert!(is_html(Some("Text/HTML; charset=utf-8"), b""));
        assert!(!is_html(Some("application/json"), b"<html>"));
        assert!(is_html(None, b"  <!DOCTYPE html><p>x"));
        assert_eq!(to_text(b"<p>a</p><p>b</p>", Some("text/html")), "a\n\nb");
    }

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut("héllo", 2), ("h", true));
        assert_eq!(cut("héllo", 3), ("hé", true));
        assert_eq!(cut("abc", 10), ("abc", false));
    }
}
