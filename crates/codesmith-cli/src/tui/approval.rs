//! Inline approval prompts, and the queue of the engine's approval questions: each
//! arrives as an `approval_requested` event and is answered with `Op::Approval`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ops::Range;

use codesmith_protocol::{ApprovalAnswer, ApprovalRequest};

/// The engine's approval questions as the UI holds them: one shown at a time, in the order
/// they came, the others waiting. A question the engine withdraws (what asked stopped
/// waiting) leaves wherever it is.
#[derive(Debug, Default)]
pub(crate) struct Questions {
    /// The id of the question on screen.
    shown: Option<String>,
    waiting: VecDeque<ApprovalRequest>,
}

impl Questions {
    /// A new question from the engine.
    pub(crate) fn arrived(&mut self, request: ApprovalRequest) {
        self.waiting.push_back(request);
    }

    /// The engine withdrew `call_id`; true when it was the one on screen (take it down).
    pub(crate) fn withdrawn(&mut self, call_id: &str) -> bool {
        self.waiting.retain(|r| r.call_id != call_id);
        if self.shown.as_deref() == Some(call_id) {
            self.shown = None;
            return true;
        }
        false
    }

    /// The next question to show, when none is on screen.
    pub(crate) fn next(&mut self) -> Option<ApprovalRequest> {
        if self.shown.is_some() {
            return None;
        }
        let next = self.waiting.pop_front()?;
        self.shown = Some(next.call_id.clone());
        Some(next)
    }

    /// The person answered the question on screen: its id, to answer with.
    pub(crate) fn answered(&mut self) -> Option<String> {
        self.shown.take()
    }

    /// Forgets every question (the work was interrupted: the engine withdraws them all).
    pub(crate) fn clear(&mut self) {
        self.shown = None;
        self.waiting.clear();
    }
}

/// Most command lines an approval prompt shows (the first half and the last half).
pub(crate) const COMMAND_LINES: usize = 4;
/// Most characters of one command line in an approval prompt (the middle is elided).
pub(crate) const COMMAND_LINE_CHARS: usize = 400;

/// One choice of an approval prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Choice {
    /// The key that picks it.
    pub key: char,
    /// What it says.
    pub label: &'static str,
    /// The answer it gives.
    pub answer: ApprovalAnswer,
}

/// An approval prompt on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    /// The question.
    pub request: ApprovalRequest,
    /// Index into [`Prompt::choices`] of the highlighted choice.
    pub selected: usize,
    /// The reason being typed after `r` (no, and say why): `Some` while it is typed.
    pub reason: Option<String>,
    /// The whole command is on screen (Ctrl-O), scrolled [`Prompt::scroll`] rows down.
    pub expanded: bool,
    /// First row of the whole command shown while expanded.
    pub scroll: usize,
    /// The largest useful [`Prompt::scroll`] when the whole command was last drawn (the
    /// first row of its last page), so scrolling up after End starts from the end.
    pub max_scroll: Cell<Option<usize>>,
    /// Rows of the whole command the view showed at once when last drawn: PgUp/PgDn move
    /// by that much, so paging never skips a row.
    pub page: Cell<Option<usize>>,
    /// An approving key was pressed before the whole command had been shown: the prompt
    /// says why it expanded instead of answering.
    pub must_read: bool,
    /// True once every row of the whole command has been on screen (set by the view
    /// through [`Prompt::mark_drawn`]; from the start when nothing is elided). Jumping
    /// to the end does not count: rows skipped over were never drawn.
    pub seen_all: Cell<bool>,
    /// Per line of [`Prompt::full_lines`]: every row it wraps to has been drawn.
    pub seen_lines: RefCell<Vec<bool>>,
    /// The width the command was wrapped at, and per wrapped row whether it has been
    /// drawn at that width (a new width starts the rows over; whole lines stay seen).
    pub seen_rows: RefCell<(usize, Vec<bool>)>,
}

/// The line an eliding prompt shows under the command.
pub(crate) const ELIDED_NOTE: &str =
    "  part of this command is not shown: Ctrl-O shows all of it before you approve";
/// The line shown when an approving key was pressed before the whole command was shown.
pub(crate) const MUST_READ_NOTE: &str =
    "  approve only what you have seen: scroll through every row (↓, PgDn), then answer";

impl Prompt {
    /// A prompt for `request`, with "yes, once" highlighted.
    pub(crate) fn new(request: ApprovalRequest) -> Self {
        let mut prompt = Prompt {
            request,
            selected: 0,
            reason: None,
            expanded: false,
            scroll: 0,
            max_scroll: Cell::new(None),
            page: Cell::new(None),
            must_read: false,
            seen_all: Cell::new(false),
            seen_lines: RefCell::new(Vec::new()),
            seen_rows: RefCell::new((0, Vec::new())),
        };
        prompt.seen_lines = RefCell::new(vec![false; prompt.full_lines().len()]);
        prompt.seen_all = Cell::new(!prompt.elides());
        prompt
    }

