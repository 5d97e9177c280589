//! Every way a command can detach from its shell, without a sandbox: whatever it started
//! is killed when the command ends, times out or is cancelled, checked through `/proc`.

#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use codesmith_testkit::{live_processes, survivors_after};
use codesmith_tools::shell::{ExecShell, become_child_subreaper};
use codesmith_tools::{ErrorCode, Tool, ToolContext};
use serde_json::json;

struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    ctx: ToolContext,
}

fn fixture() -> Fixture {
    // As the binary does at start-up.
    become_child_subreaper();
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(ws.path().canonicalize().unwrap(), home.path().to_path_buf());
    assert!(
        !ctx.sandbox.backend.isolates(),
        "these tests run unsandboxed"
    );
    Fixture {
        _dirs: (ws, home),
        ctx,
    }
}

fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("-c")
        .arg("pass")
        .stdin(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One way of leaving `sleep SECS` behind.
struct Attack {
    name: &'static str,
    /// The shell command that leaves it.
    command: String,
    /// The `sleep` argument that identifies what it left.
    secs: String,
}

/// Every attack, each with its own `sleep` argument from `base + 1` on.
fn attacks(base: u32) -> Vec<Attack> {
    let mut all: Vec<(&'static str, &'static str)> = vec![
        ("setsid &", "setsid sleep SECS &"),
        ("setsid -f", "setsid -f sleep SECS"),
        ("setsid -f env -i", "setsid -f env -i sh -c 'sleep SECS'"),
        (
            "nohup & disown",
            "nohup sleep SECS >/dev/null 2>&1 & disown",
        ),
        ("double fork", "(sleep SECS &)"),
        (
            "env -i double fork in a new session",
            "env -i bash -c '(setsid sleep SECS >/dev/null 2>&1 &)'",
        ),
        (
            "ignores SIGTERM, SIGHUP and SIGINT",
            "setsid -f env -i sh -c 'trap \"\" TERM HUP INT; sleep SECS; true'",
        ),
    ];
    if python3() {
        all.push((
            "python daemon (fork, setsid, fork, empty environment)",
            "python3 -c 'import os\nif os.fork(): os._exit(0)\nos.setsid()\nif os.fork(): \
             os._exit(0)\nos.execvpe(\"sleep\", [\"sleep\", \"SECS\"], {})'",
        ));
    }
    all.into_iter()
        .zip(base + 1..)
        .map(|((name, command), secs)| Attack {
            name,
            command: command.replace("SECS", &secs.to_string()),
            secs: secs.to_string(),
        })
        .collect()
}

/// The attacks that left a `sleep` running; kills those so a failure leaks nothing.
fn survivors(attacks: &[Attack]) -> Vec<&'static str> {
    let mut alive = Vec::new();
    for attack in attacks {
        let left = survivors_after(&["sleep", &attack.secs], Duration::from_millis(500));
        if !left.is_empty() {
            alive.push(attack.name);
            for pid in left {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status();
            }
        }
    }
    alive
}

