//! The interactive terminal UI: `codesmith` with no sub-command, and `codesmith resume`.
//!
//! A full-screen ratatui app when stdout is a terminal; line mode (tasks read
//! from stdin, events printed as lines) otherwise. The engine runs on its own
//! tokio task behind its queues ([`driver`] relays them); the UI consumes its events
//! and answers its approval questions (`approval_requested` events) with
//! `Op::Approval` ([`approval::Questions`]).

pub(crate) mod app;
pub(crate) mod approval;
pub(crate) mod attach;
pub(crate) mod control;
pub(crate) mod driver;
pub(crate) mod input;
pub(crate) mod markdown;
pub(crate) mod notify;
pub(crate) mod plain;
pub(crate) mod slash;
pub(crate) mod status;
pub(crate) mod theme;
pub(crate) mod tty;
pub(crate) mod view;
pub(crate) mod wrap;

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::Context;
use codesmith_engine::Session;
use codesmith_protocol::{ApprovalAnswer, CompactionOutcome, Event, Op, RestoreReport, TaskStatus};
use tokio::sync::mpsc;

use crate::args::{ThemeArg, UiArgs};
use crate::config::{self, Settings};
use crate::exit::{Exit, usage};
use crate::progress::Progress;
use crate::setup;
use crate::shutdown::{self, Shutdown, StopSignal};

/// Which session the UI opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// A new session.
    New,
    /// The most recently used session of this workspace (`codesmith resume`).
    Latest,
}

/// Everything the UI loops need besides the engine channels.
pub(crate) struct Ui {
    /// The resolved configuration as started.
    pub resolved: Settings,
    /// The UI state.
    pub app: app::App,
    /// The engine handle.
    pub driver: driver::Driver,
    /// Engine events and replies.
    pub events: mpsc::UnboundedReceiver<driver::ToUi>,
    /// The engine's approval questions: the one on screen and those waiting.
    pub questions: approval::Questions,
    /// A resumed session as it was shown, to show first.
    pub history: Vec<codesmith_engine::replay::Replayed>,
    /// Where slash commands that take a while deliver their lines.
    pub later_tx: mpsc::UnboundedSender<Vec<String>>,
    /// Lines from slash commands that took a while.
    pub later: mpsc::UnboundedReceiver<Vec<String>>,
    /// The trusted read directories of the tool context every engine of this run shares.
    pub trusted: Arc<codesmith_tools::fs::trusted::TrustedReads>,
    /// Tells the user that a task ended or a question waits (bell, OSC 9/777, hooks).
    pub notifier: notify::Notifier,
    /// The MCP servers, for what `/help` says about their prompts as they are now (a
    /// server may change them during the session).
    pub mcp_servers: codesmith_tools::mcp::McpStart,
}

/// What became of a slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlashDone {
    /// Its output is shown.
    Shown,
    /// Leave the UI.
    Quit,
    /// Its answer comes from the engine task (its closing event, or [`driver::ToUi`]).
    AwaitEngine,
    /// Its lines come on [`Ui::later`].
    AwaitLater,
}

