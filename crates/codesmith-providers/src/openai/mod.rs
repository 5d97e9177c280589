//! The OpenAI-compatible Chat Completions client (OpenAI, DeepSeek,
//! OpenRouter, vLLM, llama.cpp server, Ollama).
//!
//! Requests are streamed (`stream: true` with `stream_options.include_usage`)
//! and decoded by [`decode::OpenAiDecoder`]; the neutral transcript is
//! rendered per [`Vendor`] by [`render::render_request`].

mod decode;
mod render;

use async_trait::async_trait;

use crate::http::{HttpClient, open_stream};
use crate::provider::{ChatRequest, EventStream, Provider, ProviderError};

pub(crate) use decode::OpenAiDecoder;

/// The default base URL (OpenAI's public API, with the `/v1` segment).
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Placeholder `reasoning_content` for a replayed tool round whose thinking
/// text is empty (DeepSeek's thinking mode rejects a tool round without the
/// field with HTTP 400).
pub const REASONING_PLACEHOLDER: &str = "(reasoning omitted)";

/// Whether earlier assistant tool rounds carry their thinking back to the
/// server as `reasoning_content` (`[openai] reasoning_replay` in the config).
///
/// Servers that stream `reasoning_content` (DeepSeek, also behind a proxy,
/// vLLM and llama.cpp with a reasoning parser, OpenRouter) may need it back
/// on the tool rounds of thinking mode; others reject or ignore it. A
/// replayed tool round without thinking text gets [`REASONING_PLACEHOLDER`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReasoningReplay {
    /// Replay for a DeepSeek endpoint, and for any other endpoint except
    /// OpenAI's own once the session's transcript holds thinking text the
    /// server sent. The default.
    #[default]
    Auto,
    /// Always replay (placeholder included), whatever the endpoint.
    Always,
    /// Never send `reasoning_content`.
    Never,
}

impl std::str::FromStr for ReasoningReplay {
    type Err = String;

    /// Parses `auto`, `always` or `never`.
    ///
    /// # Errors
    /// Any other text, with the accepted values in the message.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ReasoningReplay::Auto),
            "always" => Ok(ReasoningReplay::Always),
            "never" => Ok(ReasoningReplay::Never),
            other => Err(format!(
                "reasoning_replay = {other:?} is not known: use \"auto\", \"always\" or \"never\""
            )),
        }
    }
}

/// The vendor behind an OpenAI-compatible endpoint, which decides the dialect
/// details of a rendered request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// OpenAI itself: the cap is sent as `max_completion_tokens`;
    /// `reasoning_content` is not replayed under [`ReasoningReplay::Auto`].
    OpenAi,
    /// DeepSeek: assistant messages that carry tool calls get a
    /// `reasoning_content` field (thinking text, or [`REASONING_PLACEHOLDER`])
    /// under [`ReasoningReplay::Auto`].
    DeepSeek,
    /// Any other compatible server: `max_tokens`; `reasoning_content`
    /// replayed under [`ReasoningReplay::Auto`] once the server sent thinking.
    Generic,
}

impl Vendor {
    /// Guesses the vendor from a base URL's host (`deepseek` → DeepSeek,
    /// `api.openai.com` → OpenAI, else Generic). Only the host counts: userinfo
    /// (`user:pass@`), the port, the path, the query and a trailing dot do not, so
    /// `http://deepseek:x@127.0.0.1/v1` is Generic (its host is not DeepSeek's, and
    /// `DEEPSEEK_API_KEY` must not be sent there) and `https://u:p@api.deepseek.com`
    /// is DeepSeek.
    pub fn detect(base_url: &str) -> Vendor {
        let lower = base_url.to_ascii_lowercase();
        let rest = lower.split_once("://").map_or(lower.as_str(), |(_, r)| r);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = if host_port.starts_with('[') {
            host_port
                .split(']')
                .next()
                .map_or("", |h| h.trim_start_matches('['))
        } else {
            host_port.split(':').next().unwrap_or("")
        };
        let host = host.strip_suffix('.').unwrap_or(host);
        if host.contains("deepseek") {
            Vendor::DeepSeek
        } else if host == "api.openai.com" {
            Vendor::OpenAi
        } else {
            Vendor::Generic
        }
    }
}

