//! The table of processes a session keeps across calls (background tasks, interactive
//! sessions): ids `PREFIX-N`, one lock per entry so a call waiting on one does not block
//! the others, and a bounded memory of finished entries (the oldest finished is forgotten
//! first; running ones are never forgotten).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// An entry of a [`Table`]: whether its process still runs.
pub(crate) trait Entry {
    /// True while the entry's command has not exited nor been ended.
    fn is_running(&self) -> bool;
}

/// One entry, shared with the call working on it.
pub(crate) type Shared<T> = Arc<tokio::sync::Mutex<T>>;

/// Processes named `PREFIX-N`, at most `remember` kept once finished.
#[derive(Debug)]
pub(crate) struct Table<T> {
    prefix: &'static str,
    remember: usize,
    next: AtomicU64,
    entries: Mutex<BTreeMap<u64, Shared<T>>>,
}

impl<T: Entry> Table<T> {
    /// An empty table whose ids are `prefix` and a number (`"task-"` gives `task-1`).
    pub(crate) fn new(prefix: &'static str, remember: usize) -> Self {
        Table {
            prefix,
            remember,
            next: AtomicU64::new(0),
            entries: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Shared<T>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry named `id`, if remembered.
    pub(crate) fn get(&self, id: &str) -> Option<Shared<T>> {
        let n: u64 = id.strip_prefix(self.prefix)?.parse().ok()?;
        self.lock().get(&n).cloned()
    }

    /// How many entries run (one busy in a call counts as running).
    pub(crate) fn running_count(&self) -> usize {
        self.lock()
            .values()
            .filter(|e| e.try_lock().map_or(true, |e| e.is_running()))
            .count()
    }

    /// Adds `entry` and returns its id, forgetting the oldest finished entries past the
    /// memory bound.
    pub(crate) fn insert(&self, entry: T) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut entries = self.lock();
        while entries.len() >= self.remember {
            let finished = entries
                .iter()
                .find(|(_, e)| e.try_lock().is_ok_and(|e| !e.is_running()))
                .map(|(k, _)| *k);
            match finished {
                Some(k) => entries.remove(&k),
                None => break,
            };
        }
        entries.insert(n, Arc::new(tokio::sync::Mutex::new(entry)));
        format!("{}{n}", self.prefix)
    }

    /// Every entry with its id, oldest first.
    pub(crate) fn entries(&self) -> Vec<(String, Shared<T>)> {
        self.lock()
            .iter()
            .map(|(n, e)| (format!("{}{n}", self.prefix), Arc::clone(e)))
            .collect()
    }

    /// Forgets every entry and hands them back.
    pub(crate) fn take_all(&self) -> Vec<Shared<T>> {
        std::mem::take(&mut *self.lock()).into_values().collect()
    }
}
