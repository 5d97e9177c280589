//! Where what the MCP servers report goes: every log message to the log file at once,
//! and what the user sees (progress, tool-list changes, log messages at `warning` and
//! above) to a queue the front end reads.
//!
//! The queue exists before any server starts, so nothing a server sends during its
//! start-up is lost, and it holds events until a front end takes the receiver. It is
//! bounded ([`EVENT_QUEUE`] events) without letting low-priority chatter evict what the
//! user must see:
//! - `debug`, `info` and `notice` log messages never enter it (the log file has them);
//! - a progress update replaces a queued one of the same call (only the latest matters),
//!   and when the queue is full the oldest queued progress update makes room;
//! - tool-list changes are always queued (at most one listing runs per server, so they
//!   cannot flood);
//! - a warning that finds the queue full of warnings is counted, not queued: it is in
//!   the log file, and the front end receives one notice per server saying how many
//!   were not shown.
//!
//! The log file is `$CODESMITH_HOME/logs/mcp.log` (directory 0700, file 0600), one line
//! per message: `SECONDS LEVEL SERVER: TEXT`, secrets scrubbed, every control character
//! (escape sequences, carriage returns, newlines) shown as its escape so the file is
//! safe to `tail -f` and one message is one line. When it would grow past
//! [`LOG_CAP`] bytes it is renamed to `mcp.log.1` (replacing the previous one) and a new
//! one is started: at most twice the cap on disk.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::McpEvent;

/// Events queued for the front end at most (see the module documentation for what
/// gives way when it is full).
pub const EVENT_QUEUE: usize = 1024;

/// Size in bytes at which `logs/mcp.log` is rotated to `logs/mcp.log.1` (4 MiB).
pub const LOG_CAP: u64 = 4 * 1024 * 1024;

fn guard<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The MCP log file, shared by every server of a session.
#[derive(Debug)]
pub struct McpLog {
    path: PathBuf,
    cap: u64,
    /// The open file and its size, once opened.
    file: Mutex<Option<(std::fs::File, u64)>>,
}

impl McpLog {
    /// The log under the CodeSmith home `home` (`logs/mcp.log`), rotated at [`LOG_CAP`].
    pub fn new(home: &Path) -> McpLog {
        McpLog::with_cap(home.join("logs").join("mcp.log"), LOG_CAP)
    }

    /// A log at `path` rotated at `cap` bytes.
    pub fn with_cap(path: PathBuf, cap: u64) -> McpLog {
        McpLog {
            path,
            cap,
            file: Mutex::new(None),
        }
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One line for `server`'s message `text` at `level` (see the module documentation);
    /// a failure to write costs nothing.
    pub fn append(&self, server: &str, level: &str, text: &str) {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let line = format!(
            "{secs} {} {}: {}\n",
            one_line(level),
            one_line(server),
            one_line(&codesmith_policy::scrub_secrets(text))
        );
        let mut file = guard(&self.file);
        if let Some((_, size)) = file.as_ref()
            && *size + line.len() as u64 > self.cap
            && *size > 0
        {
            *file = None;
            let _ = std::fs::rename(&self.path, self.path.with_extension("log.1"));
        }
        if file.is_none() {
            *file = self.open();
        }
        if let Some((f, size)) = file.as_mut()
            && f.write_all(line.as_bytes()).is_ok()
        {
            *size += line.len() as u64;
        }
    }

    fn open(&self) -> Option<(std::fs::File, u64)> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)
            .ok()?;
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        Some((f, size))
    }
}

/// `text` on one line with every control character shown as its escape
/// ([`codesmith_policy::visible_controls`]; newlines as `\n`).
fn one_line(text: &str) -> String {
    codesmith_policy::visible_controls(text)
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

#[derive(Debug, Default)]
struct State {
    items: VecDeque<McpEvent>,
    /// Per server: warnings and above not queued because the queue was full.
    unshown: BTreeMap<String, u64>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    ready: tokio::sync::Notify,
    senders: AtomicUsize,
}

/// The sending side, one clone per server: log messages go to the log file, what the
/// user sees to the queue.
#[derive(Debug)]
pub struct EventSender {
    shared: Arc<Shared>,
    log: Arc<McpLog>,
}

impl Clone for EventSender {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::SeqCst);
        EventSender {
            shared: self.shared.clone(),
            log: self.log.clone(),
        }
    }
}

impl Drop for EventSender {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.shared.ready.notify_one();
        }
    }
}

/// The receiving side, for one front end.
#[derive(Debug)]
pub struct EventReceiver {
    shared: Arc<Shared>,
}

/// A queue whose log messages go to `log`.
pub fn channel(log: McpLog) -> (EventSender, EventReceiver) {
    let shared = Arc::new(Shared::default());
    shared.senders.store(1, Ordering::SeqCst);
    (
        EventSender {
            shared: shared.clone(),
            log: Arc::new(log),
        },
        EventReceiver { shared },
    )
}

