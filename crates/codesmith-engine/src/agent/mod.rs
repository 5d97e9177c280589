//! The agent loop: one task, many model rounds.

use std::sync::Arc;

use codesmith_protocol::{
    ContentBlock, Event, EventSink, Message, Role, StopReason, TaskStatus, Usage,
};
use codesmith_providers::{
    AssistantResponse, ChatRequest, CompleteOptions, Provider, ProviderError, StreamNotice,
};
use codesmith_tools::{CancellationToken, Registry, ToolContext};

use crate::approval::Approver;
use crate::context::{self, CircuitBreaker};
use crate::dispatch::dispatch_calls;
use crate::guard::LoopGuard;
use crate::repair::fake_calls::{StreamScrubber, strip_fake_tool_calls};
use crate::runtime::Runtime;
use crate::session::{Session, SessionError};

mod recovery;

/// Transcript note kind recording why a response was cut short
/// (`{"message": <the provider's or the transport's error text>}`).
pub const INTERRUPTION_NOTE: &str = crate::session::NoteKind::RESPONSE_INTERRUPTED;
/// How the transcript explains a turn that a cancellation ended.
pub const INTERRUPTED: &str = "The turn was interrupted";
/// How the transcript marks an answer an interrupt cut off as it streamed (after its
/// text).
pub const PARTIAL_MARK: &str = "(The turn was interrupted here; this answer is incomplete.)";
/// How the transcript explains tool calls a previous run left without results (it was
/// killed or crashed mid-turn).
const PREVIOUS_RUN_ENDED: &str = "CodeSmith stopped";
pub use recovery::Compaction;

/// Settings of an engine, resolved once by the front end.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Model name sent to the provider.
    pub model: String,
    /// The session's system prompt (byte-stable).
    pub system_prompt: String,
    /// Maximum model rounds per task (`--max-turns`; the CLI's default is a safety bound of 500).
    pub max_turns: u32,
    /// Output-token cap per response, if any.
    pub max_tokens: Option<u32>,
    /// Approval mode.
    pub approval: codesmith_policy::ApprovalMode,
    /// Retry, backoff and watchdog settings for model requests.
    pub complete: CompleteOptions,
    /// Exec-policy rules (user and project files, already merged).
    pub rules: codesmith_policy::Rules,
    /// The `[network]` policy (user config only; never from the project).
    pub network: codesmith_policy::NetworkPolicy,
    /// Subagent settings (`[agents]`: the children's model and per-child caps). The
    /// `agent` tool must be in the registry for the model to delegate at all.
    pub agents: crate::subagent::AgentSettings,
    /// Check success claims in the final text by replaying the task's last
    /// verification command (`[verification] result_claims`, on by default; see [`crate::verify`]).
    pub verify_claims: bool,
    /// File an entry in the project's slop ledger for an `unsubstantiated` or
    /// `verified_fail` verdict (`[verification] slop`, off by default; see
    /// [`codesmith_tools::slop`]).
    pub slop_from_verdicts: bool,
    /// Start read-only, parallel-safe calls while the response still streams (see
    /// `crate::early`; on by default).
    pub early_start: bool,
    /// Task snapshots of the workspace, taken before a task's first write
    /// (`[snapshots] enabled`, on by default; `git` from `PATH`). A subagent never takes
    /// its own: the parent's snapshot, taken before a writing child starts, covers it.
    pub snapshots: crate::snapshot::SnapshotSettings,
    /// The model's context window and the compaction threshold: a request that would
    /// pass it is preceded by a compaction (see [`crate::budget`]).
    pub context: crate::budget::ContextBudget,
    /// The user's hooks (see [`codesmith_tools::hooks`]); a subagent inherits them and runs
    /// the tool hooks only.
    pub hooks: Arc<codesmith_tools::hooks::Hooks>,
}

/// The result of [`Engine::run_task`].
#[derive(Debug, Clone)]
pub struct TaskOutcome {
    /// How it ended.
    pub status: TaskStatus,
    /// The final assistant text (forged tool calls stripped).
    pub final_text: String,
    /// Model rounds used.
    pub turns: u32,
    /// Total usage of the task.
    pub usage: Usage,
    /// The claim verifier's verdict on the final text, when it made a success claim.
    pub verdict: Option<crate::verify::Verdict>,
}

/// Errors that end a task.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The provider failed after retries, or with an error that retrying cannot fix.
    #[error("model request failed: {0}")]
    Provider(#[from] ProviderError),
    /// The transcript could not be written.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// Every recovery level ran and the provider still refused the request as too long:
    /// even the task's own message, the latest message and the tool catalogue do not fit.
    #[error(
        "the task itself is larger than the model's context window: even the task message and \
         the latest message alone (about {tokens} tokens with the system prompt and tools) do \
         not fit. Shorten the task or the input it carries, or use a model with a larger \
         context window"
    )]
    TaskTooLarge {
        /// Estimated tokens of what was last sent.
        tokens: u64,
    },
}

impl EngineError {
    /// The error with what to do about it, by who must act (the `error` event of a task
    /// that failed).
    pub fn with_next_step(&self) -> String {
        use codesmith_providers::ProviderErrorKind as K;
        let EngineError::Provider(p) = self else {
            return self.to_string();
        };
        let next = match p.kind {
            K::Network | K::Timeout => {
                "Check that the server is running and that --base-url (or *_BASE_URL / \
                 config.toml) is right; `codesmith doctor` checks the endpoint."
            }
            K::Auth => {
                "Check the API key (OPENAI_API_KEY, DEEPSEEK_API_KEY or ANTHROPIC_API_KEY, or \
                 config.toml)."
            }
            K::Authorization => {
                "The key may not use this model or endpoint: pick another --model or check the \
                 account."
            }
            K::RateLimit => {
                "The provider is rate-limiting this key: wait a while, then resume with --resume."
            }
            K::ContextLength => {
                "The conversation no longer fits the model's context: start a new session."
            }
            _ => "Try again later, then resume the session with --resume.",
        };
        format!("{self}. {next}")
    }
}

