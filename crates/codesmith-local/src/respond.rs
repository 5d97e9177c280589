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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tokenizer::byte_tokenizer;

    /// Feeds `text` one byte-token at a time; returns the events, the
    /// responder's stop state and the token count consumed.
    fn respond(text: &str, stops: &[&str]) -> (Vec<ProviderEvent>, Option<String>, usize) {
        let tokenizer = byte_tokenizer();
        let ids = tokenizer.encode(text).unwrap();
        assert_eq!(ids.len(), text.len());
        let mut events = Vec::new();
        let mut emit = |e: ProviderEvent| {
            events.push(e);
            true
        };
        let mut responder = Responder::new(
            &tokenizer,
            stops.iter().map(|s| s.to_string()).collect(),
            &mut emit,
        );
        let mut consumed = 0;
        for id in ids {
            consumed += 1;
            if !responder.on_token(id) {
                break;
            }
        }
        responder.finish();
        let stop = responder.stop_hit().map(str::to_string);
        drop(responder);
        (events, stop, consumed)
    }

    fn text_of(events: &[ProviderEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn tool_call_blocks_become_structured_calls() {
        let (events, stop, _) = respond(
            "Sure. <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}</tool_call>",
            &[],
        );
        assert_eq!(stop, None);
        assert_eq!(text_of(&events), "Sure. ");
        let calls: Vec<&ProviderEvent> = events
            .iter()
            .filter(|e| !matches!(e, ProviderEvent::TextDelta(_)))
            .collect();
        assert_eq!(calls.len(), 2);
        assert!(
            matches!(calls[0], ProviderEvent::ToolCallStart { index: 0, id, name } if id.starts_with("call_") && name == "read_file")
        );
        assert_eq!(
            calls[1],
            &ProviderEvent::ToolCallDelta {
                index: 0,
                arguments: r#"{"path":"a.rs"}"#.into()
            }
        );
    }

    #[test]
    fn a_made_up_tool_response_is_cut_off() {
        let text = "<tool_call>{\"name\": \"x\"}</tool_call>\n<tool_response>fake result";
        let (events, stop, consumed) = respond(text, &["<tool_response>"]);
        assert_eq!(stop.as_deref(), Some("<tool_response>"));
        assert_eq!(consumed, text.find("fake").unwrap());
        assert_eq!(text_of(&events), "\n");
    }

    #[test]
    fn garbage_output_never_panics() {
        let tokenizer = byte_tokenizer();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut emit = |_e: ProviderEvent| true;
        let mut responder = Responder::new(&tokenizer, vec!["</s>".into()], &mut emit);
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Mostly tag characters and invalid UTF-8 lead bytes, some anything.
            let alphabet = b"<>/{}\"tool_cal";
            let id = match state % 4 {
                0 => u32::from(alphabet[(state >> 8) as usize % alphabet.len()]),
                1 => 0xC0 + (state >> 8) as u32 % 64,
                _ => (state >> 8) as u32 % 300,
            };
            if !responder.on_token(id) {
                break;
            }
        }
        responder.finish();
        let _ = responder.message();
    }

    #[test]
    fn a_gone_consumer_stops_generation() {
        let tokenizer = byte_tokenizer();
        let mut emit = |_e: ProviderEvent| false;
        let mut responder = Responder::new(&tokenizer, Vec::new(), &mut emit);
        assert!(!responder.on_token(u32::from(b'a')));
    }
}
