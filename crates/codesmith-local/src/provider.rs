//! [`LocalProvider`]: the embedded model behind the [`Provider`] trait.
//!
//! Generation runs on a dedicated thread and streams events through a
//! channel, like the remote providers' SSE streams. The loaded model and its
//! KV cache stay in the provider between requests.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use codesmith_protocol::{ContentBlock, Message, Role, StopReason, ToolCall, Usage};
use codesmith_providers::{
    ChatRequest, EventStream, Provider, ProviderError, ProviderErrorKind, ProviderEvent,
};
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::constrain::{Catalogue, LOOK_TOOLS, Steering, task_needs_workspace, workspace_paths};
use crate::error::LocalError;
use crate::fetch::ensure_model;
use crate::model::{Finish, GenerateOptions, LocalModel};
use crate::prompt::{Remembered, has_tool_results, render_assistant, render_prompt};
use crate::respond::Responder;

/// The name of the default model (SmolLM2-135M-Instruct, fetched on first use).
pub const DEFAULT_MODEL: &str = "smollm2-135m-instruct";
/// Output-token cap when the request sets none.
pub const DEFAULT_MAX_TOKENS: usize = 1024;
/// Tool calls the small model may make for one task before it must answer in
/// text: one look, then the answer from what it saw (a model this small
/// wanders and repeats itself when it is free to go on calling).
const MAX_CALLS_PER_TASK: usize = 1;
/// Events buffered between the generation thread and the consumer.
const CHANNEL_DEPTH: usize = 256;
/// Longest quiet spell before a [`ProviderEvent::KeepAlive`] while the model
/// works without output to show (waiting for the model, prefilling, writing a
/// tool call): far below any sensible stream idle timeout.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(2);
/// How often a request waiting for the model (another request holds it)
/// checks whether its consumer is still there.
const SLOT_POLL: Duration = Duration::from_millis(20);

/// True when `model` names the default model rather than a GGUF path: empty,
/// `default`, `local`, `smollm2` or [`DEFAULT_MODEL`] (any case).
pub fn is_default_model(model: &str) -> bool {
    let name = model.trim().to_ascii_lowercase();
    matches!(name.as_str(), "" | "default" | "local" | "smollm2") || name == DEFAULT_MODEL
}

struct Loaded {
    model: LocalModel,
    remembered: Remembered,
}

/// The embedded local model as a [`Provider`] named `local`.
///
/// `ChatRequest::model` is either a default name (see [`is_default_model`]),
/// fetched into `<home>/models/` on first use, or a path to a GGUF file.
/// Requests are served one at a time; the model and its KV cache are kept
/// between them, so a request that extends the previous one prefills only
/// its new tokens.
///
/// Each stream yields `TextDelta`s, `ToolCallStart` + one `ToolCallDelta`
/// (raw argument text, possibly malformed) per `<tool_call>` block with ids
/// `call_<hex millis>_<n>`, then `Usage` (`cached_input_tokens` = prompt
/// tokens served from the kept cache) and `Completed` with `MaxTokens` when
/// the cap or the context (4096 tokens) was hit, else `ToolUse` when calls
/// were emitted, `StopSequence` for a caller's stop sequence, or `EndTurn`.
/// While there is nothing to show (waiting for the model, prefilling, writing
/// a tool call) a `KeepAlive` comes at least every [`KEEP_ALIVE_INTERVAL`].
/// A failure arrives as one `Err` item; a prompt over the context is a
/// `ContextLength` error. Dropping the stream stops the generation before
/// its next forward pass and frees the model. Cloning shares the loaded model.
#[derive(Clone)]
pub struct LocalProvider {
    home: PathBuf,
    workspace: Option<PathBuf>,
    slot: Arc<Mutex<Option<Loaded>>>,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProvider")
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

impl LocalProvider {
    /// A provider whose default model is cached under `home` (`$CODESMITH_HOME`).
    /// Nothing is fetched or loaded until the first request (or [`Self::preload`]).
    pub fn new(home: impl Into<PathBuf>) -> Self {
        LocalProvider {
            home: home.into(),
            workspace: None,
            slot: Arc::new(Mutex::new(None)),
        }
    }

