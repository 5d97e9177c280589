//! `codesmith slop list|show|resolve|accept|wontfix`: the person's side of the project's
//! slop ledger (`codesmith_tools::slop`). A change is a new record; nothing is deleted.

use codesmith_tools::slop::{Author, Entry, Ledger, Record, SlopError, Status};
use serde_json::json;

use crate::args::{SlopCommand, SlopIdArgs};
use crate::config;
use crate::exit::{Exit, usage};

/// Runs `codesmith slop ...`.
pub(crate) fn run(command: SlopCommand) -> Exit {
    match command {
        SlopCommand::List {
            workspace,
            all,
            json,
        } => {
            let ws = match config::workspace(workspace.workspace.as_deref()) {
                Ok(ws) => ws,
                Err(e) => return usage(e),
            };
            list(&Ledger::for_workspace(&ws), all, json)
        }
        SlopCommand::Show(args) => with_ledger(&args, |ledger| show(ledger, &args)),
        SlopCommand::Resolve(args) => change(&args, Status::Resolved),
        SlopCommand::Accept(args) => change(&args, Status::Accepted),
        SlopCommand::Wontfix(args) => change(&args, Status::WontFix),
    }
}

fn with_ledger(args: &SlopIdArgs, f: impl FnOnce(&Ledger) -> Exit) -> Exit {
    match config::workspace(args.workspace.workspace.as_deref()) {
        Ok(ws) => f(&Ledger::for_workspace(&ws)),
        Err(e) => usage(e),
    }
}

fn failed(e: SlopError) -> Exit {
    match e {
        SlopError::Unknown(_) | SlopError::Transition { .. } | SlopError::Invalid(_) => {
            usage(anyhow::anyhow!("{e}"))
        }
        SlopError::Io(_) => Exit::failed(anyhow::anyhow!("the slop ledger: {e}")),
    }
}

fn line(e: &Entry) -> String {
    let bucket = serde_json::to_value(e.entry.bucket).unwrap_or_default();
    let severity = serde_json::to_value(e.entry.severity).unwrap_or_default();
    format!(
        "{:<8} {:<11} {:<16} {:<8} {}",
        e.id,
        e.status.as_str(),
        bucket.as_str().unwrap_or("?"),
        severity.as_str().unwrap_or("?"),
        e.entry.title
    )
}

fn list(ledger: &Ledger, all: bool, json: bool) -> Exit {
    let entries: Vec<Entry> = match ledger.entries_counted() {
        Ok((e, unreadable)) => {
            warn_unreadable(unreadable);
            e.into_iter()
                .filter(|e| all || !e.status.is_closed())
                .collect()
        }
        Err(e) => return failed(e),
    };
    if json {
        let text = serde_json::to_string(&entries).unwrap_or_default();
        println!("{}", codesmith_policy::json_terminal_safe(&text));
    } else if entries.is_empty() {
        println!("No entries{}.", if all { "" } else { " open" });
    } else {
        // Titles came from a model: shown, never acted on.
        for e in &entries {
            println!("{}", codesmith_policy::terminal_safe(&line(e)));
        }
    }
    Exit::Ok
}

fn history_lines(history: &[Record]) -> Vec<String> {
    history
        .iter()
        .map(|r| match r {
            Record::Recorded { at, by, .. } => format!("{at}  recorded by {by:?}"),
            Record::Status {
                at,
                by,
                status,
                note,
                ..
            } => format!("{at}  {} by {by:?}  {note}", status.as_str())
                .trim_end()
                .to_string(),
        })
        .collect()
}

/// Says on stderr how many ledger lines could not be read (they are left out).
fn warn_unreadable(unreadable: usize) {
    if unreadable > 0 {
        eprintln!(
            "warning: {unreadable} slop ledger line(s) could not be read (damaged or not a \
             record) and are left out; repair .codesmith/slop/ledger.jsonl"
        );
    }
}

fn show(ledger: &Ledger, args: &SlopIdArgs) -> Exit {
    if let Ok((_, unreadable)) = ledger.entries_counted() {
        warn_unreadable(unreadable);
    }
    let (entry, history) = match ledger.get(&args.id).and_then(|e| {
        let h = ledger.history(&e.id)?;
        Ok((e, h))
    }) {
        Ok(v) => v,
        Err(e) => return failed(e),
    };
    if args.json {
        let value = json!({"entry": entry, "history": history});
        println!(
            "{}",
            codesmith_policy::json_terminal_safe(&value.to_string())
        );
        return Exit::Ok;
    }
    let e = &entry.entry;
    let mut text = format!("{}\n", line(&entry));
    for (label, value) in [
        ("description", e.description.as_str()),
        ("cleanup", e.cleanup.as_str()),
        ("owner", e.owner.as_deref().unwrap_or("")),
    ] {
        if !value.is_empty() {
            text.push_str(&format!("{label}: {value}\n"));
        }
    }
    for link in &e.source_links {
        text.push_str(&format!("source: {link}\n"));
    }
    for task in &e.linked_tasks {
        text.push_str(&format!("task: {task}\n"));
    }
    text.push_str("history:\n");
    for h in history_lines(&history) {
        text.push_str(&format!("  {h}\n"));
    }
    print!("{}", codesmith_policy::terminal_safe(&text));
    Exit::Ok
}

fn change(args: &SlopIdArgs, status: Status) -> Exit {
    with_ledger(args, |ledger| {
        match ledger.set_status(&args.id, status, &args.note, Author::User) {
            Ok(e) => {
                if args.json {
                    let text = serde_json::to_string(&e).unwrap_or_default();
                    println!("{}", codesmith_policy::json_terminal_safe(&text));
                } else {
                    println!("{} is now {}.", e.id, e.status.as_str());
                }
                Exit::Ok
            }
            Err(e) => failed(e),
        }
    })
}
