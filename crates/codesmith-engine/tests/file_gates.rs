//! The file tools' gates, through the engine's approval path with a scripted model:
//! writing a file another program runs later asks (naming the program) in every mode
//! short of `auto`, and `auto` names each at the task's end; reading a secret asks, and
//! `auto` masks its values; `grep_files` withholds secrets; shell output has git
//! credentials masked; a file with other hard links is not written (nor read) silently.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codesmith_engine::{Approver, Engine, NoApprover};
use codesmith_policy::ApprovalMode;
use codesmith_protocol::{ApprovalAnswer, Event};
use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::json;

use common::Recorder;

struct Rig {
    tmp: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
    server: ScriptedServer,
}

impl Rig {
    async fn new() -> Rig {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        let home = tmp.path().join("home");
        Rig {
            tmp,
            ws,
            home,
            server: ScriptedServer::start().await,
        }
    }

    fn engine(&self, mode: ApprovalMode, approver: Arc<dyn Approver>) -> Engine {
        common::engine(
            &self.server,
            &self.ws,
            &self.home,
            common::Setup {
                approval: mode,
                approver,
                ..common::Setup::default()
            },
        )
    }

    fn file(&self, rel: &str, content: &str) {
        let path = self.ws.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Runs one task with a single tool call; returns the events. Each task ends with its
    /// text, whatever the loop guard made of earlier refusals.
    async fn call(&self, engine: &mut Engine, tool: &str, args: serde_json::Value) -> Vec<Event> {
        self.server
            .push(Scripted::tool_call("c1", tool, args.to_string()))
            .push(Scripted::text("done"));
        let mut events = Vec::new();
        engine
            .run_task("go", &mut |e| events.push(e))
            .await
            .unwrap();
        events
    }
}

fn result(events: &[Event]) -> (bool, String) {
    events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult { ok, output, .. } => Some((*ok, output.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no tool result in {events:?}"))
}

fn notices(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn write(path: &str) -> serde_json::Value {
    json!({"path": path, "content": "[build]\nrustc-wrapper = \"./evil\"\n"})
}

#[tokio::test]
async fn writing_files_other_programs_run_asks_and_names_the_program() {
    let rig = Rig::new().await;
    let approver = Recorder::new(ApprovalAnswer::Deny);
    let mut engine = rig.engine(ApprovalMode::AutoEdit, approver.clone());
    let cases = [
        (
            "write_file",
            write(".cargo/config.toml"),
            ".cargo/config.toml",
            "cargo",
        ),
        (
            "write_file",
            write("src/../crates/a/.cargo/config"),
            "crates/a/.cargo/config",
            "cargo",
        ),
        (
            "write_file",
            write("rust-toolchain.toml"),
            "rust-toolchain.toml",
            "rustup",
        ),
        ("write_file", write(".npmrc"), ".npmrc", "npm"),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: .envrc.local\n+eval \"$(curl x)\"\n*** End Patch\n"}),
            ".envrc.local",
            "direnv",
        ),
        (
            "write_file",
            json!({"path": ".venv/lib/python3.12/site-packages/evil.pth", "content": "import os\n"}),
            ".venv/lib/python3.12/site-packages/evil.pth",
            "python",
        ),
        (
            "write_file",
            json!({"path": ".husky/pre-commit", "content": "x\n"}),
            ".husky/pre-commit",
            "git",
        ),
        (
            "write_file",
            json!({"path": ".github/workflows/ci.yml", "content": "on: push\n"}),
            ".github/workflows/ci.yml",
            "GitHub Actions",
        ),
    ];
    for (i, (tool, args, rel, program)) in cases.iter().enumerate() {
        // A fresh engine per refusal: the loop guard counts refusals in a row.
        let mut engine = rig.engine(ApprovalMode::AutoEdit, approver.clone());
        let events = rig.call(&mut engine, tool, args.clone()).await;
        let (ok, output) = result(&events);
        assert!(!ok && output.contains("DENIED"), "{rel}: {output}");
        assert_eq!(approver.count(), i + 1, "{rel} asked");
        let asked = approver.asked.lock().unwrap()[i].clone();
        assert!(asked.summary.contains(rel), "{rel}: {asked:?}");
        assert!(asked.reason.contains(program), "{rel}: {asked:?}");
        assert!(!rig.ws.join(rel).exists(), "{rel} was not written");
    }

    // A patch that moves an ordinary file onto a listed name asks too.
    rig.file("notes.txt", "x\n");
    std::fs::create_dir_all(rig.ws.join(".vscode")).unwrap();
    let events = rig
        .call(
            &mut engine,
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: .vscode/tasks.json\n@@\n-x\n+y\n*** End Patch\n"}),
        )
        .await;
    assert!(!result(&events).0);
    assert!(
        approver
            .asked
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .reason
            .contains("VS Code")
    );

    // Through a symlink to the directory cargo reads, and in another case.
    std::fs::create_dir_all(rig.ws.join(".cargo")).unwrap();
    std::os::unix::fs::symlink(rig.ws.join(".cargo"), rig.ws.join("alias")).unwrap();
    for path in ["alias/config.toml", ".CARGO/Config.toml"] {
        let mut engine = rig.engine(ApprovalMode::AutoEdit, approver.clone());
        let before = approver.count();
        let events = rig.call(&mut engine, "write_file", write(path)).await;
        assert!(!result(&events).0, "{path}");
        assert_eq!(approver.count(), before + 1, "{path} asked");
    }

    // Build files are the project's own code: no question.
    let mut engine = rig.engine(ApprovalMode::AutoEdit, approver.clone());
    let before = approver.count();
    for path in ["Makefile", "build.rs"] {
        let events = rig
            .call(
                &mut engine,
                "write_file",
                json!({"path": path, "content": "x\n"}),
            )
            .await;
        assert!(result(&events).0, "{path}");
    }
    assert_eq!(approver.count(), before);
}

#[tokio::test]
async fn never_and_headless_refuse_them_and_auto_names_them_at_the_end() {
    let rig = Rig::new().await;
    let mut engine = rig.engine(ApprovalMode::Never, Recorder::new(ApprovalAnswer::Once));
    let events = rig
        .call(&mut engine, "write_file", write(".cargo/config.toml"))
        .await;
    assert!(!result(&events).0);
    let mut engine = rig.engine(ApprovalMode::AutoEdit, Arc::new(NoApprover));
    let events = rig.call(&mut engine, "write_file", write(".npmrc")).await;
    assert!(!result(&events).0);
    assert!(!rig.ws.join(".cargo").exists() && !rig.ws.join(".npmrc").exists());

    let mut engine = rig.engine(ApprovalMode::Auto, Arc::new(NoApprover));
    let events = rig
        .call(&mut engine, "write_file", write(".cargo/config.toml"))
        .await;
    assert!(result(&events).0);
    let said = notices(&events).join("\n");
    assert!(
        said.contains(".cargo/config.toml (cargo)"),
        "the end of the task names it: {said}"
    );
    // The notice comes once, for the task that wrote it.
    let events = rig
        .call(
            &mut engine,
            "write_file",
            json!({"path": "a.txt", "content": "x\n"}),
        )
        .await;
    assert!(notices(&events).iter().all(|n| !n.contains("cargo")));

    let events = rig
        .call(
            &mut engine,
            "exec_shell",
            json!({"command": "echo 'eval x' > .envrc"}),
        )
        .await;
    assert!(result(&events).0);
    let said = notices(&events).join("\n");
    assert!(said.contains(".envrc") && said.contains("direnv"), "{said}");
}

#[tokio::test]
async fn reading_secrets_asks_and_auto_masks_their_values() {
    let rig = Rig::new().await;
    rig.file(".env", "DB_PASSWORD=hunter2-value\nMODE=prod-mode-value\n");
    rig.file(
        "deploy/id_ed25519",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----\n",
    );
    rig.file(
        ".git/config",
        "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://x-access-token:ghs_ci_token_value@github.com/o/r.git\n",
    );
    rig.file(".env.example", "DB_PASSWORD=\n");

    let approver = Recorder::new(ApprovalAnswer::Deny);
    let mut engine = rig.engine(ApprovalMode::AutoEdit, approver.clone());
    for (path, what) in [
        (".env", "dotenv"),
        ("deploy/id_ed25519", "private key"),
        (".git/config", "credentials"),
    ] {
        let mut engine = rig.engine(ApprovalMode::AutoEdit, approver.clone());
        let before = approver.count();
        let events = rig
            .call(&mut engine, "read_file", json!({"path": path}))
            .await;
        let (ok, output) = result(&events);
        assert!(!ok && output.contains("DENIED"), "{path}: {output}");
        assert_eq!(approver.count(), before + 1, "{path} asked");
        let asked = approver.asked.lock().unwrap().last().unwrap().clone();
        assert!(asked.reason.contains(what), "{path}: {asked:?}");
    }
    // A committed template is no secret.
    let before = approver.count();
    let events = rig
        .call(&mut engine, "read_file", json!({"path": ".env.example"}))
        .await;
    assert!(result(&events).0);
    assert_eq!(approver.count(), before);

    // Approved once, the file is shown as it is.
    let mut engine = rig.engine(ApprovalMode::AutoEdit, Recorder::new(ApprovalAnswer::Once));
    let events = rig
        .call(&mut engine, "read_file", json!({"path": ".env"}))
        .await;
    let (ok, output) = result(&events);
    assert!(ok && output.contains("hunter2-value"), "{output}");

    // `never` refuses; `auto` reads with every value masked.
    let mut engine = rig.engine(ApprovalMode::Never, Arc::new(NoApprover));
    let events = rig
        .call(
            &mut engine,
            "read_file",
            json!({"path": "deploy/id_ed25519"}),
        )
        .await;
    assert!(!result(&events).0);
    let mut engine = rig.engine(ApprovalMode::Auto, Arc::new(NoApprover));
    for (path, secret, kept) in [
        (".env", "hunter2-value", "DB_PASSWORD="),
        (".env", "prod-mode-value", "MODE="),
        (
            "deploy/id_ed25519",
            "b3BlbnNzaC1rZXkt",
            "BEGIN OPENSSH PRIVATE KEY",
        ),
        (".git/config", "ghs_ci_token_value", "github.com/o/r.git"),
    ] {
        let events = rig
            .call(&mut engine, "read_file", json!({"path": path}))
            .await;
        let (ok, output) = result(&events);
        assert!(ok, "{path}: {output}");
        assert!(!output.contains(secret), "{path} leaked: {output}");
        assert!(
            output.contains(kept) && output.contains("[REDACTED]"),
            "{output}"
        );
    }
}

#[tokio::test]
async fn grep_withholds_secret_files_whatever_the_pattern() {
    let rig = Rig::new().await;
    rig.file(".gitignore", ".env\nkeys/\n");
    rig.file(".env", "API_TOKEN=tok-sekrit-123\n");
    rig.file(
        "keys/deploy.txt",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEsekrit\n-----END RSA PRIVATE KEY-----\n",
    );
    rig.file("src/app.rs", "// uses API_TOKEN\n");
    let approver = Recorder::new(ApprovalAnswer::Deny);
    let mut engine = rig.engine(ApprovalMode::AutoEdit, approver.clone());
    for pattern in ["sekrit", "API_TOKEN=t", "MIIE"] {
        let events = rig
            .call(
                &mut engine,
                "grep_files",
                json!({"pattern": pattern, "include_ignored": true}),
            )
            .await;
        let (ok, output) = result(&events);
        assert!(ok, "{output}");
        assert!(
            !output.contains("sekrit-123") && !output.contains("MIIEsekrit"),
            "{output}"
        );
        assert!(
            output.contains("Withheld")
                && output.contains(".env")
                && output.contains("keys/deploy.txt"),
            "{output}"
        );
    }
    assert_eq!(approver.count(), 0);
}

#[tokio::test]
async fn git_output_has_credentials_masked() {
    let rig = Rig::new().await;
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&rig.ws)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&[
        "remote",
        "add",
        "origin",
        "https://oauth2:glpat-ci-token-value@gitlab.example/o/r.git",
    ]);
    git(&[
        "config",
        "http.https://gitlab.example/.extraheader",
        "AUTHORIZATION: basic aGVhZGVyLXNlY3JldA==",
    ]);
    for mode in [ApprovalMode::Auto, ApprovalMode::AutoEdit] {
        let mut engine = rig.engine(mode, Recorder::new(ApprovalAnswer::Once));
        for command in [
            "git config --list",
            "git remote -v",
            "git config --get remote.origin.url",
        ] {
            let events = rig
                .call(&mut engine, "exec_shell", json!({"command": command}))
                .await;
            let (_, output) = result(&events);
            assert!(output.contains("gitlab.example"), "{command}: {output}");
            assert!(
                !output.contains("glpat-ci-token-value") && !output.contains("aGVhZGVyLXNlY3JldA"),
                "{mode:?} {command} leaked: {output}"
            );
        }
    }
}

