//! Running one hook: start it as a host program, hand it its input, read its answer.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::Hook;
use crate::host_programs::{HostProgram, Workspace, find_program, host_command};

/// The most bytes kept of each of a hook's stdout and stderr; the rest is read and
/// dropped, so a chatty hook can neither block on a full pipe nor fill memory.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// What a hook answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// Exit 0: go on. `context` is what its stdout adds (plain text, or a JSON answer's
    /// `additionalContext`); `approve` when its JSON said `"decision": "approve"` (or
    /// `permissionDecision: "allow"`).
    Continue {
        /// Text for the model (used by `UserPromptSubmit` and `SessionStart`).
        context: Option<String>,
        /// The hook raised no objection and said so; the approval gate still decides.
        approve: bool,
    },
    /// Exit 2 (its stderr is the reason), or exit 0 with `"decision": "block"` (or
    /// `permissionDecision: "deny"`) and a `reason`.
    Block {
        /// Why, for the model.
        reason: String,
    },
    /// Any other exit status, a signal, a hook that could not start or outlived its
    /// timeout (then it was killed with its whole process group): the user is told, and
    /// the session goes on as if the hook had not run.
    Warn {
        /// What went wrong, for the user.
        message: String,
    },
}

/// Runs `hook` with `input` (one JSON object) on its stdin, from the session in
/// `workspace`, and reads its answer (see [`HookOutcome`]). Never fails: every problem
/// is a [`HookOutcome::Warn`].
///
/// The program is found outside the workspace ([`find_program`]) and an argument that
/// names a path inside it is refused, since a hook runs outside the sandbox and the
/// model can change the workspace. It starts in `/` with the host allowlist of
/// environment variables, the names in its `env`, and `CODESMITH_PROJECT_DIR` (the
/// workspace) and `CODESMITH_HOOK_EVENT`; in its own process group, which is killed whole
/// when its timeout passes.
pub async fn run_hook(hook: &Hook, input: &Value, workspace: &Path) -> HookOutcome {
    let label = hook.label();
    let warn = |why: String| HookOutcome::Warn {
        message: format!("{} hook `{label}`: {why}", hook.event.as_str()),
    };
    let Some(program) = hook
        .command
        .first()
        .and_then(|p| find_program(p, workspace))
    else {
        return warn(
            "its program was not found outside the workspace (hooks run outside the sandbox, \
             so a program the workspace holds is never run); give an absolute path or a name \
             in PATH"
                .into(),
        );
    };
    let ws = Workspace::new(workspace);
    if let Some(arg) = hook.command[1..].iter().find_map(|a| ws.named_in(a)) {
        return warn(format!(
            "an argument names {arg} inside the workspace, which the model can change, and \
             hooks run outside the sandbox: keep hook scripts outside the project"
        ));
    }
    let mut std_cmd = host_command(HostProgram::Hook, &program, workspace);
    std_cmd.args(&hook.command[1..]);
    for name in &hook.env {
        if let Some(value) = std::env::var_os(name) {
            std_cmd.env(name, value);
        }
    }
    std_cmd
        .env("CODESMITH_PROJECT_DIR", workspace)
        .env("CODESMITH_HOOK_EVENT", hook.event.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut std_cmd, 0);
    let mut cmd = tokio::process::Command::from(std_cmd);
    cmd.kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return warn(format!("it could not start: {e}")),
    };
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let mut bytes = serde_json::to_vec(input).unwrap_or_default();
    bytes.push(b'\n');
    let stdin = child.stdin.take();
    // A hook that never reads its input must not stall the session: the write runs
    // beside the wait, and a closed pipe is no error.
    let writer = async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        }
    };
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let work = async {
        let (_, out, err, status) = tokio::join!(
            writer,
            read_bounded(stdout),
            read_bounded(stderr),
            child.wait()
        );
        (out, err, status)
    };
    let (out, err, status) = match tokio::time::timeout(hook.timeout, work).await {
        Ok(done) => done,
        Err(_) => {
            kill_group(pgid);
            let _ = child.kill().await;
            return warn(format!(
                "it did not finish within {} s and was killed with its process group; the \
                 session goes on without it (raise timeout_secs if it needs longer)",
                hook.timeout.as_secs()
            ));
        }
    };
    let status = match status {
        Ok(s) => s,
        Err(e) => return warn(format!("waiting for it failed: {e}")),
    };
    let stderr_text = String::from_utf8_lossy(&err).trim().to_string();
    match status.code() {
        Some(0) => read_answer(&String::from_utf8_lossy(&out)),
        Some(2) => HookOutcome::Block {
            reason: if stderr_text.is_empty() {
                format!("the hook `{label}` blocked it (exit 2) without saying why")
            } else {
                stderr_text
            },
        },
        code => {
            let how = code.map_or_else(
                || "was ended by a signal".to_string(),
                |c| format!("exited with status {c}"),
            );
            let said = if stderr_text.is_empty() {
                String::new()
            } else {
                format!(": {}", codesmith_policy::visible_line(&stderr_text, 300))
            };
            warn(format!(
                "it {how}{said} (only exit 2 blocks; the session goes on)"
            ))
        }
    }
}

