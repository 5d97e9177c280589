//! `codesmith sessions list` and `codesmith sessions restore SESSION TASK`.
//!
//! A restore puts the workspace back as it was before a task, from the side
//! repository snapshots (`codesmith_engine::snapshot`); it asks first, and
//! the restore is recorded in the session's transcript.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use codesmith_engine::Session;
use codesmith_engine::session::{
    CatalogEntry, Record, SessionCatalog, SessionError, Unreadable, sessions_dir,
};
use codesmith_engine::snapshot::{SnapshotError, SnapshotSettings, restore_task};
use codesmith_protocol::RestoreReport;
use serde::Serialize;

use crate::args::SessionsCommand;
use crate::config;
use crate::exit::{Exit, usage};

/// At most this many paths are printed per kind of change.
const SHOWN_PATHS: usize = 20;

/// Runs `codesmith sessions ...`.
pub(crate) async fn run(command: SessionsCommand) -> Exit {
    match command {
        SessionsCommand::List { json } => list(json),
        SessionsCommand::Restore {
            session,
            task,
            workspace,
            yes,
        } => restore(&session, task, workspace.workspace.as_deref(), yes).await,
    }
}

/// One line of `sessions list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Summary {
    /// Session id.
    pub id: String,
    /// RFC 3339 creation time.
    pub created: String,
    /// The workspace the session worked on.
    pub workspace: String,
    /// Provider and model the session was created with (`openai/gpt-4.1-mini`).
    pub model: String,
    /// The first line of the session's first task, when it lies within the part of
    /// the file the catalogue reads ([`codesmith_engine::session::CATALOG_PREFIX_BYTES`]).
    pub first_line: Option<String>,
    /// Transcript messages appended to the file.
    pub messages: usize,
    /// 1-based numbers of lines that are not valid UTF-8 or not valid records; resuming
    /// the session skips them with a notice.
    pub skipped_lines: Vec<usize>,
    /// Bytes of an incomplete last record (a crash mid-write); resuming the session cuts
    /// them back and keeps them in `ID.jsonl.torn`.
    pub torn_bytes: usize,
    /// Prompt tokens over the session's model rounds (cached ones included).
    pub input_tokens: u64,
    /// Of those, tokens read from the provider's prompt cache.
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache.
    pub cache_write_input_tokens: u64,
    /// `cached_input_tokens / input_tokens`, 0.0 to 1.0 (0 without input).
    pub cache_hit_ratio: f64,
    /// For a subagent's session: the session that started it (`null` for a session a
    /// person started). `--continue` and the UI's `/sessions` skip such sessions.
    pub parent: Option<String>,
    /// For a subagent's session: its type (`explore`, `plan`, `review`, `general`).
    pub agent_type: Option<String>,
}

impl Summary {
    /// True for a session a person started (not a subagent's).
    pub(crate) fn is_foreground(&self) -> bool {
        self.parent.is_none()
    }
}

/// What `sessions list` shows: the sessions, newest first, and the session files that
/// could not be read. Nothing in the directory is dropped without a word.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Listing {
    /// The sessions, newest first.
    pub sessions: Vec<Summary>,
    /// Session files that could not be read.
    pub unreadable: Vec<Unreadable>,
}

fn list(json: bool) -> Exit {
    let home = match config::home_dir() {
        Ok(h) => h,
        Err(e) => return usage(e),
    };
    let listing = listing(&home);
    if json {
        match serde_json::to_string(&listing) {
            Ok(text) => println!("{}", codesmith_policy::json_terminal_safe(&text)),
            Err(e) => return Exit::failed(e.into()),
        }
        return Exit::Ok;
    }
    let dir = sessions_dir(&home);
    if listing.sessions.is_empty() {
        println!("no sessions under {}", dir.display());
    } else {
        // First lines of tasks and models' names are quoted: shown, never acted on.
        print!(
            "{}",
            codesmith_policy::terminal_safe(&table(&listing.sessions))
        );
    }
    for notice in notices(&listing, &dir) {
        eprintln!("codesmith: {}", codesmith_policy::terminal_safe(&notice));
    }
    Exit::Ok
}

