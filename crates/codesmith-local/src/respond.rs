//! Turning generated tokens into provider events: UTF-8 reassembly, stop
//! sequences, and `<tool_call>` blocks lifted into structured calls.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use codesmith_protocol::{ContentBlock, Message, Role, ToolCall};
use codesmith_providers::ProviderEvent;

use crate::stops::StopScanner;
use crate::tokenizer::{LocalTokenizer, Utf8Stream};
use crate::toolcall::{Segment, ToolCallParser};

/// Streams one response's events through `emit`, which returns `false` once
/// nobody is listening any more.
pub(crate) struct Responder<'a> {
    tokenizer: &'a LocalTokenizer,
    emit: &'a mut dyn FnMut(ProviderEvent) -> bool,
    utf8: Utf8Stream,
    stops: StopScanner,
    parser: ToolCallParser,
    text: String,
    calls: Vec<ToolCall>,
    stop_hit: Option<String>,
    listening: bool,
}

impl<'a> Responder<'a> {
    /// A responder that cuts the output at any of `stops`.
    pub(crate) fn new(
        tokenizer: &'a LocalTokenizer,
        stops: Vec<String>,
        emit: &'a mut dyn FnMut(ProviderEvent) -> bool,
    ) -> Self {
        Responder {
            tokenizer,
            emit,
            utf8: Utf8Stream::default(),
            stops: StopScanner::new(stops),
            parser: ToolCallParser::new(),
            text: String::new(),
            calls: Vec::new(),
            stop_hit: None,
            listening: true,
        }
    }

    /// Handles one generated token; returns `false` when generation should stop.
    pub(crate) fn on_token(&mut self, id: u32) -> bool {
        let text = self.utf8.push(self.tokenizer.token_bytes(id));
        self.scan(&text);
        self.listening && self.stop_hit.is_none()
    }

    /// Flushes everything held back. Call once, after generation ended.
    pub(crate) fn finish(&mut self) {
        let tail = self.utf8.finish();
        self.scan(&tail);
        if self.stop_hit.is_none() {
            let rest = self.stops.finish();
            self.parse(&rest);
        }
        let segments = self.parser.finish();
        self.send(segments);
    }

    /// The stop sequence that cut the output, if one did.
    pub(crate) fn stop_hit(&self) -> Option<&str> {
        self.stop_hit.as_deref()
    }

    /// The tool calls emitted so far.
    pub(crate) fn calls(&self) -> &[ToolCall] {
        &self.calls
    }

    /// The assistant message the events describe (text first, then calls).
    pub(crate) fn message(&self) -> Message {
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(ContentBlock::Text {
                text: self.text.clone(),
            });
        }
        content.extend(self.calls.iter().cloned().map(ContentBlock::ToolCall));
        Message {
            role: Role::Assistant,
            content,
        }
    }

    /// Emits an event that is not part of the text (usage, completion).
    pub(crate) fn emit(&mut self, event: ProviderEvent) {
        if self.listening {
            self.listening = (self.emit)(event);
        }
    }

    fn scan(&mut self, text: &str) {
        if self.stop_hit.is_some() || text.is_empty() {
            return;
        }
        let (safe, hit) = self.stops.push(text);
        self.stop_hit = hit;
        self.parse(&safe);
    }

    fn parse(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let segments = self.parser.push(text);
        self.send(segments);
    }

    fn send(&mut self, segments: Vec<Segment>) {
        for segment in segments {
            match segment {
                Segment::Text(text) => {
                    if text.is_empty() {
                        continue;
                    }
                    self.text.push_str(&text);
                    self.emit(ProviderEvent::TextDelta(text));
                }
                Segment::Call(call) => {
                    let index = self.calls.len();
                    let id = new_call_id();
                    self.emit(ProviderEvent::ToolCallStart {
                        index,
                        id: id.clone(),
                        name: call.name.clone(),
                    });
                    self.emit(ProviderEvent::ToolCallDelta {
                        index,
                        arguments: call.arguments.clone(),
                    });
                    self.calls.push(ToolCall {
                        id,
                        name: call.name,
                        arguments: call.arguments,
                    });
                }
            }
        }
    }
}

/// A call id unique across this process and, by its time component, across
/// resumed sessions: `call_<unix-millis hex>_<counter>`.
fn new_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("call_{millis:x}_{n}")
}
