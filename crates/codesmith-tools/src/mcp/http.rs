//! The streamable-HTTP transport: which URLs a configured server may use, and the HTTP
//! client that reaches it.
//!
//! Which URLs a configured server may use is the rule for user-configured endpoints
//! ([`crate::fetch::endpoint`], re-exported here); the client pins the connection to the
//! checked address, follows no redirects and uses no proxy.
//!
//! An answer that cannot be used is the call's failure, not the connection's, as over
//! stdio ([`super::transport`]): rmcp's client stops reading an answer at
//! [`MAX_MESSAGE`] and fails the POST, as it does for a JSON body it cannot parse, which
//! CodeSmith would take for a broken connection; and it skips an SSE event it cannot
//! decode, leaving the call to wait out its timeout. [`Guarded`] answers such a request with a JSON-RPC error instead, and
//! records the [`TransportFault`] (the size, or the position and the parser's
//! complaint) in the connection's [`Wire`], so the call fails at once with that cause
//! and the session goes on.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::Value;
use sse_stream::Sse;
use url::Url;

use super::transport::{MAX_MESSAGE, TransportFault, Wire, id_key, ids_in};

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

/// rmcp's streamable-HTTP client on reqwest (rmcp's OAuth client goes around it) whose
/// unusable answers fail only the request they answer (see the module documentation): an
/// answer over [`MAX_MESSAGE`] (a JSON body or one SSE event) and an answer that is not
/// valid JSON-RPC (a JSON body, or an SSE event naming the request) become a JSON-RPC
/// error for that request, with the fault recorded in `wire`.
///
/// Answers to `tools/list` are handed to [`Wire::note_tool_list`] as the server sent
/// them: a JSON body is read here rather than by rmcp (whose typed tool drops
/// `execution.taskSupport`); an answer of another kind (an SSE stream, an HTTP error) is
/// asked for again through rmcp, and its SSE events are noted as they pass. Once a server
/// answered a listing with an SSE stream, its later listings go through rmcp at once.
#[derive(Clone)]
pub struct Guarded {
    inner: reqwest::Client,
    wire: Arc<Wire>,
    /// Set when the server answered a listing with a `200` that was not a JSON body.
    lists_by_sse: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guarded").finish_non_exhaustive()
    }
}

impl Guarded {
    /// `inner`, recording faults and tool listings in `wire`.
    pub fn new(inner: reqwest::Client, wire: Arc<Wire>) -> Self {
        Guarded {
            inner,
            wire,
            lists_by_sse: Arc::default(),
        }
    }

    /// Records `fault` for request `id` and answers it with the fault as a JSON-RPC error.
    fn fail(&self, id: &RequestId, fault: TransportFault) -> StreamableHttpPostResponse {
        let answer = fault.answer(id.clone());
        self.wire.record_fault(id, fault);
        StreamableHttpPostResponse::Json(answer, None)
    }
}

/// The limits CodeSmith reads HTTP answers with: [`MAX_MESSAGE`] per JSON body and per
/// SSE event (a diagnostic body of a failed request: rmcp's 64 KiB).
pub fn response_limits() -> StreamableHttpResponseLimits {
    let mut limits = StreamableHttpResponseLimits::default();
    limits.max_json_response_size = MAX_MESSAGE;
    limits.max_sse_event_size = MAX_MESSAGE;
    limits
}

