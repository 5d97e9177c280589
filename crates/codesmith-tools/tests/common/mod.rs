//! A temporary workspace with the file tools registered, shared by the file-tool tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::fs;
use std::path::PathBuf;

use codesmith_tools::{Registry, ToolContext, envelope_json, register_file_tools};
use serde_json::Value;

/// A workspace `root` (canonical) under a temporary directory, with `home` beside it.
pub(crate) struct Ws {
    pub _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub ctx: ToolContext,
    pub reg: Registry,
}

/// A workspace for a session (`one_shot` false) or for one `codesmith tool` call.
pub(crate) fn ws_with(one_shot: bool) -> Ws {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("ws")).unwrap();
    let root = dir.path().join("ws").canonicalize().unwrap();
    let home = dir.path().join("home");
    let ctx = if one_shot {
        ToolContext::one_shot(root.clone(), home)
    } else {
        ToolContext::new(root.clone(), home)
    };
    let mut reg = Registry::new();
    register_file_tools(&mut reg);
    Ws {
        _dir: dir,
        root,
        ctx,
        reg,
    }
}

/// A session workspace.
pub(crate) fn ws() -> Ws {
    ws_with(false)
}

impl Ws {
    /// Calls `tool` and returns the envelope the model would read, whatever the outcome.
    pub(crate) async fn envelope(&self, tool: &str, args: Value) -> Value {
        let t = self.reg.get(tool).unwrap();
        envelope_json(&t.call(&self.ctx, args).await)
    }

    /// [`Ws::envelope`] by its shorter name, as the file-tool tests call it.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Value {
        self.envelope(tool, args).await
    }

    /// Reads `rel` through `read_file` (which a later edit of it requires), asserting
    /// success; returns the envelope.
    pub(crate) async fn read(&self, rel: &str) -> Value {
        let v = self
            .call("read_file", serde_json::json!({ "path": rel }))
            .await;
        assert_eq!(v["ok"], true, "{v}");
        v
    }

    /// Writes `rel` (parents created).
    pub(crate) fn put(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    /// Reads `rel` as UTF-8.
    pub(crate) fn get(&self, rel: &str) -> String {
        fs::read_to_string(self.root.join(rel)).unwrap()
    }
}

/// Names the one test a child process started by [`alone`] runs.
const ALONE: &str = "CODESMITH_TEST_ALONE";

/// Runs the test `name` (its path inside this binary) alone in a fresh process of this
/// test binary, so what it does to process-wide state (the umask, the working directory,
/// `PATH`) reaches no other test; `configure` sets that process up (its directory, its
/// environment). Returns true in that child, which then runs the body; in the calling
/// test it waits for the child, asserts that exactly that one test ran and passed (a
/// renamed test fails here rather than passing unrun), and returns false.
pub(crate) fn alone(name: &str, configure: impl FnOnce(&mut std::process::Command)) -> bool {
    if std::env::var_os(ALONE).is_some_and(|v| v == name) {
        return true;
    }
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE, name)
        .stdin(std::process::Stdio::null());
    configure(&mut cmd);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name} alone: {}\n{stdout}\n{stderr}",
        out.status
    );
    false
}
