//! A small Markdown renderer for assistant text: headings, lists, quotes,
//! inline `code`, **bold**, and fenced code blocks with light keyword
//! highlighting (no grammar engine: keywords, strings and comments only).

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme::Theme;

/// Keywords highlighted in code blocks, across common languages.
const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "class",
    "const",
    "continue",
    "def",
    "else",
    "elif",
    "enum",
    "export",
    "false",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "let",
    "loop",
    "match",
    "mod",
    "mut",
    "None",
    "null",
    "pub",
    "return",
    "self",
    "static",
    "struct",
    "switch",
    "trait",
    "True",
    "true",
    "False",
    "type",
    "use",
    "var",
    "while",
    "with",
    "yield",
];

/// Renders `text` into logical lines (not yet wrapped to a width).
pub(crate) fn render(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut r = Renderer::default();
    text.split('\n').map(|raw| r.line(raw, theme)).collect()
}

/// A line-at-a-time renderer: it remembers whether it is inside a fenced code
/// block, so a streaming answer can be rendered one finished line at a time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Renderer {
    fence: Option<String>,
}

impl Renderer {
    /// Renders the next line (without its newline).
    pub(crate) fn line(&mut self, raw: &str, theme: &Theme) -> Line<'static> {
        // The same filter as every line-oriented output, before any Markdown is
        // read: a sequence cannot hide inside link or emphasis syntax.
        let safe = codesmith_policy::terminal_safe(raw);
        let raw = safe.as_ref();
        let trimmed = raw.trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            return match self.fence.take() {
                Some(_) => Line::styled("└────", theme.dim),
                None => {
                    let lang = rest.trim().to_string();
                    let line = Line::styled(format!("┌── {lang}"), theme.dim);
                    self.fence = Some(lang);
                    line
                }
            };
        }
        if self.fence.is_some() {
            let mut spans = vec![Span::styled("│ ", theme.dim)];
            spans.extend(highlight(raw, theme));
            return Line::from(spans);
        }
        block_line(raw, theme)
    }
}

fn block_line(raw: &str, theme: &Theme) -> Line<'static> {
    let trimmed = raw.trim_start();
    let indent = &raw[..raw.len() - trimmed.len()];
    let hashes = trimmed.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        let style = theme.heading.add_modifier(Modifier::UNDERLINED);
        return Line::from(Span::styled(trimmed[hashes + 1..].to_string(), style));
    }
    if let Some(rest) = trimmed.strip_prefix("> ") {
        let mut spans = vec![Span::styled("▌ ", theme.dim)];
        spans.extend(inline(rest, theme, theme.dim));
        return Line::from(spans);
    }
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = trimmed.strip_prefix(bullet) {
            let mut spans = vec![Span::raw(format!("{indent}• "))];
            spans.extend(inline(rest, theme, theme.text));
            return Line::from(spans);
        }
    }
    Line::from(inline(raw, theme, theme.text))
}

/// Inline markup: `code`, **bold** and *emphasis*.
fn inline(text: &str, theme: &Theme, base: Style) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let marker = match c {
            '`' => Some(("`", theme.code)),
            '*' if rest.starts_with("**") => Some(("**", base.add_modifier(Modifier::BOLD))),
            '*' => Some(("*", base.add_modifier(Modifier::ITALIC))),
            _ => None,
        };
        if let Some((m, style)) = marker
            && let Some(end) = rest[m.len()..].find(m).filter(|e| *e > 0)
        {
            if !plain.is_empty() {
                spans.push(Span::styled(std::mem::take(&mut plain), base));
            }
            spans.push(Span::styled(
                rest[m.len()..m.len() + end].to_string(),
                style,
            ));
            rest = &rest[2 * m.len() + end..];
            continue;
        }
        plain.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if !plain.is_empty() || spans.is_empty() {
        spans.push(Span::styled(plain, base));
    }
    spans
}

/// Highlights one line of code: comments, string literals, keywords.
fn highlight(line: &str, theme: &Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut word = String::new();
    let mut chars = line.char_indices().peekable();
    let flush = |word: &mut String, spans: &mut Vec<Span<'static>>| {
        if word.is_empty() {
            return;
        }
        let style = if KEYWORDS.contains(&word.as_str()) {
            theme.keyword
        } else {
            theme.code
        };
        spans.push(Span::styled(std::mem::take(word), style));
    };
    while let Some((i, c)) = chars.next() {
        let rest = &line[i..];
        if rest.starts_with("//") || (c == '#' && line[..i].trim().is_empty()) {
            flush(&mut word, &mut spans);
            spans.push(Span::styled(rest.to_string(), theme.dim));
            return spans;
        }
        if c == '"' || c == '\'' {
            flush(&mut word, &mut spans);
            let mut lit = String::from(c);
            let mut escaped = false;
            for (_, d) in chars.by_ref() {
                lit.push(d);
                if d == c && !escaped {
                    break;
                }
                escaped = d == '\\' && !escaped;
            }
            spans.push(Span::styled(lit, theme.literal));
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut spans);
            spans.push(Span::styled(c.to_string(), theme.code));
        }
    }
    flush(&mut word, &mut spans);
    spans
}

#[cfg(test)]
mod tests {
    use super::super::theme::ThemeKind;
    use super::super::wrap::line_text;
    use super::*;

    #[test]
    fn renders_blocks_and_inline_markup() {
        let theme = Theme::new(ThemeKind::Dark);
        let md = "# Title\nSome **bold** and `code`.\n- item\n```rust\nfn main() {} // hi\n```";
        let lines = render(md, &theme);
        let text: Vec<String> = lines.iter().map(line_text).collect();
        assert_eq!(
            text,
            [
                "Title",
                "Some bold and code.",
                "• item",
                "┌── rust",
                "│ fn main() {} // hi",
                "└────"
            ]
        );
        let code_line = &lines[4];
        let kw = code_line.spans.iter().find(|s| s.content == "fn");
        assert_eq!(kw.map(|s| s.style), Some(theme.keyword));
        let bold = lines[1].spans.iter().find(|s| s.content == "bold");
        assert!(bold.is_some_and(|s| s.style.add_modifier.contains(Modifier::BOLD)));
    }

    #[test]
    fn unclosed_markers_stay_literal() {
        let theme = Theme::new(ThemeKind::Light);
        let lines = render("2 * 3 = `6", &theme);
        assert_eq!(line_text(&lines[0]), "2 * 3 = `6");
    }
}
