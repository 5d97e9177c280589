//! Line mode, for when stdout is not a terminal: tasks and slash commands are
//! read from stdin one line at a time; events are printed as lines on stdout;
//! approval questions are asked on stdout and answered with a line on stdin
//! (`y`, `s`, `a` or `n`; end of input is "no"). Ctrl-C (SIGINT) interrupts
//! a running task, and leaves when none runs.

use std::io::Write;

use codesmith_engine::ApprovalAnswer;
use codesmith_policy::{TerminalSafe, terminal_safe};
use codesmith_protocol::{Event, Message, Role};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use super::app::{edit_diff, error_line, key_argument};
use super::approval::{Asked, Prompt};
use super::driver::{Submission, ToUi};
use super::slash::{self, Parsed};
use super::{SlashDone, Ui};
use crate::exit::Exit;

/// Runs line mode until end of input or `/quit`.
pub async fn run(mut ui: Ui) -> Exit {
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    say(&ui.welcome().join("\n"));
    if let Some(summary) = resumed_summary(&ui.history) {
        say(&summary);
    }
    loop {
        let line = tokio::select! {
            line = stdin.next_line() => match line {
                Ok(Some(line)) => line,
                _ => break,
            },
            _ = tokio::signal::ctrl_c() => break,
        };
        let line = line.trim_end().to_string();
        if line.trim().is_empty() {
            continue;
        }
        match slash::parse(&line) {
            Parsed::Command(cmd) => {
                let before = ui.app.entries.len();
                let done = ui.slash(cmd);
                print_info(&ui, before);
                match done {
                    SlashDone::Quit => break,
                    SlashDone::Shown => {}
                    SlashDone::AwaitEngine => wait(&mut ui, &mut stdin).await,
                    SlashDone::AwaitLater => {
                        if let Some(lines) = ui.later.recv().await {
                            say(&lines.join("\n"));
                        }
                    }
                }
            }
            Parsed::Unknown { name, suggestion } => say(&format!(
                "unknown command /{name}{}",
                suggestion.map_or(String::new(), |s| format!(": did you mean /{s}?"))
            )),
            Parsed::Text(task) => {
                ui.app.start_task(&task);
                if !ui.driver.send(Submission::Task(task)) {
                    return Exit::failed(anyhow::anyhow!("the engine stopped"));
                }
                wait(&mut ui, &mut stdin).await;
            }
        }
    }
    Exit::Ok
}

/// One line about a resumed session: how many messages, and the last answer.
fn resumed_summary(history: &[Message]) -> Option<String> {
    if history.is_empty() {
        return None;
    }
    let last = history
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !m.text().trim().is_empty())
        .map(|m| m.text());
    let mut out = format!("resumed: {} earlier messages", history.len());
    if let Some(text) = last {
        let first: String = text
            .trim()
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        out.push_str(&format!("; last answer: {first}"));
    }
    Some(out)
}

fn print_info(ui: &Ui, from: usize) {
    for e in &ui.app.entries[from..] {
        match e {
            super::app::Entry::Info(lines) => say(&lines.join("\n")),
            super::app::Entry::Error(m) => say(&format!("error: {m}")),
            super::app::Entry::Notice(m) => say(&format!("note: {m}")),
            _ => {}
        }
    }
}

/// Prints events until the engine is idle again.
async fn wait(ui: &mut Ui, stdin: &mut Lines<BufReader<Stdin>>) {
    let mut text_open = false;
    let mut answer_filter = TerminalSafe::new();
    loop {
        tokio::select! {
            msg = ui.events.recv() => {
                let Some(msg) = msg else { return };
                let before = ui.app.entries.len();
                let done = !matches!(msg, ToUi::Event(_));
                if let ToUi::Event(e) = &msg {
                    text_open = print_event(e, text_open, &mut answer_filter);
                }
                ui.on_engine(msg);
                if done {
                    if text_open {
                        end_answer(&mut answer_filter);
                    }
                    // Events were printed as they came; what the end adds is shown here.
                    print_info(ui, before.min(ui.app.entries.len()));
                    return;
                }
            }
            _ = tokio::signal::ctrl_c() => {
                ui.driver.interrupt();
            }
            asked = ui.asks.recv() => {
                let Some(asked) = asked else { continue };
                if text_open {
                    end_answer(&mut answer_filter);
                    text_open = false;
                }
                answer(asked, stdin).await;
            }
        }
    }
}