/// How long the engine task may take to close an interrupted turn once the UI ended (a
/// stop signal, `/quit`, the end of input).
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens the UI.
pub(crate) async fn run(args: UiArgs, start: Start) -> Exit {
    let flags = config::Flags {
        workspace: args.workspace.workspace.as_deref(),
        model: &args.model,
        max_turns: None,
    };
    let resolved = match config::resolve(flags) {
        Ok(r) => r,
        Err(e) => return usage(e),
    };
    let mut progress = Progress::new(false);
    for warning in resolved.warnings.iter().chain(&resolved.session_notices) {
        progress.show(&Event::Notice {
            message: warning.clone(),
        });
    }
    // The session first: with nothing to resume, say so before a model download or
    // any other provider setup that may take minutes.
    let session = match open_session(&resolved, start) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let provider = match setup::provider(&resolved, &mut |e| progress.show(&e)).await {
        Ok(p) => p,
        Err(setup::SetupError::Usage(e)) => return usage(e),
        Err(setup::SetupError::Failed(e)) => return Exit::failed(e),
    };
    match setup::utility_provider(&resolved) {
        Ok(_) => {}
        Err(setup::SetupError::Usage(e)) => return usage(e),
        Err(setup::SetupError::Failed(e)) => return Exit::failed(e),
    }
    let ctx = match setup::tool_context(&resolved) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    let backend = ctx.sandbox.backend.clone();
    let trusted = Arc::clone(&ctx.trusted);
    let unisolated = ctx
        .sandbox
        .unisolated_notice(&config::user_config_path(&resolved.home));
    let theme = theme::Theme::new(match args.theme {
        Some(ThemeArg::Light) => theme::ThemeKind::Light,
        Some(ThemeArg::Dark) => theme::ThemeKind::Dark,
        None => theme::ThemeKind::detect(std::env::var("COLORFGBG").ok().as_deref()),
    });
    let status = status::Status::new(
        setup::provider_label(resolved.provider),
        &resolved.model,
        resolved.approval.as_str(),
        backend.name(),
        backend.isolates(),
    );
    let mut app = app::App::new(theme, status);
    app.commands = Arc::new(resolved.commands.clone());
    if let Some(notice) = unisolated {
        app.notice(notice);
    }
    app.session_id = session.id().to_string();
    if start == Start::Latest {
        let recorded = codesmith_engine::session::recorded_usage(session.path());
        show_recorded_usage(&mut app.status, recorded);
    }
    let history = match start {
        Start::Latest => codesmith_engine::replay::replay(session.path()),
        Start::New => Vec::new(),
    };
    let mcp = setup::mcp_servers(&resolved).await;
    for notice in mcp.notices() {
        eprintln!("codesmith: {notice}");
    }
    let servers = mcp.clone();
    let mcp_servers = mcp.clone();
    let parts = driver::Parts {
        resolved: resolved.clone(),
        provider,
        ctx: Arc::new(ctx),
        mcp,
    };
    // SIGTERM and SIGHUP (and SIGINT in full-screen mode, where Ctrl-C is a key; line mode
    // keeps SIGINT as its Ctrl-C) stop the UI through the one shutdown path
    // (crate::shutdown): the running turn is interrupted as by Ctrl-C, its commands killed
    // with their trees, the turn closed in the session, the terminal given back, and the
    // exit status is 128 + the signal.
    let full_screen = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    let signals: &[StopSignal] = if full_screen {
        StopSignal::ALL
    } else {
        &[StopSignal::Terminate, StopSignal::Hangup]
    };
    let shutdown = match Shutdown::listen(signals) {
        Ok(s) => s,
        Err(e) => return Exit::failed(anyhow::anyhow!("cannot listen for signals: {e}")),
    };
    let (driver, events, worker) = driver::spawn(parts, session, shutdown.token());
    let (later_tx, later) = mpsc::unbounded_channel();
    let mut notifier = notify::Notifier::new(
        resolved.notifications,
        Arc::new(resolved.hooks.clone()),
        resolved.workspace.clone(),
        Some(later_tx.clone()),
    );
    notifier.terminal = full_screen;
    let ui = Ui {
        notifier,
        resolved,
        app,
        driver,
        events,
        questions: approval::Questions::default(),
        history,
        later_tx,
        later,
        trusted,
        mcp_servers,
    };
    let (home, workspace) = (ui.resolved.home.clone(), ui.resolved.workspace.clone());
    let session_id = ui.app.session_id.clone();
    let front = async move {
        if full_screen {
            tty::run(ui).await
        } else {
            plain::run(ui).await
        }
    };
    let ended = tokio::select! {
        exit = front => Ok(exit),
        signal = shutdown.requested() => Err(signal),
    };
    // However the front end ended (a signal, `/quit`, the end of input), the UI and its
    // driver are dropped by now: the engine task interrupts a running task and closes its
    // turn, or lets a restore finish, before the process ends. A process that ended
    // without this wait would cut the work off where it stood (no result recorded for a
    // running call, a workspace half restored).
    let _ = tokio::time::timeout(STOP_GRACE, worker).await;
    // HTTP sessions of MCP servers are ended (DELETE) before the process goes.
    servers.close().await;
    let exit = match ended {
        Ok(exit) => exit,
        Err(signal) => {
            return shutdown::exit(
                signal,
                &format!(
                    "running commands were killed and the turn was closed in session \
                     {session_id}; continue it with `codesmith resume`"
                ),
            );
        }
    };
    // A session without a conversation is never written, so there may be nothing to resume.
    if matches!(exit, Exit::Ok)
        && let Some(id) =
            codesmith_engine::session::SessionCatalog::new(&home).latest_for(&workspace)
    {
        eprintln!("codesmith: session {id} saved; continue it with `codesmith resume`");
    }
    exit
}