    /// Names the workspace the tools work on: the `path` argument of a
    /// read-only look tool (`list_dir`, `file_search`, `grep_files`,
    /// `read_file`) is then constrained to paths that exist there.
    pub fn with_workspace(mut self, workspace: impl Into<PathBuf>) -> Self {
        self.workspace = Some(workspace.into());
        self
    }

    /// The GGUF path `model` refers to, fetching the default model if needed.
    ///
    /// # Errors
    /// As [`ensure_model`]; [`LocalError::Model`] when a named path is not a file.
    pub fn resolve_model(&self, model: &str) -> Result<PathBuf, LocalError> {
        if is_default_model(model) {
            return ensure_model(&self.home, &mut |_| {});
        }
        let path = PathBuf::from(model.trim());
        if !path.is_file() {
            return Err(LocalError::Model {
                path,
                detail: format!(
                    "no such GGUF file; name an existing .gguf with `--model PATH` \
                     or use the default `{DEFAULT_MODEL}`"
                ),
            });
        }
        Ok(path)
    }

    /// Fetches (if needed) and loads `model` now, so the first request does
    /// not pay for it. Blocking: call it from a blocking context.
    ///
    /// # Errors
    /// As [`Self::resolve_model`] and [`LocalModel::load`].
    pub fn preload(&self, model: &str) -> Result<(), LocalError> {
        let path = self.resolve_model(model)?;
        let mut slot = lock(&self.slot);
        load_into(&mut slot, &path)?;
        Ok(())
    }

    /// True while a request holds the model (waiting requests excluded).
    pub fn is_generating(&self) -> bool {
        matches!(self.slot.try_lock(), Err(TryLockError::WouldBlock))
    }

    /// Serves one request on the calling thread, sending events to `tx`.
    fn serve(&self, request: &ChatRequest, tx: &Sender) {
        let mut pulse = Pulse::new(tx, KEEP_ALIVE_INTERVAL);
        let mut send = |event: ProviderEvent| tx.blocking_send(Ok(event)).is_ok();
        if let Err(err) = self.generate(request, &mut pulse, &mut send) {
            let _ = tx.blocking_send(Err(err.into()));
        }
    }

