//! Wrapping styled lines to a width in terminal cells.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Splits `line` into rows of at most `width` cells, breaking after the last
/// space that fits, or mid-word when a word is wider than the row. Tabs count
/// as four spaces. An empty line stays one empty row.
pub fn wrap_line(line: &Line<'_>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|s| {
            let style = line.style.patch(s.style);
            s.content.chars().flat_map(move |c| {
                let n = if c == '\t' { 4 } else { 1 };
                std::iter::repeat_n((if c == '\t' { ' ' } else { c }, style), n)
            })
        })
        .filter(|(c, _)| !c.is_control())
        .collect();
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
pub fn line_text(line: &Line<'_>) -> String {
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
    fn wide_characters_take_two_cells() {
        let rows = wrap_line(&Line::from("日本語テキスト"), 6);
        assert_eq!(texts(&rows), ["日本語", "テキス", "ト"]);
    }
}
