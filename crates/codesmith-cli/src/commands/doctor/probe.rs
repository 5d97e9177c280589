//! External tools, resolved by probing candidates with `--version` (probe, then
//! decide; `python3`, then `python`, then `py -3`).
//!
//! A probe is a host program ([`codesmith_tools::host_programs`]): the program is found on
//! `PATH` outside the workspace (relative entries and workspace entries skipped) and runs in
//! `/` with an allowlisted environment, so a `rust-toolchain.toml` or `.python-version` in
//! the workspace chooses nothing and a planted `node_modules/.bin` or `.venv/bin` program
//! never answers. Each probe result is cached in `$CODESMITH_HOME/doctor-cache.json`, keyed
//! by the candidate and valid while the program found keeps its path and modification
//! time; a program that is not found is not spawned at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Name of the cache file under `$CODESMITH_HOME`.
pub(crate) const CACHE_FILE: &str = "doctor-cache.json";
/// Bound on one `--version` run.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// One cached probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CachedProbe {
    /// The program's absolute path when probed.
    pub path: PathBuf,
    /// Its modification time (seconds since the epoch) when probed.
    pub mtime: u64,
    /// First line of its `--version` output; `None` when it failed to run.
    pub version: Option<String>,
}

/// The cache file's contents: candidate command line → probe.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ProbeCache {
    /// Entries by candidate (`"py -3"`).
    pub entries: BTreeMap<String, CachedProbe>,
}

impl ProbeCache {
    /// Reads the cache; a missing or malformed file is an empty cache.
    pub(crate) fn load(home: &Path) -> Self {
        std::fs::read_to_string(home.join(CACHE_FILE))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Writes the cache atomically when `home` exists; failures are ignored (a cache).
    pub(crate) fn save(&self, home: &Path) {
        if !home.is_dir() {
            return;
        }
        if let Ok(text) = serde_json::to_string_pretty(self) {
            let path = home.join(CACHE_FILE);
            if codesmith_tools::fs::atomic::write_atomic(&path, text.as_bytes()).is_ok() {
                let _ = codesmith_tools::private::restrict(&path);
            }
        }
    }
}

/// A resolved tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The candidate that worked (`"python3"`).
    pub candidate: String,
    /// Where it lives.
    pub path: PathBuf,
    /// First line of `--version`.
    pub version: String,
}

fn mtime(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

/// The first candidate (a command line like `"py -3"`) whose `--version` succeeds, found
/// outside `workspace`.
pub(crate) async fn resolve(
    candidates: &[&str],
    cache: &mut ProbeCache,
    workspace: &Path,
) -> Option<Resolved> {
    for candidate in candidates {
        let mut words = candidate.split_whitespace();
        let Some(program) = words.next() else {
            continue;
        };
        let extra: Vec<&str> = words.collect();
        let Some(path) = codesmith_tools::host_programs::find_program(program, workspace) else {
            continue;
        };
        let stamp = mtime(&path);
        let hit = cache
            .entries
            .get(*candidate)
            .filter(|c| c.path == path && c.mtime == stamp)
            .cloned();
        let version = match hit {
            Some(c) => c.version,
            None => {
                let version = run_version(&path, &extra, workspace).await;
                cache.entries.insert(
                    candidate.to_string(),
                    CachedProbe {
                        path: path.clone(),
                        mtime: stamp,
                        version: version.clone(),
                    },
                );
                version
            }
        };
        if let Some(version) = version {
            return Some(Resolved {
                candidate: candidate.to_string(),
                path,
                version,
            });
        }
    }
    None
}

/// Runs `path extra... --version`; the first non-empty line of stdout (else stderr).
async fn run_version(path: &Path, extra: &[&str], workspace: &Path) -> Option<String> {
    use codesmith_tools::host_programs::{HostProgram, host_command};
    let mut cmd = host_command(HostProgram::VersionProbe, path, workspace);
    cmd.args(extra).arg("--version");
    let child = tokio::process::Command::from(cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(PROBE_TIMEOUT, child)
        .await
        .ok()?
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let first = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.chars().take(120).collect::<String>())
    };
    first(&out.stdout).or_else(|| first(&out.stderr))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn probes_are_cached_and_missing_programs_skipped() {
        let mut cache = ProbeCache::default();
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path();
        assert_eq!(
            resolve(&["codesmith-no-such-program-xyz"], &mut cache, ws).await,
            None
        );
        assert!(cache.entries.is_empty());
        // `sh` exists on any Unix test machine but has no reliable --version: use `ls`-free
        // check with the test binary's own cargo, which always answers.
        if codesmith_tools::host_programs::find_program("cargo", ws).is_some() {
            let r = resolve(&["codesmith-no-such-program-xyz", "cargo"], &mut cache, ws)
                .await
                .unwrap();
            assert_eq!(r.candidate, "cargo");
            assert!(r.version.starts_with("cargo "), "{}", r.version);
            assert!(cache.entries.contains_key("cargo"));
            let d = tempfile::tempdir().unwrap();
            cache.save(d.path());
            let loaded = ProbeCache::load(d.path());
            assert_eq!(loaded.entries, cache.entries);
        }
    }
}
