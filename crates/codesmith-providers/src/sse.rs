//! Server-sent events to [`ProviderEvent`]s.
//!
//! Bytes are split into SSE events by `eventsource-stream` (which buffers
//! across chunk and UTF-8 boundaries); a dialect [`SseDecoder`] lifts each
//! event into provider events. The stream ends right after the dialect's
//! terminal signal. When the body ends cleanly before it, the dialect decides
//! ([`SseDecoder::end_of_body`]): a body that ends without the signal a
//! dialect needs yields no [`ProviderEvent::Completed`], which the reducer
//! treats as an interruption.
//!
//! A last event whose blank line never came (the body closed right after its
//! data line) is still decoded when its data is complete (valid JSON or
//! `[DONE]`); a cut-off data line is dropped as never received.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};

use crate::provider::{EventStream, ProviderError, ProviderErrorKind, ProviderEvent};
use codesmith_policy::scrub_secrets;

/// A wire dialect's event decoder.
pub(crate) trait SseDecoder: Send + 'static {
    /// Decodes one SSE event (`event` is `"message"` when the wire named
    /// none), appending to `out`. On `Err` the events already in `out` are
    /// still delivered (usage carried by an error chunk, for instance), then
    /// the error, and the stream ends.
    fn event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError>;

    /// True once the terminal signal was decoded; nothing more is read.
    fn is_terminated(&self) -> bool;

    /// The body ended cleanly (no transport error) before the terminal
    /// signal. A dialect that can prove the response finished appends
    /// [`ProviderEvent::Completed`]; otherwise nothing, an interruption.
    fn end_of_body(&mut self, out: &mut Vec<ProviderEvent>);

    /// Decodes a whole, non-streamed JSON response (a server that ignored
    /// `stream: true`) into the events a stream would have carried,
    /// `Completed` included.
    fn decode_whole(body: &serde_json::Value) -> Result<Vec<ProviderEvent>, ProviderError>;

    /// True when an event (or whole body) holds tool-call arguments in parsed
    /// form (a JSON object rather than text), which [`parse_json`] must read
    /// with duplicate keys refused.
    fn carries_arguments(value: &serde_json::Value) -> bool;
}

/// The most bytes one SSE event (its lines up to the blank line that ends
/// it) may take before the stream is refused: the parser buffers a whole
/// event, so a server sending one endless line must not grow memory without
/// bound. Real events are a few kilobytes; a whole file written by a tool
/// call arrives in many small events.
pub(crate) const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// The UTF-8 byte order mark, which the SSE standard lets a body start with
/// and which the parser is handed without (it cannot take it split or whole).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Watches the raw body before the SSE parser: strips a leading byte order
/// mark (even split across pieces), counts the bytes of the event being
/// received since the last blank line, and hands the parser whole lines only
/// (the parser rescans an unfinished line on every piece, which made a long
/// line cost quadratic time).
#[derive(Default)]
struct BodyGuard {
    /// Body bytes seen so far, up to the length of [`BOM`].
    seen: usize,
    /// True while every byte seen matched the start of [`BOM`].
    bom: bool,
    /// Bytes of the current event so far.
    event_bytes: usize,
    /// Line terminators in a row just seen (two end an event).
    breaks: u8,
    /// The previous byte was `\r` (so a `\n` completes the same terminator).
    after_cr: bool,
    /// Bytes after the last line terminator, not yet given to the parser.
    held: Vec<u8>,
}

