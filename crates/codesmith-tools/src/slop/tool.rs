//! The `slop` tool: the model records debt, moves its own entries along, and reads the
//! ledger. It cannot delete an entry nor rewrite one: every change is a new record, and
//! accepting or declining debt (`accepted`, `wont_fix`) is left to a person.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Author, Bucket, Confidence, Entry, Ledger, NewEntry, Record, Severity, SlopError, Status,
};
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

const EXAMPLE: &str = r#"{"action": "record", "bucket": "duplication", "severity": "medium", "confidence": "high", "title": "size parsing written twice", "source_links": ["src/a.rs:10-24", "src/b.rs:40-52"], "cleanup": "keep src/a.rs's parse_size and call it from b.rs"}"#;

const DESCRIPTION: &str = "The project's slop ledger: the register of technical debt you \
introduced or found and did not fix now (duplicated logic, dead code, over-engineering, a claim \
you could not verify, missing tests, swallowed errors, a security weakness, stale docs). \
action=record adds an entry (bucket, severity, confidence, title; description, cleanup, owner, \
source_links as path:lines or URLs, linked_tasks optional) and returns its id; action=update \
moves an entry to in_progress, resolved or back to open with a note (a person decides \
accepted and wont_fix); action=list returns the open entries (all with include_closed); \
action=show returns one entry with its history. Entries are never deleted or rewritten. \
Examples: {\"action\": \"record\", \"bucket\": \"missing_tests\", \"severity\": \"high\", \
\"confidence\": \"medium\", \"title\": \"retry path untested\", \"source_links\": \
[\"src/net.rs:88-120\"]}; {\"action\": \"update\", \"id\": \"SLOP-3\", \"status\": \"resolved\", \
\"note\": \"tests added in tests/retry.rs\"}; {\"action\": \"list\"}.";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    action: String,
    id: Option<String>,
    bucket: Option<Bucket>,
    severity: Option<Severity>,
    confidence: Option<Confidence>,
    owner: Option<String>,
    #[serde(default)]
    source_links: Vec<String>,
    title: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    cleanup: String,
    #[serde(default)]
    linked_tasks: Vec<String>,
    status: Option<Status>,
    #[serde(default)]
    note: String,
    #[serde(default)]
    include_closed: bool,
}

/// The `slop` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct SlopTool;

#[async_trait]
impl Tool for SlopTool {
    fn name(&self) -> &'static str {
        "slop"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["record", "update", "list", "show"]},
                "id": {"type": "string", "description": "The entry (update, show), e.g. \"SLOP-3\"."},
                "bucket": {"type": "string", "enum": ["duplication", "dead_code", "over_engineering", "unverified_claim", "missing_tests", "error_handling", "security", "docs", "other"]},
                "severity": {"type": "string", "enum": ["low", "medium", "high", "critical"]},
                "confidence": {"type": "string", "enum": ["low", "medium", "high"], "description": "How sure the assessment is."},
                "owner": {"type": "string", "description": "Who owns the cleanup (a person, a team, or \"auto\")."},
                "source_links": {"type": "array", "items": {"type": "string"}, "description": "Where the debt lives: path:lines or URLs."},
                "title": {"type": "string", "description": "One line."},
                "description": {"type": "string", "description": "What is wrong and why it matters."},
                "cleanup": {"type": "string", "description": "How to clean it up."},
                "linked_tasks": {"type": "array", "items": {"type": "string"}},
                "status": {"type": "string", "enum": ["open", "in_progress", "resolved"], "description": "The new status (update)."},
                "note": {"type": "string", "description": "What was done (update)."},
                "include_closed": {"type": "boolean", "description": "list: also resolved, accepted and wont_fix entries."}
            },
            "required": ["action"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::WritesFiles
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let args: Args = crate::files::parse_args("slop", args, EXAMPLE)?;
        let ledger = Ledger::for_workspace(&ctx.workspace);
        match args.action.as_str() {
            "record" => record(&ledger, args),
            "update" => update(&ledger, &args),
            "list" => list(&ledger, args.include_closed),
            "show" => show(&ledger, &args),
            other => Err(crate::files::invalid_args(
                format!("action {other:?} is not one of record, update, list, show."),
                format!("Call it like this: {EXAMPLE}"),
            )),
        }
    }
}

fn missing(field: &str, action: &str) -> Refusal {
    crate::files::invalid_args(
        format!("action={action} needs {field}."),
        format!("Pass {field}; for example: {EXAMPLE}"),
    )
    .with("field", field)
}

/// The refusal for a ledger error.
fn refused(e: SlopError) -> Refusal {
    match e {
        SlopError::Unknown(id) => Refusal::new(
            ErrorCode::NotFound,
            format!("There is no slop entry {id:?} in this project."),
            "Use an id slop list returned (e.g. \"SLOP-1\").",
        )
        .with("id", id),
        SlopError::Transition { id, from, to } => Refusal::new(
            ErrorCode::InvalidArguments,
            format!("{id} is {from} and cannot become {to}."),
            "A closed entry never changes; record a new entry for debt that came back.",
        )
        .with("id", id)
        .with("status", from),
        SlopError::Invalid(why) => Refusal::new(
            ErrorCode::InvalidArguments,
            format!("The entry was not recorded: {why}."),
            "Fix the field named and call slop again.",
        ),
        SlopError::Io(e) => Refusal::new(
            ErrorCode::Internal,
            format!("The slop ledger could not be written: {e}."),
            "Tell the user; check that .codesmith/slop/ in the workspace is writable.",
        ),
    }
}

