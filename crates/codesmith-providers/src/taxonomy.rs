//! The error taxonomy: HTTP status, body and transport failures mapped to
//! [`ProviderErrorKind`].
//!
//! Classification is by who must act. Only authentication, authorization and
//! context-length errors are final; everything else is worth a bounded
//! number of retries, because misreading a transient error as final costs a
//! failed session while misreading a final one costs only a few retries.

use std::time::{Duration, SystemTime};

use crate::provider::{ProviderError, ProviderErrorKind};
use codesmith_policy::scrub_secrets;

/// Upper bound on a server-requested wait (`Retry-After`): one day, in milliseconds.
pub const MAX_RETRY_AFTER_MS: u64 = 24 * 60 * 60 * 1000;

/// Longest error-body excerpt kept in a message, in characters.
const MAX_BODY_EXCERPT: usize = 600;

/// Phrases vendors use for an over-long prompt (lower-cased).
const CONTEXT_LENGTH_MARKERS: &[&str] = &[
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "reduce the length",
    "input is too long",
    "exceeds the model",
];

/// Maps an HTTP status and response body to a kind.
///
/// 400 (and 413) with context-length wording → `ContextLength`; other 400,
/// 404, 422 → `InvalidRequest`; 401 → `Auth`; 403 → `Authorization`; 408 →
/// `Timeout`; 409 → `State`; 429 → `RateLimit`; 5xx and anything else →
/// `Internal` (retryable).
pub fn classify_status(status: u16, body: &str) -> ProviderErrorKind {
    match status {
        400 | 413 if mentions_context_length(body) => ProviderErrorKind::ContextLength,
        413 => ProviderErrorKind::ContextLength,
        400 | 404 | 405 | 415 | 422 => ProviderErrorKind::InvalidRequest,
        401 => ProviderErrorKind::Auth,
        403 => ProviderErrorKind::Authorization,
        408 => ProviderErrorKind::Timeout,
        409 => ProviderErrorKind::State,
        429 => ProviderErrorKind::RateLimit,
        _ => ProviderErrorKind::Internal,
    }
}

/// True when `text` says the prompt exceeded the context window.
pub fn mentions_context_length(text: &str) -> bool {
    let lower = text.to_lowercase();
    CONTEXT_LENGTH_MARKERS.iter().any(|m| lower.contains(m))
}

/// Parses a `Retry-After` value: delay seconds (`"7"`, `"1.5"`) or an HTTP
/// date (RFC 9110), relative to `now`. Returns milliseconds, capped at
/// [`MAX_RETRY_AFTER_MS`]; a date in the past gives 0; garbage gives `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs.saturating_mul(1000).min(MAX_RETRY_AFTER_MS));
    }
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            let ms = (secs * 1000.0).min(MAX_RETRY_AFTER_MS as f64);
            return Some(ms as u64);
        }
        return None;
    }
    let when = httpdate::parse_http_date(value).ok()?;
    let wait = when.duration_since(now).unwrap_or(Duration::ZERO);
    Some((wait.as_millis() as u64).min(MAX_RETRY_AFTER_MS))
}

/// Builds the error for a non-success HTTP response.
///
/// The message names the provider and status, quotes the vendor's own error
/// text (the `error.message` field when the body is JSON, else an excerpt),
/// adds what to do for auth and context errors, and is scrubbed of secrets.
pub(crate) fn error_from_response(
    provider: &str,
    status: u16,
    retry_after: Option<&str>,
    body: &str,
) -> ProviderError {
    let kind = classify_status(status, body);
    let detail = body_detail(body);
    let hint = match kind {
        ProviderErrorKind::Auth => {
            " — the API key is missing or wrong; check the key variable or config for this provider"
        }
        ProviderErrorKind::Authorization => {
            " — the key may not use this model or endpoint; check the model name and the account"
        }
        ProviderErrorKind::ContextLength => {
            " — the request exceeds the model's context window; compact or shorten the history"
        }
        _ => "",
    };
    let message = format!("{provider} returned HTTP {status}: {detail}{hint}");
    ProviderError {
        kind,
        message: scrub_secrets(&message).into_owned(),
        status: Some(status),
        retry_after_ms: retry_after.and_then(|v| parse_retry_after(v, SystemTime::now())),
    }
}

/// Providers (by [`crate::Provider::name`]) known to report the output-token stop
/// reason (`length`, `max_tokens`) on turns that ended normally. Empty: an entry is
/// added only for a provider caught doing it repeatedly. The truncation gate consults it
/// ([`misreports_length_stop`]): for such a provider a length stop whose tool calls all
/// carry complete arguments is not taken as a cut-off turn. Arguments that do not parse
/// are refused as cut off whatever the provider.
pub const LENGTH_STOP_MISREPORTED_BY: &[&str] = &[];