impl BodyGuard {
    /// Returns the whole lines completed by `bytes` (with any earlier held
    /// bytes in front), or `Err` with the size reached when the current event
    /// is larger than [`MAX_EVENT_BYTES`].
    fn inspect(&mut self, bytes: &[u8]) -> Result<Vec<u8>, usize> {
        let mut skip = 0;
        if self.seen == 0 {
            self.bom = true;
        }
        while self.seen < BOM.len() && skip < bytes.len() {
            if self.bom && bytes[skip] == BOM[self.seen] {
                skip += 1;
                self.seen += 1;
            } else {
                self.bom = false;
                self.seen = BOM.len();
            }
        }
        let body = &bytes[skip..];
        let mut line_end = None;
        for (at, &b) in body.iter().enumerate() {
            if b == b'\r' || b == b'\n' {
                line_end = Some(at + 1);
            }
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    self.breaks = self.breaks.saturating_add(1);
                    if self.breaks >= 2 {
                        self.event_bytes = 0;
                    }
                }
                _ => {
                    self.after_cr = false;
                    self.breaks = 0;
                    self.event_bytes += 1;
                }
            }
        }
        if self.event_bytes > MAX_EVENT_BYTES {
            self.held = Vec::new();
            return Err(self.event_bytes);
        }
        Ok(match line_end {
            Some(end) => {
                let mut lines = std::mem::take(&mut self.held);
                lines.extend_from_slice(&body[..end]);
                self.held.extend_from_slice(&body[end..]);
                lines
            }
            None => {
                self.held.extend_from_slice(body);
                Vec::new()
            }
        })
    }

    /// The body ended: the held bytes, then a blank line that dispatches a
    /// last event whose terminating blank line never came.
    fn finish(&mut self) -> Vec<u8> {
        let mut rest = std::mem::take(&mut self.held);
        rest.extend_from_slice(b"\n\n");
        rest
    }
}

struct State<S, D> {
    events: S,
    decoder: D,
    pending: VecDeque<Result<ProviderEvent, ProviderError>>,
    done: bool,
    provider: &'static str,
    /// Set once the body ended and its last bytes were fed to the parser:
    /// an event seen after that is the body's unterminated last event.
    body_ended: Arc<AtomicBool>,
    /// The first bytes of the body, quoted when it held no event at all.
    head: Arc<std::sync::Mutex<Vec<u8>>>,
    /// True once the parser dispatched any event.
    saw_event: bool,
    /// Events of this response that could not be read (see
    /// [`MAX_STREAM_ERRORS_BEFORE_FAIL`]).
    errors: usize,
    /// True once the response started a tool call.
    saw_call: bool,
}

/// The most stream-level errors one response may hold: an event the SSE parser could not
/// read (invalid UTF-8, a malformed line) or whose data is not JSON is skipped with a
/// notice, and the fifth fails the call. Because a skipped event may have held part of a
/// tool call's arguments, a response that skipped any and made a tool call fails at its
/// end instead of completing: no call of it runs on arguments that may be missing bytes.
pub const MAX_STREAM_ERRORS_BEFORE_FAIL: usize = 5;

impl<S, D> State<S, D> {
    /// Counts one unreadable event; the error that ends the stream at the cap.
    fn stream_error(&mut self, what: &str) -> Option<ProviderError> {
        self.errors += 1;
        if self.errors >= MAX_STREAM_ERRORS_BEFORE_FAIL {
            return Some(ProviderError::new(
                ProviderErrorKind::Network,
                scrub_secrets(&format!(
                    "{}: {} events of one response could not be read (the last: {what}); the \
                     stream is given up",
                    self.provider, self.errors
                )),
            ));
        }
        self.pending.push_back(Ok(ProviderEvent::Notice(format!(
            "{} sent an event that could not be read ({what}); it was skipped ({} of at most {} \
             per response)",
            self.provider,
            self.errors,
            MAX_STREAM_ERRORS_BEFORE_FAIL - 1
        ))));
        None
    }

    /// Queues decoded events; a completion after skipped events in a response with a
    /// tool call becomes an error (see [`MAX_STREAM_ERRORS_BEFORE_FAIL`]).
    fn queue(&mut self, out: Vec<ProviderEvent>) {
        for event in out {
            self.saw_call |= matches!(event, ProviderEvent::ToolCallStart { .. });
            if matches!(event, ProviderEvent::Completed { .. }) && self.errors > 0 && self.saw_call
            {
                self.pending.push_back(Err(ProviderError::new(
                    ProviderErrorKind::Network,
                    format!(
                        "{}: {} events of this response could not be read, and it made a tool \
                         call whose arguments may be missing from them; none of its calls runs",
                        self.provider, self.errors
                    ),
                )));
                self.done = true;
                return;
            }
            self.pending.push_back(Ok(event));
        }
    }
}

/// How many leading body bytes are kept to quote a body that is not SSE.
const HEAD_BYTES: usize = 300;

/// Why the body could not be read further.
#[derive(Debug)]
enum BodyFault {
    Transport(String),
    EventTooLarge(usize),
}

impl std::fmt::Display for BodyFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyFault::Transport(text) => f.write_str(text),
            BodyFault::EventTooLarge(size) => write!(
                f,
                "one event grew past {size} bytes without ending (the limit is {MAX_EVENT_BYTES}); \
                 the server is not sending server-sent events"
            ),
        }
    }
}

