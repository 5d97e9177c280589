//! Drawing the UI: transcript, retry banner, approval prompt, input box, status line.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Padding, Paragraph};
use unicode_width::UnicodeWidthStr;

use super::app::{App, Entry, StreamCache, ToolEntry, ToolStatus};
use super::markdown;
use super::theme::Theme;
use super::wrap::wrap_line;
use codesmith_tools::shell::LIVE_LINE_CHARS;

/// Most input rows shown at once (the box scrolls to the cursor beyond that).
pub(crate) const MAX_INPUT_ROWS: usize = 6;
/// Most diff lines shown under an edit while tool results are collapsed.
pub(crate) const DIFF_PREVIEW_LINES: usize = 8;
/// Most lines of a long (pasted) user message shown while collapsed.
pub(crate) const USER_LINES: usize = 8;
/// Most result lines shown under a call while tool results are expanded.
pub(crate) const RESULT_LINES: usize = 30;

/// Draws the whole screen.
pub(crate) fn draw(frame: &mut Frame<'_>, app: &mut App) {
    let area = frame.area();
    let input_rows = app.editor.lines().len().clamp(1, MAX_INPUT_ROWS) as u16 + 2;
    let retry = app.status.retry_text(Instant::now());
    // What the approval prompt may take: all but the input, the status line, the banner
    // and one transcript row (and its own border).
    let approval_max =
        area.height
            .saturating_sub(input_rows + 1 + u16::from(retry.is_some()) + 1 + 2) as usize;
    let approval_rows = app.approval.as_ref().map_or(0, |p| {
        approval_lines(app, p, area.width, approval_max, false).len() as u16 + 2
    });
    let [transcript, banner, approval, input, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(u16::from(retry.is_some())),
        Constraint::Length(approval_rows),
        Constraint::Length(input_rows),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_transcript(frame, app, transcript);
    if let Some(text) = retry {
        frame.render_widget(
            Paragraph::new(Line::styled(
                text,
                app.theme.warn.add_modifier(Modifier::BOLD),
            )),
            banner,
        );
    }
    if app.approval.is_some() {
        draw_approval(frame, app, approval);
    }
    draw_input(frame, app, input);
    frame.render_widget(
        Paragraph::new(app.status.line(&app.theme, status.width as usize)),
        status,
    );
}

fn draw_transcript(frame: &mut Frame<'_>, app: &mut App, area: Rect) {
    let resized = app.rendered_width != area.width;
    if resized {
        app.invalidate();
        app.rendered_width = area.width;
    }
    let width = area.width as usize;
    let last = app.entries.len().saturating_sub(1);
    for i in 0..app.entries.len() {
        if app.rendered[i].is_none() {
            let rows = if i == last && app.running && matches!(app.entries[i], Entry::Assistant(_))
            {
                streaming_rows(app, i, width)
            } else {
                entry_lines(app, i)
                    .iter()
                    .flat_map(|l| wrap_line(l, width))
                    .collect()
            };
            app.rendered[i] = Some(rows);
        }
    }
    let height = area.height as usize;
    // Walk back from the bottom, collecting only the rows that can show.
    let total: usize = app.rendered.iter().flatten().map(Vec::len).sum();
    if app.scroll > 0 && !resized && total > app.rendered_total {
        app.scroll += total - app.rendered_total;
    }
    app.rendered_total = total;
    let max_scroll = total.saturating_sub(height);
    app.scroll = app.scroll.min(max_scroll);
    let skip_bottom = app.scroll;
    let mut rows: Vec<Line<'static>> = Vec::with_capacity(height);
    let mut skipped = 0;
    'outer: for entry in app.rendered.iter().rev().flatten() {
        for row in entry.iter().rev() {
            if skipped < skip_bottom {
                skipped += 1;
                continue;
            }
            rows.push(row.clone());
            if rows.len() == height {
                break 'outer;
            }
        }
    }
    rows.reverse();
    frame.render_widget(Paragraph::new(rows), area);
    if app.scroll > 0 {
        let hint = format!(" ↓ {} more rows (PgDn) ", app.scroll);
        let w = (hint.width() as u16).min(area.width);
        let r = Rect::new(area.right() - w, area.bottom().saturating_sub(1), w, 1);
        frame.render_widget(Paragraph::new(Span::styled(hint, app.theme.warn)), r);
    }
}

