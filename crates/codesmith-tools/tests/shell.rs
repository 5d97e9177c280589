//! exec_shell and the background task tools, end to end (real bash, no sandbox).

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use codesmith_testkit::live_processes;
use codesmith_tools::shell::{ExecShell, TaskShellCancel, TaskShellPoll, TaskShellStart};
use codesmith_tools::spill::{self, RetrieveToolResult};
use codesmith_tools::{ErrorCode, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

/// The processes still running `argv` after a bounded wait (killed ones may take a moment
/// to be reaped).
fn survivors(argv: &[&str]) -> Vec<i32> {
    codesmith_testkit::survivors_after(argv, Duration::from_secs(2))
}

struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    ctx: ToolContext,
}

fn fixture() -> Fixture {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(ws.path().canonicalize().unwrap(), home.path().to_path_buf());
    Fixture {
        _dirs: (ws, home),
        ctx,
    }
}

async fn sh(ctx: &ToolContext, args: Value) -> ToolOutput {
    ExecShell.call(ctx, args).await.unwrap()
}

fn text(out: &ToolOutput) -> &str {
    out.output.as_str().unwrap()
}

#[tokio::test]
async fn output_exit_code_and_stderr_are_captured() {
    let f = fixture();
    let out = sh(&f.ctx, json!({"command": "echo out; echo err >&2; exit 3"})).await;
    assert_eq!(text(&out), "out\nerr\n");
    assert_eq!(out.meta["exit_code"], 3);
    assert!(!text(&out).contains("__CODESMITH_CWD"));
}

#[tokio::test]
async fn cd_inside_the_workspace_is_kept() {
    let f = fixture();
    std::fs::create_dir_all(f.ctx.workspace.join("a/b")).unwrap();
    let out = sh(&f.ctx, json!({"command": "cd a/b"})).await;
    assert_eq!(out.meta["cwd"], "a/b");
    let out = sh(&f.ctx, json!({"command": "pwd"})).await;
    assert_eq!(
        text(&out).trim(),
        f.ctx.workspace.join("a/b").to_str().unwrap()
    );
    // A relative cwd argument is one-shot and relative to the session directory.
    std::fs::create_dir(f.ctx.workspace.join("a/b/c")).unwrap();
    let out = sh(&f.ctx, json!({"command": "pwd", "cwd": "c"})).await;
    assert!(text(&out).trim().ends_with("a/b/c"));
    assert!(out.meta.get("cwd").is_none());
    let out = sh(&f.ctx, json!({"command": "pwd"})).await;
    assert!(text(&out).trim().ends_with("a/b"));
}

