//! Wrapping styled lines to a width in terminal cells.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Splits `line` into rows of at most `width` cells, breaking after the last
/// space that fits, or mid-word when a word is wider than the row. Tabs count
/// as four spaces. An empty line stays one empty row.
///
/// Every span passes [`codesmith_policy::terminal_safe`] first, the filter the
/// line-oriented outputs use, so escape sequences never become cells and
/// controls and invisible characters show as `\u{…}`; a control character
/// that still remains (a newline inside a span) is dropped.
pub(crate) fn wrap_line(line: &Line<'_>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut cells: Vec<(char, Style)> = Vec::new();
    for s in &line.spans {
        let style = line.style.patch(s.style);
        for c in codesmith_policy::terminal_safe(&s.content).chars() {
            match c {
                '\t' => cells.extend(std::iter::repeat_n((' ', style), 4)),
                c if c.is_control() => {}
                c => cells.push((c, style)),
            }
        }
    }
    if cells.is_empty() {
        return vec![Line::default()];
    }
    let mut rows = Vec::new();
    let mut start = 0;
    while start < cells.len() {
        let end = row_end(&cells, start, width);
        rows.push(to_line(&cells[start..end]));
        start = end;
    }
    rows
}

fn row_end(cells: &[(char, Style)], start: usize, width: usize) -> usize {
    let mut used = 0;
    let mut last_space = None;
    for (i, (c, _)) in cells.iter().enumerate().skip(start) {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            return match last_space {
                Some(s) if s > start => s + 1,
                _ if i == start => i + 1,
                _ => i,
            };
        }
        used += w;
        if *c == ' ' {
            last_space = Some(i);
        }
    }
    cells.len()
}

fn to_line(cells: &[(char, Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut current: Option<Style> = None;
    for (c, style) in cells {
        if current != Some(*style) {
            if let Some(s) = current {
                spans.push(Span::styled(std::mem::take(&mut text), s));
            }
            current = Some(*style);
        }
        text.push(*c);
    }
    if let Some(s) = current {
        spans.push(Span::styled(text, s));
    }
    Line::from(spans)
}

/// The plain text of a line.
#[cfg(test)]
pub(crate) fn line_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter().map(line_text).collect()
    }

    #[test]
    fn breaks_at_spaces_and_hard_breaks_long_words() {
        let rows = wrap_line(&Line::from("hello brave new world"), 11);
        assert_eq!(texts(&rows), ["hello ", "brave new ", "world"]);
        let rows = wrap_line(&Line::from("abcdefghij"), 4);
        assert_eq!(texts(&rows), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap_line(&Line::default(), 10).len(), 1);
    }

    #[test]
    fn escapes_never_become_cells() {
        let rows = wrap_line(
            &Line::from("a\x1b]52;c;cHduZWQ=\x07b\x1b[2J\x1b[8mc\u{202e}d\x07"),
            80,
        );
        assert_eq!(texts(&rows), ["abc\\u{202e}d\\u{7}"]);
    }

    #[test]
    fn wide_characters_take_two_cells() {
        let rows = wrap_line(&Line::from("日本語テキスト"), 6);
        assert_eq!(texts(&rows), ["日本語", "テキス", "ト"]);
    }
}
