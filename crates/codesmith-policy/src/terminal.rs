//! Text from untrusted sources that may carry terminal control sequences.
//!
//! A model's words are shaped by what it read, a file name is whatever its
//! author chose, and command output is written for a terminal. Any of them may
//! contain bytes that drive the terminal instead of being shown by it: OSC 52
//! writes the clipboard, OSC 8 makes a link whose target differs from its
//! text, OSC 0/2 set the window title, CSI sequences clear the screen, move the
//! cursor or conceal text (SGR 8), a carriage return draws over a line, and a
//! bidi control reorders what a reader sees (Trojan Source, CVE-2021-42574).
//!
//! One parser reads them all: the `vte` crate, the VT500-series state machine
//! of Paul Flo Williams' "A parser for DEC's ANSI-compatible video terminals"
//! (<https://vt100.net/emu/dec_ansi_parser>), the one Alacritty uses. It has
//! two outputs:
//!
//! - [`terminal_safe`] and its streaming form [`TerminalSafe`], for text
//!   shown to a person: every escape sequence (CSI, OSC, DCS, SOS/PM/APC and
//!   two-byte `ESC x`) is removed, a CR directly before LF is dropped, and
//!   every other C0/C1 control, DEL, and each invisible character (bidi
//!   controls, zero-width characters, the Tag block, other format characters)
//!   is shown as its Rust escape (`\u{202e}`). Newline and tab stay.
//! - [`screen_text`], for text the model reads: sequences and controls are
//!   removed, and carriage-return, backspace and erase-in-line overdraw is
//!   resolved to what the terminal would finally show on each line (a
//!   progress bar becomes its last state). Invisible Unicode is left to the
//!   model-side sanitizer, which runs on every tool result.
//!
//! [`visible_controls`] is the exact form, for text a person must judge
//! character by character (a command in an approval prompt, a file name):
//! nothing is removed, every control and invisible character is shown as its
//! escape, so an `ESC ] 52` a command would print is seen, not hidden.
//!
//! Limits: an escape sequence that is never terminated (an OSC without BEL
//! or ST) swallows the rest of the text, as it would on a terminal; nothing
//! of it is shown or executed. Bytes that are not UTF-8 become U+FFFD.

use std::borrow::Cow;

use unicode_general_category::{GeneralCategory, get_general_category};
use vte::{Params, Parser, Perform};

/// Makes `text` safe to print on a terminal: escape sequences removed,
/// controls and invisible characters shown as `\u{…}`, CRLF made LF.
/// Text with nothing to change comes back borrowed.
///
/// Example: `"a\x1b]52;c;ZWNobyBwd25lZA==\x07b\u{202e}"` becomes
/// `"ab\\u{202e}"`.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !has_control_byte(text) && (text.is_ascii() || !text.chars().any(is_invisible)) {
        return Cow::Borrowed(text);
    }
    let mut filter = TerminalSafe::new();
    let mut out = filter.push(text);
    out.push_str(&filter.finish());
    Cow::Owned(out)
}

/// Streaming form of [`terminal_safe`]: feed deltas with [`push`], then call
/// [`finish`]. An escape sequence split across deltas is removed whole; a CR
/// at the end of a delta waits for the next one (it may be a CRLF).
/// Concatenating every `push` and the `finish` equals [`terminal_safe`] of
/// the concatenated input, however it was split.
///
/// [`push`]: TerminalSafe::push
/// [`finish`]: TerminalSafe::finish
pub struct TerminalSafe {
    parser: Parser,
    display: Display,
}

impl std::fmt::Debug for TerminalSafe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalSafe")
            .field("pending_cr", &self.display.pending_cr)
            .finish_non_exhaustive()
    }
}

impl Default for TerminalSafe {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalSafe {
    /// A filter in the ground state (no sequence open).
    pub fn new() -> Self {
        TerminalSafe {
            parser: Parser::new(),
            display: Display::default(),
        }
    }

    /// Filters one delta; returns what may be printed now.
    pub fn push(&mut self, delta: &str) -> String {
        self.parser.advance(&mut self.display, delta.as_bytes());
        std::mem::take(&mut self.display.out)
    }

