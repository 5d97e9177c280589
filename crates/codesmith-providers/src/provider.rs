//! The provider trait and its request, event and error types.

use async_trait::async_trait;
use codesmith_protocol::{Message, StopReason, ToolSpec, Usage};
use futures::stream::BoxStream;

/// A vendor-neutral request. Providers render it into their dialect.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// Model name (or, for the local provider, a GGUF path or the default name).
    pub model: String,
    /// The system prompt, byte-stable within a session.
    pub system: String,
    /// The transcript so far; append-only within a session.
    pub messages: Vec<Message>,
    /// The tool catalogue, sorted by name.
    pub tools: Vec<ToolSpec>,
    /// Output-token cap for this response, if any.
    pub max_tokens: Option<u32>,
    /// Sampling temperature, if set.
    pub temperature: Option<f32>,
    /// Extra stop sequences.
    pub stop: Vec<String>,
    /// A session-stable key for the provider's prompt cache (OpenAI's
    /// `prompt_cache_key`, which routes requests sharing a prefix to the same
    /// cache); sent only where the provider's switch allows it.
    pub prompt_cache_key: Option<String>,
}

/// One event of a streamed model response, already lifted out of the wire format.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    /// Visible text.
    TextDelta(String),
    /// Thinking text (`reasoning_content`, Anthropic thinking blocks, ...).
    ThinkingDelta(String),
    /// Visible text of a refusal (OpenAI `delta.refusal` / `message.refusal`):
    /// shown as answer text, and the response is marked as a refusal. Empty
    /// when a stop reason alone says so (Anthropic `refusal`).
    RefusalDelta(String),
    /// A tool call begins. `index` orders calls within the response.
    ToolCallStart {
        /// Position of the call in the response.
        index: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// More raw argument text for the call at `index`.
    ToolCallDelta {
        /// Position of the call in the response.
        index: usize,
        /// Raw JSON text fragment.
        arguments: String,
    },
    /// Usage reported by the provider.
    Usage(Usage),
    /// Something the provider sent that could not be used as sent (a usage
    /// figure that is not a whole number in range, ...), for the user to
    /// see. The response goes on; the text names the field and says what was
    /// wrong with it, never quoting the value (it may hold terminal controls).
    Notice(String),
    /// The source is alive and working but has nothing to show yet (an SSE
    /// `ping`, the embedded model prefilling or writing a constrained tool
    /// call). It resets the stream idle timeout and is otherwise ignored:
    /// nothing renders it, the reducer and transcripts skip it.
    KeepAlive,
    /// The protocol's terminal signal arrived. `stop_reason` is `None` when
    /// the wire omitted it (the reducer derives one).
    Completed {
        /// Stop reason from the wire, if any.
        stop_reason: Option<StopReason>,
    },
}

/// A stream of provider events. A stream that ends without
/// [`ProviderEvent::Completed`] was interrupted.
pub type EventStream = BoxStream<'static, Result<ProviderEvent, ProviderError>>;

/// A model backend.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Short provider name (`openai`, `anthropic`, `local`).
    fn name(&self) -> &str;

    /// Input tokens `request` is expected to cost on this provider, for context-fill
    /// displays before the request is sent. A provider that renders a request very
    /// differently from its vendor-neutral form (the embedded model's compact tool
    /// list, say) overrides this; the default `None` lets the caller estimate from the
    /// request itself.
    fn estimate_input_tokens(&self, _request: &ChatRequest) -> Option<u64> {
        None
    }

    /// Whether the model reads images: false for the embedded model and for a remote one
    /// configured with `images = false`. Tools ask it (through the engine) before they
    /// answer with an image; a provider sends an image it is given anyway as a short text
    /// saying it was omitted and why.
    fn accepts_images(&self) -> bool {
        true
    }

    /// Sends one request and returns the response as a stream of events.
    ///
    /// # Errors
    /// A [`ProviderError`] whose [`ProviderErrorKind`] says whether a retry may help.
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError>;
}

/// The category of a provider failure, by who must act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderErrorKind {
    /// The request itself is wrong (bad parameters).
    InvalidRequest,
    /// The context window was exceeded; has its own recovery.
    ContextLength,
    /// 429 or a quota signal.
    RateLimit,
    /// The request or stream timed out (including the idle watchdog).
    Timeout,
    /// Connection refused, reset, DNS, TLS, or a stream cut without a terminal signal.
    Network,
    /// 401: the key is missing or wrong.
    Auth,
    /// 403: the key may not use this model or endpoint.
    Authorization,
    /// A state conflict on the provider's side (409 and similar).
    State,
    /// 5xx or anything unclassified.
    Internal,
}

impl ProviderErrorKind {
    /// Whether retrying the same request may help. Only authentication,
    /// authorization and context-length errors fail without retry.
    pub fn is_retryable(self) -> bool {
        match self {
            ProviderErrorKind::Auth
            | ProviderErrorKind::Authorization
            | ProviderErrorKind::ContextLength => false,
            ProviderErrorKind::InvalidRequest
            | ProviderErrorKind::RateLimit
            | ProviderErrorKind::Timeout
            | ProviderErrorKind::Network
            | ProviderErrorKind::State
            | ProviderErrorKind::Internal => true,
        }
    }
}

/// A provider failure.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    /// The category.
    pub kind: ProviderErrorKind,
    /// Human-readable text with secrets scrubbed.
    pub message: String,
    /// HTTP status, when there was a response.
    pub status: Option<u16>,
    /// Server-requested wait (`Retry-After`), in milliseconds.
    pub retry_after_ms: Option<u64>,
}

impl ProviderError {
    /// A new error of `kind` with `message`.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        ProviderError {
            kind,
            message: message.into(),
            status: None,
            retry_after_ms: None,
        }
    }
}
