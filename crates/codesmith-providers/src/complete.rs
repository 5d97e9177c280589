//! Robust completion: the one function the engine calls for every model
//! request.
//!
//! - Retryable errors (see [`crate::ProviderErrorKind::is_retryable`]) are
//!   retried up to [`CompleteOptions::max_retries`] times with exponential
//!   backoff and jitter, or after the server's `Retry-After`; each retry is
//!   announced with [`StreamNotice::Retry`] before the wait.
//! - An idle watchdog bounds every wait for the response headers and for the
//!   next stream event (not the whole stream), widened per retry spent.
//! - Termination proof: a stream that stops (ends, stalls or fails) before
//!   its terminal signal is an interruption. With nothing received it is
//!   retried transparently; with content received the partial response is
//!   returned marked `interrupted` and never retried (it was billed).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use futures::StreamExt;

use crate::provider::{ChatRequest, Provider, ProviderError, ProviderErrorKind, ProviderEvent};
use crate::reduce::{AssistantResponse, StreamReducer};
use crate::taxonomy::MAX_RETRY_AFTER_MS;

/// Retry and watchdog settings. The defaults are the production figures; tests
/// use millisecond values.
#[derive(Debug, Clone, PartialEq)]
pub struct CompleteOptions {
    /// Retries after the first attempt (default 3).
    pub max_retries: u32,
    /// Wait before the first retry (default 1 s); doubles per retry.
    pub base_delay: Duration,
    /// Upper bound of the backoff (default 60 s).
    pub max_delay: Duration,
    /// Relative jitter applied to the backoff, 0.0–1.0 (default 0.1 = ±10 %).
    pub jitter: f64,
    /// Wait what the server's `Retry-After` asks instead of the backoff (default true).
    pub honor_retry_after: bool,
    /// Upper bound of a `Retry-After` wait (default one day).
    pub max_retry_after: Duration,
    /// Idle watchdog window for the first attempt (default 120 s).
    pub idle_timeout: Duration,
    /// Added to the idle window per retry already spent (default 30 s).
    pub idle_timeout_per_retry: Duration,
    /// Retry only transient kinds (`Network`, `RateLimit`, `Timeout`)
    /// instead of every retryable kind (default false; true for
    /// [`CompleteOptions::background`]).
    pub transient_only: bool,
}

impl Default for CompleteOptions {
    fn default() -> Self {
        CompleteOptions {
            max_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            jitter: 0.1,
            honor_retry_after: true,
            max_retry_after: Duration::from_millis(MAX_RETRY_AFTER_MS),
            idle_timeout: Duration::from_secs(120),
            idle_timeout_per_retry: Duration::from_secs(30),
            transient_only: false,
        }
    }
}

impl CompleteOptions {
    /// The smaller budget for background calls (compaction, titles), which
    /// must not crowd the main turn: 3 retries at 1 s → 2 s → 4 s,
    /// transient kinds only, `Retry-After` capped at 4 s.
    pub fn background() -> Self {
        CompleteOptions {
            max_delay: Duration::from_secs(4),
            max_retry_after: Duration::from_secs(4),
            transient_only: true,
            ..CompleteOptions::default()
        }
    }

    /// Whether `error` may be retried under these options.
    pub fn should_retry(&self, error: &ProviderError) -> bool {
        if self.transient_only {
            matches!(
                error.kind,
                ProviderErrorKind::Network
                    | ProviderErrorKind::RateLimit
                    | ProviderErrorKind::Timeout
            )
        } else {
            error.kind.is_retryable()
        }
    }

    /// The idle window after `retries_spent` retries: base + increment × retries.
    pub fn idle_timeout_for(&self, retries_spent: u32) -> Duration {
        self.idle_timeout
            .saturating_add(self.idle_timeout_per_retry.saturating_mul(retries_spent))
    }

    /// The backoff before retry number `retry` (1-based), without jitter:
    /// `base_delay × 2^(retry-1)`, capped at `max_delay`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }

