//! The local model's tool-call channel: `<tool_call>{"name": ..., "arguments":
//! {...}}</tool_call>` blocks inside generated text.
//!
//! A small model has no structured tool-calling channel, so the local provider
//! teaches this form in its system prompt and lifts the blocks out of the text
//! here. The parser is streaming-safe: text that might be the start
//! of an opening tag is held back until it is decided. Nothing here panics on
//! any input; a malformed block still yields a call with its raw argument text,
//! for the engine's argument repair to fix or refuse.

use serde_json::Value;

/// Opening tag of a tool-call block.
pub const OPEN_TAG: &str = "<tool_call>";
/// Closing tag of a tool-call block.
pub const CLOSE_TAG: &str = "</tool_call>";

/// One piece of parsed model output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Ordinary text.
    Text(String),
    /// A tool-call block, already split into name and raw argument text.
    Call(ParsedCall),
}

/// A tool call lifted out of a `<tool_call>` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCall {
    /// The tool name; empty when the block named none.
    pub name: String,
    /// The raw JSON text of the arguments (may be malformed).
    pub arguments: String,
}

/// Splits streamed text into [`Segment`]s.
#[derive(Debug, Default)]
pub struct ToolCallParser {
    buf: String,
    inside: bool,
}

impl ToolCallParser {
    /// A parser outside any block.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds more text; returns the segments that are now decided.
    pub fn push(&mut self, text: &str) -> Vec<Segment> {
        self.buf.push_str(text);
        let mut out = Vec::new();
        loop {
            if self.inside {
                let Some(end) = self.buf.find(CLOSE_TAG) else {
                    return out;
                };
                let body: String = self.buf[..end].to_string();
                self.buf.drain(..end + CLOSE_TAG.len());
                self.inside = false;
                out.extend(parse_block(&body).into_iter().map(Segment::Call));
            } else if let Some(start) = self.buf.find(OPEN_TAG) {
                if start > 0 {
                    out.push(Segment::Text(self.buf[..start].to_string()));
                }
                self.buf.drain(..start + OPEN_TAG.len());
                self.inside = true;
            } else {
                let keep = partial_tag_suffix(&self.buf, OPEN_TAG);
                let emit = self.buf.len() - keep;
                if emit > 0 {
                    out.push(Segment::Text(self.buf[..emit].to_string()));
                    self.buf.drain(..emit);
                }
                return out;
            }
        }
    }

