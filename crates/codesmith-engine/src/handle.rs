//! The engine's queue pair: [`Engine::spawn`] moves an engine onto a tokio task that owns
//! it; a front end sends [`Submission`]s and reads [`Event`]s (codex-rs's SQ/EQ pattern,
//! `codex_protocol::protocol`).
//!
//! The loop runs one submission that starts work ([`Op::UserTask`], [`Op::Compact`],
//! [`Op::Restore`]) at a time and keeps reading the queue while it runs: [`Op::Interrupt`]
//! fires the running task's cancellation token (the engine then closes the turn itself:
//! every tool call answered, the transcript synced), [`Op::Approval`] resolves a pending
//! `call_id → oneshot` entry (codex's `pending_approvals`), and other work waits its turn.
//! A pending approval never waits forever: an interrupt, a shutdown, or dropping every
//! sender of the queue resolves it as denied and withdraws it
//! ([`Event::ApprovalWithdrawn`]).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use codesmith_protocol::{
    ApprovalAnswer, CompactionOutcome, Event, Op, Submission, TaskStatus, Usage,
};
use codesmith_tools::CancellationToken;
use tokio::sync::mpsc;

use crate::agent::{Compaction, Engine};
use crate::approval::{NoApprover, Pending, QueueApprover};

/// Submissions the queue holds before [`Submitter::submit`] waits (and
/// [`Submitter::try_submit`] fails): a client cannot pile up work unboundedly.
pub const SUBMISSION_QUEUE: usize = 64;

/// Most submissions that start work and wait behind the running one; past it a new one
/// is refused at once with a `notice`, and its closing event comes in its turn (after
/// those of the submissions before it).
pub const MAX_WAITING: usize = 32;

/// How long an interrupted task may take to stop its tool calls and close its turn before
/// the engine abandons it (its tool futures are dropped, which kills their commands) and
/// closes the turn in the transcript itself: 3 s.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(3);

/// Who answers the approval requests of a spawned engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approvals {
    /// A client: each request is an [`Event::ApprovalRequested`], answered by
    /// [`Op::Approval`] with its `call_id`.
    Asked,
    /// Nobody is present (`exec`): a call that needs approval is refused without asking,
    /// and the refusal says how to allow it.
    Refused,
}

/// The handle sending no more submissions: the engine's loop has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the engine has stopped; start a new one to go on with the session")]
pub struct EngineGone;

/// Why [`Submitter::try_submit`] could not queue a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TrySubmitError {
    /// The queue holds [`SUBMISSION_QUEUE`] submissions: wait for events, then try again.
    #[error("the engine's queue is full ({SUBMISSION_QUEUE} submissions); wait for it to catch up")]
    Full,
    /// The engine's loop has ended.
    #[error(transparent)]
    Gone(#[from] EngineGone),
}

/// The sending side of the submission queue; clones share the numbering of submissions.
#[derive(Debug, Clone)]
pub struct Submitter {
    tx: mpsc::Sender<Submission>,
    next: Arc<AtomicU64>,
}

impl Submitter {
    /// Queues `op`, waiting while the queue is full; returns the submission's id (from 1).
    ///
    /// # Errors
    /// [`EngineGone`] when the engine's loop has ended.
    pub async fn submit(&self, op: Op) -> Result<u64, EngineGone> {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.tx
            .send(Submission { id, op })
            .await
            .map_err(|_| EngineGone)?;
        Ok(id)
    }

    /// Queues `op` without waiting; returns the submission's id.
    ///
    /// # Errors
    /// [`TrySubmitError::Full`] when [`SUBMISSION_QUEUE`] submissions wait,
    /// [`TrySubmitError::Gone`] when the engine's loop has ended.
    pub fn try_submit(&self, op: Op) -> Result<u64, TrySubmitError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.tx
            .try_send(Submission { id, op })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => TrySubmitError::Full,
                mpsc::error::TrySendError::Closed(_) => TrySubmitError::Gone(EngineGone),
            })?;
        Ok(id)
    }
}

/// A running engine: the submission queue, the event queue, and the task that owns the
/// engine. Dropping it shuts the engine down (as [`Op::Shutdown`]).
#[derive(Debug)]
pub struct EngineHandle {
    submitter: Submitter,
    events: mpsc::UnboundedReceiver<Event>,
    task: tokio::task::JoinHandle<Engine>,
}

impl EngineHandle {
    /// Queues `op`; see [`Submitter::submit`].
    ///
    /// # Errors
    /// [`EngineGone`] when the engine's loop has ended.
    pub async fn submit(&self, op: Op) -> Result<u64, EngineGone> {
        self.submitter.submit(op).await
    }

    /// A sender that can be kept apart from the event queue.
    pub fn submitter(&self) -> Submitter {
        self.submitter.clone()
    }

