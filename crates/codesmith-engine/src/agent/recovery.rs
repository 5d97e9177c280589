//! Context-length recovery for the loop: when the provider says the request
//! no longer fits, run the next level of [`crate::context`] and send it again.

use std::sync::Arc;

use codesmith_protocol::{Event, EventSink, Message};
use codesmith_providers::{AssistantResponse, ChatRequest, CompleteOptions, ProviderErrorKind};

use super::{Engine, EngineError};
use crate::context;

/// The next recovery level to try (see [`crate::context`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    ClearToolResults,
    Compact,
    Minimal,
}

/// What a compaction did (see [`Engine::compact`]). Token figures are the estimate of
/// [`context::estimate_tokens`] over the whole transcript (the rough bytes-per-token estimate).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compaction {
    /// The transcript is too short: nothing lies before the kept tail.
    NothingToCompact,
    /// `messages` earlier messages were replaced by a summary (`summary`), or dropped
    /// with a note when no summary could be had; the context went from `before` to
    /// `after` tokens (`after < before` always).
    Compacted {
        /// Messages folded away.
        messages: usize,
        /// True for a summary, false for a trim.
        summary: bool,
        /// Estimated tokens before.
        before: u64,
        /// Estimated tokens after.
        after: u64,
    },
    /// The replacement would not have been smaller than what it replaces, so it was
    /// discarded and the transcript left as it was.
    Discarded {
        /// Messages that would have been folded away.
        messages: usize,
        /// Estimated tokens of the transcript as it is.
        before: u64,
        /// Estimated tokens it would have had.
        after: u64,
    },
}

/// Rounds after a compaction within which passing the threshold again escalates.
pub(super) const REFILL_ROUNDS: u32 = 3;

/// Most output tokens a summary may take, whatever the model.
const SUMMARY_MAX_TOKENS: u32 = 1024;
/// Most output tokens a summary by the embedded model may take: a small model rambles
/// to its limit, and its context window is small.
const LOCAL_SUMMARY_MAX_TOKENS: u32 = 256;
/// The least output tokens a summary is allowed, however short the text it replaces.
const SUMMARY_MIN_TOKENS: u32 = 32;

impl Engine {
    /// One model request; on a context-length error the next recovery level runs and
    /// the request is sent again, until a level has nothing left to cut: then the turn
    /// fails with [`EngineError::TaskTooLarge`].
    pub(super) async fn request_with_recovery(
        &mut self,
        sink: &mut EventSink<'_>,
    ) -> Result<AssistantResponse, EngineError> {
        let mut next = Some(Level::ClearToolResults);
        loop {
            match self.request(sink).await {
                Err(e) if e.kind == ProviderErrorKind::ContextLength => {
                    let Some(level) = next else {
                        return Err(self.task_too_large());
                    };
                    let before = self.next_request_tokens();
                    next = self.recover_context(level, sink).await?;
                    let stage = self.last_stage;
                    self.report_compaction("context_length", stage, before, false, sink)?;
                }
                other => return Ok(other?),
            }
        }
    }

    fn task_too_large(&self) -> EngineError {
        let tokens = context::estimate_tokens(&self.config.system_prompt, self.session.messages())
            + self.catalog_tokens();
        EngineError::TaskTooLarge { tokens }
    }

    /// Runs the first level from `level` on that changes the transcript; returns the
    /// level to try on the next refusal (`None`: nothing is left to cut).
    async fn recover_context(
        &mut self,
        level: Level,
        sink: &mut EventSink<'_>,
    ) -> Result<Option<Level>, EngineError> {
        let messages = self.session.messages().to_vec();
        if level == Level::ClearToolResults
            && let Some(cleared) = context::clear_old_tool_results(&messages)
        {
            sink(Event::Notice {
                message: "The context window is full: cleared old tool results.".into(),
            });
            self.replace_transcript("clear_tool_results", cleared)?;
            return Ok(Some(Level::Compact));
        }
        if level != Level::Minimal
            && matches!(
                self.compact_older(false, "The context window is full", sink)
                    .await?,
                Compaction::Compacted { .. }
            )
        {
            return Ok(Some(Level::Minimal));
        }
        let Some(minimal) = self.minimal_transcript() else {
            return Err(self.task_too_large());
        };
        let folded = (messages.len() + 1).saturating_sub(minimal.len());
        sink(Event::Notice {
            message: format!(
                "The context window is still full: kept only the task and the latest exchange \
                 (about {folded} messages between them dropped)."
            ),
        });
        self.replace_transcript("trim", minimal)?;
        Ok(None)
    }