/// Settings of an [`OpenAiProvider`], resolved by the caller (the CLI takes
/// `--base-url`, `OPENAI_BASE_URL` or config, and the key from the
/// environment or config; see [`openai_key_from_env`]).
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL including the version segment, e.g. `https://api.openai.com/v1`;
    /// requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    /// API key sent as `Authorization: Bearer …`; `None` sends no header
    /// (local servers such as llama.cpp or Ollama).
    pub api_key: Option<String>,
    /// Dialect details; [`Vendor::detect`] of the base URL by default.
    pub vendor: Vendor,
    /// Whether thinking goes back as `reasoning_content`; [`ReasoningReplay::Auto`] by default.
    pub reasoning_replay: ReasoningReplay,
    /// Whether requests carry the session's `prompt_cache_key` (OpenAI routes
    /// requests with the same key and prefix to the same prompt cache). By
    /// default on for [`Vendor::OpenAi`] and off elsewhere (other servers may
    /// reject an unknown field).
    pub prompt_cache_key: bool,
    /// Whether the model reads images (`[openai] images`, default true); when false,
    /// each image is sent as a short text saying it was omitted and why.
    pub images: bool,
}

impl OpenAiConfig {
    /// A config for `base_url` with `api_key`, the vendor detected from the URL.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        let base_url = base_url.into();
        let vendor = Vendor::detect(&base_url);
        OpenAiConfig {
            base_url,
            api_key,
            vendor,
            reasoning_replay: ReasoningReplay::Auto,
            prompt_cache_key: vendor == Vendor::OpenAi,
            images: true,
        }
    }
}

/// The environment variables that can hold the key for `base_url`, in the order they are
/// tried: `DEEPSEEK_API_KEY` then `OPENAI_API_KEY` for a DeepSeek URL, else only
/// `OPENAI_API_KEY`. The one list both the client and `codesmith doctor` use.
pub fn openai_key_vars(base_url: &str) -> &'static [&'static str] {
    match Vendor::detect(base_url) {
        Vendor::DeepSeek => &["DEEPSEEK_API_KEY", "OPENAI_API_KEY"],
        Vendor::OpenAi | Vendor::Generic => &["OPENAI_API_KEY"],
    }
}

/// The key for `base_url` from the environment, with the variable that held it: the
/// first of [`openai_key_vars`] that is set. Empty values count as unset.
pub fn openai_key_from_env(base_url: &str) -> Option<(&'static str, String)> {
    openai_key_vars(base_url).iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (*name, v))
    })
}

/// An OpenAI-compatible Chat Completions provider (name `openai`).
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    endpoint: String,
    http: HttpClient,
}

impl OpenAiProvider {
    /// Builds the provider. No request is made.
    ///
    /// # Errors
    /// `Internal` when the HTTP client cannot be built (TLS setup).
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let endpoint = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        Ok(OpenAiProvider {
            http: HttpClient::new("openai")?,
            endpoint,
            config,
        })
    }

    /// The request body this provider would send for `request` (for tests
    /// and `--dry-run` style inspection).
    pub fn render(&self, request: &ChatRequest) -> serde_json::Value {
        render::render_request(
            request,
            self.config.vendor,
            self.config.reasoning_replay,
            self.config.prompt_cache_key,
            self.config.images,
        )
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn accepts_images(&self) -> bool {
        self.config.images
    }

    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let body = self.render(request);
        let mut headers = Vec::new();
        if let Some(key) = &self.config.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        open_stream(
            &self.http,
            "openai",
            &self.endpoint,
            &headers,
            &body,
            OpenAiDecoder::default(),
            self.config.api_key.as_deref(),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::Vendor;

    #[test]
    fn vendor_is_detected_from_the_host() {
        assert_eq!(
            Vendor::detect("https://api.deepseek.com/v1"),
            Vendor::DeepSeek
        );
        assert_eq!(Vendor::detect("https://api.openai.com/v1"), Vendor::OpenAi);
        assert_eq!(Vendor::detect("http://127.0.0.1:8080/v1"), Vendor::Generic);
        assert_eq!(
            Vendor::detect("https://openrouter.ai/api/v1"),
            Vendor::Generic
        );
        // Only the host counts, never userinfo, path or query.
        assert_eq!(
            Vendor::detect("http://deepseek:x@127.0.0.1:9/v1"),
            Vendor::Generic
        );
        assert_eq!(
            Vendor::detect("http://127.0.0.1:9/deepseek/v1"),
            Vendor::Generic
        );
        assert_eq!(
            Vendor::detect("http://127.0.0.1:9?deepseek"),
            Vendor::Generic
        );
        assert_eq!(
            Vendor::detect("https://user:sk-secret@api.deepseek.com/v1"),
            Vendor::DeepSeek
        );
        assert_eq!(
            Vendor::detect("https://a@b@api.openai.com./v1"),
            Vendor::OpenAi
        );
        assert_eq!(Vendor::detect("http://[::1]:8080/v1"), Vendor::Generic);
    }
}
