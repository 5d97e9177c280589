//! Running one hook: start it as a host program, hand it its input, read its answer.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::Hook;
use crate::host_programs::{HostProgram, Workspace, find_program, host_command, inline_code};
use crate::shell::tree;

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
    /// timeout without having answered `block` (then it was killed with everything it
    /// started): the user is told, and the session goes on as if the hook had not run.
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
    if let Some(why) = refused_command(&hook.command, workspace) {
        return warn(why);
    }
    let mut std_cmd = host_command(HostProgram::Hook, &program, workspace);
    std_cmd.args(&hook.command[1..]);
    for name in &hook.env {
        if let Some(value) = std::env::var_os(name) {
            std_cmd.env(name, value);
        }
    }
    let marker = tree::new_marker();
    std_cmd
        .env("CODESMITH_PROJECT_DIR", workspace)
        .env("CODESMITH_HOOK_EVENT", hook.event.as_str())
        .env(tree::MARKER_ENV, &marker)
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
    let since = tree::start_time(pgid);
    let mut bytes = serde_json::to_vec(input).unwrap_or_default();
    bytes.push(b'\n');
    // A hook that never reads its input must not stall the session: the write runs
    // beside the wait, and a closed pipe is no error.
    let writer = child.stdin.take().map(|mut stdin| {
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        })
    });
    let (out, err) = (Output::default(), Output::default());
    let mut readers = [
        tokio::spawn(read_bounded(child.stdout.take(), out.clone())),
        tokio::spawn(read_bounded(child.stderr.take(), err.clone())),
    ];
    // The answer is decided when the hook's own process exits (or its timeout passes),
    // never by its pipes closing: a child it left in the background may hold them open.
    let waited = tokio::time::timeout(hook.timeout, child.wait()).await;
    if waited.is_err() {
        let _ = child.start_kill();
    }
    // Then whatever it started goes: its group, and every process carrying its marker or
    // descending from it, `setsid` ones included (orphans come back to CodeSmith, a child
    // subreaper).
    let report = tokio::task::spawn_blocking(move || tree::kill_marked(pgid, &marker, since))
        .await
        .unwrap_or_default();
    let _ = child.wait().await;
    // What it wrote before exiting is in the pipes; a short grace drains them, and a
    // process that still holds them (one that escaped the kill) is not waited for.
    let drained = async {
        for r in &mut readers {
            let _ = r.await;
        }
    };
    let _ = tokio::time::timeout(DRAIN_GRACE, drained).await;
    for r in &readers {
        r.abort();
    }
    if let Some(w) = writer {
        w.abort();
    }
    let (out, err) = (out.take(), err.take());
    let left = if report.survivors.is_empty() {
        String::new()
    } else {
        format!(
            "; {} of what it started could not be killed and may still run",
            report.survivors.len()
        )
    };
    let status = match waited {
        Ok(status) => status,
        Err(_) => {
            // A hook that already answered "block" on stdout before hanging still blocks.
            if let block @ HookOutcome::Block { .. } = read_answer(&String::from_utf8_lossy(&out)) {
                return block;
            }
            return warn(format!(
                "it did not finish within {} s and was killed, with {} it had started{left}; \
                 the session goes on without it (raise timeout_secs if it needs longer)",
                hook.timeout.as_secs(),
                report.describe()
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

/// Why `command` may not run as a hook for `workspace`, or `None`. A hook runs outside
/// the sandbox, so it may run no code the workspace controls (the model can change it) or
/// the model supplies (the hook's input): no argument may resolve (from `/`, where hooks
/// run, through `..` and symlinks) inside the workspace or mention
/// `$CODESMITH_PROJECT_DIR`, and the program and arguments must be understood as running
/// no code but files outside the project ([`inline_code`]: `sh -c`, `python -c`, an
/// interpreter reading its program from stdin or `/dev/stdin`, `python -m` and other code
/// found through a search path, an option not understood, ... are refused), since such
/// code could reach the workspace in ways no check of its text can follow. The answer
/// says how to get the hook accepted: a script outside the project, named by its absolute
/// path. A hook that must run a script of the workspace cannot be made safe: that script
/// is the model's to change.
pub fn refused_command(command: &[String], workspace: &Path) -> Option<String> {
    let ws = Workspace::new(workspace);
    let cwd = Path::new(crate::host_programs::NEUTRAL_DIR);
    if let Some(named) = command.iter().skip(1).find_map(|a| ws.named_in(a, cwd)) {
        return Some(format!(
            "an argument names `{named}`, inside the workspace, which the model can change, \
             and hooks run outside the sandbox; a hook that runs a script of the workspace \
             cannot be made safe: keep hook scripts outside the project"
        ));
    }
    if let Some(why) = inline_code(command, workspace) {
        return Some(format!(
            "{why}. A hook's command line is accepted only when it is understood to run no \
             code but files outside the project (the model can change the project, and it \
             writes part of the hook's input); to run anything else, put the line in a \
             script outside the project (`#!/bin/sh`, then `exec PROGRAM ARGS...`), make it \
             executable and name its absolute path as `command`: a script's contents are \
             yours to vouch for"
        ));
    }
    None
}

/// How long a hook's pipes are drained after it exited and what it started was killed.
const DRAIN_GRACE: Duration = Duration::from_millis(300);

/// What was read of one of a hook's pipes so far (shared with its reader).
#[derive(Debug, Clone, Default)]
struct Output(Arc<Mutex<Vec<u8>>>);

impl Output {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Reads `pipe` to its end into `into`, keeping the first [`MAX_OUTPUT_BYTES`].
async fn read_bounded(pipe: Option<impl AsyncRead + Unpin>, into: Output) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut kept = into.0.lock().unwrap_or_else(|e| e.into_inner());
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

    /// A hook running `script` with /bin/sh from a file outside every workspace.
    fn hook(script: &str, timeout: u64) -> Hook {
        static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let file = dir.path().join(format!("hook-{n}.sh"));
        std::fs::write(&file, script).unwrap();
        command_hook(&["/bin/sh", file.to_str().unwrap()], timeout)
    }

    fn command_hook(command: &[&str], timeout: u64) -> Hook {
        let section: HooksSection = toml::from_str::<toml::Table>(&format!(
            "[[Stop]]\ncommand = {command:?}\ntimeout_secs = {timeout}\n"
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

    /// The answer is the hook's exit: a child it left holding its pipes neither delays it
    /// past a short grace nor turns a block into a warning.
    #[test]
    fn a_block_holds_when_a_background_child_keeps_the_pipes_open() {
        let ws = tempfile::tempdir().unwrap();
        let run = |s: &str| {
            let start = Instant::now();
            let out = block_on(run_hook(&hook(s, 5), &serde_json::json!({}), ws.path()));
            // Well under both the hook's 5 s timeout and the 7 s child.
            assert!(start.elapsed() < Duration::from_millis(4500), "{s}");
            out
        };
        assert_eq!(
            run("( sleep 7; echo x ) & echo no >&2; exit 2"),
            HookOutcome::Block {
                reason: "no".into()
            }
        );
        assert_eq!(
            run(r#"sleep 7 & echo '{"decision":"block","reason":"no"}'"#),
            HookOutcome::Block {
                reason: "no".into()
            }
        );
        assert_eq!(
            run("sleep 7 & echo context"),
            HookOutcome::Continue {
                context: Some("context".into()),
                approve: false
            }
        );
        // A block printed before hanging holds at the timeout.
        assert!(matches!(
            block_on(run_hook(
                &hook(r#"echo '{"decision":"block","reason":"no"}'; sleep 30"#, 1),
                &serde_json::json!({}),
                ws.path()
            )),
            HookOutcome::Block { .. }
        ));
    }

    /// Processes that left the hook's group (`setsid`) are killed too.
    #[test]
    fn what_a_hook_started_in_another_session_dies_with_it() {
        let ws = tempfile::tempdir().unwrap();
        let out = block_on(run_hook(
            &hook(
                "setsid sleep 37 >/dev/null 2>&1 & setsid sh -c 'sleep 38' & trap '' TERM; sleep 39",
                1,
            ),
            &serde_json::json!({}),
            ws.path(),
        ));
        assert!(
            matches!(&out, HookOutcome::Warn { message } if message.contains("was killed")),
            "{out:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
        let left = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
            .any(|c| {
                c.starts_with(b"sleep\x003")
                    && [
                        b"sleep\x0037\x00".as_slice(),
                        b"sleep\x0038\x00",
                        b"sleep\x0039\x00",
                    ]
                    .contains(&c.as_slice())
            });
        assert!(
            !left,
            "a process a hook started in another session outlived it"
        );
    }

    #[test]
    fn workspace_scripts_and_inline_code_are_refused_however_named() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let marker = d.path().join("ran");
        std::fs::write(ws.join("evil.sh"), format!("touch '{}'", marker.display())).unwrap();
        std::os::unix::fs::symlink(&ws, d.path().join("wslink")).unwrap();
        let base = d.path().to_str().unwrap();
        for arg in [
            format!("{}/ws/evil.sh", base.trim_start_matches('/')),
            format!("{base}//ws/evil.sh"),
            format!("{base}/./ws/evil.sh"),
            format!("{base}/wslink/evil.sh"),
        ] {
            let out = block_on(run_hook(
                &command_hook(&["/bin/sh", &arg], 5),
                &serde_json::json!({}),
                &ws,
            ));
            assert!(
                matches!(&out, HookOutcome::Warn { message } if message.contains("inside the workspace")),
                "{arg}: {out:?}"
            );
        }
        let out = block_on(run_hook(
            &command_hook(
                &["/bin/sh", "-c", "sh \"$CODESMITH_PROJECT_DIR/evil.sh\""],
                5,
            ),
            &serde_json::json!({}),
            &ws,
        ));
        assert!(matches!(&out, HookOutcome::Warn { .. }), "{out:?}");
        let out = block_on(run_hook(
            &command_hook(&["/usr/bin/env", "sh", "-c", "true"], 5),
            &serde_json::json!({}),
            &ws,
        ));
        assert!(
            matches!(&out, HookOutcome::Warn { message } if message.contains("inline code")),
            "{out:?}"
        );
        assert!(!marker.exists(), "a workspace script ran as a hook");
    }

    /// The hook's input carries the model's text: a shell or interpreter handed stdin as
    /// its program file, however spelled, is refused before it runs, and so is code found
    /// through a search path from `/` (`python3 -m tmp.x` imports `/tmp/x.py`).
    #[test]
    fn stdin_and_module_programs_are_refused_before_they_run() {
        // A directory name that is a Python identifier, so the dotted name would import.
        let d = tempfile::Builder::new()
            .prefix("hookfix")
            .tempdir()
            .unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let marker = d.path().join("pwned");
        let input = serde_json::json!({
            "prompt": format!("hello $(touch '{}') world", marker.display())
        });
        let module = d.path().join("evil.py");
        std::fs::write(&module, format!("open('{}', 'w')\n", marker.display())).unwrap();
        let dotted = format!(
            "{}.evil",
            d.path()
                .to_str()
                .unwrap()
                .trim_start_matches('/')
                .replace('/', ".")
        );
        for command in [
            vec!["bash", "//dev/stdin"],
            vec!["sh", "/./dev/stdin"],
            vec!["python3", "/./dev/stdin"],
            vec!["python3", "-m", dotted.as_str()],
        ] {
            let out = block_on(run_hook(&command_hook(&command, 5), &input, &ws));
            assert!(
                matches!(&out, HookOutcome::Warn { message } if message.contains("absolute path")),
                "{command:?}: {out:?}"
            );
        }
        assert!(!marker.exists(), "a refused hook ran");
    }

    /// `tee LOG` is refused (a file it writes could be a script another hook runs or a
    /// shell's startup file), as is an unknown compiled program given arguments, with the
    /// way to get it accepted: the user's own script outside the project, named by its
    /// absolute path, which then logs calls.
    #[test]
    fn tee_is_refused_and_a_refusal_says_how_to_get_accepted() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let log = d.path().join("tool-log.jsonl");
        for command in [
            vec![
                "tee".to_string(),
                "-a".to_string(),
                log.display().to_string(),
            ],
            vec!["sqlite3".to_string(), log.display().to_string()],
        ] {
            let why = refused_command(&command, &ws).unwrap();
            assert!(
                why.contains("compiled program")
                    && why.contains("#!/bin/sh")
                    && why.contains("absolute path"),
                "{why}"
            );
        }
        let input = serde_json::json!({"tool_name": "exec_shell"});
        let out = block_on(run_hook(
            &command_hook(&["tee", "-a", log.to_str().unwrap()], 5),
            &input,
            &ws,
        ));
        assert!(matches!(out, HookOutcome::Warn { .. }), "{out:?}");
        assert!(!log.exists(), "a refused tee hook wrote its file");
        let script = d.path().join("log-call");
        std::fs::write(
            &script,
            format!("#!/bin/sh\nexec tee -a '{}'\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = block_on(run_hook(
            &command_hook(&[script.to_str().unwrap()], 5),
            &input,
            &ws,
        ));
        assert!(matches!(out, HookOutcome::Continue { .. }), "{out:?}");
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "{\"tool_name\":\"exec_shell\"}\n"
        );
        let why = refused_command(
            &["tee".to_string(), ws.join("log").display().to_string()],
            &ws,
        )
        .unwrap();
        assert!(why.contains("inside the workspace"), "{why}");
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
