//! The input box's editor: multi-line text, a cursor, history and paste.
//!
//! Enter submits; Shift-Enter, Alt-Enter and Ctrl-J insert a newline (terminals
//! without the keyboard-enhancement protocol report Shift-Enter as plain Enter,
//! so Alt-Enter and Ctrl-J are the portable ways). ↑/↓ move between lines and,
//! on the first/last line, through the history of submitted inputs.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key did to the editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EditorAction {
    /// The text changed or the cursor moved (or nothing happened).
    Edited,
    /// The user submitted this text; the editor is now empty.
    Submit(String),
    /// The key is not an editing key; the caller may handle it.
    Ignored,
}

/// A multi-line text editor with history.
#[derive(Debug, Clone)]
pub(crate) struct Editor {
    lines: Vec<String>,
    row: usize,
    /// Cursor position in characters (not bytes) within `lines[row]`.
    col: usize,
    history: Vec<String>,
    /// Position while browsing the history; `None` when editing a fresh draft.
    browsing: Option<usize>,
    draft: String,
}

impl Default for Editor {
    fn default() -> Self {
        Editor {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
        }
    }
}

impl Editor {
    /// The whole text, lines joined with `\n`.
    pub(crate) fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// True when there is no text at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// The lines of text (at least one).
    pub(crate) fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The cursor as (line, character) indexes.
    pub(crate) fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// Empties the editor (the history is kept).
    pub(crate) fn clear(&mut self) {
        self.set_text("");
        self.browsing = None;
    }

    /// Replaces the text and puts the cursor at its end.
    pub(crate) fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_string).collect();
        if self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
    }

    /// Inserts pasted text at the cursor (CRLF and CR become newlines; tabs stay).
    pub(crate) fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            for c in part.chars() {
                self.insert(c);
            }
        }
    }

    /// Handles one key press.
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> EditorAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if shift || alt => self.newline(),
            KeyCode::Char('j') if ctrl => self.newline(),
            KeyCode::Enter => return self.submit(),
            KeyCode::Char('a') if ctrl => self.col = 0,
            KeyCode::Char('e') if ctrl => self.col = self.line_len(),
            KeyCode::Char('u') if ctrl => self.kill_to_start(),
            KeyCode::Char('w') if ctrl => self.delete_word(),
            KeyCode::Char(_) if ctrl || alt => return EditorAction::Ignored,
            KeyCode::Char(c) => self.insert(c),
            KeyCode::Tab => self.insert('\t'),
            KeyCode::Backspace => self.backspace(),
            KeyCode::Delete => self.delete(),
            KeyCode::Left => self.left(),
            KeyCode::Right => self.right(),
            KeyCode::Home => self.col = 0,
            KeyCode::End => self.col = self.line_len(),
            KeyCode::Up => self.up(),
            KeyCode::Down => self.down(),
            _ => return EditorAction::Ignored,
        }
        EditorAction::Edited
    }

    fn submit(&mut self) -> EditorAction {
        let text = self.text();
        if text.trim().is_empty() {
            return EditorAction::Edited;
        }
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        EditorAction::Submit(text)
    }

    fn line_len(&self) -> usize {
        self.lines[self.row].chars().count()
    }

    fn byte_at(&self, col: usize) -> usize {
        let line = &self.lines[self.row];
        line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
    }

    fn insert(&mut self, c: char) {
        let at = self.byte_at(self.col);
        self.lines[self.row].insert(at, c);
        self.col += 1;
    }

    fn newline(&mut self) {
        let at = self.byte_at(self.col);
        let rest = self.lines[self.row].split_off(at);
        self.row += 1;
        self.lines.insert(self.row, rest);
        self.col = 0;
    }

    fn backspace(&mut self) {
        if self.col > 0 {
            self.col -= 1;
            let at = self.byte_at(self.col);
            self.lines[self.row].remove(at);
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.line_len();
            self.lines[self.row].push_str(&line);
        }
    }

    fn delete(&mut self) {
        if self.col < self.line_len() {
            let at = self.byte_at(self.col);
            self.lines[self.row].remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    fn kill_to_start(&mut self) {
        let at = self.byte_at(self.col);
        self.lines[self.row].replace_range(..at, "");
        self.col = 0;
    }

    fn delete_word(&mut self) {
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut start = self.col;
        while start > 0 && chars[start - 1].is_whitespace() {
            start -= 1;
        }
        while start > 0 && !chars[start - 1].is_whitespace() {
            start -= 1;
        }
        let (from, to) = (self.byte_at(start), self.byte_at(self.col));
        self.lines[self.row].replace_range(from..to, "");
        self.col = start;
    }

    fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.line_len();
        }
    }

    fn right(&mut self) {
        if self.col < self.line_len() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.line_len());
            return;
        }
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        let text = self.history[next].clone();
        self.set_text(&text);
    }

    fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.line_len());
            return;
        }
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            let text = self.history[i + 1].clone();
            self.set_text(&text);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(ed: &mut Editor, s: &str) {
        for c in s.chars() {
            ed.handle_key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn enter_submits_and_alt_enter_adds_a_line() {
        let mut ed = Editor::default();
        typed(&mut ed, "fix");
        ed.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut ed, "the bug");
        ed.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
        assert_eq!(ed.lines().len(), 3);
        ed.handle_key(key(KeyCode::Backspace));
        let out = ed.handle_key(key(KeyCode::Enter));
        assert_eq!(out, EditorAction::Submit("fix\nthe bug".to_string()));
        assert!(ed.is_empty());
    }

    #[test]
    fn blank_input_is_not_submitted() {
        let mut ed = Editor::default();
        typed(&mut ed, "   ");
        assert_eq!(ed.handle_key(key(KeyCode::Enter)), EditorAction::Edited);
    }

    #[test]
    fn history_walks_back_and_restores_the_draft() {
        let mut ed = Editor::default();
        for t in ["one", "two"] {
            typed(&mut ed, t);
            ed.handle_key(key(KeyCode::Enter));
        }
        typed(&mut ed, "dra");
        ed.handle_key(key(KeyCode::Up));
        assert_eq!(ed.text(), "two");
        ed.handle_key(key(KeyCode::Up));
        assert_eq!(ed.text(), "one");
        ed.handle_key(key(KeyCode::Up));
        assert_eq!(ed.text(), "one");
        ed.handle_key(key(KeyCode::Down));
        ed.handle_key(key(KeyCode::Down));
        assert_eq!(ed.text(), "dra");
    }

    #[test]
    fn paste_keeps_lines_and_unicode_editing_is_char_based() {
        let mut ed = Editor::default();
        ed.paste("a\r\nb\rcé");
        assert_eq!(ed.text(), "a\nb\ncé");
        ed.handle_key(key(KeyCode::Backspace));
        ed.handle_key(key(KeyCode::Left));
        typed(&mut ed, "x");
        assert_eq!(ed.text(), "a\nb\nxc");
        ed.handle_key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(ed.text(), "a\nb\nc");
        let big = "line\n".repeat(500);
        ed.clear();
        ed.paste(&big);
        assert_eq!(ed.lines().len(), 501);
    }
}