/// Waits (bounded) until `sleep SECS` runs.
/// Polls until the attack's detached `sleep` runs; bounded at 10 s because a Python
/// start-up on a loaded 2-core machine alone can take over 2 s.
fn wait_started(secs: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if !live_processes(&["sleep", secs]).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[tokio::test]
async fn nothing_a_finished_command_detached_survives_it() {
    let f = fixture();
    let attacks = attacks(7300);
    for Attack { name, command, .. } in &attacks {
        let out = ExecShell
            .call(
                &f.ctx,
                json!({"command": format!("{command}\necho started")}),
            )
            .await
            .unwrap();
        assert_eq!(out.meta["exit_code"], 0, "{name}: {:?}", out.output);
    }
    let alive = survivors(&attacks);
    eprintln!(
        "detach attacks on a finished command: {} of {} left a process alive: {alive:?}",
        alive.len(),
        attacks.len()
    );
    assert!(
        alive.is_empty(),
        "still running after their command: {alive:?}"
    );
}

#[tokio::test]
async fn nothing_a_timed_out_command_detached_survives_it() {
    let f = fixture();
    let attacks = attacks(7320);
    for Attack { name, command, .. } in &attacks {
        // The detached process starts, then the command outlives its timeout.
        let script = format!("{command}\nsleep 30");
        let t0 = Instant::now();
        let err = ExecShell
            .call(&f.ctx, json!({"command": script, "timeout_secs": 1}))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Timeout, "{name}: {}", err.message);
        assert!(
            t0.elapsed() < Duration::from_secs(4),
            "{name}: {:?}",
            t0.elapsed()
        );
    }
    let alive = survivors(&attacks);
    eprintln!(
        "detach attacks on a timed-out command: {} of {} left a process alive: {alive:?}",
        alive.len(),
        attacks.len()
    );
    assert!(
        alive.is_empty(),
        "still running after the timeout: {alive:?}"
    );
}

#[tokio::test]
async fn nothing_a_cancelled_command_detached_survives_it() {
    let f = fixture();
    let attacks = attacks(7340);
    for Attack {
        name,
        command,
        secs,
    } in &attacks
    {
        let cancel = codesmith_tools::CancellationToken::new();
        let ctx = f.ctx.with_cancel(cancel.clone());
        let watch = secs.clone();
        let trigger = tokio::task::spawn_blocking(move || {
            let started = wait_started(&watch);
            cancel.cancel();
            started
        });
        let err = codesmith_tools::call_tool(
            &ExecShell,
            &ctx,
            json!({"command": format!("{command}\nsleep 30")}),
        )
        .await
        .unwrap_err();
        assert!(
            trigger.await.unwrap(),
            "{name}: the detached sleep never started"
        );
        assert_eq!(err.code, ErrorCode::Cancelled, "{name}: {}", err.message);
    }
    let alive = survivors(&attacks);
    eprintln!(
        "detach attacks on a cancelled command: {} of {} left a process alive: {alive:?}",
        alive.len(),
        attacks.len()
    );
    assert!(
        alive.is_empty(),
        "still running after the cancel: {alive:?}"
    );
}

#[tokio::test]
async fn a_command_that_kills_its_own_reaper_leaves_nothing_behind() {
    let f = fixture();
    // Each leaves a process with no marker, outside the command's group, whose parent
    // dies, then SIGKILLs the reaper that holds it (the shell's parent).
    let attacks = [
        ("new session", "(setsid env -i sleep 7381 &)", "7381"),
        (
            "own process group, same session",
            "(env -i perl -e 'setpgrp(0, 0); exec \"sleep\", \"7382\"' &)",
            "7382",
        ),
    ];
    let mut attacks = attacks.to_vec();
    let gdb = std::process::Command::new("gdb")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if gdb {
        // A debugger attached to the reaper turns its subreaper flag off
        // (PR_SET_CHILD_SUBREAPER is 36); the reaper itself lives on.
        attacks.push((
            "reaper no longer a subreaper",
            "gdb -q -batch -p $PPID -ex 'call (int)prctl(36,0,0,0,0)' >/dev/null 2>&1\n\
             (setsid env -i sleep 7383 &)\nexit 0\n",
            "7383",
        ));
    }
    for (name, command, secs) in attacks {
        let script = format!("{command}\nsleep 0.2\nkill -9 $PPID\nsleep 30");
        let t0 = Instant::now();
        let _ = ExecShell
            .call(&f.ctx, json!({"command": script, "timeout_secs": 5}))
            .await;
        assert!(t0.elapsed() < Duration::from_secs(8), "{name}");
        let left = survivors_after(&["sleep", secs], Duration::from_millis(500));
        for pid in &left {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
        assert!(left.is_empty(), "{name}: left {left:?} running");
    }
}
