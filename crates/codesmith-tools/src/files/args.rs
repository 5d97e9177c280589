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

/// The freshness check of a writing tool. In one-shot mode (`codesmith tool`), where a read
/// cannot carry over between invocations, the hint names `force_fresh` as the way through.
pub(crate) fn check_fresh(
    ctx: &crate::ToolContext,
    abs: &std::path::Path,
    rel: &str,
) -> Result<(), Refusal> {
    ctx.freshness.check(abs, rel).map_err(|mut r| {
        if ctx.force_fresh_allowed {
            r.hint = format!(
                "{} In a one-shot call, pass \"force_fresh\": true instead (edit_file also \
                 accepts the file's current sha256).",
                r.hint
            );
        }
        r
    })
}

/// Refuses `force_fresh` outside one-shot callers (`codesmith tool`, MCP): in a
/// model session it would skip the read-before-write check. `next_step` is the
/// hint, e.g. "Read the file with read_file first, then edit it."
pub(crate) fn allow_force_fresh(
    ctx: &crate::ToolContext,
    requested: bool,
    next_step: &str,
) -> Result<(), Refusal> {
    if requested && !ctx.force_fresh_allowed {
        return Err(invalid(
            "force_fresh is only accepted from one-shot callers (`codesmith tool`, the MCP server), not in a session.",
            next_step,
        ));
    }
    Ok(())
}