    fn generate(
        &self,
        request: &ChatRequest,
        pulse: &mut Pulse<'_>,
        send: &mut dyn FnMut(ProviderEvent) -> bool,
    ) -> Result<(), LocalError> {
        let path = self.resolve_model(&request.model)?;
        let Some(mut slot) = wait_for_slot(&self.slot, pulse) else {
            return Ok(());
        };
        let loaded = load_into(&mut slot, &path)?;
        let prompt = render_prompt(loaded.model.tokenizer(), request, &loaded.remembered)?;
        let options = GenerateOptions {
            max_tokens: request
                .max_tokens
                .map_or(DEFAULT_MAX_TOKENS, |n| n as usize)
                .max(1),
            temperature: request.temperature.map(f64::from),
            seed: seed(),
        };
        let mut stops = request.stop.clone();
        if !request.tools.is_empty() {
            // A made-up tool result must never follow a call, and an answer that
            // copies a result ends where the result's wrapper would close.
            stops.push("<tool_response>".to_string());
            stops.push("</tool_response>".to_string());
        }
        let Loaded { model, remembered } = loaded;
        let tokenizer = model.shared_tokenizer();
        let paths = self
            .workspace
            .as_deref()
            .map(workspace_paths)
            .unwrap_or_default();
        let catalogue = Catalogue::new(&request.tools)
            .with_paths(&paths)
            .without_repeats(
                calls_of_task(request).map(|c| (c.name.as_str(), c.arguments.as_str())),
            );
        let mut steering = Steering::new(catalogue, tokenizer.token_texts());
        if first_look(request) {
            steering = steering.forced(&LOOK_TOOLS);
        } else if calls_of_task(request).count() >= MAX_CALLS_PER_TASK {
            steering = steering.answer_only();
        }
        steering = steering.grounded(&results_of_task(request));
        let mut responder = Responder::new(&tokenizer, stops, send);
        let generation = model.generate_steered(
            &prompt,
            &options,
            Some(&mut steering),
            &mut || pulse.beat(),
            &mut |id| responder.on_token(id),
        )?;
        responder.finish();
        if responder.stop_hit().is_none() {
            remembered.insert(
                render_assistant(&responder.message()),
                generation.tokens.clone(),
            );
        }
        // A response cut at the token cap reports MaxTokens even when it holds
        // calls: the last one may be truncated, and the engine's truncation
        // check must see that.
        let stop_reason = if matches!(generation.finish, Finish::MaxTokens | Finish::ContextFull) {
            StopReason::MaxTokens
        } else if !responder.calls().is_empty() {
            StopReason::ToolUse
        } else if responder
            .stop_hit()
            .is_some_and(|stop| request.stop.iter().any(|s| s == stop))
        {
            StopReason::StopSequence
        } else {
            StopReason::EndTurn
        };
        responder.emit(ProviderEvent::Usage(Usage {
            input_tokens: generation.prompt_tokens as u64,
            output_tokens: generation.tokens.len() as u64,
            cached_input_tokens: generation.reused_tokens as u64,
            cache_write_input_tokens: 0,
        }));
        responder.emit(ProviderEvent::Completed {
            stop_reason: Some(stop_reason),
        });
        Ok(())
    }
}

/// The tool calls the assistant made since the person's last message.
fn calls_of_task(request: &ChatRequest) -> impl Iterator<Item = &ToolCall> {
    request
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role == Role::Assistant || has_tool_results(m))
        .flat_map(Message::tool_calls)
}

/// The text of the tool results since the person's last message, in order,
/// joined by line breaks: what an answer after them is grounded in.
fn results_of_task(request: &ChatRequest) -> String {
    let mut results: Vec<&str> = request
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role == Role::Assistant || has_tool_results(m))
        .flat_map(|m| m.content.iter().rev())
        .filter_map(|b| match b {
            ContentBlock::ToolResult(result) => Some(result.content.as_str()),
            _ => None,
        })
        .collect();
    results.reverse();
    results.join("\n")
}

/// True when this response is the first of a task about the workspace: the
/// request offers tools, its last message is the person's text (no tool
/// results yet since it), and that text names files, folders, crates, a
/// repository and the like. Such a response starts with a read-only tool call.
fn first_look(request: &ChatRequest) -> bool {
    if request.tools.is_empty() {
        return false;
    }
    let Some(last) = request.messages.last() else {
        return false;
    };
    if last.role != Role::User || has_tool_results(last) {
        return false;
    }
    let text: String = last
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    task_needs_workspace(&text)
}

/// The sending half of a stream's event channel.
type Sender = mpsc::Sender<Result<ProviderEvent, ProviderError>>;

/// Liveness of one stream, checked between forward passes: whether anyone
/// still listens, and a [`ProviderEvent::KeepAlive`] once `interval` has
/// passed since the last one (so the consumer's idle timeout sees a slow
/// but healthy generation as alive).
struct Pulse<'a> {
    tx: &'a Sender,
    interval: Duration,
    last: Instant,
}

impl<'a> Pulse<'a> {
    fn new(tx: &'a Sender, interval: Duration) -> Self {
        Pulse {
            tx,
            interval,
            last: Instant::now(),
        }
    }