#[tokio::test]
async fn cd_outside_the_workspace_is_refused() {
    let f = fixture();
    let out = sh(&f.ctx, json!({"command": "cd / && pwd"})).await;
    assert!(text(&out).contains("outside the workspace"));
    assert!(out.meta.get("cwd").is_none());
    let out = sh(&f.ctx, json!({"command": "pwd"})).await;
    assert_eq!(text(&out).trim(), f.ctx.workspace.to_str().unwrap());
    let err = ExecShell
        .call(&f.ctx, json!({"command": "pwd", "cwd": "../"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::OutsideWorkspace);
}

#[tokio::test]
async fn environment_does_not_persist() {
    let f = fixture();
    sh(&f.ctx, json!({"command": "export CODESMITH_TEST_VAR=1"})).await;
    let out = sh(
        &f.ctx,
        json!({"command": "echo \"[${CODESMITH_TEST_VAR:-unset}]\""}),
    )
    .await;
    assert_eq!(text(&out), "[unset]\n");
}

#[tokio::test]
async fn timeout_kills_the_process_group() {
    let f = fixture();
    let marker = f.ctx.workspace.join("survived");
    let cmd = format!(
        "echo started; (sleep 2; touch {}) & sleep 3",
        marker.display()
    );
    let t0 = Instant::now();
    let err = ExecShell
        .call(&f.ctx, json!({"command": cmd, "timeout_secs": 1}))
        .await
        .unwrap_err();
    assert!(
        t0.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(err.code, ErrorCode::Timeout);
    assert!(err.message.contains("1 s timeout"), "{}", err.message);
    assert_eq!(err.details["output"], "started\n");
    // The backgrounded subshell was in the group and died with it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !marker.exists(),
        "a process of the group outlived the timeout"
    );
}

#[tokio::test]
async fn big_output_is_capped_spilled_and_retrievable() {
    let f = fixture();
    let out = sh(&f.ctx, json!({"command": "seq 1 20000"})).await;
    let shown = text(&out);
    assert!(shown.starts_with("1\n2\n3\n"));
    assert!(shown.trim_end().ends_with("19999\n20000"));
    assert!(shown.len() < 30_500);
    assert_eq!(out.meta["truncated"], true);
    let reference = out.meta["ref"].as_str().unwrap().to_string();
    assert!(reference.contains(&std::process::id().to_string()));
    assert!(shown.contains(&format!(
        "retrieve_tool_result {{\"ref\": \"{reference}\"}}"
    )));

    let expected: String = (1..=20000).map(|i| format!("{i}\n")).collect();
    let mut offset = 0u64;
    let mut all = String::new();
    loop {
        let page = RetrieveToolResult
            .call(&f.ctx, json!({"ref": reference, "offset": offset}))
            .await
            .unwrap();
        all.push_str(page.output.as_str().unwrap());
        match page.meta["next_offset"].as_u64() {
            Some(n) => offset = n,
            None => break,
        }
    }
    assert_eq!(all, expected);
    assert_eq!(spill::cleanup_old(&f.ctx.home).unwrap(), 0);
}

#[tokio::test]
async fn background_task_start_poll_finish() {
    let f = fixture();
    let started = TaskShellStart
        .call(&f.ctx, json!({"command": "echo one; sleep 0.3; echo two"}))
        .await
        .unwrap();
    let id = started.meta["id"].as_str().unwrap().to_string();
    let first = TaskShellPoll.call(&f.ctx, json!({"id": id})).await.unwrap();
    let second = TaskShellPoll
        .call(&f.ctx, json!({"id": id, "wait_secs": 3}))
        .await
        .unwrap();
    assert_eq!(second.meta["status"], "exited");
    assert_eq!(second.meta["exit_code"], 0);
    let combined = format!("{}{}", text(&first), text(&second));
    assert_eq!(combined, "one\ntwo\n");
    let third = TaskShellPoll.call(&f.ctx, json!({"id": id})).await.unwrap();
    assert_eq!(text(&third), "");
    let err = TaskShellPoll
        .call(&f.ctx, json!({"id": "task-999"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
}

#[tokio::test]
async fn background_task_cancel_kills_it() {
    let f = fixture();
    let marker = f.ctx.workspace.join("late");
    let cmd = format!("echo hi; sleep 2; touch {}", marker.display());
    let started = TaskShellStart
        .call(&f.ctx, json!({"command": cmd}))
        .await
        .unwrap();
    let id = started.meta["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cancelled = TaskShellCancel
        .call(&f.ctx, json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(cancelled.meta["status"], "cancelled");
    assert_eq!(text(&cancelled), "hi\n");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert!(!marker.exists());
}

#[tokio::test]
async fn task_spills_only_when_final() {
    let f = fixture();
    let started = TaskShellStart
        .call(&f.ctx, json!({"command": "seq 1 20000; sleep 0.5"}))
        .await
        .unwrap();
    let id = started.meta["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let running = TaskShellPoll.call(&f.ctx, json!({"id": id})).await.unwrap();
    assert_eq!(running.meta["status"], "running");
    assert!(running.meta.get("ref").is_none());
    assert!(text(&running).contains("still running"));
    assert!(!spill::spill_dir(&f.ctx.home).exists());
    let done = TaskShellPoll
        .call(&f.ctx, json!({"id": id, "wait_secs": 3}))
        .await
        .unwrap();
    assert_eq!(done.meta["status"], "exited");
    // The final poll has little new output, so nothing needs cutting or spilling.
    assert!(done.meta.get("ref").is_none());

    // A final poll that sees a big delta spills the task's whole output.
    let started = TaskShellStart
        .call(&f.ctx, json!({"command": "sleep 0.2; seq 1 20000"}))
        .await
        .unwrap();
    let id = started.meta["id"].as_str().unwrap().to_string();
    let done = TaskShellPoll
        .call(&f.ctx, json!({"id": id, "wait_secs": 3}))
        .await
        .unwrap();
    let reference = done.meta["ref"].as_str().unwrap();
    let saved = std::fs::read_to_string(spill::spill_dir(&f.ctx.home).join(reference)).unwrap();
    assert_eq!(saved.lines().count(), 20000);
}

#[test]
fn catalogue_is_byte_stable_and_teaches_alternatives() {
    let mut registry = codesmith_tools::Registry::new();
    for tool in codesmith_tools::shell::shell_tools() {
        registry.register(tool);
    }
    assert_eq!(
        registry.names(),
        vec![
            "exec_shell",
            "pty_end",
            "pty_list",
            "pty_read",
            "pty_send",
            "pty_start",
            "retrieve_tool_result",
            "task_shell_cancel",
            "task_shell_poll",
            "task_shell_start"
        ]
    );
    let a = serde_json::to_string(&registry.specs()).unwrap();
    let b = serde_json::to_string(&registry.specs()).unwrap();
    assert_eq!(a, b);
    let exec = registry.get("exec_shell").unwrap();
    assert!(exec.description().contains("instead of"));
    assert!(exec.description().contains("Examples:"));
}

#[tokio::test]
async fn deleted_session_directory_falls_back_to_the_root() {
    let f = fixture();
    std::fs::create_dir(f.ctx.workspace.join("gone")).unwrap();
    sh(&f.ctx, json!({"command": "cd gone"})).await;
    std::fs::remove_dir(f.ctx.workspace.join("gone")).unwrap();
    let out = sh(&f.ctx, json!({"command": "pwd"})).await;
    assert_eq!(text(&out).trim(), f.ctx.workspace.to_str().unwrap());
}

/// The printf from the bug report: colours and a title escape reach the model as plain
/// lines; a cut output's spill keeps every raw byte.
#[tokio::test]
async fn terminal_escapes_never_reach_the_model() {
    let f = fixture();
    let cmd = r"printf '\033[31mRED\033[0m\n\033]0;title\007x\n'";
    let out = sh(&f.ctx, json!({"command": cmd})).await;
    assert_eq!(text(&out), "RED\nx\n");
    // A progress bar redrawn with carriage returns is its last state.
    let out = sh(
        &f.ctx,
        json!({"command": r"for i in 10 50 100; do printf '\r%3d%%' $i; done; printf ' done\n'"}),
    )
    .await;
    assert_eq!(text(&out), "100% done\n");
    // Oversized coloured output: the model's view has no ESC, the spill has all of them.
    let out = sh(
        &f.ctx,
        json!({"command": r"for i in $(seq 1 4000); do printf '\033[32mok %05d\033[0m\n' $i; done"}),
    )
    .await;
    assert!(!text(&out).contains('\x1b'));
    assert!(
        text(&out).starts_with("ok 00001\nok 00002\n"),
        "{}",
        text(&out)
    );
    let reference = out.meta["ref"].as_str().unwrap();
    let saved = std::fs::read(spill::spill_dir(&f.ctx.home).join(reference)).unwrap();
    assert!(saved.starts_with(b"\x1b[32mok 00001\x1b[0m\n"));
    assert_eq!(saved.iter().filter(|b| **b == 0x1b).count(), 8000);
    let page = RetrieveToolResult
        .call(&f.ctx, json!({"ref": reference, "limit": 36}))
        .await
        .unwrap();
    assert_eq!(text(&page), "ok 00001\nok 00002\n");
}

#[tokio::test]
async fn background_task_output_is_reduced_too() {
    let f = fixture();
    let started = TaskShellStart
        .call(
            &f.ctx,
            json!({"command": r"printf '\033[1mbold\033[0m\a\n\033]52;c;cHduZWQ=\007done\n'"}),
        )
        .await
        .unwrap();
    let id = started.meta["id"].as_str().unwrap().to_string();
    let done = TaskShellPoll
        .call(&f.ctx, json!({"id": id, "wait_secs": 3}))
        .await
        .unwrap();
    assert_eq!(done.meta["status"], "exited");
    assert_eq!(text(&done), "bold\ndone\n");
}

#[tokio::test]
async fn a_sequence_split_between_polls_is_removed_whole() {
    let f = fixture();
    let started = TaskShellStart
        .call(
            &f.ctx,
            json!({"command": r"printf 'a\033[3'; sleep 1; printf '1mred\n'"}),
        )
        .await
        .unwrap();
    let id = started.meta["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let running = TaskShellPoll.call(&f.ctx, json!({"id": id})).await.unwrap();
    assert_eq!(running.meta["status"], "running");
    // The open sequence waits for the next poll, and the poll says so.
    assert!(
        text(&running).starts_with("a\n[3 bytes held back"),
        "{}",
        text(&running)
    );
    let done = TaskShellPoll
        .call(&f.ctx, json!({"id": id, "wait_secs": 3}))
        .await
        .unwrap();
    assert_eq!(done.meta["status"], "exited");
    assert_eq!(text(&done), "red\n");
}

#[tokio::test]
async fn required_sandbox_without_isolation_refuses_shell_commands() {
    let f = fixture();
    let ctx = ToolContext::new(f.ctx.workspace.clone(), f.ctx.home.clone())
        .with_sandbox(codesmith_tools::sandbox::Sandbox::none().with_required(true));
    let marker = f.ctx.workspace.join("ran");
    let cmd = format!("touch {}", marker.display());
    let err = ExecShell
        .call(&ctx, json!({"command": cmd}))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(err.hint.contains("install bubblewrap"), "{}", err.hint);
    assert!(err.hint.contains("required = false"), "{}", err.hint);
    let err = TaskShellStart
        .call(&ctx, json!({"command": cmd}))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!marker.exists(), "a refused command ran");
    // Not required: the same command runs bare.
    let out = sh(&f.ctx, json!({"command": cmd})).await;
    assert_eq!(out.meta["exit_code"], 0);
    assert!(marker.exists());
}

#[tokio::test]
async fn spilled_output_under_the_home_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    let out = sh(
        &f.ctx,
        json!({"command": "head -c 40000 /dev/zero | tr '\\0' x"}),
    )
    .await;
    assert!(out.meta.get("ref").is_some(), "{:?}", out.meta);
    let dir = codesmith_tools::spill::spill_dir(&f.ctx.home);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for e in std::fs::read_dir(&dir).unwrap() {
        assert_eq!(mode(&e.unwrap().path()), 0o600);
    }
}

#[tokio::test]
async fn a_setsid_command_leaves_no_process_after_its_timeout() {
    let f = fixture();
    let argv = ["sleep", "40"];
    assert!(
        live_processes(&argv).is_empty(),
        "a `sleep 40` runs already"
    );
    let t0 = Instant::now();
    let err = ExecShell
        .call(
            &f.ctx,
            json!({"command": "setsid sleep 40; echo after", "timeout_secs": 1}),
        )
        .await
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(err.code, ErrorCode::Timeout);
    assert_eq!(
        survivors(&argv),
        Vec::<i32>::new(),
        "sleep outlived its command"
    );
    // The result names what was killed, including the detached sleep, and how long it ran.
    assert!(
        err.message.contains("killed 2 processes (bash, sleep)"),
        "{}",
        err.message
    );
    assert!(err.message.contains("ran for 1."), "{}", err.message);
    assert_eq!(err.details["killed"].as_array().unwrap().len(), 2);
    assert!(!err.details["output"].as_str().unwrap().contains("after"));
}

#[tokio::test]
async fn processes_left_in_the_background_die_with_their_command() {
    let f = fixture();
    let nohup = ["sleep", "41"];
    let double_fork = ["sleep", "42"];
    let out = sh(
        &f.ctx,
        json!({"command": "nohup sleep 41 >/dev/null 2>&1 & disown; (setsid sleep 42 >/dev/null 2>&1 &); echo done"}),
    )
    .await;
    assert_eq!(out.meta["exit_code"], 0);
    assert!(text(&out).starts_with("done\n"), "{}", text(&out));
    // Two sleeps (or the shells about to become them) were left behind and killed.
    assert!(
        text(&out).contains("running in the background; killed when it ended"),
        "{}",
        text(&out)
    );
    assert!(
        out.meta["killed_leftovers"].as_u64().unwrap() >= 2,
        "{:?}",
        out.meta
    );
    assert_eq!(survivors(&nohup), Vec::<i32>::new());
    assert_eq!(survivors(&double_fork), Vec::<i32>::new());
}

#[tokio::test]
async fn a_cancelled_command_is_killed_with_its_tree() {
    let f = fixture();
    let cancel = codesmith_tools::CancellationToken::new();
    let ctx = f.ctx.with_cancel(cancel.clone());
    let marker = f.ctx.workspace.join("marker");
    let cmd = format!("setsid sleep 43 & sleep 2; touch {}", marker.display());
    let trigger = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let t0 = Instant::now();
    let err = codesmith_tools::call_tool(&ExecShell, &ctx, json!({"command": cmd}))
        .await
        .unwrap_err();
    trigger.await.unwrap();
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(err.code, ErrorCode::Cancelled);
    assert!(
        err.message.contains("cancelled after 0."),
        "{}",
        err.message
    );
    assert_eq!(survivors(&["sleep", "43"]), Vec::<i32>::new());
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(
        !marker.exists(),
        "the command ran on after it was cancelled"
    );
}

#[tokio::test]
async fn a_cancelled_background_task_takes_its_detached_children_along() {
    let f = fixture();
    let started = TaskShellStart
        .call(&f.ctx, json!({"command": "setsid sleep 44 & wait"}))
        .await
        .unwrap();
    let id = started.meta["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(2);
    while live_processes(&["sleep", "44"]).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancelled = TaskShellCancel
        .call(&f.ctx, json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(cancelled.meta["status"], "cancelled");
    assert!(
        cancelled.meta["killed"].as_str().unwrap().contains("sleep"),
        "{:?}",
        cancelled.meta
    );
    assert_eq!(survivors(&["sleep", "44"]), Vec::<i32>::new());
}

/// A program the policy lets run without asking (a test runner) runs project code, which
/// can write a file cargo or direnv runs later: nobody approved it, so it is undone and the
/// model is told how to make the change with approval; under `auto` it stays, named.
#[tokio::test]
async fn run_later_files_a_command_writes_are_undone_unless_the_call_may_keep_them() {
    let f = fixture();
    std::fs::write(
        f.ctx.workspace.join(".npmrc"),
        "registry=https://r.example/\n",
    )
    .unwrap();
    let script = "mkdir -p .cargo && printf '[build]\\nrustc-wrapper = \"/tmp/x\"\\n' > .cargo/config.toml; \
                  echo 'script-shell=/tmp/x' >> .npmrc; echo 'curl x | sh' > .envrc; \
                  echo fine > src.txt; echo done";
    let out = sh(&f.ctx, json!({"command": script})).await;
    let t = text(&out);
    assert!(t.contains("done"), "{t}");
    assert!(
        t.contains(".cargo/config.toml") && t.contains("write_file"),
        "{t}"
    );
    assert!(!f.ctx.workspace.join(".cargo/config.toml").exists());
    assert!(!f.ctx.workspace.join(".envrc").exists());
    assert_eq!(
        std::fs::read_to_string(f.ctx.workspace.join(".npmrc")).unwrap(),
        "registry=https://r.example/\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.ctx.workspace.join("src.txt")).unwrap(),
        "fine\n"
    );
    assert_eq!(
        out.meta["runs_later_written"].as_array().unwrap().len(),
        3,
        "{out:?}"
    );

    let auto = f.ctx.keeping_run_later();
    let out = sh(&auto, json!({"command": "echo 'use nix' > .envrc"})).await;
    assert!(
        text(&out).contains(".envrc (run by direnv; kept)"),
        "{}",
        text(&out)
    );
    assert!(f.ctx.workspace.join(".envrc").exists());
}

/// A pty read under a flood answers within its timeout (and a second), with the newest
/// output and a marker counting what it left out, however long the session has flooded.
#[tokio::test]
async fn a_flooding_terminal_session_answers_within_its_timeout_with_its_newest_output() {
    use codesmith_tools::shell::{PtyEnd, PtyRead, PtyStart};
    let f = fixture();
    let bound = |secs: u64| Duration::from_secs(secs) + Duration::from_secs(1);
    let started = Instant::now();
    let out = PtyStart
        .call(
            &f.ctx,
            json!({"command": "yes FLOODLINE", "timeout_secs": 2}),
        )
        .await
        .unwrap();
    assert!(
        started.elapsed() < bound(2),
        "pty_start took {:?}",
        started.elapsed()
    );
    assert_eq!(out.meta["status"], "running");
    assert!(text(&out).contains("FLOODLINE\n"), "{}", text(&out));
    assert!(text(&out).contains("bytes omitted"), "{}", text(&out));
    let id = out.meta["id"].as_str().unwrap().to_string();
    // A pattern that never shows keeps the read searching the flood until its timeout.
    for args in [
        json!({"id": id, "timeout_secs": 2}),
        json!({"id": id, "timeout_secs": 2, "wait_for": "NEVER_PRINTED$"}),
        json!({"id": id, "timeout_secs": 1}),
    ] {
        let started = Instant::now();
        let out = PtyRead.call(&f.ctx, args.clone()).await.unwrap();
        let secs = args["timeout_secs"].as_u64().unwrap();
        assert!(
            started.elapsed() < bound(secs),
            "{args}: took {:?}",
            started.elapsed()
        );
        assert_eq!(out.meta["waited"], "timed_out");
        let shown = text(&out);
        // The newest output: the flood's lines to the end (the last one may be half written).
        let last = shown.trim_end().rsplit('\n').next().unwrap();
        assert!(
            "FLOODLINE".starts_with(last) && !last.is_empty(),
            "{shown:?}"
        );
        assert!(shown.contains("\nFLOODLINE\nFLOODLINE\n"), "{shown:?}");
        assert!(shown.contains("bytes omitted"), "{args}: {shown:?}");
        assert!(out.meta["omitted_bytes"].as_u64().unwrap() > 0);
        assert!(shown.len() < 31_000, "{args}: {} bytes", shown.len());
    }
    let started = Instant::now();
    let end = PtyEnd.call(&f.ctx, json!({"id": id})).await.unwrap();
    assert_eq!(end.meta["status"], "ended");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "pty_end took {:?}",
        started.elapsed()
    );
}

/// `wait_for` searches every byte that arrived, not only the newest: a token printed in
/// the middle of one large burst (and one split across the search's chunks) is found.
#[tokio::test]
async fn wait_for_finds_a_pattern_inside_a_large_burst() {
    use codesmith_tools::shell::{PtyEnd, PtyStart};
    let f = fixture();
    for (before, after) in [(200_000, 200_000), (65_530, 300_000), (1_000, 150_000)] {
        let script = format!(
            "import sys, time\nsys.stdout.write('x' * {before} + 'READY_TOKEN' + 'y' * {after})\nsys.stdout.flush()\ntime.sleep(30)\n"
        );
        std::fs::write(f.ctx.workspace.join("burst.py"), script).unwrap();
        let started = Instant::now();
        let out = PtyStart
            .call(
                &f.ctx,
                json!({"command": "python3 burst.py", "wait_for": "READY_TOKEN", "timeout_secs": 8}),
            )
            .await
            .unwrap();
        assert_eq!(out.meta["waited"], "matched", "{before}: {:?}", out.meta);
        assert!(started.elapsed() < Duration::from_secs(8));
        let id = out.meta["id"].as_str().unwrap().to_string();
        PtyEnd.call(&f.ctx, json!({"id": id})).await.unwrap();
    }
}
