//! Hooks end to end: `codesmith exec --json` against the scripted model server, with hooks
//! in the user's config.toml.

#![allow(clippy::unwrap_used)]

use crate::common;

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::Value;

use common::{Sandbox, codesmith, exec_args, tool_messages};

/// Writes the user's config.toml holding `hooks`.
fn config(sb: &Sandbox, hooks: &str) {
    std::fs::write(sb.home().join("config.toml"), hooks).unwrap();
}

/// A `[[hooks.EVENT]]` entry that runs `script` with /bin/sh, from a file outside every
/// workspace (inline `sh -c` code is refused).
fn hook(event: &str, matcher: Option<&str>, script: &str, timeout: Option<u64>) -> String {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.path().join(format!("hook-{n}.sh"));
    std::fs::write(&file, script).unwrap();
    let mut entry = format!("[[hooks.{event}]]\n");
    if let Some(m) = matcher {
        entry.push_str(&format!("matcher = {m:?}\n"));
    }
    entry.push_str(&format!(
        "command = [\"/bin/sh\", {:?}]\n",
        file.display().to_string()
    ));
    if let Some(t) = timeout {
        entry.push_str(&format!("timeout_secs = {t}\n"));
    }
    entry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_tool_use_hook_exiting_2_stops_the_command_and_the_model_reads_why() {
    let sb = Sandbox::new();
    let input = sb.dir.path().join("pre-input.json");
    let env = sb.dir.path().join("pre-env.txt");
    config(
        &sb,
        &hook(
            "PreToolUse",
            Some("exec_shell|edit_file"),
            &format!(
                "cat > '{}'; echo \"[$OPENAI_API_KEY]\" > '{}'; echo 'blocked by policy X' >&2; exit 2",
                input.display(),
                env.display()
            ),
            None,
        ),
    );
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "touch ran.txt"}"#,
        ))
        .push(Scripted::text("The command was blocked."));
    let ws = sb.ws();
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["--json", "touch a file"]),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(!ws.join("ran.txt").exists(), "the blocked command ran");
    let bodies = server.request_bodies();
    let results = tool_messages(&bodies[1]);
    assert!(
        results[0].contains("blocked by policy X") && results[0].contains("NOT run"),
        "{}",
        results[0]
    );
    // The hook read Claude Code's input shape on stdin.
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    assert_eq!(got["hook_event_name"], "PreToolUse");
    assert_eq!(got["tool_name"], "exec_shell");
    assert_eq!(got["tool_input"]["command"], "touch ran.txt");
    assert_eq!(got["cwd"], ws.canonicalize().unwrap().to_str().unwrap());
    assert!(got["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(
        got["transcript_path"]
            .as_str()
            .is_some_and(|p| p.ends_with(".jsonl"))
    );
    // The provider's key (set for the CLI by the test harness) never reaches a hook.
    assert_eq!(std::fs::read_to_string(&env).unwrap().trim(), "[]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_tool_use_hook_receives_the_tool_response_and_can_answer_the_model() {
    let sb = Sandbox::new();
    let input = sb.dir.path().join("post-input.json");
    config(
        &sb,
        &hook(
            "PostToolUse",
            Some("exec_shell"),
            &format!(
                "cat > '{}'; echo 'remember to run the linter' >&2; exit 2",
                input.display()
            ),
            None,
        ),
    );
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "echo hello-from-the-tool"}"#,
        ))
        .push(Scripted::text("Done."));
    let ws = sb.ws();
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["--json", "say hello"]),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    assert_eq!(got["hook_event_name"], "PostToolUse");
    assert_eq!(got["tool_name"], "exec_shell");
    assert!(
        got["tool_response"]
            .to_string()
            .contains("hello-from-the-tool"),
        "{got}"
    );
    let results = tool_messages(&server.request_bodies()[1]);
    assert!(
        results[0].contains("hello-from-the-tool")
            && results[0].contains("remember to run the linter"),
        "{}",
        results[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_hangs_is_killed_at_its_timeout_and_the_session_goes_on() {
    let sb = Sandbox::new();
    config(&sb, &hook("PreToolUse", None, "sleep 29; exit 2", Some(1)));
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "touch ran.txt"}"#,
        ))
        .push(Scripted::text("Done."));
    let ws = sb.ws();
    let started = std::time::Instant::now();
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["--json", "touch a file"]),
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(
        stdout.contains("did not finish within 1 s"),
        "no warning in {stdout}"
    );
    // The hook's failure is no block: the call ran.
    assert!(ws.join("ran.txt").exists());
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .any(|c| c == b"sleep\x0029\x00");
    assert!(!left, "the hung hook outlived its timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_hooks_run_only_once_trusted_at_their_digest() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    let project_config = ws.join(".codesmith/config.toml");
    std::fs::write(
        &project_config,
        hook(
            "PreToolUse",
            None,
            "echo 'project says no' >&2; exit 2",
            None,
        ),
    )
    .unwrap();
    let run = |name: &'static str| {
        let (home, ws) = (sb.home(), ws.clone());
        async move {
            let server = ScriptedServer::start().await;
            server
                .push(Scripted::tool_call(
                    "c1",
                    "exec_shell",
                    format!(r#"{{"command": "touch {name}"}}"#),
                ))
                .push(Scripted::text("Done."));
            let out = codesmith(
                &home,
                &exec_args(&ws, &server.base_url(), "auto", &["--json", "touch"]),
            )
            .await;
            assert_eq!(out.status.code(), Some(0));
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    };
    // Untrusted: it does not run, and the session says how to trust it.
    let stdout = run("first.txt").await;
    assert!(stdout.contains("codesmith trust hooks"), "{stdout}");
    assert!(ws.join("first.txt").exists());
    // Trusted: it runs and blocks.
    let ws_arg = ws.to_string_lossy().into_owned();
    let out = codesmith(&sb.home(), &["trust", "hooks", "--workspace", &ws_arg]).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    run("second.txt").await;
    assert!(!ws.join("second.txt").exists());
    // Changed after the trust: untrusted again.
    std::fs::write(
        &project_config,
        hook(
            "PreToolUse",
            None,
            "echo 'project says no!' >&2; exit 2",
            None,
        ),
    )
    .unwrap();
    let stdout = run("third.txt").await;
    assert!(
        stdout.contains("changed since you trusted them"),
        "{stdout}"
    );
    assert!(ws.join("third.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_hooks_add_context_and_a_stop_hook_sends_the_model_back_once() {
    let sb = Sandbox::new();
    let marker = sb.dir.path().join("stopped-once");
    config(
        &sb,
        &format!(
            "{}{}",
            hook(
                "UserPromptSubmit",
                None,
                "echo 'The project uses tabs.'",
                None
            ),
            hook(
                "Stop",
                None,
                &format!(
                    "[ -e '{0}' ] && exit 0; touch '{0}'; echo 'run the tests first' >&2; exit 2",
                    marker.display()
                ),
                None
            )
        ),
    );
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::text("All done."))
        .push(Scripted::text("Ran the tests; all done."));
    let out = codesmith(
        &sb.home(),
        &exec_args(&sb.ws(), &server.base_url(), "auto", &["fix it"]),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 2);
    let first = bodies[0]["messages"].to_string();
    assert!(
        first.contains("fix it") && first.contains("The project uses tabs."),
        "{first}"
    );
    let second = bodies[1]["messages"].to_string();
    assert!(second.contains("run the tests first"), "{second}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Ran the tests"));
}

#[test]
fn config_show_lists_hooks_with_their_origin_and_a_bad_project_section_costs_no_tightening() {
    let sb = Sandbox::new();
    config(
        &sb,
        &format!(
            "approval = \"auto\"\n{}",
            hook("PreToolUse", Some("exec_shell"), "exit 0", Some(5))
        ),
    );
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    std::fs::write(
        ws.join(".codesmith/config.toml"),
        "approval = \"never\"\n[[hooks.PreToolUze]]\ncommand = [\"/bin/true\"]\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codesmith"))
        .args([
            "config",
            "show",
            "--json",
            "--workspace",
            ws.to_str().unwrap(),
        ])
        .env("CODESMITH_HOME", sb.home())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let shown: Value = serde_json::from_str(stdout.trim()).unwrap();
    let text = shown.to_string();
    assert!(
        text.contains("\"key\":\"hooks.PreToolUse\"") && text.contains("\"timeout_secs\":5"),
        "{text}"
    );
    let hooks = shown
        .as_array()
        .or_else(|| shown["settings"].as_array())
        .unwrap()
        .iter()
        .find(|s| s["key"] == "hooks.PreToolUse")
        .unwrap();
    assert_eq!(hooks["origin"], "user");
    // The project's typo is a warning; its approval tightening still holds.
    assert!(text.contains("PreToolUze"), "{text}");
    let approval = shown
        .as_array()
        .or_else(|| shown["settings"].as_array())
        .unwrap()
        .iter()
        .find(|s| s["key"] == "approval")
        .unwrap();
    assert_eq!(approval["value"], "never", "{approval}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_tool_use_hook_holds_for_a_subagents_calls_too() {
    let sb = Sandbox::new();
    config(
        &sb,
        &hook(
            "PreToolUse",
            Some("exec_shell"),
            "echo 'blocked by policy X' >&2; exit 2",
            None,
        ),
    );
    let server = ScriptedServer::start().await;
    let call =
        serde_json::json!({"type": "general", "description": "touch", "prompt": "touch a file"});
    server
        .push(Scripted::tool_call("p1", "agent", call.to_string()))
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "touch child.txt"}"#,
        ))
        .push(Scripted::text("Blocked."))
        .push(Scripted::text("The child was blocked."));
    let ws = sb.ws();
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["--json", "delegate"]),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !ws.join("child.txt").exists(),
        "the child's blocked command ran"
    );
    let child = tool_messages(&server.request_bodies()[2]);
    assert!(child[0].contains("blocked by policy X"), "{}", child[0]);
}

