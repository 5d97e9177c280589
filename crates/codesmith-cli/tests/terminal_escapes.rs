//! Nothing the model, a file name or a command says can drive the user's terminal: a
//! scripted answer and tool calls full of control sequences reach `exec`'s stdout (a pipe
//! and a pty), its progress lines and the UI's line mode with none of them active. The
//! exact bytes written are asserted.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use codesmith_testkit::{Scripted, ScriptedServer};

use common::{Sandbox, codesmith, line_mode};

/// OSC 52 (clipboard), OSC 8 (a link lying about its target), clear screen, cursor home and
/// up, conceal (SGR 8), a bell, a carriage return that draws over the line, and a
/// right-to-left override.
const ANSWER: &str = "Done.\u{1b}]52;c;ZWNobyBwd25lZA==\u{7} See \
    \u{1b}]8;;https://evil.example/\u{1b}\\docs\u{1b}]8;;\u{1b}\\.\u{1b}[2J\u{1b}[H\u{1b}[3A\
    \u{1b}[8mhidden\u{1b}[0m\u{7} fake prompt$ \rreal \u{202e}txt.exe";

/// What a terminal may be shown of [`ANSWER`]: every sequence removed, the rest visible.
const ANSWER_SHOWN: &str = "Done. See docs.hidden\\u{7} fake prompt$ \\rreal \\u{202e}txt.exe";

/// A file name and a command carrying the same kinds of bytes (JSON-escaped arguments).
const EVIL_PATH: &str = r#"{"path": "notes\u001b]52;c;cHduZWQ=\u0007\u202etxt.exe"}"#;
const EVIL_COMMAND: &str = r#"{"command": "echo ok\u001b[2J\u001b[8m\rtrue                                                                                                    ; echo tail"}"#;

fn assert_inert(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    for (needle, name) in [
        ("\u{1b}", "ESC"),
        ("\u{7}", "BEL"),
        ("\r", "CR"),
        ("\u{202e}", "RLO"),
        ("\u{9b}", "CSI (C1)"),
    ] {
        assert!(!text.contains(needle), "{name} reached {what}: {text:?}");
    }
}

fn script(server: &ScriptedServer) {
    server
        .push(Scripted::tool_call("c1", "read_file", EVIL_PATH))
        .push(Scripted::tool_call("c2", "exec_shell", EVIL_COMMAND))
        .push(Scripted::text(ANSWER).chunk_chars(3));
}

fn exec_args<'a>(ws: &'a str, url: &'a str) -> Vec<&'a str> {
    vec![
        "exec",
        "--workspace",
        ws,
        "--provider",
        "openai",
        "--base-url",
        url,
        "--model",
        "scripted",
        "--approval",
        "auto",
        "Summarise the notes",
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_to_a_pipe_writes_only_inert_bytes() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    script(&server);
    let ws = sb.ws();
    let url = server.base_url();
    let out = codesmith(&sb.home(), &exec_args(ws.to_str().unwrap(), &url)).await;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{ANSWER_SHOWN}\n")
    );
    assert_inert(&out.stderr, "stderr");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[0].starts_with("codesmith: session "), "{stderr}");
    assert_eq!(
        lines[1],
        "● read_file notes\\u{1b}]52;c;cHduZWQ=\\u{7}\\u{202e}txt.exe"
    );
    assert!(
        lines[2].starts_with("  ✗ NOT_FOUND: ") && lines[2].contains("notes"),
        "{stderr}"
    );
    assert!(lines[3].starts_with("    hint: "), "{stderr}");
    assert_eq!(
        lines[4],
        "● exec_shell echo ok\\u{1b}[2J\\u{1b}[8m\\rtrue[… 100 blanks …]; echo tail"
    );
    assert_eq!(lines.len(), 5, "{stderr}");
    // The model saw the command's output as a terminal would show it: no escapes, and the
    // carriage return let `true` draw over `ok`.
    let bodies = server.request_bodies();
    let shell_result = bodies[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(shell_result.starts_with("true\ntail\n"), "{shell_result}");
}

