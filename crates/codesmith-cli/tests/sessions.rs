//! `codesmith sessions list|restore` end to end: a session and a snapshot
//! made through the engine library, the binary restoring them.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use codesmith_engine::Session;
use codesmith_engine::snapshot;

use common::codesmith;

/// A session whose task 1 snapshot holds `a.txt = old`, with the workspace changed
/// since (`a.txt = new`, `b.txt` created). Returns (tempdir, home, workspace, session id).
async fn changed_since_task_one() -> (tempfile::TempDir, PathBuf, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    std::fs::write(ws.join("a.txt"), "old\n").unwrap();
    let mut session = Session::create(&home, &ws, "openai", "m").unwrap();
    session
        .push(codesmith_protocol::Message::user_text("change a.txt"))
        .unwrap();
    let id = session.id().to_string();
    drop(session);
    snapshot::take(&home, &ws, &id, 1).await.unwrap();
    std::fs::write(ws.join("a.txt"), "new\n").unwrap();
    std::fs::write(ws.join("b.txt"), "created\n").unwrap();
    (dir, home, ws, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_asks_refuses_without_a_terminal_and_restores_with_yes() {
    let (_dir, home, ws, id) = changed_since_task_one().await;

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

    // An unknown task names the ones that exist; a bad id is refused.
    let out = codesmith(&home, &["sessions", "restore", &id, "7", "--yes"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tasks 1"));
    let out = codesmith(&home, &["sessions", "restore", "../etc", "1", "--yes"]).await;
    assert_eq!(out.status.code(), Some(2));
}

/// Typed from a terminal but with stderr redirected, the question would be invisible:
/// restore must not wait for an answer nobody can give. `script` gives the command a
/// terminal as stdin, the way a person running the tests in a terminal does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_never_waits_on_a_prompt_nobody_can_see() {
    let has_script = std::process::Command::new("script")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_script {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return;
    }
    let (dir, home, ws, id) = changed_since_task_one().await;
    let err_path = dir.path().join("stderr.txt");
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let inner = format!(
        "{} sessions restore {id} 1 2>{}",
        quote(env!("CARGO_BIN_EXE_codesmith")),
        quote(&err_path.display().to_string())
    );
    let mut cmd = tokio::process::Command::new("script");
    cmd.args(["-qec", &inner, "/dev/null"])
        .env("CODESMITH_HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true);
    let status = tokio::time::timeout(Duration::from_secs(30), cmd.status())
        .await
        .expect("restore waited on a prompt")
        .unwrap();
    let stderr = std::fs::read_to_string(&err_path).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
    assert!(!stderr.contains("[y/N]"), "{stderr}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "new\n");
}

/// `sessions list` never drops a session file without a word: an unreadable file and a
/// session with a torn tail are named on stderr (and in `--json`), with what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_names_unreadable_files_and_torn_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut session = Session::create(&home, &ws.canonicalize().unwrap(), "openai", "m").unwrap();
    // A session file is created with its first message.
    session
        .push(codesmith_protocol::Message::user_text("hi"))
        .unwrap();
    let id = session.id().to_string();
    drop(session);
    let sessions = home.join("sessions");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(sessions.join(format!("{id}.jsonl")))
        .unwrap();
    std::io::Write::write_all(&mut file, b"{\"type\":\"message\",\"mess").unwrap();
    std::fs::write(sessions.join("broken.jsonl"), b"\xff\xfe not a session\n").unwrap();

    let text = codesmith(&home, &["sessions", "list"]).await;
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains(&id));
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(
        stderr.contains("1 session file(s)") && stderr.contains("broken.jsonl"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{id} (an incomplete last record of 23 bytes)"))
            && stderr.contains("ID.jsonl.torn"),
        "{stderr}"
    );

    let json = codesmith(&home, &["sessions", "list", "--json"]).await;
    assert!(json.status.success());
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["sessions"][0]["id"], id.as_str());
    assert_eq!(value["sessions"][0]["torn_bytes"], 23);
    assert_eq!(value["unreadable"][0]["file"], "broken.jsonl");
    assert_eq!(
        value["unreadable"][0]["reason"],
        "no readable session header"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_with_nothing_to_resume_says_so_before_any_model_setup() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(home.join("sessions")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    // Only a file that is no session: there is nothing to resume.
    std::fs::write(
        home.join("sessions/broken.jsonl"),
        b"\xff\xfe not a session\n",
    )
    .unwrap();
    // A model the provider setup refuses: the answer must be about the session, not it.
    let ws = ws.to_str().unwrap();
    let out = codesmith(
        &home,
        &[
            "resume",
            "-w",
            ws,
            "--provider",
            "local",
            "-m",
            "/nonexistent.gguf",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no session to resume"), "{stderr}");
}

#[tokio::test]
async fn the_list_shows_each_sessions_model_and_the_first_line_of_its_task() {
    let sb = common::Sandbox::new();
    let server = codesmith_testkit::ScriptedServer::start().await;
    server.push(codesmith_testkit::Scripted::text("Done."));
    let args = common::exec_args(
        &sb.ws(),
        &server.base_url(),
        "suggest",
        &["Rename the add helper\nand keep its tests green"],
    );
    let out = codesmith(&sb.home(), &args).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let list = codesmith(&sb.home(), &["sessions", "list"]).await;
    let table = String::from_utf8_lossy(&list.stdout);
    let header = table.lines().next().unwrap();
    assert!(
        header.contains("MODEL") && header.contains("TASK"),
        "{table}"
    );
    let row = table.lines().nth(1).unwrap();
    assert!(row.contains("openai/scripted"), "{table}");
    assert!(row.contains("Rename the add helper"), "{table}");
    assert!(
        !row.contains("keep its tests green"),
        "only the first line: {table}"
    );
}