/// A `PreToolUse` hook that blocks at once while a child it left in the background holds
/// its stdout and stderr: the block holds, without waiting for the child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_holds_when_the_hook_leaves_a_child_holding_its_output() {
    let sb = Sandbox::new();
    config(
        &sb,
        &hook(
            "PreToolUse",
            Some("exec_shell|task_shell_start|pty_start|pty_send"),
            "( sleep 5; echo late ) & echo 'no pushing' >&2; exit 2",
            Some(2),
        ),
    );
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call(
            "c1",
            "exec_shell",
            r#"{"command": "touch PWNED"}"#,
        ))
        .push(Scripted::text("Blocked."));
    let ws = sb.ws();
    let started = std::time::Instant::now();
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["--json", "touch"]),
    )
    .await;
    assert_eq!(out.status.code(), Some(0));
    assert!(!ws.join("PWNED").exists(), "the blocked call ran");
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    let results = tool_messages(&server.request_bodies()[1]);
    assert!(results[0].contains("no pushing"), "{}", results[0]);
}

/// A hook naming a workspace script however it is written (relative to `/`, where hooks
/// run; through a symlink; through `$CODESMITH_PROJECT_DIR`) is refused, and the script
/// never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_naming_a_workspace_script_is_refused_however_it_is_written() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    let marker = sb.dir.path().join("escaped");
    std::fs::write(
        ws.join("evil.sh"),
        format!("touch '{}'\n", marker.display()),
    )
    .unwrap();
    std::os::unix::fs::symlink(&ws, sb.dir.path().join("wslink")).unwrap();
    let base = sb.dir.path().to_str().unwrap().to_string();
    let commands = [
        format!(
            "[\"/bin/sh\", \"{}/ws/evil.sh\"]",
            base.trim_start_matches('/')
        ),
        format!("[\"/bin/sh\", \"{base}//ws/evil.sh\"]"),
        format!("[\"/bin/sh\", \"{base}/./ws/evil.sh\"]"),
        format!("[\"/bin/sh\", \"{base}/wslink/evil.sh\"]"),
        "[\"/bin/sh\", \"-c\", \"sh \\\"$CODESMITH_PROJECT_DIR/evil.sh\\\"\"]".to_string(),
    ];
    let toml: String = commands
        .iter()
        .map(|c| format!("[[hooks.UserPromptSubmit]]\ncommand = {c}\n"))
        .collect();
    config(&sb, &toml);
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("Hi."));
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["--json", "hello"]),
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        !marker.exists(),
        "a workspace script ran outside the sandbox"
    );
    assert!(
        stdout.matches("inside the workspace").count() >= 4,
        "{stdout}"
    );
}

