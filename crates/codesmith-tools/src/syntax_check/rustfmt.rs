//! rustfmt normalisation for Rust files that were rustfmt-clean.
//!
//! When a `.rs` file was rustfmt-clean before a write, the new content goes through
//! `rustfmt --edition 2024` so later edit anchors stay stable. rustfmt is a host program
//! ([`crate::host_programs`]): nothing in the workspace decides which binary runs. It is
//! resolved once per workspace ([`Rustfmt::for_workspace`], 5 s cap per step): with rustup,
//! `rustup show active-toolchain` and `rustup which --toolchain T rustfmt` asked from `/`
//! give the toolchain's own binary, which then runs directly (no proxy, so a workspace
//! `rust-toolchain.toml` is never read) with `RUSTUP_TOOLCHAIN=T`; without rustup, the
//! `rustfmt` on `PATH` outside the workspace. Each format call runs in `/` with the source
//! on stdin and a 10 s cap; the nearest `.rustfmt.toml` or `rustfmt.toml` above the file
//! is passed with `--config-path` (rustfmt's options are data: none names a program). Any
//! failure (binary missing, non-zero exit, timeout, non-UTF-8 output) silently keeps the
//! content as given. This module never refuses a write; only
//! [`crate::syntax_check::syntax`] does.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::host_programs::{self, HostProgram};

/// Cap on each step of resolving rustfmt (the `rustup` questions, the `--version` probe).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Cap on one formatting run.
pub const FORMAT_TIMEOUT: Duration = Duration::from_secs(10);

/// The rustfmt run for one workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rustfmt {
    /// The binary: the toolchain's own when rustup manages it, else `rustfmt` on `PATH`
    /// (outside the workspace). Never inside the workspace.
    pub program: PathBuf,
    /// The toolchain it belongs to, set as `RUSTUP_TOOLCHAIN` when it runs (rustup only).
    pub toolchain: Option<String>,
    /// The workspace it was resolved for (its `PATH` leaves the workspace out).
    workspace: PathBuf,
}

/// Workspaces resolved so far (a process normally has one), bounded.
const RESOLVED_CACHE: usize = 8;

impl Rustfmt {
    /// The rustfmt for `workspace`, resolved and probed once per workspace and process;
    /// `None` when none works.
    pub fn for_workspace(workspace: &Path) -> Option<Rustfmt> {
        type Resolved = Mutex<VecDeque<(PathBuf, Option<Rustfmt>)>>;
        static RESOLVED: OnceLock<Resolved> = OnceLock::new();
        let cache = RESOLVED.get_or_init(Mutex::default);
        let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, found)) = cache.iter().find(|(ws, _)| ws == workspace) {
            return found.clone();
        }
        let found = Rustfmt::resolve(workspace);
        if cache.len() == RESOLVED_CACHE {
            cache.pop_front();
        }
        cache.push_back((workspace.to_path_buf(), found.clone()));
        found
    }

    fn resolve(workspace: &Path) -> Option<Rustfmt> {
        let found = match host_programs::find_program("rustup", workspace) {
            Some(rustup) => {
                let ask = |args: &[&str]| {
                    let mut cmd =
                        host_programs::host_command(HostProgram::Rustup, &rustup, workspace);
                    cmd.args(args);
                    run(cmd, None, PROBE_TIMEOUT)
                };
                let active = ask(&["show", "active-toolchain"])?;
                let toolchain = active.split_whitespace().next()?.to_string();
                let which = ask(&["which", "--toolchain", &toolchain, "rustfmt"])?;
                Rustfmt {
                    program: host_programs::find_program(which.trim(), workspace)?,
                    toolchain: Some(toolchain),
                    workspace: workspace.to_path_buf(),
                }
            }
            None => Rustfmt {
                program: host_programs::find_program("rustfmt", workspace)?,
                toolchain: None,
                workspace: workspace.to_path_buf(),
            },
        };
        found.run(&["--version"], None, "", PROBE_TIMEOUT)?;
        Some(found)
    }

    /// Formats `text` with `rustfmt --edition 2024` from stdin, with the options of
    /// `config` (a `rustfmt.toml`) when given. `None` on any failure.
    pub fn format(&self, text: &str, config: Option<&Path>) -> Option<String> {
        self.run(
            &["--edition", "2024", "--emit", "stdout", "--quiet"],
            config,
            text,
            FORMAT_TIMEOUT,
        )
    }

    fn run(
        &self,
        args: &[&str],
        config: Option<&Path>,
        stdin: &str,
        cap: Duration,
    ) -> Option<String> {
        let mut cmd =
            host_programs::host_command(HostProgram::Rustfmt, &self.program, &self.workspace);
        if let Some(toolchain) = &self.toolchain {
            cmd.env("RUSTUP_TOOLCHAIN", toolchain);
        }
        cmd.args(args);
        if let Some(config) = config {
            cmd.arg("--config-path").arg(config);
        }
        run(cmd, Some(stdin), cap)
    }
}