impl std::error::Error for BodyFault {}

/// Decodes a byte stream with `decoder` into an [`EventStream`].
pub(crate) fn decode_stream<S, B, E, D>(bytes: S, decoder: D, provider: &'static str) -> EventStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
    D: SseDecoder,
{
    let body_ended = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&body_ended);
    let head = Arc::new(std::sync::Mutex::new(Vec::new()));
    let head_in = Arc::clone(&head);
    let body = Box::pin(bytes);
    let pieces = futures::stream::unfold(Some((body, BodyGuard::default(), flag)), move |state| {
        let head_in = Arc::clone(&head_in);
        async move {
            let (mut body, mut guard, flag) = state?;
            match body.next().await {
                Some(Ok(bytes)) => {
                    if let Ok(mut head) = head_in.lock()
                        && head.len() < HEAD_BYTES
                    {
                        let room = HEAD_BYTES - head.len();
                        let bytes = bytes.as_ref();
                        head.extend_from_slice(&bytes[..room.min(bytes.len())]);
                    }
                    let piece = guard
                        .inspect(bytes.as_ref())
                        .map_err(BodyFault::EventTooLarge);
                    Some((piece, Some((body, guard, flag))))
                }
                Some(Err(err)) => Some((
                    Err(BodyFault::Transport(err.to_string())),
                    Some((body, guard, flag)),
                )),
                None => {
                    flag.store(true, Ordering::SeqCst);
                    Some((Ok(guard.finish()), None))
                }
            }
        }
    });
    let state = State {
        events: Box::pin(pieces.eventsource()),
        decoder,
        pending: VecDeque::new(),
        done: false,
        provider,
        body_ended,
        head,
        saw_event: false,
        errors: 0,
        saw_call: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.pending.pop_front() {
                return Some((item, st));
            }
            if st.done {
                return None;
            }
            match st.events.next().await {
                Some(Ok(event)) => {
                    st.saw_event = true;
                    if st.body_ended.load(Ordering::SeqCst) && !is_complete_data(&event.data) {
                        continue;
                    }
                    if !event.data.trim().is_empty() && !is_complete_data(&event.data) {
                        if let Some(err) = st.stream_error("its data is not JSON") {
                            st.pending.push_back(Err(err));
                            st.done = true;
                        }
                        continue;
                    }
                    let mut out = Vec::new();
                    let result = st.decoder.event(&event.event, &event.data, &mut out);
                    st.queue(out);
                    if st.done {
                        continue;
                    }
                    match result {
                        Ok(()) => st.done = st.decoder.is_terminated(),
                        Err(err) => {
                            st.pending.push_back(Err(err));
                            st.done = true;
                        }
                    }
                }
                Some(Err(
                    err @ (eventsource_stream::EventStreamError::Utf8(_)
                    | eventsource_stream::EventStreamError::Parser(_)),
                )) => {
                    if let Some(err) = st.stream_error(&err.to_string()) {
                        st.pending.push_back(Err(err));
                        st.done = true;
                    }
                }
                Some(Err(err)) => {
                    let text = format!("{} stream broke: {err}", st.provider);
                    crate::http::note_stream_failure(&text);
                    st.pending.push_back(Err(ProviderError::new(
                        ProviderErrorKind::Network,
                        scrub_secrets(&text),
                    )));
                    st.done = true;
                }
                None if !st.saw_event && st.head.lock().is_ok_and(|h| !h.is_empty()) => {
                    let head = st.head.lock().map(|h| h.clone()).unwrap_or_default();
                    let excerpt = String::from_utf8_lossy(&head);
                    st.pending.push_back(Err(ProviderError::new(
                        ProviderErrorKind::Internal,
                        scrub_secrets(&format!(
                            "{} answered with a body that holds no server-sent event; it begins: {}",
                            st.provider,
                            excerpt.trim()
                        )),
                    )));
                    st.done = true;
                }
                None => {
                    let mut out = Vec::new();
                    st.decoder.end_of_body(&mut out);
                    st.queue(out);
                    st.done = true;
                }
            }
        }
    })
    .boxed()
}

/// True when an event's data is whole: `[DONE]` or a complete JSON value.
fn is_complete_data(data: &str) -> bool {
    let data = data.trim();
    data == "[DONE]" || serde_json::from_str::<serde::de::IgnoredAny>(data).is_ok()
}