/// True when `provider` is in [`LENGTH_STOP_MISREPORTED_BY`].
pub fn misreports_length_stop(provider: &str) -> bool {
    LENGTH_STOP_MISREPORTED_BY.contains(&provider)
}

/// Builds the error for an in-stream error object (`{"error": {...}}` or
/// Anthropic's `event: error`). `error_type` is the vendor's error type.
pub(crate) fn error_from_stream(provider: &str, error_type: &str, message: &str) -> ProviderError {
    let kind = match error_type {
        "rate_limit_error" | "rate_limit_exceeded" | "insufficient_quota" => {
            ProviderErrorKind::RateLimit
        }
        "authentication_error" | "invalid_api_key" => ProviderErrorKind::Auth,
        "permission_error" => ProviderErrorKind::Authorization,
        "context_length_exceeded" | "request_too_large" => ProviderErrorKind::ContextLength,
        "invalid_request_error" if mentions_context_length(message) => {
            ProviderErrorKind::ContextLength
        }
        "invalid_request_error" => ProviderErrorKind::InvalidRequest,
        "timeout_error" => ProviderErrorKind::Timeout,
        _ if mentions_context_length(message) => ProviderErrorKind::ContextLength,
        _ => ProviderErrorKind::Internal,
    };
    let text = format!("{provider} stream error ({error_type}): {message}");
    ProviderError::new(kind, scrub_secrets(&text))
}

/// Maps a transport failure (connect, TLS, reset, timeout, body read).
pub(crate) fn error_from_transport(provider: &str, err: &reqwest::Error) -> ProviderError {
    let kind = if err.is_timeout() {
        ProviderErrorKind::Timeout
    } else {
        ProviderErrorKind::Network
    };
    let text = format!("{provider} request failed: {}", error_chain(err));
    ProviderError::new(kind, scrub_secrets(&text))
}

/// The error and all its sources, joined with `: `.
pub(crate) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

/// The vendor's own error text from a body, or a bounded excerpt.
fn body_detail(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        let message = value
            .pointer("/error/message")
            .or_else(|| value.get("message"))
            .or_else(|| value.get("error"))
            .and_then(|m| m.as_str());
        if let Some(message) = message {
            return excerpt(message);
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        "(empty response body)".to_string()
    } else {
        excerpt(trimmed)
    }
}

/// At most [`MAX_BODY_EXCERPT`] characters of `text`, marked when cut.
fn excerpt(text: &str) -> String {
    if text.chars().count() <= MAX_BODY_EXCERPT {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX_BODY_EXCERPT).collect();
    format!("{cut}…")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_kinds() {
        let ctx = r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#;
        assert_eq!(classify_status(400, ctx), ProviderErrorKind::ContextLength);
        assert_eq!(
            classify_status(400, "bad"),
            ProviderErrorKind::InvalidRequest
        );
        assert_eq!(classify_status(401, ""), ProviderErrorKind::Auth);
        assert_eq!(classify_status(403, ""), ProviderErrorKind::Authorization);
        assert_eq!(classify_status(408, ""), ProviderErrorKind::Timeout);
        assert_eq!(classify_status(409, ""), ProviderErrorKind::State);
        assert_eq!(classify_status(429, ""), ProviderErrorKind::RateLimit);
        for s in [500, 502, 503, 504, 529] {
            assert_eq!(classify_status(s, ""), ProviderErrorKind::Internal);
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(parse_retry_after("3", now), Some(3000));
        assert_eq!(parse_retry_after(" 0.5 ", now), Some(500));
        assert_eq!(
            parse_retry_after("999999999", now),
            Some(MAX_RETRY_AFTER_MS)
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(42));
        assert_eq!(parse_retry_after(&later, now), Some(42_000));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(42));
        assert_eq!(parse_retry_after(&earlier, now), Some(0));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn response_errors_quote_the_vendor_and_scrub() {
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-abc123def456ghi789"}}"#;
        let err = error_from_response("openai", 401, None, body);
        assert_eq!(err.kind, ProviderErrorKind::Auth);
        assert_eq!(err.status, Some(401));
        assert!(err.message.contains("HTTP 401"), "{}", err.message);
        assert!(err.message.contains("Incorrect API key provided"));
        assert!(!err.message.contains("sk-abc"), "{}", err.message);
        let err = error_from_response("openai", 429, Some("2"), "slow down");
        assert_eq!(err.retry_after_ms, Some(2000));
    }
}
