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