/// Parses an event's JSON data (or a whole response body), mapping garbage to
/// a retryable error.
///
/// The data is read by the strict reader ([`codesmith_protocol::parse_arguments`]).
/// An object that names a key twice is read as `serde_json` reads it (the
/// last value) unless `carries_arguments` says the event holds tool-call
/// arguments in parsed form: those cannot be told apart from the rest of the
/// event, and a call whose arguments are ambiguous must not run, so the event
/// is then refused with the duplicate named.
pub(crate) fn parse_json(
    provider: &str,
    data: &str,
    carries_arguments: fn(&serde_json::Value) -> bool,
) -> Result<serde_json::Value, ProviderError> {
    let duplicate = match codesmith_protocol::parse_arguments(data) {
        Ok(value) => return Ok(value),
        Err(e) if e.kind == codesmith_protocol::ArgumentsErrorKind::DuplicateKey => e,
        Err(_) => {
            return Err(match serde_json::from_str::<serde_json::Value>(data) {
                Err(e) => unreadable(provider, &e.to_string(), data),
                Ok(_) => unreadable(provider, "not one JSON value", data),
            });
        }
    };
    let value: serde_json::Value =
        serde_json::from_str(data).map_err(|e| unreadable(provider, &e.to_string(), data))?;
    if carries_arguments(&value) {
        return Err(ProviderError::new(
            ProviderErrorKind::Internal,
            scrub_secrets(&format!(
                "{provider} sent tool-call arguments in an event that names a key twice ({duplicate}); \
                 the call was not used"
            )),
        ));
    }
    Ok(value)
}

