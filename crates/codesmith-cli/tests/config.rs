//! One config stack for every front end: the project config's tightening (`[sandbox]
//! required`, `approval`) and the user's `[network]` policy reach `exec`, the UI, `tool`
//! and `mcp` alike; `codesmith config show` prints each value with its origin.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::{Value, json};

use common::{Sandbox, codesmith, line_mode};

const BIN: &str = env!("CARGO_BIN_EXE_codesmith");

/// The user allows everything and runs commands bare, denies one host and asks before
/// any other (`ask`, the exec policy's word); the project
/// tightens the approval mode to `never` and requires a sandbox (which `none` cannot give).
fn tightened(sb: &Sandbox) {
    std::fs::write(
        sb.home().join("config.toml"),
        "approval = \"auto\"\n[sandbox]\nbackend = \"none\"\n[network]\ndefault = \"ask\"\n\
         deny = [\"blocked.test\"]\n",
    )
    .unwrap();
    let project = sb.ws().join(".codesmith");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("config.toml"),
        "approval = \"never\"\n[sandbox]\nrequired = true\n",
    )
    .unwrap();
}

/// The four calls every front end makes: a command that needs approval (refused by
/// `never`), a harmless one (refused by the required sandbox), a fetch of the denied host
/// (refused by `[network] deny`) and one of a host the policy asks about (refused by
/// `never`, without asking), both before any connection.
const NEEDS_APPROVAL: &str = r#"{"command": "rm -rf build"}"#;
const HARMLESS: &str = r#"{"command": "echo hi"}"#;
const DENIED_HOST: &str = r#"{"url": "http://blocked.test/page"}"#;
const ASKED_HOST: &str = r#"{"url": "http://unlisted.test/page"}"#;

/// Asserts the four refusals, given the text of each call's result.
fn assert_refusals(approval: &str, sandbox: &str, network: &str, asked: &str) {
    assert!(approval.contains("DENIED"), "{approval}");
    assert!(approval.contains("approval mode is never"), "{approval}");
    assert!(sandbox.contains("DENIED"), "{sandbox}");
    assert!(
        sandbox.contains("Shell commands are refused: [sandbox] required = true"),
        "{sandbox}"
    );
    assert!(!sandbox.contains("hi\\n"), "the command ran: {sandbox}");
    assert!(network.contains("blocked.test"), "{network}");
    assert!(network.contains("\"ok\":false"), "{network}");
    assert!(asked.contains("DENIED"), "{asked}");
    assert!(asked.contains("fetch http://unlisted.test/page"), "{asked}");
    assert!(asked.contains("The approval mode is `never`"), "{asked}");
}

fn scripted_calls(server: &ScriptedServer) {
    server
        .push(Scripted::tool_call("c1", "exec_shell", NEEDS_APPROVAL))
        .push(Scripted::tool_call("c2", "exec_shell", HARMLESS))
        .push(Scripted::tool_call("c3", "fetch_url", DENIED_HOST))
        .push(Scripted::tool_call("c4", "fetch_url", ASKED_HOST))
        .push(Scripted::text("Done."));
}

