//! Programs CodeSmith starts outside the sandbox load nothing from the workspace. Each test
//! plants what a model could write with the file tools alone (a toolchain file, a program
//! on a workspace `PATH` entry, a module beside `python -m`, a `node_modules/.bin` entry)
//! as scripts that append to a marker file, and asserts the marker never appears. A
//! control next to each attack shows the plant is live (the marker does appear when the
//! plant runs).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use codesmith_tools::mcp::{McpServerConfig, start_servers};
use codesmith_tools::{ToolContext, envelope_json, register_file_tools};
use serde_json::json;

use crate::common;

/// The attack workspace a child test process works in (set by its parent).
const WS_VAR: &str = "CODESMITH_TEST_ATTACK_WS";

/// Writes an executable `/bin/sh` script at `path` that appends its name to `marker`,
/// then runs `rest`.
fn plant(path: &Path, marker: &Path, rest: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let script = format!(
        "#!/bin/sh\necho \"$0 $*\" >> '{}'\n{rest}\n",
        marker.display()
    );
    fs::write(path, script).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A workspace (canonical) and a marker path outside it, in one temporary directory.
fn attack_dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("ws")).unwrap();
    let ws = d.path().join("ws").canonicalize().unwrap();
    let marker = d.path().join("marker");
    (d, ws, marker)
}

/// The workspace of rustfmt's attack: a `path` toolchain (absolute: rustup 1.29 refuses a
/// relative one) whose `bin/rustfmt` (and rustc,
/// cargo) is the model's, and `rustfmt` / `rustup` planted in `bin/` and the root (for a
/// `PATH` holding `ws/bin`, `bin` and `.`), each copying stdin to stdout as a formatter.
fn plant_rustfmt_attack(ws: &Path, marker: &Path) {
    let toolchain = format!("[toolchain]\npath = \"{}\"\n", ws.join("tc").display());
    fs::write(ws.join("rust-toolchain.toml"), toolchain).unwrap();
    for dir in ["tc/bin", "bin", "."] {
        for name in ["rustfmt", "rustc", "cargo", "rustup"] {
            plant(&ws.join(dir).join(name), marker, "cat");
        }
    }
    fs::write(ws.join("f.rs"), "fn a() {}\n").unwrap();
}

#[test]
fn rustfmt_normalisation_never_runs_a_workspace_toolchain_or_path_program() {
    let (d, ws, marker) = attack_dirs();
    if std::env::var_os(WS_VAR).is_none() {
        plant_rustfmt_attack(&ws, &marker);
        // Control: rustup's proxy, asked from the workspace, runs the model's rustfmt.
        if let Some(proxy) = on_path("rustup").and_then(|r| Some(r.parent()?.join("rustfmt"))) {
            let ran = std::process::Command::new(proxy)
                .arg("--version")
                .current_dir(&ws)
                .env_remove("RUSTUP_TOOLCHAIN")
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert!(marker.exists(), "the toolchain plant did not run: {ran:?}");
            fs::remove_file(&marker).unwrap();
        }
    }
    let path = format!(
        "{}:bin:.:{}",
        ws.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let parent_ws = ws.clone();
    if !common::alone(
        "host_programs::rustfmt_normalisation_never_runs_a_workspace_toolchain_or_path_program",
        |cmd| {
            // Cargo sets RUSTUP_TOOLCHAIN for its children; a user's shell does not.
            cmd.current_dir(&parent_ws)
                .env_remove("RUSTUP_TOOLCHAIN")
                .env("PATH", &path)
                .env(WS_VAR, &parent_ws);
        },
    ) {
        let log = fs::read_to_string(&marker).unwrap_or_default();
        assert!(!marker.exists(), "a workspace program ran: {log}");
        assert!(fs::read_to_string(ws.join("f.rs")).unwrap().contains("b("));
        drop(d);
        return;
    }
    // The child: this process runs in the planted workspace with its PATH, as a session
    // started there would.
    let ws = PathBuf::from(std::env::var_os(WS_VAR).unwrap());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ctx = ToolContext::new(ws.clone(), d.path().join("home"));
        let mut reg = codesmith_tools::Registry::new();
        register_file_tools(&mut reg);
        let call = |tool: &str, args: serde_json::Value| {
            let t = reg.get(tool).unwrap();
            let ctx = ctx.clone();
            async move { envelope_json(&t.call(&ctx, args).await) }
        };
        let v = call("read_file", json!({"path": "f.rs"})).await;
        assert_eq!(v["ok"], true, "{v}");
        let v = call(
            "edit_file",
            json!({"path": "f.rs", "search": "fn a() {}", "replace": "fn a() {}\nfn   b( ) {  }"}),
        )
        .await;
        assert_eq!(v["ok"], true, "{v}");
        // The real rustfmt (outside the workspace) normalised the edit.
        if codesmith_tools::syntax_check::rustfmt::Rustfmt::for_workspace(&ws).is_some() {
            assert_eq!(v["meta"]["formatted"], true, "{v}");
            let text = fs::read_to_string(ws.join("f.rs")).unwrap();
            assert_eq!(text, "fn a() {}\nfn b() {}\n");
        }
    });
}

fn python3() -> bool {
    on_path("python3").is_some()
}

fn server(toml: &str) -> McpServerConfig {
    toml::from_str(toml).unwrap()
}