/// Rows of the answer still streaming in entry `i`: finished lines come from
/// the cache and only new ones are rendered; the unfinished last line is
/// rendered on its own each time.
fn streaming_rows(app: &mut App, i: usize, width: usize) -> Vec<Line<'static>> {
    let Entry::Assistant(text) = &app.entries[i] else {
        return Vec::new();
    };
    let theme = app.theme;
    let mut cache = match app.stream.take() {
        Some(c) if c.entry == i && c.width == width && c.settled <= text.len() => c,
        _ => StreamCache {
            entry: i,
            width,
            settled: text.len() - text.trim_start_matches('\n').len(),
            renderer: markdown::Renderer::default(),
            rows: if i > 0 {
                vec![Line::default()]
            } else {
                Vec::new()
            },
        },
    };
    while let Some(nl) = text[cache.settled..].find('\n') {
        let line = cache
            .renderer
            .line(&text[cache.settled..cache.settled + nl], &theme);
        cache.rows.extend(wrap_line(&line, width));
        cache.settled += nl + 1;
    }
    let mut rows = cache.rows.clone();
    let tail = &text[cache.settled..];
    if !tail.is_empty() {
        let line = cache.renderer.clone().line(tail, &theme);
        rows.extend(wrap_line(&line, width));
    }
    app.stream = Some(cache);
    rows
}

/// The logical (unwrapped) lines of entry `i`.
fn entry_lines(app: &App, i: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let gap = i > 0;
    let mut out = Vec::new();
    match &app.entries[i] {
        Entry::User(text) => {
            if gap {
                out.push(Line::default());
            }
            let lines: Vec<&str> = text.split('\n').collect();
            let shown = if app.expand_tools || lines.len() <= USER_LINES {
                lines.len()
            } else {
                USER_LINES
            };
            for (n, line) in lines.iter().take(shown).enumerate() {
                let prefix = if n == 0 { "› " } else { "  " };
                out.push(Line::styled(format!("{prefix}{line}"), t.user));
            }
            if shown < lines.len() {
                let more = lines.len() - shown;
                out.push(Line::styled(
                    format!("  … {more} more lines (Ctrl-O)"),
                    t.dim,
                ));
            }
        }
        Entry::Assistant(text) => {
            if gap {
                out.push(Line::default());
            }
            out.extend(markdown::render(text.trim_matches('\n'), t));
        }
        Entry::Thinking(text) => {
            let text = text.trim();
            let style = t.dim.add_modifier(Modifier::ITALIC);
            if app.show_thinking {
                out.extend(text.lines().map(|l| Line::styled(format!("┊ {l}"), style)));
            } else {
                let n = text.lines().count();
                out.push(Line::styled(
                    format!("┊ thinking ({n} lines, Ctrl-T to show)"),
                    style,
                ));
            }
        }
        Entry::Tool(tool) => out.extend(tool_lines(tool, app.expand_tools, t)),
        Entry::Notice(msg) => out.push(Line::styled(format!("ℹ {msg}"), t.warn)),
        Entry::Error(msg) => out.push(Line::styled(format!("✗ {msg}"), t.error)),
        Entry::Info(lines) => {
            out.extend(lines.iter().map(|l| Line::styled(l.clone(), t.dim)));
        }
        Entry::Verdict { verdict, command } => {
            let style = if verdict == "verified_pass" {
                t.ok
            } else {
                t.error
            };
            let cmd = command.as_deref().map_or("no command".to_string(), |c| {
                codesmith_policy::visible_line(c, 100)
            });
            out.push(Line::styled(format!("⚖ {verdict} ({cmd})"), style));
        }
    }
    out
}

