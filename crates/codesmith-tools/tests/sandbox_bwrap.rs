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
        codesmith_testkit::missing(
            "BWRAP",
            &format!(
                "the sandbox tests checked nothing: {:?} (install bubblewrap)",
                codesmith_tools::sandbox::probe()
            ),
        );
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
    // The home is an allowlist: a file nobody listed as a credential is absent too.
    assert!(!text.contains("ordinary file"), "{text}");
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

fn exit_code(out: &ToolOutput) -> i64 {
    out.meta["exit_code"].as_i64().unwrap()
}

fn text(out: &ToolOutput) -> String {
    out.output.as_str().unwrap().to_string()
}

#[tokio::test]
async fn no_capabilities_and_no_remount_even_for_root() {
    let Some(f) = fixture() else { return };
    let out = sh(
        &f.ctx,
        "grep ^CapEff /proc/self/status; grep ^CapBnd /proc/self/status; \
         if mount -o remount,rw / 2>/dev/null; then echo REMOUNTED; fi; \
         if umount /tmp 2>/dev/null; then echo UNMOUNTED; fi; \
         if echo x > /usr/codesmith-escape 2>/dev/null; then echo WROTE; fi; \
         if unshare -Ur true 2>/dev/null; then echo NESTED_USERNS; fi"
            .to_string(),
    )
    .await;
    let t = text(&out);
    assert!(t.contains("CapEff:\t0000000000000000"), "{t}");
    assert!(t.contains("CapBnd:\t0000000000000000"), "{t}");
    assert!(!t.contains("REMOUNTED"), "{t}");
    assert!(!t.contains("UNMOUNTED"), "{t}");
    assert!(!t.contains("WROTE"), "{t}");
    if BwrapBackend::detect().unwrap().features().disable_userns {
        // No way back to capabilities through a nested user namespace.
        assert!(!t.contains("NESTED_USERNS"), "{t}");
    }
    assert!(!std::path::Path::new("/usr/codesmith-escape").exists());
}

#[tokio::test]
async fn host_unix_sockets_are_unreachable_without_network() {
    let Some(f) = fixture() else { return };
    // A root-only daemon socket outside /tmp and /run (here under /var/tmp, in the home):
    // the sandbox's uid maps to the harness's, so only a mask keeps it out of reach.
    let mut paths = vec![
        std::env::temp_dir().join(format!("cs-sock-{}", std::process::id())),
        f.user_home.join("daemon.sock"),
    ];
    if std::fs::metadata("/run").is_ok_and(|m| !m.permissions().readonly()) {
        paths.push(format!("/run/cs-sock-{}", std::process::id()).into());
    }
    let mut listeners = Vec::new();
    for p in &paths {
        let _ = std::fs::remove_file(p);
        if let Ok(l) = std::os::unix::net::UnixListener::bind(p) {
            // The listener is reachable from the host itself, so the test can fail.
            assert!(std::os::unix::net::UnixStream::connect(p).is_ok());
            listeners.push((p.clone(), l));
        }
    }
    assert!(!listeners.is_empty(), "no test listener could be bound");
    for (p, _) in &listeners {
        let out = sh(
            &f.ctx,
            format!(
                "python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); \
                 s.connect('{}'); print('CONNECTED')\" 2>&1 | tail -1",
                p.display()
            ),
        )
        .await;
        assert!(
            !text(&out).contains("CONNECTED"),
            "{}: {}",
            p.display(),
            text(&out)
        );
    }
    for (p, _) in &listeners {
        let _ = std::fs::remove_file(p);
    }
    let out = sh(
        &f.ctx,
        "ls -A /run | wc -l; echo \"${XDG_RUNTIME_DIR:-unset} ${SSH_AUTH_SOCK:-unset} $TMPDIR\""
            .to_string(),
    )
    .await;
    assert_eq!(text(&out), "0\nunset unset /tmp\n");
}

