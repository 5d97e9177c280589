//! The in-memory approvals of one session.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::Grant;

#[derive(Debug, Default)]
struct Inner {
    grants: Vec<Grant>,
    approved_exact: HashSet<String>,
    denied_exact: HashSet<String>,
}

/// Session approvals: approvals keyed by [`Grant`] (prefix-level for shell commands) or by
/// exact input; denials keyed by exact input only, so denying `git push --force` does not
/// block `git push`. Poison-tolerant.
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

    /// Remembers an approval of `grant` for the rest of the session.
    pub fn approve(&self, grant: Grant) {
        let mut inner = self.lock();
        if !inner.grants.contains(&grant) {
            inner.grants.push(grant);
        }
    }

    /// Remembers an approval of exactly this input (`exact` from
    /// [`super::exact_fingerprint`]); used where no grant applies.
    pub fn approve_exact(&self, exact: &str) {
        self.lock().approved_exact.insert(exact.to_string());
    }

    /// Remembers a denial of exactly this input.
    pub fn deny(&self, exact: &str) {
        let mut inner = self.lock();
        inner.approved_exact.remove(exact);
        inner.denied_exact.insert(exact.to_string());
    }

    /// True when this exact input was denied in this session.
    pub fn is_denied(&self, exact: &str) -> bool {
        self.lock().denied_exact.contains(exact)
    }

    /// True when the request (its grant, if it has one, and its exact fingerprint) was
    /// approved in this session and not denied since.
    pub fn is_approved(&self, grant: Option<&Grant>, exact: &str) -> bool {
        let inner = self.lock();
        if inner.denied_exact.contains(exact) {
            return false;
        }
        inner.approved_exact.contains(exact) || grant.is_some_and(|g| g.covered_by(&inner.grants))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::shell_request;
    use super::*;

    #[test]
    fn approval_covers_prefix_denial_is_exact() {
        let cache = SessionApprovals::new();
        let approved = shell_request("cargo build", "/ws");
        cache.approve(approved.grant.clone().unwrap());
        let release = shell_request("cargo build --release", "/ws");
        assert!(cache.is_approved(release.grant.as_ref(), &release.exact));

        let push_force = shell_request("git push --force", "/ws");
        cache.deny(&push_force.exact);
        let push = shell_request("git push", "/ws");
        assert!(cache.is_denied(&push_force.exact));
        assert!(!cache.is_denied(&push.exact));
    }

    #[test]
    fn survives_a_poisoned_lock() {
        let cache = std::sync::Arc::new(SessionApprovals::new());
        cache.approve_exact("x");
        let c = cache.clone();
        let _ = std::thread::spawn(move || {
            let _guard = c.inner.lock().unwrap();
            panic!("poison the lock");
        })
        .join();
        assert!(cache.inner.is_poisoned());
        assert!(cache.is_approved(None, "x"));
        cache.deny("y");
        assert!(cache.is_denied("y"));
    }
}
