//! The in-memory approvals of one session.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::ApprovalKey;

#[derive(Debug, Default)]
struct Inner {
    approved: HashSet<ApprovalKey>,
    denied: HashSet<ApprovalKey>,
    /// Persistent grants this session already said it used (each is named once).
    grants_shown: HashSet<ApprovalKey>,
}

/// The answers given in one session, by [`ApprovalKey`]. Approvals use the loose key (a
/// shell command's prefixes, so `cargo build` covers `cargo build --release`); denials the
/// exact input (so denying `git push --force` does not block `git push`). Poison-tolerant:
/// the data are plain sets no panicking holder can leave half-changed, and losing them
/// would ask again for ever.
#[derive(Debug, Default)]
pub(crate) struct SessionApprovals {
    inner: Mutex<Inner>,
}

impl SessionApprovals {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers an approval covering `key` for the rest of the session.
    pub(crate) fn approve(&self, key: &ApprovalKey) {
        self.lock().approved.insert(key.clone());
    }

    /// Remembers a denial of `key` (an exact-input key).
    pub(crate) fn deny(&self, key: &ApprovalKey) {
        self.lock().denied.insert(key.clone());
    }

    /// True when `key` was approved in this session.
    pub(crate) fn is_approved(&self, key: &ApprovalKey) -> bool {
        self.lock().approved.contains(key)
    }

    /// True when `key` was denied in this session.
    pub(crate) fn is_denied(&self, key: &ApprovalKey) -> bool {
        self.lock().denied.contains(key)
    }

    /// True the first time the persistent grant `key` is reused in this session (its
    /// notice is then shown), false after.
    pub(crate) fn first_use_of_grant(&self, key: &ApprovalKey) -> bool {
        self.lock().grants_shown.insert(key.clone())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn approvals_and_denials_are_kept_apart() {
        let cache = SessionApprovals::default();
        let build = ApprovalKey::Shell {
            prefixes: vec!["cargo build".into()],
        };
        cache.approve(&build);
        assert!(cache.is_approved(&build));
        assert!(!cache.is_denied(&build));
        let push = ApprovalKey::ShellExact {
            command: "git push --force".into(),
        };
        cache.deny(&push);
        assert!(cache.is_denied(&push));
        assert!(!cache.is_approved(&push));
        assert!(cache.first_use_of_grant(&build));
        assert!(!cache.first_use_of_grant(&build));
    }

    #[test]
    fn survives_a_poisoned_lock() {
        let cache = std::sync::Arc::new(SessionApprovals::default());
        let x = ApprovalKey::Tool { tool: "x".into() };
        cache.approve(&x);
        let c = cache.clone();
        let _ = std::thread::spawn(move || {
            let _guard = c.inner.lock().unwrap();
            panic!("poison the lock");
        })
        .join();
        assert!(cache.inner.is_poisoned());
        assert!(cache.is_approved(&x));
        let y = ApprovalKey::Tool { tool: "y".into() };
        cache.deny(&y);
        assert!(cache.is_denied(&y));
    }
}
