//! Forged tool calls in assistant text: a malformed real call can be repaired, but a
//! call written as plain text outside the tool channel is stripped, never run.
//!
//! Only the provider's tool-call channel executes tools. Text that imitates a
//! call — the tag families models are trained on (`<function_calls>`, `<invoke …>`,
//! `<tool_call>`, `<|tool_call|>`, `<function=…>`, `<tool_use>`, any case, with
//! attributes), special tokens (`[TOOL_CALL]`, `[TOOL_CALLS]`, `<|python_tag|>`,
//! DeepSeek's `<｜tool▁calls▁begin｜>`), or a fenced JSON block shaped like `{"name": …, "arguments": …}` — is removed
//! from the visible answer and reported, never executed.
//!
//! One scrubber, [`StreamScrubber`], does the work both while a response
//! streams (so the user's terminal and the `--json` stream never show the
//! markup as the model's prose) and on a whole text ([`strip_fake_tool_calls`],
//! what the transcript keeps): the whole text is the stream in one piece, so
//! both see the same forgeries. It reads left to right: the earliest opener
//! wins, and its forgery runs to the first closer of its shape, or to the end
//! of the text when none comes. Text that could still become an opener is
//! held back until it can be decided (at most [`MAX_OPENER_BYTES`]).

/// The longest opener the scrubber recognises, in bytes (an `<invoke …>` tag with
/// its attributes; a fence up to the `:` after its arguments key). Text that has
/// not become an opener by this length is shown as it is, so at most this much
/// text is held back at a time.
pub const MAX_OPENER_BYTES: usize = 1024;

/// The shapes of forged calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A tool-call tag in any of the families models are trained on (Anthropic's
    /// `<function_calls>`/`<invoke …>`, Hermes/Qwen `<tool_call>`, Qwen-coder
    /// `<function=…>`, `<tool_use>`, `<|tool_call|>`, …; case-insensitive, with or
    /// without attributes), to the first of its closers.
    Tag(&'static [&'static str]),
    /// A special-token or bracketed opener (`[TOOL_CALL]`, Mistral's `[TOOL_CALLS]`,
    /// Llama's `<|python_tag|>`, DeepSeek's `<｜tool▁calls▁begin｜>`), to its closer.
    Literal(&'static [&'static str]),
    /// A fenced block opening with `{"name": "…", "arguments":` (or `tool`,
    /// `function`; `parameters`, `input`, `args`), to its closing fence.
    FencedJson,
}

impl Shape {
    /// The texts that end a forgery of this shape (lowercase; matched case-insensitively).
    fn closers(self) -> &'static [&'static str] {
        match self {
            Shape::Tag(c) | Shape::Literal(c) => c,
            Shape::FencedJson => &["```"],
        }
    }
}

/// Tag names of tool-call markup (lowercase), longest first where one starts another,
/// with the texts that close them.
const TAGS: &[(&str, &[&str])] = &[
    (
        "function_calls",
        &["</function_calls>", "<|/function_calls|>"],
    ),
    ("function_call", &["</function_call>", "<|/function_call|>"]),
    ("function", &["</function>"]),
    ("invoke", &["</invoke>"]),
    (
        "tool_calls",
        &["</tool_calls>", "<|/tool_calls|>", "<|tool_calls_end|>"],
    ),
    (
        "tool_call",
        &["</tool_call>", "<|/tool_call|>", "<|tool_call_end|>"],
    ),
    ("tool_use", &["</tool_use>", "<|/tool_use|>"]),
];

/// Openers matched literally (case-insensitively), with their closers.
const LITERALS: &[(&str, &[&str])] = &[
    ("[tool_calls]", &["[/tool_calls]"]),
    ("[tool_call]", &["[/tool_call]"]),
    ("<|python_tag|>", &["<|eom_id|>", "<|eot_id|>"]),
    ("<｜tool▁calls▁begin｜>", &["<｜tool▁calls▁end｜>"]),
    ("<｜tool▁call▁begin｜>", &["<｜tool▁call▁end｜>"]),
];

/// What the text at one position is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opening {
    /// No opener starts here.
    No,
    /// The text so far is the start of an opener; more text decides.
    Maybe,
    /// An opener of this shape and byte length starts here.
    Yes(Shape, usize),
}

