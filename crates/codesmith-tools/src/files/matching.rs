//! Locating the text an edit replaces: exact match, then three tolerant fallbacks
//! Each level must still be unambiguous (the caller applies
//! `occurrence` / `replace_all`), tolerance applies at match time only, and every scan
//! advances by whole matches, so multi-byte text is never split.

/// Which level found the match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Byte-exact.
    Exact,
    /// Leading whitespace of each line ignored (tabs vs spaces, wrong indentation).
    LeadingWhitespace,
    /// Typographic punctuation folded (curly quotes, en/em dashes, non-breaking spaces).
    Punctuation,
    /// Line-number prefixes (`   12│ `, `cat -n`, `grep -n`) stripped from the search text.
    LineNumbers,
}

impl Strategy {
    /// Stable identifier reported in results (`exact`, `leading_whitespace`, ...).
    pub fn id(self) -> &'static str {
        match self {
            Strategy::Exact => "exact",
            Strategy::LeadingWhitespace => "leading_whitespace",
            Strategy::Punctuation => "punctuation",
            Strategy::LineNumbers => "line_numbers",
        }
    }

    /// A sentence for the result, or `None` for an exact match.
    pub fn note(self) -> Option<&'static str> {
        match self {
            Strategy::Exact => None,
            Strategy::LeadingWhitespace => Some(
                "The search text matched only after ignoring leading whitespace; the file's \
                 own indentation was kept outside the replaced text.",
            ),
            Strategy::Punctuation => Some(
                "The search text matched only after folding typographic punctuation (curly \
                 quotes, dashes, non-breaking spaces); the file's own characters were kept \
                 outside the replaced text.",
            ),
            Strategy::LineNumbers => Some(
                "The search text matched only after stripping copied line-number prefixes; \
                 do not include the `N│ ` prefixes from read_file in search or replace.",
            ),
        }
    }
}

/// A byte range `[start, end)` of the file text.
pub type Span = (usize, usize);

/// The result of locating a needle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The level that matched.
    pub strategy: Strategy,
    /// Every non-overlapping match, in order.
    pub spans: Vec<Span>,
    /// For [`Strategy::LineNumbers`]: the replacement with its own prefixes stripped, when
    /// every line of it carried one.
    pub stripped_replace: Option<String>,
}

/// Non-overlapping exact matches, scanning past each whole match.
pub fn find_exact(hay: &str, needle: &str) -> Vec<Span> {
    if needle.is_empty() {
        return Vec::new();
    }
    hay.match_indices(needle)
        .map(|(i, m)| (i, i + m.len()))
        .collect()
}

/// Tries each level in order and returns the first that matches at least once.
/// `replace` is consulted only to strip line-number prefixes consistently.
pub fn locate(hay: &str, needle: &str, replace: &str) -> Option<Found> {
    let exact = find_exact(hay, needle);
    if !exact.is_empty() {
        return Some(found(Strategy::Exact, exact));
    }
    let ws = find_folded(hay, needle, fold_leading_ws);
    if !ws.is_empty() {
        return Some(found(Strategy::LeadingWhitespace, ws));
    }
    let punct = find_folded(hay, needle, fold_punctuation);
    if !punct.is_empty() {
        return Some(found(Strategy::Punctuation, punct));
    }
    find_line_numbered(hay, needle, replace)
}

fn found(strategy: Strategy, spans: Vec<Span>) -> Found {
    Found {
        strategy,
        spans,
        stripped_replace: None,
    }
}

/// A folded copy of a text: for each output byte, the original char's start and end.
struct Folded {
    text: String,
    starts: Vec<u32>,
    ends: Vec<u32>,
}

impl Folded {
    fn with_capacity(n: usize) -> Self {
        Folded {
            text: String::with_capacity(n),
            starts: Vec::with_capacity(n),
            ends: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, s: &str, orig_start: usize, orig_end: usize) {
        self.text.push_str(s);
        for _ in 0..s.len() {
            self.starts.push(orig_start as u32);
            self.ends.push(orig_end as u32);
        }
    }
}

/// Drops the leading spaces and tabs of every line.
fn fold_leading_ws(text: &str) -> Folded {
    let mut out = Folded::with_capacity(text.len());
    let mut at_line_start = true;
    for (i, c) in text.char_indices() {
        if at_line_start && (c == ' ' || c == '\t') {
            continue;
        }
        at_line_start = c == '\n';
        let end = i + c.len_utf8();
        out.push(&text[i..end], i, end);
    }
    out
}

/// The ASCII stand-in for a typographic character, if it has one.
fn ascii_for(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => "\"",
        '\u{2013}' | '\u{2212}' | '\u{2010}' | '\u{2011}' => "-",
        '\u{2014}' | '\u{2015}' => "--",
        '\u{00A0}' | '\u{2007}' | '\u{202F}' | '\u{2009}' | '\u{200A}' => " ",
        '\u{2026}' => "...",
        _ => return None,
    })
}

