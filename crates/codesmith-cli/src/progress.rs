//! Showing a running task: JSON lines on stdout (`--json`), or the answer streamed on
//! stdout with human progress on stderr.

use std::io::{IsTerminal, Write};

use codesmith_policy::terminal_safe;
use codesmith_protocol::Event;

use crate::answer::AnswerStream;
use crate::render::{self, Paint};

/// Where events go while a task runs.
#[derive(Debug)]
pub(crate) enum Progress {
    /// One JSON event per line on stdout.
    Json,
    /// Human progress on stderr; the answer text streamed on stdout as it is generated.
    Human {
        /// Whether stderr is a terminal (enables the in-place thinking line).
        tty: bool,
        /// Whether a "thinking" line is currently shown.
        thinking_shown: bool,
        /// The answer text on stdout.
        answer: Box<AnswerStream<std::io::Stdout>>,
    },
}

impl Progress {
    /// JSON or human, as asked.
    pub(crate) fn new(json: bool) -> Self {
        if json {
            Progress::Json
        } else {
            Progress::Human {
                tty: std::io::stderr().is_terminal(),
                thinking_shown: false,
                answer: Box::new(AnswerStream::stdout()),
            }
        }
    }

    /// Shows one event.
    pub(crate) fn show(&mut self, event: &Event) {
        match self {
            Progress::Json => {
                let mut out = std::io::stdout().lock();
                if let Ok(line) = serde_json::to_string(event) {
                    let _ = writeln!(out, "{}", codesmith_policy::json_terminal_safe(&line));
                    let _ = out.flush();
                }
            }
            Progress::Human {
                tty,
                thinking_shown,
                answer,
            } => match event {
                Event::AssistantText { delta } => {
                    clear_thinking(*tty, thinking_shown);
                    answer.write_answer_delta(delta);
                }
                // Thinking text is not shown; the thinking line stays.
                Event::Thinking { .. } => {}
                Event::TurnCompleted { .. } => answer.end_line(),
                _ => {
                    // On a terminal the progress lines share the screen with the answer.
                    if answer.is_live() {
                        answer.end_line();
                    }
                    human(event, *tty, thinking_shown);
                }
            },
        }
    }

    /// Writes `plan` after the answer on stdout, as a numbered Markdown list with each
    /// step's status (`exec --approval read-only`: the plan is the final answer). JSON
    /// output already carried it as a `plan_updated` event, so nothing is written there.
    pub(crate) fn write_plan(&mut self, plan: &[codesmith_protocol::PlanStep]) {
        if let Progress::Human { answer, .. } = self {
            answer.end_line();
            answer.write_answer_delta("\nPlan:\n");
            for (n, step) in plan.iter().enumerate() {
                answer.write_answer_delta(&format!(
                    "{}. [{}] {}\n",
                    n + 1,
                    step.status.as_str(),
                    step.step
                ));
            }
            answer.end_line();
        }
    }

    /// Ends the streamed answer (its last line), when the task is over.
    pub(crate) fn end_answer(&mut self) {
        if let Progress::Human { answer, .. } = self {
            answer.end_line();
        }
    }
}

/// Removes the in-place "thinking" line from stderr, if shown.
fn clear_thinking(tty: bool, thinking_shown: &mut bool) {
    if *thinking_shown && tty {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        *thinking_shown = false;
    }
}

fn human(event: &Event, tty: bool, thinking_shown: &mut bool) {
    clear_thinking(tty, thinking_shown);
    let mut err = std::io::stderr().lock();
    if let Event::TurnStarted { .. } = event
        && tty
    {
        let _ = write!(err, "⋯ thinking");
        *thinking_shown = true;
        return;
    }
    for line in human_lines(event, Paint::for_stderr(tty)) {
        let _ = writeln!(err, "{line}");
    }
}

/// The progress lines `exec` prints on stderr for `event`: the session line, else the
/// shared renderer's lines ([`render::event_lines`], the same the UI's line mode prints).
pub(crate) fn human_lines(event: &Event, paint: Paint) -> Vec<String> {
    match event {
        Event::SessionStarted {
            session_id,
            provider,
            model,
            ..
        } => vec![format!(
            "codesmith: session {} ({}, {})",
            terminal_safe(session_id),
            terminal_safe(provider),
            terminal_safe(model)
        )],
        _ => render::event_lines(event, paint),
    }
}
