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
        Tmux::start_sized(command, 80, 24)
    }

    /// A session `width` columns by `height` rows.
    fn start_sized(command: &str, width: u16, height: u16) -> Tmux {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let socket = format!("codesmith-tui-test-{}-{n}", std::process::id());
        let t = Tmux { socket };
        let ok = t
            .cmd(&[
                "new-session",
                "-d",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
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

/// Waits (at most 10 s) until the tmux session ended.
async fn wait_gone(tmux: &Tmux) {
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
async fn resume_replays_what_the_live_session_showed_and_keeps_an_interrupted_answer() {
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
            r#"{"command": "ls"}"#,
        ))
        // A success claim with no test run behind it: the verifier adds its runtime event.
        .push(Scripted::text("Fixed add(); all tests pass."))
        // The second answer stalls after a few words: Ctrl-C cuts it there.
        .push(
            Scripted::text("Partial words of an answer that never ends")
                .chunk_chars(8)
                .stall_after(3, 4_000),
        )
        .push(Scripted::text("Third answer."));
    let ws = sb.ws();
    let url = server.base_url();
    let tmux = Tmux::start_sized(&ui_command(&sb.home(), &ws, &url), 100, 50);
    tmux.wait_for("message, /help").await;
    tmux.text("Fix the failing test");
    tmux.keys(&["Enter"]);
    let live = tmux.wait_for("all tests pass.").await;
    tmux.wait_for("message, /help").await;
    tmux.text("second task");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Partial words of an").await;
    tmux.keys(&["C-c"]);
    tmux.wait_for("interrupted: the turn was stopped").await;
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    wait_gone(&tmux).await;

    let command =
        ui_command(&sb.home(), &ws, &url).replacen(" --workspace", " resume --workspace", 1);
    let tmux = Tmux::start_sized(&command, 100, 50);
    let screen = tmux.wait_for("message, /help").await;
    // What `ls` answered, as the transcript keeps it: a failure below explains itself.
    let ls_result = || {
        std::fs::read_dir(sb.home().join("sessions"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .flat_map(|t| {
                t.lines()
                    .filter(|l| l.contains("\"c2\""))
                    .map(|l| l.chars().take(2_000).collect::<String>())
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    // The edit's diff and the command's exit code, as the live session showed them.
    for shown in [
        "● edit_file calc.py · +1 -1",
        "    +    return a + b",
        "● exec_shell ls · exit 0",
        "› Fix the failing test",
        "Fixed add(); all tests pass.",
        "› second task",
    ] {
        assert!(
            live.contains(shown) || shown.starts_with("› second"),
            "live: {shown:?}\n{live}\nexec_shell's result in the transcript:\n{}",
            ls_result()
        );
        assert!(
            screen.contains(shown),
            "replay lacks {shown:?}:\n{screen}\nexec_shell's result in the transcript:\n{}",
            ls_result()
        );
    }
    // The transcript holds the verifier's runtime event; the replay never shows it.
    let transcript = std::fs::read_dir(sb.home().join("sessions"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect::<String>();
    assert!(
        transcript.contains("<runtime_event type=\\\"verdict\\\">"),
        "{transcript}"
    );
    assert!(!screen.contains("runtime_event"), "{screen}");
    assert!(!screen.contains("› <"), "{screen}");
    // The interrupted answer is kept as far as it streamed, marked as cut off.
    assert!(screen.contains("Partial words of an"), "{screen}");
    assert!(
        screen.contains("The turn was interrupted here; this answer is incomplete."),
        "{screen}"
    );
    assert!(!screen.contains("before the model answered"), "{screen}");
    // What the model reads next is that same partial answer.
    tmux.text("go on");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Third answer.").await;
    let last = server.request_bodies().pop().unwrap().to_string();
    assert!(
        last.contains("Partial words of an") && last.contains("this answer is incomplete"),
        "{last}"
    );
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    wait_gone(&tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_after_an_interrupt_warns_and_a_queued_message_comes_back() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::text("never arrives").stall_before(15_000))
        .push(Scripted::text("never arrives either").stall_before(15_000))
        .push(Scripted::text("Answer to the queued message."));
    let ws = sb.ws();
    let tmux = Tmux::start(&ui_command(&sb.home(), &ws, &server.base_url()));
    tmux.wait_for("message, /help").await;
    tmux.text("first task");
    tmux.keys(&["Enter"]);
    tmux.wait_for("working… Ctrl-C interrupts").await;
    tmux.keys(&["C-c"]);
    tmux.wait_for("interrupted: the turn was stopped").await;
    // A second Ctrl-C right after the interrupt warns instead of quitting.
    tmux.keys(&["C-c"]);
    tmux.wait_for("press Ctrl-C again to quit").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(tmux.alive(), "the UI quit on the Ctrl-C after an interrupt");
    // A message typed while a turn runs is queued; an interrupt puts it back in the
    // input box instead of dropping it.
    tmux.text("second task");
    tmux.keys(&["Enter"]);
    tmux.wait_for("working… Ctrl-C interrupts").await;
    tmux.text("queued words");
    tmux.keys(&["Enter"]);
    tmux.wait_for("queued: it will be sent").await;
    tmux.keys(&["C-c"]);
    let screen = tmux
        .wait_for("queued message is back in the input box")
        .await;
    let input = screen
        .lines()
        .rev()
        .find(|l| l.contains("queued words"))
        .unwrap_or_default();
    assert!(input.contains("│"), "not in the input box:\n{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Answer to the queued message.").await;
    let last = server.request_bodies().pop().unwrap().to_string();
    assert!(last.contains("queued words"), "{last}");
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    wait_gone(&tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_command_shows_its_last_lines_and_a_cancelled_one_its_output_as_text() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server.push(Scripted::tool_call(
        "c1",
        "exec_shell",
        r#"{"command": "for i in 1 2 3 4 5 6 7; do echo line-$i; sleep 0.1; done; printf 'esc-\\033[2J-x\\n'; sleep 20"}"#,
    ));
    let ws = sb.ws();
    let command = ui_command(&sb.home(), &ws, &server.base_url())
        .replace("--approval suggest", "--approval auto");
    let tmux = Tmux::start_sized(&command, 100, 40);
    tmux.wait_for("message, /help").await;
    tmux.text("run the loop");
    tmux.keys(&["Enter"]);
    // The last lines of the running command, under its call, its escapes made visible.
    let screen = tmux.wait_for("┆ esc-").await;
    for n in 4..=7 {
        assert!(screen.contains(&format!("┆ line-{n}")), "{screen}");
    }
    assert!(!screen.contains("┆ line-3"), "more than 5 lines: {screen}");
    assert!(screen.contains(r"esc-\u{1b}[2J-x"), "{screen}");
    tmux.keys(&["C-c"]);
    tmux.wait_for("interrupted: the turn was stopped").await;
    let screen = tmux.screen();
    assert!(
        !screen.contains("┆ line-"),
        "live lines left after the end: {screen}"
    );
    // Expanded, the cancelled call shows its output so far as text, not the envelope.
    tmux.keys(&["C-o"]);
    let screen = tmux.wait_for("│ line-1").await;
    assert!(!screen.contains("\"ok\":false"), "{screen}");
    assert!(screen.contains("CANCELLED"), "{screen}");
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    wait_gone(&tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_counts_the_tokens_of_an_answer_as_it_streams() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server.push(
        Scripted::text(format!("Streaming {} end.", "word ".repeat(200)))
            .chunk_chars(200)
            .stall_after(3, 4_000),
    );
    let ws = sb.ws();
    let tmux = Tmux::start_sized(&ui_command(&sb.home(), &ws, &server.base_url()), 120, 24);
    tmux.wait_for("message, /help").await;
    tmux.text("stream something");
    tmux.keys(&["Enter"]);
    // Mid-stream (the server holds the rest back), the round's output so far is counted.
    let screen = tmux.wait_for("tok │").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let screen = tmux.screen();
        let status = screen
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .to_string();
        if status.contains("↓ ~") {
            break status;
        }
        assert!(Instant::now() < deadline, "no streaming count:\n{screen}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.contains("working"), "{status}\n{screen}");
    assert!(status.contains("↓ ~150 tok"), "{status}");
    tmux.wait_for("end.").await;
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    wait_gone(&tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_path_attaches_bang_runs_through_the_gate_and_esc_interrupts() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::text("Saw the file."))
        .push(Scripted::text("Next answer."))
        .push(Scripted::text("never arrives").stall_before(15_000));
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join("build")).unwrap();
    let tmux = Tmux::start_sized(&ui_command(&sb.home(), &ws, &server.base_url()), 100, 40);
    tmux.wait_for("message, /help").await;
    // `@path` attaches the file to the task.
    tmux.text("explain @calc.py please");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Saw the file.").await;
    assert!(screen.contains("attached calc.py ("), "{screen}");
    let first = server.request_bodies().pop().unwrap().to_string();
    assert!(
        first.contains(r#"<attached_file path=\"calc.py\">"#) && first.contains("return a - b"),
        "{first}"
    );
    tmux.wait_for("message, /help").await;
    // `!cmd` runs through the model's gate: `ls` is read-only and runs...
    tmux.text("!ls");
    tmux.keys(&["Enter"]);
    tmux.wait_for("● exec_shell ls · exit 0").await;
    tmux.wait_for("message, /help").await;
    // ...a deletion is asked about like the model's, and "no" runs nothing.
    tmux.text("!rm -rf build");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Allow exec_shell?").await;
    tmux.keys(&["n"]);
    tmux.wait_for("denied: rm -rf build").await;
    assert!(ws.join("build").is_dir(), "the denied command ran");
    tmux.wait_for("message, /help").await;
    // The model reads what the user ran with the next task; no model round ran for it.
    assert_eq!(server.request_bodies().len(), 1);
    tmux.text("next");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Next answer.").await;
    let next = server.request_bodies().pop().unwrap().to_string();
    assert!(
        next.contains("user_shell") && next.contains("$ ls") && next.contains("calc.py"),
        "{next}"
    );
    tmux.wait_for("message, /help").await;
    // Esc interrupts a running turn.
    tmux.text("third");
    tmux.keys(&["Enter"]);
    tmux.wait_for("working… Ctrl-C interrupts").await;
    tmux.keys(&["Escape"]);
    tmux.wait_for("interrupted: the turn was stopped").await;
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    wait_gone(&tmux).await;
}

/// A command whose middle the approval prompt folds away cannot be approved unseen: "y"
/// shows it whole first, Ctrl-O shows it on demand, and only once its end has been on
/// screen does "y" run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_a_folded_command_is_shown_whole_before_yes_runs_it() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    let command = format!(
        "echo harmless build step\n{}touch HIDDEN_RAN\n{}echo done",
        "\n".repeat(30),
        "\n".repeat(30)
    );
    let args = serde_json::json!({ "command": command }).to_string();
    server
        .push(Scripted::tool_call("c1", "exec_shell", &args))
        .push(Scripted::text("The build step ran."));
    let ws = sb.ws();
    // In suggest mode every command asks.
    let ui = ui_command(&sb.home(), &ws, &server.base_url())
        .replace("--approval auto-edit", "--approval suggest");
    let tmux = Tmux::start(&ui);
    tmux.wait_for("message, /help").await;
    tmux.text("run the build step");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Allow exec_shell?").await;
    assert!(!screen.contains("$ touch HIDDEN_RAN"), "{screen}");
    assert!(screen.contains("Ctrl-O shows all of it"), "{screen}");
    // "y" before the whole command was on screen shows it instead of running it.
    tmux.keys(&["y"]);
    let screen = tmux.wait_for("approve only what you have seen").await;
    assert!(screen.contains("rows 1–"), "{screen}");
    assert!(!ws.join("HIDDEN_RAN").exists());
    // Ctrl-O folds it again; Ctrl-O shows it; End scrolls to its end.
    tmux.keys(&["C-o"]);
    tmux.wait_for("Ctrl-O shows all of it").await;
    tmux.keys(&["C-o"]);
    tmux.wait_for("rows 1–").await;
    tmux.keys(&["End"]);
    let screen = tmux.wait_for("$ echo done").await;
    // The whole reason scrolls under the whole command.
    assert!(screen.contains("why: `touch HIDDEN_RAN`"), "{screen}");
    // A jump to the end skipped rows never drawn: "y" still does not run it.
    tmux.keys(&["y"]);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!ws.join("HIDDEN_RAN").exists());
    // Paged through from the top, every row has been drawn: now "y" runs it.
    tmux.keys(&["Home"]);
    for _ in 0..66 {
        tmux.keys(&["PageDown"]);
    }
    tmux.wait_for("$ echo done").await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    tmux.keys(&["y"]);
    let screen = tmux.wait_for("The build step ran.").await;
    assert!(screen.contains("approved once"), "{screen}");
    assert!(ws.join("HIDDEN_RAN").exists());
}

/// A task that ends before it reaches the engine (a refused MCP prompt, an interrupt
/// while its mentions are read) leaves the working state: the next task is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_a_refused_prompt_or_an_interrupted_mention_read_ends_the_task() {
    if !Tmux::available() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/resource_server.py");
    // Only the interrupt can end a read of test://slow within the test's waits.
    std::fs::write(
        sb.home().join("config.toml"),
        format!(
            "[mcp_servers.docs]\ncommand = \"python3\"\nargs = [{:?}, {:?}]\nstartup_timeout_secs = 20\ntool_timeout_secs = 120\n",
            fixture.to_str().unwrap(),
            sb.dir.path().join("docs.jsonl").to_str().unwrap(),
        ),
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::text("First answer."))
        .push(Scripted::text("Second answer."));
    let ws = sb.ws();
    let tmux = Tmux::start_sized(&ui_command(&sb.home(), &ws, &server.base_url()), 100, 40);
    tmux.wait_for("message, /help").await;
    tmux.text("/mcp__docs__q foo=bar");
    tmux.keys(&["Enter"]);
    tmux.wait_for("takes no argument `foo`").await;
    tmux.text("hello");
    tmux.keys(&["Enter"]);
    tmux.wait_for("First answer.").await;
    tmux.wait_for("message, /help").await;
    tmux.text("read @docs:test://slow");
    tmux.keys(&["Enter"]);
    tmux.wait_for("working… Ctrl-C interrupts").await;
    tmux.keys(&["C-c"]);
    tmux.wait_for("interrupted: the turn was stopped").await;
    tmux.text("again");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Second answer.").await;
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[1].to_string().contains("again"));
    assert!(!bodies[1].to_string().contains("read @docs:test://slow"));
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    wait_gone(&tmux).await;
}
