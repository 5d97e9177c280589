//! The UI state and its reducer: engine events and key presses in, a state
//! the view draws out. No I/O here.

use std::time::Instant;

use codesmith_engine::replay::Replayed;
use codesmith_protocol::Event;
use codesmith_protocol::{ApprovalAnswer, ApprovalRequest};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Line;

use super::approval::Prompt;
use super::input::{Editor, EditorAction};
use super::slash::{self, Parsed, Slash};
use super::status::Status;
use super::theme::Theme;
use crate::render::{diff_lines, error_line, first_line, key_argument};

/// How a tool call stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolStatus {
    /// Dispatched, no result yet.
    Running,
    /// Finished successfully.
    Ok,
    /// Refused or failed: `CODE: message` from the result's typed error.
    Failed(String),
}

/// One tool call in the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolEntry {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// The argument a person recognises the call by (path, command, pattern, URL).
    pub key_arg: String,
    /// Diff lines of a file edit: `-` removed, `+` added, others context.
    pub diff: Vec<String>,
    /// Status.
    pub status: ToolStatus,
    /// The result text the model reads (shown when tool results are expanded).
    pub output: String,
    /// A few words on a success (a shell command's exit code and time), from the
    /// result's metadata.
    pub summary: Option<String>,
    /// The latest output lines of the call while it runs (a shell command's), as sent.
    pub live: Vec<String>,
}

/// One entry of the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// What the user typed.
    User(String),
    /// Assistant text (Markdown), possibly still streaming.
    Assistant(String),
    /// Thinking text.
    Thinking(String),
    /// A tool call and its result.
    Tool(ToolEntry),
    /// A notice from the engine or the UI.
    Notice(String),
    /// An error.
    Error(String),
    /// Output of a slash command or a welcome message.
    Info(Vec<String>),
    /// A claim-verifier verdict.
    Verdict {
        /// `verified_pass`, `verified_fail`, `verify_error` or `unsubstantiated`.
        verdict: String,
        /// The replayed command, if any.
        command: Option<String>,
    },
}

/// What the controller must do after a key press.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Nothing beyond redrawing.
    None,
    /// Send this task to the engine.
    Task(String),
    /// Run this slash command.
    Slash(Slash),
    /// Answer the pending approval; a "no" may carry the person's reason.
    Answer(ApprovalAnswer, Option<String>),
    /// Interrupt the running turn.
    Interrupt,
    /// Leave the UI.
    Quit,
}

/// Claim-verifier verdicts seen in this UI, for `/verify`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct VerdictCounts {
    /// `verified_pass`.
    pub pass: u32,
    /// `verified_fail`.
    pub fail: u32,
    /// `verify_error`.
    pub error: u32,
    /// `unsubstantiated`.
    pub unsubstantiated: u32,
}

/// The whole UI state.
#[derive(Debug)]
pub(crate) struct App {
    /// The transcript.
    pub entries: Vec<Entry>,
    /// Rendered rows per entry at [`App::rendered_width`]; `None` means stale.
    pub rendered: Vec<Option<Vec<Line<'static>>>>,
    /// The width `rendered` was made for.
    pub rendered_width: u16,
    /// Transcript rows at the last draw (keeps a scrolled-up view still while text streams in).
    pub rendered_total: usize,
    /// The input box.
    pub editor: Editor,
    /// The status line.
    pub status: Status,
    /// Colours.
    pub theme: Theme,
    /// Session id.
    pub session_id: String,
    /// True while the engine runs a task.
    pub running: bool,
    /// The approval prompt on screen, if any.
    pub approval: Option<Prompt>,
    /// Inputs typed while a task ran, sent when it ends.
    pub queued: Vec<String>,
    /// Show thinking text in full.
    pub show_thinking: bool,
    /// Show tool results under each call.
    pub expand_tools: bool,
    /// Transcript rows scrolled up from the bottom.
    pub scroll: usize,
    /// A Ctrl-C on an idle prompt was pressed: the next one quits.
    pub quit_armed: bool,
    /// Verdict counts for `/verify`.
    pub verdicts: VerdictCounts,
    /// When the running task started, and the session usage then.
    pub task_started: Option<(Instant, codesmith_protocol::Usage)>,
    /// Rows of the answer being streamed, rendered one finished line at a time.
    pub stream: Option<StreamCache>,
    /// Running subagents (any depth) and the foreground `agent` call each runs under.
    pub subagents: Vec<(String, String)>,
    /// The custom slash commands (`/NAME` not built in expands through them).
    pub commands: std::sync::Arc<codesmith_tools::extensions::commands::SlashCommands>,
}

