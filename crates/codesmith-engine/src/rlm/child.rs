//! Child model calls of an RLM session (`llm` / `llm_batch` in the REPL), through the
//! session's provider with fixed budgets: each
//! call times out after [`super::CHILD_TIMEOUT`], answers in at most
//! [`super::CHILD_MAX_TOKENS`] tokens unless configured otherwise, at most
//! [`super::MAX_BATCH`] prompts per batch; the usage of every call is added to the
//! session's totals ([`codesmith_tools::ChildUsage`]).

use std::sync::Arc;
use std::time::Duration;

use codesmith_protocol::Message;
use codesmith_providers::{ChatRequest, CompleteOptions, Provider};
use codesmith_tools::ChildUsage;

/// The system prompt of a child call that is a plain completion.
pub const CHILD_SYSTEM: &str = "You answer one sub-question of a larger task, handed to you by \
a program. Answer only what is asked, as briefly as the question allows, with no preamble. You \
have no tools and cannot see anything but this message.";

/// What child calls go through.
#[derive(Clone)]
pub struct ChildModel {
    /// The session's provider.
    pub provider: Arc<dyn Provider>,
    /// The model name sent.
    pub model: String,
    /// Retry and watchdog settings (the session's).
    pub complete: CompleteOptions,
    /// Wall time of one call, retries included.
    pub timeout: Duration,
    /// Output-token cap of one call.
    pub max_tokens: u32,
}

impl std::fmt::Debug for ChildModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildModel")
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl ChildModel {
    /// One plain completion of `prompt`: its text, or why it failed. Usage goes to `usage`.
    ///
    /// # Errors
    /// A sentence saying why: the provider's error, or the timeout.
    pub async fn complete(&self, prompt: &str, usage: &ChildUsage) -> Result<String, String> {
        let request = ChatRequest {
            model: self.model.clone(),
            system: CHILD_SYSTEM.to_string(),
            messages: vec![Message::user_text(prompt)],
            tools: Vec::new(),
            max_tokens: Some(self.max_tokens),
            temperature: None,
            stop: Vec::new(),
            prompt_cache_key: None,
        };
        let mut quiet = |_| {};
        let call = codesmith_providers::complete(
            self.provider.as_ref(),
            &request,
            &self.complete,
            &mut quiet,
        );
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(response)) => {
                usage.add(&response.usage);
                Ok(response.text)
            }
            Ok(Err(e)) => Err(format!("the model request failed: {e}")),
            Err(_) => Err(format!(
                "it timed out after {} s (the child-call limit)",
                self.timeout.as_secs_f64()
            )),
        }
    }

    /// Plain completions of every prompt, concurrently, in order. The first failure fails
    /// the batch, naming which prompt failed.
    ///
    /// # Errors
    /// As [`ChildModel::complete`], prefixed with the prompt's position.
    pub async fn batch(
        &self,
        prompts: &[String],
        usage: &ChildUsage,
    ) -> Result<Vec<String>, String> {
        let calls = prompts.iter().map(|p| self.complete(p, usage));
        let answers = futures::future::join_all(calls).await;
        let total = answers.len();
        answers
            .into_iter()
            .enumerate()
            .map(|(i, a)| a.map_err(|e| format!("child call {} of {total}: {e}", i + 1)))
            .collect()
    }
}
