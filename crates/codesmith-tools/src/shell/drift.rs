//! The post-command drift probe (after a shell command
//! succeeds, the files the session has read are re-stat'ed, and a changed or deleted file
//! gets a re-read reminder in the tool result, at most 5 paths).
//!
//! The same drift is reported once; it takes a further change (or a re-read followed by a
//! change) to earn the next reminder.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::fs::freshness::Fingerprint;

/// Most drifted paths reported in one result.
pub const MAX_DRIFT_REPORTS: usize = 5;

/// One drifted file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// Workspace-relative path (or absolute when outside the workspace).
    pub path: String,
    /// True when the file no longer exists.
    pub deleted: bool,
}

/// Remembers which drifts were already reported, keyed by path, as the fingerprint the file
/// had when reported (`None`: reported deleted).
#[derive(Debug, Default)]
pub struct DriftProbe {
    reported: Mutex<HashMap<PathBuf, Option<Fingerprint>>>,
}

impl DriftProbe {
    /// Compares each `(path, fingerprint at read)` with the disk now and returns the new
    /// drifts (at most [`MAX_DRIFT_REPORTS`], sorted by path).
    pub fn probe(&self, workspace: &Path, reads: &[(PathBuf, Fingerprint)]) -> Vec<Drift> {
        let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
        let mut sorted: Vec<&(PathBuf, Fingerprint)> = reads.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::new();
        for (path, at_read) in sorted {
            let now = Fingerprint::of(path);
            if now == Some(*at_read) {
                reported.remove(path);
                continue;
            }
            if reported.get(path) == Some(&now) {
                continue;
            }
            if out.len() == MAX_DRIFT_REPORTS {
                break;
            }
            reported.insert(path.clone(), now);
            let rel = path.strip_prefix(workspace).unwrap_or(path);
            out.push(Drift {
                path: rel.to_string_lossy().into_owned(),
                deleted: now.is_none(),
            });
        }
        out
    }
}

/// The reminder lines for `drifts`, one per file.
pub fn reminder_text(drifts: &[Drift]) -> String {
    drifts
        .iter()
        .map(|d| {
            if d.deleted {
                format!(
                    "[Reminder: {} was deleted since you read it; do not rely on its old content.]\n",
                    d.path
                )
            } else {
                format!(
                    "[Reminder: {} changed on disk since you read it; read it again before editing.]\n",
                    d.path
                )
            }
        })
        .collect()
}

/// The files the session has read, with the fingerprints they had when read.
pub fn tracked_reads(ctx: &crate::ToolContext) -> Vec<(PathBuf, Fingerprint)> {
    ctx.freshness.entries()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn one_reminder_per_drift_and_deletions_count() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let a = root.join("a.txt");
        let b = root.join("b.txt");
        std::fs::write(&a, "one").unwrap();
        std::fs::write(&b, "two").unwrap();
        let reads = vec![
            (a.clone(), Fingerprint::of(&a).unwrap()),
            (b.clone(), Fingerprint::of(&b).unwrap()),
        ];
        let probe = DriftProbe::default();
        assert!(probe.probe(&root, &reads).is_empty());
        std::fs::write(&a, "one, longer").unwrap();
        std::fs::remove_file(&b).unwrap();
        let drifts = probe.probe(&root, &reads);
        assert_eq!(
            drifts,
            vec![
                Drift {
                    path: "a.txt".into(),
                    deleted: false
                },
                Drift {
                    path: "b.txt".into(),
                    deleted: true
                }
            ]
        );
        assert!(reminder_text(&drifts).contains("a.txt changed"));
        // Same drift: no second reminder.
        assert!(probe.probe(&root, &reads).is_empty());
        // A further change earns the next one.
        std::fs::write(&a, "one, longer still").unwrap();
        assert_eq!(probe.probe(&root, &reads).len(), 1);
    }

    #[test]
    fn at_most_five_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut reads = Vec::new();
        for i in 0..8 {
            let p = root.join(format!("f{i}"));
            std::fs::write(&p, "x").unwrap();
            reads.push((p.clone(), Fingerprint::of(&p).unwrap()));
            std::fs::write(&p, "xy").unwrap();
        }
        let probe = DriftProbe::default();
        assert_eq!(probe.probe(&root, &reads).len(), MAX_DRIFT_REPORTS);
        assert_eq!(probe.probe(&root, &reads).len(), 3);
    }
}