/// Forged calls removed from streamed text as it arrives.
///
/// [`StreamScrubber::push`] takes each text delta and returns the part that can be
/// shown now; [`StreamScrubber::finish`] returns what was held back at the end of
/// the stream (a forgery still open then is dropped to the end). Held text is at
/// most [`MAX_OPENER_BYTES`] plus a closer's length.
#[derive(Debug, Default)]
pub struct StreamScrubber {
    /// Text not yet decided: the start of a possible opener, or (inside a forgery)
    /// the start of a possible closer.
    held: String,
    /// The forgery being removed, if any.
    inside: Option<Shape>,
    /// Forgeries found so far.
    removed: usize,
}

impl StreamScrubber {
    /// Takes the next piece of text; returns the text that can be shown now.
    pub fn push(&mut self, delta: &str) -> String {
        self.held.push_str(delta);
        let mut shown = String::new();
        loop {
            if let Some(shape) = self.inside {
                let lower = self.held.to_ascii_lowercase();
                let found = shape
                    .closers()
                    .iter()
                    .filter_map(|c| lower.find(c).map(|at| at + c.len()))
                    .min();
                if let Some(end) = found {
                    self.held.drain(..end);
                    self.inside = None;
                    continue;
                }
                let keep = split_closer(&lower, shape.closers());
                self.held.drain(..self.held.len() - keep);
                return shown;
            }
            let mut opened = false;
            for (at, c) in self.held.char_indices() {
                if !matches!(c, '<' | '[' | '`') {
                    continue;
                }
                match opening(&self.held[at..]) {
                    Opening::No => {}
                    Opening::Maybe => {
                        shown.push_str(&self.held[..at]);
                        self.held.drain(..at);
                        return shown;
                    }
                    Opening::Yes(shape, len) => {
                        shown.push_str(&self.held[..at]);
                        self.held.drain(..at + len);
                        self.inside = Some(shape);
                        self.removed += 1;
                        opened = true;
                        break;
                    }
                }
            }
            if !opened {
                shown.push_str(&self.held);
                self.held.clear();
                return shown;
            }
        }
    }

    /// Ends the stream: returns the held text that turned out to be no forgery.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.held);
        if self.inside.take().is_some() {
            String::new()
        } else {
            rest
        }
    }

    /// How many forged calls were found so far (one still open counts).
    pub fn removed(&self) -> usize {
        self.removed
    }
}

/// The length of the longest end of `text` that is a proper start of one of `closers`
/// (cut on a character boundary).
fn split_closer(text: &str, closers: &[&str]) -> usize {
    closers
        .iter()
        .filter_map(|closer| {
            (1..closer.len())
                .rev()
                .filter(|&n| closer.is_char_boundary(n))
                .find(|&n| text.ends_with(&closer[..n]))
        })
        .max()
        .unwrap_or(0)
}

/// Whether an opener starts at the beginning of `rest`.
fn opening(rest: &str) -> Opening {
    let found = match rest.as_bytes().first() {
        Some(b'<' | b'[') => LITERALS
            .iter()
            .map(|(opener, closers)| literal(rest, opener, Shape::Literal(closers)))
            .chain(TAGS.iter().map(|(name, closers)| tag(rest, name, closers)))
            .fold(Opening::No, |a, b| match (a, b) {
                (Opening::Yes(..), _) => a,
                (_, Opening::Yes(..)) | (Opening::No, _) => b,
                _ => a,
            }),
        Some(b'`') => fence_head(rest),
        _ => Opening::No,
    };
    match found {
        Opening::Yes(_, len) if len > MAX_OPENER_BYTES => Opening::No,
        Opening::Maybe if rest.len() >= MAX_OPENER_BYTES => Opening::No,
        other => other,
    }
}

/// Whether `rest` starts with `prefix`, ignoring ASCII case (`None`: `rest` is a proper
/// start of `prefix`, undecided; `Some(false)`: it is not).
fn starts_with_nocase(rest: &str, prefix: &str) -> Option<bool> {
    let (r, p) = (rest.as_bytes(), prefix.as_bytes());
    let n = r.len().min(p.len());
    if !r[..n].eq_ignore_ascii_case(&p[..n]) {
        Some(false)
    } else if r.len() < p.len() {
        None
    } else {
        Some(true)
    }
}