/// Shows a session's recorded usage: its total, and the context fill of its last round.
fn show_recorded_usage(
    status: &mut status::Status,
    (total, last): (codesmith_protocol::Usage, Option<codesmith_protocol::Usage>),
) {
    status.usage = total;
    status.context_tokens = last.map_or(0, |u| u.input_tokens + u.output_tokens);
}

fn open_session(resolved: &Settings, start: Start) -> anyhow::Result<Session> {
    match start {
        Start::New => Ok(Session::create(
            &resolved.home,
            &resolved.workspace,
            setup::provider_label(resolved.provider),
            &resolved.model,
        )?),
        Start::Latest => {
            let id = codesmith_engine::session::SessionCatalog::new(&resolved.home)
                .latest_for(&resolved.workspace)
                .with_context(|| {
                    format!(
                        "no session to resume in {}: run `codesmith` to start one",
                        resolved.workspace.display()
                    )
                })?;
            Ok(Session::resume(&resolved.home, &id)?)
        }
    }
}

/// What the UI says when a task ends in plan mode.
const PLAN_READY: &str = "plan mode: /accept starts the work in auto-edit (/accept auto for \
                          auto), with the plan as its step list; or type to keep planning";

/// The task sent when the person accepts the plan (`/accept`): the plan itself is in the
/// transcript (restated by `update_plan`), so this only says to carry it out.
const ACCEPTED_PLAN_TASK: &str = "The plan is accepted. Carry it out now, step by step: keep \
                                  update_plan current as you go, starting with the plan's first \
                                  step.";