/// Runs `sh_command` under a pseudo-terminal (`script -qec`) and returns what the
/// terminal received, or `None` when `script` is missing.
async fn under_pty(home: &std::path::Path, sh_command: &str, no_color: bool) -> Option<Vec<u8>> {
    if which("script").is_none() {
        eprintln!("SKIPPED: `script` (util-linux) is not installed; the pty case did not run");
        return None;
    }
    let mut cmd = tokio::process::Command::new("script");
    cmd.args(["-qec", sh_command, "/dev/null"])
        .env("CODESMITH_HOME", home)
        .env("OPENAI_API_KEY", "sk-test-key-for-scripted-server")
        .env("CODESMITH_STREAM_IDLE_TIMEOUT_SECS", "5")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("script timed out")
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    Some(out.stdout)
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_on_a_terminal_writes_only_inert_bytes_and_its_own_colours() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    let ws = sb.ws();
    let url = server.base_url();
    let args: Vec<String> = exec_args(ws.to_str().unwrap(), &url)
        .iter()
        .map(|a| quote(a))
        .collect();
    let bin = quote(env!("CARGO_BIN_EXE_codesmith"));
    let line = format!("{bin} {}", args.join(" "));

    // stdout on the terminal: the answer, with the pty's CRLF line end.
    script(&server);
    let Some(stdout) = under_pty(&sb.home(), &format!("{line} 2>/dev/null"), false).await else {
        return;
    };
    assert_eq!(
        String::from_utf8_lossy(&stdout),
        format!("{ANSWER_SHOWN}\r\n")
    );

    // stderr on the terminal: CodeSmith's own erase-line and colours, nothing else.
    script(&server);
    let stderr = under_pty(&sb.home(), &format!("{line} >/dev/null"), false)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&stderr).to_string();
    assert!(
        text.contains("\u{1b}[1m●\u{1b}[0m read_file notes\\u{1b}]52;"),
        "{text:?}"
    );
    let own = [
        "\r\u{1b}[2K",
        "\u{1b}[1m",
        "\u{1b}[31m",
        "\u{1b}[0m",
        "\r\n",
    ];
    let rest = own.iter().fold(text.clone(), |t, s| t.replace(s, "\n"));
    assert_inert(rest.as_bytes(), "stderr on a terminal");

    // NO_COLOR: only the erase of the transient "thinking" line is left.
    script(&server);
    let stderr = under_pty(&sb.home(), &format!("{line} >/dev/null"), true)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&stderr).to_string();
    let rest = text.replace("\r\u{1b}[2K", "\n").replace("\r\n", "\n");
    assert_inert(rest.as_bytes(), "stderr with NO_COLOR");
    assert!(rest.contains("\n● read_file notes\\u{1b}]52;"), "{rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_mode_streams_the_answer_and_asks_with_the_exact_command() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call("c1", "read_file", EVIL_PATH))
        .push(Scripted::tool_call(
            "c2",
            "exec_shell",
            r#"{"command": "rm -rf build\u001b[8m                                                  ; printf '\u001b]52;c;cHduZWQ=\u0007'"}"#,
        ))
        .push(Scripted::text(ANSWER).chunk_chars(2));
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
        "--approval",
        "suggest",
    ];
    let out = line_mode(&sb.home(), &args, "Summarise the notes\nn\n/quit\n").await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_inert(&out.stdout, "line mode");
    assert!(
        stdout.contains("● read_file notes\\u{1b}]52;c;cHduZWQ=\\u{7}\\u{202e}txt.exe\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "approve exec_shell:\n  $ rm -rf build\\u{1b}[8m[… 50 blanks …]; \
             printf '\\u{1b}]52;c;cHduZWQ=\\u{7}'\n  why: "
        ),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("\n{ANSWER_SHOWN}\n")), "{stdout}");
}

/// A cloned repository's own `.codesmith/policy.toml` is as untrusted as a file name:
/// a rule pattern quoted in a warning, or a reason quoted in `policy check`'s JSON, must
/// not set the window title (OSC 0) or clear the screen (8-bit CSI, U+009B).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_own_policy_file_cannot_drive_the_terminal() {
    let sb = Sandbox::new();
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    std::fs::write(
        ws.join(".codesmith/policy.toml"),
        "[[rule]]\npattern = [\"\\u001b]0;PWNED\\u0007\\u009b2Jrm\"]\ndecision = \"allow\"\n\
         reason = \"x\"\n\n[[rule]]\npattern = [\"git\"]\ndecision = \"deny\"\n\
         reason = \"no\\u009b2J\\u202e\\u001b]52;c;QUFB\\u0007\"\n",
    )
    .unwrap();
    let ws = ws.to_str().unwrap();
    let out = codesmith(&sb.home(), &["tool", "list_dir", "--workspace", ws, "{}"]).await;
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ignored allow rule"),
        "{:?}",
        out.stderr
    );
    assert_inert(&out.stderr, "codesmith tool's warnings");
    assert_inert(&out.stdout, "codesmith tool's envelope");
    let out = codesmith(
        &sb.home(),
        &["policy", "check", "--workspace", ws, "git status \u{9b}2J"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{:?}", out.stderr);
    assert_inert(&out.stdout, "policy check");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.to_string().contains("no\u{9b}2J\u{202e}"), "{v}");
}

