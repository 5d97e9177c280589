//! Secret scrubbing for error texts.
//!
//! Provider error bodies sometimes echo the request's credentials (a proxy
//! that prints the `Authorization` header, a vendor that quotes the key it
//! rejected). Anything that reaches [`crate::ProviderError::message`], the
//! transcript or the model's context goes through [`scrub_secrets`] first
//! (seed 002: Bearer tokens are redacted from upstream error echoes).

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// What replaces a secret.
const REDACTED: &str = "[REDACTED]";

/// Minimum length of an opaque token (letters and digits mixed) treated as a key.
const MIN_OPAQUE_KEY_LEN: usize = 32;

/// `Bearer <token>` in any letter case.
static BEARER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{6,}").ok());

/// `api_key=...`, `"x-api-key": "..."`, `secret: ...` and similar assignments.
static ASSIGNMENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b((?:x-)?api[_-]?key|access[_-]?token|secret|password)("?\s*[:=]\s*"?)([^\s"',;}&]{6,})"#,
    )
    .ok()
});

/// Vendor-prefixed keys: `sk-...`, `sk-ant-...`, `sk-proj-...`, `gsk_...`, `xai-...`.
static PREFIXED: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\b(?:sk|gsk|xai|pk|rk)[-_][A-Za-z0-9_\-]{12,}").ok());

/// Long opaque tokens (hex, base64url); filtered to mixed letters and digits.
static OPAQUE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9_\-+/=]{32,}").ok());

/// Returns `text` with credentials replaced by `[REDACTED]`.
///
/// Replaced: `Bearer <token>` (kept as `Bearer [REDACTED]`), key assignments
/// such as `api_key=...` or `"x-api-key": "..."` (the name is kept),
/// vendor-prefixed keys (`sk-...`, `sk-ant-...`, `gsk_...`, `xai-...`) and
/// opaque tokens of 32 or more characters that mix letters and digits (hex
/// digests and base64 keys). Paths (which contain `/` between short
/// segments) and ordinary words are left alone. Never fails.
pub fn scrub_secrets(text: &str) -> String {
    let mut out = text.to_string();
    if let Some(re) = BEARER.as_ref() {
        out = re
            .replace_all(&out, |c: &Captures<'_>| format!("{} {REDACTED}", &c[1]))
            .into_owned();
    }
    if let Some(re) = ASSIGNMENT.as_ref() {
        out = re
            .replace_all(&out, |c: &Captures<'_>| {
                if &c[3] == REDACTED {
                    c[0].to_string()
                } else {
                    format!("{}{}{REDACTED}", &c[1], &c[2])
                }
            })
            .into_owned();
    }
    if let Some(re) = PREFIXED.as_ref() {
        out = re.replace_all(&out, REDACTED).into_owned();
    }
    if let Some(re) = OPAQUE.as_ref() {
        out = re
            .replace_all(&out, |c: &Captures<'_>| {
                let token = &c[0];
                if looks_like_key(token) {
                    REDACTED.to_string()
                } else {
                    token.to_string()
                }
            })
            .into_owned();
    }
    out
}

/// True for a long run that mixes letters and digits and is not a path.
fn looks_like_key(token: &str) -> bool {
    let core = token.trim_matches('/');
    if core.len() < MIN_OPAQUE_KEY_LEN || core.contains("//") || is_uuid(core) {
        return false;
    }
    // A path-like run ("usr/lib/x86_64-linux-gnu") has short segments.
    if core.contains('/') && core.split('/').all(|s| s.len() < MIN_OPAQUE_KEY_LEN) {
        return false;
    }
    let digits = core.bytes().any(|b| b.is_ascii_digit());
    let letters = core.bytes().any(|b| b.is_ascii_alphabetic());
    digits && letters
}

/// A canonical UUID (8-4-4-4-12 hex digits): request ids, kept for support.
fn is_uuid(token: &str) -> bool {
    let groups: Vec<&str> = token.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::scrub_secrets;

    #[test]
    fn bearer_tokens_are_redacted() {
        let s = scrub_secrets("header was Authorization: Bearer abc.DEF-123_xyz");
        assert_eq!(s, "header was Authorization: Bearer [REDACTED]");
        assert!(!scrub_secrets("bearer s3cr3tvalue").contains("s3cr3t"));
    }

    #[test]
    fn vendor_keys_are_redacted() {
        let s = scrub_secrets("Incorrect API key provided: sk-proj-AbCdEf1234567890xyz.");
        assert_eq!(s, "Incorrect API key provided: [REDACTED].");
        let s = scrub_secrets("key sk-ant-api03-aaaaBBBB1111cccc2222-dddd rejected");
        assert_eq!(s, "key [REDACTED] rejected");
    }

    #[test]
    fn assignments_keep_the_name() {
        let s = scrub_secrets(r#"{"x-api-key": "hunter2hunter2", "model": "m"}"#);
        assert_eq!(s, r#"{"x-api-key": "[REDACTED]", "model": "m"}"#);
        let s = scrub_secrets("GET /v1?api_key=abcdef123&x=1");
        assert_eq!(s, "GET /v1?api_key=[REDACTED]&x=1");
    }

    #[test]
    fn long_opaque_tokens_are_redacted() {
        let hex = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            scrub_secrets(&format!("token {hex} bad")),
            "token [REDACTED] bad"
        );
        let b64 = "AIzaSyD4nd0mG00gleK3yL00ksL1keTh1s12345";
        assert_eq!(scrub_secrets(b64), "[REDACTED]");
    }

    #[test]
    fn ordinary_text_is_untouched() {
        let text = "This model's maximum context length is 128000 tokens. \
                    See /usr/lib/x86_64-linux-gnu/libssl.so and context_length_exceeded. \
                    Request id 123e4567-e89b-12d3-a456-426614174000.";
        assert_eq!(scrub_secrets(text), text);
    }
}
