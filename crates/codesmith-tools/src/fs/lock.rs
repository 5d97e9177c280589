//! A process-wide lock per canonical path.
//!
//! Read → match → build → write of one file happens under its lock, so two concurrent
//! edits of different snippets in one file both survive. The lock is
//! process-local: several sessions in one process are covered, two processes are not.
//! A panic while holding a lock does not poison it for later callers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

type Table = Mutex<HashMap<PathBuf, Weak<Mutex<()>>>>;

/// Entries in the table before dead ones are swept.
const SWEEP_AT: usize = 1024;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// A handle on the lock of one path. Hold the guard from [`PathLock::lock`] for the whole
/// read-modify-write.
#[derive(Debug, Clone)]
pub struct PathLock {
    path: PathBuf,
    inner: Arc<Mutex<()>>,
}

impl PathLock {
    /// Blocks until the lock is free; a poisoned lock is recovered, not propagated.
    pub fn lock(&self) -> MutexGuard<'_, ()> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The path this lock guards.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The lock for `path` (pass the canonical path, e.g. `ResolvedPath::abs`, so two spellings
/// of one file share a lock).
pub fn path_lock(path: &Path) -> PathLock {
    let mut map = table().lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(inner) = map.get(path).and_then(Weak::upgrade) {
        return PathLock {
            path: path.to_path_buf(),
            inner,
        };
    }
    if map.len() >= SWEEP_AT {
        map.retain(|_, w| w.strong_count() > 0);
    }
    let inner = Arc::new(Mutex::new(()));
    map.insert(path.to_path_buf(), Arc::downgrade(&inner));
    PathLock {
        path: path.to_path_buf(),
        inner,
    }
}

/// Locks for several paths, sorted and deduplicated: lock them in the returned order so two
/// multi-file writers (e.g. `apply_patch`) cannot deadlock.
pub fn path_locks<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Vec<PathLock> {
    let mut v: Vec<&Path> = paths.into_iter().collect();
    v.sort();
    v.dedup();
    v.into_iter().map(path_lock).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn same_path_same_lock_and_poison_tolerated() {
        let a = path_lock(Path::new("/x/poison"));
        let b = path_lock(Path::new("/x/poison"));
        assert!(Arc::ptr_eq(&a.inner, &b.inner));
        let a2 = a.clone();
        let _ = std::thread::spawn(move || {
            let _g = a2.lock();
            panic!("poison it");
        })
        .join();
        drop(b.lock());
        let locks = path_locks([Path::new("/b"), Path::new("/a"), Path::new("/b")]);
        assert_eq!(locks.len(), 2);
        assert_eq!(locks[0].path(), Path::new("/a"));
    }
}