    /// Compacts before the request of round `turn` when it would pass the threshold of
    /// the context window ([`crate::budget::ContextBudget::threshold`]): the same waterfall
    /// the recovery runs (old tool results cleared, then older turns summarized, then
    /// only the task and the latest exchange kept), stopping at the first step that
    /// brings the request under the threshold. A context that refills within
    /// [`REFILL_ROUNDS`] rounds of the previous compaction escalates: the clearing step
    /// is skipped, the note tells the model to read in pages, and the user is told.
    pub(super) async fn compact_ahead(
        &mut self,
        turn: u32,
        sink: &mut EventSink<'_>,
    ) -> Result<(), EngineError> {
        let threshold = self.config.context.threshold();
        let before = self.next_request_tokens();
        if before <= threshold {
            return Ok(());
        }
        let escalated = self
            .compacted_at
            .is_some_and(|(at, _)| turn.saturating_sub(at) <= REFILL_ROUNDS);
        // The user hears of an escalation once, when it starts.
        let already = self.compacted_at.is_some_and(|(_, escalated)| escalated);
        self.compacted_at = Some((turn, escalated));
        if escalated && !already {
            sink(Event::Notice {
                message: format!(
                    "The context refilled within {REFILL_ROUNDS} rounds of the last compaction: \
                     summarizing more of it and telling the model to read files in pages and \
                     narrow its searches."
                ),
            });
        }
        let why = "The context neared the model's window";
        let mut stage = None;
        let messages = self.session.messages().to_vec();
        if !escalated && let Some(cleared) = context::clear_old_tool_results(&messages) {
            self.replace_transcript("clear_tool_results", cleared)?;
            stage = Some("clear_tool_results");
        }
        if stage.is_none() || self.next_request_tokens() > threshold {
            self.paging_hint = escalated;
            // The `compaction` event below says what happened: no notice besides it.
            let done = self.compact_older(false, why, &mut |_| {}).await;
            self.paging_hint = false;
            if let Compaction::Compacted { summary, .. } = done? {
                stage = Some(if summary { "summary" } else { "trim" });
            }
        }
        if self.next_request_tokens() > threshold
            && let Some(minimal) = self.minimal_transcript()
        {
            self.replace_transcript("trim", minimal)?;
            stage = Some("trim");
        }
        if let Some(stage) = stage {
            self.report_compaction("threshold", stage, before, escalated, sink)?;
        }
        Ok(())
    }

    /// Tokens of the next request as the budget counts them (see [`crate::budget`]).
    pub(super) fn next_request_tokens(&mut self) -> u64 {
        let fixed = self.fixed_bytes();
        self.fill.tokens(fixed, self.session.messages())
    }

    /// Replaces the transcript (recorded in the session file as a compaction) and counts
    /// it afresh.
    fn replace_transcript(
        &mut self,
        stage: &'static str,
        messages: Vec<Message>,
    ) -> Result<(), EngineError> {
        self.session.replace_messages(stage, messages)?;
        self.fill.reset();
        self.last_stage = stage;
        Ok(())
    }

