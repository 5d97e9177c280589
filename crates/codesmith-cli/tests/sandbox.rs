//! The sandbox seen from the binary: secrets dropped by value, `[sandbox] required`
//! enforced by the shell tools and `sandbox run` alike, and doctor's per-item report.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn codesmith(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_codesmith"));
    cmd.args(args)
        .env("CODESMITH_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// `codesmith tool NAME --workspace WS ARGS`, its envelope.
fn tool(home: &Path, ws: &Path, name: &str, args: &str, env: &[(&str, &str)]) -> Value {
    let out = codesmith(
        home,
        &["tool", name, "--workspace", ws.to_str().unwrap(), args],
        env,
    );
    envelope(&out)
}

/// `codesmith doctor --json`, parsed.
fn doctor(home: &Path, ws: &Path) -> Value {
    let out = codesmith(
        home,
        &["doctor", "--json", "--workspace", ws.to_str().unwrap()],
        &[],
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let ws = d.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    (d, home, ws)
}

fn envelope(out: &Output) -> Value {
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap_or(Value::Null)
}

#[test]
fn secrets_are_dropped_from_commands_by_value_as_well_as_by_name() {
    let (_d, home, ws) = dirs();
    let v = tool(
        &home,
        &ws,
        "exec_shell",
        r#"{"command": "env"}"#,
        &[
            ("APP_DB", "postgres://app:PlantedPw1@db.internal/app"),
            ("SOME_SETTING", "ghp_PlantedGithubToken0123456789abcd"),
            ("HEADER_VALUE", "Bearer PlantedBearer.value"),
            ("SENTRY_DSN", "https://PlantedDsn@sentry.example/1"),
            ("GITLAB_PAT", "PlantedPat"),
            ("ORDINARY_SETTING", "visible"),
        ],
    );
    let text = v["output"].as_str().unwrap_or_default();
    // The environment is an allowlist: an ordinary variable nobody listed stays out too,
    // and the listed ones arrive.
    assert!(text.contains("PATH="), "{v}");
    assert!(!text.contains("ORDINARY_SETTING"), "{v}");
    assert!(!text.contains("Planted"), "a secret leaked: {text}");
}

/// `[sandbox] env` in the user's config passes a variable the allowlist does not name.
#[test]
fn a_variable_named_in_sandbox_env_reaches_commands() {
    let (_d, home, ws) = dirs();
    std::fs::write(
        home.join("config.toml"),
        "[sandbox]\nenv = [\"ORDINARY_SETTING\"]\n",
    )
    .unwrap();
    let v = tool(
        &home,
        &ws,
        "exec_shell",
        r#"{"command": "env"}"#,
        &[("ORDINARY_SETTING", "visible"), ("OTHER_SETTING", "hidden")],
    );
    let text = v["output"].as_str().unwrap_or_default();
    assert!(text.contains("ORDINARY_SETTING=visible"), "{v}");
    assert!(!text.contains("OTHER_SETTING"), "{v}");
}

/// `sandbox run` is a way to run a command too: it drops the same secrets as the shell
/// tools, by name (also the short `_PWD`/`_PASS` forms) and by value.
#[test]
fn sandbox_run_drops_secrets_from_the_environment() {
    let (_d, home, ws) = dirs();
    std::fs::write(
        home.join("config.toml"),
        "[sandbox]\nbackend = \"none\"\nrequired = false\n",
    )
    .unwrap();
    let planted = [
        ("MY_API_KEY", "Planted1"),
        ("MYSQL_PWD", "Planted2"),
        ("REDIS_PASS", "Planted3"),
        ("SOME_SETTING", "ghp_PlantedGithubToken0123456789abcd"),
        ("UPSTREAM", "https://u:Planted4@example.invalid/"),
        ("ORDINARY_SETTING", "visible"),
    ];
    let out = codesmith(
        &home,
        &[
            "sandbox",
            "run",
            "--workspace",
            ws.to_str().unwrap(),
            "--",
            "env",
        ],
        &planted,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PATH="), "{text}");
    assert!(!text.contains("ORDINARY_SETTING"), "{text}");
    assert!(!text.contains("Planted"), "a secret leaked: {text}");
    let v = tool(&home, &ws, "exec_shell", r#"{"command": "env"}"#, &planted);
    let text = v["output"].as_str().unwrap_or_default();
    assert!(text.contains("PATH="), "{v}");
    assert!(!text.contains("ORDINARY_SETTING"), "{v}");
    assert!(!text.contains("Planted"), "a secret leaked: {text}");
}

/// A descriptor that whatever started CodeSmith left open (here fd 7 on a file outside
/// the workspace) is a way out of the sandbox: it must not reach the command.
#[test]
fn inherited_descriptors_do_not_reach_sandboxed_commands() {
    let (_d, home, ws) = dirs();
    if codesmith_tools::sandbox::BwrapBackend::detect().is_none() {
        codesmith_testkit::missing(
            "BWRAP",
            "this sandbox test checked nothing (install bubblewrap)",
        );
        return;
    }
    let outside = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
    let out = Command::new("bash")
        .args([
            "-c",
            r#"exec 7>>"$1"; exec "$2" sandbox run --workspace "$3" -- bash -c 'echo LEAKED >&7; ls /proc/self/fd'"#,
            "inherit",
        ])
        .arg(outside.path())
        .arg(env!("CARGO_BIN_EXE_codesmith"))
        .arg(&ws)
        .env("CODESMITH_HOME", &home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    let written = std::fs::read_to_string(outside.path()).unwrap();
    assert!(!written.contains("LEAKED"), "wrote through fd 7: {listing}");
    let fds: Vec<&str> = listing.lines().collect();
    assert!(!fds.contains(&"7"), "fd 7 is open inside: {listing}");
    assert!(fds.contains(&"1"), "{listing}");
}

#[test]
fn required_without_isolation_refuses_exec_shell_and_sandbox_run() {
    let (_d, home, ws) = dirs();
    std::fs::write(
        home.join("config.toml"),
        "[sandbox]\nbackend = \"none\"\nrequired = true\n",
    )
    .unwrap();
    let marker = ws.join("ran");
    let cmd = format!(r#"{{"command": "touch {}"}}"#, marker.display());
    let out = codesmith(
        &home,
        &[
            "tool",
            "exec_shell",
            "--workspace",
            ws.to_str().unwrap(),
            &cmd,
        ],
        &[],
    );
    let v = envelope(&out);
    assert_eq!(v["error"]["code"], "DENIED", "{v}");
    let hint = v["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("install bubblewrap") && hint.contains("required = false"));
    let out = codesmith(
        &home,
        &[
            "tool",
            "task_shell_start",
            "--workspace",
            ws.to_str().unwrap(),
            &cmd,
        ],
        &[],
    );
    assert_eq!(envelope(&out)["error"]["code"], "DENIED");
    let out = codesmith(
        &home,
        &[
            "sandbox",
            "run",
            "--workspace",
            ws.to_str().unwrap(),
            "--",
            "touch",
            marker.to_str().unwrap(),
        ],
        &[],
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("install bubblewrap"));
    assert!(!marker.exists(), "a refused command ran");
}

#[test]
fn doctor_reports_per_item_and_warns_about_a_readable_key_file() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, home, ws) = dirs();
    let config = home.join("config.toml");
    std::fs::write(&config, "[openai]\napi_key = \"sk-test-doctor-mode\"\n").unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let v = doctor(&home, &ws);
    let findings = v["findings"].as_array().unwrap();
    let by_id = |id: &str| findings.iter().find(|f| f["id"] == id).cloned();
    let mode = by_id("keys.config_mode").expect("no keys.config_mode finding");
    assert_eq!(mode["status"], "warn", "{mode}");
    assert!(mode["hint"].as_str().unwrap().contains("chmod 600"));
    assert_eq!(by_id("sandbox.dumpable").unwrap()["status"], "ok");
    let bwrap = by_id("sandbox.bwrap").unwrap();
    if bwrap["status"] == "ok" {
        for id in [
            "sandbox.caps",
            "sandbox.git_readonly",
            "sandbox.masks",
            "sandbox.host_sockets",
        ] {
            let f = by_id(id).unwrap_or_else(|| panic!("no {id}"));
            assert_eq!(f["status"], "ok", "{f}");
        }
        assert!(by_id("sandbox.userns").is_some());
        // Root's process bound needs a writable cgroup, which the host may not offer.
        let bounds = by_id("sandbox.bounds").unwrap();
        if codesmith_tools::sandbox::limits::bounds()
            .cgroup_pids
            .is_some()
        {
            assert_eq!(bounds["status"], "ok", "{bounds}");
        }
    } else {
        codesmith_testkit::missing(
            "BWRAP",
            &format!(
                "the doctor sandbox items were not checked: bwrap does not work here: {bwrap}"
            ),
        );
    }
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let v = doctor(&home, &ws);
    let mode = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "keys.config_mode")
        .cloned()
        .unwrap();
    assert_eq!(mode["status"], "ok", "{mode}");
}

#[test]
fn doctor_shows_an_ignored_project_sandbox_value_as_ignored() {
    let (_d, home, ws) = dirs();
    std::fs::create_dir_all(ws.join(".codesmith")).unwrap();
    std::fs::write(
        ws.join(".codesmith/config.toml"),
        "[sandbox]\nbackend = \"none\"\nrequired = false\nnetwork = false\n",
    )
    .unwrap();
    let v = doctor(&home, &ws);
    let finding = |id: &str| {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .cloned()
            .unwrap()
    };
    // The effective values, with the layer that set each: the project's loosening values
    // are not in force.
    let sources = finding("config.sources");
    let text = sources["summary"].as_str().unwrap();
    assert!(
        text.contains("sandbox.backend = \"auto\" (default)"),
        "{text}"
    );
    assert!(
        text.contains("sandbox.required = false (default)"),
        "{text}"
    );
    assert!(
        text.contains("sandbox.network = false (project (tightened))"),
        "{text}"
    );
    // What the project tried and may not do is said by the project layer itself.
    let project = finding("config.project");
    assert_eq!(project["status"], "warn", "{project}");
    let text = project["summary"].as_str().unwrap();
    assert!(text.contains("ignored [sandbox] backend"), "{text}");
    assert!(
        text.contains("ignored a loosening [sandbox] setting"),
        "{text}"
    );
    // The backend really in force is the user's default, not the project's "none".
    let backend = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "sandbox.backend")
        .cloned()
        .unwrap();
    if codesmith_tools::sandbox::BwrapBackend::detect().is_some() {
        assert!(
            backend["summary"]
                .as_str()
                .unwrap()
                .contains("backend bwrap"),
            "{backend}"
        );
    }
}

/// `policy check` says which context it judged: bare by default (the host's `/tmp`),
/// and with `--sandboxed` as run under a sandbox with a private `/tmp`.
#[test]
fn policy_check_names_its_context_and_judges_private_tmp_only_when_sandboxed() {
    let (_d, home, ws) = dirs();
    let check = |sandboxed: bool, command: &str| -> Value {
        let mut args = vec!["policy", "check", "--workspace", ws.to_str().unwrap()];
        if sandboxed {
            args.push("--sandboxed");
        }
        args.push(command);
        let out = codesmith(&home, &args, &[]);
        assert_eq!(out.status.code(), Some(0), "{:?}", out.stderr);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let bare = check(false, "rm -rf /tmp/codesmith-build");
    assert_eq!(bare["context"], "bare", "{bare}");
    assert_eq!(bare["decision"], "ask", "{bare}");
    let sandboxed = check(true, "rm -rf /tmp/codesmith-build");
    assert_eq!(sandboxed["context"], "sandboxed", "{sandboxed}");
    assert_eq!(sandboxed["decision"], "allow", "{sandboxed}");
    let out = check(true, "rm -rf /tmp/../etc/hosts");
    assert_eq!(out["decision"], "ask", "{out}");
}

/// The same walls for a user who is not root: run (from a root test run) as uid 65534 with
/// `setpriv`, CodeSmith takes the unprivileged path (no staging, its own uid in the user
/// namespace) and still shows only the allowlist. Skipped, saying so, when the test does
/// not run as root, `setpriv` is missing, or that uid cannot reach the binary.
#[test]
fn the_walls_hold_for_a_user_who_is_not_root() {
    if codesmith_tools::sandbox::BwrapBackend::detect().is_none() {
        codesmith_testkit::missing(
            "BWRAP",
            "this sandbox test checked nothing (install bubblewrap)",
        );
        return;
    }
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    let bin = env!("CARGO_BIN_EXE_codesmith");
    let as_user = |args: &[&str]| {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]);
        cmd.args(args).stdin(Stdio::null());
        cmd
    };
    let reachable = as_user(&["test", "-x", bin])
        .status()
        .is_ok_and(|s| s.success());
    if !root || !reachable {
        eprintln!("NOTE: not run: needs root, setpriv, and a binary uid 65534 can reach ({bin})");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (home, ws, user_home) = (
        d.path().join("home"),
        d.path().join("ws"),
        d.path().join("uh"),
    );
    for dir in [&home, &ws, &user_home] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::create_dir_all(user_home.join(".ssh")).unwrap();
    std::fs::write(user_home.join(".ssh/id_ed25519"), "PLANTED-KEY\n").unwrap();
    std::fs::write(user_home.join(".s3cfg"), "secret_key = PLANTED-S3\n").unwrap();
    for p in [d.path(), &home, &ws, &user_home, &user_home.join(".ssh")] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    for f in [user_home.join(".ssh/id_ed25519"), user_home.join(".s3cfg")] {
        std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
    }
    let script = "id -u; echo \"home:$(ls -A ~ | tr '\\n' ' ')\"; env | cut -d= -f1 | sort | tr '\\n' ' '; echo; \
                  cat ~/.ssh/id_ed25519 ~/.s3cfg 2>/dev/null; \
                  [ -w /proc/sys/kernel/core_pattern ] && echo CORE-WRITABLE; \
                  unshare -U true 2>/dev/null && echo USERNS; echo x > made.txt; echo end";
    let out = as_user(&[
        bin,
        "sandbox",
        "run",
        "--workspace",
        ws.to_str().unwrap(),
        "--",
        "bash",
        "-c",
        script,
    ])
    .env_clear()
    .env("PATH", "/usr/local/bin:/usr/bin:/bin")
    .env("HOME", &user_home)
    .env("CODESMITH_HOME", &home)
    .env("STRIPE_SK", "sk_live_PLANTED")
    .env("AUTH", "PLANTED-AUTH")
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("end"), "{text}\n{err}");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("65534"), "{text}");
    assert_eq!(lines.next(), Some("home:"), "the home is not empty: {text}");
    assert!(!text.contains("PLANTED"), "a secret leaked: {text}");
    assert!(
        !text.contains("STRIPE_SK") && !text.contains("AUTH "),
        "{text}"
    );
    assert!(
        !text.contains("CORE-WRITABLE") && !text.contains("USERNS"),
        "{text}"
    );
    assert!(
        ws.join("made.txt").exists(),
        "the workspace was not writable: {text}\n{err}"
    );
}