fn unreadable(provider: &str, fault: &str, data: &str) -> ProviderError {
    let excerpt: String = data.chars().take(200).collect();
    ProviderError::new(
        ProviderErrorKind::Internal,
        scrub_secrets(&format!(
            "{provider} sent an unreadable stream event ({fault}): {excerpt}"
        )),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::convert::Infallible;

    use codesmith_protocol::StopReason;
    use futures::StreamExt;

    use super::*;
    use crate::anthropic::AnthropicDecoder;
    use crate::openai::OpenAiDecoder;
    use crate::reduce::{AssistantResponse, StreamReducer};

    const OPENAI: &str = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\n",
        ": keep-alive comment\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"pensé 🤔\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"héllo \"},\"finish_reason\":null}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"wörld ✓\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"pa\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":\\\"ü\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n",
        "data: [DONE]\n\n",
    );

    const ANTHROPIC: &str = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":6,\"cache_creation_input_tokens\":2,\"output_tokens\":1}}}\n\n",
        "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"pensé 🤔\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"héllo wörld ✓\"}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"read_file\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\\\"ü\\\"}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"c2\",\"name\":\"list_dir\",\"input\":{}}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":7}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );

    /// Every shape the OpenAI-compatible decoder reads, in one valid stream
    /// that ends without `[DONE]`: `error: null`, a comment, thinking as
    /// nested content parts and as `reasoning`, text as parts and as a
    /// string, two calls at index 0 told apart by id (the second with
    /// parsed arguments), a call without index continued by a delta with
    /// neither index nor id, usage on the finish chunk.
    const OPENAI_SHAPES: &str = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"error\":null}\n\n",
        ": OPENROUTER PROCESSING\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"dénk \"}]}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"more ✓\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"Ans\"}]}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"wer é\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":{\"path\":\"b\"}}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"th\\\":\\\"ü\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":5}}\n\n",
    );

    /// A refusal streamed in `delta.refusal`.
    const OPENAI_REFUSAL: &str = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":\"\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"Je ne peux pas ✗\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );

    /// A body decoded and reduced: the response, and the error that ended
    /// the stream, if one did. Ids the decoder generated (they come from a
    /// process-wide counter) are normalised so two decodes compare equal.
    fn decode<D: SseDecoder + Default>(
        chunks: Vec<Vec<u8>>,
    ) -> (AssistantResponse, Option<String>) {
        let bytes = futures::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>));
        let events: Vec<_> =
            futures::executor::block_on(decode_stream(bytes, D::default(), "test").collect());
        let mut reducer = StreamReducer::new();
        let mut error = None;
        for event in events {
            match event {
                Ok(event) => reducer.push(&event),
                Err(err) => error = Some(err.message),
            }
        }
        let mut response = reducer.finish(None);
        for call in &mut response.tool_calls {
            if call.call.id.starts_with("call_cs") {
                call.call.id = "generated".into();
            }
        }
        (response, error)
    }

    fn reduce<D: SseDecoder + Default>(chunks: Vec<Vec<u8>>) -> AssistantResponse {
        let (response, error) = decode::<D>(chunks);
        assert_eq!(error, None);
        response
    }

    /// A small deterministic generator (xorshift64) for reproducible splits.
    struct Splitter(u64);

    impl Splitter {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// `bytes` cut at random places into pieces of 1 to `max` bytes.
        fn pieces(&mut self, bytes: &[u8], max: u64) -> Vec<Vec<u8>> {
            let mut out = Vec::new();
            let mut at = 0;
            while at < bytes.len() {
                let len = (1 + self.next() % max) as usize;
                let end = (at + len).min(bytes.len());
                out.push(bytes[at..end].to_vec());
                at = end;
            }
            out
        }
    }

    /// Re-chunked, `wire` decodes exactly as it does whole: split in two at
    /// every byte boundary and cut into pieces of every fixed size from 1 to
    /// 7 bytes (which cuts multi-byte characters and CRLF pairs) when
    /// `exhaustive`, else pieces of 3 and 7 bytes; then cut at `rounds` sets
    /// of random places.
    fn assert_rechunking_invariant<D: SseDecoder + Default>(
        name: &str,
        wire: &[u8],
        exhaustive: bool,
        rounds: u64,
    ) -> (AssistantResponse, Option<String>) {
        let whole = decode::<D>(vec![wire.to_vec()]);
        if exhaustive {
            for cut in 1..wire.len() {
                let split = vec![wire[..cut].to_vec(), wire[cut..].to_vec()];
                assert_eq!(decode::<D>(split), whole, "{name}: split at byte {cut}");
            }
        }
        let sizes: &[usize] = if exhaustive {
            &[1, 2, 3, 4, 5, 6, 7]
        } else {
            &[3, 7]
        };
        for &size in sizes {
            let pieces = wire.chunks(size).map(<[u8]>::to_vec).collect();
            assert_eq!(decode::<D>(pieces), whole, "{name}: pieces of {size} bytes");
        }
        let mut splitter = Splitter(0x9E37_79B9_7F4A_7C15 ^ wire.len() as u64);
        for round in 0..rounds {
            let max = [4, 16, 300][(round % 3) as usize];
            let pieces = splitter.pieces(wire, max);
            assert_eq!(decode::<D>(pieces), whole, "{name}: random round {round}");
        }
        whole
    }

    /// Every split into two pieces, every fixed piece size from 1 to 7
    /// bytes and random cuts give the one-shot result.
    fn assert_chunking_invariant<D: SseDecoder + Default>(wire: &str) -> AssistantResponse {
        let (response, error) = assert_rechunking_invariant::<D>("wire", wire.as_bytes(), true, 60);
        assert_eq!(error, None);
        response
    }

    #[test]
    fn every_openai_shape_survives_any_chunking() {
        let resp = assert_chunking_invariant::<OpenAiDecoder>(OPENAI_SHAPES);
        assert_eq!(resp.thinking, "dénk more ✓");
        assert_eq!(resp.text, "Answer é");
        let calls: Vec<_> = resp
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.call.id.as_str(),
                    c.call.name.as_str(),
                    c.call.arguments.as_str(),
                )
            })
            .collect();
        assert_eq!(
            calls,
            [
                ("a", "write_file", r#"{"path":"a"}"#),
                ("b", "write_file", r#"{"path":"b"}"#),
                ("c", "read_file", r#"{"path":"ü"}"#),
            ]
        );
        assert_eq!(resp.stop_reason, StopReason::ToolUse);
        assert_eq!((resp.usage.input_tokens, resp.usage.output_tokens), (9, 5));
        assert!(!resp.interrupted && !resp.refusal);
        let resp = assert_chunking_invariant::<OpenAiDecoder>(OPENAI_REFUSAL);
        assert_eq!(resp.text, "Je ne peux pas ✗");
        assert!(resp.refusal);
        assert_eq!(resp.stop_reason, StopReason::EndTurn);
    }

    /// The recorded real-server bodies of the shared real-streams suite
    /// decode the same however the bytes arrive.
    #[test]
    #[allow(clippy::print_stderr)] // says visibly that the suite is absent
    fn recorded_server_streams_survive_any_chunking() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/suites/real-streams");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("SUITE MISSING: {} (real-streams captures)", dir.display());
            assert!(
                std::env::var("CODESMITH_REQUIRE_SUITES").as_deref() != Ok("1"),
                "CODESMITH_REQUIRE_SUITES=1 but {} is absent",
                dir.display()
            );
            return;
        };
        let mut seen = 0;
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("sse") {
                continue;
            }
            let name = path.file_stem().unwrap().to_string_lossy().to_string();
            let wire = std::fs::read(&path).unwrap();
            let sidecar: serde_json::Value =
                serde_json::from_slice(&std::fs::read(path.with_extension("json")).unwrap())
                    .unwrap();
            // Every boundary of the small bodies; random cuts of the large
            // ones (every boundary of a 4 kB body is 4,000 decodes).
            let small = wire.len() <= 2048;
            let rounds = if small { 24 } else { 6 };
            let (resp, _) = match sidecar["dialect"].as_str() {
                Some("anthropic") => {
                    assert_rechunking_invariant::<AnthropicDecoder>(&name, &wire, small, rounds)
                }
                _ => assert_rechunking_invariant::<OpenAiDecoder>(&name, &wire, small, rounds),
            };
            assert_eq!(
                resp.text, sidecar["expect"]["text"],
                "{name}: text decoded from the whole body"
            );
            seen += 1;
        }
        assert!(seen >= 27, "only {seen} captures in {}", dir.display());
    }

    #[test]
    fn openai_chunking_does_not_change_the_result() {
        let resp = assert_chunking_invariant::<OpenAiDecoder>(OPENAI);
        assert_eq!(resp.text, "héllo wörld ✓");
        assert_eq!(resp.thinking, "pensé 🤔");
        assert_eq!(resp.tool_calls[0].call.arguments, r#"{"path":"ü"}"#);
        assert_eq!(resp.stop_reason, StopReason::ToolUse);
        assert_eq!(resp.usage.input_tokens, 11);
        assert_eq!(resp.usage.output_tokens, 7);
        assert_eq!(resp.usage.cached_input_tokens, 4);
        assert!(!resp.interrupted);
    }

    #[test]
    fn anthropic_chunking_does_not_change_the_result() {
        let resp = assert_chunking_invariant::<AnthropicDecoder>(ANTHROPIC);
        assert_eq!(resp.text, "héllo wörld ✓");
        assert_eq!(resp.thinking, "pensé 🤔");
        assert_eq!(resp.tool_calls[0].call.arguments, r#"{"path":"ü"}"#);
        assert_eq!(resp.tool_calls[1].call.name, "list_dir");
        assert_eq!(resp.tool_calls[1].call.arguments, "{}");
        assert_eq!(resp.stop_reason, StopReason::ToolUse);
        assert_eq!(resp.usage.input_tokens, 13);
        assert_eq!(resp.usage.cached_input_tokens, 6);
        assert_eq!(resp.usage.cache_write_input_tokens, 2);
        assert_eq!(resp.usage.output_tokens, 7);
    }

    #[test]
    fn a_body_cut_before_the_terminal_signal_is_interrupted() {
        let cut = OPENAI
            .find("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\"")
            .unwrap();
        let resp = reduce::<OpenAiDecoder>(vec![OPENAI.as_bytes()[..cut].to_vec()]);
        assert!(resp.interrupted);
        assert_eq!(resp.stop_reason, StopReason::Interrupted);
        let cut = ANTHROPIC.find("event: message_stop").unwrap();
        let resp = reduce::<AnthropicDecoder>(vec![ANTHROPIC.as_bytes()[..cut].to_vec()]);
        assert!(resp.interrupted);
        assert_eq!(
            resp.usage.output_tokens, 7,
            "usage of a cut response is kept"
        );
    }

    #[test]
    fn a_clean_end_after_finish_reason_is_complete_without_done() {
        let cut = OPENAI.find("data: [DONE]").unwrap();
        let resp = reduce::<OpenAiDecoder>(vec![OPENAI.as_bytes()[..cut].to_vec()]);
        assert!(!resp.interrupted);
        assert_eq!(resp.stop_reason, StopReason::ToolUse);
        assert_eq!(resp.usage.input_tokens, 11);
    }

    #[test]
    fn a_last_event_without_its_blank_line_is_decoded_when_whole() {
        let wire = ANTHROPIC.trim_end();
        let resp = reduce::<AnthropicDecoder>(vec![wire.as_bytes().to_vec()]);
        assert!(!resp.interrupted);
        let cut = &wire[..wire.len() - 3];
        let resp = reduce::<AnthropicDecoder>(vec![cut.as_bytes().to_vec()]);
        assert!(resp.interrupted, "a cut-off data line is not received");
    }

    #[test]
    fn a_byte_order_mark_at_body_start_is_skipped_however_split() {
        let wire = format!("\u{feff}{OPENAI}");
        let whole = reduce::<OpenAiDecoder>(vec![wire.as_bytes().to_vec()]);
        assert_eq!(
            whole,
            reduce::<OpenAiDecoder>(vec![OPENAI.as_bytes().to_vec()])
        );
        let bytes = wire.as_bytes();
        for cut in 1..4 {
            let split = reduce::<OpenAiDecoder>(vec![bytes[..cut].to_vec(), bytes[cut..].to_vec()]);
            assert_eq!(split, whole, "mark split after {cut} bytes");
        }
    }

    fn anthropic_wire(blocks: &str, stop: &str) -> Vec<Vec<u8>> {
        let wire = format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"usage\":{{\"input_tokens\":3}}}}}}\n\n\
             {blocks}\
             event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{stop}\"}}}}\n\n\
             event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        );
        vec![wire.into_bytes()]
    }

    #[test]
    fn a_server_tool_use_block_is_not_a_call_to_run() {
        let blocks = concat!(
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srv\",\"name\":\"web_search\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"query\\\":\\\"x\\\"}\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        );
        let resp = reduce::<AnthropicDecoder>(anthropic_wire(blocks, "end_turn"));
        assert!(resp.tool_calls.is_empty(), "{:?}", resp.tool_calls);
        assert_eq!(resp.stop_reason, StopReason::EndTurn);
    }

    #[test]
    fn tool_input_given_at_start_and_in_deltas_does_not_parse() {
        let blocks = concat!(
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"write_file\",\"input\":{\"path\":\"evil.txt\"}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        );
        let resp = reduce::<AnthropicDecoder>(anthropic_wire(blocks, "tool_use"));
        assert_eq!(resp.tool_calls.len(), 1);
        assert!(
            resp.tool_calls[0].parsed.is_none(),
            "{:?}",
            resp.tool_calls[0]
        );
    }

    #[test]
    fn a_body_without_any_event_is_quoted() {
        let page = b"<html><body><h1>502 Bad Gateway</h1></body></html>".to_vec();
        let (resp, error) = decode::<OpenAiDecoder>(vec![page]);
        assert!(resp.interrupted);
        let error = error.unwrap_or_default();
        assert!(error.contains("502 Bad Gateway"), "{error}");
    }

    #[test]
    fn an_endless_event_is_refused_not_buffered() {
        let mut chunks = vec![b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec()];
        chunks.extend(std::iter::repeat_n(vec![b'x'; 1 << 20], 9));
        let (resp, error) = decode::<OpenAiDecoder>(chunks);
        assert!(resp.interrupted);
        let error = error.unwrap_or_default();
        assert!(error.contains("grew past"), "{error}");
    }

    #[test]
    fn stream_errors_are_typed() {
        let wire = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let bytes = futures::stream::iter([Ok::<_, Infallible>(wire.as_bytes().to_vec())]);
        let events: Vec<_> = futures::executor::block_on(
            decode_stream(bytes, AnthropicDecoder::default(), "anthropic").collect(),
        );
        let err = events[0].clone().unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Internal);
        assert!(err.message.contains("Overloaded"));
        let wire = "data: {\"error\":{\"message\":\"quota\",\"type\":\"insufficient_quota\"}}\n\n";
        let bytes = futures::stream::iter([Ok::<_, Infallible>(wire.as_bytes().to_vec())]);
        let events: Vec<_> = futures::executor::block_on(
            decode_stream(bytes, OpenAiDecoder::default(), "openai").collect(),
        );
        assert_eq!(
            events[0].clone().unwrap_err().kind,
            ProviderErrorKind::RateLimit
        );
    }
}
