//! The engine side of the UI: a tokio task that keeps the engine's handle
//! ([`codesmith_engine::EngineHandle`]), relays the UI's ops to it and its events back,
//! and does the one thing the engine's queue has no op for because only the UI has it:
//! rebuilding the engine with another model, approval mode or session (the handle is
//! shut down and a new engine spawned over the session).

use std::sync::Arc;

use codesmith_engine::{Approvals, Engine, NoApprover, Session, Submitter};
use codesmith_policy::ApprovalMode;
use codesmith_protocol::{Event, Op, TaskStatus, Usage};
use codesmith_providers::Provider;
use codesmith_tools::{CancellationToken, ToolContext};
use tokio::sync::mpsc;

use crate::config::Settings;
use crate::setup;

/// What the UI sends to the engine task: an op for the engine, or a rebuild.
#[derive(Debug)]
enum ToEngine {
    Op(Op),
    Rebuild(Rebuild),
}

/// Which session the rebuilt engine uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionChoice {
    /// The current one.
    Keep,
    /// A fresh one.
    New,
    /// An existing one, by id.
    Open(String),
}

/// Settings for a rebuilt engine; `None` keeps the current value.
#[derive(Debug, Clone)]
pub(crate) struct Rebuild {
    /// New model name.
    pub model: Option<String>,
    /// New approval mode.
    pub approval: Option<ApprovalMode>,
    /// Session to use.
    pub session: SessionChoice,
}

/// What the engine task reports back.
#[derive(Debug)]
pub(crate) enum ToUi {
    /// An engine event (a submission's end is its closing event, e.g. `task_finished`).
    Event(Event),
    /// The engine was rebuilt.
    Switched {
        /// Session id now in use.
        session_id: String,
        /// The session as its front end showed it, when another session was opened.
        history: Option<Vec<codesmith_engine::replay::Replayed>>,
        /// The usage the now-current session recorded (total, last round), when the
        /// session changed.
        usage: Option<(Usage, Option<Usage>)>,
        /// Model now in use.
        model: String,
        /// Approval mode now in use.
        approval: ApprovalMode,
    },
    /// A rebuild failed; the previous engine is still in use. (A task that fails before
    /// it reaches the engine is closed as the engine closes one: `error`, then
    /// `task_finished`.)
    Failed(String),
    /// Lines for the person about a task being sent (what its `@` words attached, or why
    /// not).
    Info(Vec<String>),
}

/// The handle the UI keeps.
#[derive(Debug, Clone)]
pub(crate) struct Driver {
    tx: mpsc::UnboundedSender<ToEngine>,
}

impl Driver {
    /// Sends an op to the engine (a task, `/compact`, `/restore`, an approval's answer);
    /// false when the engine task is gone.
    pub(crate) fn send(&self, op: Op) -> bool {
        self.tx.send(ToEngine::Op(op)).is_ok()
    }

    /// Rebuilds the engine; false when the engine task is gone.
    pub(crate) fn rebuild(&self, rebuild: Rebuild) -> bool {
        self.tx.send(ToEngine::Rebuild(rebuild)).is_ok()
    }

    /// Interrupts the running work, if any.
    pub(crate) fn interrupt(&self) {
        let _ = self.send(Op::Interrupt);
    }
}

/// Everything needed to (re)build an engine.
pub(crate) struct Parts {
    /// The resolved configuration.
    pub resolved: Settings,
    /// The model provider.
    pub provider: Arc<dyn Provider>,
    /// The tool context (workspace, home, sandbox).
    pub ctx: Arc<ToolContext>,
    /// The MCP servers' tools, started once for the whole UI run.
    pub mcp: codesmith_tools::mcp::McpStart,
}

