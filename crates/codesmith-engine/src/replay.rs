//! A session file read back as what a front end showed while it ran: the user's tasks,
//! and the protocol events of the answers, tool calls and results (their summaries,
//! diffs and typed errors, from [`NoteKind::Shown`] notes), verdicts and plans. A front end
//! renders them with the same renderer as live events, so a resumed session looks as it
//! did. What the engine wrote for the model only (runtime events: a verdict's evidence, a
//! restated plan, the note on an imitated tool call) is never shown as the user's words.

use std::collections::HashMap;
use std::path::Path;

use codesmith_protocol::{ContentBlock, Event, Message, Role};

use crate::session::{NoteKind, Record, listed_lines, open_session_file, recorded_plan};

/// The opening of every runtime event the engine writes into the transcript.
const RUNTIME_EVENT: &str = "<runtime_event";

/// One item of a replayed session, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Replayed {
    /// A task the user typed.
    Task(String),
    /// An event as the live session sent it to its front end.
    Event(Box<Event>),
}

/// The session file at `session_file` as its front end showed it (see the module
/// documentation). Unreadable lines are skipped; a file that cannot be read gives
/// nothing. Results recorded before results were noted show without their summary and
/// diff (their refusal is read back from the stored envelope).
pub fn replay(session_file: &Path) -> Vec<Replayed> {
    let Some(file) = open_session_file(session_file) else {
        return Vec::new();
    };
    let records: Vec<Record> = listed_lines(file)
        .filter_map(|line| serde_json::from_str::<Record>(&line).ok())
        .collect();
    replay_records(&records)
}

/// [`replay`] of records already read.
pub fn replay_records(records: &[Record]) -> Vec<Replayed> {
    let mut out = Vec::new();
    let mut results: HashMap<String, Event> = HashMap::new();
    // A plan is noted before the message that answers the call which set it, and was
    // shown after that call's result: it waits for the next message.
    let mut plan: Option<Event> = None;
    for (i, record) in records.iter().enumerate() {
        match record {
            Record::Meta { .. } => {}
            Record::Message { message } => {
                let is_task = matches!(
                    records.get(i + 1),
                    Some(Record::Note {
                        kind: NoteKind::TaskStart,
                        ..
                    })
                );
                message_events(message, is_task, &mut results, &mut out);
                out.extend(plan.take().map(ev));
            }
            Record::Compaction { stage, messages } => {
                out.push(ev(Event::Notice {
                    message: format!(
                        "context compacted ({stage}): the model sees {} message(s) in place \
                         of what is above",
                        messages.len()
                    ),
                }));
            }
            Record::Note { kind, data } => match kind {
                NoteKind::Shown => {
                    let Some(event) = data
                        .get("event")
                        .and_then(|e| serde_json::from_value::<Event>(e.clone()).ok())
                    else {
                        continue;
                    };
                    let in_place = data.get("in_place") == Some(&serde_json::Value::Bool(true));
                    match event {
                        // The user's own command (`!cmd`): shown where it ran.
                        Event::ToolCall { .. } | Event::ToolResult { .. } if in_place => {
                            out.push(ev(event));
                        }
                        Event::ToolResult { ref id, .. } => {
                            results.insert(id.clone(), event);
                        }
                        Event::Verdict(_) => out.push(ev(event)),
                        _ => {}
                    }
                }
                NoteKind::Plan => {
                    plan = recorded_plan(record).map(|p| Event::PlanUpdated {
                        explanation: p.explanation,
                        plan: p.plan,
                    });
                }
                NoteKind::ResponseInterrupted => {
                    let why = data
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("no reason given");
                    out.push(ev(Event::Notice {
                        message: format!("The model's answer was cut off: {why}"),
                    }));
                }
                _ => {}
            },
        }
    }
    out.extend(plan.map(ev));
    out
}

/// The items of one message: a task, or answer text, thinking, tool calls and results.
fn message_events(
    message: &Message,
    is_task: bool,
    results: &mut HashMap<String, Event>,
    out: &mut Vec<Replayed>,
) {
    for block in &message.content {
        let item = match (block, message.role) {
            (ContentBlock::Text { text }, Role::User) => {
                // A runtime event is the engine's note to the model, never the user's words.
                if is_task || !text.trim_start().starts_with(RUNTIME_EVENT) {
                    Replayed::Task(text.clone())
                } else {
                    continue;
                }
            }
            (ContentBlock::Text { text }, _) => ev(Event::AssistantText {
                delta: text.clone(),
            }),
            (ContentBlock::Thinking { text }, _) => ev(Event::Thinking {
                delta: text.clone(),
            }),
            (ContentBlock::ToolCall(call), _) => ev(Event::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null),
            }),
            (ContentBlock::ToolResult(r), _) => ev(match results.remove(&r.call_id) {
                Some(Event::ToolResult {
                    id,
                    name,
                    ok,
                    meta,
                    error,
                    summary,
                    changes,
                    source,
                    ..
                }) => Event::ToolResult {
                    id,
                    name,
                    ok,
                    output: r.content.clone(),
                    meta,
                    error,
                    summary,
                    changes,
                    source,
                },
                _ => Event::ToolResult {
                    id: r.call_id.clone(),
                    name: String::new(),
                    ok: !r.is_error,
                    output: r.content.clone(),
                    meta: serde_json::Value::Null,
                    error: r
                        .is_error
                        .then(|| codesmith_tools::stored_refusal(&r.content))
                        .flatten(),
                    summary: None,
                    changes: Vec::new(),
                    source: None,
                },
            }),
        };
        out.push(item);
    }
}

/// The event a [`NoteKind::Shown`] note keeps of `event`: a tool result without the text
/// the model read (its message holds it) and a success's metadata, or a verdict; `None`
/// for any other event.
pub(crate) fn shown_note(event: &Event) -> Option<serde_json::Value> {
    let kept = match event {
        Event::ToolResult {
            id,
            name,
            ok,
            meta,
            error,
            summary,
            changes,
            source,
            ..
        } => Event::ToolResult {
            id: id.clone(),
            name: name.clone(),
            ok: *ok,
            output: String::new(),
            // A refusal's details hold what a person reads of it (a stopped command's
            // output); a success's metadata is not shown.
            meta: if *ok {
                serde_json::Value::Null
            } else {
                meta.clone()
            },
            error: error.clone(),
            summary: summary.clone(),
            changes: changes.clone(),
            source: source.clone(),
        },
        Event::Verdict(_) => event.clone(),
        _ => return None,
    };
    Some(serde_json::json!({ "event": kept }))
}

/// An event as a replayed item.
fn ev(event: Event) -> Replayed {
    Replayed::Event(Box::new(event))
}

/// The opening of the runtime event that records the user's own shell command.
pub const USER_SHELL_EVENT_OPEN: &str = "<runtime_event type=\"user_shell\">";

/// The runtime event recording that the user ran `command` themselves (`!cmd`), with
/// `result`, the text its `exec_shell` result gave: what the model reads of it. Markup
/// in either cannot close the event (`<` of `</runtime_event` is escaped).
pub(crate) fn user_shell_event_text(command: &str, result: &str) -> String {
    let inert = |t: &str| t.replace("</runtime_event", "&lt;/runtime_event");
    format!(
        "{USER_SHELL_EVENT_OPEN}The user ran this shell command themselves (through the same \
         approval and sandbox as your exec_shell calls); it is context, not a request.\n\
         $ {}\n{}\n</runtime_event>",
        inert(command),
        inert(result)
    )
}
