//! The loop guard: stops a model that repeats itself without anything changing, or that
//! keeps failing.
//!
//! - A call identical to an earlier one (same tool, same canonical arguments) is a loop
//!   only when nothing changed in between. The guard keeps a change counter (an *epoch*)
//!   that moves on when a tool's result says it changed files, when a command (or a
//!   subagent) that may write left the workspace different (a stat fingerprint of the
//!   workspace, see [`workspace_fingerprint`]), when a background task was polled, and
//!   when a user message starts a task. Identical calls count only within one epoch: the
//!   third in a row with no change in between is blocked with an explanation, so
//!   re-running a test after an edit or re-reading an edited file always runs. Before it
//!   blocks, the guard looks at the workspace once more, so a change nobody announced
//!   (an editor, a background build) also lets the call through.
//! - Polling a background task (`task_shell_poll`) reads time-dependent state: it is
//!   never blocked, and it counts as a change.
//! - After 3 consecutive failed calls, the next tool result carries a warning.
//! - After 8 consecutive failures the turn ends with a clear message.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

use serde_json::Value;

/// Identical calls with no change in between allowed before the next one is blocked.
pub(crate) const MAX_IDENTICAL_CALLS: u32 = 2;
/// Consecutive failures after which results carry a warning.
pub(crate) const WARN_AFTER_FAILURES: u32 = 3;
/// Consecutive failures that end the turn.
pub(crate) const STOP_AFTER_FAILURES: u32 = 8;
/// Tools whose answer depends on time or on background state: never a loop.
const POLLING_TOOLS: &[&str] = &["task_shell_poll"];
/// Most directory entries the workspace fingerprint visits; a larger workspace has no
/// fingerprint, and the guard then takes every command as a possible change.
pub(crate) const MAX_FINGERPRINT_ENTRIES: usize = 20_000;

/// How often an identical call was seen, and in which epoch it was last seen.
#[derive(Debug, Clone, Copy)]
struct Seen {
    count: u32,
    epoch: u64,
}

/// Per-session loop-guard state.
#[derive(Debug, Default)]
pub(crate) struct LoopGuard {
    seen: HashMap<String, Seen>,
    /// Moves on with every change (see the module docs).
    epoch: u64,
    /// The workspace fingerprint last taken (`None`: not taken yet, or unavailable).
    fingerprint: Option<u64>,
    consecutive_failures: u32,
    /// The last answer of each polled background state (by the poll's arguments), hashed:
    /// a poll is a change only when its answer moved.
    polled: HashMap<String, u64>,
    /// What the running task did so far, for the message of a task that a limit ends.
    progress: Progress,
}

/// What a task did so far: tool calls, failed ones, and the files its edits changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Tool calls answered (run, refused or blocked).
    pub(crate) calls: u32,
    /// Of those, the ones that failed or were refused.
    pub(crate) failed: u32,
    /// Workspace-relative paths the task's edits changed, sorted.
    pub(crate) files: std::collections::BTreeSet<String>,
}

impl Progress {
    /// One sentence: "Done so far: N tool calls (F failed); files changed: a, b (and K more)."
    pub(crate) fn sentence(&self) -> String {
        const SHOWN: usize = 10;
        let mut out = format!(
            "Done so far: {} tool calls ({} failed)",
            self.calls, self.failed
        );
        if self.files.is_empty() {
            out.push_str("; no file changed by an edit tool.");
        } else {
            let names: Vec<&str> = self.files.iter().take(SHOWN).map(String::as_str).collect();
            out.push_str(&format!("; files changed: {}", names.join(", ")));
            if self.files.len() > SHOWN {
                out.push_str(&format!(" (and {} more)", self.files.len() - SHOWN));
            }
            out.push('.');
        }
        out
    }
}

/// What the guard says about a call about to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GuardVerdict {
    /// Run it.
    Proceed,
    /// Do not run it; tell the model why.
    Blocked(String),
}

impl LoopGuard {
    /// Records an attempt of `name` with `args` and says whether it may run. `workspace`
    /// is looked at only when the call would be blocked (see the module docs).
    pub(crate) fn check(&mut self, name: &str, args: &Value, workspace: &Path) -> GuardVerdict {
        if POLLING_TOOLS.contains(&name) {
            // Never refused; whether it changed anything is known from its answer
            // ([`LoopGuard::after_poll`]).
            return GuardVerdict::Proceed;
        }
        let key = format!("{name}\u{0}{}", canonical(args));
        let epoch = self.epoch;
        let seen = self
            .seen
            .entry(key.clone())
            .or_insert(Seen { count: 0, epoch });
        if seen.epoch != epoch {
            *seen = Seen { count: 0, epoch };
        }
        seen.count += 1;
        let count = seen.count;
        if count <= MAX_IDENTICAL_CALLS {
            return GuardVerdict::Proceed;
        }
        if self.workspace_changed(workspace) {
            self.changed();
            let epoch = self.epoch;
            self.seen.insert(key, Seen { count: 1, epoch });
            return GuardVerdict::Proceed;
        }
        GuardVerdict::Blocked(format!(
            "Blocked: this is call number {count} of `{name}` with identical arguments, and nothing changed \
             since the previous one (no file was edited, no command changed the workspace, no new message \
             arrived), so it would give the same result. Use what the earlier results said, change something \
             first, or try a different approach."
        ))
    }

