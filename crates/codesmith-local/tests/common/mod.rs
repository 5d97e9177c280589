//! Shared helpers for the tests that need the real model.

use std::path::PathBuf;

/// Where tests cache the model: `$CODESMITH_HOME` when set, else
/// `target/codesmith-test-home` in the workspace (downloaded once, reused).
pub(crate) fn test_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CODESMITH_HOME") {
        return PathBuf::from(home);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/codesmith-test-home")
}

/// True (with a message on stderr) when `CODESMITH_SKIP_LOCAL_MODEL=1` asks to
/// skip the tests that need the real model.
pub(crate) fn skip_real_model(test: &str) -> bool {
    let skip = std::env::var("CODESMITH_SKIP_LOCAL_MODEL").is_ok_and(|v| v == "1");
    if skip {
        eprintln!(
            "SKIPPED {test}: CODESMITH_SKIP_LOCAL_MODEL=1 (the real local model is not fetched)"
        );
    }
    skip
}

/// Fetches (once) and returns the path of the cached Q8_0 model.
#[allow(clippy::unwrap_used, dead_code)]
pub(crate) fn model_path() -> PathBuf {
    codesmith_local::ensure_model(&test_home(), &mut |_| {}).unwrap()
}