/// The finished lines of a streaming answer, already rendered and wrapped,
/// so each new delta costs only its own line, not the whole answer again.
#[derive(Debug, Clone)]
pub(crate) struct StreamCache {
    /// Index of the entry.
    pub entry: usize,
    /// Width the rows were wrapped to.
    pub width: usize,
    /// Bytes of the entry's text rendered into `rows` (always at a line start).
    pub settled: usize,
    /// Markdown state after the settled lines.
    pub renderer: super::markdown::Renderer,
    /// Rows of the settled lines (with the leading gap row).
    pub rows: Vec<Line<'static>>,
}

impl App {
    /// A fresh UI.
    pub(crate) fn new(theme: Theme, status: Status) -> Self {
        App {
            entries: Vec::new(),
            rendered: Vec::new(),
            rendered_width: 0,
            rendered_total: 0,
            editor: Editor::default(),
            status,
            theme,
            session_id: String::new(),
            running: false,
            approval: None,
            queued: Vec::new(),
            show_thinking: false,
            expand_tools: false,
            scroll: 0,
            quit_armed: false,
            verdicts: VerdictCounts::default(),
            task_started: None,
            stream: None,
            subagents: Vec::new(),
            commands: Default::default(),
        }
    }

    /// Appends an entry.
    pub(crate) fn push(&mut self, entry: Entry) {
        // A streamed answer that is no longer last gets one whole render.
        if let Some(cache) = self.stream.take()
            && let Some(r) = self.rendered.get_mut(cache.entry)
        {
            *r = None;
        }
        self.entries.push(entry);
        self.rendered.push(None);
    }

    /// Marks every entry for re-rendering (after a toggle or theme change).
    pub(crate) fn invalidate(&mut self) {
        self.stream = None;
        self.rendered.iter_mut().for_each(|r| *r = None);
    }

    /// Empties the transcript.
    pub(crate) fn clear_transcript(&mut self) {
        self.stream = None;
        self.entries.clear();
        self.rendered.clear();
        self.scroll = 0;
    }

    /// Shows lines of information (slash-command output).
    pub(crate) fn info(&mut self, lines: Vec<String>) {
        self.push(Entry::Info(lines));
    }

    /// Shows a notice.
    pub(crate) fn notice(&mut self, message: impl Into<String>) {
        self.push(Entry::Notice(message.into()));
    }