    /// The next event; `None` once the engine's loop has ended and every event was read.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// The three parts, for a client that reads events in one place and submits in another.
    /// The engine shuts down when every [`Submitter`] is dropped; the join handle gives
    /// the engine back.
    pub fn into_parts(
        self,
    ) -> (
        Submitter,
        mpsc::UnboundedReceiver<Event>,
        tokio::task::JoinHandle<Engine>,
    ) {
        (self.submitter, self.events, self.task)
    }

    /// Shuts the engine down ([`Op::Shutdown`]: a running task is interrupted and its
    /// turn closed) and gives the engine back, e.g. to rebuild it over the same session
    /// with [`Engine::into_session`]. Events not read yet are dropped.
    ///
    /// # Errors
    /// [`EngineGone`] when the engine's task panicked.
    pub async fn shutdown(self) -> Result<Engine, EngineGone> {
        let _ = self.submitter.submit(Op::Shutdown).await;
        drop(self.submitter);
        drop(self.events);
        self.task.await.map_err(|_| EngineGone)
    }
}

impl Engine {
    /// Moves the engine onto a tokio task of its own and returns the handle of its
    /// queues. `approvals` says who answers approval requests: [`Approvals::Asked`]
    /// routes them through the queues (they reach subagents too, whose requests carry
    /// their `agent_id`), [`Approvals::Refused`] refuses them as `exec` does.
    ///
    /// Must be called inside a tokio runtime.
    pub fn spawn(mut self, approvals: Approvals) -> EngineHandle {
        let (tx, ops) = mpsc::channel(SUBMISSION_QUEUE);
        let (events_tx, events) = mpsc::unbounded_channel();
        let pending = Pending::default();
        self.set_approver(match approvals {
            Approvals::Asked => Arc::new(QueueApprover {
                events: events_tx.clone(),
                pending: pending.clone(),
            }),
            Approvals::Refused => Arc::new(NoApprover),
        });
        let task = tokio::spawn(run_loop(self, ops, events_tx, pending));
        EngineHandle {
            submitter: Submitter {
                tx,
                next: Arc::new(AtomicU64::new(0)),
            },
            events,
            task,
        }
    }
}

/// A submission that waits behind the running one.
enum Queued {
    /// It starts its work when its turn comes.
    Work(Submission),
    /// It will not start (an interrupt dropped it, or too many waited): its closing
    /// event, emitted when its turn comes, so that closing events keep the order of
    /// their submissions.
    NotStarted(Event),
}

/// What the loop keeps besides the engine.
struct Queues {
    ops: mpsc::Receiver<Submission>,
    events: mpsc::UnboundedSender<Event>,
    pending: Pending,
    /// Submissions that start work, waiting behind the running one, in their order.
    waiting: VecDeque<Queued>,
    /// How many of them are [`Queued::Work`].
    work_waiting: usize,
    /// Every sender is gone: no more submissions will come.
    closed: bool,
    /// A shutdown was asked for (or every sender is gone).
    stop: bool,
}

impl Queues {
    fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }

    /// Answers an approval, or says that nothing waits under that id.
    fn approval(&self, call_id: &str, answer: ApprovalAnswer, reason: Option<String>) {
        if !self.pending.answer(call_id, answer, reason) {
            self.emit(Event::Notice {
                message: format!(
                    "no approval request is waiting under the id {:?} (it was answered or \
                     withdrawn already, or never asked); nothing was changed",
                    codesmith_policy::visible_line(call_id, 120)
                ),
            });
        }
    }

    /// Denies the pending approvals and drops the submissions that wait behind the
    /// running one: each keeps its place, to close (with its closing event) after the
    /// running one's closing event.
    fn interrupt_waiting(&mut self) {
        self.pending.deny_all();
        self.work_waiting = 0;
        self.waiting = std::mem::take(&mut self.waiting)
            .into_iter()
            .filter_map(|queued| match queued {
                Queued::Work(sub) => not_started(sub.op).map(Queued::NotStarted),
                done @ Queued::NotStarted(_) => Some(done),
            })
            .collect();
    }

    /// Emits the closing events of every waiting submission (the loop is ending).
    fn close_waiting(&mut self) {
        self.interrupt_waiting();
        for queued in std::mem::take(&mut self.waiting) {
            if let Queued::NotStarted(event) = queued {
                self.emit(event);
            }
        }
    }

    /// The next waiting submission to start, after emitting the closing events of the
    /// dropped ones before it.
    fn next_waiting(&mut self) -> Option<Submission> {
        while let Some(queued) = self.waiting.pop_front() {
            match queued {
                Queued::Work(sub) => {
                    self.work_waiting -= 1;
                    return Some(sub);
                }
                Queued::NotStarted(event) => self.emit(event),
            }
        }
        None
    }

    /// Queues a submission that starts work behind the running one.
    fn defer(&mut self, sub: Submission) {
        if self.work_waiting >= MAX_WAITING {
            self.emit(Event::Notice {
                message: format!(
                    "{MAX_WAITING} submissions already wait behind the running one; this one \
                     was dropped (its closing event follows theirs): wait for them, or interrupt"
                ),
            });
            if let Some(closing) = not_started(sub.op) {
                self.waiting.push_back(Queued::NotStarted(closing));
            }
        } else {
            self.work_waiting += 1;
            self.waiting.push_back(Queued::Work(sub));
        }
    }
}