fn same_call(a: &McpEvent, b: &McpEvent) -> bool {
    matches!(
        (a, b),
        (
            McpEvent::Progress { server: s1, tool: t1, .. },
            McpEvent::Progress { server: s2, tool: t2, .. },
        ) if s1 == s2 && t1 == t2
    )
}

/// Whether `a` and `b` are changes of the same list (tools or prompts) of one server.
fn same_list(a: &McpEvent, b: &McpEvent) -> bool {
    match (a, b) {
        (McpEvent::ToolsChanged { server: s1, .. }, McpEvent::ToolsChanged { server: s2, .. })
        | (
            McpEvent::PromptsChanged { server: s1, .. },
            McpEvent::PromptsChanged { server: s2, .. },
        ) => s1 == s2,
        _ => false,
    }
}

/// Folds the later change `next` into `queued` (the same list of the same server): a
/// name added and then removed (or removed and then added again) cancels out.
fn merge_change(queued: &mut McpEvent, next: McpEvent) {
    let (
        McpEvent::ToolsChanged { added, removed, .. }
        | McpEvent::PromptsChanged { added, removed, .. },
        McpEvent::ToolsChanged {
            added: more_added,
            removed: more_removed,
            ..
        }
        | McpEvent::PromptsChanged {
            added: more_added,
            removed: more_removed,
            ..
        },
    ) = (queued, next)
    else {
        return;
    };
    for name in more_removed {
        match added.iter().position(|a| *a == name) {
            Some(i) => {
                added.remove(i);
            }
            None if !removed.contains(&name) => removed.push(name),
            None => {}
        }
    }
    for name in more_added {
        match removed.iter().position(|r| *r == name) {
            Some(i) => {
                removed.remove(i);
            }
            None if !added.contains(&name) => added.push(name),
            None => {}
        }
    }
}

impl EventSender {
    /// Hands `event` on: a log message to the log file, then what the user sees to the
    /// queue, as the module documentation describes. Never blocks on the front end.
    pub fn send(&self, event: McpEvent) {
        if let McpEvent::Log {
            server,
            level,
            text,
        } = &event
        {
            self.log.append(server, level, text);
        }
        if !event.shown_to_user() {
            return;
        }
        let mut state = guard(&self.shared.state);
        if matches!(event, McpEvent::Progress { .. })
            && let Some(queued) = state.items.iter_mut().find(|q| same_call(q, &event))
        {
            *queued = event;
            return;
        }
        // A list change of a server whose previous change of the same list is still
        // queued is merged into it: one notice per server and list however fast the
        // server changes it, and the queue stays bounded.
        if let Some(queued) = state.items.iter_mut().find(|q| same_list(q, &event)) {
            merge_change(queued, event);
            return;
        }
        if state.items.len() >= EVENT_QUEUE {
            let oldest_progress = state
                .items
                .iter()
                .position(|q| matches!(q, McpEvent::Progress { .. }));
            match (oldest_progress, &event) {
                (Some(i), _) => {
                    state.items.remove(i);
                }
                (None, McpEvent::Log { server, .. }) => {
                    *state.unshown.entry(server.clone()).or_default() += 1;
                    return;
                }
                // Progress with no progress queued is dropped for a newer one later;
                // tool- and prompt-list changes are always kept.
                (None, McpEvent::Progress { .. }) => return,
                (None, McpEvent::ToolsChanged { .. } | McpEvent::PromptsChanged { .. }) => {}
            }
        }
        state.items.push_back(event);
        drop(state);
        self.shared.ready.notify_one();
    }
}

impl EventReceiver {
    /// The next event; waits while none is queued. `None` once every sender is gone and
    /// the queue is empty.
    pub async fn recv(&mut self) -> Option<McpEvent> {
        loop {
            {
                let mut state = guard(&self.shared.state);
                if let Some((server, n)) = state.unshown.pop_first() {
                    return Some(McpEvent::Log {
                        server,
                        level: "warning".into(),
                        text: format!(
                            "{n} more log messages at warning and above were not shown (too \
                             many at once); they are in logs/mcp.log"
                        ),
                    });
                }
                if let Some(event) = state.items.pop_front() {
                    return Some(event);
                }
                if self.shared.senders.load(Ordering::SeqCst) == 0 {
                    return None;
                }
            }
            self.shared.ready.notified().await;
        }
    }