    /// Applies one engine event.
    pub(crate) fn apply(&mut self, event: Event) {
        // A subagent's events (its retries included) never touch the foreground's banner.
        if !matches!(
            event,
            Event::Retry { .. }
                | Event::Subagent { .. }
                | Event::SubagentStarted { .. }
                | Event::SubagentFinished { .. }
        ) {
            self.status.retry = None;
        }
        match event {
            Event::SessionStarted {
                session_id,
                provider,
                model,
                ..
            } => {
                self.session_id = session_id;
                self.status.provider = provider;
                self.status.model = model;
            }
            Event::TurnStarted {
                estimated_input_tokens,
                ..
            } => {
                self.status.streamed_bytes = 0;
                if estimated_input_tokens > 0 {
                    self.status.context_tokens = estimated_input_tokens;
                }
            }
            Event::AssistantText { delta } => {
                self.status.streamed_bytes += delta.len();
                self.append_text(delta, false);
            }
            Event::Thinking { delta } => {
                self.status.streamed_bytes += delta.len();
                self.append_text(delta, true);
            }
            Event::ToolCall {
                id,
                name,
                arguments,
            } => self.push(Entry::Tool(ToolEntry {
                key_arg: key_argument(&arguments),
                diff: Vec::new(),
                id,
                name,
                status: ToolStatus::Running,
                output: String::new(),
                summary: None,
                live: Vec::new(),
            })),
            Event::ToolOutput { id, lines } => self.tool_output(&id, lines),
            Event::ToolResult {
                id,
                ok,
                output,
                meta,
                error,
                summary,
                changes,
                ..
            } => {
                let status = match ok {
                    true => ToolStatus::Ok,
                    false => ToolStatus::Failed(error_line(error.as_ref(), &output)),
                };
                // A stopped command's output so far is shown as the text it was, not as
                // the envelope the model reads.
                let output = match meta.get("output").and_then(serde_json::Value::as_str) {
                    Some(text) if !ok => text.to_string(),
                    _ => output,
                };
                self.tool_result(&id, status, summary, diff_lines(&changes), output);
            }
            Event::Retry {
                attempt,
                wait_ms,
                reason,
            } => self
                .status
                .set_retry(attempt, wait_ms, &reason, Instant::now()),
            Event::Notice { message } => self.notice(message),
            event @ Event::McpProgress { .. } => {
                // One line per running call, updated in place while it reports progress.
                let line = crate::render::event_lines(&event, crate::render::Paint::OFF).join(" ");
                let same_call = |e: &Entry| {
                    matches!(e, Entry::Info(lines) if lines.len() == 1
                        && lines[0].split(':').next() == line.split(':').next())
                };
                match self.entries.last() {
                    Some(last) if same_call(last) => {
                        let at = self.entries.len() - 1;
                        self.entries[at] = Entry::Info(vec![line]);
                        if let Some(r) = self.rendered.get_mut(at) {
                            *r = None;
                        }
                    }
                    _ => self.push(Entry::Info(vec![line])),
                }
            }
            Event::Compaction {
                trigger,
                stage,
                before,
                after,
                window,
                escalated,
            } => {
                self.status.context_tokens = after;
                self.notice(crate::render::compaction_line(
                    &trigger, &stage, before, after, window, escalated,
                ));
            }
            Event::TurnCompleted { usage, .. } => {
                self.status.streamed_bytes = 0;
                self.status.usage.add(&usage);
                if usage.input_tokens > 0 {
                    self.status.context_tokens = usage.input_tokens + usage.output_tokens;
                }
            }
            Event::Verdict(v) => {
                let counts = &mut self.verdicts;
                match v.verdict.as_str() {
                    "verified_pass" => counts.pass += 1,
                    "verified_fail" => counts.fail += 1,
                    "verify_error" => counts.error += 1,
                    _ => counts.unsubstantiated += 1,
                }
                self.push(Entry::Verdict {
                    verdict: v.verdict,
                    command: v.command,
                });
            }
            Event::PlanUpdated { explanation, plan } => self.push(Entry::Info(
                crate::render::plan_lines(explanation.as_deref(), &plan),
            )),
            Event::Error { message } => self.push(Entry::Error(message)),
            Event::SubagentStarted {
                agent_id,
                call_id,
                agent_type,
                description,
                ..
            } => {
                self.subagents.push((agent_id, call_id.clone()));
                self.subagent_status(&call_id, format!("{agent_type}: {description}"));
            }
            Event::Subagent { agent_id, event } => {
                let call = self.subagent_call(&agent_id);
                self.subagent_event(call.as_deref(), *event);
            }
            Event::SubagentFinished { .. } => {}
            // The ends of submissions and the approval questions are the UI loop's
            // (`Ui::on_engine`).
            Event::ApprovalRequested(_)
            | Event::ApprovalWithdrawn { .. }
            | Event::TaskFinished { .. }
            | Event::CompactionFinished { .. }
            | Event::RestoreFinished { .. } => {}
            // Kinds added later are not shown until the UI learns them.
            _ => {}
        }
    }

    /// The parent's `agent` call that started the child `agent_id` (its `SubagentStarted`
    /// is the nearest one before its events).
    fn subagent_call(&mut self, agent_id: &str) -> Option<String> {
        self.subagents
            .iter()
            .find(|(id, _)| id == agent_id)
            .map(|(_, call)| call.clone())
    }

    /// One event of a child, shown on its `agent` call's line (`call`: the foreground's
    /// call it runs under): its rounds count into the status line's usage, its tool calls
    /// become the line's live status, its retries stay its own.
    fn subagent_event(&mut self, call: Option<&str>, event: Event) {
        match event {
            Event::TurnCompleted { usage, .. } => self.status.usage.add(&usage),
            Event::ToolCall {
                name, arguments, ..
            } => {
                if let Some(call) = call {
                    let live = format!("{name} {}", key_argument(&arguments));
                    self.subagent_status(call, live);
                }
            }
            Event::SubagentStarted {
                agent_id,
                agent_type,
                description,
                ..
            } => {
                if let Some(call) = call {
                    self.subagents.push((agent_id, call.to_string()));
                    self.subagent_status(call, format!("{agent_type}: {description}"));
                }
            }
            Event::Subagent { event, .. } => self.subagent_event(call, *event),
            _ => {}
        }
    }

    /// Shows `live` as the running `agent` call `call_id`'s status.
    fn subagent_status(&mut self, call_id: &str, live: String) {
        if let Some(i) = self.entries.iter().rposition(
            |e| matches!(e, Entry::Tool(t) if t.id == call_id && t.status == ToolStatus::Running),
        ) {
            if let Entry::Tool(tool) = &mut self.entries[i] {
                tool.summary = Some(live);
            }
            self.rendered[i] = None;
        }
    }

