//! `codesmith doctor` end to end: a bare machine, a broken config, and `--analyze`
//! against the scripted model server (advice, and a 500 that leaves one skipped line).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use codesmith_testkit::{Fault, Scripted, ScriptedServer};
use serde_json::Value;

/// Runs `codesmith` with only CODESMITH_HOME set: no keys, no endpoints.
async fn bare(home: &Path, args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args(args)
        .env("CODESMITH_HOME", home)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for var in [
        "OPENAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "CODESMITH_STREAM_IDLE_TIMEOUT_SECS",
    ] {
        cmd.env_remove(var);
    }
    tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap()
}

fn dirs() -> (tempfile::TempDir, String, String) {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("home")).unwrap();
    std::fs::create_dir_all(d.path().join("ws")).unwrap();
    let home = d.path().join("home").to_str().unwrap().to_string();
    let ws = d.path().join("ws").to_str().unwrap().to_string();
    (d, home, ws)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_configured_gives_actionable_hints() {
    let (_d, home, ws) = dirs();
    let out = bare(Path::new(&home), &["doctor", "--json", "--workspace", &ws]).await;
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let has_error = v["status"] == "error";
    assert_eq!(out.status.code(), Some(i32::from(has_error)), "{v:#}");
    let findings = v["findings"].as_array().unwrap();
    for f in findings {
        if f["status"] == "warn" || f["status"] == "error" {
            assert!(f["hint"].is_string(), "no hint: {f}");
        }
    }
    let by_id = |id: &str| findings.iter().find(|f| f["id"] == id).unwrap().clone();
    for id in [
        "version",
        "config.user",
        "config.sources",
        "keys.openai",
        "tools.python",
        "sandbox.backend",
        "mcp.servers",
    ] {
        by_id(id);
    }
    assert_eq!(by_id("network.endpoint")["status"], "skip");
    assert_eq!(by_id("keys.openai")["status"], "skip");
    let model = by_id("model.embedded");
    assert_eq!(model["status"], "warn");
    assert!(
        model["hint"]
            .as_str()
            .unwrap()
            .contains("codesmith model fetch")
    );
    assert!(Path::new(&home).join("doctor-cache.json").is_file());

    let text = bare(Path::new(&home), &["doctor", "--workspace", &ws]).await;
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.status.code(), out.status.code());
    assert!(stdout.contains("Embedded model"), "{stdout}");
    assert!(
        stdout.contains("-> run `codesmith model fetch`"),
        "{stdout}"
    );
    assert!(stdout.contains("All checks complete:"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_config_is_an_error_and_exits_1() {
    let (_d, home, ws) = dirs();
    std::fs::write(
        Path::new(&home).join("config.toml"),
        "provder = \"openai\"\n",
    )
    .unwrap();
    let out = bare(Path::new(&home), &["doctor", "--json", "--workspace", &ws]).await;
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "config.user")
        .unwrap()
        .clone();
    assert_eq!(f["status"], "error");
    assert!(f["summary"].as_str().unwrap().contains("provder"), "{f}");
}

/// A home whose provider is the scripted server, and a project config with an ignored key
/// (so there is a warning to analyze).
fn remote_setup(server: &ScriptedServer) -> (tempfile::TempDir, String, String) {
    let (d, home, ws) = dirs();
    let config = format!(
        "provider = \"openai\"\nmodel = \"scripted\"\n[openai]\nbase_url = \"{}\"\napi_key = \"sk-test-doctor\"\n",
        server.base_url()
    );
    std::fs::write(Path::new(&home).join("config.toml"), config).unwrap();
    std::fs::create_dir_all(Path::new(&ws).join(".codesmith")).unwrap();
    std::fs::write(
        Path::new(&ws).join(".codesmith/config.toml"),
        "provider = \"openai\"\n",
    )
    .unwrap();
    (d, home, ws)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_prints_advice_after_the_checks() {
    let server = ScriptedServer::start().await;
    server.push(Scripted::text(
        "The project config tries to pick a provider.\nMove it to the user config.",
    ));
    let (_d, home, ws) = remote_setup(&server);
    let plain = bare(Path::new(&home), &["doctor", "--workspace", &ws]).await;
    let out = bare(
        Path::new(&home),
        &["doctor", "--analyze", "--workspace", &ws],
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let plain = String::from_utf8_lossy(&plain.stdout);
    assert!(
        stdout.starts_with(plain.as_ref()),
        "deterministic part changed:\n{stdout}"
    );
    assert!(
        stdout.contains("Analysis (advice from the model"),
        "{stdout}"
    );
    assert!(stdout.contains("  Move it to the user config."), "{stdout}");
    let endpoint = stdout
        .lines()
        .find(|l| l.contains("DNS and TCP ok"))
        .is_some();
    assert!(endpoint, "{stdout}");
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 1);
    let tools = &bodies[0]["tools"];
    assert!(
        tools.is_null() || tools.as_array().unwrap().is_empty(),
        "{tools}"
    );
    assert!(bodies[0].to_string().contains("config.project"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_failure_leaves_one_skipped_line() {
    let server = ScriptedServer::start().await;
    server.push(Fault::status(500));
    let (_d, home, ws) = remote_setup(&server);
    let out = bare(
        Path::new(&home),
        &["doctor", "--analyze", "--workspace", &ws],
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let skipped: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("analysis skipped"))
        .collect();
    assert_eq!(skipped.len(), 1, "{stdout}");
    assert!(skipped[0].starts_with("· analysis skipped: "), "{stdout}");
    assert!(!stdout.contains("Analysis (advice"), "{stdout}");
    let json = bare(Path::new(&home), &["doctor", "--json", "--workspace", &ws]).await;
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json.status.code(), out.status.code());
    assert!(v["findings"].is_array());
}

/// `codesmith doctor` with `PATH` set to `bin` only, run in `ws`; its output.
fn doctor_with_path(bin: &Path, ws: &Path, home: &Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codesmith"))
        .arg("doctor")
        .current_dir(ws)
        .env("PATH", bin)
        .env("CODESMITH_HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn doctor_tells_bwrap_missing_from_bwrap_broken() {
    let d = tempfile::tempdir().unwrap();
    let (empty, ws, home) = (
        d.path().join("empty"),
        d.path().join("ws"),
        d.path().join("home"),
    );
    for dir in [&empty, &ws, &home] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let missing = doctor_with_path(&empty, &ws, &home);
    assert!(missing.contains("bwrap is not installed"), "{missing}");
    assert!(missing.contains("apt-get install bubblewrap"), "{missing}");
    assert!(!missing.contains("does not work here"), "{missing}");

    // A bwrap that cannot create its namespaces, as in a locked-down container. CodeSmith
    // takes bwrap only from a system directory (never a copy the workspace planted), so the
    // fake goes below /opt, which needs root.
    let broken =
        std::path::PathBuf::from(format!("/opt/codesmith-test-bwrap-{}", std::process::id()));
    if std::fs::create_dir_all(&broken).is_err() {
        eprintln!("NOTE: not root: the broken-bwrap half of this test needs /opt");
        return;
    }
    let _cleanup = RemoveOnDrop(broken.clone());
    let fake = broken.join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();

    let not_working = doctor_with_path(&broken, &ws, &home);
    assert!(
        not_working.contains("bwrap is installed") && not_working.contains("does not work here"),
        "{not_working}"
    );
    assert!(
        not_working.contains("No permissions to create new namespace"),
        "{not_working}"
    );
    assert!(
        !not_working.contains("bwrap is not installed"),
        "{not_working}"
    );
}

/// An executable `/bin/sh` script at `path` that appends its name to `marker` and prints a
/// version line.
fn plant(path: &Path, marker: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let script = format!(
        "#!/bin/sh\necho \"$0 $*\" >> '{}'\necho 'planted 1.0'\n",
        marker.display()
    );
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `codesmith doctor`, started in a workspace a model prepared: the programs doctor probes
/// planted on every kind of workspace `PATH` entry (`ws/bin`, the relative `bin`, `.`), a
/// `path` toolchain for rustup, a `.python-version`, a `.git/config` with fsmonitor and
/// hooks, a module that shadows an MCP server's `python3 -m`. Nothing planted runs, and
/// the MCP server that would start in the workspace is refused with the way to allow it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_runs_nothing_the_workspace_planted() {
    let (d, home, ws) = dirs();
    let (home, ws) = (Path::new(&home), Path::new(&ws).canonicalize().unwrap());
    let marker = d.path().join("marker");
    let programs = [
        "python3", "python", "py", "rustfmt", "rustup", "git", "rg", "cargo",
    ];
    for dir in ["bin", ".", "tc/bin"] {
        for name in programs {
            plant(&ws.join(dir).join(name), &marker);
        }
    }
    let tc = ws.join("tc");
    std::fs::write(
        ws.join("rust-toolchain.toml"),
        format!("[toolchain]\npath = \"{}\"\n", tc.display()),
    )
    .unwrap();
    std::fs::write(ws.join(".python-version"), "../../../../tc\n").unwrap();
    let run = ws.join("bin/git");
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(
        ws.join(".git/config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = {r}\n\thooksPath = {r}\n\tpager = {r}\n",
            r = run.display()
        ),
    )
    .unwrap();
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        ws.join("some_module.py"),
        format!("open('{}', 'a').write('module\\n')\n", marker.display()),
    )
    .unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[mcp_servers.shadowed]\ncommand = \"python3\"\nargs = [\"-m\", \"some_module\"]\n\
         startup_timeout_secs = 5\n\
         [mcp_servers.here]\ncommand = \"python3\"\nargs = [\"-m\", \"some_module\"]\ncwd = \".\"\n",
    )
    .unwrap();
    let path = format!(
        "{}:bin:.:{}",
        ws.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args(["doctor", "--json"])
        .current_dir(&ws)
        .env("CODESMITH_HOME", home)
        .env("PATH", &path)
        .env_remove("RUSTUP_TOOLCHAIN")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for var in ["OPENAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY"] {
        cmd.env_remove(var);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    let log = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(
        !marker.exists(),
        "doctor ran what the workspace planted:\n{log}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let by_id = |id: &str| findings.iter().find(|f| f["id"] == id).cloned();
    let ws_text = ws.display().to_string();
    for f in findings
        .iter()
        .filter(|f| f["id"].as_str().unwrap().starts_with("tools."))
    {
        assert!(!f["summary"].as_str().unwrap().contains(&ws_text), "{f}");
    }
    let here = by_id("mcp.here").unwrap();
    assert!(
        here["summary"]
            .as_str()
            .unwrap()
            .contains("trusted_cwd = true"),
        "{here}"
    );
    assert_eq!(by_id("mcp.shadowed").unwrap()["status"], "error");
}

/// Removes a directory when dropped (also when the test fails).
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