/// Whether `e` is rmcp's "SSE event exceeded the maximum size" (its type is private:
/// known by its text, anywhere in the error's chain).
fn event_too_large(e: &SseError) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.to_string()
            .contains("SSE event exceeded the maximum size")
        {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The fault of an SSE event's `data` when it answers request `id` and is not a
/// JSON-RPC message rmcp can read (rmcp would skip it), else `None`.
fn undecodable_answer(data: &str, id: &RequestId) -> Option<TransportFault> {
    let Err(e) = serde_json::from_str::<ServerJsonRpcMessage>(data) else {
        return None;
    };
    let key = id_key(id);
    let answers = match serde_json::from_str::<Value>(data) {
        // Well-formed JSON: an answer has the id and no method (a request the server
        // makes has its own ids, which may coincide with ours).
        Ok(v) => v.get("method").is_none() && v.get("id") == serde_json::to_value(id).ok().as_ref(),
        Err(_) => ids_in(data.as_bytes()).contains(&key),
    };
    answers.then(|| TransportFault::undecodable(data.as_bytes(), &e))
}

/// The fault of a JSON body rmcp could not parse, from rmcp's message
/// (`could not parse JSON response as ServerJsonRpcMessage: ERROR at line 1 column C:
/// PREVIEW`): the parser's complaint and the byte it stopped at, when the body is one line
/// (as JSON-RPC bodies are); `None` for any other message.
fn undecodable_body(message: &str) -> Option<TransportFault> {
    let rest = message.strip_prefix("could not parse JSON response as ServerJsonRpcMessage: ")?;
    let (detail, at) = rest.split_once(" at line 1 column ")?;
    let column: usize = at
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    Some(TransportFault::Undecodable {
        detail: detail.to_string(),
        position: column.saturating_sub(1),
        bytes: None,
    })
}

/// The SSE event carrying `answer` (a JSON-RPC error for the request).
fn sse_of(answer: &ServerJsonRpcMessage) -> Sse {
    Sse {
        data: Some(serde_json::to_string(answer).unwrap_or_default()),
        ..Sse::default()
    }
}

/// What an SSE event of the stream answering request `id` is, for [`guard_sse`].
#[derive(Debug, PartialEq)]
enum Event {
    /// Not for this request to judge (a notification, a request of the server's, a
    /// comment, an event without data).
    Other,
    /// The answer to `id`, readable.
    Answer,
    /// Unusable in place of the answer to `id`.
    Fault(TransportFault),
}

/// Judges `sse`, an event of the stream answering request `id`: an answer rmcp could
/// not read, an event of a type other than `message` carrying data, and an answer to a
/// request other than `id` (which this stream does not carry) each fail the request.
fn judge(sse: &Sse, id: &RequestId) -> Event {
    let Some(data) = sse.data.as_deref() else {
        return Event::Other;
    };
    match sse.event.as_deref() {
        None | Some("" | "message") => {}
        Some(other) => {
            return Event::Fault(TransportFault::Unusable {
                detail: format!(
                    "it came as an SSE event of type `{}`, not `message`",
                    codesmith_policy::visible_line(other, 80)
                ),
            });
        }
    }
    if let Some(fault) = undecodable_answer(data, id) {
        return Event::Fault(fault);
    }
    let Ok(value) = serde_json::from_str::<Value>(data) else {
        return Event::Other;
    };
    let is_answer = value.get("method").is_none()
        && (value.get("result").is_some() || value.get("error").is_some());
    if !is_answer {
        return Event::Other;
    }
    if value.get("id") == serde_json::to_value(id).ok().as_ref() {
        return Event::Answer;
    }
    let other = value.get("id").map(Value::to_string).unwrap_or_default();
    Event::Fault(TransportFault::Unusable {
        detail: format!(
            "the stream answering request {} carried an answer to request {}, which it \
             was not asked",
            id_key(id),
            codesmith_policy::visible_line(&other, 80)
        ),
    })
}

/// `stream` (the SSE answer to request `id`) with an unusable answer (oversized,
/// undecodable, of an unknown event type, to another request: see [`judge`]) replaced
/// by a JSON-RPC error for `id`, after which the stream ends; and a stream that ends
/// without answering and without an event id to resume from ended by such an error.
/// When `id` lists the tools (`lists_tools`), its answer is handed to
/// [`Wire::note_tool_list`] as it passes.
fn guard_sse(
    stream: BoxStream<'static, Result<Sse, SseError>>,
    id: RequestId,
    wire: Arc<Wire>,
    lists_tools: bool,
) -> BoxStream<'static, Result<Sse, SseError>> {
    /// The stream, whether `id` was answered, whether an event named a resume point.
    type State = (BoxStream<'static, Result<Sse, SseError>>, bool, bool);
    futures::stream::unfold(Some::<State>((stream, false, false)), move |state| {
        let id = id.clone();
        let wire = wire.clone();
        async move {
            let (mut stream, mut answered, mut resumable) = state?;
            let fault = match stream.next().await {
                None if answered || resumable => return None,
                None => TransportFault::Unusable {
                    detail: "the SSE stream ended without answering".into(),
                },
                Some(Err(e)) if event_too_large(&e) => TransportFault::Oversized { bytes: None },
                Some(Ok(sse)) => {
                    resumable |= sse.id.as_deref().is_some_and(|i| !i.is_empty());
                    match judge(&sse, &id) {
                        Event::Fault(fault) if !answered => fault,
                        Event::Answer => {
                            answered = true;
                            if lists_tools
                                && let Some(data) = sse.data.as_deref()
                                && let Ok(v) = serde_json::from_str::<Value>(data)
                            {
                                wire.note_tool_list(&v);
                            }
                            return Some((Ok(sse), Some((stream, answered, resumable))));
                        }
                        _ => return Some((Ok(sse), Some((stream, answered, resumable)))),
                    }
                }
                Some(item) => return Some((item, Some((stream, answered, resumable)))),
            };
            let answer = fault.answer(id.clone());
            wire.record_fault(&id, fault);
            Some((Ok(sse_of(&answer)), None))
        }
    })
    .boxed()
}

/// The fault of a failed POST answering a request, when the failure is this
/// exchange's (a status, a content type, a body that is not a JSON-RPC answer): the
/// request fails with it and the session goes on. `None` for a failure of the
/// connection or the session (unreachable, session expired, authorization), which rmcp
/// and the caller handle as such.
fn post_fault<E: std::error::Error + Send + Sync + 'static>(
    e: &StreamableHttpError<E>,
) -> Option<TransportFault> {
    let detail = match e {
        StreamableHttpError::ResponseBodyTooLarge { .. } => {
            return Some(TransportFault::Oversized { bytes: None });
        }
        StreamableHttpError::UnexpectedServerResponse(message) => {
            if let Some(fault) = undecodable_body(message) {
                return Some(fault);
            }
            format!(
                "the server answered {}",
                codesmith_policy::visible_line(message, 160)
            )
        }
        StreamableHttpError::HttpStatus(status) => format!("the server answered {status}"),
        StreamableHttpError::UnexpectedContentType(Some(t)) => format!(
            "the server answered with content type `{}`, not JSON or an SSE stream",
            codesmith_policy::visible_line(t, 80)
        ),
        StreamableHttpError::UnexpectedContentType(None) => {
            "the server answered with no content type".into()
        }
        StreamableHttpError::Deserialize(e) => format!("the answer is not JSON-RPC: {e}"),
        StreamableHttpError::UnexpectedEndOfStream => "the answer ended early".into(),
        _ => return None,
    };
    Some(TransportFault::Unusable { detail })
}

