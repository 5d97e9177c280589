//! HTML reduced to readable text.
//!
//! A small single-pass tag stripper rather than `html2text`: that crate brings
//! the html5ever parser stack (markup5ever, string_cache, tendril, ...) for a
//! faithful layout the model does not need. This one drops script, style and
//! other non-content elements and comments, turns block elements into line
//! breaks and list items into `- ` lines, keeps link targets as ` (URL)`,
//! decodes character references and collapses whitespace outside `<pre>`.

/// Elements whose whole content is dropped.
const SKIP: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "head",
];

/// Elements that start and end on their own line.
const BLOCK: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "br",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tr",
    "ul",
];

/// Block elements set off by an empty line.
const PARAGRAPH: &[&str] = &[
    "blockquote",
    "dl",
    "figure",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "ol",
    "p",
    "pre",
    "table",
    "ul",
];

struct Out {
    text: String,
    pending_space: bool,
    pre: usize,
    href: Option<String>,
}

impl Out {
    fn push_text(&mut self, s: &str) {
        for c in s.chars() {
            if self.pre == 0 && c.is_whitespace() {
                self.pending_space = true;
                continue;
            }
            if self.pending_space && !self.text.is_empty() && !self.text.ends_with(['\n', ' ']) {
                self.text.push(' ');
            }
            self.pending_space = false;
            self.text.push(c);
        }
    }

    /// Ends the current line; with `blank`, also leaves an empty line.
    fn newline(&mut self, blank: bool) {
        self.pending_space = false;
        while self.text.ends_with(' ') {
            self.text.pop();
        }
        if self.text.is_empty() {
            return;
        }
        if !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        if blank && !self.text.ends_with("\n\n") {
            self.text.push('\n');
        }
    }
}

/// Finds the end of a tag starting at `start` (at `<`), honouring quotes.
fn tag_end(html: &str, start: usize) -> Option<usize> {
    let mut quote: Option<u8> = None;
    for (i, b) in html.as_bytes()[start..].iter().enumerate() {
        match (quote, *b) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(*b),
            (None, b'>') => return Some(start + i),
            _ => {}
        }
    }
    None
}

/// The value of attribute `name` in a tag body, if any.
fn attr(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find(name) {
        let at = from + pos;
        from = at + name.len();
        let before_ok = at == 0 || lower.as_bytes()[at - 1].is_ascii_whitespace();
        let rest = lower[from..].trim_start();
        if !before_ok || !rest.starts_with('=') {
            continue;
        }
        let value_start = tag.len() - rest.len() + 1;
        let v = tag[value_start..].trim_start();
        return Some(match v.chars().next() {
            Some(q @ ('"' | '\'')) => v[1..].split(q).next().unwrap_or("").to_string(),
            _ => v.split_whitespace().next().unwrap_or("").to_string(),
        });
    }
    None
}

/// Skips past `</name ...>` (case-insensitive) from `from`; returns the end.
fn skip_element(html: &str, lower: &str, name: &str, from: usize) -> usize {
    let close = format!("</{name}");
    match lower[from..].find(&close) {
        Some(p) => tag_end(html, from + p).map_or(html.len(), |e| e + 1),
        None => html.len(),
    }
}

/// Reduces an HTML document to readable text.
pub fn html_to_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let mut out = Out {
        text: String::with_capacity(html.len() / 2),
        pending_space: false,
        pre: 0,
        href: None,
    };
    let mut i = 0;
    while i < html.len() {
        let Some(rel) = html[i..].find('<') else {
            out.push_text(&decode_entities(&html[i..]));
            break;
        };
        out.push_text(&decode_entities(&html[i..i + rel]));
        let start = i + rel;
        if lower[start..].starts_with("<!--") {
            i = lower[start + 4..]
                .find("-->")
                .map_or(html.len(), |p| start + 4 + p + 3);
            continue;
        }
        let Some(end) = tag_end(html, start) else {
            out.push_text(&html[start..]);
            break;
        };
        i = end + 1;
        let body = &html[start + 1..end];
        let closing = body.starts_with('/');
        let name: String = body
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() {
            continue;
        }
        if !closing && SKIP.contains(&name.as_str()) && !body.ends_with('/') {
            i = skip_element(html, &lower, &name, i);
            continue;
        }
        handle_tag(&mut out, &name, body, closing);
    }
    tidy(&out.text)
}

