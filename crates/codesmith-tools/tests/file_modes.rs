//! File modes and owners across the writing tools. The umask is process-wide and this
//! binary runs every integration test of the crate, so a test that sets it runs alone in
//! a child process of the binary ([`alone`]); the others never touch it.
#![allow(clippy::unwrap_used, missing_docs)]
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use codesmith_tools::fs::beneath::Root;
use rustix::fs::Mode;
use serde_json::{Value, json};

/// Runs the test `name` alone in a fresh process (see [`common::alone`]).
fn alone(name: &str) -> bool {
    common::alone(name, |_| {})
}

/// Runs `f` with the process umask set to `mask`, then restores it.
fn with_umask<T>(mask: u32, f: impl FnOnce() -> T) -> T {
    let old = rustix::process::umask(Mode::from_raw_mode(mask));
    let out = f();
    rustix::process::umask(old);
    out
}

/// The envelope of `tool` called with `ctx` in `w`'s registry.
async fn envelope_with(
    w: &common::Ws,
    ctx: &codesmith_tools::ToolContext,
    tool: &str,
    args: Value,
) -> Value {
    let t = w.reg.get(tool).unwrap();
    codesmith_tools::envelope_json(&t.call(ctx, args).await)
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

use crate::common;
use common::{Ws, ws};

impl Ws {
    /// Calls `tool`, asserting success.
    async fn call_ok(&self, tool: &str, args: Value) -> Value {
        let v = self.envelope(tool, args).await;
        assert_eq!(v["ok"], true, "{v}");
        v
    }

    fn meta(&self, rel: &str) -> fs::Metadata {
        fs::metadata(self.root.join(rel)).unwrap()
    }

    /// Puts `rel` with `mode`, owned (as root) by another user and group.
    fn put_foreign(&self, rel: &str, content: &str, mode: u32) {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, content).unwrap();
        if is_root() {
            std::os::unix::fs::chown(&p, Some(4321), Some(8765)).unwrap();
        }
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn assert_kept(&self, rel: &str, mode: u32) {
        let m = self.meta(rel);
        assert_eq!(m.mode() & 0o7777, mode, "{rel}");
        if is_root() {
            assert_eq!((m.uid(), m.gid()), (4321, 8765), "{rel}");
        }
    }
}

#[test]
fn root_write_atomic_uses_the_umask_and_keeps_mode_and_owner() {
    if !alone("file_modes::root_write_atomic_uses_the_umask_and_keeps_mode_and_owner") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = Root::open(&dir.path().canonicalize().unwrap()).unwrap();
    let meta = |n: &str| fs::metadata(dir.path().join(n)).unwrap();
    with_umask(0o002, || root.write_atomic(Path::new("a.txt"), b"a")).unwrap();
    with_umask(0o077, || root.write_atomic(Path::new("b.txt"), b"b")).unwrap();
    assert_eq!(meta("a.txt").mode() & 0o7777, 0o664);
    assert_eq!(meta("b.txt").mode() & 0o7777, 0o600);
    // A replaced file keeps its mode (setuid included, which chown would clear) and, as
    // root, its owner and group, under any umask.
    let p = dir.path().join("a.txt");
    if is_root() {
        std::os::unix::fs::chown(&p, Some(4321), Some(8765)).unwrap();
    }
    fs::set_permissions(&p, fs::Permissions::from_mode(0o4750)).unwrap();
    with_umask(0o077, || root.write_atomic(Path::new("a.txt"), b"new")).unwrap();
    let m = meta("a.txt");
    assert_eq!(m.mode() & 0o7777, 0o4750);
    if is_root() {
        assert_eq!((m.uid(), m.gid()), (4321, 8765));
    }
    assert_eq!(fs::read(&p).unwrap(), b"new");
    // A move passes the source's ownership along.
    let like = root.ownership(Path::new("a.txt")).unwrap().unwrap();
    root.write_atomic_as(Path::new("c.txt"), b"c", Some(like))
        .unwrap();
    let c = meta("c.txt");
    assert_eq!(c.mode() & 0o7777, 0o4750);
    if is_root() {
        assert_eq!((c.uid(), c.gid()), (4321, 8765));
    }
    assert_eq!(root.ownership(Path::new("none.txt")).unwrap(), None);
}

#[tokio::test]
async fn new_files_from_every_tool_get_the_umask_default() {
    if !alone("file_modes::new_files_from_every_tool_get_the_umask_default") {
        return;
    }
    let w = ws();
    let old = rustix::process::umask(Mode::from_raw_mode(0o002));
    w.call_ok("write_file", json!({"path": "w.txt", "content": "w\n"}))
        .await;
    w.call_ok(
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Add File: p.txt\n+p\n*** End Patch\n"}),
    )
    .await;
    rustix::process::umask(old);
    assert_eq!(w.meta("w.txt").mode() & 0o7777, 0o664);
    assert_eq!(w.meta("p.txt").mode() & 0o7777, 0o664);
}

#[tokio::test]
async fn overwritten_edited_and_moved_files_keep_mode_and_owner() {
    let w = ws();
    w.put_foreign("w.txt", "one\n", 0o640);
    w.put_foreign("e.sh", "echo one\n", 0o750);
    w.put_foreign("m.sh", "echo m\n", 0o710);
    for p in ["w.txt", "e.sh", "m.sh"] {
        w.call_ok("read_file", json!({"path": p})).await;
    }
    w.call_ok(
        "write_file",
        json!({"path": "w.txt", "content": "two\n", "overwrite": true}),
    )
    .await;
    w.call_ok(
        "edit_file",
        json!({"path": "e.sh", "search": "one", "replace": "two"}),
    )
    .await;
    w.call_ok(
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Update File: m.sh\n*** Move to: bin/m2.sh\n@@\n-echo m\n+echo m2\n*** End Patch\n"}),
    )
    .await;
    w.assert_kept("w.txt", 0o640);
    w.assert_kept("e.sh", 0o750);
    w.assert_kept("bin/m2.sh", 0o710);
    assert_eq!(
        fs::read_to_string(w.root.join("bin/m2.sh")).unwrap(),
        "echo m2\n"
    );
}

#[tokio::test]
async fn hard_links_and_extended_attributes_survive_every_writer() {
    let mut w = ws();
    let approved = w.ctx.approved_by_person();
    let unapproved = std::mem::replace(&mut w.ctx, approved);
    // Hard links: a write nobody approved is refused (the other names may lie outside the
    // workspace); an approved one reaches every name, and the link count stays.
    for (tool, a) in [
        ("write_file", "w1.txt"),
        ("edit_file", "e1.txt"),
        ("apply_patch", "p1.txt"),
    ] {
        w.put_foreign(a, "one\n", 0o4750);
        let b = format!("{a}.link");
        fs::hard_link(w.root.join(a), w.root.join(&b)).unwrap();
        w.call_ok("read_file", json!({"path": a})).await;
        let args = match tool {
            "write_file" => json!({"path": a, "content": "two\n", "overwrite": true}),
            "edit_file" => json!({"path": a, "search": "one", "replace": "two"}),
            _ => json!({"patch": format!(
                "*** Begin Patch\n*** Update File: {a}\n@@\n-one\n+two\n*** End Patch\n"
            )}),
        };
        let refused = envelope_with(&w, &unapproved, tool, args.clone()).await;
        assert_eq!(refused["ok"], false, "{tool}: {refused}");
        assert_eq!(refused["error"]["code"], "DENIED", "{tool}: {refused}");
        assert_eq!(fs::read_to_string(w.root.join(a)).unwrap(), "one\n");
        w.call_ok(tool, args).await;
        for name in [a, b.as_str()] {
            assert_eq!(
                fs::read_to_string(w.root.join(name)).unwrap(),
                "two\n",
                "{tool}: {name}"
            );
            assert_eq!(w.meta(name).nlink(), 2, "{tool}: {name}");
            w.assert_kept(name, 0o4750);
        }
    }
    // Extended attributes (user attributes here; POSIX ACLs and security labels are
    // attributes too) stay on an atomically replaced file.
    let p = w.root.join("x.txt");
    w.put_foreign("x.txt", "one\n", 0o640);
    let name = c"user.codesmith.test";
    if rustix::fs::setxattr(&p, name, b"kept", rustix::fs::XattrFlags::empty()).is_err() {
        eprintln!("skipped: the file system has no user xattrs");
        return;
    }
    w.call_ok("read_file", json!({"path": "x.txt"})).await;
    w.call_ok(
        "edit_file",
        json!({"path": "x.txt", "search": "one", "replace": "two"}),
    )
    .await;
    assert_eq!(fs::read_to_string(&p).unwrap(), "two\n");
    let mut buf = [0u8; 16];
    let n = rustix::fs::getxattr(&p, name, &mut buf[..]).unwrap();
    assert_eq!(&buf[..n], b"kept");
    w.assert_kept("x.txt", 0o640);
}