    /// The command (the request's summary) as the prompt shows it: each line
    /// prefixed `$ ` and passed through [`codesmith_policy::visible_line`]
    /// (controls and invisible characters shown, blank runs collapsed, at most
    /// [`COMMAND_LINE_CHARS`] characters with the middle elided). Past
    /// [`COMMAND_LINES`] lines the middle lines give way to a `… N more lines …`
    /// marker. When anything is left out, a last line says so and names Ctrl-O,
    /// which shows [`Prompt::full_lines`].
    pub(crate) fn command_lines(&self) -> Vec<String> {
        let all: Vec<&str> = self.request.summary.lines().collect();
        let (head, tail) = if all.len() > COMMAND_LINES {
            (COMMAND_LINES / 2, COMMAND_LINES - COMMAND_LINES / 2)
        } else {
            (all.len(), 0)
        };
        let line = |l: &str| {
            format!(
                "$ {}",
                codesmith_policy::visible_line(l, COMMAND_LINE_CHARS)
            )
        };
        let mut out: Vec<String> = all[..head].iter().map(|l| line(l)).collect();
        if tail > 0 {
            out.push(format!("  … {} more lines …", all.len() - head - tail));
            out.extend(all[all.len() - tail..].iter().map(|l| line(l)));
        }
        if self.elides() {
            out.push(ELIDED_NOTE.to_string());
        }
        out
    }

    /// Every line of the command, none elided: each prefixed `$ ` and passed through
    /// [`codesmith_policy::visible_line`] with no length limit (controls and invisible
    /// characters shown, blank runs counted).
    pub(crate) fn full_lines(&self) -> Vec<String> {
        self.request
            .summary
            .lines()
            .map(|l| format!("$ {}", codesmith_policy::visible_line(l, usize::MAX)))
            .collect()
    }

    /// True when [`Prompt::command_lines`] leaves part of the command out: lines past
    /// [`COMMAND_LINES`], or a line cut to [`COMMAND_LINE_CHARS`].
    pub(crate) fn elides(&self) -> bool {
        let mut lines = 0;
        for l in self.request.summary.lines() {
            lines += 1;
            if lines > COMMAND_LINES
                || codesmith_policy::visible_line(l, COMMAND_LINE_CHARS)
                    != codesmith_policy::visible_line(l, usize::MAX)
            {
                return true;
            }
        }
        false
    }

    /// Records that the rows `drawn` of the whole command, wrapped at `width` columns,
    /// are on screen. `row_lines` maps each wrapped row to its line of
    /// [`Prompt::full_lines`]. A line counts as seen once all its rows have been drawn;
    /// [`Prompt::seen_all`] turns true once every line has been seen.
    pub(crate) fn mark_drawn(&self, width: usize, row_lines: &[usize], drawn: Range<usize>) {
        let mut rows = self.seen_rows.borrow_mut();
        if rows.0 != width || rows.1.len() != row_lines.len() {
            *rows = (width, vec![false; row_lines.len()]);
        }
        for r in drawn.start..drawn.end.min(row_lines.len()) {
            rows.1[r] = true;
        }
        let mut lines = self.seen_lines.borrow_mut();
        let mut whole = vec![true; lines.len()];
        for (r, &line) in row_lines.iter().enumerate() {
            if let Some(w) = whole.get_mut(line) {
                *w &= rows.1[r];
            }
        }
        for (seen, w) in lines.iter_mut().zip(whole) {
            *seen |= w;
        }
        if lines.iter().all(|&s| s) {
            self.seen_all.set(true);
        }
    }

    /// True once every line of the command has been drawn whole (see
    /// [`Prompt::mark_drawn`]).
    pub(crate) fn all_lines_seen(&self) -> bool {
        self.seen_lines.borrow().iter().all(|&s| s)
    }

    /// True for an answer that runs the command.
    pub(crate) fn approves(answer: ApprovalAnswer) -> bool {
        answer != ApprovalAnswer::Deny
    }

    /// The choices: yes once, yes for this session, always (only when a
    /// persistent grant is allowed, never for a dangerous command), no.
    pub(crate) fn choices(&self) -> Vec<Choice> {
        let mut out = vec![
            Choice {
                key: 'y',
                label: "yes, once",
                answer: ApprovalAnswer::Once,
            },
            Choice {
                key: 's',
                label: "yes, this session",
                answer: ApprovalAnswer::Session,
            },
        ];
        if self.request.can_persist {
            out.push(Choice {
                key: 'a',
                label: "always",
                answer: ApprovalAnswer::Always,
            });
        }
        out.push(Choice {
            key: 'n',
            label: "no",
            answer: ApprovalAnswer::Deny,
        });
        out
    }

    /// The key that starts typing a reason for a "no" (which the model then reads).
    pub(crate) const REASON_KEY: char = 'r';

    /// The answer for a typed key (`y`, `s`, `a`, `n`, Esc as `n`), if it is a choice here.
    pub(crate) fn answer_for(&self, key: char) -> Option<ApprovalAnswer> {
        let key = key.to_ascii_lowercase();
        self.choices()
            .into_iter()
            .find(|c| c.key == key)
            .map(|c| c.answer)
    }