fn tool_lines(tool: &ToolEntry, expand: bool, t: &Theme) -> Vec<Line<'static>> {
    let (marker, marker_style) = match &tool.status {
        ToolStatus::Running => ("◌", t.warn),
        ToolStatus::Ok => ("●", t.ok),
        ToolStatus::Failed(_) => ("✗", t.error),
    };
    let mut head = vec![
        Span::styled(format!("{marker} "), marker_style),
        Span::styled(tool.name.clone(), t.heading),
        Span::styled(format!(" {}", tool.key_arg), t.text),
    ];
    // A running call's summary is its live status (a subagent's current step); a
    // finished one's, a few words on its result.
    if !matches!(tool.status, ToolStatus::Failed(_))
        && let Some(summary) = &tool.summary
    {
        head.push(Span::styled(format!(" · {summary}"), t.dim));
    }
    if tool.status == ToolStatus::Running {
        head.push(Span::styled(" …", t.dim));
    }
    let mut out = vec![Line::from(head)];
    if tool.status == ToolStatus::Running {
        for l in &tool.live {
            out.push(Line::styled(
                format!("  ┆ {}", codesmith_policy::visible_line(l, LIVE_LINE_CHARS)),
                t.dim,
            ));
        }
    }
    if let ToolStatus::Failed(why) = &tool.status {
        out.push(Line::styled(format!("  └ {why}"), t.error));
    }
    let limit = if expand {
        usize::MAX
    } else {
        DIFF_PREVIEW_LINES
    };
    for l in tool.diff.iter().take(limit) {
        let style = match l.chars().next() {
            Some('-') => t.error,
            Some('+') => t.added,
            _ => t.dim,
        };
        out.push(Line::styled(format!("    {l}"), style));
    }
    if tool.diff.len() > limit {
        let more = tool.diff.len() - limit;
        out.push(Line::styled(
            format!("    … {more} more lines (Ctrl-O)"),
            t.dim,
        ));
    }
    if expand && !tool.output.is_empty() {
        let text = &tool.output;
        let lines: Vec<&str> = text.lines().collect();
        for l in lines.iter().take(RESULT_LINES) {
            out.push(Line::styled(format!("  │ {l}"), t.dim));
        }
        if lines.len() > RESULT_LINES {
            let more = lines.len() - RESULT_LINES;
            out.push(Line::styled(format!("  │ … {more} more lines"), t.dim));
        }
    }
    out
}

/// Most rows the `why:` reason of an approval prompt takes while the command is folded;
/// Ctrl-O shows all of it below the command.
pub(crate) const WHY_ROWS: usize = 3;