impl Parts {
    /// A new engine over `session`, spawned with its approvals asked through its queues.
    fn spawn(&self, session: Session) -> Running {
        let engine = setup::engine(
            &self.resolved,
            self.provider.clone(),
            self.ctx.clone(),
            Arc::new(NoApprover),
            session,
            &self.mcp,
        );
        let (submit, events, task) = engine.spawn(Approvals::Asked).into_parts();
        Running {
            submit,
            events,
            task,
        }
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

/// The running engine's queues.
struct Running {
    submit: Submitter,
    events: mpsc::UnboundedReceiver<Event>,
    task: tokio::task::JoinHandle<Engine>,
}

impl Running {
    /// Shuts the engine down, relaying the events it still sends (the closing event of
    /// an interrupted task), and gives the engine back.
    async fn stop(mut self, tx: &mpsc::UnboundedSender<ToUi>) -> Option<Engine> {
        let _ = self.submit.submit(Op::Shutdown).await;
        drop(self.submit);
        while let Some(event) = self.events.recv().await {
            let _ = tx.send(ToUi::Event(event));
        }
        self.task.await.ok()
    }
}

/// Starts the engine task over `session`; events come back on the returned receiver.
/// When `stop` is cancelled (a stop signal, see `crate::shutdown`), a running task is
/// interrupted as by [`Driver::interrupt`], its turn closed, and the engine task ends;
/// the returned handle finishes then.
pub(crate) fn spawn(
    parts: Parts,
    session: Session,
    stop: CancellationToken,
) -> (
    Driver,
    mpsc::UnboundedReceiver<ToUi>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (ui_tx, ui_rx) = mpsc::unbounded_channel();
    // What the MCP servers report reaches the UI beside the engine's events.
    if let Some(mut events) = parts.mcp.take_events() {
        let ui = ui_tx.clone();
        tokio::spawn(async move {
            while let Some(e) = events.recv().await {
                if let Some(event) = setup::mcp_event(e)
                    && ui.send(ToUi::Event(event)).is_err()
                {
                    break;
                }
            }
        });
    }
    let running = parts.spawn(session);
    let handle = tokio::spawn(relay(running, parts, rx, ui_tx, stop));
    (Driver { tx }, ui_rx, handle)
}

/// The UI's messages to the relay, with those that arrived while a task was being
/// prepared (its prompt rendered, its mentions read) held for after it.
struct Inbox {
    rx: mpsc::UnboundedReceiver<ToEngine>,
    held: std::collections::VecDeque<ToEngine>,
}

impl Inbox {
    /// The next message: a held one first (cancel-safe, as `recv` is).
    async fn recv(&mut self) -> Option<ToEngine> {
        match self.held.pop_front() {
            Some(msg) => Some(msg),
            None => self.rx.recv().await,
        }
    }
}

/// How a task the UI sent left the relay.
#[derive(Debug)]
enum Prepared {
    /// Ready for the engine, which closes it (`task_finished`).
    Send(Op),
    /// Ended before the engine saw it: refused (a prompt its server would not render, a
    /// bad argument), the reason for the person.
    Refused(String),
    /// Ended before the engine saw it: interrupted while its prompt or mentions were read.
    Interrupted,
    /// The UI is gone or a stop signal came: the relay ends.
    Stop,
}

/// Prepares the task `text` for the engine: `/mcp__SERVER__PROMPT args` is rendered by
/// its server into the task, as `exec` does (the user sees the preview of what is sent
/// in their name); any other task gets what its `@path` and `@SERVER:URI` words name
/// attached (see `attach`), each shown as a line. What the server or the files take is
/// raced against the UI's interrupt (and a stop signal); other messages that arrive
/// meanwhile are held in `inbox` for after.
async fn prepare(
    parts: &Parts,
    text: String,
    images: Vec<codesmith_protocol::ImagePart>,
    inbox: &mut Inbox,
    tx: &mpsc::UnboundedSender<ToUi>,
    stop: &CancellationToken,
) -> Prepared {
    let work = async {
        match parts.mcp.render_prompt(&text).await {
            // `slash` sends an unknown `/mcp__…` command here for its server to render;
            // one that no running server offers is refused, not sent as text.
            None if text.trim_start().starts_with("/mcp__") => {
                let head = text.split_whitespace().next().unwrap_or_default();
                Prepared::Refused(format!(
                    "no running MCP server offers the prompt {head} now; /help lists the MCP \
                     servers' prompts"
                ))
            }
            None => {
                let (text, more, lines) = attach_to(parts, &text).await;
                if !lines.is_empty() {
                    let _ = tx.send(ToUi::Info(lines));
                }
                Prepared::Send(Op::UserTask {
                    text,
                    images: images.into_iter().chain(more).collect(),
                })
            }
            Some(Ok(rendered)) => {
                let _ = tx.send(ToUi::Event(Event::Notice {
                    message: rendered.preview,
                }));
                Prepared::Send(Op::UserTask {
                    text: rendered.text,
                    images,
                })
            }
            Some(Err(e)) => Prepared::Refused(e),
        }
    };
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return Prepared::Stop,
            msg = inbox.rx.recv() => match msg {
                None => return Prepared::Stop,
                Some(ToEngine::Op(Op::Interrupt)) => return Prepared::Interrupted,
                Some(other) => inbox.held.push_back(other),
            },
            prepared = &mut work => return prepared,
        }
    }
}