/// Folds typographic punctuation to ASCII.
fn fold_punctuation(text: &str) -> Folded {
    let mut out = Folded::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        let end = i + c.len_utf8();
        match ascii_for(c) {
            Some(a) => out.push(a, i, end),
            None => out.push(&text[i..end], i, end),
        }
    }
    out
}

/// Matches the folded needle in the folded haystack and maps spans back to the original.
/// A match that starts at a folded line start is widened to the original line start, so
/// the file's own indentation is replaced along with the line rather than kept twice.
fn find_folded(hay: &str, needle: &str, fold: fn(&str) -> Folded) -> Vec<Span> {
    let n = fold(needle).text;
    if n.trim().is_empty() {
        return Vec::new();
    }
    let h = fold(hay);
    if h.text.len() == hay.len() && h.text == hay && n == needle {
        return Vec::new();
    }
    let mut spans = Vec::new();
    for (ns, m) in h.text.match_indices(n.as_str()) {
        let ne = ns + m.len();
        let mut start = h.starts[ns] as usize;
        if ns == 0 || h.text.as_bytes()[ns - 1] == b'\n' {
            start = hay[..start].rfind('\n').map_or(0, |i| i + 1);
        }
        let end = h.ends[ne - 1] as usize;
        if spans.last().is_none_or(|&(_, pe)| start >= pe) {
            spans.push((start, end));
        }
    }
    spans
}

/// A needle line with a copied line-number prefix removed: `(number, rest)`.
/// Recognized: this tool's `{n:>6}│ text`, `cat -n` (`{n:>6}\ttext`) and `grep -n`
/// (`n:text`, or `n-text` for context lines).
pub fn strip_number_prefix(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim_start_matches(' ');
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let n: usize = trimmed[..digits].parse().ok()?;
    let rest = &trimmed[digits..];
    if let Some(r) = rest.strip_prefix('│') {
        return Some((n, r.strip_prefix(' ').unwrap_or(r)));
    }
    if let Some(r) = rest.strip_prefix('\t') {
        return Some((n, r));
    }
    if line.len() == trimmed.len()
        && let Some(r) = rest.strip_prefix(':').or_else(|| rest.strip_prefix('-'))
    {
        return Some((n, r));
    }
    None
}

/// Splits `text` into lines, keeping whether it ended with a newline and which newline.
fn split_lines(text: &str) -> (Vec<&str>, &str) {
    let (body, tail) = if let Some(b) = text.strip_suffix("\r\n") {
        (b, "\r\n")
    } else if let Some(b) = text.strip_suffix('\n') {
        (b, "\n")
    } else {
        (text, "")
    };
    (body.split('\n').collect(), tail)
}

/// Strips a prefix from every line; `None` unless every line has one and (for several
/// lines) the numbers strictly increase.
fn strip_all(text: &str) -> Option<(usize, String)> {
    let (lines, tail) = split_lines(text);
    let mut out = Vec::with_capacity(lines.len());
    let mut first = None;
    let mut prev: Option<usize> = None;
    for line in &lines {
        let (cr, line) = match line.strip_suffix('\r') {
            Some(l) => ("\r", l),
            None => ("", *line),
        };
        let (n, rest) = strip_number_prefix(line)?;
        if prev.is_some_and(|p| n <= p) {
            return None;
        }
        prev = Some(n);
        first.get_or_insert(n);
        out.push(format!("{rest}{cr}"));
    }
    Some((first?, out.join("\n") + tail))
}

/// Level three: strip line-number prefixes, then match exactly (guardrails:
/// several lines must all carry increasing numbers; a single line must land on the line
/// its number names).
fn find_line_numbered(hay: &str, needle: &str, replace: &str) -> Option<Found> {
    let (first_no, stripped) = strip_all(needle)?;
    if stripped.trim().is_empty() {
        return None;
    }
    let single = split_lines(needle).0.len() == 1;
    let mut spans = find_exact(hay, &stripped);
    if single {
        spans.retain(|&(s, _)| line_of(hay, s) == first_no);
    }
    if spans.is_empty() {
        return None;
    }
    let stripped_replace = strip_all(replace).map(|(_, r)| r);
    Some(Found {
        strategy: Strategy::LineNumbers,
        spans,
        stripped_replace,
    })
}

/// Leading spaces and tabs of `line`.
fn indent_of(line: &str) -> &str {
    let n = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..n]
}

