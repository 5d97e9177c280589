//! The one renderer of engine events as words: every front end (`exec`'s progress lines,
//! the UI's line mode, the full-screen UI) shows the same event with the same words.
//!
//! Everything here reads the events' typed fields (a result's `error`, `summary` and
//! `changes`), never the text the model reads: no front end parses JSON out of it.
//! Text quoted from the model, a tool, a file or a provider is made safe for the terminal
//! here ([`codesmith_policy::terminal_safe`], [`codesmith_policy::visible_line`]);
//! CodeSmith's own colours are added after, by [`Paint`], on a terminal only.

use std::borrow::Cow;

use codesmith_policy::{terminal_safe, visible_controls, visible_line};
use codesmith_protocol::{
    ChangeKind, ChangedFile, Event, PlanStep, StepStatus, ToolError, VerdictEvent,
};
use serde_json::Value;

/// Most diff lines a line renderer prints under an edit ([`event_lines`]); the
/// full-screen UI has its own limit and shows the rest on Ctrl-O.
pub(crate) const DIFF_LINES: usize = 20;

/// The start of the line [`diff_lines`] ends a cut diff with: `… (diff cut, +A -R in all)`.
const CUT_MARK: &str = "… (diff cut,";

/// Longest diff line a line renderer prints, in characters (a minified file's one line
/// would otherwise fill the terminal).
pub(crate) const DIFF_LINE_CHARS: usize = 300;

/// Longest error line, in characters.
const ERROR_CHARS: usize = 160;

/// The argument a person recognises a call by: command, path, pattern or URL,
/// as [`visible_line`] shows it (one line, controls and invisible characters visible,
/// blank runs collapsed, at most 100 characters with the middle elided, never the end).
/// Empty when the call has none of them.
pub(crate) fn key_argument(args: &Value) -> String {
    for key in [
        "command",
        "path",
        "file_path",
        "pattern",
        "url",
        "query",
        "id",
        "ref",
        "description",
    ] {
        if let Some(v) = args.get(key).and_then(Value::as_str) {
            return visible_line(v, 100);
        }
    }
    String::new()
}

/// `● NAME KEY-ARGUMENT`: a tool call.
pub(crate) fn tool_call_line(name: &str, args: &Value, paint: Paint) -> String {
    format!(
        "{} {} {}",
        paint.bold("●"),
        visible_line(name, 60),
        key_argument(args)
    )
}

