//! Line mode, for when stdout is not a terminal: tasks and slash commands are
//! read from stdin one line at a time; events are printed as lines on stdout;
//! approval questions are asked on stdout and answered with a line on stdin
//! (`y`, `s`, `a` or `n`; end of input is "no"). Ctrl-C (SIGINT) interrupts
//! a running task (also while its approval question waits for an answer), and leaves
//! when none runs.

use std::io::Write;

use codesmith_engine::replay::Replayed;
use codesmith_policy::terminal_safe;
use codesmith_protocol::{ApprovalAnswer, ApprovalRequest, Event, Op};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::signal::unix::{Signal, SignalKind, signal};

use super::approval::Prompt;
use super::driver::ToUi;
use super::slash::{self, Parsed};
use super::{SlashDone, Ui};
use crate::answer::AnswerStream;
use crate::exit::Exit;

/// Runs line mode until end of input or `/quit`.
pub(crate) async fn run(mut ui: Ui) -> Exit {
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    // One stream for the whole run: a Ctrl-C is never lost between two waits for it, and
    // it is heard wherever line mode waits (for a line, for events, for an answer).
    let mut sigint = match signal(SignalKind::interrupt()) {
        Ok(s) => s,
        Err(e) => return Exit::failed(anyhow::anyhow!("cannot listen for Ctrl-C: {e}")),
    };
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
            _ = sigint.recv() => break,
        };
        let line = line.trim_end().to_string();
        if line.trim().is_empty() {
            continue;
        }
        match slash::parse_with(&line, &ui.app.commands) {
            Parsed::Command(cmd) => {
                let before = ui.app.entries.len();
                let done = ui.slash(cmd);
                print_info(&ui, before);
                match done {
                    SlashDone::Quit => break,
                    SlashDone::Shown => {}
                    SlashDone::AwaitEngine => wait(&mut ui, &mut stdin, &mut sigint).await,
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
                let before = ui.app.entries.len();
                let op = ui.task_op(&task);
                print_info(&ui, before);
                if !ui.driver.send(op) {
                    return Exit::failed(anyhow::anyhow!("the engine stopped"));
                }
                wait(&mut ui, &mut stdin, &mut sigint).await;
            }
        }
    }
    Exit::Ok
}

/// One line about a resumed session: how many tasks, and the last answer.
fn resumed_summary(history: &[Replayed]) -> Option<String> {
    if history.is_empty() {
        return None;
    }
    let tasks = history
        .iter()
        .filter(|r| matches!(r, Replayed::Task(_)))
        .count();
    // The last answer: the text streamed after the last tool call or task.
    let mut last = String::new();
    for item in history {
        match item {
            Replayed::Event(event) => match event.as_ref() {
                Event::AssistantText { delta } => last.push_str(delta),
                Event::ToolCall { .. } => last.clear(),
                _ => {}
            },
            Replayed::Task(_) => last.clear(),
        }
    }
    let mut out = format!("resumed: {tasks} earlier task(s)");
    if let Some(first) = last.trim().lines().next() {
        let first: String = first.chars().take(200).collect();
        out.push_str(&format!("; last answer: {first}"));
    }
    Some(out)
}

fn print_info(ui: &Ui, from: usize) {
    for e in &ui.app.entries[from..] {
        match e {
            super::app::Entry::Info(lines) => say(&lines.join("\n")),
            super::app::Entry::Error(m) => say(&format!("error: {m}")),
            super::app::Entry::Notice(m) => say(&crate::render::notice_line(m)),
            _ => {}
        }
    }
}

/// True when `msg` ends what line mode waits for: a submission's closing event, or the
/// answer to a rebuild.
fn ends_wait(msg: &ToUi) -> bool {
    matches!(
        msg,
        ToUi::Switched { .. }
            | ToUi::Failed(_)
            | ToUi::Event(
                Event::TaskFinished { .. }
                    | Event::CompactionFinished { .. }
                    | Event::RestoreFinished { .. }
            )
    )
}

