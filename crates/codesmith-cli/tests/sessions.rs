//! `codesmith sessions list|restore` end to end: a session and a snapshot
//! made through the engine library, the binary restoring them.

#![allow(clippy::unwrap_used)]

mod common;

use codesmith_engine::Session;
use codesmith_engine::snapshot;

use common::codesmith;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_asks_refuses_without_a_terminal_and_restores_with_yes() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    std::fs::write(ws.join("a.txt"), "old\n").unwrap();
    let session = Session::create(&home, &ws, "openai", "m").unwrap();
    let id = session.id().to_string();
    drop(session);
    snapshot::take(&home, &ws, &id, 1).await.unwrap();
    std::fs::write(ws.join("a.txt"), "new\n").unwrap();
    std::fs::write(ws.join("b.txt"), "created\n").unwrap();

    let list = codesmith(&home, &["sessions", "list"]).await;
    assert!(list.status.success());
    assert!(String::from_utf8_lossy(&list.stdout).contains(&id));

    // stdin is not a terminal: refused, nothing changed.
    let out = codesmith(&home, &["sessions", "restore", &id, "1"]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--yes") && stderr.contains("a.txt"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "new\n");

    let out = codesmith(&home, &["sessions", "restore", &id, "1", "--yes"]).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "old\n");
    assert!(!ws.join("b.txt").exists());
    let transcript =
        std::fs::read_to_string(home.join("sessions").join(format!("{id}.jsonl"))).unwrap();
    assert!(transcript.contains(r#""kind":"restore""#), "{transcript}");

    // An unknown turn names the ones that exist; a bad id is refused.
    let out = codesmith(&home, &["sessions", "restore", &id, "7", "--yes"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("turns 1"));
    let out = codesmith(&home, &["sessions", "restore", "../etc", "1", "--yes"]).await;
    assert_eq!(out.status.code(), Some(2));
}