    /// The wait before retry number `retry` after `error`: the server's
    /// `Retry-After` (capped) when honoured, else the jittered backoff.
    pub fn retry_wait(&self, retry: u32, error: &ProviderError) -> Duration {
        if self.honor_retry_after
            && let Some(ms) = error.retry_after_ms
        {
            return Duration::from_millis(ms).min(self.max_retry_after);
        }
        let base = self.backoff(retry).as_secs_f64();
        let jitter = self.jitter.clamp(0.0, 1.0);
        let factor = 1.0 + jitter * (2.0 * random_unit() - 1.0);
        Duration::from_secs_f64((base * factor).max(0.0))
    }
}

/// What [`complete()`] reports while it works.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamNotice {
    /// Visible text as it streams.
    TextDelta(String),
    /// Thinking text as it streams.
    ThinkingDelta(String),
    /// Something the provider sent could not be used as sent (see
    /// [`ProviderEvent::Notice`]).
    Notice(String),
    /// A tool call's arguments became complete JSON while the response still streams
    /// (sent once per call; the response may yet be cut off, so a caller that acts on it
    /// early must be ready to discard what it did).
    CallReady {
        /// Call id.
        id: String,
        /// Tool name as the model spelled it.
        name: String,
        /// The arguments, parsed by the strict reader.
        arguments: serde_json::Value,
    },
    /// A request failed transiently and is retried after `wait_ms`.
    Retry {
        /// 1-based retry number.
        attempt: u32,
        /// Wait before the retry, in milliseconds.
        wait_ms: u64,
        /// The failure, scrubbed of secrets.
        reason: String,
    },
}

/// Sends `request` through `provider` and reduces the streamed answer,
/// retrying what may be retried (see the module docs).
///
/// Deltas are forwarded to `on_event` as they arrive; since only attempts
/// that produced no content are retried, no delta is ever forwarded twice.
///
/// # Errors
/// The provider's error when it is not retryable (auth, authorization,
/// context length), or the last error once `max_retries` retries are spent;
/// a stall or an unterminated stream before any content counts as a
/// `Timeout` / `Network` error.
pub async fn complete(
    provider: &dyn Provider,
    request: &ChatRequest,
    opts: &CompleteOptions,
    on_event: &mut (dyn FnMut(StreamNotice) + Send),
) -> Result<AssistantResponse, ProviderError> {
    let mut retries = 0u32;
    loop {
        let idle = opts.idle_timeout_for(retries);
        let error = match attempt(provider, request, idle, on_event).await {
            Ok(response) => return Ok(response),
            Err(error) => error,
        };
        if !opts.should_retry(&error) {
            return Err(error);
        }
        if retries >= opts.max_retries {
            let mut error = error;
            error.message = format!("{} (gave up after {retries} retries)", error.message);
            return Err(error);
        }
        retries += 1;
        let wait = opts.retry_wait(retries, &error);
        on_event(StreamNotice::Retry {
            attempt: retries,
            wait_ms: wait.as_millis() as u64,
            reason: error.message.clone(),
        });
        tokio::time::sleep(wait).await;
    }
}

/// One request. `Err` only when nothing was received (so a retry is safe).
async fn attempt(
    provider: &dyn Provider,
    request: &ChatRequest,
    idle: Duration,
    on_event: &mut (dyn FnMut(StreamNotice) + Send),
) -> Result<AssistantResponse, ProviderError> {
    let mut stream = match tokio::time::timeout(idle, provider.stream(request)).await {
        Ok(result) => result?,
        Err(_) => return Err(stall_error(provider, idle, "before the response started")),
    };
    let mut reducer = StreamReducer::new();
    let mut ready = ReadyCalls::default();
    let interruption = loop {
        let next = match tokio::time::timeout(idle, stream.next()).await {
            Ok(next) => next,
            Err(_) => break stall_error(provider, idle, "in the middle of the response"),
        };
        match next {
            Some(Ok(event)) => {
                forward(&event, on_event);
                ready.push(&event, on_event);
                reducer.push(&event);
                if reducer.is_completed() {
                    return Ok(reducer.finish(request.max_tokens));
                }
            }
            Some(Err(error)) => break error,
            None => {
                break ProviderError::new(
                    ProviderErrorKind::Network,
                    format!(
                        "{}: stream closed before its terminal signal (connection cut)",
                        provider.name()
                    ),
                );
            }
        }
    };
    if !reducer.has_content() {
        return Err(interruption);
    }
    let mut response = reducer.finish(request.max_tokens);
    response.interrupted = true;
    response.interruption = Some(interruption.message);
    Ok(response)
}

