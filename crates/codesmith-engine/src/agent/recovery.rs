//! Context-length recovery for the loop: when the provider says the request
//! no longer fits, run the stages of [`crate::context`] and send it again.

use codesmith_protocol::{Event, Message};
use codesmith_providers::{AssistantResponse, ChatRequest, CompleteOptions, ProviderErrorKind};

use super::{Engine, EngineError};
use crate::context;

impl Engine {
    /// One model request; on a context-length error, at most two recovery
    /// stages run and the request is sent again (see [`crate::context`]).
    pub(super) async fn request_with_recovery(
        &mut self,
        sink: &mut (dyn FnMut(Event) + Send),
    ) -> Result<AssistantResponse, EngineError> {
        let mut stage = 0;
        loop {
            match self.request(sink).await {
                Err(e) if e.kind == ProviderErrorKind::ContextLength && stage < 2 => {
                    stage += 1;
                    self.recover_context(stage, sink).await?;
                }
                other => return Ok(other?),
            }
        }
    }

    /// Recovery stage 1 clears old tool results (or, when there are none,
    /// goes straight on); stage 2 compacts with a summary, or trims locally
    /// when no summary can be had.
    async fn recover_context(
        &mut self,
        stage: u32,
        sink: &mut (dyn FnMut(Event) + Send),
    ) -> Result<(), EngineError> {
        let messages = self.session.messages().to_vec();
        if stage == 1
            && let Some(cleared) = context::clear_old_tool_results(&messages)
        {
            sink(Event::Notice {
                message: "The context window is full: cleared old tool results.".into(),
            });
            self.session
                .replace_messages("clear_tool_results", cleared)?;
            return Ok(());
        }
        self.compact_older(false, "The context window is full", sink)
            .await
            .map(|_| ())
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

    /// Stage two: everything before the kept tail becomes a summary (or a trim note).
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
        let (stage_name, replaced) = match self.summarize(&messages[..cut], manual).await {
            Some(summary) => ("summary", context::compacted(&summary, &messages, cut)),
            None => ("trim", context::trimmed(&messages, cut)),
        };
        sink(Event::Notice {
            message: format!("{why}: compacted {cut} earlier messages ({stage_name})."),
        });
        self.session.replace_messages(stage_name, replaced)?;
        Ok(cut)
    }

    /// Asks the model for a summary of `older`, through the circuit breaker
    /// and the background retry budget. `None` when it cannot be had.
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
        };
        let opts = CompleteOptions {
            idle_timeout: self.config.complete.idle_timeout,
            ..CompleteOptions::background()
        };
        let result =
            codesmith_providers::complete(self.provider.as_ref(), &request, &opts, &mut |_| {})
                .await;
        let summary = result.ok().map(|r| r.text).filter(|t| !t.trim().is_empty());
        self.breaker
            .record(summary.is_some(), std::time::Instant::now());
        summary
    }
}