    /// A polling call (`task_shell_poll`) answered `answer`: a change when the polled
    /// state moved since its previous poll (new output, an exit), so a model that alternates
    /// a poll of an unchanging task with an identical failing call is still stopped.
    pub(crate) fn after_poll(&mut self, name: &str, args: &Value, answer: &str) {
        if !POLLING_TOOLS.contains(&name) {
            return;
        }
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        answer.hash(&mut h);
        let now = h.finish();
        let key = format!("{name}\u{0}{}", canonical(args));
        if self.polled.insert(key, now) != Some(now) {
            self.changed();
        }
    }

    /// Something changed (a file was edited, a user message arrived, background state
    /// moved): identical calls count afresh.
    pub(crate) fn changed(&mut self) {
        self.epoch += 1;
    }

    /// An edit changed `paths` (workspace-relative): a change, and part of the task's progress.
    pub(crate) fn edited<'a>(&mut self, paths: impl IntoIterator<Item = &'a str>) {
        self.progress
            .files
            .extend(paths.into_iter().map(str::to_string));
        self.changed();
    }

    /// What the running task did so far.
    pub(crate) fn progress(&self) -> &Progress {
        &self.progress
    }

    /// A call that may have changed the workspace (a command, a subagent) ran: a change
    /// when the workspace's fingerprint moved (or cannot be taken).
    pub(crate) fn after_command(&mut self, workspace: &Path) {
        if self.workspace_changed(workspace) {
            self.changed();
        }
    }

    /// Takes the workspace fingerprint; true when it differs from the last one taken, or
    /// cannot be taken. The first one taken is the baseline (true: nothing says otherwise).
    fn workspace_changed(&mut self, workspace: &Path) -> bool {
        let now = workspace_fingerprint(workspace);
        let before = std::mem::replace(&mut self.fingerprint, now);
        now.is_none() || before != now
    }

    /// Takes the baseline fingerprint at a task's start (a user message is a change too).
    pub(crate) fn begin_task(&mut self, workspace: &Path) {
        self.progress = Progress::default();
        self.fingerprint = workspace_fingerprint(workspace);
        self.changed();
    }

    /// Records the outcome of a call that ran (or was blocked). Returns a
    /// warning to append to this result once failures pile up.
    pub(crate) fn record(&mut self, ok: bool) -> Option<String> {
        self.progress.calls += 1;
        if !ok {
            self.progress.failed += 1;
        }
        if ok {
            self.consecutive_failures = 0;
            return None;
        }
        self.consecutive_failures += 1;
        (self.consecutive_failures >= WARN_AFTER_FAILURES).then(|| {
            format!(
                "Warning: {} tool calls in a row have failed. Stop and re-read the last errors and hints; \
                 change approach instead of retrying the same thing.",
                self.consecutive_failures
            )
        })
    }

    /// True once the turn must end because of consecutive failures.
    pub(crate) fn must_stop(&self) -> bool {
        self.consecutive_failures >= STOP_AFTER_FAILURES
    }
}

/// A stat fingerprint of the workspace: a hash over the relative path, length and
/// modification time of every entry the ignore rules keep (`.gitignore`, `.ignore`,
/// `.git/info/exclude`; `.git/` itself is skipped), without following symlinks. `None`
/// when the workspace has more than [`MAX_FINGERPRINT_ENTRIES`] entries or cannot be read.
/// Only metadata is read, never a file's content.
pub(crate) fn workspace_fingerprint(workspace: &Path) -> Option<u64> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let walker = ignore::WalkBuilder::new(workspace)
        .hidden(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    let mut entries = Vec::new();
    for entry in walker {
        // An entry that cannot be read is left out; it cannot change a later fingerprint.
        let Ok(entry) = entry else { continue };
        if entries.len() == MAX_FINGERPRINT_ENTRIES {
            return None;
        }
        let meta = entry.metadata().ok();
        entries.push((
            entry.into_path(),
            meta.as_ref().map(std::fs::Metadata::len),
            meta.and_then(|m| m.modified().ok()),
        ));
    }
    entries.sort();
    entries.hash(&mut hasher);
    Some(hasher.finish())
}

