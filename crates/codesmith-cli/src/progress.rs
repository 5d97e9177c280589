//! Showing a running task: JSON lines on stdout (`--json`) or human progress on stderr.

use std::io::{IsTerminal, Write};

use codesmith_protocol::Event;
use serde_json::Value;

/// Where events go while a task runs.
#[derive(Debug)]
pub enum Progress {
    /// One JSON event per line on stdout.
    Json,
    /// Human progress on stderr; the final answer goes to stdout at the end.
    Human {
        /// Whether stderr is a terminal (enables the in-place thinking line).
        tty: bool,
        /// Whether a "thinking" line is currently shown.
        thinking_shown: bool,
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
            }
        }
    }

    /// Shows one event.
    pub fn show(&mut self, event: &Event) {
        match self {
            Progress::Json => {
                let mut out = std::io::stdout().lock();
                if let Ok(line) = serde_json::to_string(event) {
                    let _ = writeln!(out, "{line}");
                    let _ = out.flush();
                }
            }
            Progress::Human {
                tty,
                thinking_shown,
            } => human(event, *tty, thinking_shown),
        }
    }
}

fn human(event: &Event, tty: bool, thinking_shown: &mut bool) {
    let mut err = std::io::stderr().lock();
    if *thinking_shown && tty {
        let _ = write!(err, "\r\x1b[2K");
        *thinking_shown = false;
    }
    match event {
        Event::SessionStarted {
            session_id,
            provider,
            model,
            ..
        } => {
            let _ = writeln!(err, "codesmith: session {session_id} ({provider}, {model})");
        }
        Event::TurnStarted { .. } if tty => {
            let _ = write!(err, "⋯ thinking");
            *thinking_shown = true;
        }
        Event::ToolCall {
            name, arguments, ..
        } => {
            let _ = writeln!(err, "● {name} {}", key_argument(arguments));
        }
        Event::ToolResult {
            ok: false, output, ..
        } => {
            let _ = writeln!(err, "  ✗ {}", error_line(output));
        }
        Event::Retry {
            attempt,
            wait_ms,
            reason,
        } => {
            let _ = writeln!(
                err,
                "↻ retry {attempt} in {:.1}s: {reason}",
                *wait_ms as f64 / 1000.0
            );
        }
        Event::Notice { message } => {
            let _ = writeln!(err, "ℹ {message}");
        }
        Event::Verdict(v) => {
            let _ = writeln!(
                err,
                "verdict: {} ({})",
                v.verdict,
                v.command.as_deref().unwrap_or("no command")
            );
        }
        Event::Error { message } => {
            let _ = writeln!(err, "error: {message}");
        }
        _ => {}
    }
}

/// The argument a person recognises a call by: path, command, pattern or URL.
fn key_argument(args: &Value) -> String {
    for key in ["command", "path", "pattern", "url", "id", "ref"] {
        if let Some(v) = args.get(key).and_then(Value::as_str) {
            let one_line: String = v
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(100)
                .collect();
            return one_line;
        }
    }
    String::new()
}

fn error_line(output: &str) -> String {
    let parsed: Option<Value> =
        serde_json::from_str(output.lines().next().unwrap_or_default()).ok();
    let code = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/code"))
        .and_then(Value::as_str)
        .unwrap_or("ERROR");
    let msg = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let msg: String = msg.chars().take(160).collect();
    format!("{code}: {msg}")
}
