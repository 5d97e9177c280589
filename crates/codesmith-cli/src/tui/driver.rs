//! The engine side of the UI: a tokio task that owns the [`Engine`], runs
//! submitted tasks, stops one on interrupt while keeping the session, and
//! rebuilds the engine when the model, the approval mode or the session changes.

use std::sync::Arc;

use codesmith_engine::snapshot::{SideRepo, SnapshotSettings};
use codesmith_engine::{Approver, Engine, Session, TaskStatus};
use codesmith_policy::ApprovalMode;
use codesmith_protocol::{Event, Message, Usage};
use codesmith_providers::Provider;
use codesmith_tools::{CancellationToken, ToolContext};
use tokio::sync::mpsc;

use crate::config::Settings;
use crate::setup;

/// What the UI asks the engine task to do.
#[derive(Debug)]
pub enum Submission {
    /// Run a task in the current session.
    Task(String),
    /// Rebuild the engine with other settings or another session.
    Rebuild(Rebuild),
    /// `/restore N`: show what restoring the workspace to before turn N would
    /// change, or (with `apply`) do it and record it in the session.
    Restore {
        /// Turn number (1-based, as recorded in the session).
        turn: u32,
        /// False: preview only.
        apply: bool,
    },
    /// `/compact`: summarise the older turns now.
    Compact,
}

/// Which session the rebuilt engine uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// The current one.
    Keep,
    /// A fresh one.
    New,
    /// An existing one, by id.
    Open(String),
}

/// Settings for a rebuilt engine; `None` keeps the current value.
#[derive(Debug, Clone)]
pub struct Rebuild {
    /// New model name.
    pub model: Option<String>,
    /// New approval mode.
    pub approval: Option<ApprovalMode>,
    /// Session to use.
    pub session: SessionChoice,
}

/// What the engine task reports back.
#[derive(Debug)]
pub enum ToUi {
    /// An engine event.
    Event(Event),
    /// The task ended (its final state was shown through events).
    Done,
    /// The task was interrupted; the session is kept and consistent.
    Interrupted,
    /// The engine was rebuilt.
    Switched {
        /// Session id now in use.
        session_id: String,
        /// The session's transcript, when another session was opened.
        history: Option<Vec<Message>>,
        /// The usage the now-current session recorded (total, last round), when the
        /// session changed.
        usage: Option<(Usage, Option<Usage>)>,
        /// Model now in use.
        model: String,
        /// Approval mode now in use.
        approval: ApprovalMode,
    },
    /// A rebuild failed; the previous engine is still in use.
    Failed(String),
    /// Lines to show (the answer to a submission that is not a task).
    Lines(Vec<String>),
    /// A `/compact` ended, was refused or was interrupted: the one line reporting it.
    Compacted(String),
}

/// The handle the UI keeps.
#[derive(Debug, Clone)]
pub struct Driver {
    submit: mpsc::UnboundedSender<Submission>,
    interrupt: mpsc::UnboundedSender<()>,
}

impl Driver {
    /// Sends a submission; false when the engine task is gone.
    pub fn send(&self, submission: Submission) -> bool {
        self.submit.send(submission).is_ok()
    }

    /// Interrupts the running task, if any.
    pub fn interrupt(&self) {
        let _ = self.interrupt.send(());
    }
}

/// Everything needed to (re)build an engine.
pub struct Parts {
    /// The resolved configuration.
    pub resolved: Settings,
    /// The model provider.
    pub provider: Arc<dyn Provider>,
    /// The tool context (workspace, home, sandbox).
    pub ctx: Arc<ToolContext>,
    /// The approver routing questions to the UI.
    pub approver: Arc<dyn Approver>,
    /// The MCP servers' tools, started once for the whole UI run.
    pub mcp: codesmith_tools::mcp::McpStart,
}

impl Parts {
    /// A new engine over `session`.
    pub fn engine(&self, session: Session) -> Engine {
        setup::engine(
            &self.resolved,
            self.provider.clone(),
            self.ctx.clone(),
            self.approver.clone(),
            session,
            &self.mcp,
        )
    }

    fn create_session(&self) -> anyhow::Result<Session> {
        let r = &self.resolved;
        Ok(Session::create(
            &r.home,
            &r.workspace,
            setup::provider_label(r.provider),
            &r.model,
        )?)
    }
}

