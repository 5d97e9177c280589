//! `codesmith tool`: one call, one JSON line, and the shell's environment.

#![allow(clippy::unwrap_used)]

use serde_json::Value;

fn tool(
    home: &std::path::Path,
    ws: &std::path::Path,
    name: &str,
    args: &str,
) -> (Option<i32>, Value) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codesmith"))
        .args(["tool", name, "--workspace", ws.to_str().unwrap(), args])
        .env("CODESMITH_HOME", home)
        .env(
            "OPENAI_API_KEY",
            "sk-proj-ThisIsAPlantedKeyForTheTest1234567890abcdef",
        )
        .env("GITHUB_TOKEN", "ghp_plantedtokenplantedtokenplanted1234")
        .env("HARMLESS_SETTING", "visible")
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    (
        out.status.code(),
        serde_json::from_str(line.trim()).unwrap_or(Value::Null),
    )
}

#[test]
fn credentials_in_the_environment_never_reach_shell_commands() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = tool(
        &dir.path().join("h"),
        dir.path(),
        "exec_shell",
        r#"{"command": "env"}"#,
    );
    assert_eq!(code, Some(0));
    let text = v["output"].as_str().unwrap_or_default();
    assert!(text.contains("HARMLESS_SETTING=visible"), "{v}");
    assert!(
        !text.contains("OPENAI_API_KEY") && !text.contains("GITHUB_TOKEN"),
        "a credential leaked: {text}"
    );
    assert!(
        !text.contains("Planted") && !text.contains("planted"),
        "{text}"
    );
}

#[test]
fn fifos_and_other_special_files_are_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let (code, v) = tool(
        &dir.path().join("h"),
        dir.path(),
        "read_file",
        r#"{"path": "pipe"}"#,
    );
    assert_eq!(code, Some(0));
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["code"], "INVALID_ARGUMENTS", "{v}");
    let (_, w) = tool(
        &dir.path().join("h"),
        dir.path(),
        "write_file",
        r#"{"path": "pipe", "content": "x", "force_fresh": true}"#,
    );
    assert_eq!(w["ok"], false, "{w}");
}