    /// `false` once the receiver is gone: the work should stop.
    fn beat(&mut self) -> bool {
        if self.tx.is_closed() {
            return false;
        }
        if self.last.elapsed() >= self.interval {
            match self.tx.try_send(Ok(ProviderEvent::KeepAlive)) {
                // A full channel has events the consumer has yet to read: it is not idle.
                Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => self.last = Instant::now(),
                Err(mpsc::error::TrySendError::Closed(_)) => return false,
            }
        }
        true
    }
}

/// Locks the model slot, waiting (with keep-alives) while another request
/// holds it; `None` when the consumer left before the slot came free.
fn wait_for_slot<'a>(
    slot: &'a Mutex<Option<Loaded>>,
    pulse: &mut Pulse<'_>,
) -> Option<MutexGuard<'a, Option<Loaded>>> {
    loop {
        match slot.try_lock() {
            Ok(guard) => return Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => return Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => {
                if !pulse.beat() {
                    return None;
                }
                std::thread::sleep(SLOT_POLL);
            }
        }
    }
}

fn lock(slot: &Mutex<Option<Loaded>>) -> MutexGuard<'_, Option<Loaded>> {
    // A panic while generating leaves a usable model; at worst its cache is
    // stale, and the prefix check rebuilds it.
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Loads `path` into the slot unless it already holds that model.
fn load_into<'a>(slot: &'a mut Option<Loaded>, path: &Path) -> Result<&'a mut Loaded, LocalError> {
    if slot.as_ref().is_none_or(|l| l.model.path() != path) {
        *slot = None;
        let model = LocalModel::load(path)?;
        *slot = Some(Loaded {
            model,
            remembered: Remembered::default(),
        });
    }
    slot.as_mut()
        .ok_or_else(|| LocalError::Inference("the model slot is empty".to_string()))
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[async_trait]
impl Provider for LocalProvider {
    fn name(&self) -> &str {
        "local"
    }

    fn accepts_images(&self) -> bool {
        false
    }

    fn estimate_input_tokens(&self, request: &ChatRequest) -> Option<u64> {
        Some(crate::prompt::estimate_tokens(request))
    }

    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let (tx, rx) = mpsc::channel(CHANNEL_DEPTH);
        let provider = self.clone();
        let request = request.clone();
        std::thread::Builder::new()
            .name("codesmith-local".to_string())
            .spawn(move || provider.serve(&request, &tx))
            .map_err(|e| {
                ProviderError::new(
                    ProviderErrorKind::Internal,
                    format!("cannot start the local model thread: {e}"),
                )
            })?;
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        Ok(stream.boxed())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_pulse_sends_keep_alives_on_its_interval_and_stops_when_nobody_listens() {
        let (tx, mut rx) = mpsc::channel(4);
        let mut pulse = Pulse::new(&tx, Duration::from_millis(50));
        assert!(pulse.beat());
        assert!(rx.try_recv().is_err(), "no keep-alive before the interval");
        std::thread::sleep(Duration::from_millis(60));
        assert!(pulse.beat());
        assert!(matches!(rx.try_recv(), Ok(Ok(ProviderEvent::KeepAlive))));
        assert!(pulse.beat());
        assert!(rx.try_recv().is_err(), "one keep-alive per interval");
        drop(rx);
        assert!(!pulse.beat());
    }

    #[test]
    fn a_request_waiting_for_the_model_gives_up_when_its_consumer_leaves() {
        let slot = Arc::new(Mutex::new(None));
        let held = lock(&slot);
        let (tx, rx) = mpsc::channel(4);
        let waiter = {
            let slot = Arc::clone(&slot);
            std::thread::spawn(move || {
                let mut pulse = Pulse::new(&tx, Duration::from_millis(10));
                wait_for_slot(&slot, &mut pulse).is_some()
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !waiter.is_finished(),
            "the waiter waits while the model is held"
        );
        drop(rx);
        let started = Instant::now();
        while !waiter.is_finished() && started.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!waiter.join().unwrap(), "the waiter gave up");
        drop(held);
    }
}