    /// Ends the stream: a trailing lone CR is shown as `\r`; an unfinished
    /// escape sequence is dropped.
    pub fn finish(mut self) -> String {
        if self.display.pending_cr {
            push_escape(&mut self.display.out, '\r');
        }
        self.display.out
    }
}

/// Shows every control character except newline and tab, DEL, and every
/// invisible character as its escape (`\u{1b}`, `\u{202e}`); removes
/// nothing. For text a person approves or must identify exactly: commands,
/// file names, paths. Text with nothing to show comes back borrowed.
pub fn visible_controls(text: &str) -> Cow<'_, str> {
    if !has_control_byte(text) && (text.is_ascii() || !text.chars().any(is_invisible)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c == '\n' || c == '\t' || !needs_display_change(c) {
            out.push(c);
        } else {
            push_escape(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// Makes serialized JSON safe to print on a terminal without changing the value
/// it encodes: every character [`visible_controls`] would show as an escape (C1
/// controls such as U+009B, the 8-bit CSI; DEL; bidi and other invisible
/// characters) is written as a JSON `\uXXXX` escape (a surrogate pair above
/// U+FFFF). `serde_json` escapes only C0 controls, so a file name holding
/// U+009B or U+202E would otherwise reach the terminal as it is. Such
/// characters can only occur inside JSON strings, where the escape is
/// equivalent (RFC 8259, section 7). Text with nothing to change comes back
/// borrowed.
///
/// Example: `"{\"name\":\"a\u{9b}2Jb\"}"` becomes `"{\"name\":\"a\\u009b2Jb\"}"`.
pub fn json_terminal_safe(json: &str) -> Cow<'_, str> {
    if !has_control_byte(json) && (json.is_ascii() || !json.chars().any(is_invisible)) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c != '\n' && c != '\t' && needs_display_change(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Blank runs at least this long are collapsed by [`visible_line`].
pub const BLANK_RUN: usize = 4;

/// One line of [`visible_controls`] for a person to judge at a glance (a
/// command in a progress line or an approval prompt, a file name): newline
/// and tab are shown as `\n` and `\t` too, a run of [`BLANK_RUN`] or more
/// blanks becomes `[… N blanks …]` so spaces cannot push the rest off the
/// screen, and past `max_chars` characters the middle is elided, never the
/// end (which is where a dangerous `; rm -rf ~` would hide).
///
/// Example: `visible_line("echo ok" + 200 spaces + "; rm -rf ~", 80)` is
/// `"echo ok[… 200 blanks …]; rm -rf ~"`.
pub fn visible_line(text: &str, max_chars: usize) -> String {
    let mut chars: Vec<String> = Vec::with_capacity(text.len());
    let mut blanks = 0usize;
    let flush = |chars: &mut Vec<String>, blanks: &mut usize| {
        if *blanks >= BLANK_RUN {
            chars.push(format!("[… {blanks} blanks …]"));
        } else {
            chars.extend(std::iter::repeat_n(" ".to_string(), *blanks));
        }
        *blanks = 0;
    };
    for c in text.chars() {
        if c == ' ' {
            blanks += 1;
            continue;
        }
        flush(&mut chars, &mut blanks);
        if needs_display_change(c) || c == '\n' || c == '\t' || is_odd_blank(c) {
            chars.push(c.escape_default().to_string());
        } else {
            chars.push(c.to_string());
        }
    }
    flush(&mut chars, &mut blanks);
    if chars.len() > max_chars.max(3) {
        let keep = max_chars.max(3) - 1;
        let head = keep / 2;
        let tail = keep - head;
        let mut out: String = chars[..head].concat();
        out.push('…');
        out.push_str(&chars[chars.len() - tail..].concat());
        return out;
    }
    chars.concat()
}

/// Space characters other than U+0020 (no-break, en, em, ideographic, …),
/// which look like a space but are not one to a shell.
fn is_odd_blank(c: char) -> bool {
    c != ' ' && get_general_category(c) == GeneralCategory::SpaceSeparator
}

/// Most bytes [`unfinished_sequence_start`] holds back: a sequence left open
/// longer than this is treated as data that will never end.
pub const MAX_OPEN_SEQUENCE: usize = 4096;

/// The byte index where an escape sequence that `text` ends in the middle of
/// begins, or `None` when `text` ends outside any sequence (or the open one is
/// longer than [`MAX_OPEN_SEQUENCE`]). For output read while it is still being
/// written: hold the tail back until the rest arrives, so a sequence is never
/// split between two reads.
pub fn unfinished_sequence_start(text: &str) -> Option<usize> {
    let start = text.rfind('\x1b')?;
    if text.len() - start > MAX_OPEN_SEQUENCE {
        return None;
    }
    /// Records whether any sequence ended.
    #[derive(Default)]
    struct Ended(bool);
    impl Perform for Ended {
        fn csi_dispatch(&mut self, _: &Params, _: &[u8], _: bool, _: char) {
            self.0 = true;
        }
        fn esc_dispatch(&mut self, _: &[u8], _: bool, _: u8) {
            self.0 = true;
        }
        fn osc_dispatch(&mut self, _: &[&[u8]], _: bool) {
            self.0 = true;
        }
        fn unhook(&mut self) {
            self.0 = true;
        }
        fn execute(&mut self, byte: u8) {
            // CAN and SUB abort a sequence.
            self.0 |= byte == 0x18 || byte == 0x1A;
        }
    }
    let mut ended = Ended::default();
    let mut parser: Parser = Parser::new();
    parser.advance(&mut ended, &text.as_bytes()[start..]);
    // A string sequence (OSC, DCS, SOS/PM/APC) ended by ST (`ESC \`) has that
    // ESC as its last one, and parsing from it dispatches the ST.
    (!ended.0).then_some(start)
}

/// What a terminal would finally show for `text`, as plain lines for the
/// model: escape sequences and control characters (except newline and tab)
/// removed; carriage return, backspace, erase-in-line (`CSI K`) and the
/// horizontal cursor moves (`CSI C`, `CSI D`, `CSI G`) applied to the line
/// they are on, so `"10%\r55%\r100%\n"` reads `"100%\n"`. Columns count
/// characters, not cells. Text with nothing to change comes back borrowed.
///
/// Limit: the blanks a cursor move past the end of a line leaves are
/// filled with spaces from a budget of `text.len()` in total; once it is
/// spent, each further gap is one space. The result is therefore never
/// more than about twice as long as `text`, however large the moves a
/// hostile `CSI 65535 C` asks for.
///
/// Example: `"\x1b[31mRED\x1b[0m\n\x1b]0;title\x07x\n"` becomes
/// `"RED\nx\n"`.
pub fn screen_text(text: &str) -> Cow<'_, str> {
    if !has_control_byte(text) {
        return Cow::Borrowed(text);
    }
    let mut screen = Screen {
        out: String::with_capacity(text.len()),
        pad_budget: text.len(),
        ..Screen::default()
    };
    let mut parser: Parser = Parser::new();
    parser.advance(&mut screen, text.as_bytes());
    screen.flush_line();
    Cow::Owned(screen.out)
}

/// True when `text` holds a C0 control other than newline and tab, DEL, or a
/// C1 control (U+0080–U+009F, encoded `C2 80`–`C2 9F`). A byte scan: the fast
/// path for the common, clean text.
fn has_control_byte(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| match b {
        b'\n' | b'\t' => false,
        0x00..=0x1F | 0x7F => true,
        0xC2 => bytes.get(i + 1).is_some_and(|n| (0x80..=0x9F).contains(n)),
        _ => false,
    })
}

/// True for a character a terminal acts on instead of showing: C0 and C1
/// controls (newline and tab included) and DEL.
fn is_terminal_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// True when `c` must not reach a terminal as it is.
fn needs_display_change(c: char) -> bool {
    if c.is_ascii() {
        return is_terminal_control(c);
    }
    is_terminal_control(c) || is_invisible(c)
}

/// Characters that change how text reads while showing nothing themselves:
/// bidi controls and marks, zero-width characters, the BOM, the Tag block
/// (all general category Cf), line and paragraph separators, variation
/// selectors other than the emoji ones (U+FE0E, U+FE0F), the combining
/// grapheme joiner, and the Hangul fillers that render as blank letters.
fn is_invisible(c: char) -> bool {
    match c as u32 {
        0xFE0E | 0xFE0F => false,
        0x034F | 0x115F | 0x1160 | 0x3164 | 0xFFA0 | 0xFE00..=0xFE0D | 0xE0100..=0xE01EF => true,
        _ => matches!(
            get_general_category(c),
            GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        ),
    }
}

/// Appends `c` as a Rust escape (`\r`, `\u{1b}`, `\u{202e}`).
fn push_escape(out: &mut String, c: char) {
    out.extend(c.escape_default());
}

/// The [`Perform`] behind [`TerminalSafe`]: sequences fall through the
/// default (empty) handlers and so are removed.
#[derive(Default)]
struct Display {
    out: String,
    pending_cr: bool,
}

impl Display {
    fn flush_cr(&mut self) {
        if self.pending_cr {
            self.pending_cr = false;
            push_escape(&mut self.out, '\r');
        }
    }
}

impl Perform for Display {
    fn print(&mut self, c: char) {
        self.flush_cr();
        if needs_display_change(c) {
            push_escape(&mut self.out, c);
        } else {
            self.out.push(c);
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.pending_cr = false;
                self.out.push('\n');
            }
            b'\r' => {
                self.flush_cr();
                self.pending_cr = true;
            }
            b'\t' => {
                self.flush_cr();
                self.out.push('\t');
            }
            // C0 controls, and C1 controls (U+0080–U+009F arrive as their
            // low byte).
            other => {
                self.flush_cr();
                push_escape(&mut self.out, char::from(other));
            }
        }
    }
}

/// The [`Perform`] behind [`screen_text`]: one line of cells and a cursor.
#[derive(Default)]
struct Screen {
    out: String,
    line: Vec<char>,
    col: usize,
    /// Spaces cursor moves may still add past line ends (see [`screen_text`]).
    pad_budget: usize,
}

impl Screen {
    fn put(&mut self, c: char) {
        if self.col > self.line.len() {
            let gap = self.col - self.line.len();
            let pad = gap.min(self.pad_budget).max(1);
            self.pad_budget = self.pad_budget.saturating_sub(pad);
            self.line.extend(std::iter::repeat_n(' ', pad));
            self.col = self.line.len();
        }
        if self.col < self.line.len() {
            self.line[self.col] = c;
        } else {
            self.line.push(c);
        }
        self.col += 1;
    }

    fn flush_line(&mut self) {
        self.out.extend(self.line.drain(..));
        self.col = 0;
    }
}

/// The first parameter of a CSI sequence, or `default` when absent or 0.
fn first_param(params: &Params, default: usize) -> usize {
    match params.iter().next().and_then(|p| p.first().copied()) {
        Some(0) | None => default,
        Some(n) => usize::from(n),
    }
}

impl Perform for Screen {
    fn print(&mut self, c: char) {
        if c != '\u{7f}' {
            self.put(c);
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.flush_line();
                self.out.push('\n');
            }
            b'\r' => self.col = 0,
            b'\t' => self.put('\t'),
            0x08 => self.col = self.col.saturating_sub(1),
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], ignore: bool, action: char) {
        if ignore || !intermediates.is_empty() {
            return;
        }
        match action {
            'K' => {
                let mode = params
                    .iter()
                    .next()
                    .and_then(|p| p.first().copied())
                    .unwrap_or(0);
                match mode {
                    0 => self.line.truncate(self.col),
                    1 => {
                        let end = (self.col + 1).min(self.line.len());
                        self.line[..end].iter_mut().for_each(|c| *c = ' ');
                    }
                    2 => self.line.clear(),
                    _ => {}
                }
            }
            'C' => self.col = self.col.saturating_add(first_param(params, 1)),
            'D' => self.col = self.col.saturating_sub(first_param(params, 1)),
            'G' => self.col = first_param(params, 1) - 1,
            _ => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every hostile thing the terminal outputs must neutralise.
    const HOSTILE: &str = "Done.\x1b]52;c;ZWNobyBwd25lZA==\x07 See \
        \x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\.\x1b[2J\x1b[H\x1b[8mhidden\x1b[0m\
        \x07 fake\rreal \u{202e}txt.exe\n";

    #[test]
    fn display_removes_every_sequence_and_shows_controls() {
        assert_eq!(
            terminal_safe(HOSTILE),
            "Done. See docs.hidden\\u{7} fake\\rreal \\u{202e}txt.exe\n"
        );
    }

    #[test]
    fn display_keeps_plain_text_borrowed_and_crlf_as_lf() {
        let plain = "naïve café\tok\n日本語 🎉❤\u{fe0f}\n";
        assert!(matches!(terminal_safe(plain), Cow::Borrowed(_)));
        assert_eq!(terminal_safe("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(terminal_safe("a\r"), "a\\r");
        assert_eq!(
            terminal_safe("x\u{9b}31my\u{7f}\u{200b}\u{e0041}\u{2028}"),
            "x\\u{9b}31my\\u{7f}\\u{200b}\\u{e0041}\\u{2028}"
        );
        // DCS, APC, PM, SOS and two-byte escapes (RIS full reset).
        assert_eq!(
            terminal_safe("a\x1bP1$r0m\x1b\\b\x1b_apc\x1b\\c\x1b^pm\x1b\\d\x1bce"),
            "abcde"
        );
        // An unterminated OSC shows nothing of itself.
        assert_eq!(terminal_safe("ok\x1b]52;c;AAAA"), "ok");
    }

    #[test]
    fn streaming_equals_one_shot_at_every_split() {
        let input = format!("{HOSTILE}ü\r\n\x1b[38;5;196mx\x1b[0m\r");
        let whole = terminal_safe(&input).into_owned();
        let bytes = input.as_bytes();
        for a in 0..=bytes.len() {
            for b in a..=bytes.len() {
                // Split on char boundaries only (the input is &str).
                let (Ok(p), Ok(q), Ok(r)) = (
                    std::str::from_utf8(&bytes[..a]),
                    std::str::from_utf8(&bytes[a..b]),
                    std::str::from_utf8(&bytes[b..]),
                ) else {
                    continue;
                };
                let mut f = TerminalSafe::new();
                let mut got = f.push(p);
                got.push_str(&f.push(q));
                got.push_str(&f.push(r));
                got.push_str(&f.finish());
                assert_eq!(got, whole, "split at {a}/{b}");
            }
        }
        // No output of a partial sequence ever contains ESC.
        let mut f = TerminalSafe::new();
        for c in input.chars() {
            let piece = f.push(&c.to_string());
            assert!(
                !piece.contains('\x1b') && !piece.contains('\x07'),
                "{piece:?}"
            );
        }
    }

    #[test]
    fn byte_scan_agrees_with_the_char_classes() {
        for cp in 0..0x3000u32 {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            let s = format!("a{c}b");
            assert_eq!(has_control_byte(&s), is_terminal_control(c), "U+{cp:04X}");
        }
    }

    #[test]
    fn open_sequences_at_the_end_are_found() {
        assert_eq!(unfinished_sequence_start("ok\n"), None);
        assert_eq!(unfinished_sequence_start("ok\x1b[31mred"), None);
        assert_eq!(unfinished_sequence_start("ok\x1b[3"), Some(2));
        assert_eq!(unfinished_sequence_start("ok\x1b"), Some(2));
        assert_eq!(unfinished_sequence_start("ok\x1b]0;tit"), Some(2));
        assert_eq!(unfinished_sequence_start("ok\x1b]0;title\x07x"), None);
        assert_eq!(unfinished_sequence_start("a\x1b]8;;u\x1b\\b"), None);
        let long = format!("a\x1b]0;{}", "x".repeat(MAX_OPEN_SEQUENCE));
        assert_eq!(unfinished_sequence_start(&long), None);
    }

    #[test]
    fn visible_controls_removes_nothing() {
        let cmd = "printf '\x1b]52;c;ZWNobw==\x07' # \u{202e}";
        assert_eq!(
            visible_controls(cmd),
            "printf '\\u{1b}]52;c;ZWNobw==\\u{7}' # \\u{202e}"
        );
        assert!(matches!(visible_controls("ls -la\n"), Cow::Borrowed(_)));
        assert_eq!(visible_controls("a\rb"), "a\\rb");
    }

    #[test]
    fn visible_line_shows_the_dangerous_end() {
        let cmd = format!("echo ok{}; rm -rf ~", " ".repeat(200));
        assert_eq!(visible_line(&cmd, 80), "echo ok[… 200 blanks …]; rm -rf ~");
        assert_eq!(
            visible_line("a   b\tc\nd\u{a0}e", 80),
            "a   b\\tc\\nd\\u{a0}e"
        );
        assert_eq!(
            visible_line("printf '\x1b]52;c;AA\x07'\r\u{202e}", 80),
            "printf '\\u{1b}]52;c;AA\\u{7}'\\r\\u{202e}"
        );
        let long = format!("{}; rm -rf ~", "x".repeat(300));
        let shown = visible_line(&long, 40);
        assert_eq!(shown.chars().count(), 40);
        assert!(
            shown.ends_with("; rm -rf ~") && shown.starts_with("xxx"),
            "{shown}"
        );
        assert!(shown.contains('…'));
    }

    #[test]
    fn screen_text_is_what_the_terminal_finally_shows() {
        assert_eq!(
            screen_text("\x1b[31mRED\x1b[0m\n\x1b]0;title\x07x\n"),
            "RED\nx\n"
        );
        assert_eq!(screen_text("10%\r55%\r100%\n"), "100%\n");
        assert_eq!(screen_text("abcdef\rxy\n"), "xycdef\n");
        assert_eq!(screen_text("long line\r\x1b[Kok\n"), "ok\n");
        assert_eq!(screen_text("abc\x1b[2K\rz"), "z");
        assert_eq!(screen_text("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(screen_text("b\x08_o\x08_\n"), "__\n");
        assert_eq!(screen_text("ab\x1b[1Dc\x1b[3Gd\x1b[2Ce"), "acd  e");
        assert_eq!(
            screen_text("bell\x07 del\x7f nul\0 c1\u{85}\n"),
            "bell del nul c1\n"
        );
        assert_eq!(
            screen_text("\x1b]8;;http://x/\x1b\\link\x1b]8;;\x1b\\ \x1bP+q\x1b\\"),
            "link "
        );
        let plain = "ok\ttabs\nüñí\n";
        assert!(matches!(screen_text(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn cursor_moves_cannot_inflate_screen_text() {
        // A page or command output of repeated far cursor moves: each 8-byte
        // `CSI 65535 C` would otherwise become 65535 spaces.
        let hostile = format!("{}x\n", "\x1b[65535C".repeat(4000));
        let shown = screen_text(&hostile);
        assert!(shown.len() <= 2 * hostile.len(), "{}", shown.len());
        assert!(shown.ends_with("x\n"));
        // The same per line, and through the absolute move `CSI n G`.
        let lines = "\x1b[65535Gy\x1b[9999Cz\n".repeat(2000);
        let shown = screen_text(&lines);
        assert!(shown.len() <= 2 * lines.len(), "{}", shown.len());
        assert_eq!(shown.matches('z').count(), 2000);
        // Ordinary alignment moves keep their columns.
        assert_eq!(screen_text("a\x1b[5Cb\n"), "a     b\n");
    }

    #[test]
    fn json_keeps_its_value_and_loses_every_live_control() {
        let value = serde_json::json!({
            "name": "a\u{9b}2J\u{1b}]0;t\u{7}b\u{202e}exe.txt\u{7f}\u{e0041}\u{85}",
            "plain": "ok ü",
        });
        let raw = serde_json::to_string(&value).unwrap();
        assert!(
            raw.contains('\u{9b}') && raw.contains('\u{202e}'),
            "serde_json keeps them"
        );
        let safe = json_terminal_safe(&raw);
        assert!(
            !safe.chars().any(|c| c.is_control() || is_invisible(c)),
            "{safe}"
        );
        assert!(
            safe.contains("\\u009b") && safe.contains("\\udb40\\udc41"),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        assert!(matches!(
            json_terminal_safe("{\"a\":\"ü\"}"),
            Cow::Borrowed(_)
        ));
    }
}