    fn append_text(&mut self, delta: String, thinking: bool) {
        let last = self.entries.len().checked_sub(1);
        let target = match (last.map(|i| &mut self.entries[i]), thinking) {
            (Some(Entry::Assistant(text)), false) | (Some(Entry::Thinking(text)), true) => text,
            _ => {
                self.push(if thinking {
                    Entry::Thinking(delta)
                } else {
                    Entry::Assistant(delta)
                });
                return;
            }
        };
        target.push_str(&delta);
        if let Some(i) = last {
            self.rendered[i] = None;
        }
    }

    /// Shows `lines` as the running call `id`'s latest output.
    fn tool_output(&mut self, id: &str, lines: Vec<String>) {
        if let Some(i) = self.entries.iter().rposition(
            |e| matches!(e, Entry::Tool(t) if t.id == id && t.status == ToolStatus::Running),
        ) {
            if let Entry::Tool(tool) = &mut self.entries[i] {
                tool.live = lines;
            }
            self.rendered[i] = None;
        }
    }

    /// Marks the call `id` finished with `status`, the result's `summary` and the
    /// `diff` of the files it changed (all from the event's typed fields), and keeps
    /// `output`, the text the model read.
    fn tool_result(
        &mut self,
        id: &str,
        status: ToolStatus,
        summary: Option<String>,
        diff: Vec<String>,
        output: String,
    ) {
        let found = self
            .entries
            .iter_mut()
            .enumerate()
            .rev()
            .find_map(|(i, e)| match e {
                Entry::Tool(t) if t.id == id && t.status == ToolStatus::Running => Some((i, t)),
                _ => None,
            });
        if let Some((i, tool)) = found {
            tool.summary = match status {
                ToolStatus::Ok => summary,
                _ => None,
            };
            tool.status = status;
            tool.diff = diff;
            tool.output = output;
            tool.live.clear();
            self.rendered[i] = None;
        }
    }

    /// Shows a resumed session as it was shown while it ran: its tasks, and its events
    /// through [`App::apply`], the renderer of live events.
    pub(crate) fn load_history(&mut self, history: &[Replayed]) {
        for item in history {
            match item {
                Replayed::Task(text) => self.push(Entry::User(text.clone())),
                Replayed::Event(event) => self.apply(event.as_ref().clone()),
            }
        }
        self.finish_running_tools("no result recorded");
        self.status.streamed_bytes = 0;
    }

    /// Records the user's task and marks a task running.
    pub(crate) fn start_task(&mut self, text: &str) {
        self.push(Entry::User(text.to_string()));
        self.running = true;
        self.scroll = 0;
        let now = Instant::now();
        self.task_started = Some((now, self.status.usage));
        self.status.activity = Some(super::status::Activity {
            label: "working",
            since: now,
        });
    }

    /// Marks a `/compact` running: busy like a task (Ctrl-C interrupts it), without a
    /// transcript entry; [`App::compaction_done`] reports its outcome.
    pub(crate) fn start_compaction(&mut self) {
        self.running = true;
        self.scroll = 0;
        self.status.activity = Some(super::status::Activity {
            label: "compacting",
            since: Instant::now(),
        });
    }

    /// A `/compact` ended (or was interrupted): its one report line.
    pub(crate) fn compaction_done(&mut self, line: String) {
        self.task_finished();
        self.info(vec![line]);
    }

    /// The engine finished the task normally: a dim summary line (time, tokens).
    pub(crate) fn task_done(&mut self) {
        if let Some((started, usage)) = self.task_started {
            let secs = started.elapsed().as_secs_f64();
            let now = self.status.usage;
            let tokens = (now.input_tokens + now.output_tokens)
                .saturating_sub(usage.input_tokens + usage.output_tokens);
            self.info(vec![format!(
                "─ done in {secs:.1}s · {} tokens",
                super::status::compact(tokens)
            )]);
        }
        self.task_finished();
    }

    /// The engine finished the task (an error or a stop is already shown by its event).
    pub(crate) fn task_finished(&mut self) {
        self.task_started = None;
        // The streamed answer is rendered once more as a whole (trailing blank lines trimmed).
        if self.stream.take().is_some()
            && let Some(last) = self.rendered.last_mut()
        {
            *last = None;
        }
        self.running = false;
        self.approval = None;
        self.status.retry = None;
        self.status.activity = None;
        self.status.streamed_bytes = 0;
        self.finish_running_tools("not run");
    }

