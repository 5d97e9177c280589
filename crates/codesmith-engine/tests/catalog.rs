//! The session catalogue: listing, the latest session of a workspace, headers and
//! recorded tasks, read from session files without opening or locking them.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codesmith_engine::Session;
use codesmith_engine::session::{
    CATALOG_PREFIX_BYTES, NoteKind, SessionCatalog, recorded_tasks, sessions_dir,
};
use codesmith_protocol::Message;

fn meta_line(id: &str, created: &str, workspace: &str, parent: Option<&str>) -> String {
    let parent = parent.map_or(String::new(), |p| {
        format!(
            r#","parent":{{"session_id":"{p}","call_id":"c1","agent_type":"explore","depth":1}}"#
        )
    });
    format!(
        r#"{{"type":"meta","session_id":"{id}","created_at":"{created}","workspace":"{workspace}","provider":"openai","model":"m-{id}"{parent}}}"#
    ) + "\n"
}

fn message_line(message: Message) -> String {
    serde_json::json!({ "type": "message", "message": message }).to_string() + "\n"
}

fn write_session(home: &Path, id: &str, lines: &[String]) -> PathBuf {
    let dir = sessions_dir(home);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{id}.jsonl"));
    std::fs::write(&path, lines.concat()).unwrap();
    path
}

#[test]
fn lists_newest_first_with_headers_first_lines_parents_and_unreadable_files() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    write_session(
        home,
        "s-old",
        &[
            meta_line("s-old", "2026-01-01T00:00:00Z", "/w", None),
            message_line(Message::user_text("fix the parser\nand more")),
        ],
    );
    write_session(
        home,
        "s-new",
        &[
            meta_line("s-new", "2026-03-01T00:00:00Z", "/w", None),
            message_line(Message::user_text("add a test")),
        ],
    );
    write_session(
        home,
        "s-child",
        &[
            meta_line("s-child", "2026-02-01T00:00:00Z", "/w", Some("s-old")),
            message_line(Message::user_text("look around")),
        ],
    );
    // Not session files, or not readable ones: reported, never a failed listing.
    let dir = sessions_dir(home);
    std::fs::write(dir.join("garbage.jsonl"), "not json at all\n").unwrap();
    std::fs::write(dir.join("s-old.jsonl.torn"), "{\"type\":").unwrap();
    std::fs::create_dir(dir.join("adir.jsonl")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.jsonl")).unwrap();

    let catalog = SessionCatalog::new(home).list();
    let ids: Vec<&str> = catalog
        .sessions
        .iter()
        .map(|s| s.meta.id.as_str())
        .collect();
    assert_eq!(ids, ["s-new", "s-child", "s-old"]);
    let old = &catalog.sessions[2];
    assert_eq!(old.meta.model, "m-s-old");
    assert_eq!(old.meta.workspace, "/w");
    assert_eq!(old.first_line.as_deref(), Some("fix the parser"));
    assert!(old.meta.is_foreground());
    assert!(old.bytes > 0 && old.updated.is_some());
    let child = &catalog.sessions[1];
    let parent = child.meta.parent.as_ref().unwrap();
    assert_eq!(
        (parent.session_id.as_str(), parent.agent_type.as_str()),
        ("s-old", "explore")
    );
    let unreadable: Vec<(&str, &str)> = catalog
        .unreadable
        .iter()
        .map(|u| (u.file.as_str(), u.reason.as_str()))
        .collect();
    assert_eq!(
        unreadable,
        [
            ("adir.jsonl", "not a regular file"),
            ("garbage.jsonl", "no readable session header"),
            ("zero.jsonl", "not a regular file"),
        ]
    );

    let meta = SessionCatalog::new(home).meta("s-child").unwrap();
    assert_eq!(meta.parent.unwrap().session_id, "s-old");
    assert_eq!(SessionCatalog::new(home).meta("../s-old"), None);
    assert_eq!(SessionCatalog::new(home).meta("garbage"), None);
    assert!(
        SessionCatalog::new(&home.join("nowhere"))
            .list()
            .sessions
            .is_empty()
    );
}

