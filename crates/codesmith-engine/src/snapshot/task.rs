//! The engine's per-task snapshot state: one snapshot before the first call
//! of a task that may write (a file tool or a shell command). A task is what a
//! person typed and the engine ran to the end, over one or more model rounds.

use std::collections::HashSet;
use std::sync::Arc;

use codesmith_protocol::{Event, EventSink};
use codesmith_tools::ToolContext;

use super::{SideRepo, Snapshot, SnapshotError, SnapshotSettings};

/// Which task of which session is running, and whether it has been snapshot.
/// The default has no task running, so it never snapshots (one-off tool calls).
#[derive(Debug, Default)]
pub(crate) struct TaskSnapshots {
    pub(crate) settings: SnapshotSettings,
    session: String,
    task: u32,
    attempted: bool,
    /// The running task's snapshot, once taken.
    current: Option<Snapshot>,
    /// What `current` holds (see [`SideRepo::held_paths`]), listed once per snapshot.
    held: Option<Arc<HashSet<String>>>,
}

impl TaskSnapshots {
    /// State for `session`, whose transcript already records `past_tasks` tasks.
    pub(crate) fn new(settings: SnapshotSettings, session: &str, past_tasks: u32) -> Self {
        TaskSnapshots {
            settings,
            session: session.to_string(),
            task: past_tasks,
            attempted: false,
            current: None,
            held: None,
        }
    }

    /// Starts the next task and returns its number (1-based over the session).
    pub(crate) fn begin_task(&mut self) -> u32 {
        self.task = self.task.saturating_add(1);
        self.attempted = false;
        self.current = None;
        self.held = None;
        self.task
    }

    /// The paths this task's snapshot holds (workspace-relative), taking the
    /// snapshot first if the task has none yet. `None` when there is no task,
    /// snapshots are off, or the snapshot or its listing failed: callers then
    /// know nothing about what could be restored (fail closed).
    pub(crate) async fn held(
        &mut self,
        ctx: &ToolContext,
        sink: &mut EventSink<'_>,
    ) -> Option<Arc<HashSet<String>>> {
        self.before_write(ctx, sink).await;
        if let Some(held) = &self.held {
            return Some(held.clone());
        }
        let commit = self.current.as_ref()?.commit.clone();
        let repo = SideRepo::new(&self.settings, &ctx.home, &ctx.workspace);
        let held = Arc::new(repo.held_paths(&commit).await.ok()?);
        self.held = Some(held.clone());
        Some(held)
    }

    /// Takes this task's snapshot unless one was already attempted. Success
    /// is silent; a failure becomes one notice and the turn goes on.
    pub(crate) async fn before_write(&mut self, ctx: &ToolContext, sink: &mut EventSink<'_>) {
        if self.attempted || self.task == 0 || !self.settings.enabled {
            return;
        }
        self.attempted = true;
        let repo = SideRepo::new(&self.settings, &ctx.home, &ctx.workspace);
        let e = match repo.take(&self.session, self.task).await {
            Ok(snapshot) => {
                if !snapshot.skipped.is_empty() {
                    sink(Event::Notice {
                        message: format!(
                            "Snapshot of task {} left out: {}. Changes to them cannot be rolled back with `sessions restore`.",
                            self.task,
                            snapshot.skipped.join("; ")
                        ),
                    });
                }
                self.current = Some(snapshot);
                return;
            }
            Err(e) => e,
        };
        // Without git, or with a workspace too big to snapshot in time, later
        // tasks would only fail (or wait) the same way.
        let give_up = matches!(
            e,
            SnapshotError::GitMissing { .. } | SnapshotError::Timeout { .. }
        );
        let rest = if give_up {
            " Snapshots are off for the rest of this session."
        } else {
            ""
        };
        if give_up {
            self.settings.enabled = false;
        }
        sink(Event::Notice {
            message: format!(
                "Snapshot of task {} skipped: {e}. This task cannot be rolled back with `sessions restore`.{rest}",
                self.task
            ),
        });
    }

    /// True when the running task's snapshot holds the workspace path `rel`
    /// (workspace-relative, `/`-separated), so deleting or overwriting it now can be
    /// undone with `sessions restore`. `false` when no snapshot was taken this task
    /// (none yet, snapshots off, or it failed) or git cannot answer: callers such as the
    /// command policy treat "not held" as "ask first".
    #[allow(dead_code)] // The command policy's deletion rule is its first caller.
    pub(crate) async fn holds(&self, ctx: &ToolContext, rel: &str) -> bool {
        let Some(snapshot) = &self.current else {
            return false;
        };
        SideRepo::new(&self.settings, &ctx.home, &ctx.workspace)
            .holds(&snapshot.commit, rel)
            .await
    }
}