fn literal(rest: &str, opener: &str, shape: Shape) -> Opening {
    match starts_with_nocase(rest, opener) {
        Some(true) => Opening::Yes(shape, opener.len()),
        None => Opening::Maybe,
        Some(false) => Opening::No,
    }
}

/// `<NAME` or `<|NAME` ending a word, then `>`, `|>`, or white space or `=` and
/// anything but `>` up to a `>`.
fn tag(rest: &str, name: &str, closers: &'static [&'static str]) -> Opening {
    let shape = Shape::Tag(closers);
    let head = if rest.as_bytes().get(1) == Some(&b'|') {
        2
    } else {
        1
    };
    if rest.len() < head + 1 && rest.len() <= 1 {
        return Opening::Maybe;
    }
    if rest.as_bytes()[0] != b'<' {
        return Opening::No;
    }
    match starts_with_nocase(&rest[head..], name) {
        None => return Opening::Maybe,
        Some(false) => return Opening::No,
        Some(true) => {}
    }
    let at = head + name.len();
    let after = &rest[at..];
    match after.chars().next() {
        None => Opening::Maybe,
        Some('>') => Opening::Yes(shape, at + 1),
        Some('|') => match after.as_bytes().get(1) {
            None => Opening::Maybe,
            Some(b'>') => Opening::Yes(shape, at + 2),
            Some(_) => Opening::No,
        },
        Some(c) if c.is_whitespace() || c == '=' || c == '/' => match after.find('>') {
            Some(end) => Opening::Yes(shape, at + end + 1),
            None => Opening::Maybe,
        },
        Some(_) => Opening::No,
    }
}

/// What a step of [`FENCE_HEAD`] skips before its token.
#[derive(Clone, Copy)]
enum Skip {
    Nothing,
    /// `[a-zA-Z]*`, a fence's language.
    Letters,
    /// White space.
    Space,
    /// Anything but `"`, a string's content.
    StringContent,
}

impl Skip {
    fn skips(self, c: char) -> bool {
        match self {
            Skip::Nothing => false,
            Skip::Letters => c.is_ascii_alphabetic(),
            Skip::Space => c.is_whitespace(),
            Skip::StringContent => c != '"',
        }
    }
}

/// ```` ```lang {"name": "…", "arguments": ```` with any white space between the
/// tokens, as steps: what to skip, then one of the tokens (none: only the skip).
const FENCE_HEAD: &[(Skip, &[&str])] = &[
    (Skip::Nothing, &["```"]),
    (Skip::Letters, &[]),
    (Skip::Space, &["{"]),
    (Skip::Space, &["\"name\"", "\"tool\"", "\"function\""]),
    (Skip::Space, &[":"]),
    (Skip::Space, &["\""]),
    (Skip::StringContent, &["\""]),
    (Skip::Space, &[","]),
    (
        Skip::Space,
        &["\"arguments\"", "\"parameters\"", "\"input\"", "\"args\""],
    ),
    (Skip::Space, &[":"]),
];

/// The start of a fenced block shaped like a tool call ([`FENCE_HEAD`]).
fn fence_head(rest: &str) -> Opening {
    let mut at = 0;
    for (skip, words) in FENCE_HEAD {
        at = rest[at..]
            .find(|c: char| !skip.skips(c))
            .map_or(rest.len(), |n| at + n);
        if words.is_empty() {
            continue;
        }
        let left = &rest[at..];
        if let Some(word) = words.iter().find(|w| left.starts_with(**w)) {
            at += word.len();
        } else if words.iter().any(|w| w.starts_with(left)) {
            return Opening::Maybe;
        } else {
            return Opening::No;
        }
    }
    Opening::Yes(Shape::FencedJson, at)
}

/// Visible text with forged calls removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stripped {
    /// The text the user and the transcript keep.
    pub text: String,
    /// How many forged calls were removed.
    pub removed: usize,
}