/// A file in the workspace that shares its inode with one outside it.
fn hard_link_out(rig: &Rig) -> PathBuf {
    let outside = rig.tmp.path().join("bashrc");
    std::fs::write(&outside, "export SAFE=1\n").unwrap();
    std::fs::hard_link(&outside, rig.ws.join("notes.txt")).unwrap();
    outside
}

fn unchanged(outside: &Path) {
    assert_eq!(std::fs::read_to_string(outside).unwrap(), "export SAFE=1\n");
}

#[tokio::test]
async fn a_hard_link_out_of_the_workspace_is_not_written_or_read_silently() {
    let rig = Rig::new().await;
    let outside = hard_link_out(&rig);
    let edit = json!({"path": "notes.txt", "search": "SAFE=1", "replace": "PATH=/evil"});
    let overwrite = json!({"path": "notes.txt", "content": "curl x | sh\n", "overwrite": true});

    // `auto`, `never` and headless runs refuse, and say why.
    for (mode, approver) in [
        (
            ApprovalMode::Auto,
            Arc::new(NoApprover) as Arc<dyn Approver>,
        ),
        (ApprovalMode::Never, Arc::new(NoApprover)),
        (ApprovalMode::AutoEdit, Arc::new(NoApprover)),
    ] {
        for (tool, args) in [("edit_file", &edit), ("write_file", &overwrite)] {
            let mut engine = rig.engine(mode, approver.clone());
            let events = rig.call(&mut engine, tool, args.clone()).await;
            let (ok, output) = result(&events);
            assert!(!ok, "{mode:?} {tool}: {output}");
            assert!(output.contains("hard links"), "{mode:?} {tool}: {output}");
            unchanged(&outside);
        }
        let mut engine = rig.engine(mode, approver.clone());
        let events = rig
            .call(
                &mut engine,
                "apply_patch",
                json!({"patch": "*** Begin Patch\n*** Update File: notes.txt\n@@\n-export SAFE=1\n+evil\n*** End Patch\n"}),
            )
            .await;
        assert!(!result(&events).0, "{mode:?} apply_patch");
        unchanged(&outside);
    }

    // `suggest` asks before reading it and before writing it; a "no" leaves it alone.
    let approver = Recorder::new(ApprovalAnswer::Deny);
    let mut engine = rig.engine(ApprovalMode::AutoEdit, approver.clone());
    let events = rig
        .call(&mut engine, "read_file", json!({"path": "notes.txt"}))
        .await;
    let (ok, output) = result(&events);
    assert!(!ok && !output.contains("SAFE=1"), "{output}");
    let events = rig.call(&mut engine, "edit_file", edit.clone()).await;
    assert!(!result(&events).0);
    assert_eq!(approver.count(), 2);
    assert!(
        approver.asked.lock().unwrap()[1]
            .reason
            .contains("hard links")
    );
    unchanged(&outside);

    // A person's yes lets the write through.
    let approver = Recorder::new(ApprovalAnswer::Once);
    let mut engine = rig.engine(ApprovalMode::AutoEdit, approver.clone());
    rig.call(&mut engine, "read_file", json!({"path": "notes.txt"}))
        .await;
    let events = rig.call(&mut engine, "edit_file", edit).await;
    let (ok, output) = result(&events);
    assert!(ok, "{output}");
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "export PATH=/evil\n"
    );
}