/// Ends a task that never reached the engine the way the engine ends one, so both front
/// ends leave their working state through their one closing path: the reason (one
/// visible line) as an `error` event, then `task_finished` (`failed`, or `cancelled`
/// when interrupted) with no rounds.
fn close_unsent(tx: &mpsc::UnboundedSender<ToUi>, refused: Option<&str>) {
    let status = match refused {
        Some(why) => {
            let _ = tx.send(ToUi::Event(Event::Error {
                message: codesmith_policy::visible_line(why, MAX_REFUSAL_CHARS),
            }));
            TaskStatus::Failed
        }
        None => TaskStatus::Cancelled,
    };
    let _ = tx.send(ToUi::Event(Event::TaskFinished {
        status,
        turns: 0,
        usage: Usage::default(),
    }));
}

/// Most characters of a refusal shown for a task that was not sent (its middle elided).
const MAX_REFUSAL_CHARS: usize = 600;

async fn relay(
    mut running: Running,
    mut parts: Parts,
    rx: mpsc::UnboundedReceiver<ToEngine>,
    tx: mpsc::UnboundedSender<ToUi>,
    stop: CancellationToken,
) {
    let mut inbox = Inbox {
        rx,
        held: std::collections::VecDeque::new(),
    };
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            msg = inbox.recv() => match msg {
                None => break,
                Some(ToEngine::Op(op)) => {
                    // Every task leaves here closed for the front ends: by the engine once
                    // sent, or by `close_unsent` when it ends before.
                    let op = match op {
                        Op::UserTask { text, images } => {
                            match prepare(&parts, text, images, &mut inbox, &tx, &stop).await {
                                Prepared::Send(op) => op,
                                Prepared::Refused(why) => {
                                    close_unsent(&tx, Some(&why));
                                    continue;
                                }
                                Prepared::Interrupted => {
                                    close_unsent(&tx, None);
                                    continue;
                                }
                                Prepared::Stop => break,
                            }
                        }
                        other => other,
                    };
                    if running.submit.submit(op).await.is_err() {
                        break;
                    }
                }
                Some(ToEngine::Rebuild(r)) => {
                    let Some(engine) = running.stop(&tx).await else { return };
                    running = rebuild(engine, &mut parts, r, &tx);
                }
            },
            event = running.events.recv() => match event {
                Some(event) => {
                    let _ = tx.send(ToUi::Event(event));
                }
                // The engine's loop ends only when asked to: it is gone.
                None => break,
            },
        }
    }
    // The running task is interrupted and its turn closed before the engine ends.
    let _ = running.stop(&tx).await;
}

/// `text` with what its `@` words name attached (see [`super::attach::expand`]), read
/// with the session's tool context; MCP images only when the model reads images, as in
/// a tool result. What mentions attach is bounded by [`super::attach::Limits`] for the
/// model's context window.
async fn attach_to(
    parts: &Parts,
    text: &str,
) -> (String, Vec<codesmith_protocol::ImagePart>, Vec<String>) {
    let mut ctx = (*parts.ctx).clone();
    ctx.images = parts.provider.accepts_images();
    let limits = super::attach::Limits::for_window(parts.resolved.context.window);
    super::attach::expand(text, &ctx, &parts.mcp, &limits).await
}

fn rebuild(
    engine: Engine,
    parts: &mut Parts,
    r: Rebuild,
    tx: &mpsc::UnboundedSender<ToUi>,
) -> Running {
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
            return parts.spawn(current);
        }
    };
    let history = matches!(r.session, SessionChoice::Open(_))
        .then(|| codesmith_engine::replay::replay(session.path()));
    let usage = (!matches!(r.session, SessionChoice::Keep))
        .then(|| codesmith_engine::session::recorded_usage(session.path()));
    let _ = tx.send(ToUi::Switched {
        session_id: session.id().to_string(),
        history,
        usage,
        model: parts.resolved.model.clone(),
        approval: parts.resolved.approval,
    });
    parts.spawn(session)
}