/// The closing event of a submission that never started (`None` for an op that has none).
fn not_started(op: Op) -> Option<Event> {
    Some(match op {
        Op::Compact => compaction_interrupted(),
        Op::Restore { task, .. } => Event::RestoreFinished {
            task,
            applied: false,
            report: None,
            error: Some(
                "it never started (interrupted, or too many submissions waited); nothing was \
                 changed"
                    .to_string(),
            ),
        },
        Op::UserTask { .. } | Op::UserShell { .. } => Event::TaskFinished {
            status: TaskStatus::Cancelled,
            turns: 0,
            usage: Usage::default(),
        },
        _ => return None,
    })
}

/// The closing event of a compaction that was interrupted (or never started).
fn compaction_interrupted() -> Event {
    Event::CompactionFinished {
        outcome: CompactionOutcome::Interrupted,
        messages: 0,
        summary: false,
        before: 0,
        after: 0,
        error: None,
    }
}

async fn run_loop(
    mut engine: Engine,
    ops: mpsc::Receiver<Submission>,
    events: mpsc::UnboundedSender<Event>,
    pending: Pending,
) -> Engine {
    let mut q = Queues {
        ops,
        events,
        pending,
        waiting: VecDeque::new(),
        work_waiting: 0,
        closed: false,
        stop: false,
    };
    while !q.stop {
        let sub = match q.next_waiting() {
            Some(sub) => sub,
            None => match q.ops.recv().await {
                Some(sub) => sub,
                None => break,
            },
        };
        match sub.op {
            Op::Shutdown => break,
            // Nothing runs: nothing to interrupt.
            Op::Interrupt => {}
            Op::Approval {
                call_id,
                answer,
                reason,
            } => q.approval(&call_id, answer, reason),
            Op::UserTask { text } => user_task(&mut engine, &text, &mut q).await,
            Op::UserShell { command } => user_shell(&mut engine, &command, &mut q).await,
            Op::Compact => compact(&mut engine, &mut q).await,
            Op::Restore { task, apply } => restore(&mut engine, task, apply, &mut q).await,
            // A newer client's op this engine does not know: refused, not guessed at.
            other => q.emit(Event::Notice {
                message: format!(
                    "this engine does not understand the submission {other:?}; nothing was done"
                ),
            }),
        }
    }
    q.close_waiting();
    // The queue approver holds a sender of the event queue: the queue closes (and a
    // client reading to the end stops) only once it is gone. An engine handed back
    // refuses what needs approval until it is spawned again.
    engine.set_approver(Arc::new(NoApprover));
    engine
}

/// What an interrupt does to the running work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnInterrupt {
    /// Drop it at once (it writes nothing until its end).
    Drop,
    /// Let it wind down through its cancellation token, for at most [`INTERRUPT_GRACE`].
    Grace,
    /// Let it finish: it is bounded by its own timeouts, and stopping it half-way would
    /// leave things half done.
    Finish,
}

/// How a driven future ended.
enum Driven<T> {
    /// It finished.
    Done(T),
    /// It was dropped: interrupted where dropping is the way to stop, or past the grace.
    Dropped,
}

/// Polls `work` to the end while reading the queue. An interrupt (or a shutdown, or the
/// queue closing) fires `cancel`, and then `on_interrupt` applies.
async fn drive<F: Future>(
    work: F,
    cancel: &CancellationToken,
    on_interrupt: OnInterrupt,
    q: &mut Queues,
) -> Driven<F::Output> {
    tokio::pin!(work);
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let grace = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            out = &mut work => return Driven::Done(out),
            () = grace => return Driven::Dropped,
            sub = q.ops.recv(), if !q.closed => {
                let interrupt = match sub {
                    None => {
                        q.closed = true;
                        q.stop = true;
                        true
                    }
                    Some(sub) => match sub.op {
                        Op::Interrupt => true,
                        Op::Shutdown => {
                            q.stop = true;
                            true
                        }
                        Op::Approval {
                            call_id,
                            answer,
                            reason,
                        } => {
                            q.approval(&call_id, answer, reason);
                            false
                        }
                        _ => {
                            q.defer(sub);
                            false
                        }
                    },
                };
                if interrupt {
                    cancel.cancel();
                    q.interrupt_waiting();
                    match on_interrupt {
                        OnInterrupt::Drop => return Driven::Dropped,
                        OnInterrupt::Grace => {
                            deadline.get_or_insert_with(|| {
                                tokio::time::Instant::now() + INTERRUPT_GRACE
                            });
                        }
                        OnInterrupt::Finish => {}
                    }
                }
            }
        }
    }
}

