//! Server-sent events to [`ProviderEvent`]s.
//!
//! Bytes are split into SSE events by `eventsource-stream` (which buffers
//! across chunk and UTF-8 boundaries); a dialect [`SseDecoder`] lifts each
//! event into provider events. The stream ends right after the dialect's
//! terminal signal; a body that ends before it yields no
//! [`ProviderEvent::Completed`], which the reducer treats as an interruption.

use std::collections::VecDeque;

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};

use crate::provider::{EventStream, ProviderError, ProviderErrorKind, ProviderEvent};
use crate::scrub::scrub_secrets;

/// A wire dialect's event decoder.
pub(crate) trait SseDecoder: Send + 'static {
    /// Decodes one SSE event (`event` is `"message"` when the wire named none).
    fn event(&mut self, event: &str, data: &str) -> Result<Vec<ProviderEvent>, ProviderError>;

    /// True once the terminal signal was decoded; nothing more is read.
    fn is_terminated(&self) -> bool;
}

struct State<S, D> {
    events: S,
    decoder: D,
    pending: VecDeque<Result<ProviderEvent, ProviderError>>,
    done: bool,
    provider: &'static str,
}

/// Decodes a byte stream with `decoder` into an [`EventStream`].
pub(crate) fn decode_stream<S, B, E, D>(bytes: S, decoder: D, provider: &'static str) -> EventStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
    D: SseDecoder,
{
    let state = State {
        events: Box::pin(bytes.eventsource()),
        decoder,
        pending: VecDeque::new(),
        done: false,
        provider,
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
                Some(Ok(event)) => match st.decoder.event(&event.event, &event.data) {
                    Ok(events) => {
                        st.pending.extend(events.into_iter().map(Ok));
                        st.done = st.decoder.is_terminated();
                    }
                    Err(err) => {
                        st.pending.push_back(Err(err));
                        st.done = true;
                    }
                },
                Some(Err(err)) => {
                    let text = format!("{} stream broke: {err}", st.provider);
                    st.pending.push_back(Err(ProviderError::new(
                        ProviderErrorKind::Network,
                        scrub_secrets(&text),
                    )));
                    st.done = true;
                }
                None => st.done = true,
            }
        }
    })
    .boxed()
}

/// Parses an event's JSON data, mapping garbage to a retryable error.
pub(crate) fn parse_json(provider: &str, data: &str) -> Result<serde_json::Value, ProviderError> {
    serde_json::from_str(data).map_err(|e| {
        let excerpt: String = data.chars().take(200).collect();
        ProviderError::new(
            ProviderErrorKind::Internal,
            scrub_secrets(&format!(
                "{provider} sent an unreadable stream event ({e}): {excerpt}"
            )),
        )
    })
}