impl Guarded {
    /// Lists the tools with a POST of its own, so the answer is read as the server sent
    /// it: a `200` JSON body (at most `max` bytes) is handed to [`Wire::note_tool_list`]
    /// and returned as rmcp would have parsed it (an oversized or undecodable one fails the
    /// request, as in [`Guarded::fail`]). Any other answer, and a request that failed, is
    /// `None`: the caller asks again through rmcp, which knows the rest of the protocol
    /// (SSE answers, HTTP errors, authentication challenges); listing has no side effects.
    #[allow(clippy::too_many_arguments)]
    async fn list_tools_raw(
        &self,
        uri: &str,
        message: &ClientJsonRpcMessage,
        session_id: Option<&str>,
        auth_header: Option<&str>,
        custom_headers: &HashMap<HeaderName, HeaderValue>,
        id: &RequestId,
        max: usize,
    ) -> Option<StreamableHttpPostResponse> {
        use std::sync::atomic::Ordering;
        if self.lists_by_sse.load(Ordering::Relaxed) {
            return None;
        }
        // Under an id of its own: when the server answers with a stream, rmcp sends the
        // listing again, and two requests in flight under one id would have the server
        // route an answer to the stream dropped here.
        let mut raw = message.clone();
        if let ClientJsonRpcMessage::Request(r) = &mut raw {
            r.id = RequestId::String(format!("codesmith-raw-tools-list-{}", id_key(id)).into());
        }
        let mut request = self
            .inner
            .post(uri)
            .header(
                reqwest::header::ACCEPT,
                "text/event-stream, application/json",
            )
            .json(&raw);
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(session) = session_id {
            request = request.header(SESSION_HEADER, session);
        }
        let mut response = request.send().await.ok()?;
        if response.status() != reqwest::StatusCode::OK {
            return None;
        }
        let json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|ct| ct.split(';').next())
            .is_some_and(|ct| ct.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            self.lists_by_sse.store(true, Ordering::Relaxed);
            return None;
        }
        let session = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.ok()? {
            if body.len() + chunk.len() > max {
                return Some(self.fail(id, TransportFault::Oversized { bytes: None }));
            }
            body.extend_from_slice(&chunk);
        }
        match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
            Ok(mut answer) => {
                if let Ok(raw) = serde_json::from_slice::<Value>(&body) {
                    self.wire.note_tool_list(&raw);
                }
                // Handed to rmcp as the answer to the request it sent; anything else (a
                // notification, a request of the server's) is not the listing's answer, so
                // rmcp asks for the listing itself.
                match &mut answer {
                    ServerJsonRpcMessage::Response(r) => r.id = id.clone(),
                    ServerJsonRpcMessage::Error(e) => e.id = Some(id.clone()),
                    _ => return None,
                }
                Some(StreamableHttpPostResponse::Json(answer, session))
            }
            Err(e) => Some(self.fail(id, TransportFault::undecodable(&body, &e))),
        }
    }
}