/// `CODE: message` of a refused call, cut to one line of at most 160 characters; without
/// a typed error (a stored result that is no envelope), the first line of `output` (inside
/// its `<external_content>` wrapper, if any).
pub(crate) fn error_line(error: Option<&ToolError>, output: &str) -> String {
    let line = match error {
        Some(e) => format!("{}: {}", e.code, e.message),
        None => codesmith_tools::trust::external_body(output)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    first_line(&terminal_safe(&line), ERROR_CHARS)
}

/// Most characters of a refusal's message and of its hint a line renderer prints
/// ([`refusal_lines`]); a longer one is cut with `…`.
const REFUSAL_CHARS: usize = 2_000;

/// A refused call as a line renderer prints it: `✗ CODE: message` with every line of the
/// message (later lines indented), then `hint: …` — the whole reason and what to do,
/// each cut at 2,000 characters, made safe for the terminal. Without a typed error (a
/// stored result that is no envelope), [`error_line`]'s one line.
pub(crate) fn refusal_lines(error: Option<&ToolError>, output: &str) -> Vec<String> {
    let Some(e) = error else {
        return vec![format!("✗ {}", error_line(None, output))];
    };
    let cut = |text: &str| -> String {
        let mut out: String = text.trim().chars().take(REFUSAL_CHARS).collect();
        if text.trim().chars().count() > REFUSAL_CHARS {
            out.push('…');
        }
        terminal_safe(&out).into_owned()
    };
    let message = cut(&e.message);
    let mut lines = message.lines();
    let mut out = vec![format!(
        "✗ {}: {}",
        e.code,
        lines.next().unwrap_or_default()
    )];
    out.extend(lines.map(|l| format!("  {l}")));
    if !e.hint.trim().is_empty() {
        let hint = cut(&e.hint);
        let mut lines = hint.lines();
        out.push(format!("  hint: {}", lines.next().unwrap_or_default()));
        out.extend(lines.map(|l| format!("  {l}")));
    }
    out
}

/// The diff lines of an edit's changed files, as the tool computed them: a file's own
/// line (`created a.py`, `moved a -> b`, `deleted c`) when the edit created, moved or
/// deleted it or changed several files, then its hunks (`@@` headers, ` ` context, `-`
/// removed, `+` added), and a cut diff's `… (diff cut, +A -R in all)`. Controls and
/// invisible characters are shown
/// ([`visible_controls`]): exactly what was written, and nothing a terminal acts on.
pub(crate) fn diff_lines(changes: &[ChangedFile]) -> Vec<String> {
    let mut out = Vec::new();
    for change in changes {
        let path = visible_line(&change.path, 200);
        let head = match (change.kind, &change.moved_to) {
            (ChangeKind::Moved, Some(to)) => {
                Some(format!("moved {path} -> {}", visible_line(to, 200)))
            }
            (ChangeKind::Created, _) => Some(format!("created {path}")),
            (ChangeKind::Deleted, _) => Some(format!("deleted {path}")),
            _ if changes.len() > 1 => Some(format!("updated {path}")),
            _ => None,
        };
        out.extend(head);
        for line in change.diff.lines() {
            out.push(match visible_controls(line) {
                Cow::Borrowed(l) => l.to_string(),
                Cow::Owned(shown) => shown,
            });
        }
        if change.truncated {
            out.push(format!(
                "{CUT_MARK} +{} -{} in all)",
                change.added, change.removed
            ));
        }
    }
    out
}

/// `↻ retry N in S.Ss: reason`: a request that failed transiently and will be retried.
pub(crate) fn retry_line(attempt: u32, wait_ms: u64, reason: &str) -> String {
    format!(
        "↻ retry {attempt} in {:.1}s: {}",
        wait_ms as f64 / 1000.0,
        terminal_safe(reason)
    )
}

/// `ℹ message`: a notice.
pub(crate) fn notice_line(message: &str) -> String {
    format!("ℹ {}", terminal_safe(message))
}

/// `⇣ context compacted (STAGE): ~B → ~A tokens of a W-token window`: a compaction
/// while a task ran (see `Event::Compaction`).
pub(crate) fn compaction_line(
    trigger: &str,
    stage: &str,
    before: u64,
    after: u64,
    window: u64,
    escalated: bool,
) -> String {
    let stage = match stage {
        "clear_tool_results" => "old tool results cleared",
        "summary" => "older turns summarized",
        "trim" => "older turns dropped",
        other => other,
    };
    let why = if trigger == "context_length" {
        "; the provider refused the request as too long"
    } else {
        ""
    };
    let of = if window > 0 {
        format!(" of a {window}-token window")
    } else {
        String::new()
    };
    let refill = if escalated {
        "; it refilled quickly, so the model was told to read in pages"
    } else {
        ""
    };
    format!(
        "⇣ context compacted ({}): ~{before} → ~{after} tokens{of}{why}{refill}",
        terminal_safe(stage)
    )
}

/// `☰ plan (D/N done): EXPLANATION` and one line per step (`  [x] step`, `  [>] step`,
/// `  [ ] step`): the model's plan after it changed (see `Event::PlanUpdated`).
pub(crate) fn plan_lines(explanation: Option<&str>, plan: &[PlanStep]) -> Vec<String> {
    let done = plan
        .iter()
        .filter(|s| s.status == StepStatus::Completed)
        .count();
    let why = explanation
        .filter(|e| !e.trim().is_empty())
        .map_or(String::new(), |e| format!(": {}", visible_line(e, 100)));
    let mut out = vec![format!("☰ plan ({done}/{} done){why}", plan.len())];
    out.extend(
        plan.iter()
            .map(|s| format!("  {} {}", s.status.mark(), visible_line(&s.step, 100))),
    );
    out
}

/// `verdict: VERDICT (COMMAND)`: the claim verifier's verdict.
pub(crate) fn verdict_line(v: &VerdictEvent) -> String {
    format!(
        "verdict: {} ({})",
        terminal_safe(&v.verdict),
        v.command
            .as_deref()
            .map_or("no command".to_string(), |c| visible_line(c, 100))
    )
}

/// The lines a line renderer prints for `event` (none for the events it does not show:
/// streamed text and thinking, which a front end streams itself, round boundaries, a
/// successful result without changes, and kinds this renderer does not know). Used by
/// `exec`'s progress on stderr and the UI's line mode on stdout.
pub(crate) fn event_lines(event: &Event, paint: Paint) -> Vec<String> {
    if let Some(line) = subagent_line(event, "") {
        return vec![line];
    }
    match event {
        Event::ToolCall {
            name, arguments, ..
        } => vec![tool_call_line(name, arguments, paint)],
        Event::ToolResult {
            ok: false,
            error,
            output,
            ..
        } => {
            let mut lines = refusal_lines(error.as_ref(), output).into_iter();
            let head = lines.next().unwrap_or_default();
            std::iter::once(format!("  {}", paint.red(&head)))
                .chain(lines.map(|l| format!("  {l}")))
                .collect()
        }
        Event::ToolResult { changes, .. } => {
            let lines = diff_lines(changes);
            let mut out: Vec<String> = lines
                .iter()
                .take(DIFF_LINES)
                .map(|l| format!("    {}", first_line(l, DIFF_LINE_CHARS)))
                .collect();
            if lines.len() > DIFF_LINES {
                // A cut diff's own marker is kept past the limit: "N more lines" alone
                // would read as the whole rest of the change.
                let (cuts, more): (Vec<&String>, Vec<&String>) = lines[DIFF_LINES..]
                    .iter()
                    .partition(|l| l.starts_with(CUT_MARK));
                if !more.is_empty() {
                    out.push(format!("    … {} more lines", more.len()));
                }
                out.extend(cuts.into_iter().map(|l| format!("    {l}")));
            }
            out
        }
        Event::Retry {
            attempt,
            wait_ms,
            reason,
        } => vec![retry_line(*attempt, *wait_ms, reason)],
        Event::Notice { message } => vec![notice_line(message)],
        Event::McpProgress {
            server,
            tool,
            progress,
            total,
            message,
        } => {
            let line = codesmith_tools::mcp::McpEvent::Progress {
                server: server.clone(),
                tool: tool.clone(),
                progress: *progress,
                total: *total,
                message: message.clone(),
            }
            .describe();
            vec![format!("  … {}", terminal_safe(&line))]
        }
        Event::Compaction {
            trigger,
            stage,
            before,
            after,
            window,
            escalated,
        } => vec![compaction_line(
            trigger, stage, *before, *after, *window, *escalated,
        )],
        Event::Verdict(v) => vec![verdict_line(v)],
        Event::PlanUpdated { explanation, plan } => plan_lines(explanation.as_deref(), plan),
        Event::Error { message } => {
            vec![format!(
                "{} {}",
                paint.red("error:"),
                terminal_safe(message)
            )]
        }
        _ => Vec::new(),
    }
}

/// The line of a subagent event (`None` for any other event, and for child events not
/// shown: streamed text, thinking, round starts, successful results), indented by
/// `indent` and labelled with the child's short id. A child's retry is labelled as its
/// own, so it is never read as the foreground's.
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
            terminal_safe(agent_type),
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
            terminal_safe(status)
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
                    "{label} {}",
                    tool_call_line(name, arguments, Paint::OFF)
                )),
                Event::ToolResult {
                    ok: false,
                    error,
                    output,
                    ..
                } => Some(format!(
                    "{label}   ✗ {}",
                    error_line(error.as_ref(), output)
                )),
                Event::Retry {
                    attempt, wait_ms, ..
                } => Some(format!(
                    "{label} ↻ subagent retry {attempt} in {:.1}s",
                    *wait_ms as f64 / 1000.0
                )),
                Event::Notice { message } => Some(format!("{label} {}", notice_line(message))),
                Event::Error { message } => {
                    Some(format!("{label} error: {}", terminal_safe(message)))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The last 6 characters of a subagent's id (its session id, whose tail is random), for
/// labels.
fn short_id(agent_id: &str) -> Cow<'_, str> {
    let start = agent_id.char_indices().rev().nth(5).map_or(0, |(i, _)| i);
    terminal_safe(&agent_id[start..])
}

