//! One advisory model call: text in, text out, no tools, bounded in time.
//!
//! Shared by `doctor --analyze` and `memory consolidate --llm`. The request carries no
//! tool catalogue, so the model cannot ask to run anything; the answer is only ever
//! printed or validated by the caller, so the analysis never writes to disk.

use std::time::Duration;

use codesmith_protocol::Message;
use codesmith_providers::{ChatRequest, CompleteOptions, complete};

use crate::args::ProviderName;
use crate::config;
use crate::setup;

/// What to send.
#[derive(Debug, Clone)]
pub(crate) struct Advisory<'a> {
    /// Workspace for config resolution (`None`: the current directory).
    pub workspace: Option<&'a std::path::Path>,
    /// System prompt.
    pub system: String,
    /// The one user message.
    pub user: String,
    /// Output-token cap.
    pub max_tokens: u32,
    /// Whole-call deadline (provider construction included).
    pub deadline: Duration,
}

/// Sends one request through the `[utility_model]` when one is configured, else the
/// session's provider and model, and returns the answer's text.
///
/// # Errors
/// One line saying why nothing usable came back: configuration, the embedded model not
/// being cached (it is never downloaded here), transport or HTTP errors, an empty answer,
/// or the deadline.
pub(crate) async fn one_call(ask: Advisory<'_>) -> Result<String, String> {
    let deadline = ask.deadline;
    match tokio::time::timeout(deadline, call(ask)).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {} s", deadline.as_secs())),
    }
}

async fn call(ask: Advisory<'_>) -> Result<String, String> {
    let resolved = config::resolve(config::Flags {
        workspace: ask.workspace,
        model: &config::NO_MODEL_FLAGS,
        max_turns: None,
    })
    .map_err(|e| format!("{e:#}"))?;
    let setup_error = |e: setup::SetupError| match e {
        setup::SetupError::Usage(e) | setup::SetupError::Failed(e) => format!("{e:#}"),
    };
    // The `[utility_model]`, when one is configured, answers advisory calls.
    if let (Some(provider), Some(u)) = (
        setup::utility_provider(&resolved).map_err(setup_error)?,
        &resolved.utility,
    ) {
        return ask_model(provider.as_ref(), &u.model, ask).await;
    }
    if resolved.provider == ProviderName::Local
        && codesmith_local::is_default_model(&resolved.model)
        && !codesmith_local::fetch::models_dir(&resolved.home)
            .join(codesmith_local::fetch::CONVERTED_FILE)
            .is_file()
    {
        return Err("the embedded model is not cached (run `codesmith model fetch`)".into());
    }
    let provider = setup::provider(&resolved, &mut |_| {})
        .await
        .map_err(setup_error)?;
    ask_model(provider.as_ref(), &resolved.model, ask).await
}

/// Sends `ask` to `model` on `provider` and returns the answer's text.
async fn ask_model(
    provider: &dyn codesmith_providers::Provider,
    model: &str,
    ask: Advisory<'_>,
) -> Result<String, String> {
    let request = ChatRequest {
        model: model.to_string(),
        system: ask.system,
        messages: vec![Message::user_text(ask.user)],
        tools: Vec::new(),
        max_tokens: Some(ask.max_tokens),
        temperature: Some(0.0),
        stop: Vec::new(),
        prompt_cache_key: None,
    };
    let opts = CompleteOptions::background();
    let response = complete(provider, &request, &opts, &mut |_| {})
        .await
        .map_err(|e| codesmith_policy::scrub_secrets(&e.message).into_owned())?;
    let text = response.text.trim().to_string();
    if text.is_empty() || response.interrupted {
        return Err("the model returned no usable text".into());
    }
    Ok(text)
}
