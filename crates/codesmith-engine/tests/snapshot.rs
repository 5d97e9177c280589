//! Task snapshots and rollback: the side repository round trip against a
//! real user git repository, and the engine hook driven through the scripted
//! model server.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use codesmith_engine::session::recorded_tasks;
use codesmith_engine::snapshot::{SideRepo, SnapshotError, SnapshotSettings};
use codesmith_engine::{Engine, Session};
use codesmith_protocol::Event;
use codesmith_testkit::{Scripted, ScriptedServer};

fn git(ws: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(ws)
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args([
            "-c",
            "commit.gpgSign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Every file under `dir` with its bytes, sorted by path.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn write(ws: &Path, rel: &str, content: &str) {
    let path = ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn read(ws: &Path, rel: &str) -> String {
    std::fs::read_to_string(ws.join(rel)).unwrap()
}

struct Dirs {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let home = tmp.path().join("home");
    Dirs {
        _tmp: tmp,
        ws,
        home,
    }
}

/// A user repository with a commit, an untracked file and ignored files.
fn user_repo(ws: &Path) {
    git(ws, &["init", "-q"]);
    write(ws, ".gitignore", "*.log\ntarget/\n");
    write(ws, "src/a.txt", "a1\n");
    write(ws, "b.txt", "b1\n");
    write(ws, "keep.txt", "k1\n");
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "init"]);
    write(ws, "untracked.txt", "u1\n");
    write(ws, "debug.log", "log1\n");
    write(ws, "target/out.bin", "bin1\n");
}

#[tokio::test]
async fn a_round_trip_restores_edits_creations_and_deletions_and_leaves_the_users_git_alone() {
    let d = dirs();
    user_repo(&d.ws);
    let git_before = tree(&d.ws.join(".git"));
    let status_before = git(&d.ws, &["--no-optional-locks", "status", "--porcelain"]);
    let head_before = git(&d.ws, &["rev-parse", "HEAD"]);

    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    let snap = repo.take("s-1", 1).await.unwrap();
    assert_eq!(snap.reference, "refs/codesmith/s-1/1");
    assert!(repo.dir().starts_with(d.home.join("snapshots")));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(repo.dir()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "the side repository is private");
    }

    // What the agent does during the task.
    write(&d.ws, "src/a.txt", "a2 broken\n");
    std::fs::remove_file(d.ws.join("b.txt")).unwrap();
    std::fs::remove_file(d.ws.join("untracked.txt")).unwrap();
    write(&d.ws, "new/dir/c.txt", "created\n");
    write(&d.ws, "debug.log", "log2\n");
    write(&d.ws, "fresh.log", "ignored and new\n");

    let preview = repo.preview("s-1", 1).await.unwrap();
    assert_eq!(preview.restored, ["debug.log", "src/a.txt"]);
    assert_eq!(preview.removed, ["fresh.log", "new/dir/c.txt"]);
    assert_eq!(preview.recreated, ["b.txt", "untracked.txt"]);
    assert_eq!(preview.backup, None);
    assert_eq!(
        read(&d.ws, "src/a.txt"),
        "a2 broken\n",
        "a preview changed the workspace"
    );

    let report = repo.restore("s-1", 1).await.unwrap();
    assert_eq!(report.restored, preview.restored);
    assert!(report.backup.is_some());
    assert_eq!(read(&d.ws, "src/a.txt"), "a1\n");
    assert_eq!(read(&d.ws, "b.txt"), "b1\n");
    assert_eq!(read(&d.ws, "untracked.txt"), "u1\n");
    assert_eq!(read(&d.ws, "keep.txt"), "k1\n");
    assert!(!d.ws.join("new/dir/c.txt").exists());
    assert!(
        !d.ws.join("new").exists(),
        "emptied directories stay behind"
    );
    // Small ignored files are captured like the rest; build output is left alone.
    assert_eq!(read(&d.ws, "debug.log"), "log1\n");
    assert!(!d.ws.join("fresh.log").exists());
    assert_eq!(read(&d.ws, "target/out.bin"), "bin1\n");

    // The user's repository: same HEAD, same status, not one byte of .git changed.
    assert_eq!(git(&d.ws, &["rev-parse", "HEAD"]), head_before);
    assert_eq!(
        git(&d.ws, &["--no-optional-locks", "status", "--porcelain"]),
        status_before
    );
    assert!(
        tree(&d.ws.join(".git")) == git_before,
        "the user's .git changed"
    );

    // Restoring again is a no-op.
    assert!(repo.preview("s-1", 1).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_restore_is_byte_exact_despite_eol_attributes() {
    let d = dirs();
    write(&d.ws, ".gitattributes", "* text eol=crlf\n");
    write(&d.ws, "lf.txt", "one\ntwo\n");
    std::fs::write(d.ws.join("crlf.txt"), b"x\r\ny\r\n").unwrap();
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    repo.take("s", 3).await.unwrap();
    write(&d.ws, "lf.txt", "changed\n");
    std::fs::write(d.ws.join("crlf.txt"), b"changed").unwrap();
    repo.restore("s", 3).await.unwrap();
    assert_eq!(std::fs::read(d.ws.join("lf.txt")).unwrap(), b"one\ntwo\n");
    assert_eq!(std::fs::read(d.ws.join("crlf.txt")).unwrap(), b"x\r\ny\r\n");
}

#[tokio::test]
async fn the_backup_of_a_restore_can_be_restored_too() {
    let d = dirs();
    write(&d.ws, "f.txt", "before\n");
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    repo.take("s", 1).await.unwrap();
    write(&d.ws, "f.txt", "after\n");
    let report = repo.restore("s", 1).await.unwrap();
    assert_eq!(read(&d.ws, "f.txt"), "before\n");
    let side = repo.dir().to_path_buf();
    let out = Command::new("git")
        .env("GIT_DIR", &side)
        .args(["cat-file", "-p"])
        .arg(format!("{}:f.txt", report.backup.unwrap()))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"after\n");
}

#[tokio::test]
async fn unknown_tasks_and_bad_ids_are_typed_errors() {
    let d = dirs();
    write(&d.ws, "f.txt", "x\n");
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    assert!(matches!(
        repo.restore("s", 1).await,
        Err(SnapshotError::NoSnapshot { ref available, .. }) if available.is_empty()
    ));
    repo.take("s", 2).await.unwrap();
    repo.take("s", 5).await.unwrap();
    let err = repo.restore("s", 4).await.unwrap_err();
    assert!(err.to_string().contains("tasks 2, 5"), "{err}");
    assert_eq!(repo.tasks("s").await.unwrap(), [2, 5]);
    assert!(repo.tasks("other").await.unwrap().is_empty());
    for bad in ["../x", "a/b", ".hidden", ""] {
        assert!(
            matches!(
                repo.take(bad, 1).await,
                Err(SnapshotError::InvalidSession(_))
            ),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_missing_git_is_reported_not_panicked() {
    let d = dirs();
    write(&d.ws, "f.txt", "x\n");
    let settings = SnapshotSettings {
        git: PathBuf::from("/nonexistent/codesmith-no-git"),
        ..SnapshotSettings::default()
    };
    let err = SideRepo::new(&settings, &d.home, &d.ws)
        .take("s", 1)
        .await
        .unwrap_err();
    assert!(matches!(err, SnapshotError::GitMissing { .. }), "{err}");
    assert!(err.to_string().contains("install git"));
}

#[tokio::test]
async fn a_home_inside_the_workspace_is_not_snapshotted() {
    let d = dirs();
    write(&d.ws, "f.txt", "x\n");
    let home = d.ws.join(".codesmith-home");
    let repo = SideRepo::new(&SnapshotSettings::default(), &home, &d.ws);
    repo.take("s", 1).await.unwrap();
    repo.take("s", 2).await.unwrap();
    write(&d.ws, "f.txt", "y\n");
    let report = repo.preview("s", 2).await.unwrap();
    assert_eq!(report.restored, ["f.txt"]);
    assert!(report.removed.is_empty(), "{report:?}");
}

#[tokio::test]
async fn ignore_rules_above_a_sub_directory_workspace_are_honoured() {
    let d = dirs();
    git(&d.ws, &["init", "-q"]);
    write(&d.ws, ".gitignore", "node_modules/\n/pkg/dist/\n");
    let sub = d.ws.join("pkg");
    write(&sub, "index.js", "v1\n");
    write(&sub, "node_modules/dep/x.js", "dep\n");
    write(&sub, "dist/out.js", "built\n");
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &sub);
    repo.take("s", 1).await.unwrap();
    std::fs::remove_dir_all(sub.join("node_modules")).unwrap();
    write(&sub, "dist/out.js", "rebuilt\n");
    write(&sub, "index.js", "v2\n");
    let report = repo.restore("s", 1).await.unwrap();
    assert_eq!(report.restored, ["index.js"]);
    assert!(report.recreated.is_empty(), "{report:?}");
    assert!(!sub.join("node_modules").exists());
    assert_eq!(read(&sub, "dist/out.js"), "rebuilt\n");
}

#[tokio::test]
async fn a_directory_replaced_by_a_file_comes_back() {
    let d = dirs();
    write(&d.ws, "dir/x.txt", "x\n");
    write(&d.ws, "plain", "file\n");
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    repo.take("s", 1).await.unwrap();
    std::fs::remove_dir_all(d.ws.join("dir")).unwrap();
    write(&d.ws, "dir", "now a file\n");
    std::fs::remove_file(d.ws.join("plain")).unwrap();
    write(&d.ws, "plain/inner.txt", "now a dir\n");
    repo.restore("s", 1).await.unwrap();
    assert_eq!(read(&d.ws, "dir/x.txt"), "x\n");
    assert_eq!(read(&d.ws, "plain"), "file\n");
}

#[cfg(unix)]
#[tokio::test]
async fn modes_and_symlinks_come_back() {
    use std::os::unix::fs::PermissionsExt;
    let d = dirs();
    write(&d.ws, "run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(d.ws.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("run.sh", d.ws.join("link")).unwrap();
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    repo.take("s", 1).await.unwrap();
    std::fs::set_permissions(d.ws.join("run.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::remove_file(d.ws.join("link")).unwrap();
    repo.restore("s", 1).await.unwrap();
    let mode = std::fs::metadata(d.ws.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
    assert_eq!(
        std::fs::read_link(d.ws.join("link")).unwrap(),
        Path::new("run.sh")
    );
}

#[tokio::test]
async fn an_ignored_env_file_deleted_in_a_task_comes_back() {
    let d = dirs();
    user_repo(&d.ws);
    write(&d.ws, ".gitignore", "*.log\ntarget/\n.env\nnode_modules/\n");
    write(&d.ws, ".env", "API_TOKEN=local-only\n");
    write(&d.ws, "node_modules/dep/index.js", "dep\n");
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    let snap = repo.take("s", 1).await.unwrap();
    assert!(snap.skipped.is_empty(), "{:?}", snap.skipped);
    assert!(repo.holds(&snap.commit, ".env").await);
    assert!(repo.holds(&snap.commit, "src").await);
    assert!(!repo.holds(&snap.commit, "node_modules/dep/index.js").await);
    assert!(!repo.holds(&snap.commit, "target/out.bin").await);
    std::fs::remove_file(d.ws.join(".env")).unwrap();
    std::fs::remove_dir_all(d.ws.join("node_modules")).unwrap();
    let report = repo.restore("s", 1).await.unwrap();
    assert_eq!(report.recreated, [".env"]);
    assert_eq!(read(&d.ws, ".env"), "API_TOKEN=local-only\n");
    assert!(
        !d.ws.join("node_modules").exists(),
        "build output is not captured"
    );
}

#[tokio::test]
async fn nested_repositories_never_break_a_snapshot_or_a_restore() {
    let d = dirs();
    user_repo(&d.ws);
    // An empty nested repository (no commit): `git add` alone fails on it.
    write(&d.ws, "empty/file.txt", "e1\n");
    git(&d.ws.join("empty"), &["init", "-q"]);
    // A nested repository with a commit: captured as plain files, not a gitlink.
    write(&d.ws, "vendor/lib/x.c", "x1\n");
    git(&d.ws.join("vendor/lib"), &["init", "-q"]);
    git(&d.ws.join("vendor/lib"), &["add", "."]);
    git(&d.ws.join("vendor/lib"), &["commit", "-q", "-m", "v"]);
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    let snap = repo.take("s", 1).await.unwrap();
    assert!(repo.holds(&snap.commit, "empty/file.txt").await);
    assert!(repo.holds(&snap.commit, "vendor/lib/x.c").await);
    assert!(!repo.holds(&snap.commit, "vendor/lib/.git").await);
    write(&d.ws, "empty/file.txt", "e2\n");
    std::fs::remove_file(d.ws.join("vendor/lib/x.c")).unwrap();
    // The model turns a plain directory into a repository during the task.
    git(&d.ws.join("src"), &["init", "-q"]);
    write(&d.ws, "src/a.txt", "a2\n");
    let report = repo.restore("s", 1).await.unwrap();
    assert!(
        report.restored.contains(&"empty/file.txt".to_string()),
        "{report:?}"
    );
    assert_eq!(read(&d.ws, "empty/file.txt"), "e1\n");
    assert_eq!(read(&d.ws, "vendor/lib/x.c"), "x1\n");
    assert_eq!(read(&d.ws, "src/a.txt"), "a1\n");
    // The nested repositories themselves are untouched.
    assert!(d.ws.join("vendor/lib/.git/HEAD").is_file());
    assert!(d.ws.join("src/.git/HEAD").is_file());
    // And a later snapshot and restore still work.
    repo.take("s", 2).await.unwrap();
    write(&d.ws, "src/a.txt", "a3\n");
    repo.restore("s", 2).await.unwrap();
    assert_eq!(read(&d.ws, "src/a.txt"), "a1\n");
}

#[tokio::test]
async fn a_file_too_large_is_skipped_with_a_note_and_the_rest_is_captured() {
    let d = dirs();
    write(&d.ws, "small.txt", "s1\n");
    let big = d.ws.join("huge.bin");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(codesmith_engine::snapshot::MAX_FILE_BYTES + 1)
        .unwrap();
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    let snap = repo.take("s", 1).await.unwrap();
    assert_eq!(snap.skipped.len(), 1, "{:?}", snap.skipped);
    assert!(
        snap.skipped[0].starts_with("huge.bin"),
        "{:?}",
        snap.skipped
    );
    assert!(!repo.holds(&snap.commit, "huge.bin").await);
    write(&d.ws, "small.txt", "s2\n");
    repo.restore("s", 1).await.unwrap();
    assert_eq!(read(&d.ws, "small.txt"), "s1\n");
    assert!(big.exists(), "a skipped file is left alone");
}

// ---------------------------------------------------------------- engine hook

struct Rig {
    d: Dirs,
    server: ScriptedServer,
}

impl Rig {
    async fn new() -> Rig {
        let d = dirs();
        write(&d.ws, "notes.txt", "alpha\nbeta\n");
        Rig {
            d,
            server: ScriptedServer::start().await,
        }
    }

    fn engine(&self) -> Engine {
        self.engine_with(SnapshotSettings::default())
    }

    fn engine_with(&self, snapshots: SnapshotSettings) -> Engine {
        common::engine(
            &self.server,
            &self.d.ws,
            &self.d.home,
            common::Setup {
                snapshots,
                ..common::Setup::default()
            },
        )
    }

    /// Scripts one task that reads then overwrites `notes.txt`.
    fn script_overwrite(&self, content: &str) {
        let args = serde_json::json!({"path": "notes.txt", "content": content, "overwrite": true});
        self.server
            .push(
                Scripted::tool_call("r1", "read_file", r#"{"path": "notes.txt"}"#).with_tool_call(
                    "w1",
                    "write_file",
                    args.to_string(),
                ),
            )
            .push(Scripted::text("done"));
    }
}

/// Reopens session `id`, waiting (at most 2 s) for the lock of the engine that was just
/// dropped to be released: once, under load, the reopen found the lock still held.
async fn open_when_released(home: &Path, id: &str) -> Session {
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        match Session::open(home, id) {
            Err(codesmith_engine::session::SessionError::Busy(_))
                if std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other.unwrap(),
        }
    }
}

async fn run(engine: &mut Engine, task: &str) -> Vec<Event> {
    let mut events = Vec::new();
    engine
        .run_task(task, &mut |e| events.push(e))
        .await
        .unwrap();
    events
}

#[tokio::test]
async fn the_engine_snapshots_before_a_tasks_first_write_and_restores_it() {
    let rig = Rig::new().await;
    let mut engine = rig.engine();
    rig.script_overwrite("gamma\n");
    let events = run(&mut engine, "rewrite notes").await;
    assert!(
        !events.iter().any(|e| matches!(e, Event::Notice { .. })),
        "a successful snapshot is silent: {events:?}"
    );
    assert_eq!(read(&rig.d.ws, "notes.txt"), "gamma\n");

    // Task 2 creates a file with a shell command.
    rig.server
        .push(Scripted::tool_call(
            "s1",
            "exec_shell",
            r#"{"command": "echo made > made.txt"}"#,
        ))
        .push(Scripted::text("made"));
    run(&mut engine, "make a file").await;
    assert!(rig.d.ws.join("made.txt").exists());

    // A task that only reads takes no snapshot.
    rig.server
        .push(Scripted::tool_call(
            "r9",
            "read_file",
            r#"{"path": "notes.txt"}"#,
        ))
        .push(Scripted::text("read"));
    run(&mut engine, "just read").await;

    let id = engine.session().id().to_string();
    let repo = SideRepo::new(&SnapshotSettings::default(), &rig.d.home, &rig.d.ws);
    assert_eq!(repo.tasks(&id).await.unwrap(), [1, 2]);

    let report = engine.restore_task(2, true).await.unwrap();
    assert_eq!(report.removed, ["made.txt"]);
    assert!(!rig.d.ws.join("made.txt").exists());
    assert_eq!(
        read(&rig.d.ws, "notes.txt"),
        "gamma\n",
        "task 1's edit stays"
    );

    engine.restore_task(1, true).await.unwrap();
    assert_eq!(read(&rig.d.ws, "notes.txt"), "alpha\nbeta\n");

    // The transcript records three tasks and both restores.
    let path = engine.session().path().to_path_buf();
    assert_eq!(recorded_tasks(&path), 3);
    let text = std::fs::read_to_string(&path).unwrap();
    // Task starts are noted under their name.
    assert_eq!(text.matches(r#""kind":"task""#).count(), 3, "{text}");
    let restores: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "note" && v["kind"] == "restore")
        .collect();
    assert_eq!(restores.len(), 2);
    assert_eq!(restores[1]["data"]["task"], 1);
    assert_eq!(restores[1]["data"]["restored"][0], "notes.txt");

    // A resumed session goes on counting tasks.
    drop(engine);
    let session = open_when_released(&rig.d.home, &id).await;
    assert_eq!(recorded_tasks(session.path()), 3);
}

#[tokio::test]
async fn without_git_the_task_goes_on_with_one_notice() {
    let rig = Rig::new().await;
    let mut engine = rig.engine_with(SnapshotSettings {
        git: PathBuf::from("/nonexistent/codesmith-no-git"),
        ..SnapshotSettings::default()
    });
    rig.script_overwrite("gamma\n");
    let events = run(&mut engine, "rewrite notes").await;
    assert_eq!(
        read(&rig.d.ws, "notes.txt"),
        "gamma\n",
        "the write still happened"
    );
    let notices: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { message } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("Snapshot of task 1 skipped")
            && notices[0].contains("off for the rest"),
        "{}",
        notices[0]
    );
    // The next task does not try (and warn) again.
    rig.script_overwrite("delta\n");
    let events = run(&mut engine, "again").await;
    assert!(!events.iter().any(|e| matches!(e, Event::Notice { .. })));
    assert_eq!(read(&rig.d.ws, "notes.txt"), "delta\n");
}

#[tokio::test]
async fn a_slow_git_times_out_and_a_stale_index_lock_is_cleared() {
    let d = dirs();
    write(&d.ws, "f.txt", "x\n");
    // Zero: the first git command cannot have finished when the timer is first checked.
    let quick = SnapshotSettings {
        timeout: Duration::ZERO,
        ..SnapshotSettings::default()
    };
    let err = SideRepo::new(&quick, &d.home, &d.ws)
        .take("s", 1)
        .await
        .unwrap_err();
    assert!(matches!(err, SnapshotError::Timeout { .. }), "{err}");
    // A git killed mid-way leaves index.lock behind; the next snapshot goes on.
    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    repo.take("s", 1).await.unwrap();
    std::fs::write(repo.dir().join("index.lock"), "").unwrap();
    repo.take("s", 2).await.unwrap();
    assert_eq!(repo.tasks("s").await.unwrap(), [1, 2]);
}

#[tokio::test]
async fn disabled_snapshots_take_nothing() {
    let rig = Rig::new().await;
    let mut engine = rig.engine_with(SnapshotSettings {
        enabled: false,
        ..SnapshotSettings::default()
    });
    rig.script_overwrite("gamma\n");
    run(&mut engine, "rewrite notes").await;
    assert!(!rig.d.home.join("snapshots").exists());
}

#[tokio::test]
async fn an_env_file_a_task_deletes_comes_back_with_restore() {
    let rig = Rig::new().await;
    write(&rig.d.ws, ".gitignore", ".env\n");
    write(&rig.d.ws, ".env", "DB_PASSWORD=only-copy\n");
    let mut engine = rig.engine();
    rig.server
        .push(Scripted::tool_call(
            "s1",
            "exec_shell",
            r#"{"command": "rm -f .env"}"#,
        ))
        .push(Scripted::text("cleaned"));
    run(&mut engine, "clean up").await;
    assert!(!rig.d.ws.join(".env").exists());
    let report = engine.restore_task(1, true).await.unwrap();
    assert_eq!(report.recreated, [".env"]);
    assert_eq!(read(&rig.d.ws, ".env"), "DB_PASSWORD=only-copy\n");
}

/// The `ok` flag of each tool result, by call id.
fn results(events: &[Event]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { id, ok, output, .. } => Some((id.clone(), *ok, output.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn deleting_what_the_snapshot_holds_needs_no_approval_and_anything_else_asks() {
    let rig = Rig::new().await;
    // Captured: notes.txt (untracked, not ignored) and docs/a.md. Not captured: an
    // ignored file over the 1 MiB limit for ignored files.
    write(&rig.d.ws, ".gitignore", "*.bin\n");
    write(&rig.d.ws, "docs/a.md", "# a\n");
    std::fs::write(rig.d.ws.join("docs/big.bin"), vec![b'x'; 2 * 1024 * 1024]).unwrap();
    std::fs::write(rig.d.ws.join("big.bin"), vec![b'y'; 2 * 1024 * 1024]).unwrap();
    let setup = common::Setup {
        approval: codesmith_policy::ApprovalMode::AutoEdit,
        ..common::Setup::default()
    };
    let mut engine = common::engine(&rig.server, &rig.d.ws, &rig.d.home, setup);
    rig.server
        .push(
            Scripted::tool_call("held", "exec_shell", r#"{"command": "rm notes.txt"}"#)
                .with_tool_call("lost", "exec_shell", r#"{"command": "rm -f big.bin"}"#)
                .with_tool_call("dir", "exec_shell", r#"{"command": "rm -r docs"}"#),
        )
        .push(Scripted::text("cleaned"));
    let events = run(&mut engine, "clean up").await;
    let results = results(&events);
    assert_eq!(results.len(), 3, "{events:?}");
    assert!(
        results[0].1,
        "a held file is deleted without approval: {results:?}"
    );
    assert!(!rig.d.ws.join("notes.txt").exists());
    // Nobody can answer in a headless run, so what asks is refused and stays.
    assert!(
        !results[1].1 && results[1].2.contains("DENIED"),
        "{results:?}"
    );
    assert!(rig.d.ws.join("big.bin").exists());
    assert!(
        !results[2].1 && results[2].2.contains("DENIED"),
        "{results:?}"
    );
    assert!(rig.d.ws.join("docs/big.bin").exists() && rig.d.ws.join("docs/a.md").exists());
    // And what ran without asking comes back.
    let report = engine.restore_task(1, true).await.unwrap();
    assert_eq!(report.recreated, ["notes.txt"]);
}

/// A glob at the workspace root deletes without approval when the snapshot holds every
/// file it matches, and asks when one is not held.
#[tokio::test]
async fn a_root_glob_whose_matches_the_snapshot_holds_needs_no_approval() {
    let rig = Rig::new().await;
    write(&rig.d.ws, ".gitignore", "*.bin\n");
    write(&rig.d.ws, "a.log", "one\n");
    write(&rig.d.ws, "b.log", "two\n");
    std::fs::write(rig.d.ws.join("big.bin"), vec![b'y'; 2 * 1024 * 1024]).unwrap();
    let setup = common::Setup {
        approval: codesmith_policy::ApprovalMode::AutoEdit,
        ..common::Setup::default()
    };
    let mut engine = common::engine(&rig.server, &rig.d.ws, &rig.d.home, setup);
    rig.server
        .push(
            Scripted::tool_call("held", "exec_shell", r#"{"command": "rm -f *.log"}"#)
                .with_tool_call("lost", "exec_shell", r#"{"command": "rm -f *.bin"}"#),
        )
        .push(Scripted::text("cleaned"));
    let events = run(&mut engine, "clean up").await;
    let results = results(&events);
    assert_eq!(results.len(), 2, "{events:?}");
    assert!(
        results[0].1,
        "held logs are deleted without approval: {results:?}"
    );
    assert!(!rig.d.ws.join("a.log").exists() && !rig.d.ws.join("b.log").exists());
    assert!(
        !results[1].1 && results[1].2.contains("DENIED"),
        "{results:?}"
    );
    assert!(rig.d.ws.join("big.bin").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_and_compact_ops_end_with_their_closing_events() {
    use codesmith_protocol::{CompactionOutcome, Op};
    let rig = Rig::new().await;
    rig.script_overwrite("gamma\n");
    let mut handle = rig.engine().spawn(codesmith_engine::Approvals::Refused);
    let wait = Duration::from_secs(20);
    let until_closing = async |handle: &mut codesmith_engine::EngineHandle| loop {
        let event = tokio::time::timeout(wait, handle.next_event())
            .await
            .expect("no event in time")
            .expect("the queue closed");
        if matches!(
            event,
            Event::TaskFinished { .. }
                | Event::RestoreFinished { .. }
                | Event::CompactionFinished { .. }
        ) {
            return event;
        }
    };
    handle
        .submit(Op::UserTask {
            text: "rewrite notes".into(),
            images: Vec::new(),
        })
        .await
        .unwrap();
    until_closing(&mut handle).await;
    assert_eq!(read(&rig.d.ws, "notes.txt"), "gamma\n");

    // A preview changes nothing and says what would change.
    handle
        .submit(Op::Restore {
            task: 1,
            apply: false,
        })
        .await
        .unwrap();
    let Event::RestoreFinished {
        task,
        applied,
        report: Some(report),
        error: None,
    } = until_closing(&mut handle).await
    else {
        panic!("no preview report");
    };
    assert_eq!((task, applied), (1, false));
    assert_eq!(report.restored, ["notes.txt"]);
    assert_eq!(report.backup, None);
    assert_eq!(read(&rig.d.ws, "notes.txt"), "gamma\n");

    handle
        .submit(Op::Restore {
            task: 1,
            apply: true,
        })
        .await
        .unwrap();
    let Event::RestoreFinished {
        applied: true,
        report: Some(report),
        ..
    } = until_closing(&mut handle).await
    else {
        panic!("not restored");
    };
    assert!(report.backup.is_some());
    assert_eq!(read(&rig.d.ws, "notes.txt"), "alpha\nbeta\n");

    // A task with no snapshot is a typed error that names the ones that exist.
    handle
        .submit(Op::Restore {
            task: 9,
            apply: true,
        })
        .await
        .unwrap();
    let Event::RestoreFinished {
        report: None,
        error: Some(error),
        ..
    } = until_closing(&mut handle).await
    else {
        panic!("a missing snapshot restored");
    };
    assert!(error.contains("tasks 1"), "{error}");

    handle.submit(Op::Compact).await.unwrap();
    let Event::CompactionFinished { outcome, .. } = until_closing(&mut handle).await else {
        panic!("no compaction event");
    };
    assert_eq!(outcome, CompactionOutcome::NothingToCompact);
    handle.shutdown().await.unwrap();
}

#[test]
fn a_task_number_no_task_can_have_does_not_reset_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let note = |kind: &str, data: serde_json::Value| {
        serde_json::json!({"type": "note", "kind": kind, "data": data}).to_string()
    };
    let lines = [
        note("task", serde_json::json!({"task": 1})),
        note("turn", serde_json::json!({"turn": 2})),
        note("task", serde_json::json!({"task": 99_999_999_999u64})),
        note("task", serde_json::json!({"task": u32::MAX})),
        note("task", serde_json::json!({"task": -3})),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert_eq!(recorded_tasks(&path), 2);
}

/// An executable `/bin/sh` script at `path` that appends its name to `marker` and exits 0
/// (an fsmonitor hook that answers nothing, a filter that passes nothing on).
fn plant(path: &Path, marker: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let script = format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\ncat\n", marker.display());
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A repository `dir` whose `.git/config` makes every git command that reads it run
/// `run.sh` (which appends to `marker`): fsmonitor, a hooks directory, a pager, an editor,
/// a clean/smudge/process filter and a textconv driver that `.gitattributes` applies to
/// every file, an external diff, and an `include.path` (a workspace file) that sets
/// fsmonitor and another filter again.
fn hostile_repo(dir: &Path, marker: &Path) {
    git(dir, &["init", "-q"]);
    let run = dir.join("run.sh");
    plant(&run, marker);
    for hook in [
        "pre-commit",
        "post-commit",
        "post-checkout",
        "post-index-change",
    ] {
        plant(&dir.join("hooks").join(hook), marker);
    }
    let r = run.display();
    write(
        dir,
        "evil.inc",
        &format!("[core]\n\tfsmonitor = {r}\n[filter \"y\"]\n\tclean = {r}\n"),
    );
    let mut config = std::fs::read_to_string(dir.join(".git/config")).unwrap();
    config.push_str(&format!(
        "[core]\n\tfsmonitor = {r}\n\thooksPath = {h}\n\tpager = {r}\n\teditor = {r}\n\
         [filter \"x\"]\n\tclean = {r}\n\tsmudge = {r}\n\tprocess = {r}\n\trequired = false\n\
         [diff \"x\"]\n\ttextconv = {r}\n[diff]\n\texternal = {r}\n\
         [include]\n\tpath = {inc}\n",
        h = dir.join("hooks").display(),
        inc = dir.join("evil.inc").display(),
    ));
    std::fs::write(dir.join(".git/config"), config).unwrap();
    write(dir, ".gitattributes", "* filter=x diff=x\n*.y filter=y\n");
    write(dir, "a.txt", "a\n");
    write(dir, "b.y", "b\n");
}

#[tokio::test]
async fn snapshots_and_restores_run_nothing_a_workspace_git_config_names() {
    let d = dirs();
    let marker = d.home.with_file_name("marker");
    hostile_repo(&d.ws, &marker);
    // A nested repository with the same config, as a model could create one.
    std::fs::create_dir_all(d.ws.join("sub")).unwrap();
    hostile_repo(&d.ws.join("sub"), &marker);
    // Control: the user's own git in that repository runs the planted programs.
    let out = Command::new("git")
        .args(["add", "-A"])
        .current_dir(&d.ws)
        .env_remove("GIT_DIR")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        marker.exists(),
        "the plant did not run under plain git: {out:?}"
    );
    std::fs::remove_file(&marker).unwrap();
    git(&d.ws, &["reset", "-q"]);
    std::fs::remove_file(&marker).ok();

    let repo = SideRepo::new(&SnapshotSettings::default(), &d.home, &d.ws);
    repo.take("s", 1).await.unwrap();
    write(&d.ws, "a.txt", "changed\n");
    write(&d.ws, "new.y", "new\n");
    let report = repo.restore("s", 1).await.unwrap();
    assert!(report.restored.contains(&"a.txt".to_string()), "{report:?}");
    assert_eq!(std::fs::read_to_string(d.ws.join("a.txt")).unwrap(), "a\n");
    let log = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(
        !marker.exists(),
        "a program from the workspace's git config ran: {log}"
    );
}