/// The rows of an approval prompt `width` columns wide, at most `max_rows` of them when
/// that leaves room for the choices: the reason folds to [`WHY_ROWS`] rows (fewer when the
/// screen is short) and the command's rows give way before the choices do. With `drawn`
/// (the rows go on screen), records which rows of the whole command were on screen.
fn approval_lines(
    app: &App,
    prompt: &super::approval::Prompt,
    width: u16,
    max_rows: usize,
    drawn: bool,
) -> Vec<Line<'static>> {
    let t = &app.theme;
    let inner = width.saturating_sub(4) as usize;
    let style_of = |l: &str| {
        if l.starts_with("$ ") {
            t.heading
        } else {
            t.dim
        }
    };
    // Below the command and the reason: a note when "yes" was pressed too early, the
    // choices, and the reason being typed.
    let mut footer = Vec::new();
    if prompt.must_read && !prompt.seen_all.get() {
        let note = Line::styled(super::approval::MUST_READ_NOTE, t.warn);
        footer.extend(wrap_line(&note, inner));
    }
    let mut spans = Vec::new();
    for (i, c) in prompt.choices().iter().enumerate() {
        let style = if i == prompt.selected {
            t.warn.add_modifier(Modifier::REVERSED)
        } else {
            t.warn
        };
        spans.push(Span::styled(format!("[{}] {}", c.key, c.label), style));
        spans.push(Span::raw("  "));
    }
    spans.push(Span::styled(
        format!("[{}] no, say why", super::approval::Prompt::REASON_KEY),
        t.warn,
    ));
    footer.extend(wrap_line(&Line::from(spans), inner));
    if let Some(reason) = &prompt.reason {
        let typed = Line::styled(
            format!(
                "why not (Enter sends, Esc skips): {}▏",
                codesmith_policy::visible_line(reason, 500)
            ),
            t.text,
        );
        footer.extend(wrap_line(&typed, inner));
    }
    let why = wrap_line(
        &Line::styled(format!("why: {}", prompt.request.reason), t.text),
        inner,
    );
    let mut lines = Vec::new();
    if prompt.expanded {
        let mut rows: Vec<Line<'static>> = Vec::new();
        let mut row_lines = Vec::new();
        for (i, l) in prompt.full_lines().into_iter().enumerate() {
            let wrapped = wrap_line(&Line::styled(l.clone(), style_of(&l)), inner);
            row_lines.extend(std::iter::repeat_n(i, wrapped.len()));
            rows.extend(wrapped);
        }
        // The whole reason scrolls below the whole command.
        rows.extend(why);
        // The footer and the position line keep their rows; the command gets the rest
        // (at least 1).
        let page = max_rows.saturating_sub(footer.len() + 1).max(1);
        let scroll = prompt.scroll.min(rows.len().saturating_sub(page));
        if drawn {
            prompt.max_scroll.set(Some(rows.len().saturating_sub(page)));
            prompt.page.set(Some(page));
        }
        let end = (scroll + page).min(rows.len());
        lines.extend(rows[scroll..end].iter().cloned());
        // Only the rows drawn count as read, and only when the whole prompt fits.
        if drawn && (end - scroll) + 1 + footer.len() <= max_rows {
            prompt.mark_drawn(inner, &row_lines, scroll..end.min(row_lines.len()));
        }
        lines.push(Line::styled(
            format!(
                "  rows {}–{end} of {} · ↑/↓ PgUp/PgDn Home/End scroll · Ctrl-O folds",
                scroll + 1,
                rows.len()
            ),
            t.dim,
        ));
    } else {
        let command: Vec<Line<'static>> = prompt
            .command_lines()
            .into_iter()
            .flat_map(|l| wrap_line(&Line::styled(l.clone(), style_of(&l)), inner))
            .collect();
        let room = max_rows.saturating_sub(footer.len());
        // The reason: at most WHY_ROWS rows, and no more than the command leaves.
        let why_rows = WHY_ROWS
            .min(room.saturating_sub(command.len()).max(1))
            .min(why.len());
        let why_cut = why_rows < why.len();
        let mut shown_why: Vec<Line<'static>> = why[..why_rows.saturating_sub(1)].to_vec();
        if why_cut {
            shown_why.push(Line::styled(
                format!(
                    "  … {} more rows of why: Ctrl-O shows all",
                    why.len() - shown_why.len()
                ),
                t.dim,
            ));
        } else if let Some(last) = why.get(why_rows.wrapping_sub(1)) {
            shown_why.push(last.clone());
        }
        // The command gives way too when the screen is too short for it.
        let command_room = room.saturating_sub(shown_why.len()).max(1);
        if command.len() > command_room {
            lines.extend(command[..command_room - 1].iter().cloned());
            lines.push(Line::styled(
                format!(
                    "  … {} more rows of the command: Ctrl-O shows all",
                    command.len() - (command_room - 1)
                ),
                t.dim,
            ));
            // What did not fit was not seen, unless it was drawn whole before.
            if drawn && !prompt.all_lines_seen() {
                prompt.seen_all.set(false);
            }
        } else {
            if drawn && !prompt.elides() {
                // Every line of the command is on screen whole.
                prompt.seen_lines.borrow_mut().fill(true);
            }
            lines.extend(command);
        }
        lines.extend(shown_why);
    }
    lines.extend(footer);
    lines
}

