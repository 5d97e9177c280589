//! The release chain: `scripts/release.sh` writes the artifacts and their SHA-256
//! manifest, `scripts/install.sh` installs only what the manifest vouches for (a missing
//! manifest, a missing entry or a wrong digest is a refusal, and nothing is installed),
//! and `codesmith doctor` says when the release host has a newer version. The release
//! host is a static file server on 127.0.0.1.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Serves the files under `root` over HTTP/1.1 on 127.0.0.1 (GET only; 404 for anything
/// else). Returns the base URL; the server lives as long as the test's runtime.
async fn serve(root: PathBuf) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let root = root.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = stream.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let file = root.join(path.trim_start_matches('/'));
                let reply = match std::fs::read(&file) {
                    Ok(body) if !path.contains("..") && file.is_file() => {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        r.extend(body);
                        r
                    }
                    _ => {
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_vec()
                    }
                };
                let _ = stream.write_all(&reply).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

async fn run(program: &str, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_os_str())))
        .env_remove("CODESMITH_RELEASE_URL")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the script finished within 60 s")
        .unwrap()
}

/// A release directory made by `scripts/release.sh` from a stand-in binary.
struct Release {
    dir: tempfile::TempDir,
    version: String,
    file: String,
}

impl Release {
    async fn make() -> Release {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("stand-in");
        std::fs::write(&binary, "#!/bin/sh\necho stand-in codesmith\n").unwrap();
        let dist = dir.path().join("dist");
        let script = repo_root().join("scripts/release.sh");
        let out = run(
            "bash",
            &[script.to_str().unwrap(), dist.to_str().unwrap()],
            &[("CODESMITH_RELEASE_BINARY", &binary)],
        )
        .await;
        assert!(out.status.success(), "release.sh: {out:?}");
        let version = std::fs::read_to_string(dist.join("LATEST"))
            .unwrap()
            .trim()
            .to_string();
        assert_eq!(version, env!("CARGO_PKG_VERSION"));
        let manifest = std::fs::read_to_string(dist.join(&version).join("SHA256SUMS")).unwrap();
        let file = manifest
            .lines()
            .find_map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .filter(|f| f.starts_with("codesmith-"))
            })
            .unwrap()
            .to_string();
        // The manifest's digests are those of the files beside it, install.sh included.
        assert!(manifest.contains("  install.sh\n"), "{manifest}");
        Release { dir, version, file }
    }

    fn dist(&self) -> PathBuf {
        self.dir.path().join("dist")
    }

    fn manifest(&self) -> PathBuf {
        self.dist().join(&self.version).join("SHA256SUMS")
    }

    /// Runs the install script against this release, installing into `prefix`.
    async fn install(&self, prefix: &Path, home: &Path) -> Output {
        let base = serve(self.dist()).await;
        let script = repo_root().join("scripts/install.sh");
        run(
            "sh",
            &[
                script.to_str().unwrap(),
                "--base-url",
                &base,
                "--prefix",
                prefix.to_str().unwrap(),
            ],
            &[("CODESMITH_HOME", home)],
        )
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_install_script_installs_a_verified_binary_and_records_the_host() {
    let release = Release::make().await;
    let prefix = release.dir.path().join("bin");
    let home = release.dir.path().join("home");
    let out = release.install(&prefix, &home).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    let installed = prefix.join("codesmith");
    let served = release.dist().join(&release.version).join(&release.file);
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(served).unwrap()
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&installed).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    // Nothing is left beside it: the staging file was renamed into place.
    assert_eq!(std::fs::read_dir(&prefix).unwrap().count(), 1);
    let recorded = std::fs::read_to_string(home.join("release-url")).unwrap();
    assert!(recorded.starts_with("http://127.0.0.1:"), "{recorded}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_install_script_refuses_a_missing_or_wrong_manifest() {
    let release = Release::make().await;
    let good = std::fs::read_to_string(release.manifest()).unwrap();
    let wrong_digest = good
        .lines()
        .map(|l| {
            if l.ends_with(&release.file) {
                format!("{}  {}", "0".repeat(64), release.file)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let no_entry: String = good
        .lines()
        .filter(|l| !l.ends_with(&release.file))
        .map(|l| format!("{l}\n"))
        .collect();
    let cases: [(&str, Option<String>, &str); 3] = [
        ("missing", None, "the manifest"),
        ("wrong", Some(wrong_digest), "the manifest says"),
        ("no entry", Some(no_entry), "names no SHA-256"),
    ];
    for (label, manifest, says) in cases {
        match &manifest {
            None => std::fs::remove_file(release.manifest()).unwrap(),
            Some(text) => std::fs::write(release.manifest(), text).unwrap(),
        }
        let prefix = release
            .dir
            .path()
            .join(format!("bin-{}", label.replace(' ', "-")));
        // An earlier install stays as it was.
        std::fs::create_dir_all(&prefix).unwrap();
        std::fs::write(prefix.join("codesmith"), "old").unwrap();
        let out = release
            .install(&prefix, &release.dir.path().join("home"))
            .await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{label}: {stderr}");
        assert!(
            stderr.contains("refusing to install") && stderr.contains(says),
            "{label}: {stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(prefix.join("codesmith")).unwrap(),
            "old"
        );
        assert_eq!(std::fs::read_dir(&prefix).unwrap().count(), 1, "{label}");
        std::fs::write(release.manifest(), &good).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_a_newer_release_and_is_silent_offline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("LATEST"), "999.0.0\n").unwrap();
    let base = serve(dir.path().to_path_buf()).await;
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let doctor = |url: String| {
        let home = home.clone();
        async move {
            common::codesmith_with_env(
                &home,
                &["doctor", "--json"],
                &[("CODESMITH_RELEASE_URL", url.as_str())],
            )
            .await
        }
    };
    let release_finding = |out: &Output| -> Option<serde_json::Value> {
        let text = String::from_utf8_lossy(&out.stdout);
        let report: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "release")
            .cloned()
    };
    let out = doctor(base.clone()).await;
    let finding = release_finding(&out).expect("a release finding");
    assert_eq!(finding["status"], "warn", "{finding}");
    assert!(
        finding["summary"].as_str().unwrap().contains("999.0.0")
            && finding["hint"].as_str().unwrap().contains("install.sh"),
        "{finding}"
    );
    // The same version as this build: up to date.
    std::fs::write(dir.path().join("LATEST"), env!("CARGO_PKG_VERSION")).unwrap();
    let finding = release_finding(&doctor(base).await).expect("a release finding");
    assert_eq!(finding["status"], "ok", "{finding}");
    // Nobody listening: no finding at all.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    assert!(release_finding(&doctor(url).await).is_none());
}