/// The header naming a streamable-HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

impl StreamableHttpClient for Guarded {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            response_limits(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut limits = response_limits();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let id = match &message {
            ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
            _ => None,
        };
        let lists_tools = matches!(&message, ClientJsonRpcMessage::Request(r)
            if matches!(r.request, ClientRequest::ListToolsRequest(_)));
        if lists_tools
            && let Some(id) = &id
            && let Some(answer) = self
                .list_tools_raw(
                    &uri,
                    &message,
                    session_id.as_deref(),
                    auth_header.as_deref(),
                    &custom_headers,
                    id,
                    limits.max_json_response_size,
                )
                .await
        {
            return Ok(answer);
        }
        let result = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        let Some(id) = id else {
            return result;
        };
        match result {
            Err(e) => match post_fault(&e) {
                Some(fault) => Ok(self.fail(&id, fault)),
                None => Err(e),
            },
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                Ok(StreamableHttpPostResponse::Sse(
                    guard_sse(stream, id, self.wire.clone(), lists_tools),
                    session,
                ))
            }
            other => other,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                MAX_MESSAGE,
            )
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_undecodable_sse_answer_is_blamed_only_on_its_own_request() {
        let id = RequestId::Number(3);
        let bad =
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"\udcff"}]}}"#;
        let fault = undecodable_answer(bad, &id).unwrap();
        assert!(
            matches!(&fault, TransportFault::Undecodable { position, .. } if *position > 60),
            "{fault}"
        );
        assert!(fault.to_string().contains("surrogate"), "{fault}");
        // Another request's answer, or a request of the server's with the same id, is
        // not this request's fault.
        assert!(undecodable_answer(bad, &RequestId::Number(4)).is_none());
        let request = r#"{"jsonrpc":"2.0","id":3,"method":"x/unknown","params":{}}"#;
        assert!(undecodable_answer(request, &id).is_none());
        let good = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
        assert!(undecodable_answer(good, &id).is_none());
    }

    #[test]
    fn an_undecodable_json_body_is_named_with_its_position() {
        let rmcp = "could not parse JSON response as ServerJsonRpcMessage: lone leading \
                    surrogate in hex escape at line 1 column 80: {\"jsonrpc\"";
        assert_eq!(
            undecodable_body(rmcp),
            Some(TransportFault::Undecodable {
                detail: "lone leading surrogate in hex escape".into(),
                position: 79,
                bytes: None,
            })
        );
        assert_eq!(undecodable_body("HTTP 500: oops"), None);
    }

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