/// The sessions under `home` (the engine's [`SessionCatalog`]) with what a full
/// read of each file adds (messages, usage, damage), and the session files that
/// could not be read. The full read streams the file; see
/// [`codesmith_engine::session::check_session_file`].
pub(crate) fn listing(home: &Path) -> Listing {
    let catalog = SessionCatalog::new(home).list();
    let mut listing = Listing {
        sessions: Vec::with_capacity(catalog.sessions.len()),
        unreadable: catalog.unreadable,
    };
    for entry in catalog.sessions {
        match summary(entry) {
            Ok(s) => listing.sessions.push(s),
            Err(unreadable) => listing.unreadable.push(unreadable),
        }
    }
    listing.unreadable.sort_by(|a, b| a.file.cmp(&b.file));
    listing
}

fn summary(entry: CatalogEntry) -> Result<Summary, Unreadable> {
    let check =
        codesmith_engine::session::check_session_file(&entry.path).map_err(|e| Unreadable {
            file: format!("{}.jsonl", entry.meta.id),
            reason: e.to_string(),
        })?;
    let meta = entry.meta;
    Ok(Summary {
        id: meta.id,
        created: meta.created_at,
        workspace: meta.workspace,
        model: format!("{}/{}", meta.provider, meta.model),
        first_line: entry.first_line,
        messages: check.messages,
        skipped_lines: check.skipped_lines,
        torn_bytes: check.torn_bytes,
        input_tokens: check.usage.input_tokens,
        cached_input_tokens: check.usage.cached_input_tokens,
        cache_write_input_tokens: check.usage.cache_write_input_tokens,
        cache_hit_ratio: check.usage.cache_hit_ratio(),
        agent_type: meta.parent.as_ref().map(|p| p.agent_type.clone()),
        parent: meta.parent.map(|p| p.session_id),
    })
}

/// What the listing left out or found damaged, each with what to do.
pub(crate) fn notices(listing: &Listing, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if !listing.unreadable.is_empty() {
        let files: Vec<String> = listing
            .unreadable
            .iter()
            .map(|u| format!("{} ({})", one_line(&u.file), u.reason))
            .collect();
        out.push(format!(
            "{} session file(s) in {} could not be read and are not listed: {}. They were left \
             as they are and cannot be resumed; look at them, then move them out of that \
             directory to clear this notice.",
            files.len(),
            dir.display(),
            files.join(", ")
        ));
    }
    let damaged: Vec<String> = listing
        .sessions
        .iter()
        .filter_map(|s| {
            let mut what = Vec::new();
            if !s.skipped_lines.is_empty() {
                let lines: Vec<String> = s.skipped_lines.iter().map(usize::to_string).collect();
                what.push(format!(
                    "{} unreadable line(s): {}",
                    lines.len(),
                    lines.join(", ")
                ));
            }
            if s.torn_bytes > 0 {
                what.push(format!(
                    "an incomplete last record of {} bytes",
                    s.torn_bytes
                ));
            }
            (!what.is_empty()).then(|| format!("{} ({})", s.id, what.join("; ")))
        })
        .collect();
    if !damaged.is_empty() {
        out.push(format!(
            "{} session(s) have lines that cannot be read: {}. Resuming one (codesmith exec \
             --resume ID, or /resume ID in the UI) skips unreadable lines with a notice and \
             cuts an incomplete last record back, keeping the cut bytes in ID.jsonl.torn.",
            damaged.len(),
            damaged.join(", ")
        ));
    }
    out
}

/// A field read from a session file or its name, shown on one line with every
/// control visible (a `\n` in a file name cannot forge a row of its own).
fn one_line(text: &str) -> String {
    codesmith_policy::visible_line(text, 4096)
}

/// Longest first line of a task the table shows, in characters.
const TASK_CHARS: usize = 50;

