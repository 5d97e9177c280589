//! The workspace boundary of the file tools under attack: a racing symlink swap, the
//! protected `.git/` and `.codesmith/` directories, and CodeSmith's own home.
#![allow(clippy::unwrap_used, missing_docs)]

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use codesmith_tools::{Registry, ToolContext, envelope_json, register_file_tools};
use serde_json::{Value, json};

fn registry() -> Registry {
    let mut reg = Registry::new();
    register_file_tools(&mut reg);
    reg
}

async fn call(reg: &Registry, ctx: &ToolContext, tool: &str, args: Value) -> Value {
    envelope_json(&reg.get(tool).unwrap().call(ctx, args).await)
}

/// Every regular file below `dir`, recursively (symlinks are not followed).
fn files_below(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().display().to_string());
            }
        }
    }
    out
}

/// A thread swaps a workspace directory with a symlink to an outside directory in a tight
/// loop (`renameat2(RENAME_EXCHANGE)`) while 1,000 writes aim into that directory: every
/// write lands inside the workspace or is refused; nothing appears outside.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlink_swap_race_writes_nothing_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let ws = base.join("ws");
    let outside = base.join("outside");
    fs::create_dir_all(ws.join("d")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("s")).unwrap();
    let ctx = ToolContext::one_shot(ws.clone(), base.join("home"));
    let reg = registry();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (a, b) = (ws.join("d"), ws.join("s"));
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &a,
                    rustix::fs::CWD,
                    &b,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let (mut written, mut refused) = (0, 0);
    for i in 0..1000 {
        // Alternate new files, nested new directories and overwrites of one file.
        let args = match i % 3 {
            0 => json!({"path": format!("d/f{i}.txt"), "content": "x\n"}),
            1 => json!({"path": format!("d/n{i}/g.txt"), "content": "y\n"}),
            _ => json!({"path": "d/same.txt", "content": format!("{i}\n"), "force_fresh": true}),
        };
        let v = call(&reg, &ctx, "write_file", args).await;
        if v["ok"] == true {
            written += 1;
        } else {
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let leaked = files_below(&outside);
    eprintln!("race: {swaps} swaps, {written} writes landed, {refused} refused");
    assert!(leaked.is_empty(), "files written outside: {leaked:?}");
    assert!(swaps > 0);
    assert_eq!(written + refused, 1000);
}

#[tokio::test]
async fn writes_under_git_and_codesmith_are_denied_with_an_approval_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    fs::create_dir_all(ws.join(".codesmith")).unwrap();
    fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(ws.join(".git"), ws.join("g")).unwrap();
    let ctx = ToolContext::one_shot(ws.clone(), tmp.path().join("home"));
    let reg = registry();
    let attempts = [
        (
            "write_file",
            json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch /tmp/pwned\n"}),
        ),
        (
            "write_file",
            json!({"path": ".codesmith/policy.toml", "content": "x = 1\n"}),
        ),
        (
            "write_file",
            json!({"path": "g/hooks/post-checkout", "content": "#!/bin/sh\n"}),
        ),
        (
            "edit_file",
            json!({"path": ".git/config", "search": "[core]", "replace": "[core]\n\tfsmonitor = evil", "force_fresh": true}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: .codesmith/config.toml\n+approval = \"auto\"\n*** End Patch\n"}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: ok.txt\n+fine\n*** Add File: sub/.git/hooks/pre-push\n+x\n*** End Patch\n"}),
        ),
        // A gitfile at any depth names the git directory (and so the config) git uses.
        (
            "write_file",
            json!({"path": "sub/.git", "content": "gitdir: ../planted\n"}),
        ),
        (
            "write_file",
            json!({"path": "a/b/.GIT", "content": "gitdir: /tmp/x\n"}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: vendor/lib/.git\n+gitdir: ../../planted\n*** End Patch\n"}),
        ),
    ];
    for (tool, args) in attempts {
        let v = call(&reg, &ctx, tool, args.clone()).await;
        assert_eq!(v["ok"], false, "{tool} {args}: {v}");
        assert_eq!(v["error"]["code"], "DENIED", "{v}");
        assert!(
            v["error"]["hint"].as_str().unwrap().contains("approval"),
            "{v}"
        );
    }
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    assert!(!ws.join("sub/.git").exists() && !ws.join("vendor/lib/.git").exists());
    assert!(!ws.join("g/hooks/post-checkout").exists());
    assert!(!ws.join(".codesmith/config.toml").exists());
    assert!(!ws.join("ok.txt").exists(), "apply_patch is all or nothing");
    assert_eq!(
        fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    // Reading them is still fine.
    let v = call(&reg, &ctx, "read_file", json!({"path": ".git/config"})).await;
    assert_eq!(v["ok"], true, "{v}");
}

#[tokio::test]
async fn codesmith_home_inside_the_workspace_is_refused_to_every_file_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    let home = ws.join("state");
    fs::create_dir_all(&home).unwrap();
    fs::write(home.join("approvals.toml"), "").unwrap();
    let ctx = ToolContext::one_shot(ws.clone(), home.clone());
    let reg = registry();
    for (tool, args) in [
        ("read_file", json!({"path": "state/approvals.toml"})),
        (
            "write_file",
            json!({"path": "state/policy.toml", "content": "x = 1\n"}),
        ),
        ("list_dir", json!({"path": "state"})),
    ] {
        let v = call(&reg, &ctx, tool, args).await;
        assert_eq!(v["ok"], false, "{tool}: {v}");
        assert_eq!(v["error"]["code"], "DENIED", "{v}");
    }
    assert!(!home.join("policy.toml").exists());
    // The walking tools do not enter it either.
    fs::write(home.join("secret.txt"), "needle-in-home\n").unwrap();
    let v = call(
        &reg,
        &ctx,
        "grep_files",
        json!({"pattern": "needle-in-home"}),
    )
    .await;
    assert!(!v.to_string().contains("secret.txt"), "{v}");
    let v = call(&reg, &ctx, "list_dir", json!({"path": ".", "depth": 3})).await;
    assert!(!v.to_string().contains("approvals.toml"), "{v}");
}

#[cfg(unix)]
#[tokio::test]
async fn a_codesmith_home_not_created_yet_is_refused_however_it_is_spelled() {
    // The home may not exist before CodeSmith's first write, and may be named through a
    // symlink or `..`: a model writing there first would plant approvals and policy.
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let ws = base.join("ws");
    fs::create_dir_all(&ws).unwrap();
    std::os::unix::fs::symlink(&ws, base.join("alias")).unwrap();
    std::os::unix::fs::symlink(ws.join("later"), base.join("dangling")).unwrap();
    let reg = registry();
    for home in [
        base.join("alias/.state"),
        base.join("nowhere/../ws/.state"),
        base.join("dangling/../.state"),
    ] {
        let ctx = ToolContext::one_shot(ws.clone(), home.clone());
        let v = call(
            &reg,
            &ctx,
            "write_file",
            json!({"path": ".state/approvals.toml", "content": "x\n"}),
        )
        .await;
        assert_eq!(v["error"]["code"], "DENIED", "{home:?}: {v}");
        assert!(!ws.join(".state").exists(), "{home:?}");
    }
}

#[tokio::test]
async fn other_spellings_of_git_and_codesmith_are_denied_too() {
    // On a case-insensitive file system (macOS, Windows, casefolded ext4), HFS+ (which
    // ignores zero-width code points) or NTFS (trailing dots, 8.3 short names, streams)
    // each of these opens the real `.git/` or `.codesmith/`.
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    fs::create_dir_all(&ws).unwrap();
    let ctx = ToolContext::one_shot(ws.clone(), tmp.path().join("home"));
    let reg = registry();
    for path in [
        ".GIT/hooks/pre-commit",
        ".Git/config",
        "sub/.gIt/hooks/post-checkout",
        ".g\u{200c}it/config",
        ".\u{feff}git/config",
        ".git./config",
        ".git . ./config",
        "GIT~1/config",
        ".git::$INDEX_ALLOCATION/config",
        ".CodeSmith/policy.toml",
        "CODESM~2/policy.toml",
    ] {
        let v = call(
            &reg,
            &ctx,
            "write_file",
            json!({"path": path, "content": "#!/bin/sh\n"}),
        )
        .await;
        assert_eq!(v["error"]["code"], "DENIED", "{path}: {v}");
    }
    assert!(files_below(&ws).is_empty(), "{:?}", files_below(&ws));
    // Names that merely start like them are ordinary files.
    for path in [
        ".github/workflows/ci.yml",
        ".gitignore",
        "git/x",
        ".codesmithrc",
    ] {
        let v = call(
            &reg,
            &ctx,
            "write_file",
            json!({"path": path, "content": "x\n"}),
        )
        .await;
        assert_eq!(v["ok"], true, "{path}: {v}");
    }
}

#[tokio::test]
async fn a_git_directory_under_any_name_is_denied() {
    // `git init --separate-git-dir gd` (or a worktree, or a submodule) leaves a `.git`
    // file naming a git directory that need not be called `.git`; a bare repository needs
    // no `.git` at all. A `core.fsmonitor` line in either runs at the next `git status`.
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    for d in ["gd/objects", "gd/refs", "gd/hooks", "wt/x", "half/refs"] {
        fs::create_dir_all(ws.join(d)).unwrap();
    }
    fs::write(ws.join(".git"), "gitdir: gd\n").unwrap();
    fs::write(ws.join("gd/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(ws.join("gd/config"), "[core]\n").unwrap();
    fs::write(ws.join("wt/HEAD"), "ref: refs/heads/x\n").unwrap();
    fs::write(ws.join("wt/commondir"), "../gd\n").unwrap();
    fs::write(ws.join("half/HEAD"), "ref: refs/heads/main\n").unwrap();
    let ctx = ToolContext::one_shot(ws.clone(), tmp.path().join("home"));
    let reg = registry();
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "gd/hooks/pre-commit", "content": "#!/bin/sh\n"}),
        ),
        (
            "edit_file",
            json!({"path": "gd/config", "search": "[core]", "replace": "[core]\n\tfsmonitor = evil", "force_fresh": true}),
        ),
        (
            "write_file",
            json!({"path": "wt/config.worktree", "content": "[core]\n"}),
        ),
        // The last piece of a bare repository, in either order.
        (
            "write_file",
            json!({"path": "half/objects/info/x", "content": "x\n"}),
        ),
        (
            "write_file",
            json!({"path": "bare/HEAD", "content": "ref: refs/heads/main\n"}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: nb/config\n+[core]\n*** Add File: nb/HEAD\n+ref: refs/heads/main\n*** Add File: nb/refs/heads/.keep\n+\n*** Add File: nb/objects/.keep\n+\n*** End Patch\n"}),
        ),
    ] {
        if tool == "write_file" && args["path"] == "bare/HEAD" {
            fs::create_dir_all(ws.join("bare/objects")).unwrap();
            fs::create_dir_all(ws.join("bare/refs")).unwrap();
        }
        let v = call(&reg, &ctx, tool, args.clone()).await;
        assert_eq!(v["error"]["code"], "DENIED", "{tool} {args}: {v}");
    }
    assert_eq!(
        fs::read_to_string(ws.join("gd/config")).unwrap(),
        "[core]\n"
    );
    assert!(!ws.join("half/objects").exists() && !ws.join("bare/HEAD").exists());
    // A directory that only has some of the pieces is ordinary.
    let v = call(
        &reg,
        &ctx,
        "write_file",
        json!({"path": "src/HEAD", "content": "x\n"}),
    )
    .await;
    assert_eq!(v["ok"], true, "{v}");
}