/// The refusal for a ledger error met while only reading it (`list`, `show`).
fn refused_reading(e: SlopError) -> Refusal {
    match e {
        SlopError::Io(e) => Refusal::new(
            ErrorCode::Internal,
            format!("The slop ledger could not be read: {e}."),
            "Tell the user; check that .codesmith/slop/ledger.jsonl in the workspace is readable.",
        ),
        other => refused(other),
    }
}

/// The note for ledger lines that could not be read, or `None` when every line read.
fn unreadable_note(unreadable: usize) -> Option<String> {
    (unreadable > 0).then(|| {
        format!(
            "{unreadable} ledger line(s) could not be read (damaged or not a record) and are \
             left out; tell the user to repair .codesmith/slop/ledger.jsonl."
        )
    })
}

fn entry_json(e: &Entry) -> Value {
    serde_json::to_value(e).unwrap_or(Value::Null)
}

fn line(e: &Entry) -> String {
    format!(
        "{} [{}] {:?}/{:?} {}",
        e.id,
        e.status.as_str(),
        e.entry.bucket,
        e.entry.severity,
        e.entry.title
    )
}

fn record(ledger: &Ledger, args: Args) -> ToolOutcome {
    let entry = NewEntry {
        bucket: args.bucket.ok_or_else(|| missing("bucket", "record"))?,
        severity: args.severity.ok_or_else(|| missing("severity", "record"))?,
        confidence: args
            .confidence
            .ok_or_else(|| missing("confidence", "record"))?,
        owner: args.owner,
        source_links: args.source_links,
        title: args.title.ok_or_else(|| missing("title", "record"))?,
        description: args.description,
        cleanup: args.cleanup,
        linked_tasks: args.linked_tasks,
    };
    let e = ledger.record(entry, Author::Model).map_err(refused)?;
    Ok(
        ToolOutput::new(format!("Recorded {}: {}", e.id, e.entry.title))
            .with("id", e.id.as_str())
            .with("status", e.status.as_str()),
    )
}

fn update(ledger: &Ledger, args: &Args) -> ToolOutcome {
    let id = args.id.as_deref().ok_or_else(|| missing("id", "update"))?;
    let status = args.status.ok_or_else(|| missing("status", "update"))?;
    if matches!(status, Status::Accepted | Status::WontFix) {
        return Err(Refusal::new(
            ErrorCode::Denied,
            format!(
                "Only a person marks debt {}: it is a decision to keep it.",
                status.as_str()
            ),
            "Leave the entry open and tell the user; they can run `codesmith slop accept ID` or \
             `codesmith slop wontfix ID`.",
        )
        .with("id", id)
        .with("status", status.as_str()));
    }
    let e = ledger
        .set_status(id, status, &args.note, Author::Model)
        .map_err(refused)?;
    Ok(
        ToolOutput::new(format!("{} is now {}.", e.id, e.status.as_str()))
            .with("id", e.id.as_str())
            .with("status", e.status.as_str()),
    )
}

fn list(ledger: &Ledger, include_closed: bool) -> ToolOutcome {
    let (entries, unreadable) = ledger.entries_counted().map_err(refused_reading)?;
    let entries: Vec<Entry> = entries
        .into_iter()
        .filter(|e| include_closed || !e.status.is_closed())
        .collect();
    let mut text = if entries.is_empty() {
        "The slop ledger has no entries to show.".to_string()
    } else {
        entries.iter().map(line).collect::<Vec<_>>().join("\n")
    };
    if let Some(note) = unreadable_note(unreadable) {
        text = format!("{text}\n{note}");
    }
    Ok(ToolOutput::new(text)
        .with("count", entries.len())
        .with("unreadable_lines", unreadable)
        .with(
            "entries",
            entries
                .iter()
                .map(|e| json!({"id": e.id, "status": e.status, "title": e.entry.title}))
                .collect::<Vec<_>>(),
        ))
}

fn show(ledger: &Ledger, args: &Args) -> ToolOutcome {
    let id = args.id.as_deref().ok_or_else(|| missing("id", "show"))?;
    let (_, unreadable) = ledger.entries_counted().map_err(refused_reading)?;
    let e = ledger.get(id).map_err(refused_reading)?;
    let history = ledger.history(&e.id).map_err(refused_reading)?;
    let steps: Vec<String> = history
        .iter()
        .map(|r| match r {
            Record::Recorded { at, by, .. } => format!("{at} recorded by {by:?}"),
            Record::Status {
                at,
                by,
                status,
                note,
                ..
            } => format!("{at} {} by {by:?} {note}", status.as_str())
                .trim_end()
                .to_string(),
        })
        .collect();
    let mut text = format!("{}\n{}", line(&e), steps.join("\n"));
    if let Some(note) = unreadable_note(unreadable) {
        text = format!("{text}\n{note}");
    }
    Ok(ToolOutput::new(text)
        .with("entry", entry_json(&e))
        .with("history", steps)
        .with("unreadable_lines", unreadable))
}