    /// The user interrupted the task. Messages typed while it ran and queued are not sent
    /// and not lost: they go back into the input box, ahead of anything typed since.
    /// The next Ctrl-C on the idle prompt only warns; the one after quits.
    pub(crate) fn interrupted(&mut self) {
        self.task_finished();
        self.notice("interrupted: the turn was stopped; the session is kept (type to continue)");
        if !self.queued.is_empty() {
            let mut back = std::mem::take(&mut self.queued);
            if !self.editor.is_empty() {
                back.push(self.editor.text());
            }
            self.editor.set_text(&back.join("\n"));
            self.notice("your queued message is back in the input box: Enter sends it");
        }
        self.quit_armed = false;
    }

    fn finish_running_tools(&mut self, why: &str) {
        for (i, e) in self.entries.iter_mut().enumerate() {
            if let Entry::Tool(t) = e
                && t.status == ToolStatus::Running
            {
                t.status = ToolStatus::Failed(why.to_string());
                self.rendered[i] = None;
            }
        }
    }

    /// Takes down the approval prompt on screen because its asker stopped waiting (a
    /// subagent past its wall time): an answer now would reach nobody.
    pub(crate) fn withdraw_approval(&mut self) {
        if let Some(prompt) = self.approval.take() {
            let summary = first_line(&prompt.request.summary, 60);
            self.notice(format!(
                "withdrawn: {summary} (what asked stopped waiting; nothing was run)"
            ));
        }
    }

    /// Shows an approval prompt.
    pub(crate) fn ask(&mut self, request: ApprovalRequest) {
        self.approval = Some(Prompt::new(request));
        self.scroll = 0;
    }