/// The first line of `text`, at most `max` characters, with `…` when anything was cut.
pub(crate) fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// CodeSmith's own colours: only on a terminal, and never when `NO_COLOR` is
/// set to a non-empty value (<https://no-color.org>).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paint {
    on: bool,
}

impl Paint {
    /// No colours (line mode, tests, labels inside coloured lines).
    pub(crate) const OFF: Paint = Paint { on: false };

    /// Colours for stderr when it is a terminal and `NO_COLOR` is unset.
    pub(crate) fn for_stderr(tty: bool) -> Self {
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
    pub(crate) fn bold(self, text: &str) -> String {
        self.wrap("1", text)
    }

    /// `text` (already made safe) in red.
    pub(crate) fn red(self, text: &str) -> String {
        self.wrap("31", text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codesmith_protocol::ErrorCode;

    fn result(ok: bool, error: Option<ToolError>, changes: Vec<ChangedFile>) -> Event {
        Event::ToolResult {
            id: "c1".into(),
            name: "edit_file".into(),
            ok,
            output: "{\"ok\":false,\"error\":{\"code\":\"IGNORED\"}}".into(),
            meta: Value::Null,
            error,
            summary: None,
            changes,
            source: None,
        }
    }

    #[test]
    fn a_plan_is_a_header_and_one_inert_line_per_step() {
        let event = Event::PlanUpdated {
            explanation: Some("found a second bug".into()),
            plan: vec![
                PlanStep {
                    step: "read".into(),
                    status: StepStatus::Completed,
                },
                PlanStep {
                    step: "fix\u{1b}[2J it".into(),
                    status: StepStatus::InProgress,
                },
                PlanStep {
                    step: "test".into(),
                    status: StepStatus::Pending,
                },
            ],
        };
        let lines = event_lines(&event, Paint::OFF);
        assert_eq!(lines[0], "☰ plan (1/3 done): found a second bug");
        assert_eq!(lines[1], "  [x] read");
        assert!(lines[2].starts_with("  [>] fix") && !lines[2].contains('\u{1b}'));
        assert_eq!(lines[3], "  [ ] test");
    }

    fn edit() -> ChangedFile {
        ChangedFile {
            path: "calc.py".into(),
            kind: ChangeKind::Modified,
            moved_to: None,
            added: 1,
            removed: 1,
            diff: "@@ -1 +1 @@\n-a - b\n+a + \u{1b}b\n".into(),
            truncated: false,
        }
    }

    /// One of each event the line renderers show, with the line both print.
    fn cases() -> Vec<(Event, &'static str)> {
        vec![
            (
                Event::ToolCall {
                    id: "c1".into(),
                    name: "exec_shell".into(),
                    arguments: serde_json::json!({"command": "cargo test\n--all"}),
                },
                "● exec_shell cargo test\\n--all",
            ),
            (
                result(
                    false,
                    Some(ToolError {
                        code: ErrorCode::Timeout,
                        message: "ran past 120 s\nsecond line".into(),
                        hint: "run it in the background".into(),
                    }),
                    Vec::new(),
                ),
                "  ✗ TIMEOUT: ran past 120 s\n    second line\n    hint: run it in the background",
            ),
            (
                result(true, None, vec![edit()]),
                "    @@ -1 +1 @@\n    -a - b\n    +a + \\u{1b}b",
            ),
            (
                Event::Retry {
                    attempt: 2,
                    wait_ms: 1500,
                    reason: "HTTP 503".into(),
                },
                "↻ retry 2 in 1.5s: HTTP 503",
            ),
            (
                Event::Notice {
                    message: "context recovered".into(),
                },
                "ℹ context recovered",
            ),
            (
                Event::Error {
                    message: "the provider refused the key".into(),
                },
                "error: the provider refused the key",
            ),
            (
                Event::Subagent {
                    agent_id: "session-abcdef123456".into(),
                    event: Box::new(Event::Notice {
                        message: "hi".into(),
                    }),
                },
                "  [123456] ℹ hi",
            ),
        ]
    }

    #[test]
    fn exec_progress_and_line_mode_print_the_same_words_for_the_same_event() {
        for (event, want) in cases() {
            let exec = crate::progress::human_lines(&event, Paint::OFF).join("\n");
            let plain = crate::tui::plain::event_text(&event);
            assert_eq!(exec, want, "{event:?}");
            assert_eq!(plain.as_deref(), Some(want), "{event:?}");
        }
    }

    #[test]
    fn error_lines_come_from_the_typed_error_never_from_the_models_text() {
        let typed = ToolError {
            code: ErrorCode::NoMatch,
            message: "no match".into(),
            hint: "h".into(),
        };
        let text = r#"{"ok":false,"error":{"code":"DENIED","message":"other"}}"#;
        assert_eq!(error_line(Some(&typed), text), "NO_MATCH: no match");
        assert_eq!(error_line(None, "plain failure\nmore"), "plain failure");
        let wrapped = "<external_content source=\"example.com\">\nHTTP 404\n</external_content>";
        assert_eq!(error_line(None, wrapped), "HTTP 404");
        let fake = "<external_content source=\"A B\">\nx";
        assert_eq!(error_line(None, fake), "<external_content source=\"A B\">");
    }

    #[test]
    fn several_files_and_moves_get_a_line_of_their_own() {
        let mut moved = edit();
        moved.kind = ChangeKind::Moved;
        moved.moved_to = Some("lib/calc.py".into());
        moved.diff.clear();
        let mut created = edit();
        created.kind = ChangeKind::Created;
        created.path = "new.py".into();
        created.diff = "@@ -0,0 +1 @@\n+x\n".into();
        created.truncated = true;
        assert_eq!(
            diff_lines(&[moved, created]),
            [
                "moved calc.py -> lib/calc.py",
                "created new.py",
                "@@ -0,0 +1 @@",
                "+x",
                "… (diff cut, +1 -1 in all)"
            ]
        );
    }

    #[test]
    fn long_diffs_are_cut_in_line_renderers() {
        let mut big = edit();
        big.diff = (0..30).map(|i| format!("+{i}\n")).collect();
        let lines = event_lines(&result(true, None, vec![big.clone()]), Paint::OFF);
        assert_eq!(lines.len(), DIFF_LINES + 1);
        assert_eq!(lines[DIFF_LINES], "    … 10 more lines");
        big.diff = format!("+{}\n", "x".repeat(70_000));
        let lines = event_lines(&result(true, None, vec![big.clone()]), Paint::OFF);
        assert_eq!(
            lines[0].chars().count(),
            4 + DIFF_LINE_CHARS + 1,
            "cut, with `…`"
        );
        big.diff = (0..30).map(|i| format!("+{i}\n")).collect();
        big.truncated = true;
        big.added = 100_000;
        let lines = event_lines(&result(true, None, vec![big]), Paint::OFF);
        assert_eq!(lines.len(), DIFF_LINES + 2, "{lines:?}");
        assert_eq!(lines[DIFF_LINES], "    … 10 more lines");
        assert_eq!(lines[DIFF_LINES + 1], "    … (diff cut, +100000 -1 in all)");
    }
}