    /// The `compaction` event and the session note of a compaction while a task ran.
    fn report_compaction(
        &mut self,
        trigger: &str,
        stage: &str,
        before: u64,
        escalated: bool,
        sink: &mut EventSink<'_>,
    ) -> Result<(), EngineError> {
        let after = self.next_request_tokens();
        let window = self.config.context.window;
        self.session.note(
            crate::session::NoteKind::Other("compaction".into()),
            serde_json::json!({
                "trigger": trigger, "stage": stage, "before": before, "after": after,
                "window": window, "escalated": escalated,
            }),
        )?;
        sink(Event::Compaction {
            trigger: trigger.to_string(),
            stage: stage.to_string(),
            before,
            after,
            window,
            escalated,
        });
        Ok(())
    }

    /// The least the task needs (level 3): its message and the latest exchange, with a
    /// trim note for what lies between; `None` when nothing lies between.
    fn minimal_transcript(&self) -> Option<Vec<Message>> {
        let messages = self.session.messages();
        let task = self.current_task.as_ref();
        let anchor = context::task_index(messages, task).zip(task);
        let cut = context::minimal_tail_start(messages)?;
        let folded = cut - usize::from(anchor.is_some_and(|(t, _)| t < cut));
        let note = format!("{}{}", context::trim_note(folded), self.plan_for_note());
        context::compacted(&note, messages, cut, anchor)
    }

    /// `/compact`: summarizes the older turns now, whatever the circuit
    /// breaker says (a manual compaction is always allowed), or trims them when
    /// no summary can be had. It never makes the context larger: a replacement
    /// that is not smaller is discarded ([`Compaction::Discarded`]). It emits no
    /// event; the caller reports the returned [`Compaction`] once.
    ///
    /// Cancel-safe: dropped before it returns, it leaves the transcript as it was
    /// (the only write is the last step, after the summary has arrived).
    ///
    /// # Errors
    /// [`EngineError::Session`] when the transcript cannot be written.
    pub async fn compact(&mut self) -> Result<Compaction, EngineError> {
        self.compact_older(true, "Compacted on request", &mut |_| {})
            .await
    }

    /// Level two: everything before the kept tail, except the task's first message,
    /// becomes a summary (or a trim note), only when that makes the transcript smaller.
    /// Automatic compaction (not `manual`) falls back to the trim when the summary is too
    /// long, and announces what it did.
    async fn compact_older(
        &mut self,
        manual: bool,
        why: &str,
        sink: &mut EventSink<'_>,
    ) -> Result<Compaction, EngineError> {
        let messages = self.session.messages().to_vec();
        let Some(cut) = context::tail_start(&messages) else {
            return Ok(Compaction::NothingToCompact);
        };
        // A manual compaction runs between tasks: no task is running to pin.
        let task = if manual {
            None
        } else {
            self.current_task.clone()
        };
        let anchor = context::task_index(&messages, task.as_ref()).zip(task.as_ref());
        let mut older = context::folded(&messages, cut, anchor.map(|(t, _)| t));
        // What an earlier compaction added to the task's message (its summary or trim
        // note) is part of what this one summarizes, so nothing earlier is lost twice.
        if let Some((t, original)) = anchor
            && t < cut
            && let Some(extra) = messages[t].content.get(original.content.len()..)
            && !extra.is_empty()
        {
            older.insert(
                0,
                Message {
                    role: codesmith_protocol::Role::User,
                    content: extra.to_vec(),
                },
            );
        }
        if older.is_empty() {
            return Ok(Compaction::NothingToCompact);
        }
        let folded = older.len();
        let before = context::estimate_tokens("", &messages);
        let summary = self.summarize(&older, manual).await;
        let mut hint = if self.paging_hint {
            format!("\n{}", context::PAGING_HINT)
        } else {
            String::new()
        };
        // The plan survives the rewrite: the note restates it.
        hint.push_str(&self.plan_for_note());
        let trim = || {
            let note = format!("{}{hint}", context::trim_note(folded));
            context::compacted(&note, &messages, cut, anchor)
        };
        let (mut stage_name, mut replaced) = match &summary {
            Some(summary) => (
                "summary",
                context::compacted(
                    &format!("{}{hint}", context::summary_note(summary)),
                    &messages,
                    cut,
                    anchor,
                ),
            ),
            None => ("trim", trim()),
        };
        let Some(mut after) = replaced.as_deref().map(|r| context::estimate_tokens("", r)) else {
            return Ok(Compaction::NothingToCompact);
        };
        if after >= before && summary.is_some() && !manual {
            sink(Event::Notice {
                message: format!(
                    "{why}: the summary (~{after} tokens in all) was not shorter than what it \
                     replaces (~{before}); the older messages are dropped instead."
                ),
            });
            stage_name = "trim";
            replaced = trim();
            after = replaced
                .as_deref()
                .map_or(before, |r| context::estimate_tokens("", r));
        }
        let Some(replaced) = replaced.filter(|_| after < before) else {
            return Ok(Compaction::Discarded {
                messages: folded,
                before,
                after,
            });
        };
        if !manual {
            sink(Event::Notice {
                message: format!("{why}: compacted {folded} earlier messages ({stage_name})."),
            });
        }
        self.replace_transcript(stage_name, replaced)?;
        Ok(Compaction::Compacted {
            messages: folded,
            summary: stage_name == "summary",
            before,
            after,
        })
    }