/// Most images one request carries: Anthropic refuses a request with more than 100;
/// the newest ones are sent, older ones as a line saying they were left out.
pub(crate) const MAX_REQUEST_IMAGES: usize = 90;

/// Keeps the newest `max` images of `messages` (attached images and tool results'
/// images); each older one becomes its [`ImagePart::omitted_text`] line (in a tool
/// result, appended to its text). The stored transcript is not changed.
///
/// [`ImagePart::omitted_text`]: codesmith_protocol::ImagePart::omitted_text
pub(crate) fn cap_request_images(messages: &mut [codesmith_protocol::Message], max: usize) {
    use codesmith_protocol::ContentBlock;
    let why = format!("a request carries at most {max} images; older ones are left out");
    let mut kept = 0usize;
    for m in messages.iter_mut().rev() {
        for block in m.content.iter_mut().rev() {
            match block {
                ContentBlock::Image(img) => {
                    if kept < max {
                        kept += 1;
                    } else {
                        *block = ContentBlock::Text {
                            text: img.omitted_text(&why),
                        };
                    }
                }
                ContentBlock::ToolResult(r) if !r.images.is_empty() => {
                    let room = max - kept;
                    let n = r.images.len();
                    if n <= room {
                        kept += n;
                    } else {
                        // The newest `room` images of the result stay (its last ones).
                        let dropped: Vec<_> = r.images.drain(..n - room).collect();
                        kept = max;
                        for img in dropped {
                            r.content.push('\n');
                            r.content.push_str(&img.omitted_text(&why));
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// An agent session bound to a provider, a tool registry and a transcript.
pub struct Engine {
    provider: Arc<dyn Provider>,
    session: Session,
    config: EngineConfig,
    runtime: Runtime,
    breaker: CircuitBreaker,
    /// The user message that started the running task: context recovery keeps it verbatim.
    current_task: Option<Message>,
    /// Images attached to the next task's message ([`Engine::attach_images`]).
    attached: Vec<codesmith_protocol::ImagePart>,
    /// How full the next request is (see [`crate::budget`]).
    fill: crate::budget::Fill,
    /// The round of the running task that last compacted ahead of the threshold, and
    /// whether that compaction escalated.
    compacted_at: Option<(u32, bool)>,
    /// Whether the next compaction note tells the model to read in pages (escalation).
    paging_hint: bool,
    /// The stage of the last transcript rewrite (`clear_tool_results`, `summary`, `trim`).
    last_stage: &'static str,
    /// The model of auxiliary calls (compaction summaries) and its provider; `None`: the
    /// session's own (see [`Engine::set_utility_model`]).
    utility: Option<(Arc<dyn Provider>, String)>,
    /// Whether the `SessionStart` hooks ran for this engine.
    hooks_started: bool,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("session", &self.session.id())
            .field("config", &self.config)
            .finish()
    }
}

impl Engine {
    /// A new engine over `session` (fresh or resumed).
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: Registry,
        ctx: Arc<ToolContext>,
        approver: Arc<dyn Approver>,
        session: Session,
        config: EngineConfig,
    ) -> Self {
        let home = ctx.home.clone();
        // Tools answer with images only for a model that reads them.
        let ctx = if ctx.images == provider.accepts_images() {
            ctx
        } else {
            let mut own = (*ctx).clone();
            own.images = provider.accepts_images();
            Arc::new(own)
        };
        let ctx_workspace = ctx.workspace.clone();
        reactivate(&tools, session.messages());
        let provider_label = match session.meta() {
            crate::session::Record::Meta { provider, .. } => provider.clone(),
            _ => provider.name().to_string(),
        };
        let delegation = crate::subagent::Delegation::root(
            Arc::clone(&provider),
            config.clone(),
            session.id().to_string(),
            provider_label,
        );
        let runtime = Runtime {
            tools,
            ctx,
            guard: LoopGuard::default(),
            approvals: Default::default(),
            store: Some(Arc::new(crate::approval::ApprovalStore::open(&home))),
            approver,
            mode: config.approval,
            rules: Arc::new(config.rules.clone()),
            network: Arc::new(config.network.clone()),
            verify: Default::default(),
            snapshots: crate::snapshot::TaskSnapshots::new(
                config.snapshots.clone(),
                session.id(),
                session.recorded_tasks(),
            ),
            delegation: Some(delegation),
            delegated: Vec::new(),
            ran_later: Vec::new(),
            shown: Vec::new(),
            early: Default::default(),
            hooks: crate::hooks::HookSite {
                hooks: Arc::clone(&config.hooks),
                session_id: session.id().to_string(),
                transcript: session.path().to_path_buf(),
                workspace: ctx_workspace,
            },
        };
        Engine {
            provider,
            session,
            config,
            runtime,
            breaker: CircuitBreaker::default(),
            current_task: None,
            attached: Vec::new(),
            fill: crate::budget::Fill::default(),
            compacted_at: None,
            paging_hint: false,
            last_stage: "trim",
            utility: None,
            hooks_started: false,
        }
    }

    /// Sends auxiliary calls (compaction summaries) to `model` on `provider` (the
    /// `[utility_model]`) instead of the session's model. Their usage is recorded apart, as
    /// `usage` notes marked `"utility": true`, and never counted in a task's usage.
    pub fn set_utility_model(&mut self, provider: Arc<dyn Provider>, model: String) {
        self.utility = Some((provider, model));
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Ends the engine and hands back its session (still open and locked), for a front
    /// end that rebuilds the engine with other settings. The session in memory always
    /// matches its file: every change is written before it is applied, with no await
    /// in between, so this holds even after a task future was dropped mid-way.
    pub fn into_session(self) -> Session {
        self.session
    }

    /// Makes this engine a subagent of type `role` at `depth`.
    pub(crate) fn set_delegation(
        &mut self,
        settings: crate::subagent::AgentSettings,
        depth: u32,
        role: crate::subagent::AgentType,
        withheld: Vec<&'static str>,
        custom: Option<String>,
    ) {
        if let Some(d) = &mut self.runtime.delegation {
            d.settings = settings;
            d.depth = depth;
            d.role = Some(role);
            d.withheld = withheld;
            d.custom = custom;
        }
    }

    /// Replaces who answers approval requests (see [`Engine::spawn`]).
    pub(crate) fn set_approver(&mut self, approver: Arc<dyn Approver>) {
        self.runtime.approver = approver;
    }

    /// Closes the turn of a task whose future was dropped (an interrupt it did not honour
    /// in time): every open tool call gets a result, the transcript is synced, and the
    /// processes tools keep between calls end. The session in memory matches its file
    /// (every change is written before it is applied), so this holds mid-way too.
    pub(crate) fn abandon_task(&mut self) -> Result<(), EngineError> {
        self.end_tools();
        self.session.close_open_turn(INTERRUPTED)?;
        self.session.sync()?;
        Ok(())
    }

    fn end_tools(&self) {
        for name in self.runtime.tools.names() {
            if let Some(tool) = self.runtime.tools.get(name) {
                tool.task_ended(&self.runtime.ctx);
            }
        }
    }

    /// Returns the workspace to the state before task `task` of this session (`/restore
    /// N` of an interactive front end, `Op::Restore`) and records the restore in the
    /// transcript; with `apply: false` only reports what would change. Ask the user
    /// before applying. The same path as `codesmith sessions restore`
    /// ([`crate::snapshot::restore_task`]), with this engine's snapshot settings.
    ///
    /// # Errors
    /// See [`crate::snapshot::SnapshotError`].
    pub async fn restore_task(
        &mut self,
        task: u32,
        apply: bool,
    ) -> Result<codesmith_protocol::RestoreReport, crate::snapshot::SnapshotError> {
        let settings = self.runtime.snapshots.settings.clone();
        let (home, workspace) = (
            self.runtime.ctx.home.clone(),
            self.runtime.ctx.workspace.clone(),
        );
        crate::snapshot::restore_task(&settings, &home, &mut self.session, &workspace, task, apply)
            .await
    }

    /// Runs `task` until the model ends its turn without tool calls, the turn
    /// limit is reached, or the loop guard stops it. Events go to `sink` as
    /// they happen. The first turn of a task whose text imitated a tool call
    /// (see [`crate::repair::fake_calls`]) without making a real one does not end
    /// it: nothing in the text runs, and the model is told so in a runtime event
    /// and gets one more round; a second such turn ends the task.
    ///
    /// # Errors
    /// [`EngineError::Provider`] when the model cannot be reached after retries;
    /// [`EngineError::Session`] when the transcript cannot be written.
    pub async fn run_task(
        &mut self,
        task: &str,
        sink: &mut EventSink<'_>,
    ) -> Result<TaskOutcome, EngineError> {
        self.run_task_cancellable(task, CancellationToken::new(), sink)
            .await
    }

    /// Attaches `images` to the next task's message, after its text (`exec --image`,
    /// [`codesmith_protocol::Op::UserTask`]'s images). The provider sends them as image
    /// parts, or as a short text saying why not to a model that does not read images.
    pub fn attach_images(&mut self, images: Vec<codesmith_protocol::ImagePart>) {
        self.attached.extend(images);
    }

    /// [`Engine::run_task`] that stops when `cancel` fires: a model request in flight is
    /// dropped, running tool calls are stopped through the same token (a shell command is
    /// killed with its whole tree, see [`codesmith_tools::call_tool`]), calls not yet run
    /// are answered as cancelled, and the turn is closed in the transcript, which is
    /// synced before this returns [`TaskStatus::Cancelled`].
    ///
    /// # Errors
    /// As [`Engine::run_task`].
    pub async fn run_task_cancellable(
        &mut self,
        task: &str,
        cancel: CancellationToken,
        sink: &mut EventSink<'_>,
    ) -> Result<TaskOutcome, EngineError> {
        let outcome = self.run_task_inner(task, cancel, sink).await;
        // Whatever ended the task, processes tools keep between calls end with it.
        self.end_tools();
        // The files it wrote that another program runs later, which nobody was asked
        // about, are named last.
        if let Some(message) = self.runtime.take_ran_later() {
            sink(Event::Notice { message });
        }
        outcome
    }

    /// Runs `command` as the user's own `exec_shell` call (see
    /// [`codesmith_protocol::Op::UserShell`]): planned, gated and run by the same pipeline
    /// as the model's calls, stopped when `cancel` fires. The transcript gets a runtime
    /// event with the command and the text of its result, for the model to read with the
    /// next task, and `shown` notes of the call and its result for a resumed session.
    /// Returns `Completed`, or `Cancelled` when interrupted.
    ///
    /// # Errors
    /// [`EngineError::Session`] when the transcript cannot be written.
    pub async fn run_user_shell(
        &mut self,
        command: &str,
        cancel: CancellationToken,
        sink: &mut EventSink<'_>,
    ) -> Result<TaskStatus, EngineError> {
        self.session.answer_open_calls(PREVIOUS_RUN_ENDED)?;
        self.runtime.ctx = Arc::new(self.runtime.ctx.with_cancel(cancel.clone()));
        let args = serde_json::json!({ "command": command });
        let call = codesmith_protocol::ToolCall {
            id: format!("user_shell_{}", self.session.messages().len()),
            name: codesmith_tools::Tool::name(&codesmith_tools::shell::ExecShell).to_string(),
            arguments: args.to_string(),
        };
        let shown_call = Event::ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: args.clone(),
        };
        let results = dispatch_calls(
            &mut self.runtime,
            vec![(call, Some(args))],
            &StopReason::EndTurn,
            sink,
        )
        .await;
        self.end_tools();
        let text = results
            .first()
            .map(|r| r.content.clone())
            .unwrap_or_default();
        self.session.note(
            crate::session::NoteKind::Shown,
            serde_json::json!({ "event": shown_call, "in_place": true }),
        )?;
        for mut shown in std::mem::take(&mut self.runtime.shown) {
            shown["in_place"] = serde_json::Value::Bool(true);
            self.session.note(crate::session::NoteKind::Shown, shown)?;
        }
        self.session
            .push(Message::user_text(crate::replay::user_shell_event_text(
                command, &text,
            )))?;
        self.session.sync()?;
        Ok(if cancel.is_cancelled() {
            TaskStatus::Cancelled
        } else {
            TaskStatus::Completed
        })
    }

    async fn run_task_inner(
        &mut self,
        task: &str,
        cancel: CancellationToken,
        sink: &mut EventSink<'_>,
    ) -> Result<TaskOutcome, EngineError> {
        for message in self.session.take_notices() {
            sink(Event::Notice { message });
        }
        // Tool calls a killed process left without results are answered first, so the
        // new task's message follows a transcript the providers accept.
        self.session.answer_open_calls(PREVIOUS_RUN_ENDED)?;
        self.runtime.ctx = Arc::new(self.runtime.ctx.with_cancel(cancel.clone()));
        let mut message = match self.task_hooks(task, sink).await {
            Ok(message) => message,
            Err(reason) => {
                let message = format!(
                    "A UserPromptSubmit hook blocked this task; nothing was sent to the model: \
                     {reason}"
                );
                sink(Event::Error {
                    message: message.clone(),
                });
                return Ok(TaskOutcome {
                    status: TaskStatus::Failed,
                    final_text: message,
                    turns: 0,
                    usage: Usage::default(),
                    verdict: None,
                });
            }
        };
        message.content.extend(
            std::mem::take(&mut self.attached)
                .into_iter()
                .map(ContentBlock::Image),
        );
        self.current_task = Some(message.clone());
        if self.runtime.mode == codesmith_policy::ApprovalMode::ReadOnly {
            message
                .content
                .push(codesmith_protocol::ContentBlock::Text {
                    text: crate::approval::PLAN_MODE_NOTE.to_string(),
                });
        }
        self.session.push(message)?;
        let task_no = self.runtime.snapshots.begin_task();
        self.session.note(
            crate::session::NoteKind::TaskStart,
            serde_json::json!({ "task": task_no }),
        )?;
        self.runtime.verify.begin_task();
        self.runtime.guard.begin_task(&self.runtime.ctx.workspace);
        self.compacted_at = None;
        let mut usage = Usage::default();
        // Whether the model was already told, this task, that its text imitated a tool call.
        let mut nudged = false;
        // How often a Stop hook sent the model back to work in this task.
        let mut stop_blocks = 0u32;
        for turn in 1..=self.config.max_turns {
            self.compact_ahead(turn, sink).await?;
            let estimated_input_tokens = self.estimate_input_tokens();
            sink(Event::TurnStarted {
                turn,
                estimated_input_tokens,
            });
            // The answer as it streamed, kept when an interrupt cuts it off.
            let partial = std::sync::Mutex::new(String::new());
            let mut tee = |event: Event| {
                let mut text = partial
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match &event {
                    Event::AssistantText { delta } => text.push_str(delta),
                    // A retried request starts its answer again.
                    Event::Retry { .. } => text.clear(),
                    _ => {}
                }
                drop(text);
                sink(event);
            };
            let response = tokio::select! {
                response = self.request_with_recovery(&mut tee) => Some(response?),
                () = cancel.cancelled() => None,
            };
            let Some(response) = response else {
                let partial = partial
                    .into_inner()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                self.keep_partial_answer(&partial)?;
                return self.cancelled(turn, usage);
            };
            if let Some(why) = &response.interruption {
                self.report_interruption(why, sink)?;
            }
            let round_usage = response.usage;
            usage.add(&round_usage);
            let stop = response.stop_reason.clone();
            let cut_off = response.interruption.is_some();
            let refusal = response.refusal;
            let (message, final_text, calls, imitations) = assistant_message(response);
            let stop = judged_stop(
                stop,
                codesmith_providers::misreports_length_stop(self.provider.name()),
                !calls.is_empty(),
                calls.iter().all(|(_, parsed)| parsed.is_some()),
            );
            // A turn whose text imitated a tool call and made no real one gets one more
            // round per task (not after a cut-off stream, nor at the turn limit), with a
            // runtime event at the transcript's tail saying why: nothing in text ever runs.
            let nudge = imitations > 0
                && calls.is_empty()
                && !nudged
                && stop != StopReason::Interrupted
                && turn < self.config.max_turns;
            if imitations > 0 {
                sink(Event::Notice {
                    message: imitation_notice(imitations, nudge),
                });
            }
            self.session.push(message)?;
            self.fill.reported(&round_usage, self.session.messages());
            // Recorded so a resumed session can show what it has used and how full it is.
            self.session.note(
                crate::session::NoteKind::Usage,
                serde_json::json!({ "turn": turn, "usage": round_usage }),
            )?;

            self.session.sync()?;
            sink(Event::TurnCompleted {
                turn,
                stop_reason: stop.clone(),
                usage: round_usage,
                refusal,
            });
            if nudge {
                nudged = true;
                self.session.push(Message::user_text(
                    crate::repair::fake_calls::imitation_event_text(),
                ))?;
                self.session.sync()?;
                continue;
            }
            if calls.is_empty()
                && stop == StopReason::EndTurn
                && turn < self.config.max_turns
                && stop_blocks < crate::hooks::MAX_STOP_CONTINUATIONS
                && let Some(reason) = self.stop_hooks(&final_text, stop_blocks > 0, sink).await
            {
                stop_blocks += 1;
                self.session.push(Message::user_text(format!(
                    "A Stop hook of the user sent you back to work before ending: {reason}"
                )))?;
                self.session.sync()?;
                continue;
            }
            if calls.is_empty() {
                if stop.is_truncation() {
                    let config = self.runtime.ctx.home.join("config.toml");
                    let create = if config.exists() {
                        ""
                    } else {
                        " (the file does not exist yet: create it with that one line)"
                    };
                    sink(Event::Notice {
                        message: format!(
                            "The answer was cut off at the output-token limit; raise it with the \
                             top-level key `max_output_tokens = N` in {}{create}, or ask the model \
                             to continue.",
                            config.display()
                        ),
                    });
                }
                let status = if stop == StopReason::Interrupted {
                    TaskStatus::Interrupted
                } else {
                    TaskStatus::Completed
                };
                let verdict = if status == TaskStatus::Completed && self.config.verify_claims {
                    let (rt, model) = (&mut self.runtime, &self.config.model);
                    let slop = self.config.slop_from_verdicts;
                    crate::verify::conclude(rt, &mut self.session, &final_text, model, slop, sink)
                        .await?
                } else {
                    None
                };
                return Ok(TaskOutcome {
                    status,
                    final_text,
                    turns: turn,
                    usage,
                    verdict,
                });
            }
            let plan_calls = crate::plan::calls_in(&calls);
            if cut_off || stop.is_truncation() || stop == StopReason::Interrupted {
                // A cut-off response: nothing started early counts.
                self.runtime.early.discard();
            }
            let results = dispatch_calls(&mut self.runtime, calls, &stop, sink).await;
            self.runtime.early.discard();
            let plan = crate::plan::latest_accepted(&plan_calls, &results);
            let mut content: Vec<ContentBlock> =
                results.into_iter().map(ContentBlock::ToolResult).collect();
            if let Some(note) = self.record_plan(plan, sink)? {
                // Restated at the tail, in the message that answers the call.
                content.push(ContentBlock::Text { text: note });
            }
            // What the results showed besides the model's text, so a resume shows it too.
            for shown in std::mem::take(&mut self.runtime.shown) {
                self.session.note(crate::session::NoteKind::Shown, shown)?;
            }
            self.session.push(Message {
                role: Role::User,
                content,
            })?;
            // Model requests the tools made (child calls) count in the totals too.
            let child_usage = self.runtime.ctx.child_usage.take();
            if child_usage != Usage::default() {
                usage.add(&child_usage);
                self.session.note(
                    crate::session::NoteKind::Usage,
                    serde_json::json!({ "turn": turn, "usage": child_usage, "child_calls": true }),
                )?;
            }
            // Children's rounds count into this task's usage; the notes link their sessions.
            for child in std::mem::take(&mut self.runtime.delegated) {
                usage.add(&child.usage);
                self.session
                    .note(crate::session::NoteKind::Subagent, child.note())?;
            }
            self.session.sync()?;
            if cancel.is_cancelled() {
                return self.cancelled(turn, usage);
            }
            if self.runtime.guard.must_stop() {
                return Ok(self.stopped(TaskStatus::TooManyFailures, turn, usage, sink));
            }
        }
        Ok(self.stopped(TaskStatus::TurnLimit, self.config.max_turns, usage, sink))
    }

    /// Whether this engine is the foreground agent (subagents run only the tool hooks).
    fn is_foreground(&self) -> bool {
        self.runtime
            .delegation
            .as_ref()
            .is_none_or(|d| d.depth == 0)
    }

    /// The task's message after the `SessionStart` hooks (the first task of this engine)
    /// and the `UserPromptSubmit` hooks ran: `task`, then the context they printed. `Err`
    /// with the reason when a prompt hook blocked it.
    async fn task_hooks(
        &mut self,
        task: &str,
        sink: &mut EventSink<'_>,
    ) -> Result<Message, String> {
        use codesmith_tools::hooks::HookEvent;
        let mut message = Message::user_text(task);
        if !self.is_foreground() || self.runtime.hooks.hooks.is_empty() {
            return Ok(message);
        }
        let site = self.runtime.hooks.clone();
        let mut blocks = Vec::new();
        if !self.hooks_started {
            self.hooks_started = true;
            let tools = self.runtime.tools.names();
            for message in site.hooks.matcher_warnings(&tools) {
                sink(codesmith_protocol::Event::Notice { message });
            }
            let source = if self.session.messages().is_empty() {
                "startup"
            } else {
                "resume"
            };
            let fields = serde_json::json!({ "source": source });
            let said = site
                .run(HookEvent::SessionStart, None, object(fields), sink)
                .await;
            blocks.extend(crate::hooks::context_blocks(
                HookEvent::SessionStart,
                &said.context,
            ));
        }
        let fields = serde_json::json!({ "prompt": task });
        let said = site
            .run(HookEvent::UserPromptSubmit, None, object(fields), sink)
            .await;
        if let Some((reason, _)) = said.block {
            return Err(reason);
        }
        blocks.extend(crate::hooks::context_blocks(
            HookEvent::UserPromptSubmit,
            &said.context,
        ));
        message
            .content
            .extend(blocks.into_iter().map(|text| ContentBlock::Text { text }));
        Ok(message)
    }

    /// Runs the `Stop` hooks of the foreground agent; `Some(reason)` when one sends the
    /// model back to work.
    async fn stop_hooks(
        &self,
        final_text: &str,
        active: bool,
        sink: &mut EventSink<'_>,
    ) -> Option<String> {
        if !self.is_foreground() {
            return None;
        }
        let fields = serde_json::json!({
            "stop_hook_active": active,
            "last_assistant_message": final_text,
        });
        self.runtime
            .hooks
            .run(
                codesmith_tools::hooks::HookEvent::Stop,
                None,
                object(fields),
                sink,
            )
            .await
            .block
            .map(|(reason, _)| reason)
    }

    /// Records `plan` when it differs from the session's (a note, a `plan_updated`
    /// event) and returns the runtime event that restates it; `None` when there is no
    /// new plan or its steps are unchanged.
    fn record_plan(
        &mut self,
        plan: Option<crate::plan::Plan>,
        sink: &mut EventSink<'_>,
    ) -> Result<Option<String>, EngineError> {
        let Some(plan) = plan else {
            return Ok(None);
        };
        if self.session.plan().is_some_and(|p| p.same_steps(&plan)) {
            return Ok(None);
        }
        let note = plan.runtime_event_text(self.task_text().as_deref());
        sink(Event::PlanUpdated {
            explanation: plan.explanation.clone(),
            plan: plan.plan.clone(),
        });
        self.session.set_plan(plan)?;
        Ok(Some(note))
    }

    /// The running task's text, as the user wrote it.
    fn task_text(&self) -> Option<String> {
        self.current_task.as_ref().map(|m| m.text())
    }

    /// The session's plan restated for a compaction note (a blank line, then the runtime
    /// event), or nothing when the model has set no plan.
    fn plan_for_note(&self) -> String {
        self.session.plan().map_or_else(String::new, |p| {
            format!("\n\n{}", p.runtime_event_text(self.task_text().as_deref()))
        })
    }

    /// What the provider said when a response was cut short (its error
    /// message, already scrubbed of secrets, or the transport's) reaches the
    /// user as a notice and stays in the transcript as a note.
    fn report_interruption(
        &mut self,
        why: &str,
        sink: &mut EventSink<'_>,
    ) -> Result<(), EngineError> {
        sink(Event::Notice {
            message: format!("The model's answer was cut off: {why}"),
        });
        self.session.note(
            crate::session::NoteKind::ResponseInterrupted,
            serde_json::json!({ "message": why }),
        )?;
        Ok(())
    }

    /// Keeps the answer an interrupt cut off while it streamed (`partial`, the text the
    /// front end showed) as the model's message, marked as cut off, so the model and a
    /// resumed session read what the person saw. Nothing when no text had streamed.
    fn keep_partial_answer(&mut self, partial: &str) -> Result<(), EngineError> {
        if partial.trim().is_empty()
            || !self
                .session
                .messages()
                .last()
                .is_some_and(|m| m.role == Role::User)
        {
            return Ok(());
        }
        self.session.push(Message::assistant_text(format!(
            "{}\n\n{PARTIAL_MARK}",
            partial.trim_end()
        )))?;
        Ok(())
    }

    /// Closes a cancelled turn in the transcript (every call has its result, an assistant
    /// note ends the turn) and syncs it.
    fn cancelled(&mut self, turns: u32, usage: Usage) -> Result<TaskOutcome, EngineError> {
        self.session.close_open_turn(INTERRUPTED)?;
        self.session.sync()?;
        Ok(TaskOutcome {
            status: TaskStatus::Cancelled,
            final_text: "The task was interrupted; what ran so far is in the transcript.".into(),
            turns,
            usage,
            verdict: None,
        })
    }

    fn stopped(
        &self,
        status: TaskStatus,
        turns: u32,
        usage: Usage,
        sink: &mut EventSink<'_>,
    ) -> TaskOutcome {
        let message = match status {
            TaskStatus::TooManyFailures => format!(
                "Stopped after {} consecutive failed tool calls; the model was not making progress. {}",
                crate::guard::STOP_AFTER_FAILURES,
                self.runtime.guard.progress().sentence()
            ),
            _ => format!(
                "Stopped after {turns} model rounds without finishing (the turn limit, a safety bound). {} \
                 Resume the session to continue, or raise the limit with --max-turns.",
                self.runtime.guard.progress().sentence()
            ),
        };
        sink(Event::Error {
            message: message.clone(),
        });
        TaskOutcome {
            status,
            final_text: message,
            turns,
            usage,
            verdict: None,
        }
    }

    /// The next request: the session's transcript, the system prompt and the catalogue.
    fn chat_request(&self) -> ChatRequest {
        let mut messages = self.session.messages().to_vec();
        cap_request_images(&mut messages, MAX_REQUEST_IMAGES);
        ChatRequest {
            model: self.config.model.clone(),
            system: self.config.system_prompt.clone(),
            messages,
            tools: self.runtime.tools.specs(),
            max_tokens: self.config.max_tokens,
            temperature: None,
            stop: Vec::new(),
            prompt_cache_key: Some(prompt_cache_key(self.session.id())),
        }
    }

    /// Bytes of the tool catalogue as sent now: it grows when a deferred tool is loaded
    /// or a server adds tools, so it is measured, not remembered.
    fn catalog_bytes(&self) -> usize {
        serde_json::to_string(&self.runtime.tools.specs()).map_or(0, |t| t.len())
    }

    /// Estimated tokens of the tool catalogue as sent now.
    pub(super) fn catalog_tokens(&self) -> u64 {
        codesmith_protocol::approx_tokens(self.catalog_bytes())
    }

    /// Bytes of the system prompt and the tool catalogue as sent now.
    pub(super) fn fixed_bytes(&self) -> u64 {
        (self.catalog_bytes() + self.config.system_prompt.len()) as u64
    }

    /// Input tokens the next request is expected to cost: the provider's own estimate
    /// when it has one (it knows how it renders the request), else the rough estimate
    /// ([`codesmith_protocol::approx_tokens`]) of the system prompt, the transcript and the JSON catalogue.
    fn estimate_input_tokens(&self) -> u64 {
        self.provider
            .estimate_input_tokens(&self.chat_request())
            .unwrap_or_else(|| {
                context::estimate_tokens(&self.config.system_prompt, self.session.messages())
                    + self.catalog_tokens()
            })
    }

    /// One model request with retries, streaming deltas to `sink`.
    async fn request(&self, sink: &mut EventSink<'_>) -> Result<AssistantResponse, ProviderError> {
        let request = self.chat_request();
        self.runtime.early.discard();

        // Forged calls never reach the front ends as the model's prose: the one scrubber
        // strips them from the text deltas as they stream (holding back what may be the
        // start of one), the same way the transcript's text is stripped.
        let mut scrubber = StreamScrubber::default();
        let mut on_notice = |notice: StreamNotice| match notice {
            StreamNotice::TextDelta(delta) => {
                let shown = scrubber.push(&delta);
                if !shown.is_empty() {
                    sink(Event::AssistantText { delta: shown });
                }
            }
            StreamNotice::CallReady {
                id,
                name,
                arguments,
            } => {
                if self.config.early_start {
                    crate::early::EarlyStarts::offer(&self.runtime, &id, &name, arguments);
                }
            }
            other => {
                if let Some(event) = notice_event(other) {
                    sink(event);
                }
            }
        };
        let response = codesmith_providers::complete(
            self.provider.as_ref(),
            &request,
            &self.config.complete,
            &mut on_notice,
        )
        .await;
        let rest = scrubber.finish();
        if !rest.is_empty() {
            sink(Event::AssistantText { delta: rest });
        }
        response
    }
}

/// The event a stream notice becomes; `None` for one that is no event of its own (a
/// call whose arguments are complete, which early start acts on).
fn notice_event(notice: StreamNotice) -> Option<Event> {
    Some(match notice {
        StreamNotice::TextDelta(delta) => Event::AssistantText { delta },
        StreamNotice::ThinkingDelta(delta) => Event::Thinking { delta },
        StreamNotice::Notice(message) => Event::Notice { message },
        StreamNotice::CallReady { .. } => return None,
        StreamNotice::Retry {
            attempt,
            wait_ms,
            reason,
        } => Event::Retry {
            attempt,
            wait_ms,
            reason,
        },
    })
}

type PendingCalls = Vec<(codesmith_protocol::ToolCall, Option<serde_json::Value>)>;

/// The notice of `count` imitation tool calls removed from a turn's text; `nudged`: the
/// model gets one more round to make the real call.
fn imitation_notice(count: usize, nudged: bool) -> String {
    let what = format!(
        "Removed {count} imitation tool call(s) from the model's text; they were not executed (only real \
         tool calls are)."
    );
    if nudged {
        format!(
            "{what} The model was told to use the tool-calling interface and gets one more round."
        )
    } else {
        what
    }
}

/// Builds the transcript message from a response; strips forged calls from its text
/// and returns how many it removed.
fn assistant_message(response: AssistantResponse) -> (Message, String, PendingCalls, usize) {
    let mut content = Vec::new();
    if !response.thinking.is_empty() {
        content.push(ContentBlock::Thinking {
            text: response.thinking,
        });
    }
    let stripped = strip_fake_tool_calls(&response.text);
    if !stripped.text.is_empty() {
        content.push(ContentBlock::Text {
            text: stripped.text.clone(),
        });
    }
    let mut calls = Vec::new();
    for reduced in response.tool_calls {
        content.push(ContentBlock::ToolCall(reduced.call.clone()));
        calls.push((reduced.call, reduced.parsed));
    }
    (
        Message {
            role: Role::Assistant,
            content,
        },
        stripped.text,
        calls,
        stripped.removed,
    )
}

/// Re-activates the deferred tools that `tool_search` loaded earlier in this transcript
/// (their results carry the `activated` list in their meta: the `[meta]` line of the
/// model's text, or the whole envelope in older transcripts), in the same order, so a
/// resumed session sends the same catalogue it sent before. Only results of
/// `tool_search` calls are read, so no other tool's output can activate anything.
fn reactivate(tools: &Registry, history: &[codesmith_protocol::Message]) {
    use codesmith_protocol::ContentBlock;
    let mut searches = std::collections::HashSet::new();
    for message in history {
        for block in &message.content {
            match block {
                ContentBlock::ToolCall(call)
                    if call.name == codesmith_tools::deferred::TOOL_SEARCH =>
                {
                    searches.insert(call.id.clone());
                }
                ContentBlock::ToolResult(result)
                    if !result.is_error && searches.contains(&result.call_id) =>
                {
                    tools.activate(&activated_names(&result.content));
                }
                _ => {}
            }
        }
    }
}

/// The `activated` list of a `tool_search` result's text.
fn activated_names(content: &str) -> Vec<String> {
    let meta = match serde_json::Deserializer::from_str(content)
        .into_iter::<serde_json::Value>()
        .next()
    {
        Some(Ok(envelope)) if envelope.get("meta").is_some() => envelope["meta"].clone(),
        _ => content
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix("[meta] "))
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default(),
    };
    meta.get(codesmith_tools::deferred::ACTIVATED_KEY)
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn object(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// The provider prompt-cache key of a session: stable for its whole life (every
/// request of the session shares one cached prefix), and at most 64 bytes.
pub(crate) fn prompt_cache_key(session_id: &str) -> String {
    let mut key = format!("codesmith-{session_id}");
    let mut end = key.len().min(64);
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    key.truncate(end);
    key
}

/// The stop reason the truncation gate acts on: the wire's, except that a length stop
/// from a provider known to misreport it (`misreports`, see
/// [`codesmith_providers::LENGTH_STOP_MISREPORTED_BY`]) whose calls all carry complete
/// arguments (`all_complete`: every call's arguments parsed strictly) is taken as the end
/// it really was (`tool_use` with calls, else `end_turn`). Arguments that do not parse
/// keep the length stop, so the gate refuses them as cut off.
pub(crate) fn judged_stop(
    stop: StopReason,
    misreports: bool,
    has_calls: bool,
    all_complete: bool,
) -> StopReason {
    if !misreports || !stop.is_truncation() || !all_complete {
        return stop;
    }
    if has_calls {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    }
}

#[cfg(test)]
mod stop_tests {
    use super::*;

    #[test]
    fn the_misreport_table_is_empty_and_only_a_listed_provider_is_believed() {
        assert!(codesmith_providers::LENGTH_STOP_MISREPORTED_BY.is_empty());
        assert!(!codesmith_providers::misreports_length_stop("openai"));
        // Not listed: the length stop stands.
        assert_eq!(
            judged_stop(StopReason::MaxTokens, false, true, true),
            StopReason::MaxTokens
        );
        // Listed, complete arguments: the turn ended normally.
        assert_eq!(
            judged_stop(StopReason::MaxTokens, true, true, true),
            StopReason::ToolUse
        );
        assert_eq!(
            judged_stop(StopReason::MaxTokens, true, false, true),
            StopReason::EndTurn
        );
        // Listed, but an argument was cut: still a cut-off turn, the gate refuses it.
        assert_eq!(
            judged_stop(StopReason::MaxTokens, true, true, false),
            StopReason::MaxTokens
        );
    }
}

#[cfg(test)]
mod image_cap_tests {
    use super::*;
    use codesmith_protocol::{ContentBlock, ImagePart, Message, Role, ToolResult};

    fn result_with(n: usize, tag: u8) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult {
                call_id: format!("c{tag}"),
                content: "shot".into(),
                is_error: false,
                images: (0..n)
                    .map(|i| ImagePart::new("image/png", vec![tag, i as u8]))
                    .collect(),
            })],
        }
    }

    fn images(messages: &[Message]) -> usize {
        messages
            .iter()
            .flat_map(|m| &m.content)
            .map(|b| match b {
                ContentBlock::ToolResult(r) => r.images.len(),
                ContentBlock::Image(_) => 1,
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn a_request_keeps_the_newest_images_under_the_cap() {
        // Three results of 40 images: 120 in the conversation, more than Anthropic's 100.
        let mut messages = vec![result_with(40, 1), result_with(40, 2), result_with(40, 3)];
        let newest = messages.clone();
        cap_request_images(&mut messages, MAX_REQUEST_IMAGES);
        assert_eq!(images(&messages), MAX_REQUEST_IMAGES);
        // The newest two results whole, the oldest keeps its last 10; the 30 left out
        // are named in its text.
        assert_eq!(messages[1..], newest[1..]);
        let ContentBlock::ToolResult(r) = &messages[0].content[0] else {
            panic!("not a result");
        };
        assert_eq!(r.images.len(), 10);
        assert_eq!(
            r.content.matches("[image omitted").count(),
            30,
            "{}",
            r.content
        );
        // An attached image counts too; under the cap nothing changes.
        let mut small = vec![
            Message {
                role: Role::User,
                content: vec![ContentBlock::Image(ImagePart::new("image/png", vec![9]))],
            },
            result_with(2, 4),
        ];
        let before = small.clone();
        cap_request_images(&mut small, 3);
        assert_eq!(small, before);
        cap_request_images(&mut small, 2);
        assert!(
            matches!(&small[0].content[0], ContentBlock::Text { text } if text.contains("at most 2 images"))
        );
    }
}
