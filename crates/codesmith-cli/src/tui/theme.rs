//! Colours for light and dark terminals.

use ratatui::style::{Color, Modifier, Style};

/// Which background the palette is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThemeKind {
    /// Light text on a dark background.
    Dark,
    /// Dark text on a light background.
    Light,
}

impl ThemeKind {
    /// Guesses from `COLORFGBG` (`"fg;bg"`, set by rxvt, Konsole, iTerm2 and others): a
    /// background colour of 7 or 9..=15 is light. Anything else, or unset, is dark.
    pub(crate) fn detect(colorfgbg: Option<&str>) -> ThemeKind {
        let bg = colorfgbg
            .and_then(|v| v.rsplit(';').next())
            .and_then(|b| b.trim().parse::<u8>().ok());
        match bg {
            Some(7) | Some(9..=15) => ThemeKind::Light,
            _ => ThemeKind::Dark,
        }
    }
}

/// The styles every screen element uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Theme {
    /// Ordinary text.
    pub text: Style,
    /// Secondary text: thinking, hints, tool details.
    pub dim: Style,
    /// The user's own messages.
    pub user: Style,
    /// Headings and emphasis in assistant Markdown.
    pub heading: Style,
    /// Inline code and code blocks.
    pub code: Style,
    /// Keywords inside code blocks.
    pub keyword: Style,
    /// String literals and comments inside code blocks.
    pub literal: Style,
    /// A running or successful tool call marker.
    pub ok: Style,
    /// Failures, refusals, errors, removed diff lines.
    pub error: Style,
    /// Added diff lines.
    pub added: Style,
    /// Warnings: approvals, retries, notices.
    pub warn: Style,
    /// The status line.
    pub status: Style,
}

impl Theme {
    /// The palette for `kind`.
    pub(crate) fn new(kind: ThemeKind) -> Theme {
        let (fg, dim, accent, code) = match kind {
            ThemeKind::Dark => (Color::Reset, Color::DarkGray, Color::Cyan, Color::Yellow),
            ThemeKind::Light => (Color::Reset, Color::DarkGray, Color::Blue, Color::Magenta),
        };
        let status_bg = match kind {
            ThemeKind::Dark => Color::DarkGray,
            ThemeKind::Light => Color::Gray,
        };
        let status_fg = match kind {
            ThemeKind::Dark => Color::White,
            ThemeKind::Light => Color::Black,
        };
        Theme {
            text: Style::default().fg(fg),
            dim: Style::default().fg(dim),
            user: Style::default().fg(accent).add_modifier(Modifier::BOLD),
            heading: Style::default().add_modifier(Modifier::BOLD),
            code: Style::default().fg(code),
            keyword: Style::default().fg(accent).add_modifier(Modifier::BOLD),
            literal: Style::default().fg(Color::Green),
            ok: Style::default().fg(Color::Green),
            error: Style::default().fg(Color::Red),
            added: Style::default().fg(Color::Green),
            warn: Style::default().fg(match kind {
                ThemeKind::Dark => Color::Yellow,
                ThemeKind::Light => Color::Rgb(0x9a, 0x60, 0x00),
            }),
            status: Style::default().fg(status_fg).bg(status_bg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colorfgbg_picks_light_for_light_backgrounds() {
        assert_eq!(ThemeKind::detect(Some("0;15")), ThemeKind::Light);
        assert_eq!(ThemeKind::detect(Some("0;7")), ThemeKind::Light);
        assert_eq!(ThemeKind::detect(Some("15;0")), ThemeKind::Dark);
        assert_eq!(ThemeKind::detect(Some("garbage")), ThemeKind::Dark);
        assert_eq!(ThemeKind::detect(None), ThemeKind::Dark);
    }
}