/// The calls of one streaming response, watched for the moment their arguments become
/// complete JSON ([`StreamNotice::CallReady`]).
#[derive(Default)]
struct ReadyCalls {
    /// By position: id, name, argument text so far, and whether it was announced.
    calls: Vec<(String, String, String, bool)>,
}

impl ReadyCalls {
    fn push(&mut self, event: &ProviderEvent, on_event: &mut (dyn FnMut(StreamNotice) + Send)) {
        let index = match event {
            ProviderEvent::ToolCallStart { index, id, name } => {
                if self.calls.len() <= *index {
                    self.calls.resize(*index + 1, Default::default());
                }
                self.calls[*index] = (id.clone(), name.clone(), String::new(), false);
                *index
            }
            ProviderEvent::ToolCallDelta { index, arguments } => {
                let Some(call) = self.calls.get_mut(*index) else {
                    return;
                };
                call.2.push_str(arguments);
                *index
            }
            _ => return,
        };
        let Some((id, name, text, announced)) = self.calls.get(index) else {
            return;
        };
        if *announced || id.is_empty() || !text.trim_end().ends_with('}') {
            return;
        }
        // In the response's order only: a call is announced after every earlier one, so
        // a caller acting early never sees a later call before an earlier one.
        if !self.calls[..index].iter().all(|c| c.3) {
            return;
        }
        if let Ok(arguments) = codesmith_protocol::parse_arguments(text)
            && arguments.is_object()
        {
            on_event(StreamNotice::CallReady {
                id: id.clone(),
                name: name.clone(),
                arguments,
            });
            self.calls[index].3 = true;
        }
    }
}

fn forward(event: &ProviderEvent, on_event: &mut (dyn FnMut(StreamNotice) + Send)) {
    match event {
        ProviderEvent::TextDelta(text) | ProviderEvent::RefusalDelta(text) => {
            if !text.is_empty() {
                on_event(StreamNotice::TextDelta(text.clone()));
            }
        }
        ProviderEvent::ThinkingDelta(text) => on_event(StreamNotice::ThinkingDelta(text.clone())),
        ProviderEvent::Notice(text) => on_event(StreamNotice::Notice(text.clone())),
        ProviderEvent::ToolCallStart { .. }
        | ProviderEvent::ToolCallDelta { .. }
        | ProviderEvent::Usage(_)
        | ProviderEvent::KeepAlive
        | ProviderEvent::Completed { .. } => {}
    }
}

fn stall_error(provider: &dyn Provider, idle: Duration, when: &str) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Timeout,
        format!(
            "{}: stream idle timeout: no events for {:.1}s {when}; the connection may have stalled",
            provider.name(),
            idle.as_secs_f64()
        ),
    )
}