/// Starts the engine task over `session`; events come back on the returned receiver.
/// When `stop` is cancelled (a stop signal, see `crate::shutdown`), a running task is
/// interrupted as by [`Driver::interrupt`] and the engine task ends; the returned handle
/// finishes then.
pub fn spawn(
    parts: Parts,
    session: Session,
    stop: CancellationToken,
) -> (
    Driver,
    mpsc::UnboundedReceiver<ToUi>,
    tokio::task::JoinHandle<()>,
) {
    let (submit, rx) = mpsc::unbounded_channel();
    let (interrupt, irx) = mpsc::unbounded_channel();
    let (tx, ui_rx) = mpsc::unbounded_channel();
    let engine = parts.engine(session);
    let handle = tokio::spawn(worker(engine, parts, rx, irx, tx, stop));
    (Driver { submit, interrupt }, ui_rx, handle)
}

async fn worker(
    engine: Engine,
    mut parts: Parts,
    mut rx: mpsc::UnboundedReceiver<Submission>,
    mut irx: mpsc::UnboundedReceiver<()>,
    tx: mpsc::UnboundedSender<ToUi>,
    stop: CancellationToken,
) {
    let mut engine = Some(engine);
    loop {
        let submission = tokio::select! {
            biased;
            () = stop.cancelled() => None,
            submission = rx.recv() => submission,
        };
        let Some(submission) = submission else { break };
        let Some(current) = engine.take() else { break };
        let next = match submission {
            Submission::Task(task) => run_task(current, &parts, &task, &mut irx, &tx, &stop).await,
            Submission::Rebuild(r) => rebuild(current, &mut parts, r, &tx),
            Submission::Compact => {
                let mut current = current;
                while irx.try_recv().is_ok() {}
                // Dropping the compaction leaves the transcript as it was (it writes last).
                let line = tokio::select! {
                    outcome = current.compact() => compaction_line(outcome),
                    _ = irx.recv() => "compaction interrupted: the session is unchanged".to_string(),
                };
                let _ = tx.send(ToUi::Compacted(line));
                Ok(current)
            }
            Submission::Restore { turn, apply } => {
                let mut current = current;
                let lines = restore(&mut current, &parts, turn, apply).await;
                let _ = tx.send(ToUi::Lines(lines));
                Ok(current)
            }
        };
        match next {
            Ok(e) => engine = Some(e),
            Err(e) => {
                let _ = tx.send(ToUi::Event(Event::Error {
                    message: format!("the session cannot continue: {e:#}; restart codesmith"),
                }));
                let _ = tx.send(ToUi::Done);
                break;
            }
        }
    }
}

/// The one line that reports a `/compact`.
fn compaction_line(
    outcome: Result<codesmith_engine::Compaction, codesmith_engine::EngineError>,
) -> String {
    use codesmith_engine::Compaction;
    match outcome {
        Ok(Compaction::Compacted {
            messages,
            summary,
            before,
            after,
        }) => format!(
            "compacted {messages} earlier messages into {}: context ~{} → ~{} tokens",
            if summary {
                "a summary"
            } else {
                "a note (no summary could be had)"
            },
            crate::tui::status::compact(before),
            crate::tui::status::compact(after),
        ),
        Ok(Compaction::Discarded {
            messages,
            before,
            after,
        }) => format!(
            "compaction discarded: replacing {messages} earlier messages would have made the context larger (~{} → ~{} tokens); the session is unchanged",
            crate::tui::status::compact(before),
            crate::tui::status::compact(after),
        ),
        Ok(Compaction::NothingToCompact) => {
            "nothing to compact yet: the session is still short".to_string()
        }
        Ok(_) => "compaction finished".to_string(),
        Err(e) => format!("compaction failed: {e}"),
    }
}

