//! Inline approval prompts, and the [`Approver`] that routes the engine's
//! questions to the UI over a channel.

use async_trait::async_trait;
use codesmith_engine::{ApprovalAnswer, ApprovalRequest, Approver};
use tokio::sync::{mpsc, oneshot};

/// One question from the engine, with the channel its answer goes back on.
#[derive(Debug)]
pub struct Asked {
    /// What the engine asks.
    pub request: ApprovalRequest,
    /// Where the answer goes. Dropping it answers [`ApprovalAnswer::Deny`].
    pub reply: oneshot::Sender<ApprovalAnswer>,
}

/// The approver for the terminal UI: each request is sent to the UI loop, and
/// the engine waits for the person's answer. When the UI is gone, the answer
/// is "no" (fail closed).
#[derive(Debug, Clone)]
pub struct UiApprover {
    tx: mpsc::UnboundedSender<Asked>,
}

impl UiApprover {
    /// An approver sending questions to `tx`.
    pub fn new(tx: mpsc::UnboundedSender<Asked>) -> Self {
        UiApprover { tx }
    }
}

#[async_trait]
impl Approver for UiApprover {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let (reply, answer) = oneshot::channel();
        let asked = Asked {
            request: request.clone(),
            reply,
        };
        if self.tx.send(asked).is_err() {
            return ApprovalAnswer::Deny;
        }
        answer.await.unwrap_or(ApprovalAnswer::Deny)
    }

    fn interactive(&self) -> bool {
        true
    }
}

/// Most command lines an approval prompt shows (the first half and the last half).
pub const COMMAND_LINES: usize = 4;
/// Most characters of one command line in an approval prompt (the middle is elided).
pub const COMMAND_LINE_CHARS: usize = 400;

/// One choice of an approval prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// The key that picks it.
    pub key: char,
    /// What it says.
    pub label: &'static str,
    /// The answer it gives.
    pub answer: ApprovalAnswer,
}

/// An approval prompt on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The question.
    pub request: ApprovalRequest,
    /// Index into [`Prompt::choices`] of the highlighted choice.
    pub selected: usize,
}

impl Prompt {
    /// A prompt for `request`, with "yes, once" highlighted.
    pub fn new(request: ApprovalRequest) -> Self {
        Prompt {
            request,
            selected: 0,
        }
    }

    /// The command (the request's summary) as the prompt shows it: each line
    /// prefixed `$ ` and passed through [`codesmith_policy::visible_line`]
    /// (controls and invisible characters shown, blank runs collapsed, at most
    /// [`COMMAND_LINE_CHARS`] characters with the middle elided). Past
    /// [`COMMAND_LINES`] lines the middle lines give way to a `… N more lines …`
    /// marker: the last lines, where a dangerous part would hide, always show.
    pub fn command_lines(&self) -> Vec<String> {
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
        out
    }

    /// The choices: yes once, yes for this session, always (only when a
    /// persistent grant is allowed, never for a dangerous command), no.
    pub fn choices(&self) -> Vec<Choice> {
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

    /// The answer for a typed key (`y`, `s`, `a`, `n`, Esc as `n`), if it is a choice here.
    pub fn answer_for(&self, key: char) -> Option<ApprovalAnswer> {
        let key = key.to_ascii_lowercase();
        self.choices()
            .into_iter()
            .find(|c| c.key == key)
            .map(|c| c.answer)
    }

    /// Moves the highlight by `delta` choices, wrapping around.
    pub fn move_selection(&mut self, delta: isize) {
        let n = self.choices().len() as isize;
        self.selected = ((self.selected as isize + delta).rem_euclid(n)) as usize;
    }

    /// The highlighted answer.
    pub fn selected_answer(&self) -> ApprovalAnswer {
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
            ["$ a", "$ b", "  … 2 more lines …", "$ e", "$ rm -rf ~"]
        );
    }

    #[test]
    fn selection_wraps() {
        let mut p = Prompt::new(request(false));
        p.move_selection(-1);
        assert_eq!(p.selected_answer(), ApprovalAnswer::Deny);
    }

    #[tokio::test]
    async fn approver_round_trips_and_fails_closed() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let approver = UiApprover::new(tx);
        let req = request(true);
        let ask = tokio::spawn({
            let approver = approver.clone();
            let req = req.clone();
            async move { approver.ask(&req).await }
        });
        let asked = rx.recv().await.expect("a question");
        assert_eq!(asked.request, req);
        let _ = asked.reply.send(ApprovalAnswer::Session);
        assert_eq!(ask.await.ok(), Some(ApprovalAnswer::Session));
        // The UI dropped the question: "no".
        let ask = tokio::spawn(async move { approver.ask(&req).await });
        drop(rx.recv().await);
        assert_eq!(ask.await.ok(), Some(ApprovalAnswer::Deny));
    }
}