/// Kills the hook's whole process group (it leads one: `process_group(0)`).
fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid.filter(|p| *p > 1) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Reads `pipe` to its end, keeping the first [`MAX_OUTPUT_BYTES`].
async fn read_bounded(pipe: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return kept;
    };
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// The answer of a hook that exited 0: a JSON object (`decision`, `reason`,
/// `hookSpecificOutput.permissionDecision` / `permissionDecisionReason` /
/// `additionalContext`) or plain text (context).
fn read_answer(stdout: &str) -> HookOutcome {
    let text = stdout.trim();
    let answer = match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return HookOutcome::Continue {
                context: (!text.is_empty()).then(|| text.to_string()),
                approve: false,
            };
        }
    };
    let specific = answer.get("hookSpecificOutput");
    let field = |v: Option<&Value>, key: &str| {
        v.and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let decision = field(Some(&answer), "decision").or_else(|| {
        field(specific, "permissionDecision").map(|d| match d.as_str() {
            "deny" => "block".to_string(),
            "allow" => "approve".to_string(),
            other => other.to_string(),
        })
    });
    let reason =
        field(Some(&answer), "reason").or_else(|| field(specific, "permissionDecisionReason"));
    let context = field(specific, "additionalContext");
    match decision.as_deref() {
        Some("block") => HookOutcome::Block {
            reason: reason.unwrap_or_else(|| "a hook blocked it without saying why".into()),
        },
        Some("approve") => HookOutcome::Continue {
            context,
            approve: true,
        },
        _ => HookOutcome::Continue {
            context,
            approve: false,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hooks::{HookSource, Hooks, HooksSection};
    use std::time::{Duration, Instant};

    fn hook(script: &str, timeout: u64) -> Hook {
        let section: HooksSection = toml::from_str::<toml::Table>(&format!(
            "[[Stop]]\ncommand = [\"/bin/sh\", \"-c\", {script:?}]\ntimeout_secs = {timeout}\n"
        ))
        .unwrap()
        .try_into()
        .unwrap();
        Hooks::from_section(&section, HookSource::User)
            .unwrap()
            .all()[0]
            .clone()
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn exit_codes_and_json_answers_mean_what_claude_code_hooks_mean() {
        let ws = tempfile::tempdir().unwrap();
        let run = |s: &str| {
            block_on(run_hook(
                &hook(s, 5),
                &serde_json::json!({"a": 1}),
                ws.path(),
            ))
        };
        assert_eq!(
            run("echo 'blocked by policy X' >&2; exit 2"),
            HookOutcome::Block {
                reason: "blocked by policy X".into()
            }
        );
        assert_eq!(
            run("cat >/dev/null; echo extra context"),
            HookOutcome::Continue {
                context: Some("extra context".into()),
                approve: false
            }
        );
        assert_eq!(
            run(r#"echo '{"decision": "block", "reason": "no"}'"#),
            HookOutcome::Block {
                reason: "no".into()
            }
        );
        assert_eq!(
            run(r#"echo '{"decision": "approve"}'"#),
            HookOutcome::Continue {
                context: None,
                approve: true
            }
        );
        assert!(
            matches!(run("exit 1"), HookOutcome::Warn { message } if message.contains("status 1"))
        );
        // The input arrives on stdin as one JSON line.
        assert_eq!(
            run("read line; echo \"got $line\""),
            HookOutcome::Continue {
                context: Some("got {\"a\":1}".into()),
                approve: false
            }
        );
    }

    #[test]
    fn a_hanging_hook_is_killed_with_its_group_at_its_timeout() {
        let ws = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let out = block_on(run_hook(
            &hook("sleep 30 & sleep 31; echo never", 1),
            &serde_json::json!({}),
            ws.path(),
        ));
        assert!(
            matches!(&out, HookOutcome::Warn { message } if message.contains("did not finish within 1 s")),
            "{out:?}"
        );
        assert!(start.elapsed() < Duration::from_secs(5));
        // Neither sleep is left behind.
        std::thread::sleep(Duration::from_millis(200));
        let left = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
            .any(|c| c == b"sleep\x0030\x00" || c == b"sleep\x0031\x00");
        assert!(!left, "a hook's process outlived its timeout");
    }
}