async fn run_task(
    mut engine: Engine,
    parts: &Parts,
    task: &str,
    irx: &mut mpsc::UnboundedReceiver<()>,
    tx: &mpsc::UnboundedSender<ToUi>,
    stop: &CancellationToken,
) -> anyhow::Result<Engine> {
    while irx.try_recv().is_ok() {}
    let events = tx.clone();
    let mut sink = move |e: Event| {
        let _ = events.send(ToUi::Event(e));
    };
    // An interrupt (or a stop signal) cancels the task's token: the engine stops the
    // running tool calls (a shell command with its whole process tree) and closes the turn
    // itself.
    let cancel = stop.child_token();
    let finished = {
        let run = engine.run_task_cancellable(task, cancel.clone(), &mut sink);
        tokio::pin!(run);
        tokio::select! {
            outcome = &mut run => Some(outcome),
            _ = irx.recv() => {
                cancel.cancel();
                tokio::time::timeout(INTERRUPT_GRACE, run).await.ok()
            }
        }
    };
    match finished {
        Some(Ok(outcome)) if outcome.status == TaskStatus::Cancelled => {
            let _ = tx.send(ToUi::Interrupted);
            Ok(engine)
        }
        Some(Ok(_)) => {
            let _ = tx.send(ToUi::Done);
            Ok(engine)
        }
        Some(Err(e)) => {
            let _ = tx.send(ToUi::Event(Event::Error {
                message: e.to_string(),
            }));
            let _ = tx.send(ToUi::Done);
            Ok(engine)
        }
        None => {
            // The engine did not wind down in time: end it (its commands die with it)
            // and close the turn in its transcript, which matches the file (every change
            // is written before it is applied).
            let mut session = engine.into_session();
            session.close_open_turn(codesmith_engine::INTERRUPTED)?;
            let _ = tx.send(ToUi::Interrupted);
            Ok(parts.engine(session))
        }
    }
}

/// How long an interrupted task may take to stop its tool calls and close its turn.
const INTERRUPT_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

async fn restore(engine: &mut Engine, parts: &Parts, turn: u32, apply: bool) -> Vec<String> {
    let workspace = &parts.resolved.workspace;
    if apply {
        return match engine.restore_turn(turn).await {
            Ok(r) => vec![format!(
                "restored {} to before turn {turn}: {} rewritten, {} removed, {} brought back{}",
                workspace.display(),
                r.restored.len(),
                r.removed.len(),
                r.recreated.len(),
                r.backup
                    .map(|b| format!("; the state before the restore is kept as commit {b}"))
                    .unwrap_or_default()
            )],
            Err(e) => vec![format!("restore failed: {e}")],
        };
    }
    let settings = SnapshotSettings::default();
    let repo = SideRepo::new(&settings, &parts.resolved.home, workspace);
    match repo.preview(engine.session().id(), turn).await {
        Ok(plan) if plan.is_empty() => vec![format!(
            "the workspace already matches its state before turn {turn}; nothing to restore"
        )],
        Ok(plan) => {
            let mut lines: Vec<String> = crate::commands::sessions::describe(&plan, workspace)
                .lines()
                .map(str::to_string)
                .collect();
            lines.push(format!("type /restore {turn} yes to restore these files"));
            lines
        }
        Err(e) => vec![format!("cannot restore turn {turn}: {e}")],
    }
}

fn rebuild(
    engine: Engine,
    parts: &mut Parts,
    r: Rebuild,
    tx: &mpsc::UnboundedSender<ToUi>,
) -> anyhow::Result<Engine> {
    // The current session stays open (a new one is not on disk until it has a message).
    let current = engine.into_session();
    let old = (parts.resolved.model.clone(), parts.resolved.approval);
    if let Some(model) = r.model {
        parts.resolved.model = model;
    }
    if let Some(mode) = r.approval {
        parts.resolved.approval = mode;
    }
    let home = parts.resolved.home.clone();
    let opened = match &r.session {
        SessionChoice::Keep => Ok(current),
        SessionChoice::Open(other) if other == current.id() => Ok(current),
        SessionChoice::New => parts.create_session().map_err(|e| (e, current)),
        SessionChoice::Open(other) => {
            Session::resume(&home, other).map_err(|e| (e.into(), current))
        }
    };
    let session = match opened {
        Ok(s) => s,
        Err((e, current)) => {
            (parts.resolved.model, parts.resolved.approval) = old;
            let _ = tx.send(ToUi::Failed(format!("{e:#}")));
            return Ok(parts.engine(current));
        }
    };
    let history = matches!(r.session, SessionChoice::Open(_)).then(|| session.messages().to_vec());
    let usage = (!matches!(r.session, SessionChoice::Keep))
        .then(|| codesmith_engine::session::recorded_usage(session.path()));
    let _ = tx.send(ToUi::Switched {
        session_id: session.id().to_string(),
        history,
        usage,
        model: parts.resolved.model.clone(),
        approval: parts.resolved.approval,
    });
    Ok(parts.engine(session))
}