async fn user_task(engine: &mut Engine, text: &str, q: &mut Queues) {
    let cancel = CancellationToken::new();
    let events = q.events.clone();
    let mut sink = move |e: Event| {
        let _ = events.send(e);
    };
    let run = engine.run_task_cancellable(text, cancel.clone(), &mut sink);
    let finished = match drive(run, &cancel, OnInterrupt::Grace, q).await {
        Driven::Done(Ok(outcome)) => Event::TaskFinished {
            status: outcome.status,
            turns: outcome.turns,
            usage: outcome.usage,
        },
        Driven::Done(Err(e)) => {
            q.emit(Event::Error {
                message: e.with_next_step(),
            });
            Event::TaskFinished {
                status: TaskStatus::Failed,
                turns: 0,
                usage: Usage::default(),
            }
        }
        Driven::Dropped => {
            if let Err(e) = engine.abandon_task() {
                q.emit(Event::Error {
                    message: format!(
                        "the interrupted turn could not be closed in the transcript: {e}"
                    ),
                });
            }
            Event::TaskFinished {
                status: TaskStatus::Cancelled,
                turns: 0,
                usage: Usage::default(),
            }
        }
    };
    q.emit(finished);
}

async fn user_shell(engine: &mut Engine, command: &str, q: &mut Queues) {
    let cancel = CancellationToken::new();
    let events = q.events.clone();
    let mut sink = move |e: Event| {
        let _ = events.send(e);
    };
    let run = engine.run_user_shell(command, cancel.clone(), &mut sink);
    let status = match drive(run, &cancel, OnInterrupt::Grace, q).await {
        Driven::Done(Ok(status)) => status,
        Driven::Done(Err(e)) => {
            q.emit(Event::Error {
                message: e.with_next_step(),
            });
            TaskStatus::Failed
        }
        Driven::Dropped => {
            if let Err(e) = engine.abandon_task() {
                q.emit(Event::Error {
                    message: format!("the interrupted command could not be recorded: {e}"),
                });
            }
            TaskStatus::Cancelled
        }
    };
    q.emit(Event::TaskFinished {
        status,
        turns: 0,
        usage: Usage::default(),
    });
}

async fn compact(engine: &mut Engine, q: &mut Queues) {
    let cancel = CancellationToken::new();
    // Dropping a compaction leaves the transcript as it was: it writes last.
    let finished = match drive(engine.compact(), &cancel, OnInterrupt::Drop, q).await {
        Driven::Done(Ok(c)) => compaction_event(c),
        Driven::Done(Err(e)) => Event::CompactionFinished {
            outcome: CompactionOutcome::Failed,
            messages: 0,
            summary: false,
            before: 0,
            after: 0,
            error: Some(e.to_string()),
        },
        Driven::Dropped => compaction_interrupted(),
    };
    q.emit(finished);
}

fn compaction_event(c: Compaction) -> Event {
    let (outcome, messages, summary, before, after) = match c {
        Compaction::NothingToCompact => (CompactionOutcome::NothingToCompact, 0, false, 0, 0),
        Compaction::Compacted {
            messages,
            summary,
            before,
            after,
        } => (
            CompactionOutcome::Compacted,
            messages,
            summary,
            before,
            after,
        ),
        Compaction::Discarded {
            messages,
            before,
            after,
        } => (CompactionOutcome::Discarded, messages, false, before, after),
    };
    Event::CompactionFinished {
        outcome,
        messages,
        summary,
        before,
        after,
        error: None,
    }
}

async fn restore(engine: &mut Engine, task: u32, apply: bool, q: &mut Queues) {
    let cancel = CancellationToken::new();
    // A restore is not cut short: each git command it runs is bounded by the snapshot
    // timeout, and stopping between them would leave the workspace half restored.
    let finished = match drive(
        engine.restore_task(task, apply),
        &cancel,
        OnInterrupt::Finish,
        q,
    )
    .await
    {
        Driven::Done(Ok(report)) => Event::RestoreFinished {
            task,
            applied: apply,
            report: Some(report),
            error: None,
        },
        Driven::Done(Err(e)) => Event::RestoreFinished {
            task,
            applied: false,
            report: None,
            error: Some(e.to_string()),
        },
        // Not reached: a restore is never dropped (`OnInterrupt::Finish`).
        Driven::Dropped => Event::RestoreFinished {
            task,
            applied: false,
            report: None,
            error: Some("it was stopped before it finished".to_string()),
        },
    };
    q.emit(finished);
}
