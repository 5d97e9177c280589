//! The embedded local model provider.
//!
//! CodeSmith's offline default: SmolLM2-135M-Instruct as a GGUF, run on the
//! CPU with candle's quantized llama, behind the same
//! [`codesmith_providers::Provider`] trait as the remote clients.

mod convert;
mod error;
pub mod fetch;
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
pub use provider::{DEFAULT_MAX_TOKENS, DEFAULT_MODEL, LocalProvider, is_default_model};
pub use tokenizer::{LocalTokenizer, Utf8Stream};
