//! The in-memory approvals of one session.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

#[cfg(test)]
use codesmith_policy::{approval_fingerprint, denial_fingerprint};

#[derive(Debug, Default)]
struct Inner {
    approved: HashSet<String>,
    denied: HashSet<String>,
}

/// Session approvals keyed by fingerprint strings. Approvals use prefix-level keys for
/// shell commands (so `cargo build` covers `cargo build --release`); denials use the exact
/// input only (so denying `git push --force` does not block `git push`). Poison-tolerant.
#[derive(Debug, Default)]
pub struct SessionApprovals {
    inner: Mutex<Inner>,
}

impl SessionApprovals {
    /// An empty cache.
    pub fn new() -> Self {
        SessionApprovals::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers an approval keyed by `fingerprint` for the rest of the session.
    pub fn approve(&self, fingerprint: &str) {
        self.lock().approved.insert(fingerprint.to_string());
    }

    /// Remembers a denial keyed by `fingerprint` (an exact-input key).
    pub fn deny(&self, fingerprint: &str) {
        self.lock().denied.insert(fingerprint.to_string());
    }

    /// True when `fingerprint` was approved in this session.
    pub fn is_approved(&self, fingerprint: &str) -> bool {
        self.lock().approved.contains(fingerprint)
    }

    /// True when `fingerprint` was denied in this session.
    pub fn is_denied(&self, fingerprint: &str) -> bool {
        self.lock().denied.contains(fingerprint)
    }

    /// Records the user's "yes for this session" to a shell command.
    #[cfg(test)]
    pub fn approve_shell(&self, command: &str, workspace: &str) {
        self.approve(&approval_fingerprint(command, workspace));
    }

    /// Records the user's "no" to a shell command (this exact text only).
    #[cfg(test)]
    pub fn deny_shell(&self, command: &str) {
        self.deny(&denial_fingerprint(command));
    }

    /// What this session already answered for a shell command: `Some(false)` when this
    /// exact command was denied, `Some(true)` when its prefixes were approved, `None` when
    /// the user must be asked. A denial wins over an approval.
    #[cfg(test)]
    pub fn shell_answer(&self, command: &str, workspace: &str) -> Option<bool> {
        if self.is_denied(&denial_fingerprint(command)) {
            Some(false)
        } else if self.is_approved(&approval_fingerprint(command, workspace)) {
            Some(true)
        } else {
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn approval_covers_prefix_denial_is_exact() {
        let cache = SessionApprovals::new();
        cache.approve_shell("cargo build", "/ws");
        assert_eq!(
            cache.shell_answer("cargo build --release", "/ws"),
            Some(true)
        );
        assert_eq!(cache.shell_answer("cargo build && curl x", "/ws"), None);

        cache.deny_shell("git push --force");
        assert_eq!(cache.shell_answer("git push --force", "/ws"), Some(false));
        assert_eq!(cache.shell_answer("git push", "/ws"), None);
    }

    #[test]
    fn survives_a_poisoned_lock() {
        let cache = std::sync::Arc::new(SessionApprovals::new());
        cache.approve("x");
        let c = cache.clone();
        let _ = std::thread::spawn(move || {
            let _guard = c.inner.lock().unwrap();
            panic!("poison the lock");
        })
        .join();
        assert!(cache.inner.is_poisoned());
        assert!(cache.is_approved("x"));
        cache.deny("y");
        assert!(cache.is_denied("y"));
    }
}
