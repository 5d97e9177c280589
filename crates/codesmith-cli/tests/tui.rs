//! The terminal UI end to end: the real binary inside tmux, against the
//! scripted model server. Skipped when tmux is not installed.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer};

use common::{Sandbox, line_mode};

/// A tmux server of our own (its own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success())
    }

    fn start(command: &str) -> Tmux {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let socket = format!("codesmith-tui-test-{}-{n}", std::process::id());
        let t = Tmux { socket };
        let ok = t
            .cmd(&[
                "new-session",
                "-d",
                "-x",
                "80",
                "-y",
                "24",
                "-s",
                "cs",
                command,
            ])
            .status
            .success();
        assert!(ok, "tmux new-session failed");
        t
    }

    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .env("TERM", "xterm-256color")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "cs"];
        args.extend_from_slice(keys);
        self.cmd(&args);
    }

    fn text(&self, text: &str) {
        self.cmd(&["send-keys", "-t", "cs", "-l", text]);
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "cs"]).stdout).into_owned()
    }

    fn alive(&self) -> bool {
        self.cmd(&["has-session", "-t", "cs"]).status.success()
    }

    /// Waits (at most 20 s) until the screen contains `needle`.
    /// Waits (at most 20 s) until `needle` is on the screen and the screen has settled:
    /// two captures 50 ms apart are the same, so a frame the UI is still drawing (a popup
    /// whose title is out but whose options are not) is never what the test reads.
    async fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut last: Option<String> = None;
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                if last.as_deref() == Some(screen.as_str()) {
                    return screen;
                }
                last = Some(screen.clone());
            } else {
                last = None;
            }
            assert!(
                Instant::now() < deadline,
                "{needle:?} never appeared on a settled screen; screen:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn ui_command(home: &Path, ws: &Path, base_url: &str) -> String {
    format!(
        "env CODESMITH_HOME={} OPENAI_API_KEY=sk-test CODESMITH_STREAM_IDLE_TIMEOUT_SECS=5 \
         TERM=xterm-256color {} --workspace {} --provider openai --base-url {} --model scripted \
         --approval auto-edit",
        shell_quote(&home.display().to_string()),
        shell_quote(env!("CARGO_BIN_EXE_codesmith")),
        shell_quote(&ws.display().to_string()),
        shell_quote(base_url),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_task_approval_edit_answer_and_quit() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c0",
            "read_file",
            r#"{"path": "calc.py"}"#,
        ))
        .push(Scripted::tool_call(
            "c1",
            "edit_file",
            r#"{"path": "calc.py", "search": "return a - b", "replace": "return a + b"}"#,
        ))
        .push(Scripted::tool_call(
            "c2",
            "exec_shell",
            r#"{"command": "rm -rf build && python3 -m unittest discover -s tests -t ."}"#,
        ))
        .push(Scripted::text(
            "Fixed **add()** in calc.py; both tests pass now.",
        ));
    let ws = sb.ws();
    let tmux = Tmux::start(&ui_command(&sb.home(), &ws, &server.base_url()));
    tmux.wait_for("message, /help").await;
    tmux.text("Fix the failing test");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Allow exec_shell?").await;
    assert!(screen.contains("› Fix the failing test"), "{screen}");
    assert!(screen.contains("● read_file calc.py"), "{screen}");
    assert!(screen.contains("● edit_file calc.py"), "{screen}");
    // The diff the tool computed from the file (its real indentation, a hunk header and
    // the line counts), sent on the result event.
    assert!(screen.contains("● edit_file calc.py · +1 -1"), "{screen}");
    assert!(screen.contains("    -    return a - b"), "{screen}");
    assert!(screen.contains("    +    return a + b"), "{screen}");
    assert!(screen.contains("[y] yes, once"), "{screen}");
    tmux.keys(&["y"]);
    let screen = tmux.wait_for("both tests pass now").await;
    assert!(screen.contains("approved once"), "{screen}");
    assert!(screen.contains("Fixed add() in calc.py"), "{screen}");
    assert!(screen.contains("· exit"), "{screen}");
    assert!(screen.contains("openai scripted"), "{screen}");
    let code = std::fs::read_to_string(ws.join("calc.py")).unwrap();
    assert!(code.contains("return a + b"), "{code}");
    // The shell result reached the model.
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 4);
    assert!(bodies[3].to_string().contains("Ran 2 tests"));
    // Ctrl-C twice on the idle prompt quits (once the claim verifier's replay is over).
    tmux.wait_for("message, /help").await;
    tmux.keys(&["C-c"]);
    tmux.wait_for("press Ctrl-C again to quit").await;
    tmux.keys(&["C-c"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tmux.alive() {
        assert!(
            Instant::now() < deadline,
            "the UI did not quit:\n{}",
            tmux.screen()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_ctrl_c_interrupts_a_stalled_turn_and_keeps_the_session() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::text("this answer never arrives").stall_before(15_000))
        .push(Scripted::text("Second answer after the interrupt."));
    let ws = sb.ws();
    let tmux = Tmux::start(&ui_command(&sb.home(), &ws, &server.base_url()));
    tmux.wait_for("message, /help").await;
    tmux.text("first task");
    tmux.keys(&["Enter"]);
    tmux.wait_for("working… Ctrl-C interrupts").await;
    tmux.keys(&["C-c"]);
    tmux.wait_for("interrupted: the turn was stopped").await;
    tmux.text("second task");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Second answer after the interrupt.").await;
    assert!(screen.contains("› first task"), "{screen}");
    // The second request carries the first task, closed by an interrupt note.
    let bodies = server.request_bodies();
    let last = bodies.last().unwrap().to_string();
    assert!(
        last.contains("first task") && last.contains("interrupted"),
        "{last}"
    );
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tmux.alive() {
        assert!(
            Instant::now() < deadline,
            "the UI did not quit:\n{}",
            tmux.screen()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_quit_while_a_task_runs_closes_its_turn_before_exiting() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("this answer never arrives").stall_before(15_000));
    let ws = sb.ws();
    let tmux = Tmux::start(&ui_command(&sb.home(), &ws, &server.base_url()));
    tmux.wait_for("message, /help").await;
    tmux.text("stalled task");
    tmux.keys(&["Enter"]);
    tmux.wait_for("working… Ctrl-C interrupts").await;
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tmux.alive() {
        assert!(
            Instant::now() < deadline,
            "the UI did not quit:\n{}",
            tmux.screen()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The task's turn is closed in the transcript: nothing of it is lost, and a resume
    // continues from a well-formed conversation.
    let dir = sb.home().join("sessions");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("no session file");
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("stalled task"), "{text}");
    assert!(
        text.contains("The turn was interrupted before the model answered"),
        "the quit cut the turn off unclosed:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_mode_without_a_terminal_runs_tasks_asks_on_stdin_and_resumes() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "rm -rf build && sed -i 's/return a - b/return a + b/' calc.py"}"#,
        ))
        .push(Scripted::text("Fixed add() with sed."))
        .push(Scripted::text("Still here."));
    let ws = sb.ws();
    let url = server.base_url();
    let ws_arg = ws.to_str().unwrap();
    let flags = [
        "--workspace",
        ws_arg,
        "--provider",
        "openai",
        "--base-url",
        &url,
        "--model",
        "scripted",
        "--approval",
        "auto-edit",
    ];
    let out = line_mode(
        &sb.home(),
        &flags,
        "Fix the failing test\ny\n/modle\n/quit\n",
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("approve exec_shell:\n  $ rm -rf build"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "why: `rm -rf build`: deletes `build`, which the task's snapshot does not hold"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("Fixed add() with sed."), "{stdout}");
    assert!(stdout.contains("did you mean /model?"), "{stdout}");
    assert!(
        stdout.contains("Fixed add() with sed.\n─ done in "),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("─ done in ").count(),
        1,
        "printed once: {stdout}"
    );
    assert_eq!(
        stdout.matches("did you mean").count(),
        1,
        "printed once: {stdout}"
    );
    assert!(
        !stdout.contains('\u{1b}'),
        "no escape sequences in line mode: {stdout:?}"
    );
    let code = std::fs::read_to_string(ws.join("calc.py")).unwrap();
    assert!(code.contains("return a + b"), "{code}");

    // Opening the UI and leaving without a word writes no session...
    let out = line_mode(&sb.home(), &flags, "/quit\n").await;
    assert_eq!(out.status.code(), Some(0));
    let sessions = std::fs::read_dir(sb.home().join("sessions"))
        .unwrap()
        .count();
    assert_eq!(sessions, 1, "an empty session was written");
    // ...so `codesmith resume` picks up the conversation, not the empty visit.
    let mut resume = vec!["resume"];
    resume.extend_from_slice(&flags);
    let out = line_mode(&sb.home(), &resume, "go on\n").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("resumed: "), "{stdout}");
    assert!(
        stdout.contains("last answer: Fixed add() with sed."),
        "{stdout}"
    );
    assert!(stdout.contains("Still here."), "{stdout}");
    let last = server.request_bodies().pop().unwrap().to_string();
    assert!(
        last.contains("Fix the failing test") && last.contains("go on"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_model_and_approval_rebuild_the_engine_in_the_same_session() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("ok"));
    let ws = sb.ws();
    let url = server.base_url();
    let args = [
        "--workspace",
        ws.to_str().unwrap(),
        "--provider",
        "openai",
        "--base-url",
        &url,
        "--model",
        "scripted",
    ];
    let input = "/model other-model\n/approval never\n/approval sometimes\n/sessions\nhi\n/quit\n";
    let out = line_mode(&sb.home(), &args, input).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("model other-model · approval auto-edit"),
        "{stdout}"
    );
    assert!(
        stdout.contains("model other-model · approval never"),
        "{stdout}"
    );
    assert!(
        stdout.contains("unknown approval mode \"sometimes\""),
        "{stdout}"
    );
    assert!(stdout.contains("← current"), "{stdout}");
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 1);
    assert_eq!(bodies[0]["model"], "other-model");
    // Still one session on disk: the rebuilds kept it.
    let sessions = std::fs::read_dir(sb.home().join("sessions"))
        .unwrap()
        .count();
    assert_eq!(sessions, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_compact_shows_progress_can_be_interrupted_and_reports_once() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::text("First answer."))
        .push(Scripted::text("Second answer."))
        .push(Scripted::text("Third answer."))
        .push(Scripted::text("SUMMARY never arrives").stall_before(15_000))
        .push(Scripted::text("SUMMARY: the user asked three things."));
    let ws = sb.ws();
    let tmux = Tmux::start(&ui_command(&sb.home(), &ws, &server.base_url()));
    tmux.wait_for("message, /help").await;
    // A long first task, so that a summary is shorter than what it replaces.
    let long = format!(
        "first task {}",
        "with many words to summarise later ".repeat(12)
    );
    for (task, answer) in [
        (long.as_str(), "First answer."),
        ("second task", "Second answer."),
        ("third task", "Third answer."),
    ] {
        tmux.text(task);
        tmux.keys(&["Enter"]);
        tmux.wait_for(answer).await;
        tmux.wait_for("message, /help").await;
    }
    tmux.text("/compact");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("compacting… Ctrl-C interrupts").await;
    let status = screen.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(status.contains(" compacting "), "{status}");
    tmux.keys(&["C-c"]);
    tmux.wait_for("compaction interrupted: the session is unchanged")
        .await;
    tmux.wait_for("message, /help").await;
    tmux.text("/compact");
    tmux.keys(&["Enter"]);
    let screen = tmux
        .wait_for("compacted 2 earlier messages into a summary")
        .await;
    assert_eq!(screen.matches("compacted 2 earlier").count(), 1, "{screen}");
    assert!(screen.contains("tokens"), "{screen}");
    let transcript = std::fs::read_dir(sb.home().join("sessions"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect::<String>();
    assert!(
        transcript.contains("SUMMARY: the user asked"),
        "{transcript}"
    );
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_shows_its_recorded_usage() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("An answer.").usage(1_000, 234));
    let ws = sb.ws();
    let url = server.base_url();
    let flags = [
        "--workspace",
        ws.to_str().unwrap(),
        "--provider",
        "openai",
        "--base-url",
        &url,
        "--model",
        "scripted",
    ];
    let out = line_mode(&sb.home(), &flags, "a question\n/quit\n").await;
    assert_eq!(out.status.code(), Some(0));
    let command =
        ui_command(&sb.home(), &ws, &url).replacen(" --workspace", " resume --workspace", 1);
    let tmux = Tmux::start(&command);
    let screen = tmux.wait_for("message, /help").await;
    let status = screen.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(status.contains("1.2k tok"), "{status}");
    assert!(!status.contains("ctx 0"), "{status}");
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_shift_tab_climbs_the_ladder_and_plan_mode_hands_over_an_accepted_plan() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        // Plan mode: a write and a writing command are refused without a question.
        .push(Scripted::tool_call(
            "c1",
            "write_file",
            r#"{"path": "early.txt", "content": "x\n"}"#,
        ))
        .push(Scripted::tool_call(
            "c2",
            "exec_shell",
            r#"{"command": "touch early2.txt"}"#,
        ))
        .push(Scripted::tool_call(
            "c3",
            "update_plan",
            r#"{"plan": [{"step": "Write made.txt", "status": "pending"}]}"#,
        ))
        .push(Scripted::text("Here is the plan: write made.txt."))
        // Accepted (auto-edit): the write runs without a question.
        .push(Scripted::tool_call(
            "c4",
            "write_file",
            r#"{"path": "made.txt", "content": "m\n"}"#,
        ))
        .push(Scripted::text("Step one is done."))
        // suggest: the write asks.
        .push(Scripted::tool_call(
            "c5",
            "write_file",
            r#"{"path": "asked.txt", "content": "a\n"}"#,
        ))
        .push(Scripted::text("Wrote asked.txt."));
    let ws = sb.ws();
    let tmux = Tmux::start(&ui_command(&sb.home(), &ws, &server.base_url()));
    tmux.wait_for("approval auto-edit").await;
    tmux.keys(&["BTab"]);
    tmux.wait_for("approval auto ").await;
    tmux.keys(&["BTab"]);
    tmux.wait_for("approval read-only").await;
    tmux.text("Plan the change");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("/accept starts the work").await;
    assert!(!screen.contains("Allow "), "{screen}");
    assert!(!ws.join("early.txt").exists() && !ws.join("early2.txt").exists());
    let bodies = server.request_bodies();
    assert!(
        bodies[0].to_string().contains("plan mode"),
        "the model is told it plans"
    );
    tmux.text("/accept");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Step one is done.").await;
    assert!(screen.contains("approval auto-edit"), "{screen}");
    assert!(ws.join("made.txt").exists());
    let bodies = server.request_bodies();
    assert!(bodies[4].to_string().contains("The plan is accepted"));
    // auto-edit → auto → read-only → suggest
    for mode in ["approval auto ", "approval read-only", "approval suggest"] {
        tmux.keys(&["BTab"]);
        tmux.wait_for(mode).await;
    }
    tmux.text("Write another");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Allow write_file?").await;
    assert!(!ws.join("asked.txt").exists());
    tmux.keys(&["y"]);
    tmux.wait_for("Wrote asked.txt.").await;
    assert!(ws.join("asked.txt").exists());
}
