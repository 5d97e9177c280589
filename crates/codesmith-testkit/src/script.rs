//! What the scripted server plays: scripted turns and faults.

/// Largest gap [`Scripted::pace_ms`] accepts between two SSE events: 1 s
/// (a slower pace belongs in [`Scripted::stall_after`]).
pub const MAX_PACE_MS: u64 = 1_000;

/// How a scripted turn says it ended, rendered in each dialect's spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// OpenAI `stop`, Anthropic `end_turn`.
    Stop,
    /// OpenAI `tool_calls`, Anthropic `tool_use`.
    ToolCalls,
    /// OpenAI `length`, Anthropic `max_tokens`.
    Length,
    /// OpenAI `content_filter`, Anthropic `refusal`.
    ContentFilter,
    /// No finish/stop reason on the wire (the terminal signal is still sent).
    Omitted,
    /// A verbatim wire value.
    Other(String),
}

/// One tool call of a scripted turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedCall {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Raw argument text, streamed as is (may be deliberately malformed).
    pub arguments: String,
}

/// A scripted model turn, rendered as SSE in the dialect of the endpoint
/// that was called (`/chat/completions` → OpenAI, `/messages` → Anthropic).
///
/// Content is streamed in small pieces ([`Scripted::chunk_chars`]) and the
/// bytes are written in small writes ([`Scripted::write_bytes`]) that may
/// split UTF-8 characters, as real servers do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scripted {
    pub(crate) text: String,
    pub(crate) thinking: String,
    pub(crate) tool_calls: Vec<ScriptedCall>,
    pub(crate) finish: Option<Finish>,
    pub(crate) usage: Option<(u64, u64)>,
    pub(crate) cache: Option<crate::CacheUsage>,
    pub(crate) chunk_chars: usize,
    pub(crate) text_cuts: Vec<usize>,
    pub(crate) write_bytes: usize,
    pub(crate) stall_before_ms: u64,
    pub(crate) pace_ms: u64,
    pub(crate) stall_after: Option<(usize, u64)>,
    pub(crate) drop_after: Option<usize>,
    pub(crate) omit_terminal: bool,
    pub(crate) whole: bool,
    pub(crate) raw: Option<String>,
}

impl Default for Scripted {
    fn default() -> Self {
        Scripted {
            text: String::new(),
            thinking: String::new(),
            tool_calls: Vec::new(),
            finish: None,
            usage: None,
            cache: None,
            chunk_chars: 3,
            text_cuts: Vec::new(),
            write_bytes: 16,
            stall_before_ms: 0,
            pace_ms: 0,
            stall_after: None,
            drop_after: None,
            omit_terminal: false,
            whole: false,
            raw: None,
        }
    }
}

impl Scripted {
    /// A turn answering with `text` and finishing with `stop` / `end_turn`.
    pub fn text(text: impl Into<String>) -> Self {
        Scripted::default().with_text(text)
    }

