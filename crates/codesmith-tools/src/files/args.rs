//! Argument decoding shared by the file tools.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{ErrorCode, Refusal};

/// Decodes `args` into `T`, turning serde's complaint into `INVALID_ARGUMENTS`.
pub(crate) fn parse<T: DeserializeOwned>(
    tool: &str,
    args: Value,
    example: &str,
) -> Result<T, Refusal> {
    serde_json::from_value(args).map_err(|e| {
        Refusal::new(
            ErrorCode::InvalidArguments,
            format!("The arguments to {tool} are invalid: {e}."),
            format!("Call it like this: {example}"),
        )
        .with("tool", tool)
    })
}

/// `INVALID_ARGUMENTS` with a message and hint.
pub(crate) fn invalid(message: impl Into<String>, hint: impl Into<String>) -> Refusal {
    Refusal::new(ErrorCode::InvalidArguments, message, hint)
}