    /// Handles a key press.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        self.quit_armed = false;
        if self.approval.is_some() {
            return self.approval_key(key);
        }
        match key.code {
            // Esc stops the running work, as Ctrl-C does (an approval prompt's Esc is
            // "no", above).
            KeyCode::Esc if self.running => return Action::Interrupt,
            KeyCode::Char('d') if ctrl && self.editor.is_empty() && !self.running => {
                return Action::Quit;
            }
            KeyCode::Char('o') if ctrl => {
                self.expand_tools = !self.expand_tools;
                self.invalidate();
                return Action::None;
            }
            KeyCode::Char('t') if ctrl => {
                self.show_thinking = !self.show_thinking;
                self.invalidate();
                return Action::None;
            }
            KeyCode::Tab if self.editor.text().starts_with('/') => {
                let text = self.editor.text();
                if let [only] = slash::completions(&text)[..] {
                    self.editor.set_text(&format!("/{only} "));
                }
                return Action::None;
            }
            KeyCode::BackTab => {
                // Shift-Tab: the next rung of the approval ladder (plan mode first).
                let next = self
                    .status
                    .approval
                    .parse::<codesmith_policy::ApprovalMode>()
                    .unwrap_or_default()
                    .cycled();
                return Action::Slash(Slash::Approval(Some(next.as_str().to_string())));
            }
            KeyCode::PageUp => {
                self.scroll = self.scroll.saturating_add(10);
                return Action::None;
            }
            KeyCode::PageDown => {
                self.scroll = self.scroll.saturating_sub(10);
                return Action::None;
            }
            _ => {}
        }
        match self.editor.handle_key(key) {
            EditorAction::Submit(text) => self.submit(text),
            EditorAction::Edited | EditorAction::Ignored => Action::None,
        }
    }

    fn ctrl_c(&mut self) -> Action {
        if self.running {
            self.approval = None;
            return Action::Interrupt;
        }
        if !self.editor.is_empty() {
            self.editor.clear();
            return Action::None;
        }
        if self.quit_armed {
            return Action::Quit;
        }
        self.quit_armed = true;
        self.notice("press Ctrl-C again to quit");
        Action::None
    }

    fn approval_key(&mut self, key: KeyEvent) -> Action {
        let Some(prompt) = self.approval.as_mut() else {
            return Action::None;
        };
        // Typing the reason of a "no": Enter sends it, Esc sends the "no" without it.
        if let Some(reason) = prompt.reason.as_mut() {
            match key.code {
                KeyCode::Char(c) if reason.chars().count() < 500 => reason.push(c),
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Enter | KeyCode::Esc => {
                    let reason = (key.code == KeyCode::Enter)
                        .then(|| reason.trim().to_string())
                        .filter(|r| !r.is_empty());
                    let summary = first_line(&prompt.request.summary, 60);
                    self.approval = None;
                    self.notice(format!("denied: {summary}"));
                    return Action::Answer(ApprovalAnswer::Deny, reason);
                }
                _ => {}
            }
            return Action::None;
        }
        if key.code == KeyCode::Char(super::approval::Prompt::REASON_KEY) {
            prompt.reason = Some(String::new());
            return Action::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        // Ctrl-O shows the whole command (and folds it again); while it shows, the
        // arrows and page keys scroll it.
        if ctrl && key.code == KeyCode::Char('o') {
            prompt.expanded = !prompt.expanded;
            prompt.scroll = 0;
            return Action::None;
        }
        if prompt.expanded {
            // Scrolling starts from where the view stands (End leaves the scroll past it).
            let at = prompt
                .max_scroll
                .get()
                .map_or(prompt.scroll, |m| prompt.scroll.min(m));
            let page = prompt.page.get().unwrap_or(1).max(1);
            let scroll = match key.code {
                KeyCode::Up => Some(at.saturating_sub(1)),
                KeyCode::Down => Some(at.saturating_add(1)),
                KeyCode::PageUp => Some(at.saturating_sub(page)),
                KeyCode::PageDown => Some(at.saturating_add(page)),
                KeyCode::Home => Some(0),
                KeyCode::End => Some(usize::MAX / 2),
                _ => None,
            };
            if let Some(scroll) = scroll {
                // The view clamps the scroll to the last page when it draws.
                prompt.scroll = scroll;
                return Action::None;
            }
        }
        let answer = match key.code {
            KeyCode::Esc => Some(ApprovalAnswer::Deny),
            KeyCode::Enter => Some(prompt.selected_answer()),
            KeyCode::Left | KeyCode::Up => {
                prompt.move_selection(-1);
                None
            }
            KeyCode::Right | KeyCode::Down | KeyCode::Tab => {
                prompt.move_selection(1);
                None
            }
            KeyCode::Char(c) if !ctrl => prompt.answer_for(c),
            _ => None,
        };
        // A command is approved only once all of it has been on screen: an approving key
        // pressed before shows it instead, and says why.
        if answer.is_some_and(super::approval::Prompt::approves) && !prompt.seen_all.get() {
            prompt.expanded = true;
            prompt.must_read = true;
            return Action::None;
        }
        match answer {
            Some(a) => {
                let label = match a {
                    ApprovalAnswer::Once => "approved once",
                    ApprovalAnswer::Session => "approved for this session",
                    ApprovalAnswer::Always => "approved always",
                    ApprovalAnswer::Deny => "denied",
                };
                let summary = first_line(&prompt.request.summary, 60);
                self.approval = None;
                self.notice(format!("{label}: {summary}"));
                Action::Answer(a, None)
            }
            None => Action::None,
        }
    }

    fn submit(&mut self, text: String) -> Action {
        match slash::parse_with(&text, &self.commands) {
            Parsed::Command(cmd) => Action::Slash(cmd),
            Parsed::Unknown { name, suggestion } => {
                let hint = suggestion.map_or_else(
                    || "type /help for the list".to_string(),
                    |s| format!("did you mean /{s}?"),
                );
                self.notice(format!("unknown command /{name}: {hint}"));
                Action::None
            }
            Parsed::Text(task) if self.running => {
                self.notice("queued: it will be sent when the current turn ends");
                self.queued.push(task);
                Action::None
            }
            Parsed::Text(task) => Action::Task(task),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::theme::ThemeKind;
    use super::*;
    use codesmith_protocol::{ContentBlock, Message, Role, StopReason, Usage, VerdictEvent};

    fn app() -> App {
        App::new(
            Theme::new(ThemeKind::Dark),
            Status::new("openai", "gpt-4.1-mini", "suggest", "none", false),
        )
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    #[test]
    fn mcp_progress_is_one_line_per_call_updated_in_place() {
        let mut a = app();
        let progress = |n: f64| Event::McpProgress {
            server: "raw".into(),
            tool: "mcp__raw__slow".into(),
            progress: n,
            total: Some(4.0),
            message: Some(format!("step {n}")),
        };
        let before = a.entries.len();
        a.apply(progress(1.0));
        a.apply(progress(2.0));
        assert_eq!(a.entries.len(), before + 1);
        match a.entries.last() {
            Some(Entry::Info(lines)) => {
                assert!(
                    lines[0].contains("mcp__raw__slow: progress 2/4: step 2"),
                    "{lines:?}"
                );
            }
            _ => panic!("no progress line"),
        }
    }

    #[test]
    fn streamed_text_joins_one_entry_and_tools_get_results() {
        let mut a = app();
        a.start_task("fix it");
        for d in ["Hel", "lo"] {
            a.apply(Event::AssistantText { delta: d.into() });
        }
        a.apply(Event::ToolCall {
            id: "c1".into(),
            name: "exec_shell".into(),
            arguments: serde_json::json!({"command": "cargo test\n--all"}),
        });
        a.apply(Event::ToolResult {
            id: "c1".into(),
            name: "exec_shell".into(),
            ok: false,
            output: r#"{"ok":false,"error":{"code":"DENIED","message":"no"}}"#.into(),
            meta: serde_json::Value::Null,
            error: Some(codesmith_protocol::ToolError {
                code: codesmith_protocol::ErrorCode::Denied,
                message: "no".into(),
                hint: "ask".into(),
            }),
            summary: None,
            changes: Vec::new(),
            source: None,
        });
        a.apply(Event::AssistantText {
            delta: "Done".into(),
        });
        assert_eq!(a.entries[1], Entry::Assistant("Hello".into()));
        let Entry::Tool(t) = &a.entries[2] else {
            panic!("tool entry expected: {:?}", a.entries[2]);
        };
        // Every line of the command shows: a second line may be the one that matters.
        assert_eq!(t.key_arg, "cargo test\\n--all");
        assert_eq!(t.status, ToolStatus::Failed("DENIED: no".into()));
        assert_eq!(a.entries[3], Entry::Assistant("Done".into()));
        assert_eq!(a.rendered.len(), a.entries.len());
    }

    #[test]
    fn a_subagent_shows_on_its_agent_line_and_never_takes_the_retry_banner() {
        let mut a = app();
        a.apply(Event::ToolCall {
            id: "p1".into(),
            name: "agent".into(),
            arguments: serde_json::json!({"type": "explore", "description": "find it", "prompt": "x"}),
        });
        a.apply(Event::SubagentStarted {
            agent_id: "child".into(),
            call_id: "p1".into(),
            agent_type: "explore".into(),
            description: "find it".into(),
            depth: 1,
        });
        let line = |a: &App| match a.entries.last() {
            Some(Entry::Tool(t)) => t.summary.clone(),
            _ => None,
        };
        assert_eq!(line(&a).as_deref(), Some("explore: find it"));
        let nested = |event: Event| Event::Subagent {
            agent_id: "child".into(),
            event: Box::new(event),
        };
        a.apply(nested(Event::ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "a.txt"}),
        }));
        assert_eq!(line(&a).as_deref(), Some("read_file a.txt"));
        // The child's retry neither shows as nor clears the foreground's banner.
        a.apply(nested(Event::Retry {
            attempt: 1,
            wait_ms: 1000,
            reason: "HTTP 429".into(),
        }));
        assert!(a.status.retry.is_none());
        a.apply(Event::Retry {
            attempt: 2,
            wait_ms: 1000,
            reason: "HTTP 503".into(),
        });
        a.apply(nested(Event::TurnCompleted {
            turn: 1,
            stop_reason: StopReason::EndTurn,
            usage: Usage {
                input_tokens: 40,
                output_tokens: 2,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
            },
            refusal: false,
        }));
        assert!(
            a.status.retry.is_some(),
            "a child's round kept the parent's banner"
        );
        // Its usage counts into the status line, not into the context fill.
        assert_eq!(a.status.usage.input_tokens, 40);
        assert_eq!(a.status.context_tokens, 0);
    }

    #[test]
    fn usage_retry_and_verdicts_update_the_status() {
        let mut a = app();
        a.apply(Event::Retry {
            attempt: 1,
            wait_ms: 1000,
            reason: "HTTP 429".into(),
        });
        assert!(a.status.retry.is_some());
        a.apply(Event::TurnCompleted {
            turn: 1,
            stop_reason: StopReason::EndTurn,
            usage: Usage {
                input_tokens: 900,
                output_tokens: 100,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
            },
            refusal: false,
        });
        assert!(a.status.retry.is_none());
        assert_eq!(a.status.context_tokens, 1000);
        a.apply(Event::Verdict(VerdictEvent {
            verdict: "verified_fail".into(),
            claim: "tests pass".into(),
            command: Some("cargo test".into()),
            exit_code: Some(101),
        }));
        assert_eq!(a.verdicts.fail, 1);
    }

    #[test]
    fn a_finished_task_gets_a_summary_line_and_an_interrupted_one_does_not() {
        let mut a = app();
        a.start_task("t");
        a.apply(Event::TurnCompleted {
            turn: 1,
            stop_reason: StopReason::EndTurn,
            usage: Usage {
                input_tokens: 1_500,
                output_tokens: 500,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
            },
            refusal: false,
        });
        a.task_done();
        let Some(Entry::Info(lines)) = a.entries.last() else {
            panic!("summary expected: {:?}", a.entries.last());
        };
        assert!(lines[0].starts_with("─ done in ") && lines[0].ends_with(" · 2.0k tokens"));
        a.start_task("u");
        a.interrupted();
        assert!(matches!(a.entries.last(), Some(Entry::Notice(n)) if n.starts_with("interrupted")));
    }

    #[test]
    fn ctrl_c_interrupts_then_quits() {
        let mut a = app();
        a.start_task("long job");
        assert_eq!(a.on_key(ctrl('c')), Action::Interrupt);
        a.interrupted();
        assert!(!a.running);
        // A Ctrl-C right after an interrupt warns before it quits.
        assert_eq!(a.on_key(ctrl('c')), Action::None);
        assert_eq!(
            a.entries.last(),
            Some(&Entry::Notice("press Ctrl-C again to quit".into()))
        );
        assert_eq!(a.on_key(ctrl('c')), Action::Quit);
        // On a fresh idle prompt the first press only arms.
        let mut b = app();
        assert_eq!(b.on_key(ctrl('c')), Action::None);
        assert_eq!(b.on_key(ctrl('c')), Action::Quit);
    }

    #[test]
    fn r_types_the_reason_of_a_no_and_enter_sends_it() {
        let mut a = app();
        a.start_task("t");
        a.ask(ApprovalRequest {
            tool: "exec_shell".into(),
            summary: "curl prod".into(),
            ..Default::default()
        });
        assert_eq!(a.on_key(key(KeyCode::Char('r'))), Action::None);
        for c in "use stagingx".chars() {
            assert_eq!(
                a.on_key(key(KeyCode::Char(c))),
                Action::None,
                "{c} is text now"
            );
        }
        assert_eq!(a.on_key(key(KeyCode::Backspace)), Action::None);
        assert_eq!(
            a.on_key(key(KeyCode::Enter)),
            Action::Answer(ApprovalAnswer::Deny, Some("use staging".into()))
        );
        assert!(a.approval.is_none());
    }

    #[test]
    fn approval_keys_answer_and_typing_while_running_queues() {
        let mut a = app();
        a.start_task("t");
        a.ask(ApprovalRequest {
            tool: "exec_shell".into(),
            summary: "rm -rf build".into(),
            reason: "deletes".into(),
            can_persist: false,
            ..Default::default()
        });
        assert_eq!(
            a.on_key(key(KeyCode::Char('a'))),
            Action::None,
            "no always here"
        );
        assert_eq!(
            a.on_key(key(KeyCode::Char('s'))),
            Action::Answer(ApprovalAnswer::Session, None)
        );
        assert!(a.approval.is_none());
        for c in "next".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        assert_eq!(a.on_key(key(KeyCode::Enter)), Action::None);
        assert_eq!(a.queued, ["next"]);
        // An interrupt sends nothing and loses nothing: the queued message is back in
        // the input box, ahead of what was typed since.
        for c in "more".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        a.interrupted();
        assert!(a.queued.is_empty());
        assert_eq!(a.editor.text(), "next\nmore");
    }

    #[test]
    fn slash_input_becomes_commands_or_hints() {
        let mut a = app();
        for c in "/clera".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        assert_eq!(a.on_key(key(KeyCode::Enter)), Action::None);
        assert_eq!(
            a.entries.last(),
            Some(&Entry::Notice(
                "unknown command /clera: did you mean /clear?".into()
            ))
        );
        for c in "/quit".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        assert_eq!(a.on_key(key(KeyCode::Enter)), Action::Slash(Slash::Quit));
    }

    #[test]
    fn tab_completes_a_unique_slash_command() {
        let mut a = app();
        for c in "/ver".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.editor.text(), "/verify ");
        a.editor.set_text("/re");
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.editor.text(), "/re", "ambiguous: restore, resume");
    }

    #[test]
    fn a_resumed_refusal_shows_its_code_and_message() {
        let mut a = app();
        let refusal = codesmith_tools::envelope_json(&Err(codesmith_tools::Refusal::new(
            codesmith_tools::ErrorCode::NoMatch,
            "no match in a.py",
            "read it again",
        )));
        let records: Vec<codesmith_engine::session::Record> = [
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolCall(codesmith_protocol::ToolCall {
                    id: "c1".into(),
                    name: "edit_file".into(),
                    arguments: r#"{"path":"a.py"}"#.into(),
                })],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult(codesmith_protocol::ToolResult {
                    call_id: "c1".into(),
                    content: refusal.to_string(),
                    is_error: true,
                    images: Vec::new(),
                })],
            },
        ]
        .into_iter()
        .map(|message| codesmith_engine::session::Record::Message { message })
        .collect();
        a.load_history(&codesmith_engine::replay::replay_records(&records));
        let Some(Entry::Tool(tool)) = a.entries.last() else {
            panic!("no tool entry: {:?}", a.entries);
        };
        assert_eq!(
            tool.status,
            ToolStatus::Failed("NO_MATCH: no match in a.py".into())
        );
    }
}