/// Prints events until the engine is idle again. Approval questions are asked on stdin
/// as they come; events that arrive meanwhile are handled after the answer.
async fn wait(ui: &mut Ui, stdin: &mut Lines<BufReader<Stdin>>, sigint: &mut Signal) {
    let mut text = AnswerStream::stdout();
    let mut backlog: std::collections::VecDeque<ToUi> = std::collections::VecDeque::new();
    loop {
        let msg = if let Some(msg) = backlog.pop_front() {
            msg
        } else {
            tokio::select! {
                msg = ui.events.recv() => match msg {
                    Some(msg) => msg,
                    None => return,
                },
                _ = sigint.recv() => {
                    ui.driver.interrupt();
                    continue;
                }
            }
        };
        if let ToUi::Event(Event::ApprovalRequested(request)) = msg {
            text.end_line();
            if let Some((answer, reason)) = answer(&request, ui, stdin, sigint, &mut backlog).await
            {
                ui.driver.send(Op::Approval {
                    call_id: request.call_id,
                    answer,
                    reason,
                });
            }
            continue;
        }
        let before = ui.app.entries.len();
        let done = ends_wait(&msg);
        if let ToUi::Event(e) = &msg {
            print_event(e, &mut text);
        }
        if let ToUi::Info(lines) = &msg {
            text.end_line();
            say(&lines.join("\n"));
        }
        let next = ui.on_engine(msg);
        if done {
            text.end_line();
            // Events were printed as they came; what the end adds is shown here.
            print_info(ui, before.min(ui.app.entries.len()));
            // A task queued behind the wait (an accepted plan's) starts now.
            if let Some(task) = next {
                ui.app.start_task(&task);
                if ui.driver.send(Op::UserTask {
                    text: task,
                    images: Vec::new(),
                }) {
                    continue;
                }
            }
            return;
        }
    }
}

/// Asks the person on stdin; `None` when the question was withdrawn (what asked stopped
/// waiting: a subagent past its wall time, an interrupt) before or while it was asked,
/// or when Ctrl-C interrupted the task instead. Other events that arrive meanwhile go to
/// `backlog`.
async fn answer(
    request: &ApprovalRequest,
    ui: &mut Ui,
    stdin: &mut Lines<BufReader<Stdin>>,
    sigint: &mut Signal,
    backlog: &mut std::collections::VecDeque<ToUi>,
) -> Option<(ApprovalAnswer, Option<String>)> {
    let withdrawn = |m: &ToUi| matches!(m, ToUi::Event(Event::ApprovalWithdrawn { call_id }) if *call_id == request.call_id);
    if let Some(i) = backlog.iter().position(withdrawn) {
        backlog.remove(i);
        return None;
    }
    let prompt = Prompt::new(request.clone());
    let keys: Vec<String> = prompt
        .choices()
        .iter()
        .map(|c| format!("{} = {}", c.key, c.label))
        .collect();
    say(&format!(
        "approve {}:\n  {}\n  why: {}\n  answer {} (after n, words of your own tell the model why)",
        codesmith_policy::visible_line(&prompt.request.tool, 60),
        // Scrolled lines stay readable here: the whole command is printed, none elided.
        prompt.full_lines().join("\n  "),
        prompt.request.reason,
        keys.join(", ")
    ));
    let line = loop {
        tokio::select! {
            line = stdin.next_line() => break line,
            _ = sigint.recv() => {
                // The engine withdraws the question and closes the task.
                say("  → interrupted: nothing was run");
                ui.driver.interrupt();
                return None;
            }
            msg = ui.events.recv() => match msg {
                Some(m) if withdrawn(&m) => {
                    say("  → withdrawn: what asked stopped waiting; nothing was run");
                    return None;
                }
                Some(m) => backlog.push_back(m),
                None => return None,
            },
        }
    };
    let line = line.ok().flatten().unwrap_or_default();
    let mut chars = line.trim().chars();
    let reply = chars
        .next()
        .and_then(|c| prompt.answer_for(c))
        .unwrap_or(ApprovalAnswer::Deny);
    // `n use the staging server`: the words after the key are the "no"'s reason.
    let reason = Some(chars.as_str().trim().to_string())
        .filter(|r| reply == ApprovalAnswer::Deny && !r.is_empty());
    say(&format!("  → {reply:?}"));
    Some((reply, reason))
}

/// Prints one event: answer text through `answer` (which makes it safe for the terminal
/// as it streams), anything else as the lines [`crate::render::event_lines`] gives it.
fn print_event(event: &Event, answer: &mut AnswerStream<std::io::Stdout>) {
    match event {
        Event::AssistantText { delta } => return answer.write_answer_delta(delta),
        Event::TurnCompleted { .. } => return answer.end_line(),
        _ => {}
    }
    if let Some(text) = event_text(event) {
        answer.end_line();
        say(&text);
    }
}

/// What line mode prints for an event other than answer text: the shared renderer's
/// lines, uncoloured; `None` for an event it does not show.
pub(crate) fn event_text(event: &Event) -> Option<String> {
    let lines = crate::render::event_lines(event, crate::render::Paint::OFF);
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Prints `text` and a line end, made safe for the terminal: slash-command
/// output quotes session names, memory, file names and provider messages.
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", terminal_safe(text));
    let _ = out.flush();
}