    /// Moves the highlight by `delta` choices, wrapping around.
    pub(crate) fn move_selection(&mut self, delta: isize) {
        let n = self.choices().len() as isize;
        self.selected = ((self.selected as isize + delta).rem_euclid(n)) as usize;
    }

    /// The highlighted answer.
    pub(crate) fn selected_answer(&self) -> ApprovalAnswer {
        self.choices()
            .get(self.selected)
            .map_or(ApprovalAnswer::Deny, |c| c.answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(can_persist: bool) -> ApprovalRequest {
        ApprovalRequest {
            tool: "exec_shell".into(),
            summary: "rm -rf build".into(),
            reason: "deletes files".into(),
            can_persist,
            ..Default::default()
        }
    }

    #[test]
    fn dangerous_requests_offer_no_always() {
        let p = Prompt::new(request(false));
        assert_eq!(p.answer_for('a'), None);
        assert_eq!(p.choices().len(), 3);
        let p = Prompt::new(request(true));
        assert_eq!(p.answer_for('A'), Some(ApprovalAnswer::Always));
    }

    #[test]
    fn command_lines_show_controls_and_keep_the_end() {
        let mut req = request(false);
        req.summary = format!(
            "printf '\x1b]52;c;cHduZWQ=\x07'{}; rm -rf ~ \u{202e}",
            " ".repeat(300)
        );
        assert_eq!(
            Prompt::new(req.clone()).command_lines(),
            ["$ printf '\\u{1b}]52;c;cHduZWQ=\\u{7}'[… 300 blanks …]; rm -rf ~ \\u{202e}"]
        );
        req.summary = "a\nb\nc\nd\ne\nrm -rf ~".into();
        assert_eq!(
            Prompt::new(req).command_lines(),
            [
                "$ a",
                "$ b",
                "  … 2 more lines …",
                "$ e",
                "$ rm -rf ~",
                ELIDED_NOTE
            ]
        );
    }

    #[test]
    fn an_elided_command_is_not_taken_as_seen_and_its_full_lines_hide_nothing() {
        let mut req = request(true);
        let p = Prompt::new(req.clone());
        assert!(!p.elides() && p.seen_all.get(), "short: all of it shows");
        req.summary = format!("echo {} touch HIDDEN {}", "a".repeat(300), "b".repeat(300));
        let p = Prompt::new(req.clone());
        assert!(p.elides() && !p.seen_all.get(), "a line cut in its middle");
        assert!(!p.command_lines().concat().contains("HIDDEN"));
        assert!(p.full_lines()[0].contains("touch HIDDEN"));
        req.summary = "a\nb\nHIDDEN\nd\ne".into();
        let p = Prompt::new(req);
        assert!(p.elides() && !p.seen_all.get(), "a line folded away");
        assert_eq!(p.full_lines()[2], "$ HIDDEN");
        // Blank runs are counted, not hidden: no elision.
        let p = Prompt::new(ApprovalRequest {
            summary: format!("echo{}ok", " ".repeat(500)),
            ..request(true)
        });
        assert!(!p.elides());
    }

    #[test]
    fn only_rows_drawn_count_as_seen() {
        let req = ApprovalRequest {
            summary: "a\nb\nHIDDEN\nd\ne".into(),
            ..request(true)
        };
        let p = Prompt::new(req);
        // Line 2 wraps to rows 2..4; the others take one row each.
        let rows = [0, 1, 2, 2, 2, 3, 4];
        // The first page, then a jump to the last: rows 2–4 never drawn.
        p.mark_drawn(40, &rows, 0..2);
        p.mark_drawn(40, &rows, 5..7);
        assert!(!p.seen_all.get(), "skipped rows are not seen");
        p.mark_drawn(40, &rows, 2..4);
        assert!(!p.seen_all.get(), "a line is seen only whole");
        // Another width starts the rows over: row 4 alone does not finish line 2.
        p.mark_drawn(30, &rows, 4..5);
        assert!(!p.seen_all.get());
        p.mark_drawn(30, &rows, 2..4);
        assert!(p.seen_all.get() && p.all_lines_seen());
    }

    #[test]
    fn selection_wraps() {
        let mut p = Prompt::new(request(false));
        p.move_selection(-1);
        assert_eq!(p.selected_answer(), ApprovalAnswer::Deny);
    }

    #[test]
    fn questions_show_one_at_a_time_and_leave_when_withdrawn() {
        let mut q = Questions::default();
        let ask = |id: &str| ApprovalRequest {
            call_id: id.into(),
            ..request(false)
        };
        q.arrived(ask("a"));
        q.arrived(ask("b"));
        q.arrived(ask("c"));
        assert_eq!(q.next().map(|r| r.call_id), Some("a".into()));
        assert_eq!(q.next(), None, "one on screen at a time");
        assert!(!q.withdrawn("b"), "a waiting one leaves quietly");
        assert!(q.withdrawn("a"), "the one on screen is taken down");
        assert_eq!(q.next().map(|r| r.call_id), Some("c".into()));
        assert_eq!(q.answered(), Some("c".into()));
        assert_eq!(q.next(), None);
    }
}
