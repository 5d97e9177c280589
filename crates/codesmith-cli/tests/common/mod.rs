//! Helpers shared by the CLI's integration tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// The contents of the tool messages of a request body (OpenAI dialect), in order.
pub(crate) fn tool_messages(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Copies `src` into `dst` recursively.
pub(crate) fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

/// A fresh copy of the `calc` fixture project and an empty CodeSmith home.
pub(crate) struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calc");
        copy_tree(&fixture, &dir.path().join("ws"));
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Sandbox { dir }
    }

    pub(crate) fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
}

/// `codesmith exec` against the scripted OpenAI-compatible server at `base_url` (model
/// `scripted`) in `ws` with the `approval` mode, followed by `rest` (flags, the task).
pub(crate) fn exec_args(ws: &Path, base_url: &str, approval: &str, rest: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "exec",
        "--workspace",
        &ws.to_string_lossy(),
        "--provider",
        "openai",
        "--base-url",
        base_url,
        "--model",
        "scripted",
        "--approval",
        approval,
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(rest.iter().map(|a| a.to_string()));
    args
}

/// The id of the one session under `home` (the first `.jsonl` file found).
pub(crate) fn only_session_id(home: &Path) -> String {
    std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .filter_map(|e| e.ok())
        .find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".jsonl").map(str::to_string)
        })
        .expect("a session file")
}

/// Runs the `codesmith` binary with `args`, CODESMITH_HOME set, a test API
/// key, and a 60 s bound.
pub(crate) async fn codesmith<S: AsRef<std::ffi::OsStr>>(home: &Path, args: &[S]) -> Output {
    codesmith_with_env(home, args, &[]).await
}

/// [`codesmith`] with extra environment variables.
pub(crate) async fn codesmith_with_env<S: AsRef<std::ffi::OsStr>>(
    home: &Path,
    args: &[S],
    envs: &[(&str, &str)],
) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args(args)
        .envs(envs.iter().copied())
        .env("CODESMITH_HOME", home)
        .env("OPENAI_API_KEY", "sk-test-key-for-scripted-server")
        .env("CODESMITH_STREAM_IDLE_TIMEOUT_SECS", "5")
        .env_remove("OPENAI_BASE_URL")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("codesmith timed out")
        .unwrap()
}

/// Runs the UI with stdin and stdout as pipes (line mode), feeding `input`.
pub(crate) async fn line_mode(home: &Path, args: &[&str], input: &str) -> std::process::Output {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"))
        .args(args)
        .env("CODESMITH_HOME", home)
        .env("OPENAI_API_KEY", "sk-test")
        .env("CODESMITH_STREAM_IDLE_TIMEOUT_SECS", "5")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("line mode timed out")
        .unwrap()
}

/// `codesmith mcp list --json` run in `ws` with `home`, bounded by 60 s.
pub(crate) async fn mcp_list_json(home: &Path, ws: &Path) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args(["mcp", "list", "--json"])
        .current_dir(ws)
        .env("CODESMITH_HOME", home)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("codesmith mcp list timed out")
        .unwrap()
}

/// The UI's arguments for `ws` against the scripted server at `base_url` (model `scripted`).
pub(crate) fn ui_args<'a>(ws: &'a Path, base_url: &'a str) -> [&'a str; 8] {
    [
        "--workspace",
        ws.to_str().unwrap(),
        "--provider",
        "openai",
        "--base-url",
        base_url,
        "--model",
        "scripted",
    ]
}
