//! rustfmt normalisation for Rust files that were rustfmt-clean.
//!
//! When a `.rs` file was rustfmt-clean before a write, the new content goes through
//! `rustfmt --edition 2024` so later edit anchors stay stable. The binary is probed once
//! per process (5 s cap); each format call has a 10 s cap. Any failure (binary missing,
//! non-zero exit, timeout, non-UTF-8 output) silently keeps the content as given. This
//! module never refuses a write; only [`crate::syntax_check::syntax`] does.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Cap on the one-time `rustfmt --version` probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Cap on one formatting run.
pub const FORMAT_TIMEOUT: Duration = Duration::from_secs(10);

/// True when a working `rustfmt` was found (probed once per process).
pub fn available() -> bool {
    static PROBE: OnceLock<bool> = OnceLock::new();
    *PROBE.get_or_init(|| run(&["--version"], "", PROBE_TIMEOUT).is_some())
}

/// Formats `text` with `rustfmt --edition 2024` read from stdin. `None` on any failure.
pub fn format(text: &str) -> Option<String> {
    if !available() {
        return None;
    }
    run(
        &["--edition", "2024", "--emit", "stdout", "--quiet"],
        text,
        FORMAT_TIMEOUT,
    )
}

/// The content to write for a Rust file: `new` formatted when `path` is a `.rs` file whose
/// `old` content was rustfmt-clean and formatting succeeds; otherwise `None` (write `new`
/// as given). A `Some` result always differs from `new`.
pub fn normalize(path: &Path, old: Option<&str>, new: &str) -> Option<String> {
    if path.extension().is_none_or(|e| e != "rs") {
        return None;
    }
    let old = old?;
    if old.is_empty() || new.is_empty() || !available() {
        return None;
    }
    if !is_clean(old) {
        return None;
    }
    let formatted = format(new)?;
    remember_clean(&formatted);
    (formatted != new).then_some(formatted)
}

/// Hashes of texts known to be rustfmt output, so a chain of edits formats once per edit.
const CLEAN_CACHE: usize = 32;

type CleanCache = Mutex<VecDeque<[u8; 32]>>;

fn clean_cache() -> &'static CleanCache {
    static CACHE: OnceLock<CleanCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(VecDeque::with_capacity(CLEAN_CACHE)))
}

fn key(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

fn remember_clean(text: &str) {
    let k = key(text);
    let mut cache = clean_cache().lock().unwrap_or_else(PoisonError::into_inner);
    if !cache.contains(&k) {
        if cache.len() == CLEAN_CACHE {
            cache.pop_front();
        }
        cache.push_back(k);
    }
}

/// True when `text` is rustfmt-clean (from the cache, or by formatting it).
fn is_clean(text: &str) -> bool {
    let k = key(text);
    if clean_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&k)
    {
        return true;
    }
    match format(text) {
        Some(f) if f == text => {
            remember_clean(text);
            true
        }
        _ => false,
    }
}

/// Runs rustfmt with `args`, feeding `stdin`, within `cap`. `None` on any failure.
fn run(args: &[&str], stdin: &str, cap: Duration) -> Option<String> {
    let mut child = Command::new("rustfmt")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut input = child.stdin.take()?;
    let owned = stdin.to_string();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(owned.as_bytes());
    });
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
    let _ = writer.join();
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
        if !available() {
            return;
        }
        let clean = "fn a() {}\n";
        let p = Path::new("x.rs");
        assert_eq!(
            normalize(p, Some(clean), "fn a() {}\nfn   b( ) { }\n").as_deref(),
            Some("fn a() {}\nfn b() {}\n")
        );
        let messy = "fn   a( ) { }\n";
        assert!(normalize(p, Some(messy), "fn   a( ) { }\nfn   b( ) { }\n").is_none());
        assert!(normalize(Path::new("x.txt"), Some(clean), "fn   b( ) { }\n").is_none());
        assert!(normalize(p, None, "fn   b( ) { }\n").is_none());
    }
}