/// `exec --json` prints events as JSON, which `serde_json` does not make terminal-safe:
/// an 8-bit CSI in the answer would be printed raw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_json_events_carry_no_live_c1_control() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server.push(Scripted::text("a\u{9b}2J\u{9d}0;t\u{9c}\u{202e}b\u{7f}").chunk_chars(1));
    let ws = sb.ws();
    let url = server.base_url();
    let mut args = exec_args(ws.to_str().unwrap(), &url);
    args.insert(1, "--json");
    let out = codesmith(&sb.home(), &args).await;
    assert_eq!(out.status.code(), Some(0), "{:?}", out.stderr);
    assert_inert(&out.stdout, "exec --json");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains('\u{7f}') && !text.contains('\u{9d}'),
        "{text:?}"
    );
    assert!(text.contains(r#""delta":"\u009b""#), "{text}");
}

/// Runs `exec` (plain, or `--json`) against `server` in `dialect` for one turn.
async fn exec_once(
    sb: &Sandbox,
    server: &ScriptedServer,
    dialect: &str,
    json: bool,
) -> std::process::Output {
    let ws = sb.ws();
    let url = server.base_url();
    let mut args = vec![
        "exec",
        "--workspace",
        ws.to_str().unwrap(),
        "--provider",
        dialect,
        "--base-url",
        &url,
        "--model",
        "scripted",
        "--approval",
        "never",
        "--max-turns",
        "1",
    ];
    if json {
        args.push("--json");
    }
    args.push("hi");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args(&args)
        .env("CODESMITH_HOME", sb.home())
        .env("OPENAI_API_KEY", "sk-test-key-for-scripted-server")
        .env("ANTHROPIC_API_KEY", "sk-ant-test-key-for-scripted-server")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap()
}

/// A provider's error text carrying control sequences, as a mid-stream error
/// event in each dialect and as an HTTP error body.
const PROVIDER_SAYS: &str = "Overloaded \u{1b}[2J\u{1b}]52;c;cHduZWQ=\u{7}right now\u{202e}";

fn provider_failures() -> Vec<(&'static str, codesmith_testkit::Reply)> {
    let said = serde_json::to_string(PROVIDER_SAYS).unwrap();
    let anthropic = format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"usage\":{{\"input_tokens\":3,\"output_tokens\":1}}}}}}\n\n\
         event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"Hel\"}}}}\n\n\
         event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":{said}}}}}\n\n"
    );
    let openai = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"Hel\"}}}}]}}\n\n\
         data: {{\"error\":{{\"code\":502,\"message\":{said}}}}}\n\n"
    );
    let body = format!("{{\"error\":{{\"message\":{said},\"type\":\"authentication_error\"}}}}");
    vec![
        ("anthropic", Scripted::raw(anthropic).into()),
        ("openai", Scripted::raw(openai).into()),
        (
            "openai",
            codesmith_testkit::Fault::status(401).body(body).into(),
        ),
    ]
}

/// What a provider said when it failed (an error event mid-stream in either
/// dialect, an HTTP error body) reaches the user: visible on stderr and in the
/// `--json` events, with every control sequence made inert, and the turn ends
/// with a stop reason that says it was cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_provider_said_when_it_failed_is_shown_and_inert() {
    for json in [false, true] {
        for (i, (dialect, reply)) in provider_failures().into_iter().enumerate() {
            let sb = Sandbox::new();
            let server = ScriptedServer::start().await;
            server.push(reply);
            let out = exec_once(&sb, &server, dialect, json).await;
            let stdout = String::from_utf8_lossy(&out.stdout).to_string();
            let stderr = String::from_utf8_lossy(&out.stderr).to_string();
            let shown = if json { &stdout } else { &stderr };
            assert!(
                shown.contains("Overloaded") && shown.contains("right now"),
                "case {i} ({dialect}, json {json}): {stdout}\n{stderr}"
            );
            assert_inert(&out.stdout, "stdout");
            assert_inert(&out.stderr, "stderr");
            if json && i < 2 {
                let stop = stdout
                    .lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .find(|e| e["type"] == "turn_completed")
                    .map(|e| e["stop_reason"].clone());
                assert_eq!(
                    stop,
                    Some(serde_json::json!("interrupted")),
                    "case {i}: {stdout}"
                );
            }
            if i == 2 {
                assert_ne!(out.status.code(), Some(0), "an auth failure is an error");
            }
        }
    }
}