/// After a [`Strategy::LeadingWhitespace`] match: rewrites the replacement's indentation
/// from the search text's style to the file's, so a tab-indented file does not get
/// space-indented lines (and the reverse). `needle` is the search text, `matched` the
/// file's matched text (starting at a line start). Returns `None` when nothing needs
/// changing or the styles cannot be mapped.
pub fn reindent(needle: &str, matched: &str, replace: &str) -> Option<String> {
    let ni = indent_of(needle.lines().next()?);
    let oi = indent_of(matched.lines().next()?);
    if ni == oi {
        return None;
    }
    let spaces = |s: &str| s.bytes().all(|b| b == b' ');
    let tabs = |s: &str| s.bytes().all(|b| b == b'\t');
    let convert: Box<dyn Fn(&str) -> String> = if !ni.is_empty()
        && spaces(ni)
        && !oi.is_empty()
        && tabs(oi)
        && ni.len().is_multiple_of(oi.len())
    {
        let unit = ni.len() / oi.len();
        Box::new(move |ws: &str| {
            let k = ws.bytes().filter(|&b| b == b' ').count();
            let t = ws.bytes().filter(|&b| b == b'\t').count();
            "\t".repeat(t + k / unit) + &" ".repeat(k % unit)
        })
    } else if !ni.is_empty()
        && tabs(ni)
        && !oi.is_empty()
        && spaces(oi)
        && oi.len().is_multiple_of(ni.len())
    {
        let unit = oi.len() / ni.len();
        Box::new(move |ws: &str| ws.replace('\t', &" ".repeat(unit)))
    } else {
        let (ni, oi) = (ni.to_string(), oi.to_string());
        Box::new(move |ws: &str| match ws.strip_prefix(ni.as_str()) {
            Some(rest) => format!("{oi}{rest}"),
            None => ws.to_string(),
        })
    };
    let out: Vec<String> = replace
        .split('\n')
        .map(|line| {
            if line.trim().is_empty() {
                return line.to_string();
            }
            let ws = indent_of(line);
            format!("{}{}", convert(ws), &line[ws.len()..])
        })
        .collect();
    let out = out.join("\n");
    (out != replace).then_some(out)
}

/// 1-based line number of byte offset `at`.
pub fn line_of(text: &str, at: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..at]).count() + 1
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn exact_advances_by_whole_matches() {
        assert_eq!(find_exact("aaaa", "aa"), vec![(0, 2), (2, 4)]);
        let s = "日本語日本語";
        let spans = find_exact(s, "本語");
        assert_eq!(spans.len(), 2);
        for (a, b) in spans {
            assert!(s.is_char_boundary(a) && s.is_char_boundary(b));
        }
    }

    #[test]
    fn leading_whitespace_maps_back_to_line_start() {
        let hay = "fn a() {\n\tlet x = 1;\n\tlet y = 2;\n}\n";
        let f = locate(hay, "    let x = 1;\n    let y = 2;", "").unwrap();
        assert_eq!(f.strategy, Strategy::LeadingWhitespace);
        let (s, e) = f.spans[0];
        assert_eq!(&hay[s..e], "\tlet x = 1;\n\tlet y = 2;");
    }

    #[test]
    fn punctuation_folded() {
        let hay = "say(\"hello — world\");\n";
        let f = locate(hay, "say(“hello — world”);", "").unwrap();
        assert_eq!(f.strategy, Strategy::Punctuation);
        let hay2 = "say(\"it's\");\n";
        let f = locate(hay2, "say(“it’s”);", "").unwrap();
        assert_eq!(f.strategy, Strategy::Punctuation);
        assert_eq!(&hay2[f.spans[0].0..f.spans[0].1], "say(\"it's\");");
    }

    #[test]
    fn reindent_maps_styles() {
        assert_eq!(
            reindent("    a\n    b", "\ta\n\tb", "    x\n        y").as_deref(),
            Some("\tx\n\t\ty")
        );
        assert_eq!(
            reindent("\ta", "    a", "\tx\n\t\ty").as_deref(),
            Some("    x\n        y")
        );
        assert_eq!(
            reindent("a", "    a", "x\n  y").as_deref(),
            Some("    x\n      y")
        );
        assert_eq!(reindent("\ta", "\ta", "\tx"), None);
    }

    #[test]
    fn prefixes_recognized() {
        assert_eq!(strip_number_prefix("    12│ let x;"), Some((12, "let x;")));
        assert_eq!(strip_number_prefix("    12\tlet x;"), Some((12, "let x;")));
        assert_eq!(strip_number_prefix("12:let x;"), Some((12, "let x;")));
        assert_eq!(strip_number_prefix("12-let x;"), Some((12, "let x;")));
        assert_eq!(strip_number_prefix("let x;"), None);
    }

    #[test]
    fn line_number_guardrails() {
        let hay = "a\nb\nc\n30:00 x\n";
        let f = locate(hay, "     2│ b\n     3│ c", "     2│ B\n     3│ C").unwrap();
        assert_eq!(f.strategy, Strategy::LineNumbers);
        assert_eq!(f.stripped_replace.as_deref(), Some("B\nC"));
        // Not increasing: refused.
        assert!(locate(hay, "     3│ b\n     2│ c", "").is_none());
        // Single line must land on its own line number.
        assert!(locate(hay, "2:b", "").is_some());
        assert!(locate(hay, "3:b", "").is_none());
        // Prose with digits: "12:30:00 x" strips to "30:00 x", wrong line.
        assert!(locate(hay, "12:30:00 x", "").is_none());
    }
}
