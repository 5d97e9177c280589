//! The full-screen loop: terminal setup and teardown, and one `select!` over
//! key presses, engine events (approval questions among them) and a countdown tick.

use std::io::Stdout;

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange,
    Event as TermEvent, EventStream, KeyEventKind, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::Ui;
use super::app::Action;
use super::view;
use crate::exit::Exit;

/// Most engine messages applied before the screen is redrawn.
const DRAIN_BATCH: usize = 256;

/// Raw mode, the alternate screen and bracketed paste while alive; where the
/// terminal speaks the kitty keyboard protocol, also unambiguous key codes
/// (so Shift-Enter is told apart from Enter).
struct TerminalGuard {
    enhanced_keys: bool,
}

impl TerminalGuard {
    fn enter() -> std::io::Result<Self> {
        enable_raw_mode()?;
        let mut guard = TerminalGuard {
            enhanced_keys: false,
        };
        execute!(
            std::io::stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste,
            // Focus reporting (CSI ? 1004 h): notifications wait for a lost focus.
            EnableFocusChange
        )?;
        if supports_keyboard_enhancement().unwrap_or(false) {
            guard.enhanced_keys = execute!(
                std::io::stdout(),
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )
            .is_ok();
        }
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        if self.enhanced_keys {
            let _ = execute!(std::io::stdout(), PopKeyboardEnhancementFlags);
        }
        let _ = execute!(
            std::io::stdout(),
            DisableFocusChange,
            DisableBracketedPaste,
            LeaveAlternateScreen
        );
        let _ = disable_raw_mode();
    }
}

/// Runs the full-screen UI until the user quits.
pub(crate) async fn run(mut ui: Ui) -> Exit {
    // A panic on the UI's own thread ends the UI: give the terminal back first
    // so the message is readable. Panics of other tasks leave the screen alone.
    let ui_thread = std::thread::current().id();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == ui_thread {
            let _ = execute!(
                std::io::stdout(),
                DisableBracketedPaste,
                LeaveAlternateScreen
            );
            let _ = disable_raw_mode();
        }
        hook(info);
    }));
    let guard = match TerminalGuard::enter() {
        Ok(g) => g,
        Err(e) => return Exit::failed(anyhow::anyhow!("cannot set up the terminal: {e}")),
    };
    let mut terminal = match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
        Ok(t) => t,
        Err(e) => return Exit::failed(anyhow::anyhow!("cannot set up the terminal: {e}")),
    };
    let result = event_loop(&mut ui, &mut terminal).await;
    drop(terminal);
    drop(guard);
    match result {
        Ok(()) => Exit::Ok,
        Err(e) => Exit::failed(anyhow::anyhow!("terminal error: {e}")),
    }
}

async fn event_loop(
    ui: &mut Ui,
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
) -> std::io::Result<()> {
    let welcome = ui.welcome();
    ui.app.info(welcome);
    let history = std::mem::take(&mut ui.history);
    ui.app.load_history(&history);
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(super::status::SPINNER_FRAME);
    let mut engine_gone = false;
    loop {
        terminal.draw(|f| view::draw(f, &mut ui.app))?;
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(ev)) => {
                    if handle_terminal(ui, ev) {
                        return Ok(());
                    }
                }
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            msg = ui.events.recv(), if !engine_gone => {
                let Some(msg) = msg else {
                    engine_gone = true;
                    ui.app.task_finished();
                    ui.app.push(super::app::Entry::Error(
                        "the engine stopped unexpectedly; quit and restart codesmith (the session is saved)".into(),
                    ));
                    continue;
                };
                let mut next = ui.on_engine(msg);
                for _ in 0..DRAIN_BATCH {
                    match ui.events.try_recv() {
                        Ok(m) => next = ui.on_engine(m).or(next),
                        Err(_) => break,
                    }
                }
                if let Some(task) = next {
                    ui.send_task(task);
                }
            }
            lines = ui.later.recv() => {
                if let Some(lines) = lines {
                    ui.app.info(lines);
                }
            }
            // Redraws for the retry countdown and the busy spinner.
            _ = tick.tick(), if ui.app.status.retry.is_some() || ui.app.running => {}
        }
    }
}

/// Handles one terminal event; true to quit.
fn handle_terminal(ui: &mut Ui, ev: TermEvent) -> bool {
    match ev {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => match ui.app.on_key(key) {
            Action::None => false,
            Action::Quit => true,
            Action::Task(task) => {
                ui.send_task(task);
                false
            }
            Action::Slash(cmd) => ui.slash(cmd) == super::SlashDone::Quit,
            Action::Answer(answer, reason) => {
                ui.answer(answer, reason);
                false
            }
            Action::Interrupt => {
                ui.interrupt();
                false
            }
        },
        TermEvent::FocusGained => {
            ui.notifier.focused = true;
            false
        }
        TermEvent::FocusLost => {
            ui.notifier.focused = false;
            false
        }
        TermEvent::Paste(text) if ui.app.approval.is_none() => {
            ui.app.editor.paste(&text);
            false
        }
        _ => false,
    }
}
