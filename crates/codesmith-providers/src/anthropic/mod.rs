//! The Anthropic Messages client.
//!
//! Requests are streamed and decoded by [`decode::AnthropicDecoder`]; the
//! terminal signal is `message_stop`. Rendering is in [`render`].

mod decode;
mod render;

use async_trait::async_trait;

use crate::http::{HttpClient, open_stream};
use crate::provider::{ChatRequest, EventStream, Provider, ProviderError};

pub(crate) use decode::AnthropicDecoder;

/// The default base URL; requests go to `{base_url}/v1/messages`.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The API version sent as `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Output cap used when the request sets none (the Messages API requires one).
pub const DEFAULT_ANTHROPIC_MAX_TOKENS: u32 = 8192;

/// Settings of an [`AnthropicProvider`], resolved by the caller.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Base URL without the version segment (`https://api.anthropic.com`);
    /// a URL ending in `/v1` is accepted too.
    pub base_url: String,
    /// API key sent as `x-api-key`; `None` sends no key header.
    pub api_key: Option<String>,
    /// `max_tokens` when the request has none; [`DEFAULT_ANTHROPIC_MAX_TOKENS`] by default.
    pub default_max_tokens: u32,
    /// Mark the system prompt (and with it the tool catalogue before it) as
    /// a prompt-cache prefix (`cache_control: ephemeral`). Default true.
    pub cache_prompt: bool,
    /// Whether the model reads images (`[anthropic] images`, default true); when false,
    /// each image is sent as a short text saying it was omitted and why.
    pub images: bool,
}

impl AnthropicConfig {
    /// A config for `base_url` with `api_key` and the default output cap.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        AnthropicConfig {
            base_url: base_url.into(),
            api_key,
            default_max_tokens: DEFAULT_ANTHROPIC_MAX_TOKENS,
            cache_prompt: true,
            images: true,
        }
    }
}

/// The environment variables that can hold an Anthropic key, in the order they are tried.
pub const ANTHROPIC_KEY_VARS: &[&str] = &["ANTHROPIC_API_KEY"];

/// The key from `ANTHROPIC_API_KEY`, with the variable's name (empty counts as unset).
pub fn anthropic_key_from_env() -> Option<(&'static str, String)> {
    ANTHROPIC_KEY_VARS.iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (*name, v))
    })
}

/// An Anthropic Messages provider (name `anthropic`).
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    config: AnthropicConfig,
    endpoint: String,
    http: HttpClient,
}

impl AnthropicProvider {
    /// Builds the provider. No request is made.
    ///
    /// # Errors
    /// `Internal` when the HTTP client cannot be built (TLS setup).
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim_end_matches('/');
        let endpoint = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        Ok(AnthropicProvider {
            http: HttpClient::new("anthropic")?,
            endpoint,
            config,
        })
    }

    /// The request body this provider would send for `request`.
    pub fn render(&self, request: &ChatRequest) -> serde_json::Value {
        render::render_request(
            request,
            self.config.default_max_tokens,
            self.config.cache_prompt,
            self.config.images,
        )
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn accepts_images(&self) -> bool {
        self.config.images
    }

    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let body = self.render(request);
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
        if let Some(key) = &self.config.api_key {
            headers.push(("x-api-key", key.clone()));
        }
        open_stream(
            &self.http,
            "anthropic",
            &self.endpoint,
            &headers,
            &body,
            AnthropicDecoder::default(),
            self.config.api_key.as_deref(),
        )
        .await
    }
}
