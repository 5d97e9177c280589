//! Turning `codesmith-patch` errors into typed refusals.

use codesmith_patch::{ParseError, PatchError};
use serde_json::json;

use crate::{ErrorCode, Refusal};

/// A patch that does not parse: `INVALID_ARGUMENTS` with the patch line.
pub(super) fn parse(e: ParseError) -> Refusal {
    Refusal::new(
        ErrorCode::InvalidArguments,
        format!("The patch does not parse: {e}."),
        e.hint.clone(),
    )
    .with("patch_line", e.line)
    .with("reason", format!("{:?}", e.kind))
}

/// A patch that parses but does not apply.
pub(super) fn patch(e: PatchError) -> Refusal {
    let hint = e.hint();
    match e {
        PatchError::Parse(p) => parse(p),
        PatchError::NotFound { ref path, .. } => Refusal::new(
            ErrorCode::NotFound,
            format!("The patch was not applied: {e}. No file was changed."),
            hint,
        )
        .with("path", path.as_str()),
        PatchError::InvalidPath { ref path, .. } => Refusal::new(
            ErrorCode::InvalidArguments,
            format!("The patch was not applied: {e}."),
            hint,
        )
        .with("path", path.as_str()),
        PatchError::HunkFailed(f) => {
            let actual: Vec<_> = f
                .actual
                .iter()
                .map(|(n, t)| json!({"line": n, "text": t}))
                .collect();
            Refusal::new(
                ErrorCode::PatchFailed,
                format!("The patch was not applied (no file was changed): {f}"),
                hint,
            )
            .with("path", f.path.as_str())
            .with("hunk", f.hunk)
            .with("patch_line", f.patch_line)
            .with("expected", json!(f.expected))
            .with("best_guess_line", f.best_guess_line)
            .with("actual", json!(actual))
            .with("missing_anchor", json!(f.missing_anchor))
        }
        _ => Refusal::new(
            ErrorCode::PatchFailed,
            format!("The patch was not applied: {e}."),
            hint,
        ),
    }
}