fn handle_tag(out: &mut Out, name: &str, body: &str, closing: bool) {
    match (name, closing) {
        ("pre", false) => out.pre += 1,
        ("pre", true) => out.pre = out.pre.saturating_sub(1),
        ("a", false) => out.href = attr(body, "href"),
        ("a", true) => {
            if let Some(h) = out.href.take().filter(|h| is_useful_link(h)) {
                out.push_text(&format!(" ({h})"));
            }
        }
        ("td" | "th", true) => out.pending_space = true,
        _ => {}
    }
    if BLOCK.contains(&name) {
        out.newline(PARAGRAPH.contains(&name));
        if name == "li" && !closing {
            out.text.push_str("- ");
        }
    }
}

fn is_useful_link(h: &str) -> bool {
    h.starts_with("http://") || h.starts_with("https://") || h.starts_with('/')
}

/// Trims line ends and collapses runs of blank lines to one.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

/// Decodes numeric and common named character references; unknown ones stay.
pub fn decode_entities(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('&') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let tail = &rest[amp..];
        // A reference is at most 12 bytes; the window is cut on a character boundary
        // (untrusted text: `&` may be followed by a multi-byte character).
        let mut window = tail.len().min(12);
        while !tail.is_char_boundary(window) {
            window -= 1;
        }
        let semi = tail[..window].find(';');
        let decoded = semi.and_then(|e| entity(&tail[1..e]).map(|c| (c, e)));
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &tail[e + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let n = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(n).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "middot" => '·',
        "bull" => '•',
        "times" => '×',
        "larr" => '←',
        "rarr" => '→',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduces_a_page_to_text() {
        let html = r#"<!DOCTYPE html><html><head><title>T</title>
<style>body{color:red}</style><script>alert("x<y")</script></head>
<body><!-- hidden --><h1>Title &amp; more</h1>
<p>First   paragraph
with <b>bold</b> and <a href="https://docs.rs/x">a link</a>.</p>
<ul><li>one</li><li>two &lt;3</li></ul>
<pre>  keep
    spacing</pre><p>caf&eacute; &#233; &#x41;</p></body></html>"#;
        let t = html_to_text(html);
        assert_eq!(
            t,
            "Title & more\n\nFirst paragraph with bold and a link (https://docs.rs/x).\n\n- one\n- two <3\n\n  keep\n    spacing\n\ncaf&eacute; é A"
        );
    }

    #[test]
    fn malformed_html_does_not_panic() {
        for h in [
            "<",
            "<a href='x",
            "a < b > c",
            "<script>never closed",
            "&#xFFFFFFFF; &#0;",
            "<!--",
        ] {
            let _ = html_to_text(h);
        }
        assert_eq!(html_to_text("a < b"), "a < b");
    }

    #[test]
    fn an_ampersand_before_multi_byte_text_does_not_cut_a_character() {
        assert_eq!(decode_entities("Q & 研究開発"), "Q & 研究開発");
        assert_eq!(html_to_text("<p>Q & 研究開発</p>"), "Q & 研究開発");
        assert_eq!(decode_entities("&amp;😀 &é;&#233;"), "&😀 &é;é");
        // Every placement of `&` (and `<`, `&#`) among 1-, 2-, 3- and 4-byte characters.
        let pieces = [
            "a", "é", "研", "😀", "&", "&#", ";", "<", ">", "<!--", "\u{200b}",
        ];
        let mut n = 0u32;
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    for d in pieces {
                        let s = format!("{a}{b}{c}{d}{a}{c}{b}{d}x");
                        let _ = decode_entities(&s);
                        let _ = html_to_text(&s);
                        n += 1;
                    }
                }
            }
        }
        assert_eq!(n, 11u32.pow(4));
    }
}