    /// A turn making one tool call with the raw `arguments` text, finishing
    /// with `tool_calls` / `tool_use`.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Scripted::default().with_tool_call(id, name, arguments)
    }

    /// A turn cut at the output cap in the middle of a tool call: the
    /// partial `arguments` are streamed and the finish is `length` /
    /// `max_tokens`.
    pub fn truncated_tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        partial_arguments: impl Into<String>,
    ) -> Self {
        Scripted::tool_call(id, name, partial_arguments).finish(Finish::Length)
    }

    /// A turn whose event-stream body is `body`, sent byte for byte (in
    /// [`Scripted::write_bytes`] pieces, then the connection closes),
    /// whichever dialect was called: for wire shapes the scripted turns do
    /// not produce (parallel calls at one index, parsed arguments, a body
    /// without its terminal signal). Content settings do not apply.
    pub fn raw(body: impl Into<String>) -> Self {
        Scripted {
            raw: Some(body.into()),
            ..Scripted::default()
        }
    }

    /// Adds visible text (streamed before any tool call).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text.push_str(&text.into());
        self
    }

    /// Adds thinking text (OpenAI `reasoning_content`, Anthropic thinking
    /// block), streamed first.
    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.thinking.push_str(&thinking.into());
        self
    }

    /// Adds a tool call with raw `arguments`.
    pub fn with_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.tool_calls.push(ScriptedCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        });
        self
    }

    /// Sets the finish reason. Default: [`Finish::ToolCalls`] when the turn
    /// has tool calls, else [`Finish::Stop`].
    pub fn finish(mut self, finish: Finish) -> Self {
        self.finish = Some(finish);
        self
    }

    /// Sets the reported usage (input and output tokens). Default: 10 input
    /// tokens and one output token per content piece.
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some((input_tokens, output_tokens));
        self
    }

    /// Characters of content per delta event (default 3, minimum 1).
    pub fn chunk_chars(mut self, n: usize) -> Self {
        self.chunk_chars = n.max(1);
        self
    }

    /// Streams the visible text in deltas that end exactly at these byte offsets
    /// (and at its end) instead of every [`Scripted::chunk_chars`] characters: a
    /// text cut at offset 7 arrives as two deltas, `text[..7]` and `text[7..]`.
    /// Offsets that are 0, past the end or inside a character are ignored.
    pub fn cut_text_at(mut self, offsets: impl IntoIterator<Item = usize>) -> Self {
        self.text_cuts.extend(offsets);
        self
    }

    /// Bytes per socket write (default 16; 0 writes each SSE event whole).
    pub fn write_bytes(mut self, n: usize) -> Self {
        self.write_bytes = n;
        self
    }

    /// Waits `ms` milliseconds after reading the request, before sending
    /// the response headers.
    pub fn stall_before(mut self, ms: u64) -> Self {
        self.stall_before_ms = ms;
        self
    }

    /// Spaces the SSE events `ms` milliseconds apart (start to start), so a
    /// turn streams at a steady rate: with one token per event
    /// ([`Scripted::chunk_chars`]), `pace_ms(5)` is 200 tokens/s. Default 0
    /// sends events back to back; values above [`MAX_PACE_MS`] are clamped.
    /// A late event is not made up for by sending the next ones early.
    pub fn pace_ms(mut self, ms: u64) -> Self {
        self.pace_ms = ms.min(MAX_PACE_MS);
        self
    }

    /// Waits `ms` milliseconds after the first `content_events` content
    /// delta events (text, thinking or tool-call pieces), then goes on.
    pub fn stall_after(mut self, content_events: usize, ms: u64) -> Self {
        self.stall_after = Some((content_events, ms));
        self
    }

    /// Closes the connection cleanly after the first `content_events`
    /// content delta events, without the terminal signal.
    pub fn drop_after(mut self, content_events: usize) -> Self {
        self.drop_after = Some(content_events);
        self
    }

    /// Sends everything except the terminal signal (`[DONE]` /
    /// `message_stop`), then closes the connection.
    pub fn omit_terminal(mut self) -> Self {
        self.omit_terminal = true;
        self
    }

    /// Answers with one plain JSON body (`application/json`), as a server
    /// that ignores `stream: true` does, instead of an event stream.
    pub fn non_streaming(mut self) -> Self {
        self.whole = true;
        self
    }

    pub(crate) fn effective_finish(&self) -> Finish {
        match &self.finish {
            Some(f) => f.clone(),
            None if self.tool_calls.is_empty() => Finish::Stop,
            None => Finish::ToolCalls,
        }
    }
}

/// A failure the server injects instead of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub(crate) kind: FaultKind,
    pub(crate) body: Option<String>,
    pub(crate) retry_after: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FaultKind {
    Status(u16),
    Hang(u64),
    Close,
}

impl Fault {
    /// An HTTP error response with `status` and a JSON error body
    /// (`{"error": {"message": "scripted HTTP <status>", ...}}`) unless
    /// [`Fault::body`] sets one.
    pub fn status(status: u16) -> Self {
        Fault {
            kind: FaultKind::Status(status),
            body: None,
            retry_after: None,
        }
    }

    /// Reads the request, waits `ms` milliseconds without answering, then
    /// closes the connection.
    pub fn hang(ms: u64) -> Self {
        Fault {
            kind: FaultKind::Hang(ms),
            body: None,
            retry_after: None,
        }
    }

    /// Reads the request and closes the connection without any response.
    pub fn close() -> Self {
        Fault {
            kind: FaultKind::Close,
            body: None,
            retry_after: None,
        }
    }

    /// Sets the response body verbatim.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Adds `Retry-After: <secs>`.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs.to_string());
        self
    }

    /// Adds a verbatim `Retry-After` value (e.g. an HTTP date).
    pub fn retry_after_raw(mut self, value: impl Into<String>) -> Self {
        self.retry_after = Some(value.into());
        self
    }
}

/// One entry of the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A model turn (boxed: a turn is much larger than a fault).
    Turn(Box<Scripted>),
    /// An injected failure.
    Fault(Fault),
}

impl From<Scripted> for Reply {
    fn from(turn: Scripted) -> Self {
        Reply::Turn(Box::new(turn))
    }
}

impl From<Fault> for Reply {
    fn from(fault: Fault) -> Self {
        Reply::Fault(fault)
    }
}
