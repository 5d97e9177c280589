//! Context-length recovery for the loop: when the provider says the request
//! no longer fits, run the next level of [`crate::context`] and send it again.

use codesmith_protocol::{Event, Message};
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

impl Engine {
    /// One model request; on a context-length error the next recovery level runs and
    /// the request is sent again, until a level has nothing left to cut: then the turn
    /// fails with [`EngineError::TaskTooLarge`].
    pub(super) async fn request_with_recovery(
        &mut self,
        sink: &mut (dyn FnMut(Event) + Send),
    ) -> Result<AssistantResponse, EngineError> {
        let mut next = Some(Level::ClearToolResults);
        loop {
            match self.request(sink).await {
                Err(e) if e.kind == ProviderErrorKind::ContextLength => {
                    let Some(level) = next else {
                        return Err(self.task_too_large());
                    };
                    next = self.recover_context(level, sink).await?;
                }
                other => return Ok(other?),
            }
        }
    }

    fn task_too_large(&self) -> EngineError {
        let tokens = context::estimate_tokens(&self.config.system_prompt, self.session.messages())
            + self.catalog_tokens;
        EngineError::TaskTooLarge { tokens }
    }

    /// Runs the first level from `level` on that changes the transcript; returns the
    /// level to try on the next refusal (`None`: nothing is left to cut).
    async fn recover_context(
        &mut self,
        level: Level,
        sink: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Option<Level>, EngineError> {
        let messages = self.session.messages().to_vec();
        if level == Level::ClearToolResults
            && let Some(cleared) = context::clear_old_tool_results(&messages)
        {
            sink(Event::Notice {
                message: "The context window is full: cleared old tool results.".into(),
            });
            self.session
                .replace_messages("clear_tool_results", cleared)?;
            return Ok(Some(Level::Compact));
        }
        if level != Level::Minimal
            && self
                .compact_older(false, "The context window is full", sink)
                .await?
                > 0
        {
            return Ok(Some(Level::Minimal));
        }
        let task = self.current_task.clone();
        let anchor = context::task_index(&messages, task.as_ref()).zip(task.as_ref());
        let Some(cut) = context::minimal_tail_start(&messages) else {
            return Err(self.task_too_large());
        };
        let folded = cut - usize::from(anchor.is_some_and(|(t, _)| t < cut));
        let Some(minimal) = context::compacted(&context::trim_note(folded), &messages, cut, anchor)
        else {
            return Err(self.task_too_large());
        };
        sink(Event::Notice {
            message: format!(
                "The context window is still full: kept only the task and the latest exchange \
                 ({folded} messages between them dropped)."
            ),
        });
        self.session.replace_messages("trim", minimal)?;
        Ok(None)
    }

    /// `/compact`: summarizes the older turns now, whatever the circuit
    /// breaker says (a manual compaction is always allowed), or trims them when
    /// no summary can be had. Returns how many messages were folded away (0
    /// when the transcript is too short to compact).
    ///
    /// # Errors
    /// [`EngineError::Session`] when the transcript cannot be written.
    pub async fn compact(
        &mut self,
        sink: &mut (dyn FnMut(Event) + Send),
    ) -> Result<usize, EngineError> {
        self.compact_older(true, "Compacted on request", sink).await
    }

    /// Level two: everything before the kept tail, except the task's first message,
    /// becomes a summary (or a trim note). Returns how many messages were folded.
    async fn compact_older(
        &mut self,
        manual: bool,
        why: &str,
        sink: &mut (dyn FnMut(Event) + Send),
    ) -> Result<usize, EngineError> {
        let messages = self.session.messages().to_vec();
        let Some(cut) = context::tail_start(&messages) else {
            return Ok(0);
        };
        // A manual compaction runs between tasks: no task is running to pin.
        let task = if manual {
            None
        } else {
            self.current_task.clone()
        };
        let anchor = context::task_index(&messages, task.as_ref()).zip(task.as_ref());
        let older = context::folded(&messages, cut, anchor.map(|(t, _)| t));
        if older.is_empty() {
            return Ok(0);
        }
        let (stage_name, note) = match self.summarize(&older, manual).await {
            Some(summary) => ("summary", context::summary_note(&summary)),
            None => ("trim", context::trim_note(older.len())),
        };
        let Some(replaced) = context::compacted(&note, &messages, cut, anchor) else {
            return Ok(0);
        };
        sink(Event::Notice {
            message: format!(
                "{why}: compacted {} earlier messages ({stage_name}).",
                older.len()
            ),
        });
        self.session.replace_messages(stage_name, replaced)?;
        Ok(older.len())
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
        let request = ChatRequest {
            model: self.config.model.clone(),
            system: context::SUMMARY_PROMPT.to_string(),
            messages: vec![Message::user_text(context::transcript_text(older))],
            tools: Vec::new(),
            max_tokens: Some(1024),
            temperature: None,
            stop: Vec::new(),
            prompt_cache_key: None,
        };
        let opts = CompleteOptions {
            idle_timeout: self.config.complete.idle_timeout,
            ..CompleteOptions::background()
        };
        let result =
            codesmith_providers::complete(self.provider.as_ref(), &request, &opts, &mut |_| {})
                .await;
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