/// The table `sessions list` prints: id, creation time, model, messages, the first line
/// of the session's first task, and its workspace.
fn table(sessions: &[Summary]) -> String {
    let widest = |f: &dyn Fn(&Summary) -> usize, min: usize| {
        sessions.iter().map(f).max().unwrap_or(min).max(min)
    };
    let task = |s: &Summary| {
        s.first_line.as_deref().map_or_else(
            || "-".to_string(),
            |l| codesmith_policy::visible_line(l, TASK_CHARS),
        )
    };
    let width = widest(&|s| s.id.len(), 2);
    let model_width = widest(&|s| one_line(&s.model).chars().count(), 5);
    let task_width = widest(&|s| task(s).chars().count(), 4);
    let mut out = format!(
        "{:<width$}  {:<20}  {:<model_width$}  {:>8}  {:<task_width$}  WORKSPACE\n",
        "ID", "CREATED", "MODEL", "MESSAGES", "TASK"
    );
    for s in sessions {
        // A subagent's session says whose it is: it is read through its parent.
        let child = match (&s.parent, &s.agent_type) {
            (Some(parent), Some(kind)) => {
                format!("  ({} subagent of {})", one_line(kind), one_line(parent))
            }
            _ => String::new(),
        };
        out.push_str(&format!(
            "{:<width$}  {:<20}  {:<model_width$}  {:>8}  {:<task_width$}  {}{child}\n",
            s.id,
            one_line(&s.created),
            one_line(&s.model),
            s.messages,
            task(s),
            one_line(&s.workspace)
        ));
    }
    out
}

async fn restore(id: &str, task: u32, workspace: Option<&Path>, yes: bool) -> Exit {
    if !codesmith_policy::is_safe_name(id) {
        return usage(anyhow!(
            "invalid session id {id:?}: use an id from `codesmith sessions list`"
        ));
    }
    let home = match config::home_dir() {
        Ok(h) => h,
        Err(e) => return usage(e),
    };
    let mut session = match Session::open(&home, id) {
        Ok(s) => s,
        // Both messages already name `codesmith sessions list` as the next step.
        Err(e @ (SessionError::InvalidId(_) | SessionError::NotFound(..))) => {
            return usage(anyhow!("{e}"));
        }
        Err(e) => return Exit::failed(e.into()),
    };
    let workspace = match restore_workspace(&session, workspace) {
        Ok(w) => w,
        Err(e) => return usage(e),
    };
    // The engine's one restore path. Of the snapshot settings only `enabled` has a config
    // key, and it governs taking snapshots, not restoring them: the defaults (git from
    // PATH, its timeout) are what every engine uses too.
    let settings = SnapshotSettings::default();
    let plan = match restore_task(&settings, &home, &mut session, &workspace, task, false).await {
        Ok(p) => p,
        Err(e) => return snapshot_exit(e),
    };
    if plan.is_empty() {
        println!(
            "{} already matches the state before task {task}; nothing to restore.",
            workspace.display()
        );
        return Exit::Ok;
    }
    eprint!(
        "{}",
        codesmith_policy::terminal_safe(&describe(&plan, &workspace))
    );
    let stdin = std::io::stdin();
    // Asking needs someone who sees the question (stderr) and can answer it (stdin).
    let tty = stdin.is_terminal() && std::io::stderr().is_terminal();
    match confirm(yes, tty, &mut stdin.lock(), &mut std::io::stderr()) {
        Ok(true) => {}
        Ok(false) => return Exit::failed(anyhow!("restore cancelled; nothing was changed")),
        Err(e) => return usage(e),
    }
    match restore_task(&settings, &home, &mut session, &workspace, task, true).await {
        Ok(report) => {
            println!(
                "{}",
                codesmith_policy::terminal_safe(&done_line(&report, &workspace))
            );
            Exit::Ok
        }
        Err(e) => snapshot_exit(e),
    }
}

/// `--workspace` when given, else the workspace recorded in the session.
fn restore_workspace(session: &Session, arg: Option<&Path>) -> anyhow::Result<PathBuf> {
    if arg.is_some() {
        return config::workspace(arg);
    }
    let Record::Meta { workspace, .. } = session.meta() else {
        return Err(anyhow!(
            "the session has no workspace recorded; pass --workspace DIR"
        ));
    };
    config::workspace(Some(Path::new(workspace)))
        .context("the session's workspace is gone; pass --workspace DIR")
}

fn snapshot_exit(e: SnapshotError) -> Exit {
    match e {
        SnapshotError::NoSnapshot { .. } | SnapshotError::InvalidSession(_) => usage(e.into()),
        other => Exit::failed(other.into()),
    }
}

