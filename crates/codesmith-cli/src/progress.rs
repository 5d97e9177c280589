//! Showing a running task: JSON lines on stdout (`--json`), or the answer streamed on
//! stdout with human progress on stderr.

use std::io::{IsTerminal, Write};

use codesmith_policy::{terminal_safe, visible_line};
use codesmith_protocol::Event;

use crate::tui::app::{error_line, key_argument};

use crate::answer::AnswerStream;

/// Where events go while a task runs.
#[derive(Debug)]
pub enum Progress {
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
    pub fn new(json: bool) -> Self {
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
    pub fn show(&mut self, event: &Event) {
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

    /// Ends the streamed answer (its last line), when the task is over.
    pub fn end_answer(&mut self) {
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
    if let Some(line) = subagent_line(event, "") {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
        return;
    }
    let mut err = std::io::stderr().lock();
    // Everything quoted from the model, a tool, a file or a provider is made
    // safe first; CodeSmith's own colours are added after, on a terminal only.
    let paint = Paint::for_stderr(tty);
    match event {
        Event::SessionStarted {
            session_id,
            provider,
            model,
            ..
        } => {
            let _ = writeln!(
                err,
                "codesmith: session {} ({}, {})",
                safe(session_id),
                safe(provider),
                safe(model)
            );
        }
        Event::TurnStarted { .. } if tty => {
            let _ = write!(err, "⋯ thinking");
            *thinking_shown = true;
        }
        Event::ToolCall {
            name, arguments, ..
        } => {
            let _ = writeln!(
                err,
                "{} {} {}",
                paint.bold("●"),
                visible_line(name, 60),
                key_argument(arguments)
            );
        }
        Event::ToolResult {
            ok: false, output, ..
        } => {
            let _ = writeln!(err, "  {}", paint.red(&format!("✗ {}", error_line(output))));
        }
        Event::Retry {
            attempt,
            wait_ms,
            reason,
        } => {
            let _ = writeln!(
                err,
                "↻ retry {attempt} in {:.1}s: {}",
                *wait_ms as f64 / 1000.0,
                safe(reason)
            );
        }
        Event::Notice { message } => {
            let _ = writeln!(err, "ℹ {}", safe(message));
        }
        Event::Verdict(v) => {
            let _ = writeln!(
                err,
                "verdict: {} ({})",
                safe(&v.verdict),
                v.command
                    .as_deref()
                    .map_or("no command".to_string(), |c| visible_line(c, 100))
            );
        }
        Event::Error { message } => {
            let _ = writeln!(err, "{} {}", paint.red("error:"), safe(message));
        }
        _ => {}
    }
}

/// The progress line of a subagent event (`None` for any other event, and for child
/// events not shown: streamed text, thinking, round starts), indented by `indent` and
/// labelled with the child's short id. A child's retry is labelled as its own, so it is
/// never read as the foreground's.
fn subagent_line(event: &Event, indent: &str) -> Option<String> {
    match event {
        Event::SubagentStarted {
            agent_id,
            agent_type,
            description,
            ..
        } => Some(format!(
            "{indent}↳ [{}] {} subagent: {}",
            short_id(agent_id),
            safe(agent_type),
            visible_line(description, 80)
        )),
        Event::SubagentFinished {
            agent_id,
            status,
            turns,
            ..
        } => Some(format!(
            "{indent}↳ [{}] {} after {turns} round(s)",
            short_id(agent_id),
            safe(status)
        )),
        Event::Subagent { agent_id, event } => {
            let inner = format!("{indent}  ");
            if let Some(line) = subagent_line(event, &inner) {
                return Some(line);
            }
            let label = format!("{inner}[{}]", short_id(agent_id));
            match event.as_ref() {
                Event::ToolCall {
                    name, arguments, ..
                } => Some(format!(
                    "{label} ● {} {}",
                    visible_line(name, 60),
                    key_argument(arguments)
                )),
                Event::ToolResult {
                    ok: false, output, ..
                } => Some(format!("{label}   ✗ {}", error_line(output))),
                Event::Retry {
                    attempt, wait_ms, ..
                } => Some(format!(
                    "{label} ↻ subagent retry {attempt} in {:.1}s",
                    *wait_ms as f64 / 1000.0
                )),
                Event::Notice { message } => Some(format!("{label} ℹ {}", safe(message))),
                Event::Error { message } => Some(format!("{label} error: {}", safe(message))),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The last 6 characters of a subagent's id (its session id, whose tail is random), for
/// labels.
fn short_id(agent_id: &str) -> std::borrow::Cow<'_, str> {
    let start = agent_id.char_indices().rev().nth(5).map_or(0, |(i, _)| i);
    safe(&agent_id[start..])
}

/// `text` made safe for the terminal.
fn safe(text: &str) -> std::borrow::Cow<'_, str> {
    terminal_safe(text)
}

/// CodeSmith's own colours: only on a terminal, and never when `NO_COLOR` is
/// set to a non-empty value (<https://no-color.org>).
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    on: bool,
}

impl Paint {
    /// Colours for stderr when it is a terminal and `NO_COLOR` is unset.
    pub fn for_stderr(tty: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Paint {
            on: tty && !no_color,
        }
    }

    fn wrap(self, sgr: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{sgr}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// `text` (already made safe) in bold.
    pub fn bold(self, text: &str) -> String {
        self.wrap("1", text)
    }

    /// `text` (already made safe) in red.
    pub fn red(self, text: &str) -> String {
        self.wrap("31", text)
    }
}