    /// Ends the stream: held-back text is released, and an unterminated block
    /// becomes a call with whatever it contained.
    pub fn finish(&mut self) -> Vec<Segment> {
        let rest = std::mem::take(&mut self.buf);
        if self.inside {
            self.inside = false;
            let body = rest.trim_end();
            let body = body.strip_suffix("</tool_call").unwrap_or(body);
            parse_block(body).into_iter().map(Segment::Call).collect()
        } else if rest.is_empty() {
            Vec::new()
        } else {
            vec![Segment::Text(rest)]
        }
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of
/// `tag` (always at a char boundary, since tags are ASCII).
pub(crate) fn partial_tag_suffix(text: &str, tag: &str) -> usize {
    let max = tag.len().saturating_sub(1).min(text.len());
    (1..=max)
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

/// The calls in one block body: a single call object, or a JSON array of
/// them (the list form some models were trained on; `[]` holds no call).
pub fn parse_block(body: &str) -> Vec<ParsedCall> {
    let trimmed = body.trim();
    if trimmed.starts_with('[')
        && let Ok(Value::Array(items)) = codesmith_protocol::parse_arguments(trimmed)
        && items.iter().all(Value::is_object)
    {
        return items
            .iter()
            .map(|item| parse_call_body(&item.to_string()))
            .collect();
    }
    vec![parse_call_body(body)]
}

/// Splits a block body into name and raw arguments.
///
/// Accepts `{"name": .., "arguments": {..}}` (also `parameters`/`args`, and
/// arguments given as a JSON string), a body with trailing junk after the
/// object, and, failing all that, pulls the name and the raw text after
/// `"arguments":` out of the broken JSON.
pub fn parse_call_body(body: &str) -> ParsedCall {
    let body = body.trim();
    // The shared strict reader: a body that names a key twice is not read
    // last-wins but salvaged, which hands the raw arguments to the engine,
    // whose reader refuses them as ambiguous.
    let object = codesmith_protocol::parse_arguments(body).ok().or_else(|| {
        first_object(body).and_then(|obj| codesmith_protocol::parse_arguments(obj).ok())
    });
    if let Some(Value::Object(map)) = object {
        let name = map
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let arguments = ["arguments", "parameters", "args"]
            .iter()
            .find_map(|key| map.get(*key))
            .map(|value| match value {
                Value::String(raw) => raw.clone(),
                other => other.to_string(),
            })
            .unwrap_or_else(|| "{}".to_string());
        return ParsedCall { name, arguments };
    }
    salvage(body)
}

/// Best-effort split of a body that is not valid JSON.
fn salvage(body: &str) -> ParsedCall {
    let name = string_field(body, "name").unwrap_or_default();
    let arguments = ["\"arguments\"", "\"parameters\""]
        .iter()
        .find_map(|key| body.find(key).map(|at| &body[at + key.len()..]))
        .map(|rest| {
            let rest = rest.trim_start();
            let rest = rest.strip_prefix(':').unwrap_or(rest).trim();
            // Drop the closing brace of the outer object when it is there.
            match first_object(rest) {
                Some(obj) => obj.to_string(),
                None => rest.strip_suffix('}').unwrap_or(rest).trim().to_string(),
            }
        })
        .unwrap_or_else(|| body.to_string());
    ParsedCall { name, arguments }
}

/// The value of `"key": "..."` in broken JSON text, without unescaping.
fn string_field(text: &str, key: &str) -> Option<String> {
    let pattern = format!("\"{key}\"");
    let rest = &text[text.find(&pattern)? + pattern.len()..];
    let rest = rest
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(rest[..end].to_string())
}

/// The first balanced `{...}` in `text`, respecting JSON strings.
fn first_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, ch) in text[start..].char_indices() {
        if in_string {
            match ch {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match ch {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(&text[start..start + i + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> Vec<Segment> {
        let mut parser = ToolCallParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(parser.push(chunk));
        }
        out.extend(parser.finish());
        merge_text(out)
    }

    fn merge_text(segments: Vec<Segment>) -> Vec<Segment> {
        let mut out: Vec<Segment> = Vec::new();
        for seg in segments {
            match (out.last_mut(), seg) {
                (Some(Segment::Text(prev)), Segment::Text(next)) => prev.push_str(&next),
                (_, seg) => out.push(seg),
            }
        }
        out
    }

    fn call(name: &str, arguments: &str) -> Segment {
        Segment::Call(ParsedCall {
            name: name.into(),
            arguments: arguments.into(),
        })
    }

    const SAMPLE: &str = "Let me look. <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}</tool_call> done <tool_c";

    #[test]
    fn whole_input_parses() {
        assert_eq!(
            run(&[SAMPLE]),
            vec![
                Segment::Text("Let me look. ".into()),
                call("read_file", r#"{"path":"a.rs"}"#),
                Segment::Text(" done <tool_c".into()),
            ]
        );
    }

    #[test]
    fn every_split_point_gives_the_same_result() {
        let expected = run(&[SAMPLE]);
        for (i, _) in SAMPLE.char_indices() {
            assert_eq!(run(&[&SAMPLE[..i], &SAMPLE[i..]]), expected, "split at {i}");
        }
        // One character at a time.
        let chars: Vec<String> = SAMPLE.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(run(&refs), expected);
    }

    #[test]
    fn text_that_might_open_a_tag_is_held_back() {
        let mut parser = ToolCallParser::new();
        assert_eq!(parser.push("see <tool"), vec![Segment::Text("see ".into())]);
        assert_eq!(
            parser.push("box> ok"),
            vec![Segment::Text("<toolbox> ok".into())]
        );
    }

    #[test]
    fn two_calls_in_one_response() {
        let text = "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"b\",\"arguments\":{\"x\":1}}</tool_call>";
        assert_eq!(
            run(&[text]),
            vec![
                call("a", "{}"),
                Segment::Text("\n".into()),
                call("b", r#"{"x":1}"#)
            ]
        );
    }

    #[test]
    fn unterminated_block_still_becomes_a_call() {
        assert_eq!(
            run(&["<tool_call>{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}"]),
            vec![call("list_dir", r#"{"path":"."}"#)]
        );
        assert_eq!(
            run(&["<tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call"]),
            vec![call("x", "{}")]
        );
    }

    #[test]
    fn malformed_arguments_are_passed_raw() {
        let got = run(&[
            "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"a\", \"content\": \"x}</tool_call>",
        ]);
        assert_eq!(
            got,
            vec![call("write_file", "{\"path\": \"a\", \"content\": \"x")]
        );
        let got = run(&["<tool_call>not json at all</tool_call>"]);
        assert_eq!(got, vec![call("", "not json at all")]);
    }

    #[test]
    fn arguments_naming_a_key_twice_reach_the_engine_raw() {
        let got = run(&[
            "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"a\", \"path\": \"b\"}}</tool_call>",
        ]);
        assert_eq!(
            got,
            vec![call("write_file", "{\"path\": \"a\", \"path\": \"b\"}")]
        );
    }

    #[test]
    fn string_arguments_and_trailing_junk_are_accepted() {
        let got = run(&[
            "<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"p\\\": 1}\"} trailing</tool_call>",
        ]);
        assert_eq!(got, vec![call("a", "{\"p\": 1}")]);
        let got = run(&["<tool_call>{\"name\": \"a\"}</tool_call>"]);
        assert_eq!(got, vec![call("a", "{}")]);
    }

    #[test]
    fn a_json_list_of_calls_yields_each_call() {
        let got = run(&[
            "<tool_call>[\n{\"name\": \"a\", \"arguments\": {}},\n{\"name\": \"b\", \"arguments\": {\"x\": 1}}\n]</tool_call>",
        ]);
        assert_eq!(got, vec![call("a", "{}"), call("b", r#"{"x":1}"#)]);
        assert_eq!(
            run(&["<tool_call>[]</tool_call>ok"]),
            vec![Segment::Text("ok".into())]
        );
    }

    #[test]
    fn multibyte_text_is_never_split_badly() {
        let text = "é<tool_call>{\"name\":\"ü\"}</tool_call>ß<";
        let expected = run(&[text]);
        for (i, _) in text.char_indices() {
            assert_eq!(run(&[&text[..i], &text[i..]]), expected);
        }
    }
}