/// Whether to go ahead: `--yes`, or a "y"/"yes" typed on a terminal.
///
/// `tty` says whether a person can see the prompt and answer it (stdin and stderr are
/// both terminals). Without one, and without `--yes`, it never asks: it returns an error
/// naming `--yes`. An input closed before any answer is the same error, not a "no".
pub(crate) fn confirm(
    yes: bool,
    tty: bool,
    input: &mut dyn BufRead,
    prompt: &mut dyn Write,
) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    if !tty {
        return Err(anyhow!(
            "refusing to restore without confirmation: nobody can answer a prompt here (stdin or stderr is not a terminal); re-run with --yes to restore"
        ));
    }
    write!(prompt, "Restore these files? [y/N] ")?;
    prompt.flush()?;
    let mut answer = String::new();
    if input.read_line(&mut answer)? == 0 {
        return Err(anyhow!(
            "refusing to restore without confirmation: stdin closed before an answer; re-run with --yes to restore"
        ));
    }
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// The change list shown before asking.
pub(crate) fn describe(plan: &RestoreReport, workspace: &Path) -> String {
    let mut out = format!(
        "Restoring {} to its state before task {} of session {}:\n",
        workspace.display(),
        plan.task,
        plan.session
    );
    for (label, paths) in [
        ("changed since, rewritten", &plan.restored),
        ("created since, removed", &plan.removed),
        ("deleted since, brought back", &plan.recreated),
    ] {
        if paths.is_empty() {
            continue;
        }
        out.push_str(&format!("  {} file(s) {label}:\n", paths.len()));
        for path in paths.iter().take(SHOWN_PATHS) {
            out.push_str(&format!("    {path}\n"));
        }
        if paths.len() > SHOWN_PATHS {
            out.push_str(&format!("    … and {} more\n", paths.len() - SHOWN_PATHS));
        }
    }
    out.push_str("Ignored files (.gitignore) are left as they are.\n");
    out
}

