//! The HTTP client shared by the remote providers.
//!
//! Connect timeout only: a streamed response has no whole-request deadline
//! (a long answer is legitimate); liveness is the idle watchdog's job in
//! [`crate::complete()`]. Some CDN edges negotiate HTTP/2 and then fail at
//! the protocol layer; the first such failure
//! switches every later request of the process to HTTP/1.1.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;

use crate::provider::{EventStream, ProviderError, ProviderErrorKind};
use crate::sse::{SseDecoder, decode_stream, parse_json};
use crate::taxonomy::{error_chain, error_from_response, error_from_transport};

/// Time allowed to open a connection (TCP and TLS).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often an HTTP/2 connection is pinged while a response streams (and while idle in
/// the pool): a long silent stream (a model thinking) keeps its connection known alive,
/// and a dead one is found by the ping's timeout instead of waiting for the stream's
/// idle watchdog.
pub const HTTP2_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(20);
/// How long a keepalive ping may go unanswered before the connection is closed.
pub const HTTP2_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Sticky, process-wide: set after the first HTTP/2 protocol failure.
static FORCE_HTTP1: AtomicBool = AtomicBool::new(false);

/// Markers of an HTTP/2 protocol failure in an error chain (lower-case).
const HTTP2_MARKERS: &[&str] = &[
    "http2",
    "h2 protocol",
    "goaway",
    "preface",
    "frame with invalid size",
];

/// Two clients: the default (HTTP/2 allowed through ALPN) and HTTP/1.1-only.
#[derive(Debug, Clone)]
pub(crate) struct HttpClient {
    default: reqwest::Client,
    http1: reqwest::Client,
}

impl HttpClient {
    /// Builds both clients.
    pub(crate) fn new(provider: &str) -> Result<Self, ProviderError> {
        install_crypto_provider();
        let build = |http1_only: bool| {
            let mut builder = reqwest::Client::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .http2_keep_alive_interval(HTTP2_KEEPALIVE_INTERVAL)
                .http2_keep_alive_timeout(HTTP2_KEEPALIVE_TIMEOUT)
                .http2_keep_alive_while_idle(true)
                .user_agent(concat!("codesmith/", env!("CARGO_PKG_VERSION")));
            if http1_only {
                builder = builder.http1_only();
            }
            builder.build().map_err(|e| {
                ProviderError::new(
                    ProviderErrorKind::Internal,
                    format!(
                        "{provider}: cannot build the HTTP client: {}",
                        error_chain(&e)
                    ),
                )
            })
        };
        Ok(HttpClient {
            default: build(false)?,
            http1: build(true)?,
        })
    }

    /// Sends a POST with a JSON body and the given headers. On an HTTP/2
    /// protocol failure, switches the process to HTTP/1.1 and replays once.
    pub(crate) async fn post_json(
        &self,
        provider: &str,
        url: &str,
        headers: &[(&str, String)],
        body: &serde_json::Value,
    ) -> Result<reqwest::Response, ProviderError> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!("{provider}: cannot serialize the request: {e}"),
            )
        })?;
        let first_http1 = FORCE_HTTP1.load(Ordering::Relaxed);
        match self.send(first_http1, url, headers, bytes.clone()).await {
            Ok(response) => Ok(response),
            Err(err) if !first_http1 && is_http2_failure(&err) => {
                FORCE_HTTP1.store(true, Ordering::Relaxed);
                self.send(true, url, headers, bytes)
                    .await
                    .map_err(|e| error_from_transport(provider, &e))
            }
            Err(err) => Err(error_from_transport(provider, &err)),
        }
    }

    async fn send(
        &self,
        http1: bool,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let client = if http1 { &self.http1 } else { &self.default };
        let mut request = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request.body(body).send().await
    }
}

/// One streamed request: POST `body` to `endpoint`, map a non-success
/// status to a typed error, decode a success with `decoder` (an
/// `application/json` success, from a server that ignored `stream: true`,
/// is decoded whole into the same events). Every error
/// text, from the response or later from the stream, has `secret` (the
/// provider's own key) removed on top of the generic scrubbing.
pub(crate) async fn open_stream<D: SseDecoder>(
    http: &HttpClient,
    provider: &'static str,
    endpoint: &str,
    headers: &[(&str, String)],
    body: &serde_json::Value,
    decoder: D,
    secret: Option<&str>,
) -> Result<EventStream, ProviderError> {
    let secret = secret.filter(|s| !s.is_empty()).map(str::to_string);
    let redact = move |mut err: ProviderError| {
        if let Some(secret) = &secret {
            err.message = err.message.replace(secret.as_str(), "[REDACTED]");
        }
        err
    };
    let response = http
        .post_json(provider, endpoint, headers, body)
        .await
        .map_err(&redact)?;
    let status = response.status();
    if !status.is_success() {
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let text = response.text().await.unwrap_or_default();
        let err = error_from_response(provider, status.as_u16(), retry_after.as_deref(), &text);
        return Err(redact(err));
    }
    if is_json(&response) {
        let text = response
            .text()
            .await
            .map_err(|e| redact(error_from_transport(provider, &e)))?;
        let value = parse_json(provider, &text, D::carries_arguments).map_err(&redact)?;
        let events = D::decode_whole(&value).map_err(&redact)?;
        return Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed());
    }
    let events = decode_stream(response.bytes_stream(), decoder, provider);
    Ok(events.map(move |item| item.map_err(&redact)).boxed())
}

/// True when a success response is plain JSON rather than an event stream.
fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("application/json"))
}

/// True when the error chain looks like an HTTP/2 protocol failure.
fn is_http2_failure(err: &reqwest::Error) -> bool {
    mentions_http2_failure(&error_chain(err))
}

/// True when an error text names an HTTP/2 protocol failure (string
/// matching: the h2 crate's error types are not a direct dependency, and a
/// false positive costs only a switch to HTTP/1.1).
fn mentions_http2_failure(text: &str) -> bool {
    let text = text.to_lowercase();
    HTTP2_MARKERS.iter().any(|m| text.contains(m))
}

/// Records a failure seen while reading a response body: an HTTP/2
/// protocol failure switches later requests of the process to HTTP/1.1.
pub(crate) fn note_stream_failure(text: &str) {
    if mentions_http2_failure(text) {
        FORCE_HTTP1.store(true, Ordering::Relaxed);
    }
}

/// Installs rustls' `ring` provider as the process default, once. A provider
/// installed earlier by someone else is kept.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::mentions_http2_failure;

    #[test]
    fn http2_failures_are_recognised() {
        assert!(mentions_http2_failure(
            "error sending request: http2 error: connection error detected: frame with invalid size"
        ));
        assert!(mentions_http2_failure("stream error received: GOAWAY"));
        assert!(!mentions_http2_failure("connection refused (os error 111)"));
    }
}