/// Starts `servers` for `ws`; the error of each (`None` when it started).
async fn start(ws: &Path, servers: &[(&str, McpServerConfig)]) -> BTreeMap<String, String> {
    let map: BTreeMap<String, McpServerConfig> = servers
        .iter()
        .map(|(n, c)| (n.to_string(), c.clone()))
        .collect();
    let lookup = |name: &str| std::env::var(name).ok();
    let policy = codesmith_policy::NetworkPolicy::default();
    let started = tokio::time::timeout(
        Duration::from_secs(30),
        start_servers(&map, ws, ws, &lookup, 20, &policy),
    )
    .await
    .unwrap();
    started
        .servers
        .into_iter()
        .map(|s| (s.name, s.error.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn an_mcp_server_never_imports_a_workspace_module() {
    if !python3() {
        eprintln!("SKIPPED: python3 is not installed");
        return;
    }
    let (_d, ws, marker) = attack_dirs();
    fs::write(
        ws.join("some_module.py"),
        format!("open('{}', 'a').write('ran\\n')\n", marker.display()),
    )
    .unwrap();
    let module =
        "command = \"python3\"\nargs = [\"-m\", \"some_module\"]\nstartup_timeout_secs = 5\n";
    let errors = start(
        &ws,
        &[
            ("default_cwd", server(module)),
            ("ws_cwd", server(&format!("{module}cwd = \".\"\n"))),
            (
                "pythonpath",
                server(&format!(
                    "{module}env = {{ PYTHONPATH = \"{}\" }}\n",
                    ws.display()
                )),
            ),
        ],
    )
    .await;
    assert!(!marker.exists(), "the workspace module ran: {errors:?}");
    // From `/` the module is simply not found; in the workspace the server is refused.
    assert!(errors["default_cwd"].contains("handshake"), "{errors:?}");
    let refused = &errors["ws_cwd"];
    assert!(
        refused.contains("inside the workspace") && refused.contains("trusted_cwd = true"),
        "{refused}"
    );
    assert!(errors["pythonpath"].contains("PYTHONPATH"), "{errors:?}");
    // Control: the user's explicit trust lets the same entry run the module.
    let trusted = format!("{module}cwd = \".\"\ntrusted_cwd = true\n");
    start(&ws, &[("trusted", server(&trusted))]).await;
    assert!(
        marker.exists(),
        "the control did not run the planted module"
    );
}

#[tokio::test]
async fn npx_never_prefers_the_workspaces_node_modules() {
    if on_path("npx").is_none() {
        eprintln!("SKIPPED: npx is not installed");
        return;
    }
    let (_d, ws, marker) = attack_dirs();
    plant(&ws.join("node_modules/.bin/evil-mcp-server"), &marker, "");
    // Offline, so the lookup that misses the workspace fails at once instead of asking
    // the registry.
    let npx = "command = \"npx\"\nargs = [\"--no-install\", \"evil-mcp-server\"]\n\
               env = { npm_config_offline = \"true\", npm_config_update_notifier = \"false\" }\n\
               startup_timeout_secs = 20\n";
    let errors = start(
        &ws,
        &[
            ("default_cwd", server(npx)),
            ("ws_cwd", server(&format!("{npx}cwd = \".\"\n"))),
        ],
    )
    .await;
    assert!(
        !marker.exists(),
        "the workspace's node_modules/.bin ran: {errors:?}"
    );
    assert!(!errors["default_cwd"].is_empty(), "{errors:?}");
    assert!(
        errors["ws_cwd"].contains("trusted_cwd = true"),
        "{errors:?}"
    );
    let trusted = format!("{npx}cwd = \".\"\ntrusted_cwd = true\n");
    start(&ws, &[("trusted", server(&trusted))]).await;
    assert!(
        marker.exists(),
        "the control did not run the planted npx binary"
    );
}

#[tokio::test]
async fn mcp_commands_arguments_and_environment_that_lead_into_the_workspace_are_refused() {
    let (_d, ws, marker) = attack_dirs();
    plant(&ws.join("server.sh"), &marker, "");
    plant(&ws.join("bin/python3"), &marker, "");
    let w = ws.display();
    let cases = [
        (
            "relative",
            "command = \"./server.sh\"\n".to_string(),
            "relative path",
        ),
        (
            "relative_dir",
            "command = \"bin/python3\"\n".to_string(),
            "relative path",
        ),
        (
            "absolute",
            format!("command = \"{w}/server.sh\"\n"),
            "inside the workspace",
        ),
        (
            "relative_arg",
            "command = \"sh\"\nargs = [\"./server.sh\"]\n".to_string(),
            "relative to the working directory",
        ),
        (
            "absolute_arg",
            format!("command = \"sh\"\nargs = [\"{w}/server.sh\"]\n"),
            "names",
        ),
        (
            "flag_arg",
            format!("command = \"sh\"\nargs = [\"--script={w}/server.sh\"]\n"),
            "names",
        ),
        (
            "path_entry",
            format!("command = \"python3\"\nenv = {{ PATH = \"{w}/bin:/usr/bin:/bin\" }}\n"),
            "PATH",
        ),
        (
            "relative_path_entry",
            "command = \"sh\"\nenv = { PATH = \"bin:/usr/bin\" }\n".to_string(),
            "relative or inside the workspace",
        ),
        (
            "node_options",
            format!("command = \"sh\"\nenv = {{ NODE_OPTIONS = \"--require {w}/x.js\" }}\n"),
            "NODE_OPTIONS",
        ),
    ];
    let servers: Vec<(&str, McpServerConfig)> =
        cases.iter().map(|(n, t, _)| (*n, server(t))).collect();
    let errors = start(&ws, &servers).await;
    assert!(!marker.exists(), "a workspace program ran: {errors:?}");
    for (name, _, why) in &cases {
        let e = &errors[*name];
        assert!(e.contains(why), "{name}: {e}");
        assert!(
            e.contains("trusted_cwd") || e.contains("absolute path"),
            "{name}: {e}"
        );
    }
}
