//! Model providers for CodeSmith.
//!
//! A [`Provider`] turns a vendor-neutral [`ChatRequest`] into a stream of
//! [`ProviderEvent`]s. Remote clients (OpenAI-compatible Chat Completions,
//! Anthropic Messages) live here; the embedded local model lives in
//! `codesmith-local` behind the same trait.
//!
//! The engine calls [`complete()`] for every model request: it retries what
//! may be retried, watches the stream for stalls, insists on the protocol's
//! terminal signal and reduces the events into an [`AssistantResponse`].
//! Error texts pass through [`codesmith_policy::scrub_secrets`] before they are shown.

mod anthropic;
mod complete;
mod http;
mod openai;
mod provider;
mod reduce;
mod sse;
mod taxonomy;
mod usage;

pub use anthropic::{
    ANTHROPIC_KEY_VARS, ANTHROPIC_VERSION, AnthropicConfig, AnthropicProvider,
    DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_ANTHROPIC_MAX_TOKENS, anthropic_key_from_env,
};
pub use complete::{CompleteOptions, StreamNotice, complete};
pub use http::{CONNECT_TIMEOUT, HTTP2_KEEPALIVE_INTERVAL, HTTP2_KEEPALIVE_TIMEOUT};
pub use openai::{
    DEFAULT_OPENAI_BASE_URL, OpenAiConfig, OpenAiProvider, REASONING_PLACEHOLDER, ReasoningReplay,
    Vendor, openai_key_from_env, openai_key_vars,
};
pub use provider::{
    ChatRequest, EventStream, Provider, ProviderError, ProviderErrorKind, ProviderEvent,
};
pub use reduce::{AssistantResponse, ReducedCall, StreamReducer, derive_stop_reason};
pub use sse::MAX_STREAM_ERRORS_BEFORE_FAIL;
pub use taxonomy::{LENGTH_STOP_MISREPORTED_BY, misreports_length_stop};
pub use taxonomy::{
    MAX_RETRY_AFTER_MS, classify_status, mentions_context_length, parse_retry_after,
};
