//! The engine's per-turn snapshot state: one snapshot before the first call
//! of a turn that may write (a file tool or a shell command).

use codesmith_protocol::Event;
use codesmith_tools::ToolContext;

use super::{SideRepo, SnapshotError, SnapshotSettings};

/// Which turn of which session is running, and whether it has been snapshot.
/// The default has no turn running, so it never snapshots (one-off tool calls).
#[derive(Debug, Default)]
pub(crate) struct TurnSnapshots {
    pub(crate) settings: SnapshotSettings,
    session: String,
    turn: u32,
    attempted: bool,
}

impl TurnSnapshots {
    /// State for `session`, whose transcript already records `past_turns` turns.
    pub(crate) fn new(session: &str, past_turns: u32) -> Self {
        TurnSnapshots {
            settings: SnapshotSettings::default(),
            session: session.to_string(),
            turn: past_turns,
            attempted: false,
        }
    }

    /// Starts the next turn and returns its number (1-based over the session).
    pub(crate) fn begin_turn(&mut self) -> u32 {
        self.turn = self.turn.saturating_add(1);
        self.attempted = false;
        self.turn
    }

    /// Takes this turn's snapshot unless one was already attempted. Success
    /// is silent; a failure becomes one notice and the turn goes on.
    pub(crate) async fn before_write(
        &mut self,
        ctx: &ToolContext,
        sink: &mut (dyn FnMut(Event) + Send),
    ) {
        if self.attempted || self.turn == 0 || !self.settings.enabled {
            return;
        }
        self.attempted = true;
        let repo = SideRepo::new(&self.settings, &ctx.home, &ctx.workspace);
        let Err(e) = repo.take(&self.session, self.turn).await else {
            return;
        };
        // Without git, or with a workspace too big to snapshot in time, later
        // turns would only fail (or wait) the same way.
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
                "Snapshot of turn {} skipped: {e}. This turn cannot be rolled back with `sessions restore`.{rest}",
                self.turn
            ),
        });
    }
}
