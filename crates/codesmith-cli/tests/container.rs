//! The `Containerfile` builds an image that runs `codesmith exec` as a non-root user
//! against the scripted model server. Runs only where podman or docker can build images
//! here; otherwise it says so loudly (`CONTAINER ENGINE MISSING:`) and checks nothing,
//! or fails when `CODESMITH_REQUIRE_CONTAINER=1`.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use codesmith_testkit::{Scripted, ScriptedServer};

use crate::common::Sandbox;

const IMAGE: &str = "localhost/codesmith-test:latest";
/// The base images the Containerfile starts from (its `RUST_IMAGE` and `RUNTIME_IMAGE`).
const BASES: [&str; 2] = [
    "docker.io/library/rust:1.88-slim-bookworm",
    "docker.io/library/debian:bookworm-slim",
];

/// The base images `engine` does not hold yet (a test never pulls from a registry).
fn missing_bases(engine: &str) -> Vec<&'static str> {
    BASES
        .into_iter()
        .filter(|image| {
            !std::process::Command::new(engine)
                .args(["image", "inspect", image])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect()
}

fn skip(message: &str) {
    assert!(
        std::env::var("CODESMITH_REQUIRE_CONTAINER").as_deref() != Ok("1"),
        "{message}"
    );
    eprintln!("{message}");
}

/// The first engine whose daemon or service answers (`info` succeeds).
fn engine() -> Option<&'static str> {
    ["podman", "docker"].into_iter().find(|engine| {
        std::process::Command::new(engine)
            .arg("info")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

async fn run(engine: &str, args: &[String], limit: Duration) -> std::process::Output {
    let mut cmd = tokio::process::Command::new(engine);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(limit, cmd.output())
        .await
        .expect("the container engine finished in time")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_container_image_runs_exec_as_a_non_root_user() {
    let Some(engine) = engine() else {
        skip(
            "CONTAINER ENGINE MISSING: neither `podman info` nor `docker info` succeeds here, \
             so the Containerfile was not built or run (install podman, or start a docker daemon)",
        );
        return;
    };
    let missing = missing_bases(engine);
    if !missing.is_empty() {
        skip(&format!(
            "CONTAINER ENGINE MISSING: {engine} works but lacks the base images {missing:?}; \
             `{engine} pull` them (the test never pulls), then run it again"
        ));
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let build = run(
        engine,
        &[
            "build".into(),
            "-t".into(),
            IMAGE.into(),
            "-f".into(),
            root.join("Containerfile").display().to_string(),
            root.display().to_string(),
        ],
        Duration::from_secs(3600),
    )
    .await;
    assert!(
        build.status.success(),
        "{engine} build: {}",
        String::from_utf8_lossy(&build.stderr)
    );
    let id = run(
        engine,
        &["run", "--rm", "--entrypoint", "id", IMAGE, "-u"].map(String::from),
        Duration::from_secs(120),
    )
    .await;
    assert_eq!(String::from_utf8_lossy(&id.stdout).trim(), "10001");

    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    server
        .push(Scripted::tool_call("c1", "list_dir", "{}"))
        .push(Scripted::text("The workspace holds calc.py."));
    let ws = sb.ws();
    // The unprivileged user must be able to write the mounted workspace.
    std::process::Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(&ws)
        .status()
        .unwrap();
    let out = run(
        engine,
        &[
            "run".into(),
            "--rm".into(),
            "--network".into(),
            "host".into(),
            "-e".into(),
            "OPENAI_API_KEY=sk-test".into(),
            "-v".into(),
            format!("{}:/workspace", ws.display()),
            IMAGE.into(),
            "exec".into(),
            "--provider".into(),
            "openai".into(),
            "--base-url".into(),
            server.base_url(),
            "--model".into(),
            "scripted".into(),
            "--approval".into(),
            "auto".into(),
            "What is in this folder?".into(),
        ],
        Duration::from_secs(300),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("holds calc.py"));
    assert_eq!(server.request_bodies().len(), 2);
}