    /// The next event if one is queued, without waiting.
    pub fn try_recv(&mut self) -> Option<McpEvent> {
        let mut state = guard(&self.shared.state);
        state.items.pop_front()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn log_event(level: &str, text: &str) -> McpEvent {
        McpEvent::Log {
            server: "s".into(),
            level: level.into(),
            text: text.into(),
        }
    }

    fn progress(tool: &str, n: f64) -> McpEvent {
        McpEvent::Progress {
            server: "s".into(),
            tool: tool.into(),
            progress: n,
            total: None,
            message: None,
        }
    }

    #[tokio::test]
    async fn list_changes_queued_for_one_server_merge_into_one() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut rx) = channel(McpLog::new(dir.path()));
        let change = |added: &[&str], removed: &[&str]| McpEvent::PromptsChanged {
            server: "s".into(),
            added: added.iter().map(|a| a.to_string()).collect(),
            removed: removed.iter().map(|r| r.to_string()).collect(),
        };
        for _ in 0..3000 {
            tx.send(change(&["/a", "/b"], &["/c"]));
            tx.send(change(&["/c"], &["/a", "/b"]));
        }
        tx.send(change(&["/d"], &[]));
        // Added then removed cancels out; one event is left of 6,001.
        assert_eq!(rx.recv().await, Some(change(&["/d"], &[])));
        assert_eq!(rx.try_recv(), None);
    }

    #[tokio::test]
    async fn a_debug_flood_never_evicts_a_warning_and_everything_is_logged() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut rx) = channel(McpLog::new(dir.path()));
        for i in 0..20_000 {
            tx.send(log_event("debug", &format!("chatter {i}")));
        }
        tx.send(log_event("warning", "disk almost full"));
        tx.send(McpEvent::ToolsChanged {
            server: "s".into(),
            added: vec!["mcp__s__new".into()],
            removed: vec![],
        });
        assert_eq!(
            rx.recv().await,
            Some(log_event("warning", "disk almost full"))
        );
        assert!(matches!(
            rx.recv().await,
            Some(McpEvent::ToolsChanged { .. })
        ));
        assert_eq!(rx.try_recv(), None);
        let text = std::fs::read_to_string(dir.path().join("logs/mcp.log")).unwrap();
        assert_eq!(text.lines().count(), 20_001);
        assert!(text.contains("debug s: chatter 19999\n"));
        assert!(text.ends_with("warning s: disk almost full\n"));
        drop(tx);
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn progress_is_coalesced_and_gives_way_to_warnings_when_full() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut rx) = channel(McpLog::new(dir.path()));
        for i in 0..5_000 {
            tx.send(progress("mcp__s__a", f64::from(i)));
        }
        // One progress update per call is queued: the latest.
        assert_eq!(rx.try_recv(), Some(progress("mcp__s__a", 4_999.0)));
        assert_eq!(rx.try_recv(), None);
        // A full queue of progress of distinct calls: a warning still gets in.
        for i in 0..EVENT_QUEUE {
            tx.send(progress(&format!("mcp__s__t{i}"), 1.0));
        }
        tx.send(log_event("error", "it broke"));
        let mut all = Vec::new();
        while let Some(e) = rx.try_recv() {
            all.push(e);
        }
        assert_eq!(all.len(), EVENT_QUEUE);
        assert_eq!(all.last(), Some(&log_event("error", "it broke")));
        // A queue full of warnings: the rest are counted and said, and all are logged.
        for i in 0..EVENT_QUEUE + 7 {
            tx.send(log_event("warning", &format!("w{i}")));
        }
        let first = rx.recv().await.unwrap();
        assert!(
            first.describe().contains("7 more log messages"),
            "{}",
            first.describe()
        );
        let text = std::fs::read_to_string(dir.path().join("logs/mcp.log")).unwrap();
        assert!(text.contains(&format!("warning s: w{}\n", EVENT_QUEUE + 6)));
    }

    #[test]
    fn the_log_escapes_every_control_and_rotates_at_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/mcp.log");
        let log = McpLog::with_cap(path.clone(), 1_000);
        log.append(
            "evil",
            "error",
            "a\x1b]0;PWNED\x07\x1b[2J\rforged line\nsecond\u{202e}",
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "{text:?}");
        assert!(!text.trim_end().chars().any(char::is_control), "{text:?}");
        assert!(
            text.contains(r"a\u{1b}]0;PWNED\u{7}\u{1b}[2J\rforged line\nsecond\u{202e}"),
            "{text:?}"
        );
        for i in 0..100 {
            log.append("s", "debug", &format!("line {i:03} {}", "x".repeat(40)));
        }
        let current = std::fs::metadata(&path).unwrap().len();
        let rotated = std::fs::read_to_string(path.with_extension("log.1")).unwrap();
        assert!(current <= 1_000, "{current}");
        assert!(rotated.len() <= 1_000, "{}", rotated.len());
        let current = std::fs::read_to_string(&path).unwrap();
        assert!(current.contains("line 099"), "{current}");
        assert!(!rotated.contains("line 099"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
