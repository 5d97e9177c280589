//! The streamable-HTTP transport: which URLs a configured server may use, and the HTTP
//! client that reaches it.
//!
//! Which URLs a configured server may use is the rule for user-configured endpoints
//! ([`crate::fetch::endpoint`], re-exported here); the client pins the connection to the
//! checked address, follows no redirects and uses no proxy.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use url::Url;

pub use crate::fetch::endpoint::{Endpoint, check_endpoint, check_named_endpoint};

/// Whether `a` and `b` have the same origin (scheme, host and port).
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// The configured headers as HTTP headers.
///
/// Errors: an invalid name or value, `Host`, or `Authorization` next to
/// `bearer_token_env_var` (the message names the header, never its value).
pub fn header_map(
    headers: &BTreeMap<String, String>,
    has_bearer: bool,
) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    let mut out = HashMap::new();
    for (name, value) in headers {
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("the header name `{name}` is not valid"))?;
        if parsed == reqwest::header::HOST {
            return Err("the `Host` header cannot be set; put the host in the url".into());
        }
        if parsed == reqwest::header::AUTHORIZATION && has_bearer {
            return Err(
                "it sets both an `Authorization` header and bearer_token_env_var; keep one".into(),
            );
        }
        let v = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of the header `{name}` is not valid"))?;
        out.insert(parsed, v);
    }
    Ok(out)
}

/// An HTTP client for `endpoint`: connections pinned to its checked address, no proxy, no
/// redirects, `connect_timeout` on each connection (no whole-request timeout: a
/// streamed response may stay open; the caller bounds each call).
///
/// Errors: the client could not be built (the TLS set-up failed).
pub fn client_for(
    endpoint: &Endpoint,
    connect_timeout: Duration,
) -> Result<reqwest::Client, String> {
    crate::fetch::install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("codesmith/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Arc::new(crate::fetch::PinnedDns::new(
            endpoint.host.clone(),
            endpoint.ip,
        )))
        .build()
        .map_err(|e| format!("the HTTP client could not be built ({e})"))
}

/// `text` with the secret scrubber applied and every one of `known` (the bearer token
/// and header values, 4 bytes or longer) replaced by `[REDACTED]`.
pub fn redact(text: &str, known: &[String]) -> String {
    let mut out = codesmith_policy::scrub_secrets(text).into_owned();
    for k in known.iter().filter(|k| k.len() >= 4) {
        if out.contains(k.as_str()) {
            out = out.replace(k.as_str(), codesmith_policy::REDACTED);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_checked_and_secrets_redacted() {
        let h = BTreeMap::from([("X-Team".to_string(), "core".to_string())]);
        assert_eq!(header_map(&h, true).unwrap().len(), 1);
        let auth = BTreeMap::from([("authorization".to_string(), "Basic abc".to_string())]);
        assert!(header_map(&auth, false).is_ok());
        assert!(header_map(&auth, true).unwrap_err().contains("both"));
        let host = BTreeMap::from([("Host".to_string(), "x".to_string())]);
        assert!(header_map(&host, false).is_err());
        let text = redact(
            "401 for token plain-t0ken-value",
            &["plain-t0ken-value".into()],
        );
        assert_eq!(text, "401 for token [REDACTED]");
    }
}