#[test]
fn the_latest_session_is_per_workspace_foreground_and_with_a_conversation() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let talk = |id: &str, ws: &str, parent: Option<&str>| {
        write_session(
            home,
            id,
            &[
                meta_line(id, "2026-01-01T00:00:00Z", ws, parent),
                message_line(Message::user_text("hi")),
            ],
        )
    };
    let set_mtime = |path: &Path, secs: u64| {
        let file = std::fs::File::options().append(true).open(path).unwrap();
        file.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    };
    set_mtime(&talk("a-1", "/w", None), 1_000);
    set_mtime(&talk("a-2", "/w", None), 2_000);
    set_mtime(&talk("b-1", "/other", None), 3_000);
    // Newer, but a subagent's session or one without a conversation: skipped.
    set_mtime(&talk("a-child", "/w", Some("a-1")), 4_000);
    let empty = write_session(
        home,
        "a-empty",
        &[meta_line("a-empty", "2026-01-01T00:00:00Z", "/w", None)],
    );
    set_mtime(&empty, 5_000);
    let catalog = SessionCatalog::new(home);
    assert_eq!(catalog.latest_for(Path::new("/w")).as_deref(), Some("a-2"));
    assert_eq!(
        catalog.latest_for(Path::new("/other")).as_deref(),
        Some("b-1")
    );
    assert_eq!(catalog.latest_for(Path::new("/none")), None);
}

/// A session file of older versions (task starts noted as `"turn"`) and one that
/// names them `"task"` both give their task count, and both still open.
#[test]
fn old_turn_notes_still_count_as_recorded_tasks() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let note = |kind: &str, n: u32| {
        format!(r#"{{"type":"note","kind":"{kind}","data":{{"turn":{n}}}}}"#) + "\n"
    };
    for (id, kind) in [("old", "turn"), ("named", "task")] {
        let path = write_session(
            home,
            id,
            &[
                meta_line(id, "2026-01-01T00:00:00Z", "/w", None),
                message_line(Message::user_text("one")),
                note(kind, 1),
                message_line(Message::assistant_text("done")),
                message_line(Message::user_text("two")),
                note(kind, 2),
                note("from_a_newer_version", 9),
                message_line(Message::assistant_text("done")),
            ],
        );
        assert_eq!(recorded_tasks(&path), 2, "{kind}");
        let mut session = Session::open(home, id).unwrap();
        assert_eq!(session.messages().len(), 4);
        assert!(session.take_notices().is_empty());
        session
            .note(NoteKind::TaskStart, serde_json::json!({ "task": 3 }))
            .unwrap();
        drop(session);
        assert_eq!(recorded_tasks(&path), 3, "{kind}");
        // Written under the task's own name.
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.ends_with("{\"type\":\"note\",\"kind\":\"task\",\"data\":{\"task\":3}}\n"),
            "{text}"
        );
    }
}

/// Listing reads a bounded prefix of each file: a 50 MB session lists as fast as a
/// small one, and its header and first task are found.
#[test]
fn a_huge_session_lists_fast() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let path = write_session(
        home,
        "huge",
        &[
            meta_line("huge", "2026-01-01T00:00:00Z", "/w", None),
            message_line(Message::user_text("the first task")),
        ],
    );
    let mut file = std::fs::File::options().append(true).open(&path).unwrap();
    let big = message_line(Message::assistant_text("x".repeat(1024 * 1024)));
    for _ in 0..50 {
        file.write_all(big.as_bytes()).unwrap();
    }
    drop(file);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 50 * 1024 * 1024);
    assert!(CATALOG_PREFIX_BYTES < size / 100);

    let started = Instant::now();
    let catalog = SessionCatalog::new(home);
    let listed = catalog.list();
    let latest = catalog.latest_for(Path::new("/w"));
    let took = started.elapsed();
    assert_eq!(listed.sessions[0].meta.id, "huge");
    assert_eq!(
        listed.sessions[0].first_line.as_deref(),
        Some("the first task")
    );
    assert_eq!(listed.sessions[0].bytes, size);
    assert_eq!(latest.as_deref(), Some("huge"));
    eprintln!("listed a {size}-byte session in {took:?}");
    assert!(took < Duration::from_millis(500), "{took:?}");
}
