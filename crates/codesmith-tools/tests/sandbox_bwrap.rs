//! The bubblewrap backend, for real. Skipped (with a note) where `bwrap` is missing or
//! cannot create namespaces; CI installs bubblewrap so it runs there.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use codesmith_tools::sandbox::{BwrapBackend, Sandbox, require_isolation};
use codesmith_tools::shell::ExecShell;
use codesmith_tools::{Tool, ToolContext, ToolOutput};
use serde_json::json;

struct Fixture {
    _dirs: Vec<tempfile::TempDir>,
    ctx: ToolContext,
    user_home: std::path::PathBuf,
}

fn fixture() -> Option<Fixture> {
    let Some(bwrap) = BwrapBackend::detect() else {
        eprintln!("SKIPPED: bwrap is not installed or cannot create namespaces here");
        return None;
    };
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    // Outside /tmp (which the sandbox replaces with a private tmpfs), so that only the
    // credential masks can keep the planted files hidden.
    // /var/tmp first: the target dir itself may sit under /tmp (a clone in /tmp).
    let user_home = tempfile::tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")))
        .unwrap();
    let uh = user_home.path().canonicalize().unwrap();
    std::fs::create_dir_all(uh.join(".ssh")).unwrap();
    std::fs::write(uh.join(".ssh/id_ed25519"), "PLANTED-SECRET-KEY\n").unwrap();
    std::fs::write(
        uh.join(".netrc"),
        "machine x login y password PLANTED-NETRC\n",
    )
    .unwrap();
    std::fs::write(uh.join("notes.txt"), "ordinary file\n").unwrap();
    let mut sandbox = Sandbox::new(Arc::new(bwrap), false);
    sandbox.user_home = Some(uh.clone());
    let ctx = ToolContext::new(ws.path().canonicalize().unwrap(), home.path().to_path_buf())
        .with_sandbox(sandbox);
    Some(Fixture {
        _dirs: vec![ws, home, user_home],
        ctx,
        user_home: uh,
    })
}

async fn sh(ctx: &ToolContext, command: String) -> ToolOutput {
    ExecShell
        .call(ctx, json!({"command": command}))
        .await
        .unwrap()
}

#[tokio::test]
async fn bwrap_cannot_read_planted_credentials() {
    let Some(f) = fixture() else { return };
    let uh = f.user_home.display();
    let out = sh(
        &f.ctx,
        format!("cat {uh}/.ssh/id_ed25519; cat {uh}/.netrc; cat {uh}/notes.txt"),
    )
    .await;
    let text = out.output.as_str().unwrap();
    assert!(!text.contains("PLANTED"), "credential leaked: {text}");
    // The rest of the home stays readable: the masks are specific. (When the test
    // tree itself lives under /tmp, the sandbox's private /tmp hides it all.)
    if !f.user_home.starts_with("/tmp") {
        assert!(text.contains("ordinary file"), "{text}");
    }
    assert!(require_isolation(f.ctx.sandbox.backend.as_ref(), true).is_ok());
}

#[tokio::test]
async fn bwrap_cannot_write_outside_the_workspace() {
    let Some(f) = fixture() else { return };
    let outside_tmp = f.user_home.join("escaped");
    let outside_var = std::path::PathBuf::from(format!(
        "/var/tmp/codesmith-sbx-{}-escaped",
        std::process::id()
    ));
    let out = sh(
        &f.ctx,
        format!(
            "echo in > inside.txt; echo x > {}; echo x > {}; echo x > $HOME/.codesmith-escaped; true",
            outside_tmp.display(),
            outside_var.display()
        ),
    )
    .await;
    assert_eq!(out.meta["exit_code"], 0);
    assert_eq!(
        std::fs::read_to_string(f.ctx.workspace.join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(!outside_tmp.exists(), "wrote outside the workspace (tmp)");
    assert!(
        !outside_var.exists(),
        "wrote outside the workspace (/var/tmp)"
    );
}

#[tokio::test]
async fn bwrap_cuts_the_network_and_keeps_cd() {
    let Some(f) = fixture() else { return };
    let out = sh(&f.ctx, "tail -n +3 /proc/net/dev | cut -d: -f1".to_string()).await;
    let ifaces: Vec<&str> = out.output.as_str().unwrap().split_whitespace().collect();
    assert_eq!(ifaces, vec!["lo"]);
    assert!(f.ctx.sandbox.network_blocked());
    std::fs::create_dir(f.ctx.workspace.join("sub")).unwrap();
    let out = sh(&f.ctx, "cd sub".to_string()).await;
    assert_eq!(out.meta["cwd"], "sub");
}

#[tokio::test]
async fn blocked_connection_gets_the_policy_note() {
    let Some(f) = fixture() else { return };
    let out = sh(
        &f.ctx,
        "git clone --quiet https://codesmith.invalid/a/b.git".to_string(),
    )
    .await;
    assert_ne!(out.meta["exit_code"], 0);
    assert_eq!(out.meta["network_blocked"], true, "{}", out.output);
    assert!(
        out.output
            .as_str()
            .unwrap()
            .contains("sandbox policy blocks network")
    );
}

#[tokio::test]
async fn bwrap_timeout_kills_the_sandboxed_command() {
    let Some(f) = fixture() else { return };
    let marker = f.ctx.workspace.join("late");
    let err = ExecShell
        .call(
            &f.ctx,
            json!({"command": format!("sleep 2; touch {}", marker.display()), "timeout_secs": 1}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, codesmith_tools::ErrorCode::Timeout);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(
        !marker.exists(),
        "the sandboxed command outlived its timeout"
    );
}