    /// Output tokens a summary of `older` may take: at most half of the estimate of what
    /// it replaces (so it is always shorter), [`SUMMARY_MAX_TOKENS`], and for the
    /// embedded model [`LOCAL_SUMMARY_MAX_TOKENS`].
    fn summary_budget(&self, older: &[Message]) -> u32 {
        let half = context::estimate_tokens("", older) / 2;
        let cap = if self.provider.name() == "local" {
            LOCAL_SUMMARY_MAX_TOKENS
        } else {
            SUMMARY_MAX_TOKENS
        };
        u32::try_from(half)
            .unwrap_or(u32::MAX)
            .clamp(SUMMARY_MIN_TOKENS, cap)
    }

    /// Asks the model for a summary of `older` (bounded, see
    /// [`context::MAX_SUMMARY_INPUT_BYTES`]), through the circuit breaker and the
    /// background retry budget. `None` when it cannot be had; a summary request that
    /// overflows the window too opens the breaker at once, so the caller trims
    /// without a second attempt.
    async fn summarize(&mut self, older: &[Message], manual: bool) -> Option<String> {
        let now = std::time::Instant::now();
        if !manual && !self.breaker.allows(now) {
            return None;
        }
        let (provider, model) = match &self.utility {
            Some((provider, model)) => (Arc::clone(provider), model.clone()),
            None => (Arc::clone(&self.provider), self.config.model.clone()),
        };
        let request = ChatRequest {
            model: model.clone(),
            system: context::SUMMARY_PROMPT.to_string(),
            messages: vec![Message::user_text(context::transcript_text(older))],
            tools: Vec::new(),
            max_tokens: Some(self.summary_budget(older)),
            temperature: None,
            stop: Vec::new(),
            prompt_cache_key: None,
        };
        let opts = CompleteOptions {
            idle_timeout: self.config.complete.idle_timeout,
            ..CompleteOptions::background()
        };
        let result =
            codesmith_providers::complete(provider.as_ref(), &request, &opts, &mut |_| {}).await;
        if let Ok(response) = &result {
            // Accounted apart from the task's rounds; a note that cannot be written loses
            // only the figure.
            let _ = self.session.note(
                crate::session::NoteKind::Usage,
                serde_json::json!({
                    "usage": response.usage, "utility": true, "model": model,
                    "purpose": "compaction_summary",
                }),
            );
        }
        let now = std::time::Instant::now();
        match result {
            Err(e) if e.kind == ProviderErrorKind::ContextLength => {
                self.breaker.trip(now);
                None
            }
            result => {
                let summary = result.ok().map(|r| r.text).filter(|t| !t.trim().is_empty());
                self.breaker.record(summary.is_some(), now);
                summary
            }
        }
    }
}