async fn answer(asked: Asked, stdin: &mut Lines<BufReader<Stdin>>) {
    let prompt = Prompt::new(asked.request);
    let keys: Vec<String> = prompt
        .choices()
        .iter()
        .map(|c| format!("{} = {}", c.key, c.label))
        .collect();
    say(&format!(
        "approve {}:\n  {}\n  why: {}\n  answer {}",
        codesmith_policy::visible_line(&prompt.request.tool, 60),
        prompt.command_lines().join("\n  "),
        prompt.request.reason,
        keys.join(", ")
    ));
    let reply = match stdin.next_line().await {
        Ok(Some(line)) => line
            .trim()
            .chars()
            .next()
            .and_then(|c| prompt.answer_for(c))
            .unwrap_or(ApprovalAnswer::Deny),
        _ => ApprovalAnswer::Deny,
    };
    say(&format!("  → {reply:?}"));
    let _ = asked.reply.send(reply);
}

/// Ends an answer printed as it streamed: what the filter held back (a CR
/// that was not part of a CRLF) and the line end.
fn end_answer(filter: &mut TerminalSafe) {
    let rest = std::mem::take(filter).finish();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{rest}");
    let _ = out.flush();
}

/// Prints one event; returns whether assistant text is mid-line. Assistant
/// text streams through `filter`, so an escape sequence split across deltas
/// is removed whole; every other quoted text is made safe line by line.
fn print_event(event: &Event, text_open: bool, filter: &mut TerminalSafe) -> bool {
    let mut out = std::io::stdout().lock();
    let mut close = |out: &mut std::io::StdoutLock<'_>| {
        if text_open {
            let rest = std::mem::take(&mut *filter).finish();
            let _ = writeln!(out, "{rest}");
        }
    };
    let open = match event {
        Event::AssistantText { delta } => {
            let _ = write!(out, "{}", filter.push(delta));
            true
        }
        Event::ToolCall {
            name, arguments, ..
        } => {
            close(&mut out);
            let _ = writeln!(
                out,
                "● {} {}",
                codesmith_policy::visible_line(name, 60),
                key_argument(arguments)
            );
            for l in edit_diff(name, arguments).iter().take(20) {
                let _ = writeln!(out, "    {l}");
            }
            false
        }
        Event::ToolResult {
            ok: false, output, ..
        } => {
            close(&mut out);
            let _ = writeln!(out, "  ✗ {}", error_line(output));
            false
        }
        Event::Retry {
            attempt,
            wait_ms,
            reason,
        } => {
            close(&mut out);
            let secs = *wait_ms as f64 / 1000.0;
            let _ = writeln!(
                out,
                "↻ retrying (attempt {attempt}) in {secs:.1}s: {}",
                terminal_safe(reason)
            );
            false
        }
        Event::Verdict(v) => {
            close(&mut out);
            let cmd = v.command.as_deref().map_or("no command".to_string(), |c| {
                codesmith_policy::visible_line(c, 100)
            });
            let _ = writeln!(out, "verdict: {} ({cmd})", terminal_safe(&v.verdict));
            false
        }
        Event::Notice { message } => {
            close(&mut out);
            let _ = writeln!(out, "note: {}", terminal_safe(message));
            false
        }
        Event::Error { message } => {
            close(&mut out);
            let _ = writeln!(out, "error: {}", terminal_safe(message));
            false
        }
        _ => text_open,
    };
    let _ = out.flush();
    open
}

/// Prints `text` and a line end, made safe for the terminal: slash-command
/// output quotes session names, memory, file names and provider messages.
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", terminal_safe(text));
    let _ = out.flush();
}
