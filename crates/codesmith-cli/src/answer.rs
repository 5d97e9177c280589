//! The model's answer on stdout, as it is generated.
//!
//! Every piece of assistant text a front end prints (`exec` without `--json`, and the
//! UI's line mode) goes through [`AnswerStream::write_answer_delta`], so whatever must be
//! done to model text before it reaches the user's terminal is done in one place: the
//! streaming terminal filter ([`TerminalSafe`]) removes escape sequences, even one split
//! across deltas.

use std::io::{IsTerminal, Write};

use codesmith_policy::TerminalSafe;

/// Writes answer text as it arrives.
///
/// On a terminal ("live") each delta is written and flushed at once, so the answer
/// appears word by word. Otherwise (a pipe or a file) text is written a complete line at
/// a time, as each line ends, so a reader of the pipe still sees progress but never half
/// a line; [`end_line`](Self::end_line) writes what is left.
#[derive(Debug)]
pub(crate) struct AnswerStream<W: Write> {
    out: W,
    live: bool,
    /// The terminal filter the text passes first; reset at each line end.
    filter: TerminalSafe,
    /// Lines mode: text after the last newline written, held until its line ends.
    pending: String,
    /// Live mode: whether the last text written left the cursor mid-line.
    mid_line: bool,
}

impl AnswerStream<std::io::Stdout> {
    /// The answer on this process's stdout: live when stdout is a terminal.
    pub(crate) fn stdout() -> Self {
        let out = std::io::stdout();
        let live = out.is_terminal();
        AnswerStream::new(out, live)
    }
}

impl<W: Write> AnswerStream<W> {
    /// An answer stream on `out`; `live` writes every delta at once (for a terminal),
    /// otherwise whole lines only.
    pub(crate) fn new(out: W, live: bool) -> Self {
        AnswerStream {
            out,
            live,
            filter: TerminalSafe::new(),
            pending: String::new(),
            mid_line: false,
        }
    }

    /// Whether deltas are written as they come (stdout is a terminal).
    pub(crate) fn is_live(&self) -> bool {
        self.live
    }

    /// The one path for answer text to the output: makes `delta` safe for the terminal,
    /// then writes it now (live) or the lines it completes (otherwise). Write errors (a
    /// closed pipe) are ignored: the answer is also in the transcript.
    pub(crate) fn write_answer_delta(&mut self, delta: &str) {
        let safe = self.filter.push(delta);
        self.write_safe(&safe);
    }

    fn write_safe(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if self.live {
            let _ = self.out.write_all(delta.as_bytes());
            let _ = self.out.flush();
            self.mid_line = !delta.ends_with('\n');
            return;
        }
        self.pending.push_str(delta);
        if let Some(end) = self.pending.rfind('\n') {
            let rest = self.pending.split_off(end + 1);
            let _ = self.out.write_all(self.pending.as_bytes());
            let _ = self.out.flush();
            self.pending = rest;
        }
    }

    /// Ends the answer's current line, if one is open: before other output shares the
    /// screen, and when a model round or the task ends.
    pub(crate) fn end_line(&mut self) {
        // What the filter held back (a CR that was not part of a CRLF).
        let rest = std::mem::take(&mut self.filter).finish();
        self.write_safe(&rest);
        if self.live {
            if self.mid_line {
                let _ = self.out.write_all(b"\n");
                let _ = self.out.flush();
                self.mid_line = false;
            }
            return;
        }
        if !self.pending.is_empty() {
            self.pending.push('\n');
            let _ = self.out.write_all(self.pending.as_bytes());
            let _ = self.out.flush();
            self.pending.clear();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A writer that records what each `write` call received, to observe progress.
    #[derive(Default)]
    struct Writes(Vec<String>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(String::from_utf8(buf.to_vec()).unwrap());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn live_writes_each_delta_at_once_and_closes_an_open_line() {
        let mut a = AnswerStream::new(Writes::default(), true);
        a.write_answer_delta("The crates ");
        assert_eq!(a.out.0, ["The crates "]);
        a.write_answer_delta("are:\n- cli");
        a.end_line();
        a.end_line();
        assert_eq!(a.out.0.concat(), "The crates are:\n- cli\n");
        a.write_answer_delta("done\n");
        a.end_line();
        assert_eq!(a.out.0.concat(), "The crates are:\n- cli\ndone\n");
    }

    #[test]
    fn piped_writes_whole_lines_as_they_end() {
        let mut a = AnswerStream::new(Writes::default(), false);
        a.write_answer_delta("first ");
        assert!(a.out.0.is_empty(), "half a line was written");
        assert_eq!(a.pending, "first ");
        a.write_answer_delta("line\nsecond");
        assert_eq!(a.out.0, ["first line\n"]);
        a.write_answer_delta(" line\nthird\nfour");
        assert_eq!(a.out.0, ["first line\n", "second line\nthird\n"]);
        a.end_line();
        assert_eq!(a.out.0.concat(), "first line\nsecond line\nthird\nfour\n");
        assert!(a.pending.is_empty());
        a.end_line();
        assert_eq!(a.out.0.len(), 3);
    }

    #[test]
    fn escape_sequences_are_removed_even_when_split_across_deltas() {
        for live in [true, false] {
            let mut a = AnswerStream::new(Writes::default(), live);
            for d in ["safe \x1b]52;c;ZWNo", "bw==\x07 text\x1b[2", "J end\n"] {
                a.write_answer_delta(d);
            }
            a.end_line();
            let written = a.out.0.concat();
            assert_eq!(written, "safe  text end\n", "live={live}");
            assert!(!written.contains('\x1b'));
        }
    }

    #[test]
    fn chunking_does_not_change_what_is_written() {
        let text = "Ünïcode and\nlines\n\nend";
        for live in [true, false] {
            let mut whole = AnswerStream::new(Writes::default(), live);
            whole.write_answer_delta(text);
            whole.end_line();
            let mut pieces = AnswerStream::new(Writes::default(), live);
            for c in text.chars() {
                pieces.write_answer_delta(&c.to_string());
            }
            pieces.end_line();
            assert_eq!(whole.out.0.concat(), pieces.out.0.concat());
            assert_eq!(whole.out.0.concat(), format!("{text}\n"));
        }
    }
}
