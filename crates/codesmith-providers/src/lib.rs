//! Model providers for CodeSmith.
//!
//! A [`Provider`] turns a vendor-neutral [`ChatRequest`] into a stream of
//! [`ProviderEvent`]s. Remote clients (OpenAI-compatible Chat Completions,
//! Anthropic Messages) live here; the embedded local model lives in
//! `codesmith-local` behind the same trait.

mod provider;

pub use provider::{
    ChatRequest, EventStream, Provider, ProviderError, ProviderErrorKind, ProviderEvent,
};