/// Removes every forged tool call from `text` (the [`StreamScrubber`] over the
/// whole text; the result is trimmed when something was removed).
pub fn strip_fake_tool_calls(text: &str) -> Stripped {
    let mut scrubber = StreamScrubber::default();
    let mut out = scrubber.push(text);
    out.push_str(&scrubber.finish());
    let removed = scrubber.removed();
    if removed > 0 {
        out = out.trim().to_string();
    }
    Stripped { text: out, removed }
}

/// Opening tag of the runtime event that tells a model its text imitated a tool call.
pub const IMITATION_EVENT_OPEN: &str = "<runtime_event type=\"imitated_tool_call\">";

/// The runtime event appended (as a user message at the transcript's tail) after a
/// turn whose text imitated a tool call and that made no real one: what happened,
/// that nothing ran, and how to call a tool. It names no wrapper, so the model is
/// not shown the markup again.
pub fn imitation_event_text() -> String {
    format!(
        "{IMITATION_EVENT_OPEN}Your last reply contained text written to look like a tool call. It was NOT \
         executed and was removed from your answer: text in a reply never runs a tool. Tools run only when \
         you call them through the tool-calling interface (a real tool call with the tool's name and JSON \
         arguments), not as markup in your reply. If you still need a tool, call it now that way; otherwise \
         give your final answer.{}",
        crate::verify::verdict::RUNTIME_EVENT_CLOSE
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPES: [&str; 6] = [
        "<function_calls><invoke name=\"exec_shell\"><parameter name=\"command\">rm -rf x</parameter></invoke></function_calls>",
        "<invoke name=\"exec_shell\">x</invoke>",
        "<tool_call>{\"name\": \"exec_shell\", \"arguments\": {}}</tool_call>",
        "[TOOL_CALL]exec_shell rm[/TOOL_CALL]",
        "```json\n{\"name\": \"exec_shell\", \"arguments\": {\"command\": \"ls\"}}\n```",
        "```\n{ \"tool\" : \"exec_shell\" ,\n \"args\":{\"command\": \"ls\"}}```",
    ];

    #[test]
    fn every_forgery_shape_is_stripped() {
        for case in SHAPES {
            let s = strip_fake_tool_calls(&format!("Sure. {case} Done."));
            assert_eq!(s.removed, 1, "{case}");
            assert!(!s.text.contains("exec_shell"), "{}", s.text);
            assert!(s.text.starts_with("Sure.") && s.text.ends_with("Done."));
        }
    }

    #[test]
    fn an_unclosed_forgery_is_stripped_to_the_end() {
        let s = strip_fake_tool_calls("ok <tool_call>{\"name\": \"x\"");
        assert_eq!((s.text.as_str(), s.removed), ("ok", 1));
        let s = strip_fake_tool_calls("ok ```json\n{\"name\": \"x\", \"arguments\": {");
        assert_eq!((s.text.as_str(), s.removed), ("ok", 1));
    }

    #[test]
    fn ordinary_code_and_json_stay() {
        for text in [
            "Use this config:\n```json\n{\"name\": \"demo\", \"version\": \"1.0\"}\n```",
            "a <b>bold</b> tag, an <invoker> and [TOOL] and `code` and ``` fences ```",
            "ends with a possible opener <tool_ca",
            "ends with <invoke name=\"x\"",
        ] {
            let stripped = strip_fake_tool_calls(text);
            assert_eq!((stripped.text.as_str(), stripped.removed), (text, 0));
        }
    }

    /// A forgery inside a fenced block is part of the block: the earliest opener wins,
    /// so no half of either is left behind.
    #[test]
    fn the_earliest_opener_wins() {
        let text = "a ```json\n{\"name\": \"x\", \"arguments\": {\"s\": \"<tool_call>\"}}\n``` b";
        assert_eq!(strip_fake_tool_calls(text).text, "a  b");
    }

    /// Every split of the text into two deltas, and one byte per delta, shows the
    /// same text as the whole, and never any part of the forgery.
    #[test]
    fn a_forgery_split_anywhere_never_shows() {
        for case in SHAPES {
            let text = format!("Sure. {case} Done. <b>x</b>");
            let whole = {
                let mut s = StreamScrubber::default();
                let mut out = s.push(&text);
                out.push_str(&s.finish());
                out
            };
            assert_eq!(whole, "Sure.  Done. <b>x</b>", "{case}");
            let splits = (0..=text.len()).filter(|&i| text.is_char_boundary(i));
            for at in splits {
                let mut s = StreamScrubber::default();
                let (a, b) = (s.push(&text[..at]), s.push(&text[at..]));
                let tail = s.finish();
                for piece in [&a, &b, &tail] {
                    assert!(!piece.contains("exec_shell"), "{case} at {at}: {piece:?}");
                }
                assert_eq!(format!("{a}{b}{tail}"), whole, "{case} at {at}");
                assert_eq!(s.removed(), 1);
            }
            let mut s = StreamScrubber::default();
            let mut out = String::new();
            for c in text.chars() {
                let piece = s.push(&c.to_string());
                assert!(!piece.contains('{'), "{case}: {piece:?}");
                out.push_str(&piece);
            }
            out.push_str(&s.finish());
            assert_eq!(out, whole, "{case}");
        }
    }

    #[test]
    fn held_text_is_bounded() {
        let mut s = StreamScrubber::default();
        let mut shown = s.push("<invoke ");
        assert_eq!(shown, "");
        for _ in 0..MAX_OPENER_BYTES {
            shown.push_str(&s.push("a"));
        }
        assert!(shown.starts_with("<invoke a"), "{shown}");
        assert!(s.held.len() < MAX_OPENER_BYTES);
        let mut inside = StreamScrubber::default();
        assert_eq!(inside.push("<tool_call>"), "");
        for _ in 0..10_000 {
            assert_eq!(inside.push("xx"), "");
        }
        assert!(inside.held.len() < "</tool_call>".len());
        assert_eq!(inside.push("</tool_call>after"), "after");
    }

    /// Tool-call markup of other model families (Hermes/Qwen, Qwen-coder, Mistral,
    /// Llama, DeepSeek, `<tool_use>`, any case, with attributes) is a forgery too, and
    /// never shows at any split of the stream.
    #[test]
    fn other_families_of_markup_are_stripped_at_every_split() {
        for case in [
            "<|tool_call|>{\"name\": \"exec_shell\", \"arguments\": {}}<|/tool_call|>",
            "<function=exec_shell><parameter=command>rm -rf /</parameter></function>",
            "<tool_use>{\"name\": \"exec_shell\", \"input\": {}}</tool_use>",
            "<|python_tag|>exec_shell.call(command=\"rm\")<|eom_id|>",
            "<｜tool▁calls▁begin｜>function<｜tool▁sep｜>exec_shell<｜tool▁calls▁end｜>",
            "<TOOL_CALL>{\"name\": \"exec_shell\"}</Tool_Call>",
            "<tool_call name=\"exec_shell\">rm -rf /</tool_call>",
            "<tool_calls>[{\"name\": \"exec_shell\"}]</tool_calls>",
            "<function_call>{\"name\": \"exec_shell\"}</function_call>",
            "[tool_calls][{\"name\": \"exec_shell\"}][/TOOL_CALLS]",
        ] {
            let text = format!("Sure. {case} Done.");
            let whole = strip_fake_tool_calls(&text);
            assert_eq!(
                (whole.text.as_str(), whole.removed),
                ("Sure.  Done.", 1),
                "{case}"
            );
            for at in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
                let mut s = StreamScrubber::default();
                let (a, b) = (s.push(&text[..at]), s.push(&text[at..]));
                let all = format!("{a}{b}{}", s.finish());
                assert_eq!(all, "Sure.  Done.", "{case} at {at}");
            }
        }
        // Mistral's opener has no closer: the rest of the text goes.
        let s = strip_fake_tool_calls("ok [TOOL_CALLS][{\"name\": \"exec_shell\"}]");
        assert_eq!((s.text.as_str(), s.removed), ("ok", 1));
        for text in [
            "a <functional> b",
            "<tool_caller> x",
            "see <function",
            "<|im_end|>",
        ] {
            assert_eq!(strip_fake_tool_calls(text).removed, 0, "{text}");
        }
    }
}
