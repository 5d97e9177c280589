//! Read-before-write tracking (mtime + length).
//!
//! Editing or overwriting a file the session has not read, or one that changed on disk
//! since it was read, is refused (`NOT_READ`, `STALE_READ`) with a hint to re-read.
//! Creating a new file needs no read. A successful write marks the file fresh again, so a
//! model can chain edits on what it just wrote.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use crate::{ErrorCode, Refusal};

/// What was seen of a file when it was read: modification time and length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    /// Modification time (`None` where the platform has none).
    pub mtime: Option<SystemTime>,
    /// Length in bytes.
    pub len: u64,
}

impl Fingerprint {
    /// The current fingerprint of `path`; `None` when it cannot be stat'ed.
    pub fn of(path: &Path) -> Option<Fingerprint> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Fingerprint {
            mtime: meta.modified().ok(),
            len: meta.len(),
        })
    }
}

/// Fingerprints of the files a session has read, keyed by canonical path. Thread-safe.
#[derive(Debug, Default)]
pub struct FreshnessTracker {
    seen: Mutex<HashMap<PathBuf, Fingerprint>>,
    /// One call outside any session: every file counts as read as it is now.
    one_call: bool,
}

impl FreshnessTracker {
    /// An empty tracker.
    pub fn new() -> Self {
        FreshnessTracker::default()
    }

    /// The tracker of one call outside any session (`codesmith tool`): no read can precede
    /// it, so a file's content as it is when the call runs is its read and every check
    /// passes. Never for a session or the MCP server, whose reads carry over and keep the
    /// check.
    pub fn one_call() -> Self {
        FreshnessTracker {
            one_call: true,
            ..FreshnessTracker::default()
        }
    }

    /// Records the current on-disk state of `abs` (a canonical path) as read. Call after a
    /// successful read and after every successful write. A path that cannot be stat'ed is
    /// forgotten instead.
    pub fn mark_fresh(&self, abs: &Path) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        match Fingerprint::of(abs) {
            Some(fp) => {
                seen.insert(abs.to_path_buf(), fp);
            }
            None => {
                seen.remove(abs);
            }
        }
    }

    /// Takes over every read `other` recorded, with the fingerprint each had when read (a
    /// read made on the side, counted once its result is used).
    pub fn adopt(&self, other: &FreshnessTracker) {
        let theirs = other.entries();
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.extend(theirs);
    }

    /// Forgets `abs` (e.g. after a deletion).
    pub fn forget(&self, abs: &Path) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.remove(abs);
    }

    /// Every file read so far with the fingerprint it had when read, sorted by path
    /// (the shell's drift probe re-stats them after a command).
    pub fn entries(&self) -> Vec<(PathBuf, Fingerprint)> {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<(PathBuf, Fingerprint)> =
            seen.iter().map(|(p, f)| (p.clone(), *f)).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// True when `abs` was read and has not changed since.
    pub fn is_fresh(&self, abs: &Path) -> bool {
        self.check(abs, "").is_ok()
    }

    /// Checks that the existing file at `abs` was read and is unchanged since.
    ///
    /// `rel` is the workspace-relative path used in the message. Errors: `NOT_READ` when
    /// the session never read the file; `STALE_READ` when its mtime or length differs from
    /// the read (or it can no longer be stat'ed).
    pub fn check(&self, abs: &Path, rel: &str) -> Result<(), Refusal> {
        if self.one_call {
            return Ok(());
        }
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(then) = seen.get(abs).copied() else {
            return Err(not_read(rel));
        };
        drop(seen);
        match Fingerprint::of(abs) {
            Some(now) if now == then => Ok(()),
            _ => Err(stale(rel)),
        }
    }
}

fn not_read(rel: &str) -> Refusal {
    Refusal::new(
        ErrorCode::NotRead,
        format!("\"{rel}\" exists and has not been read in this session."),
        format!(
            "Call read_file with path=\"{rel}\" first, then repeat this call with text copied \
             from what you read."
        ),
    )
    .with("path", rel)
}

fn stale(rel: &str) -> Refusal {
    Refusal::new(
        ErrorCode::StaleRead,
        format!("\"{rel}\" changed on disk since it was last read."),
        format!(
            "Call read_file with path=\"{rel}\" again and base the change on its current \
             content."
        ),
    )
    .with("path", rel)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn not_read_then_fresh_then_stale() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "one").unwrap();
        let t = FreshnessTracker::new();
        assert_eq!(t.check(&p, "a.txt").unwrap_err().code, ErrorCode::NotRead);
        t.mark_fresh(&p);
        assert!(t.check(&p, "a.txt").is_ok());
        std::fs::write(&p, "longer").unwrap();
        assert_eq!(t.check(&p, "a.txt").unwrap_err().code, ErrorCode::StaleRead);
    }
}