/// A hook whose interpreter reads its program from stdin (the hook's input, which holds
/// the task's text) is refused however the path is spelled, so text the model or a task
/// supplies never runs on the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_reading_its_program_from_stdin_is_refused_however_spelled() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    let marker = sb.dir.path().join("pwned-stdin");
    config(
        &sb,
        "[[hooks.UserPromptSubmit]]\ncommand = [\"bash\", \"//dev/stdin\"]\n\
         [[hooks.UserPromptSubmit]]\ncommand = [\"python3\", \"/./dev/stdin\"]\n",
    );
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("Hi."));
    let task = format!("hello $(touch '{}') world", marker.display());
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["--json", &task]),
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!marker.exists(), "the task's text ran on the host");
    assert!(stdout.matches("under `/dev`").count() >= 2, "{stdout}");
}

/// A trusted project hook's context reaches the model as the repository's data, and
/// `trust hooks` shows every field it pins; a project hook may not pull a secret into
/// its environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_hooks_context_is_the_repositorys_and_its_env_may_name_no_secret() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    let project_config = ws.join(".codesmith/config.toml");
    let ws_arg = ws.to_string_lossy().into_owned();
    std::fs::write(
        &project_config,
        "[[hooks.UserPromptSubmit]]\ncommand = [\"/bin/echo\", \"PROJECT-CONTEXT\"]\nenv = [\"OPENAI_API_KEY\"]\n",
    )
    .unwrap();
    let out = codesmith(&sb.home(), &["trust", "hooks", "--workspace", &ws_arg]).await;
    assert_ne!(
        out.status.code(),
        Some(0),
        "a secret in a project hook's env was trusted"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("OPENAI_API_KEY"));
    std::fs::write(
        &project_config,
        "[[hooks.UserPromptSubmit]]\ncommand = [\"/bin/echo\", \"PROJECT-CONTEXT\"]\ntimeout_secs = 9\nenv = [\"TERM\"]\n",
    )
    .unwrap();
    let out = codesmith(&sb.home(), &["trust", "hooks", "--workspace", &ws_arg]).await;
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    for part in ["UserPromptSubmit", "PROJECT-CONTEXT", "timeout=9s", "TERM"] {
        assert!(shown.contains(part), "{part} not shown in {shown}");
    }
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("Hi."));
    let out = codesmith(
        &sb.home(),
        &exec_args(&ws, &server.base_url(), "auto", &["--json", "hello"]),
    )
    .await;
    assert_eq!(out.status.code(), Some(0));
    let first = server.request_bodies()[0]["messages"].to_string();
    assert!(first.contains("PROJECT-CONTEXT"), "{first}");
    assert!(!first.contains("from the user's own hook"), "{first}");
    assert!(first.contains("repository's hook"), "{first}");
}