fn done_line(report: &RestoreReport, workspace: &Path) -> String {
    let mut line = format!(
        "Restored {} to before task {} of session {}: {} rewritten, {} removed, {} brought back.",
        workspace.display(),
        report.task,
        report.session,
        report.restored.len(),
        report.removed.len(),
        report.recreated.len()
    );
    if let Some(backup) = &report.backup {
        line.push_str(&format!(
            " The state before the restore is kept in the snapshot repository as commit {backup}."
        ));
    }
    line
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn confirmation_needs_yes_or_a_terminal_answer() {
        let mut sink = Vec::new();
        assert!(confirm(true, false, &mut &b""[..], &mut sink).unwrap());
        let err = confirm(false, false, &mut &b"y\n"[..], &mut sink).unwrap_err();
        assert!(err.to_string().contains("--yes"), "{err}");
        assert!(confirm(false, true, &mut &b"yes\n"[..], &mut sink).unwrap());
        assert!(!confirm(false, true, &mut &b"\n"[..], &mut sink).unwrap());
        assert!(!confirm(false, true, &mut &b"nope\n"[..], &mut sink).unwrap());
        let err = confirm(false, true, &mut &b""[..], &mut sink).unwrap_err();
        assert!(err.to_string().contains("--yes"), "{err}");
        assert!(String::from_utf8(sink).unwrap().contains("[y/N]"));
    }

    #[test]
    fn sessions_are_listed_newest_first_with_message_counts() {
        let home = tempfile::tempdir().unwrap();
        let dir = sessions_dir(home.path());
        std::fs::create_dir_all(&dir).unwrap();
        let meta = |id: &str, at: &str| {
            format!(
                r#"{{"type":"meta","session_id":"{id}","created_at":"{at}","workspace":"/w","provider":"openai","model":"m"}}"#
            )
        };
        let msg = r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#;
        let note = r#"{"type":"note","kind":"turn","data":{"turn":1}}"#;
        let usage = |input: u64, cached: u64| {
            format!(
                r#"{{"type":"note","kind":"usage","data":{{"turn":1,"usage":{{"input_tokens":{input},"output_tokens":5,"cached_input_tokens":{cached},"cache_write_input_tokens":7}}}}}}"#
            )
        };
        std::fs::write(
            dir.join("old.jsonl"),
            format!(
                "{}\n{msg}\nnot a record\n{note}\n{}\n{msg}\n{}\n",
                meta("old", "2026-01-01T00:00:00Z"),
                usage(1000, 0),
                usage(3000, 2000)
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("new.jsonl"),
            format!(
                "{}\n{{\"type\":\"mess\n",
                meta("new", "2026-02-01T00:00:00Z")
            ),
        )
        .unwrap();
        std::fs::write(dir.join("junk.jsonl"), "not json\n").unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.jsonl")).unwrap();
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        std::fs::write(dir.join("old.jsonl.torn"), "{\"ty").unwrap();
        let listing = listing(home.path());
        let list = &listing.sessions;
        let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["new", "old"]);
        assert_eq!(list[0].messages, 0);
        assert_eq!(list[1].messages, 2);
        // Nothing is dropped without a word: the torn tail of "new" and the two session
        // files that cannot be read are reported, with what to do.
        assert_eq!(list[0].torn_bytes, "{\"type\":\"mess\n".len());
        assert_eq!(
            (list[1].skipped_lines.as_slice(), list[1].torn_bytes),
            (&[3][..], 0)
        );
        let files: Vec<&str> = listing.unreadable.iter().map(|u| u.file.as_str()).collect();
        assert_eq!(files, ["junk.jsonl", "zero.jsonl"]);
        assert_eq!(listing.unreadable[1].reason, "not a regular file");
        let notices = notices(&listing, &dir);
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(
            notices[0].starts_with("2 session file(s)")
                && notices[0].contains("junk.jsonl (no readable session header)"),
            "{notices:?}"
        );
        assert!(
            notices[1].starts_with("2 session(s) have lines that cannot be read")
                && notices[1].contains("new (an incomplete last record of 14 bytes)")
                && notices[1].contains("old (1 unreadable line(s): 3)")
                && notices[1].contains("ID.jsonl.torn"),
            "{notices:?}"
        );
        let json = serde_json::to_value(&listing).unwrap();
        assert_eq!(json["unreadable"][0]["file"], "junk.jsonl");
        assert_eq!(json["sessions"][0]["torn_bytes"], 14);
        assert_eq!(
            (
                list[1].input_tokens,
                list[1].cached_input_tokens,
                list[1].cache_write_input_tokens
            ),
            (4000, 2000, 14)
        );
        assert_eq!(list[1].cache_hit_ratio, 0.5);
        assert_eq!(list[0].cache_hit_ratio, 0.0);
        let text = table(list);
        assert!(text.starts_with("ID "), "{text}");
        assert!(text.contains("2026-01-01T00:00:00Z"), "{text}");
    }

    #[test]
    fn the_description_caps_long_lists() {
        let plan = RestoreReport {
            session: "s".into(),
            task: 2,
            commit: "c".into(),
            restored: (0..25).map(|i| format!("f{i}")).collect(),
            removed: vec!["new.txt".into()],
            recreated: Vec::new(),
            backup: None,
        };
        let text = describe(&plan, Path::new("/w"));
        assert!(text.contains("25 file(s) changed since"), "{text}");
        assert!(text.contains("… and 5 more"), "{text}");
        assert!(text.contains("new.txt"));
        assert!(!text.contains("brought back"));
    }

    /// Whatever a session file's header or name holds, the table and the
    /// notices keep each entry on its own line with every control visible: a
    /// newline cannot forge a row, an escape cannot drive the terminal.
    #[test]
    fn header_fields_and_file_names_cannot_forge_lines() {
        let home = tempfile::tempdir().unwrap();
        let dir = sessions_dir(home.path());
        std::fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({
            "type": "meta",
            "session_id": "lies",
            "created_at": "2026-01-01T00:00:00Z\nFAKE",
            "workspace": "/w\nroot  2026-01-01T00:00:00Z  99  /\u{1b}[2J",
            "provider": "p",
            "model": "m",
        });
        std::fs::write(dir.join("lies.jsonl"), format!("{meta}\n")).unwrap();
        std::fs::write(dir.join("y\nFAKE  2026  9  x.jsonl"), "").unwrap();
        let listing = listing(home.path());
        let shown = table(&listing.sessions);
        assert_eq!(shown.lines().count(), 2, "{shown}");
        assert!(
            shown.contains("/w\\nroot") && shown.contains("\\u{1b}[2J"),
            "{shown}"
        );
        let notices = notices(&listing, &dir);
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(!notices[0].contains('\n'), "{notices:?}");
        assert!(notices[0].contains("y\\nFAKE"), "{notices:?}");
    }
}