/// The tool results the model saw, in order.
fn tool_results(server: &ScriptedServer) -> Vec<String> {
    let last = server.request_bodies().pop().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

fn session_flags(ws: &Path, url: &str) -> Vec<String> {
    // No --approval: the flag layer would override the project's tightening.
    [
        "--workspace",
        ws.to_str().unwrap(),
        "--provider",
        "openai",
        "--base-url",
        url,
        "--model",
        "scripted",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_applies_the_project_tightening_and_the_network_policy() {
    let sb = Sandbox::new();
    tightened(&sb);
    let server = ScriptedServer::start().await;
    scripted_calls(&server);
    let mut args = vec!["exec".to_string()];
    args.extend(session_flags(&sb.ws(), &server.base_url()));
    args.push("clean up".to_string());
    let out = codesmith(&sb.home(), &args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = tool_results(&server);
    assert_eq!(results.len(), 4, "{results:?}");
    assert_refusals(&results[0], &results[1], &results[2], &results[3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_applies_the_project_tightening_and_the_network_policy() {
    let sb = Sandbox::new();
    tightened(&sb);
    let server = ScriptedServer::start().await;
    scripted_calls(&server);
    let flags = session_flags(&sb.ws(), &server.base_url());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    // `never` refuses without asking: an ask would show its question on stdout.
    let out = line_mode(&sb.home(), &flags, "clean up\n/quit\n").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("(after n, words of your own"), "{stdout}");
    let results = tool_results(&server);
    assert_eq!(results.len(), 4, "{results:?}");
    assert_refusals(&results[0], &results[1], &results[2], &results[3]);
}

/// `codesmith tool NAME ARGS` in `ws` with `home`: the envelope line.
fn tool(home: &Path, ws: &Path, name: &str, args: &str) -> String {
    let out = Command::new(BIN)
        .args(["tool", name, "--workspace", ws.to_str().unwrap(), args])
        .env("CODESMITH_HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn tool_applies_the_project_tightening_and_the_network_policy() {
    let sb = Sandbox::new();
    let (home, ws) = (sb.home(), sb.ws());
    // Without the project config the user's `auto` runs the command.
    std::fs::write(home.join("config.toml"), "approval = \"auto\"\n").unwrap();
    let ran = tool(&home, &ws, "exec_shell", NEEDS_APPROVAL);
    assert!(ran.contains("\"ok\":true"), "{ran}");
    tightened(&sb);
    assert_refusals(
        &tool(&home, &ws, "exec_shell", NEEDS_APPROVAL),
        &tool(&home, &ws, "exec_shell", HARMLESS),
        &tool(&home, &ws, "fetch_url", DENIED_HOST),
        &tool(&home, &ws, "fetch_url", ASKED_HOST),
    );
}

#[test]
fn mcp_applies_the_project_tightening_and_the_network_policy() {
    let sb = Sandbox::new();
    tightened(&sb);
    let mut child = Command::new(BIN)
        .args(["mcp", "--workspace"])
        .arg(sb.ws())
        .env("CODESMITH_HOME", sb.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let call = |id: u64, name: &str, args: &str| {
        let arguments: Value = serde_json::from_str(args).unwrap();
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "config-test", "version": "0"}
        }}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(2, "exec_shell", NEEDS_APPROVAL),
        call(3, "exec_shell", HARMLESS),
        call(4, "fetch_url", DENIED_HOST),
        call(5, "fetch_url", ASKED_HOST),
    ];
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    for message in &messages {
        writeln!(stdin, "{message}").unwrap();
    }
    stdin.flush().unwrap();
    let mut answers: Vec<Value> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(2..=5).all(|id| answers.iter().any(|a| a["id"] == id)) {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => answers.push(serde_json::from_str(&line).unwrap()),
            Err(e) => {
                let _ = child.kill();
                panic!("not every call was answered ({e}): {answers:?}");
            }
        }
    }
    drop(stdin);
    let limit = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > limit {
            let _ = child.kill();
            panic!("codesmith mcp did not exit when stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    reader.join().unwrap();
    let text = |id: u64| {
        let answer = answers.iter().find(|a| a["id"] == id).unwrap();
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_refusals(&text(2), &text(3), &text(4), &text(5));
}

/// `codesmith config show` in `ws` with `home`, `envs` and `extra` flags; no API key or
/// base URL from the test's own environment.
fn config_show(home: &Path, ws: &Path, envs: &[(&str, &str)], extra: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["config", "show", "--workspace", ws.to_str().unwrap()])
        .args(extra)
        .env("CODESMITH_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("CODESMITH_STREAM_IDLE_TIMEOUT_SECS")
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    (out.status.code().unwrap(), stdout)
}

#[test]
fn config_show_prints_every_value_with_its_origin_and_redacts_secrets() {
    let sb = Sandbox::new();
    let (home, ws) = (sb.home(), sb.ws());
    std::fs::write(
        home.join("config.toml"),
        r#"provider = "openai"
[openai]
api_key = "sk-user-secret-0123456789"
[sandbox]
backend = "none"
[network]
default = "prompt"
allow = ["docs.rs"]
[mcp_servers.web]
url = "https://mcp.example.com/mcp"
headers = { "X-Api-Key" = "hdr-secret-0123456789" }
"#,
    )
    .unwrap();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    std::fs::write(
        ws.join(".codesmith/config.toml"),
        "approval = \"never\"\nmodel = \"from-the-project\"\n[sandbox]\nrequired = true\n",
    )
    .unwrap();
    let envs = [("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")];
    let (code, text) = config_show(&home, &ws, &envs, &["--model", "from-a-flag"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        !text.contains("secret-0123456789"),
        "a secret leaked: {text}"
    );
    let line = |key: &str| {
        text.lines()
            .find(|l| l.split_whitespace().any(|w| w == key))
            .unwrap_or_else(|| panic!("no {key} in {text}"))
            .to_string()
    };
    for (key, origin, value) in [
        ("provider", "user", "\"openai\""),
        ("model", "flag --model", "\"from-a-flag\""),
        (
            "openai.base_url",
            "env OPENAI_BASE_URL",
            "\"http://127.0.0.1:9/v1\"",
        ),
        ("openai.api_key", "user", "\"<redacted>\""),
        ("approval", "project (tightened)", "\"never\""),
        ("sandbox.required", "project (tightened)", "true"),
        ("sandbox.backend", "user", "\"none\""),
        ("network.default", "user", "\"ask\""),
        ("network.allow", "user", "[\"docs.rs\"]"),
        ("network.deny", "default", "[]"),
        ("max_turns", "default", "500"),
        (
            "mcp_servers.web.headers.X-Api-Key",
            "user",
            "\"<redacted>\"",
        ),
    ] {
        let l = line(key);
        assert!(l.starts_with(origin), "{key}: {l}");
        assert!(l.ends_with(&format!("{key} = {value}")), "{key}: {l}");
    }

    let (code, json) = config_show(&home, &ws, &envs, &["--model", "from-a-flag", "--json"]);
    assert_eq!(code, 0, "{json}");
    assert!(
        !json.contains("secret-0123456789"),
        "a secret leaked: {json}"
    );
    let v: Value = serde_json::from_str(json.trim()).unwrap();
    let setting = |key: &str| {
        v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == key)
            .unwrap_or_else(|| panic!("no {key} in {v}"))
            .clone()
    };
    assert_eq!(setting("approval")["origin"], "project (tightened)");
    assert_eq!(setting("approval")["value"], "never");
    assert_eq!(setting("model")["origin"], "flag --model");
    assert_eq!(setting("openai.base_url")["origin"], "env OPENAI_BASE_URL");
    assert_eq!(setting("openai.api_key")["value"], "<redacted>");
    assert_eq!(setting("sandbox.required")["value"], true);
    assert_eq!(setting("stream_idle_timeout_secs")["origin"], "default");
    // What the project may not set is said, not applied.
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("ignored `model`"), "{warnings}");

    // The environment's key wins over the file's, and says so; still redacted.
    let envs = [("OPENAI_API_KEY", "sk-env-secret-0123456789")];
    let (_, json) = config_show(&home, &ws, &envs, &["--json"]);
    assert!(
        !json.contains("secret-0123456789"),
        "a secret leaked: {json}"
    );
    let v: Value = serde_json::from_str(json.trim()).unwrap();
    let key = v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "openai.api_key")
        .unwrap()
        .clone();
    assert_eq!(key["origin"], "env OPENAI_API_KEY", "{key}");
}

#[test]
fn config_show_is_a_usage_error_for_a_config_that_does_not_resolve() {
    let sb = Sandbox::new();
    std::fs::write(sb.home().join("config.toml"), "provider = \"opnai\"\n").unwrap();
    let out = Command::new(BIN)
        .args(["config", "show", "--workspace", sb.ws().to_str().unwrap()])
        .env("CODESMITH_HOME", sb.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown provider \"opnai\""), "{stderr}");
}

/// `codesmith ARGS` with `home`, no model keys from the test's environment; killed (and
/// the test failed) when it has not finished within 30 seconds: a config file that is a
/// FIFO or a device must never hang the start.
fn bounded(home: &Path, args: &[&str]) -> std::process::Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env("CODESMITH_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("codesmith {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn make_fifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// Every file the config stack reads (the user's and the project's `config.toml` and
/// `policy.toml`, the project's memory index) may be a FIFO, a symlink to `/dev/zero`,
/// huge, or not UTF-8: a project's is ignored with a warning that says why, the user's
/// stops the start with an error naming it (its deny rules are never silently dropped);
/// nothing hangs or reads without end.
#[test]
fn config_files_of_any_type_or_size_never_hang_and_a_broken_user_file_is_never_dropped() {
    let sb = Sandbox::new();
    let (home, ws) = (sb.home(), sb.ws());
    let ws_arg = ws.to_str().unwrap().to_string();
    let show = ["config", "show", "--json", "--workspace", ws_arg.as_str()];
    let project = ws.join(".codesmith");
    std::fs::create_dir_all(project.join("memory")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", project.join("config.toml")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", project.join("policy.toml")).unwrap();
    make_fifo(&project.join("memory/MEMORY.md"));
    let out = bounded(&home, &show);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout} {:?}", out.stderr);
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("config.toml: cannot read"), "{warnings}");
    assert!(warnings.contains("not a regular file"), "{warnings}");
    assert!(
        warnings.contains("ignored the project's rules"),
        "{warnings}"
    );

    std::fs::remove_file(project.join("config.toml")).unwrap();
    make_fifo(&project.join("config.toml"));
    let out = bounded(&home, &show);
    assert_eq!(out.status.code(), Some(0), "{:?}", out.stderr);

    // The user's own files: an error that names the file and the way out.
    let user_config = home.join("config.toml");
    make_fifo(&user_config);
    let out = bounded(&home, &show);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
    assert!(stderr.contains("config.toml"), "{stderr}");
    std::fs::remove_file(&user_config).unwrap();
    std::fs::write(&user_config, format!("# {}\n", "x".repeat(2 << 20))).unwrap();
    let out = bounded(&home, &show);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("larger than"), "{stderr}");
    std::fs::remove_file(&user_config).unwrap();

    // A deny rule in a user policy.toml with one Latin-1 byte used to vanish without a
    // word, and the command it denied ran.
    std::fs::remove_file(project.join("policy.toml")).unwrap();
    std::fs::write(
        home.join("policy.toml"),
        b"[[rule]]\npattern = \"echo\"\ndecision = \"deny\"\nreason = \"no\"\n# caf\xe9\n",
    )
    .unwrap();
    let out = bounded(
        &home,
        &["policy", "check", "--workspace", ws_arg.as_str(), "echo hi"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("policy.toml"), "{stderr}");
    assert!(stderr.contains("not UTF-8"), "{stderr}");
}

/// A secret may sit in any value, not only in the fields named for one: a password in a
/// base URL's or an MCP URL's userinfo, a key in a query, a token among an MCP server's
/// arguments. `config show` and `doctor` print none of them.
#[test]
fn config_show_and_doctor_redact_secrets_inside_urls_and_arguments() {
    let sb = Sandbox::new();
    let (home, ws) = (sb.home(), sb.ws());
    std::fs::write(
        home.join("config.toml"),
        r#"provider = "openai"
[openai]
base_url = "https://bob:hunter2-userinfo-pw@127.0.0.1:9/v1?api_key=query-secret-0123"
[sandbox]
backend = "none"
[mcp_servers.web]
url = "https://alice:mcp-userinfo-pw@127.0.0.2:9/mcp"
[mcp_servers.local]
command = "/nonexistent/mcp-server"
args = ["server", "--token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"]
[mcp_servers.plain]
command = "/nonexistent/mcp-server"
args = ["--api-key", "shapeless-arg-secret-1", "--Password", "shapeless-arg-secret-2", "--verbose", "shown-arg"]
"#,
    )
    .unwrap();
    let ws_arg = ws.to_str().unwrap();
    for args in [
        vec!["config", "show", "--workspace", ws_arg],
        vec!["config", "show", "--json", "--workspace", ws_arg],
        vec!["doctor", "--workspace", ws_arg],
    ] {
        let out = bounded(&home, &args);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for secret in [
            "hunter2-userinfo-pw",
            "query-secret-0123",
            "mcp-userinfo-pw",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "shapeless-arg-secret-1",
            "shapeless-arg-secret-2",
        ] {
            assert!(!all.contains(secret), "{args:?} printed {secret}: {all}");
        }
        if args[0] == "config" {
            assert!(all.contains("shown-arg"), "{all}");
            assert!(all.contains("@127.0.0.1:9/v1"), "{all}");
            assert!(all.contains("@127.0.0.2:9/mcp"), "{all}");
        }
    }
    // The error for a base URL that is not http(s) quotes it without its password.
    std::fs::write(
        home.join("config.toml"),
        "provider = \"openai\"\n[openai]\nbase_url = \"ftp://bob:ftp-userinfo-pw@127.0.0.1/v1\"\n",
    )
    .unwrap();
    let out = bounded(&home, &["config", "show", "--workspace", ws_arg]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("uses \"ftp\""), "{stderr}");
    assert!(!stderr.contains("ftp-userinfo-pw"), "{stderr}");
}

#[test]
fn config_show_refuses_an_unknown_sandbox_backend_as_every_command_does() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home().join("config.toml"),
        "[sandbox]\nbackend = \"docker\"\n",
    )
    .unwrap();
    let ws = sb.ws();
    for args in [
        vec!["config", "show", "--workspace", ws.to_str().unwrap()],
        vec![
            "tool",
            "list_dir",
            "--workspace",
            ws.to_str().unwrap(),
            "{}",
        ],
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .env("CODESMITH_HOME", sb.home())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("[sandbox] backend = \"docker\": unknown sandbox backend"),
            "{args:?}: {stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_doctor_shows_the_origins_config_show_gives_for_the_sessions_flags() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
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
    let out = line_mode(&sb.home(), &flags, "/doctor\n/quit\n").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (code, shown) = config_show(
        &sb.home(),
        &ws,
        &[("OPENAI_API_KEY", "sk-test")],
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--model",
            "scripted",
        ],
    );
    assert_eq!(code, 0, "{shown}");
    for key in ["provider", "model", "workspace"] {
        // `ORIGIN   key = value` in config show; `key = value (ORIGIN)` in the doctor.
        let line = shown
            .lines()
            .find(|l| l.contains(&format!(" {key} = ")))
            .unwrap();
        let (origin, setting) = line.split_once(&format!(" {key} = ")).unwrap();
        let want = format!("{key} = {setting} ({})", origin.trim());
        assert!(stdout.contains(&want), "{want:?} not in:\n{stdout}");
    }
    assert!(
        stdout.contains("provider = \"openai\" (flag --provider)"),
        "{stdout}"
    );
}