fn draw_approval(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let Some(prompt) = &app.approval else { return };
    let rows = area.height.saturating_sub(2) as usize;
    let lines = approval_lines(app, prompt, area.width, rows, true);
    let title = format!(
        " Allow {}? ",
        codesmith_policy::visible_line(&prompt.request.tool, 40)
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .padding(Padding::horizontal(1))
        .border_style(app.theme.warn)
        .title(Span::styled(
            title,
            app.theme.warn.add_modifier(Modifier::BOLD),
        ));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_input(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let t = &app.theme;
    let title = if app.approval.is_some() {
        " answer the prompt above ".to_string()
    } else if app.running {
        let label = app.status.activity.as_ref().map_or("working", |a| a.label);
        format!(" {label}… Ctrl-C interrupts ")
    } else if let Some(hint) = slash_hint(&app.editor.text()) {
        hint
    } else if app.editor.lines().len() > MAX_INPUT_ROWS {
        format!(
            " › message ({} lines; Enter sends) ",
            app.editor.lines().len()
        )
    } else {
        " › message, /help ".to_string()
    };
    let border = if app.running { t.dim } else { Style::default() };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Span::styled(title, t.dim));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let (row, col) = app.editor.cursor();
    let rows = inner.height as usize;
    let first = (row + 1).saturating_sub(rows);
    let width = inner.width as usize;
    let mut lines = Vec::new();
    let mut cursor = None;
    for (i, text) in app.editor.lines().iter().enumerate().skip(first).take(rows) {
        let expanded = text.replace('\t', "    ");
        let shown = if i == row {
            let before: String = text
                .chars()
                .take(col)
                .collect::<String>()
                .replace('\t', "    ");
            let x = before.width();
            let offset = (x + 1).saturating_sub(width);
            cursor = Some((x - offset, i - first));
            skip_cells(&expanded, offset)
        } else {
            expanded
        };
        lines.push(Line::styled(shown, t.text));
    }
    if app.editor.is_empty() && !app.running && app.approval.is_none() {
        lines = vec![Line::styled("Ask for a change, or /help", t.dim)];
    }
    frame.render_widget(Paragraph::new(lines), inner);
    if app.approval.is_none()
        && let Some((x, y)) = cursor
    {
        frame.set_cursor_position(Position::new(inner.x + x as u16, inner.y + y as u16));
    }
}

/// The input title while a slash command is being typed: what it may become.
fn slash_hint(text: &str) -> Option<String> {
    let matches = super::slash::completions(text);
    match matches.len() {
        0 if text.starts_with('/')
            && !text.starts_with("//")
            && !text.contains(char::is_whitespace) =>
        {
            Some(" unknown command: /help lists them ".to_string())
        }
        0 => None,
        1 => Some(format!(" /{} (Tab completes) ", matches[0])),
        _ => Some(format!(
            " {} ",
            matches
                .iter()
                .map(|m| format!("/{m}"))
                .collect::<Vec<_>>()
                .join(" ")
        )),
    }
}

fn skip_cells(text: &str, cells: usize) -> String {
    let mut used = 0;
    text.chars()
        .skip_while(|c| {
            if used >= cells {
                return false;
            }
            used += unicode_width::UnicodeWidthChar::width(*c).unwrap_or(0);
            true
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::theme::ThemeKind;
    use super::*;

    fn text(lines: &[Line<'_>]) -> String {
        lines[0].spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_running_subagents_line_shows_its_live_status() {
        let mut tool = ToolEntry {
            id: "p1".into(),
            name: "agent".into(),
            key_arg: "find it".into(),
            diff: Vec::new(),
            status: ToolStatus::Running,
            output: String::new(),
            summary: Some("read_file a.txt".into()),
            live: Vec::new(),
        };
        let theme = Theme::new(ThemeKind::Dark);
        assert_eq!(
            text(&tool_lines(&tool, false, &theme)),
            "◌ agent find it · read_file a.txt …"
        );
        tool.status = ToolStatus::Failed("DENIED".into());
        assert_eq!(text(&tool_lines(&tool, false, &theme)), "✗ agent find it");
    }
}