impl Ui {
    /// Facts for slash commands.
    pub(crate) fn facts(&self) -> control::Facts<'_> {
        control::Facts {
            resolved: &self.resolved,
            model: &self.app.status.model,
            approval: &self.app.status.approval,
            session_id: &self.app.session_id,
            verdicts: self.app.verdicts,
            running: self.app.running,
            trusted: &self.trusted,
            mcp_prompts: self.mcp_servers.prompt_help_lines(),
        }
    }

    /// Applies an engine reply to the state; returns the next queued task to
    /// send, if the engine became idle and one is waiting.
    pub(crate) fn on_engine(&mut self, msg: driver::ToUi) -> Option<String> {
        let app = &mut self.app;
        match msg {
            driver::ToUi::Event(Event::TaskFinished { status, .. }) => {
                if status != TaskStatus::Cancelled {
                    self.notifier
                        .notify("CodeSmith: the task ended", &app.session_id);
                }
                if status == TaskStatus::Cancelled {
                    app.interrupted();
                } else {
                    app.task_done();
                    if app.status.approval == codesmith_policy::ApprovalMode::ReadOnly.as_str() {
                        app.info(vec![PLAN_READY.to_string()]);
                    }
                }
                self.questions.clear();
            }
            driver::ToUi::Event(Event::ApprovalRequested(request)) => {
                self.notifier.notify(
                    &format!("CodeSmith: a question waits ({})", request.tool),
                    &app.session_id,
                );
                self.questions.arrived(request);
            }
            driver::ToUi::Event(Event::ApprovalWithdrawn { call_id }) => {
                if self.questions.withdrawn(&call_id) {
                    app.withdraw_approval();
                }
            }
            driver::ToUi::Event(Event::CompactionFinished {
                outcome,
                messages,
                summary,
                before,
                after,
                error,
            }) => app.compaction_done(compaction_line(
                outcome,
                messages,
                summary,
                before,
                after,
                error.as_deref(),
            )),
            driver::ToUi::Event(Event::RestoreFinished {
                task,
                applied,
                report,
                error,
            }) => app.info(restore_lines(
                task,
                applied,
                report.as_ref(),
                error.as_deref(),
                &self.resolved.workspace,
            )),
            driver::ToUi::Event(e) => app.apply(e),
            driver::ToUi::Switched {
                session_id,
                history,
                usage,
                model,
                approval,
            } => {
                if let Some(recorded) = usage {
                    show_recorded_usage(&mut app.status, recorded);
                }
                let changed_session = session_id != app.session_id;
                if let Some(messages) = history {
                    app.clear_transcript();
                    app.load_history(&messages);
                } else if changed_session {
                    app.clear_transcript();
                }
                app.session_id = session_id.clone();
                app.status.model = model.clone();
                app.status.approval = approval.as_str().to_string();
                app.info(vec![format!(
                    "session {session_id} · model {model} · approval {}",
                    approval.as_str()
                )]);
            }
            driver::ToUi::Failed(message) => app.push(app::Entry::Error(message)),
            driver::ToUi::Info(lines) => app.info(lines),
        }
        let app = &mut self.app;
        if app.approval.is_none()
            && let Some(request) = self.questions.next()
        {
            app.ask(request);
        }
        if app.running {
            return None;
        }
        (!app.queued.is_empty()).then(|| app.queued.remove(0))
    }

    /// Answers the approval question on screen.
    pub(crate) fn answer(&mut self, answer: ApprovalAnswer, reason: Option<String>) {
        if let Some(call_id) = self.questions.answered() {
            self.driver.send(Op::Approval {
                call_id,
                answer,
                reason,
            });
        }
        if let Some(request) = self.questions.next() {
            self.app.ask(request);
        }
    }

    /// Interrupts the running work; its questions are withdrawn by the engine.
    pub(crate) fn interrupt(&mut self) {
        self.questions.clear();
        self.driver.interrupt();
    }

    /// The submission for what the user typed: `!cmd` runs `cmd` as the user's own
    /// `exec_shell` call (through the same gate as the model's), anything else is a task;
    /// what its `@path` and `@SERVER:URI` words name is attached on the engine's side
    /// (see `driver`), each shown as a line.
    pub(crate) fn task_op(&mut self, typed: &str) -> Op {
        if let Some(command) = typed.strip_prefix('!')
            && !command.trim().is_empty()
        {
            return Op::UserShell {
                command: command.trim().to_string(),
            };
        }
        Op::UserTask {
            text: typed.to_string(),
            images: Vec::new(),
        }
    }

    /// Sends a task (or a `!cmd`, see [`Ui::task_op`]) to the engine and shows it.
    pub(crate) fn send_task(&mut self, task: String) {
        self.app.start_task(&task);
        let op = self.task_op(&task);
        if !self.driver.send(op) {
            self.app.task_finished();
            self.app.push(app::Entry::Error(
                "the engine stopped; restart codesmith".into(),
            ));
        }
    }

    /// Runs a slash command.
    pub(crate) fn slash(&mut self, cmd: slash::Slash) -> SlashDone {
        let is_accept = matches!(cmd, slash::Slash::Accept(_));
        match control::run(cmd, &self.facts()) {
            control::Reply::Lines(lines) => self.app.info(lines),
            control::Reply::Quit => return SlashDone::Quit,
            control::Reply::Rebuild(r, lines) => {
                if !lines.is_empty() {
                    self.app.info(lines);
                }
                if is_accept {
                    // Sent once the engine runs in its new mode (see `on_engine`).
                    self.app.queued.insert(0, ACCEPTED_PLAN_TASK.to_string());
                }
                self.driver.rebuild(r);
                return SlashDone::AwaitEngine;
            }
            control::Reply::Submit(op) => {
                if matches!(op, Op::Compact) {
                    self.app.start_compaction();
                }
                self.driver.send(op);
                return SlashDone::AwaitEngine;
            }
            control::Reply::Later(future) => {
                let tx = self.later_tx.clone();
                tokio::spawn(async move {
                    let _ = tx.send(future.await);
                });
                self.app.info(vec!["working on it…".to_string()]);
                return SlashDone::AwaitLater;
            }
        }
        SlashDone::Shown
    }

    /// The welcome lines.
    pub(crate) fn welcome(&self) -> Vec<String> {
        vec![
            format!(
                "CodeSmith · {} · session {}",
                self.resolved.workspace.display(),
                self.app.session_id
            ),
            "Type a task and press Enter. /help lists commands; Ctrl-C twice quits.".to_string(),
        ]
    }
}
/// The one line that reports a `/compact`.
fn compaction_line(
    outcome: CompactionOutcome,
    messages: usize,
    summary: bool,
    before: u64,
    after: u64,
    error: Option<&str>,
) -> String {
    match outcome {
        CompactionOutcome::Compacted => format!(
            "compacted {messages} earlier messages into {}: context ~{} → ~{} tokens",
            if summary {
                "a summary"
            } else {
                "a note (no summary could be had)"
            },
            status::compact(before),
            status::compact(after),
        ),
        CompactionOutcome::Discarded => format!(
            "compaction discarded: replacing {messages} earlier messages would have made the context larger (~{} → ~{} tokens); the session is unchanged",
            status::compact(before),
            status::compact(after),
        ),
        CompactionOutcome::NothingToCompact => {
            "nothing to compact yet: the session is still short".to_string()
        }
        CompactionOutcome::Interrupted => {
            "compaction interrupted: the session is unchanged".to_string()
        }
        CompactionOutcome::Failed => {
            format!("compaction failed: {}", error.unwrap_or("unknown error"))
        }
    }
}

/// The lines that report a `/restore N` (a preview, or the restore done).
fn restore_lines(
    task: u32,
    applied: bool,
    report: Option<&RestoreReport>,
    error: Option<&str>,
    workspace: &std::path::Path,
) -> Vec<String> {
    let Some(r) = report else {
        let why = error.unwrap_or("unknown error");
        return vec![if applied {
            format!("restore failed: {why}")
        } else {
            format!("cannot restore task {task}: {why}")
        }];
    };
    if applied {
        return vec![format!(
            "restored {} to before task {task}: {} rewritten, {} removed, {} brought back{}",
            workspace.display(),
            r.restored.len(),
            r.removed.len(),
            r.recreated.len(),
            r.backup
                .as_ref()
                .map(|b| format!("; the state before the restore is kept as commit {b}"))
                .unwrap_or_default()
        )];
    }
    if r.is_empty() {
        return vec![format!(
            "the workspace already matches its state before task {task}; nothing to restore"
        )];
    }
    let mut lines: Vec<String> = crate::commands::sessions::describe(r, workspace)
        .lines()
        .map(str::to_string)
        .collect();
    lines.push(format!("type /restore {task} yes to restore these files"));
    lines
}

#[cfg(test)]
mod snapshots;
