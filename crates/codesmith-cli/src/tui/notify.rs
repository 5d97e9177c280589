//! Notifications: telling the user that a task ended or a question waits.
//!
//! `[notifications] when` decides when the terminal is told: `unfocused` (the default:
//! only while the terminal reports, through focus reporting `CSI ? 1004 h`, that its
//! window lost focus; a terminal that never reports counts as focused), `always` or
//! `never`; `method` how: the bell (BEL), `OSC 9 ; text BEL` or
//! `OSC 777 ; notify ; title ; text BEL`. The sequence is written only by the full-screen
//! UI, whose stdout is the terminal. The user's `Notification` hooks run at the same
//! points whatever `when` says (their warnings come back as lines for the transcript).

use std::io::Write;
use std::sync::Arc;

use codesmith_tools::hooks::{HookEvent, HookOutcome, Hooks, run_hook};
use tokio::sync::mpsc::UnboundedSender;

use crate::config::{Notifications, NotifyMethod, NotifyWhen};

/// The notifier of one UI.
#[derive(Debug)]
pub(crate) struct Notifier {
    settings: Notifications,
    /// Whether the UI writes to a terminal it owns (the full-screen UI).
    pub(crate) terminal: bool,
    /// The terminal's focus, as last reported (true until it reports otherwise).
    pub(crate) focused: bool,
    hooks: Arc<Hooks>,
    workspace: std::path::PathBuf,
    /// Where hook warnings go (shown as transcript lines).
    later: Option<UnboundedSender<Vec<String>>>,
}

impl Notifier {
    /// A notifier with `settings` that runs `hooks`' `Notification` entries from
    /// `workspace`, their warnings sent to `later`.
    pub(crate) fn new(
        settings: Notifications,
        hooks: Arc<Hooks>,
        workspace: std::path::PathBuf,
        later: Option<UnboundedSender<Vec<String>>>,
    ) -> Notifier {
        Notifier {
            settings,
            terminal: false,
            focused: true,
            hooks,
            workspace,
            later,
        }
    }

    /// Whether the terminal is told now.
    fn tells_terminal(&self) -> bool {
        self.terminal
            && match self.settings.when {
                NotifyWhen::Always => true,
                NotifyWhen::Unfocused => !self.focused,
                NotifyWhen::Never => false,
            }
    }

    /// Notifies the user of `message` (one line) in session `session_id`.
    pub(crate) fn notify(&self, message: &str, session_id: &str) {
        if self.tells_terminal() {
            let mut out = std::io::stdout();
            let _ = out.write_all(sequence(self.settings.method, message).as_bytes());
            let _ = out.flush();
        }
        let hooks = self.hooks.matching(HookEvent::Notification, None);
        if hooks.is_empty() {
            return;
        }
        let hooks: Vec<_> = hooks.into_iter().cloned().collect();
        let input = serde_json::json!({
            "session_id": session_id,
            "cwd": self.workspace,
            "hook_event_name": HookEvent::Notification.as_str(),
            "message": message,
        });
        let (workspace, later) = (self.workspace.clone(), self.later.clone());
        tokio::spawn(async move {
            for hook in hooks {
                if let HookOutcome::Warn { message } = run_hook(&hook, &input, &workspace).await
                    && let Some(tx) = &later
                {
                    let _ = tx.send(vec![message]);
                }
            }
        });
    }
}

/// The bytes that notify the terminal of `message` by `method`; the text is made one
/// inert line (no control characters, so it cannot end the sequence early).
pub(crate) fn sequence(method: NotifyMethod, message: &str) -> String {
    let text: String = codesmith_policy::visible_line(message, 200)
        .chars()
        .filter(|c| !c.is_control() && *c != ';')
        .collect();
    match method {
        NotifyMethod::Bell => "\x07".to_string(),
        NotifyMethod::Osc9 => format!("\x1b]9;{text}\x07"),
        NotifyMethod::Osc777 => format!("\x1b]777;notify;CodeSmith;{text}\x07"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_carry_one_inert_line() {
        assert_eq!(sequence(NotifyMethod::Bell, "x"), "\x07");
        let forged = sequence(NotifyMethod::Osc9, "task done\x07\x1b]0;evil");
        assert!(forged.starts_with("\x1b]9;task done") && forged.ends_with('\x07'));
        assert_eq!(forged.matches('\x07').count(), 1);
        assert_eq!(forged.matches('\x1b').count(), 1);
        assert_eq!(
            sequence(NotifyMethod::Osc777, "a question waits"),
            "\x1b]777;notify;CodeSmith;a question waits\x07"
        );
        let osc9 = sequence(NotifyMethod::Osc9, "a\x07b\x1b\\c");
        assert_eq!(osc9.matches('\x07').count(), 1);
        assert_eq!(osc9.matches('\x1b').count(), 1);
    }

    #[test]
    fn unfocused_means_only_after_the_terminal_reported_a_lost_focus() {
        let mut n = Notifier::new(
            Notifications::default(),
            Arc::default(),
            std::path::PathBuf::from("/"),
            None,
        );
        n.terminal = true;
        assert!(!n.tells_terminal());
        n.focused = false;
        assert!(n.tells_terminal());
        n.settings.when = NotifyWhen::Never;
        assert!(!n.tells_terminal());
        n.settings.when = NotifyWhen::Always;
        n.focused = true;
        assert!(n.tells_terminal());
        n.terminal = false;
        assert!(!n.tells_terminal());
    }
}