/// Arguments with object keys sorted, so `{"a":1,"b":2}` equals `{"b":2,"a":1}`.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn workspace() -> (tempfile::TempDir, LoopGuard) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one").unwrap();
        let mut g = LoopGuard::default();
        g.begin_task(dir.path());
        (dir, g)
    }

    #[test]
    fn the_third_identical_call_with_no_change_is_blocked() {
        let (dir, mut g) = workspace();
        let ws = dir.path();
        assert_eq!(
            g.check("read_file", &json!({"path": "a", "max_lines": 5}), ws),
            GuardVerdict::Proceed
        );
        assert_eq!(
            g.check("read_file", &json!({"max_lines": 5, "path": "a"}), ws),
            GuardVerdict::Proceed
        );
        assert_eq!(
            g.check("read_file", &json!({"path": "b"}), ws),
            GuardVerdict::Proceed
        );
        assert!(matches!(
            g.check("read_file", &json!({"path": "a", "max_lines": 5}), ws),
            GuardVerdict::Blocked(_)
        ));
    }

    #[test]
    fn a_change_in_between_lets_identical_calls_run() {
        let (dir, mut g) = workspace();
        let ws = dir.path();
        let test = json!({"command": "cargo test"});
        for _ in 0..30 {
            assert_eq!(g.check("exec_shell", &test, ws), GuardVerdict::Proceed);
            // An edit whose result names its changes.
            g.changed();
        }
        // A command that changed the workspace counts as a change too.
        for i in 0..5 {
            assert_eq!(g.check("exec_shell", &test, ws), GuardVerdict::Proceed);
            std::fs::write(ws.join("a.txt"), format!("run {i} and more")).unwrap();
            g.after_command(ws);
        }
        // Two more with nothing in between run; the third is blocked.
        assert_eq!(g.check("exec_shell", &test, ws), GuardVerdict::Proceed);
        g.after_command(ws);
        assert_eq!(g.check("exec_shell", &test, ws), GuardVerdict::Proceed);
        g.after_command(ws);
        assert!(matches!(
            g.check("exec_shell", &test, ws),
            GuardVerdict::Blocked(_)
        ));
    }

    #[test]
    fn an_unannounced_change_is_seen_before_blocking() {
        let (dir, mut g) = workspace();
        let ws = dir.path();
        let read = json!({"path": "a.txt"});
        assert_eq!(g.check("read_file", &read, ws), GuardVerdict::Proceed);
        assert_eq!(g.check("read_file", &read, ws), GuardVerdict::Proceed);
        // Written by someone else (an editor, a background build): not announced.
        std::fs::write(ws.join("b.txt"), "new").unwrap();
        assert_eq!(g.check("read_file", &read, ws), GuardVerdict::Proceed);
        assert_eq!(g.check("read_file", &read, ws), GuardVerdict::Proceed);
        assert!(matches!(
            g.check("read_file", &read, ws),
            GuardVerdict::Blocked(_)
        ));
    }

    #[test]
    fn polling_is_never_a_loop() {
        let (dir, mut g) = workspace();
        let ws = dir.path();
        let poll = json!({"id": "task-1"});
        for _ in 0..10 {
            assert_eq!(g.check("task_shell_poll", &poll, ws), GuardVerdict::Proceed);
        }
    }

    #[test]
    fn a_poll_whose_answer_did_not_move_is_no_change() {
        let (dir, mut g) = workspace();
        let ws = dir.path();
        let poll = json!({"id": "task-1"});
        let failing = json!({"command": "false"});
        // A poll of a task whose output moves lets the same call run again.
        for i in 0..5 {
            assert_eq!(g.check("exec_shell", &failing, ws), GuardVerdict::Proceed);
            g.after_poll("task_shell_poll", &poll, &format!("line {i}"));
        }
        // Polls answering the same every time change nothing: the third identical call
        // with nothing else in between is blocked.
        let mut blocked = false;
        for _ in 0..4 {
            g.after_poll("task_shell_poll", &poll, "still running");
            if matches!(
                g.check("exec_shell", &failing, ws),
                GuardVerdict::Blocked(_)
            ) {
                blocked = true;
                break;
            }
        }
        assert!(
            blocked,
            "alternating an unchanging poll with a failing call was never stopped"
        );
    }

    #[test]
    fn ignored_files_do_not_move_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        let before = workspace_fingerprint(dir.path()).unwrap();
        std::fs::write(dir.path().join("target").join("out"), "build").unwrap();
        assert_eq!(workspace_fingerprint(dir.path()), Some(before));
        std::fs::write(dir.path().join("src.rs"), "fn main() {}").unwrap();
        assert_ne!(workspace_fingerprint(dir.path()), Some(before));
    }

    #[test]
    fn failures_warn_at_three_and_stop_at_eight() {
        let mut g = LoopGuard::default();
        assert!(g.record(false).is_none());
        assert!(g.record(false).is_none());
        assert!(g.record(false).is_some());
        assert!(g.record(true).is_none());
        for _ in 0..7 {
            g.record(false);
        }
        assert!(!g.must_stop());
        g.record(false);
        assert!(g.must_stop());
    }
}