/// The rustfmt options file for `path`: the nearest `.rustfmt.toml` or `rustfmt.toml` in
/// its directory or above (rustfmt's own search, which from `/` would find none).
fn config_for(path: &Path) -> Option<PathBuf> {
    path.parent()?.ancestors().find_map(|dir| {
        [".rustfmt.toml", "rustfmt.toml"]
            .iter()
            .map(|name| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// The content to write for a Rust file: `new` formatted when `path` (a file of
/// `workspace`) is a `.rs` file whose `old` content was rustfmt-clean and formatting
/// succeeds; otherwise `None` (write `new` as given). A `Some` result always differs from
/// `new`.
pub fn normalize(workspace: &Path, path: &Path, old: Option<&str>, new: &str) -> Option<String> {
    if path.extension().is_none_or(|e| e != "rs") {
        return None;
    }
    let old = old?;
    if old.is_empty() || new.is_empty() {
        return None;
    }
    let rustfmt = Rustfmt::for_workspace(workspace)?;
    let config = config_for(path);
    let config = config.as_deref();
    if !is_clean(&rustfmt, config, old) {
        return None;
    }
    let formatted = rustfmt.format(new, config)?;
    remember_clean(config, &formatted);
    (formatted != new).then_some(formatted)
}

/// Hashes of texts known to be rustfmt output, so a chain of edits formats once per edit.
const CLEAN_CACHE: usize = 32;

type CleanCache = Mutex<VecDeque<[u8; 32]>>;

fn clean_cache() -> &'static CleanCache {
    static CACHE: OnceLock<CleanCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(VecDeque::with_capacity(CLEAN_CACHE)))
}

/// The cache key of `text` formatted with the options of `config`.
fn key(config: Option<&Path>, text: &str) -> [u8; 32] {
    let mut hash = Sha256::new();
    if let Some(config) = config {
        hash.update(config.as_os_str().as_encoded_bytes());
    }
    hash.update([0]);
    hash.update(text.as_bytes());
    hash.finalize().into()
}

fn remember_clean(config: Option<&Path>, text: &str) {
    let k = key(config, text);
    let mut cache = clean_cache().lock().unwrap_or_else(PoisonError::into_inner);
    if !cache.contains(&k) {
        if cache.len() == CLEAN_CACHE {
            cache.pop_front();
        }
        cache.push_back(k);
    }
}

/// True when `text` is rustfmt-clean (from the cache, or by formatting it).
fn is_clean(rustfmt: &Rustfmt, config: Option<&Path>, text: &str) -> bool {
    let k = key(config, text);
    if clean_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&k)
    {
        return true;
    }
    match rustfmt.format(text, config) {
        Some(f) if f == text => {
            remember_clean(config, text);
            true
        }
        _ => false,
    }
}

/// Runs `cmd`, feeding it `stdin` (else a null stdin), within `cap`; its stdout. `None`
/// on any failure.
fn run(mut cmd: Command, stdin: Option<&str>, cap: Duration) -> Option<String> {
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let writer = match (stdin, child.stdin.take()) {
        (Some(text), Some(mut input)) => {
            let owned = text.to_string();
            Some(std::thread::spawn(move || {
                let _ = input.write_all(owned.as_bytes());
            }))
        }
        _ => None,
    };
    let mut out = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let deadline = Instant::now() + cap;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    let bytes = reader.join().ok()?;
    if !status.success() {
        return None;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_only_clean_files() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        let Some(rustfmt) = Rustfmt::for_workspace(ws) else {
            return;
        };
        assert!(rustfmt.program.is_absolute());
        let clean = "fn a() {}\n";
        let p = ws.join("x.rs");
        assert_eq!(
            normalize(ws, &p, Some(clean), "fn a() {}\nfn   b( ) { }\n").as_deref(),
            Some("fn a() {}\nfn b() {}\n")
        );
        let messy = "fn   a( ) { }\n";
        assert!(normalize(ws, &p, Some(messy), "fn   a( ) { }\nfn   b( ) { }\n").is_none());
        assert!(normalize(ws, &ws.join("x.txt"), Some(clean), "fn   b( ) { }\n").is_none());
        assert!(normalize(ws, &p, None, "fn   b( ) { }\n").is_none());
    }

    #[test]
    fn the_nearest_options_file_is_used() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        let Some(rustfmt) = Rustfmt::for_workspace(ws) else {
            return;
        };
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        std::fs::write(ws.join("a/rustfmt.toml"), "hard_tabs = true\n").unwrap();
        let file = ws.join("a/b/x.rs");
        assert_eq!(config_for(&file), Some(ws.join("a/rustfmt.toml")));
        let config = config_for(&file);
        assert_eq!(
            rustfmt
                .format("fn a() { let x = 1; }\n", config.as_deref())
                .as_deref(),
            Some("fn a() {\n\tlet x = 1;\n}\n")
        );
    }
}