#[tokio::test]
async fn git_metadata_that_runs_code_is_read_only_and_porcelain_works() {
    let Some(f) = fixture() else { return };
    let setup = std::process::Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(&f.ctx.workspace)
        .stdin(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(setup.success());
    std::fs::create_dir_all(f.ctx.workspace.join(".codesmith")).unwrap();
    let out = sh(
        &f.ctx,
        "if echo '[core] fsmonitor = evil' >> .git/config 2>/dev/null; then echo CONFIG_WRITTEN; fi; \
         if echo 'touch /tmp/pwned' > .git/hooks/pre-commit 2>/dev/null; then echo HOOK_WRITTEN; fi; \
         if echo x > .git/info/attributes 2>/dev/null; then echo INFO_WRITTEN; fi; \
         if echo x > .codesmith/policy.toml 2>/dev/null; then echo POLICY_WRITTEN; fi; \
         echo hello > a.txt && git add a.txt && \
         git -c user.name=t -c user.email=t@t commit -qm first && git status --short && \
         git log --oneline | wc -l"
            .to_string(),
    )
    .await;
    let t = text(&out);
    for w in [
        "CONFIG_WRITTEN",
        "HOOK_WRITTEN",
        "INFO_WRITTEN",
        "POLICY_WRITTEN",
    ] {
        assert!(!t.contains(w), "{w}: {t}");
    }
    assert_eq!(exit_code(&out), 0, "{t}");
    assert_eq!(t.lines().last(), Some("1"), "{t}");
    let config = std::fs::read_to_string(f.ctx.workspace.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"));
    assert!(!f.ctx.workspace.join(".git/hooks/pre-commit").exists());
}

fn git_init(dir: &std::path::Path) {
    let ok = std::process::Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success());
}

/// The read-only parts of `.git` are worth nothing if `.git` itself can be swapped for a
/// directory of the command's making, or if git can be sent to another directory for its
/// configuration and hooks.
#[tokio::test]
async fn git_directory_cannot_be_replaced_or_redirected() {
    let Some(f) = fixture() else { return };
    git_init(&f.ctx.workspace);
    let evil = "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = evil\\n'";
    let out = sh(
        &f.ctx,
        format!(
            "mkdir fake && cp -a .git/HEAD .git/objects .git/refs fake/ && {evil} > fake/config; \
             if mv .git .git-old 2>/dev/null; then echo RENAMED; fi; \
             if rm -rf .git 2>/dev/null && [ ! -e .git/HEAD ]; then echo REMOVED; fi; \
             if echo ../fake > .git/commondir; then echo COMMONDIR_WRITTEN; fi; \
             ls .git/HEAD"
        ),
    )
    .await;
    let t = text(&out);
    assert!(!t.contains("RENAMED"), "{t}");
    assert!(!t.contains("REMOVED"), "{t}");
    // Creating the redirection cannot be stopped; it is gone once the command is over.
    assert!(t.contains("COMMONDIR_WRITTEN"), "{t}");
    assert!(t.contains("removed"), "the removal is reported: {t}");
    let ws = &f.ctx.workspace;
    assert!(!ws.join(".git/commondir").exists(), "{t}");
    assert!(!ws.join(".git-old").exists(), "{t}");
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");

    // A workspace whose `.git` is a file (a linked worktree) cannot repoint it.
    let linked = tempfile::tempdir().unwrap();
    let lw = linked.path().canonicalize().unwrap();
    git_init(&lw.join("."));
    let real = lw.join("real");
    std::fs::create_dir(&real).unwrap();
    git_init(&real);
    let wt = lw.join("wt");
    std::fs::create_dir(&wt).unwrap();
    let gitfile = format!("gitdir: {}/.git\n", real.display());
    std::fs::write(wt.join(".git"), &gitfile).unwrap();
    let ctx = ToolContext::new(wt.clone(), f.ctx.home.clone()).with_sandbox(f.ctx.sandbox.clone());
    let out = sh(
        &ctx,
        "if echo 'gitdir: elsewhere' > .git 2>/dev/null; then echo GITFILE_WRITTEN; fi; \
         if mv .git g 2>/dev/null; then echo GITFILE_MOVED; fi"
            .to_string(),
    )
    .await;
    let t = text(&out);
    assert!(!t.contains("GITFILE_"), "{t}");
    assert_eq!(std::fs::read_to_string(wt.join(".git")).unwrap(), gitfile);
}

#[tokio::test]
async fn masks_hold_when_the_workspace_is_home() {
    let Some(mut f) = fixture() else { return };
    let ws = f.ctx.workspace.clone();
    for (rel, body) in [
        (".ssh/id_ed25519", "PLANTED-SSH"),
        (".aws/credentials", "PLANTED-AWS"),
        (".config/git/credentials", "PLANTED-GIT"),
        (".vault-token", "PLANTED-VAULT"),
        (".cache/huggingface/token", "PLANTED-HF"),
        (".bash_history", "PLANTED-HISTORY"),
        (".env", "PLANTED-ENV"),
        (".claude/creds", "PLANTED-CLAUDE"),
    ] {
        std::fs::create_dir_all(ws.join(rel).parent().unwrap()).unwrap();
        std::fs::write(ws.join(rel), body).unwrap();
    }
    std::fs::write(ws.join("ordinary.txt"), "ORDINARY").unwrap();
    f.ctx.sandbox.user_home = Some(ws.clone());
    let ctx = &f.ctx;
    let out = sh(
        ctx,
        "cat .ssh/id_ed25519 .aws/credentials .config/git/credentials .vault-token \
         .cache/huggingface/token .bash_history .env .claude/creds ordinary.txt 2>/dev/null; true"
            .to_string(),
    )
    .await;
    let t = text(&out);
    assert!(!t.contains("PLANTED"), "{t}");
    assert!(t.contains("ORDINARY"), "{t}");
    // $CODESMITH_HOME is hidden too, wherever it lies.
    std::fs::write(ctx.home.join("approvals.toml"), "SECRET-APPROVALS").unwrap();
    let out = sh(
        ctx,
        format!("cat {}/approvals.toml 2>&1; true", ctx.home.display()),
    )
    .await;
    assert!(!text(&out).contains("SECRET-APPROVALS"), "{}", text(&out));
}

#[tokio::test]
async fn commands_join_the_resource_bounds() {
    let Some(f) = fixture() else { return };
    let out = sh(&f.ctx, "ulimit -u; ulimit -c".to_string()).await;
    let t = text(&out);
    let mut lines = t.lines();
    assert_eq!(
        lines.next(),
        Some(
            codesmith_tools::sandbox::limits::MAX_PROCESSES
                .to_string()
                .as_str()
        )
    );
    assert_eq!(lines.next(), Some("0"));
    let bounds = codesmith_tools::sandbox::limits::bounds();
    if nix_root() && bounds.cgroup_pids.is_none() {
        // Root's RLIMIT_NPROC is not enforced: only a cgroup bounds it, and this host has
        // no writable one (doctor reports it as not holding).
        eprintln!("NOTE: no pids cgroup for root here: {}", bounds.describe());
    }
    if bounds.cgroup_pids.is_some() {
        let out = sh(&f.ctx, "grep -c codesmith- /proc/self/cgroup".to_string()).await;
        assert_ne!(text(&out).trim(), "0", "{}", text(&out));
    }
}

fn nix_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

#[tokio::test]
async fn the_ordinary_loop_works_inside_cargo_python_git() {
    let Some(f) = fixture() else { return };
    let ws = &f.ctx.workspace;
    std::fs::create_dir_all(ws.join("tiny/src")).unwrap();
    std::fs::write(
        ws.join("tiny/Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("tiny/src/lib.rs"),
        "pub fn two() -> u8 { 2 }\n#[cfg(test)]\nmod t { #[test] fn two() { assert_eq!(super::two(), 2); } }\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("test_math.py"),
        "def test_add():\n    assert 1 + 1 == 2\n\nif __name__ == '__main__':\n    test_add()\n    print('1 passed')\n",
    )
    .unwrap();
    let out = ExecShell
        .call(
            &f.ctx,
            json!({"command": "cd tiny && unset CARGO_TARGET_DIR && cargo build --offline -q && \
                    cargo test --offline -q 2>&1 | grep 'test result' && cd .. && \
                    python3 -c 'print(6*7)' && python3 test_math.py && \
                    git init -q && git add test_math.py && \
                    git -c user.name=t -c user.email=t@t commit -qm one && git status --short tiny | head -1",
                   "timeout_secs": 300}),
        )
        .await
        .unwrap();
    let t = text(&out);
    assert_eq!(exit_code(&out), 0, "{t}");
    assert!(t.contains("test result: ok. 1 passed"), "{t}");
    assert!(t.contains("42\n1 passed"), "{t}");
    assert!(t.contains("?? tiny/"), "{t}");
}

#[tokio::test]
async fn self_test_reports_every_item_holding() {
    let Some(f) = fixture() else { return };
    let items = codesmith_tools::sandbox::self_test(f.ctx.sandbox.backend.as_ref()).unwrap();
    let ids: Vec<&str> = items.iter().map(|i| i.id).collect();
    assert_eq!(
        ids,
        [
            "caps",
            "userns",
            "git_readonly",
            "masks",
            "host_sockets",
            "bounds"
        ]
    );
    for i in &items {
        // User namespaces may be forbidden by the host, and root's process bound needs a
        // writable cgroup; everything else must hold.
        let features = BwrapBackend::detect().unwrap().features();
        let host_dependent = (i.id == "userns" && !features.disable_userns)
            || (i.id == "bounds"
                && nix_root()
                && codesmith_tools::sandbox::limits::bounds()
                    .cgroup_pids
                    .is_none());
        if !host_dependent {
            assert!(i.holds, "{}: {}", i.id, i.detail);
        }
    }
}

/// A process whose stderr is its own pipe (not merged into stdout as a shell command's is)
/// still has it inside the sandbox: nothing the sandbox runs first may leave it on
/// `/dev/null`.
#[tokio::test]
async fn a_sandboxed_process_with_its_own_stderr_pipe_keeps_it() {
    use tokio::io::AsyncReadExt;
    let Some(f) = fixture() else { return };
    let argv = [
        "bash",
        "-c",
        "echo to-stderr >&2; echo to-stdout; ls /proc/self/fd >&2",
    ]
    .map(std::ffi::OsString::from)
    .to_vec();
    let mut p = codesmith_tools::shell::Interactive::spawn(&f.ctx, argv).unwrap();
    let mut stdout = String::new();
    let mut out = p.take_stdout().unwrap();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        out.read_to_string(&mut stdout),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(p.settle(std::time::Duration::from_secs(5)).await);
    assert_eq!(stdout.trim(), "to-stdout");
    let err = p.stderr_text();
    assert!(err.contains("to-stderr"), "stderr was lost: {err:?}");
}

/// The host uid of the first process whose command line starts with `token`, polled for at
/// most 3 s.
fn host_uid_of(token: &str) -> Option<u32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
            let dir = entry.path();
            let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
                continue;
            };
            if !cmdline.starts_with(token.as_bytes()) {
                continue;
            }
            let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
            let uid = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok());
            if uid.is_some() {
                return uid;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

#[tokio::test]
async fn a_command_never_runs_as_the_hosts_root() {
    let Some(f) = fixture() else { return };
    let token = format!("codesmith-uid-probe-{}", std::process::id());
    let ctx = f.ctx.clone();
    let command = format!("exec -a {token} sleep 2");
    let run = tokio::spawn(async move { sh(&ctx, command).await });
    let seen = tokio::task::spawn_blocking(move || host_uid_of(&token))
        .await
        .unwrap();
    run.await.unwrap();
    let uid = seen.expect("the sandboxed process was never seen in /proc");
    assert_ne!(uid, 0, "a sandboxed command ran as the host's root");
    if nix_root() {
        assert_eq!(uid, codesmith_tools::sandbox::SANDBOX_UID);
    }
    // What was written in the workspace belongs to the workspace's owner on disk.
    let out = sh(&f.ctx, "echo x > made.txt; id -u".to_string()).await;
    assert_eq!(out.meta["exit_code"], 0, "{}", text(&out));
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(&f.ctx.workspace).unwrap().uid();
    assert_eq!(
        std::fs::metadata(f.ctx.workspace.join("made.txt"))
            .unwrap()
            .uid(),
        owner
    );
}

#[tokio::test]
async fn proc_sys_and_sysrq_are_not_writable() {
    let Some(f) = fixture() else { return };
    let out = sh(
        &f.ctx,
        "for p in /proc/sys/kernel/core_pattern /proc/sys/kernel/poweroff_cmd \
         /proc/sys/vm/drop_caches /proc/sys/fs/protected_symlinks /proc/sysrq-trigger; do \
         if [ -w $p ]; then echo \"writable $p\"; fi; \
         if (echo 1 > $p) 2>/dev/null; then echo \"wrote $p\"; fi; done; \
         ls /sys | tr '\\n' ' '; echo done"
            .to_string(),
    )
    .await;
    let t = text(&out);
    assert!(!t.contains("writable") && !t.contains("wrote"), "{t}");
    assert!(t.contains("done"), "{t}");
    assert!(
        !t.contains("kernel ") && !t.contains("fs "),
        "/sys exposed: {t}"
    );
}

#[tokio::test]
async fn nothing_of_the_callers_keyrings_is_reachable() {
    let Some(f) = fixture() else { return };
    let description = format!("codesmith-probe-key-{}", std::process::id());
    let desc = std::ffi::CString::new(description.clone()).unwrap();
    // A session keyring of this test process's own, holding a key.
    #[allow(unsafe_code)]
    // SAFETY: plain system calls with valid, NUL-terminated strings and a byte buffer.
    let added = unsafe {
        libc::syscall(libc::SYS_keyctl, 1, c"codesmith-test".as_ptr());
        libc::syscall(
            libc::SYS_add_key,
            c"user".as_ptr(),
            desc.as_ptr(),
            b"SECRET".as_ptr(),
            6usize,
            -3i32,
        )
    };
    if added < 0 {
        eprintln!("NOTE: keyrings are unavailable here; checking the sandbox side only");
    }
    let out = sh(&f.ctx, "cat /proc/keys; echo end".to_string()).await;
    let t = text(&out);
    assert!(t.contains("end"), "{t}");
    assert!(
        !t.contains(&description),
        "the caller's key is visible: {t}"
    );
    assert!(
        !t.contains("codesmith-test"),
        "the caller's keyring is visible: {t}"
    );
}

#[tokio::test]
async fn only_allowlisted_variables_reach_a_command() {
    let Some(f) = fixture() else { return };
    let out = sh(&f.ctx, "env | cut -d= -f1".to_string()).await;
    let t = text(&out);
    let allowed = |n: &str| {
        codesmith_tools::sandbox::exposure::env_passes(n, &[])
            || matches!(
                n,
                "HOME"
                    | "TMPDIR"
                    | "PWD"
                    | "OLDPWD"
                    | "SHLVL"
                    | "_"
                    | "PAGER"
                    | "GIT_PAGER"
                    | "GIT_TERMINAL_PROMPT"
                    | "CODESMITH_COMMAND_ID"
                    // The protected git configuration (`safe.bareRepository`).
                    | "GIT_CONFIG_COUNT"
                    | "GIT_CONFIG_KEY_0"
                    | "GIT_CONFIG_VALUE_0"
            )
    };
    let names: Vec<&str> = t.lines().filter(|l| !l.is_empty()).collect();
    assert!(names.contains(&"PATH"), "{t}");
    for name in &names {
        assert!(allowed(name), "{name} is not on the allowlist: {t}");
    }
    // Cargo gives this test many variables; none passes.
    assert!(!names.iter().any(|n| n.starts_with("CARGO_PKG")), "{t}");
    let out = sh(&f.ctx, "git config --get safe.bareRepository".to_string()).await;
    assert_eq!(text(&out).trim(), "explicit", "{out:?}");
}

#[tokio::test]
async fn the_home_directory_is_empty_inside() {
    let Some(f) = fixture() else { return };
    let out = sh(&f.ctx, "ls -A ~; echo \"home=$HOME\"".to_string()).await;
    let t = text(&out);
    assert_eq!(
        t.trim(),
        format!("home={}", f.user_home.display()),
        "the home is not empty: {t}"
    );
}

#[tokio::test]
async fn host_sockets_at_any_path_are_absent() {
    let Some(f) = fixture() else { return };
    // A listener in a directory whose name has a space, under /srv when it can be made
    // there (root), else next to the fake home; and one bound by a relative path.
    let base = std::path::PathBuf::from(format!("/srv/codesmith-x y-{}", std::process::id()));
    let dir = if std::fs::create_dir_all(&base).is_ok() {
        base
    } else {
        let d = f.user_home.join("x y");
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let sock = dir.join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let renamed = dir.join("renamed.sock");
    {
        let first = dir.join("first.sock");
        let l = std::os::unix::net::UnixListener::bind(&first).unwrap();
        std::fs::rename(&first, &renamed).unwrap();
        std::mem::forget(l);
    }
    let out = sh(
        &f.ctx,
        format!(
            "for p in '{}' '{}'; do if [ -e \"$p\" ]; then echo \"present $p\"; fi; done; echo end",
            sock.display(),
            renamed.display()
        ),
    )
    .await;
    let t = text(&out);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(t.contains("end") && !t.contains("present"), "{t}");
}

#[tokio::test]
async fn new_user_namespaces_and_mounts_are_refused() {
    let Some(f) = fixture() else { return };
    let out = sh(
        &f.ctx,
        "unshare -U true 2>/dev/null && echo USERNS; unshare -rm true 2>/dev/null && echo MOUNTNS; \
         mount -t tmpfs x /tmp 2>/dev/null && echo MOUNTED; echo end"
            .to_string(),
    )
    .await;
    let t = text(&out);
    assert!(t.contains("end"), "{t}");
    assert!(
        !t.contains("USERNS") && !t.contains("MOUNTNS") && !t.contains("MOUNTED"),
        "{t}"
    );
}

#[tokio::test]
async fn codesmith_dir_is_read_only_even_when_absent_and_leaves_nothing() {
    let Some(f) = fixture() else { return };
    let out = sh(
        &f.ctx,
        "mkdir -p .codesmith/memory 2>/dev/null && echo MADE; echo end".to_string(),
    )
    .await;
    let t = text(&out);
    assert!(t.contains("end") && !t.contains("MADE"), "{t}");
    assert!(
        !f.ctx.workspace.join(".codesmith").exists(),
        "an empty mount point was left behind"
    );
    std::fs::create_dir_all(f.ctx.workspace.join(".codesmith")).unwrap();
    let out = sh(
        &f.ctx,
        "echo x > .codesmith/MEMORY.md 2>/dev/null && echo WROTE; echo end".to_string(),
    )
    .await;
    assert!(!text(&out).contains("WROTE"), "{}", text(&out));
}

/// When CodeSmith is root the workspace is idmapped: what the command owns inside is owned
/// by root on the host, so a set-user-ID copy of a shell left there would be host root for
/// any local user. Neither `chmod` nor a creating `open` may set those bits.
#[tokio::test]
async fn no_set_user_id_or_set_group_id_file_can_be_made_in_the_workspace() {
    let Some(f) = fixture() else { return };
    let out = sh(
        &f.ctx,
        "cp /bin/true t1; chmod 4755 t1; chmod g+s t1; install -m 4755 /bin/true t2; \
         python3 -c \"import os; os.close(os.open('t3', os.O_CREAT|os.O_WRONLY, 0o6755))\"; \
         true"
            .to_string(),
    )
    .await;
    use std::os::unix::fs::PermissionsExt;
    for name in ["t1", "t2", "t3"] {
        if let Ok(meta) = std::fs::metadata(f.ctx.workspace.join(name)) {
            let mode = meta.permissions().mode();
            assert_eq!(mode & 0o6000, 0, "{name} is {mode:o}: {}", text(&out));
        }
    }
    assert!(f.ctx.workspace.join("t1").exists(), "{}", text(&out));
}

/// A read-only mount travels with its mount point: renaming a directory above it must not
/// free the original path for a new hook, module configuration or `.git` file.
#[tokio::test]
async fn directories_above_read_only_git_parts_cannot_be_moved() {
    let Some(f) = fixture() else { return };
    let ws = &f.ctx.workspace;
    git_init(ws);
    std::fs::create_dir_all(ws.join(".husky/_")).unwrap();
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    std::fs::write(
        ws.join(".git/config"),
        format!("{config}[core]\n\thooksPath = .husky/_\n"),
    )
    .unwrap();
    // A submodule `lib/sub` as git lays it out.
    let module = ws.join(".git/modules/lib/sub");
    std::fs::create_dir_all(module.join("objects")).unwrap();
    std::fs::create_dir_all(module.join("refs")).unwrap();
    std::fs::write(module.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(module.join("config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::create_dir_all(ws.join("lib/sub")).unwrap();
    std::fs::write(
        ws.join("lib/sub/.git"),
        "gitdir: ../../.git/modules/lib/sub\n",
    )
    .unwrap();
    std::fs::write(
        ws.join(".gitmodules"),
        "[submodule \"lib/sub\"]\n\tpath = lib/sub\n\turl = ./x\n",
    )
    .unwrap();
    let out = sh(
        &f.ctx,
        "for m in '.husky .h' 'lib/sub lib/s2' 'lib l2' '.git/modules .git/m2' \
         '.git/modules/lib .git/modules/l2'; do set -- $m; \
         if mv $1 $2 2>/dev/null; then echo MOVED-$1; mkdir -p $1; fi; done; \
         mkdir -p .husky/_ && echo evil > .husky/_/pre-commit 2>/dev/null; \
         mkdir -p .git/modules/lib/sub && echo evil > .git/modules/lib/sub/config 2>/dev/null; \
         echo 'gitdir: /elsewhere' > lib/sub/.git 2>/dev/null; \
         echo x > .git/modules/lib/sub/commondir; true"
            .to_string(),
    )
    .await;
    let t = text(&out);
    assert!(!t.contains("MOVED"), "{t}");
    assert!(!ws.join(".husky/_/pre-commit").exists(), "{t}");
    assert_eq!(
        std::fs::read_to_string(module.join("config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("lib/sub/.git")).unwrap(),
        "gitdir: ../../.git/modules/lib/sub\n"
    );
    // A submodule's `commondir` would send git to a configuration of the command's making.
    assert!(!module.join("commondir").exists(), "{t}");
}

/// A link the command leaves at a read-only place of `.git` must not steer the next
/// command's mount: here it would put the host's `/tmp` over the sandbox's own.
#[tokio::test]
async fn a_link_at_a_read_only_git_place_steers_no_mount() {
    let Some(f) = fixture() else { return };
    let ws = &f.ctx.workspace;
    git_init(ws);
    let marker = std::path::PathBuf::from(format!("/tmp/codesmith-host-{}", std::process::id()));
    std::fs::write(&marker, "host file\n").unwrap();
    // From `.git`, as many steps up as reach the root of the sandbox's tree from the
    // workspace: the source resolves to the host's /tmp, the destination to the sandbox's.
    let up = "../".repeat(ws.components().count());
    let link = format!("{up}tmp");
    let listing = format!("ls .git/gitdir/ /tmp 2>&1; cat {} 2>&1", marker.display());
    let _ = sh(&f.ctx, format!("ln -s {link} .git/gitdir")).await;
    let t = text(&sh(&f.ctx, listing.clone()).await);
    // Planted on the host, the link is refused with a reason.
    std::os::unix::fs::symlink(&link, ws.join(".git/gitdir")).ok();
    let refused = match ExecShell.call(&f.ctx, json!({ "command": listing })).await {
        Ok(out) => text(&out),
        Err(refusal) => refusal.message,
    };
    let _ = std::fs::remove_file(&marker);
    assert!(!t.contains("host file"), "{t}");
    assert!(!refused.contains("host file"), "{refused}");
    assert!(refused.contains("symbolic link"), "{refused}");
}

/// A configuration file the repository includes from the workspace is git's own
/// configuration: read-only inside, and one that does not exist yet cannot be left behind.
#[tokio::test]
async fn configuration_the_repository_includes_is_read_only_and_cannot_be_created() {
    let Some(f) = fixture() else { return };
    let ws = &f.ctx.workspace;
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(
        ws.join(".git/config"),
        "[include]\n\tpath = ../shared.gitconfig\n[includeIf \"onbranch:main\"]\n\tpath = ../local.gitconfig\n",
    )
    .unwrap();
    std::fs::write(ws.join("shared.gitconfig"), "[user]\n\tname = a\n").unwrap();
    let out = sh(
        &f.ctx,
        "echo '[core] fsmonitor = touch /tmp/pwned' >> shared.gitconfig 2>/dev/null && echo WROTE; \
         echo '[core] fsmonitor = touch /tmp/pwned' > local.gitconfig 2>/dev/null && echo MADE; echo end"
            .to_string(),
    )
    .await;
    let t = text(&out);
    assert!(t.contains("end") && !t.contains("WROTE"), "{t}");
    assert_eq!(
        std::fs::read_to_string(ws.join("shared.gitconfig")).unwrap(),
        "[user]\n\tname = a\n"
    );
    assert!(
        !ws.join("local.gitconfig").exists(),
        "an included file was left behind: {t}"
    );
}

/// The sandbox's protected git setting (`safe.bareRepository=explicit`) also lives in
/// the read-only system configuration: a git that reads `/etc/gitconfig`, run with a
/// cleared environment (`unset`, `env -i`), still cannot use a planted bare-looking
/// directory, whose `core.fsmonitor` would run.
#[tokio::test]
async fn a_cleared_environment_keeps_the_protected_git_setting() {
    let Some(f) = fixture() else { return };
    if !std::path::Path::new("/etc/gitconfig").is_file()
        || !std::path::Path::new("/usr/bin/git").exists()
    {
        // Nothing to mount over here: the environment and the policy carry the setting.
        return;
    }
    let ws = &f.ctx.workspace;
    let bare = ws.join("b");
    std::fs::create_dir_all(bare.join("objects")).unwrap();
    std::fs::create_dir_all(bare.join("refs")).unwrap();
    std::os::unix::fs::symlink("refs/heads/master", bare.join("HEAD")).unwrap();
    std::fs::write(
        bare.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\
         \tfsmonitor = \"echo pwned > PWNED; false\"\n",
    )
    .unwrap();
    let out = sh(
        &f.ctx,
        "env -i /usr/bin/git config --system --get safe.bareRepository 2>&1; \
         cd b; unset GIT_CONFIG_COUNT; /usr/bin/git status >/dev/null 2>&1; \
         env -i /usr/bin/git status >/dev/null 2>&1; \
         echo GIT_CONFIG_NOSYSTEM=$GIT_CONFIG_NOSYSTEM"
            .to_string(),
    )
    .await;
    let t = text(&out);
    assert!(t.contains("explicit"), "{t}");
    assert!(t.contains("GIT_CONFIG_NOSYSTEM=\n"), "{t}");
    assert!(!ws.join("PWNED").exists(), "{t}");
    assert!(!ws.join("b/PWNED").exists(), "{t}");
}