/// A number in [0, 1) from the standard library's per-process hash keys and
/// the clock (no `rand` dependency; quality is irrelevant for jitter).
fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    hasher.write_u128(nanos);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let o = CompleteOptions::default();
        assert_eq!(o.backoff(1), Duration::from_secs(1));
        assert_eq!(o.backoff(2), Duration::from_secs(2));
        assert_eq!(o.backoff(3), Duration::from_secs(4));
        assert_eq!(o.backoff(10), Duration::from_secs(60));
        assert_eq!(o.idle_timeout_for(0), Duration::from_secs(120));
        assert_eq!(o.idle_timeout_for(3), Duration::from_secs(210));
    }

    #[test]
    fn background_budget_retries_only_transient_kinds() {
        let bg = CompleteOptions::background();
        let err = |kind| ProviderError::new(kind, "x");
        assert!(bg.should_retry(&err(ProviderErrorKind::RateLimit)));
        assert!(bg.should_retry(&err(ProviderErrorKind::Network)));
        assert!(!bg.should_retry(&err(ProviderErrorKind::Internal)));
        assert!(CompleteOptions::default().should_retry(&err(ProviderErrorKind::Internal)));
        assert!(!CompleteOptions::default().should_retry(&err(ProviderErrorKind::Auth)));
        assert_eq!(bg.backoff(3), Duration::from_secs(4));
        assert_eq!(bg.backoff(4), Duration::from_secs(4));
    }

    #[test]
    fn jitter_stays_within_ten_percent_and_retry_after_wins() {
        let o = CompleteOptions::default();
        let err = ProviderError::new(ProviderErrorKind::Internal, "x");
        for _ in 0..200 {
            let w = o.retry_wait(2, &err).as_secs_f64();
            assert!((1.8..=2.2).contains(&w), "{w}");
        }
        let mut limited = ProviderError::new(ProviderErrorKind::RateLimit, "x");
        limited.retry_after_ms = Some(7_000);
        assert_eq!(o.retry_wait(1, &limited), Duration::from_secs(7));
        limited.retry_after_ms = Some(u64::MAX);
        assert_eq!(o.retry_wait(1, &limited), o.max_retry_after);
    }

    /// A source that sends only keep-alives for `quiet` (one per `beat`), then answers.
    struct Slow {
        beat: Duration,
        beats: u32,
        keep_alive: bool,
        streams: std::sync::atomic::AtomicU32,
    }

    #[async_trait::async_trait]
    impl Provider for Slow {
        fn name(&self) -> &str {
            "slow"
        }

        async fn stream(&self, _: &ChatRequest) -> Result<crate::EventStream, ProviderError> {
            self.streams
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let (beat, keep_alive) = (self.beat, self.keep_alive);
            let quiet = futures::stream::iter(0..self.beats).then(move |_| async move {
                tokio::time::sleep(beat).await;
                ProviderEvent::KeepAlive
            });
            let quiet = quiet.filter(move |_| std::future::ready(keep_alive));
            let answer = futures::stream::iter([
                ProviderEvent::TextDelta("done".into()),
                ProviderEvent::Completed {
                    stop_reason: Some(codesmith_protocol::StopReason::EndTurn),
                },
            ]);
            Ok(quiet.chain(answer).map(Ok).boxed())
        }
    }

    fn slow_run(keep_alive: bool) -> (Result<AssistantResponse, ProviderError>, u32, usize) {
        let provider = Slow {
            beat: Duration::from_millis(300),
            beats: 6,
            keep_alive,
            streams: Default::default(),
        };
        let opts = CompleteOptions {
            idle_timeout: Duration::from_secs(1),
            idle_timeout_per_retry: Duration::ZERO,
            max_retries: 0,
            ..CompleteOptions::default()
        };
        let request = ChatRequest {
            model: "m".into(),
            system: String::new(),
            messages: vec![codesmith_protocol::Message::user_text("hi")],
            tools: vec![],
            max_tokens: None,
            temperature: None,
            stop: vec![],
            prompt_cache_key: None,
        };
        let mut notices = Vec::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let result = runtime.block_on(complete(&provider, &request, &opts, &mut |n| {
            notices.push(n)
        }));
        let retries = notices
            .iter()
            .filter(|n| matches!(n, StreamNotice::Retry { .. }))
            .count();
        let streams = provider.streams.load(std::sync::atomic::Ordering::SeqCst);
        (result, streams, retries)
    }

    #[test]
    fn keep_alives_hold_off_the_idle_timeout_and_nothing_shows_them() {
        // 1.8 s of work against a 1 s idle timeout, a keep-alive every 0.3 s.
        let (result, streams, retries) = slow_run(true);
        let response = result.unwrap_or_else(|e| panic!("a slow healthy source failed: {e}"));
        assert_eq!((streams, retries), (1, 0));
        assert_eq!(response.text, "done");
        // The same silence without keep-alives is a stall.
        let (result, _, _) = slow_run(false);
        let err = result
            .err()
            .unwrap_or_else(|| panic!("silence was not a stall"));
        assert_eq!(err.kind, ProviderErrorKind::Timeout);
    }
}
