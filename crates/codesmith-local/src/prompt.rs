//! Rendering a [`ChatRequest`] into the model's ChatML token sequence.
//!
//! SmolLM2's own chat template is ChatML: `<|im_start|>role\n...<|im_end|>\n`
//! per turn, ending with `<|im_start|>assistant\n`. Control tokens are
//! inserted by id, never parsed out of text. The system turn gets a compact
//! section teaching the `<tool_call>` form (see [`crate::toolcall`]); tool
//! results come back as `<tool_response>` blocks in a user turn.

use std::collections::VecDeque;

use codesmith_protocol::{ContentBlock, Message, Role, ToolSpec};
use codesmith_providers::ChatRequest;
use serde_json::Value;

use crate::error::LocalError;
use crate::tokenizer::LocalTokenizer;
use crate::toolcall::{CLOSE_TAG, OPEN_TAG};

/// The system line SmolLM2's template uses when a conversation has none.
const DEFAULT_SYSTEM: &str = "You are a helpful AI assistant named SmolLM, trained by Hugging Face";
/// Longest one-line tool description in the catalogue, in characters.
const SUMMARY_CHARS: usize = 90;
/// Bytes the task reminder after tool results adds, on average, for estimates.
const TASK_REMINDER_BYTES: usize = 80;
/// How many generated assistant turns are remembered token-for-token.
const REMEMBERED_TURNS: usize = 8;

/// The system prompt as the local model sees it: the request's system text
/// plus, when there are tools, a section teaching the `<tool_call>` form with
/// one example and a one-line entry per tool (`name: summary (args, opt?)`).
/// Byte-stable for a given input.
pub fn render_system(system: &str, tools: &[ToolSpec]) -> String {
    let mut out = if system.trim().is_empty() {
        DEFAULT_SYSTEM.to_string()
    } else {
        system.trim_end().to_string()
    };
    if tools.is_empty() {
        return out;
    }
    out.push_str(
        "\n\n# Tools\nYou act by calling tools. To call a tool, reply with only a tool call, like this:\n",
    );
    out.push_str(OPEN_TAG);
    out.push_str(&example_call(tools));
    out.push_str(CLOSE_TAG);
    out.push_str(
        "\nThe result comes back in <tool_response></tool_response>. \
         When the task is done, reply with plain text.\n\
         Tools (name: use; arguments, ? = optional):",
    );
    for tool in tools {
        out.push_str("\n- ");
        out.push_str(&tool.name);
        out.push_str(": ");
        out.push_str(&summary(&tool.description));
        out.push_str(" (");
        out.push_str(&argument_names(&tool.input_schema).join(", "));
        out.push(')');
    }
    out
}

/// The body of the example block: `list_dir` or `read_file` when offered,
/// else the first tool with its required arguments set to `"..."`.
fn example_call(tools: &[ToolSpec]) -> String {
    let find = |name: &str| tools.iter().any(|t| t.name == name);
    if find("list_dir") {
        return r#"{"name": "list_dir", "arguments": {"path": ".", "depth": 2}}"#.to_string();
    }
    if find("read_file") {
        return r#"{"name": "read_file", "arguments": {"path": "README.md"}}"#.to_string();
    }
    let Some(tool) = tools.first() else {
        return String::new();
    };
    let mut args = serde_json::Map::new();
    for name in required(&tool.input_schema) {
        args.insert(name, Value::String("...".to_string()));
    }
    serde_json::json!({"name": tool.name, "arguments": args}).to_string()
}

/// First line of a description, cut at its first sentence end and to
/// [`SUMMARY_CHARS`] characters.
fn summary(description: &str) -> String {
    let line = description.trim().lines().next().unwrap_or("");
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    if sentence.chars().count() <= SUMMARY_CHARS {
        return sentence.to_string();
    }
    let mut cut: String = sentence.chars().take(SUMMARY_CHARS - 3).collect();
    cut.push_str("...");
    cut
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Argument names of a JSON-Schema object, required ones first (in
/// `required` order), optional ones after with a `?` suffix.
fn argument_names(schema: &Value) -> Vec<String> {
    let required = required(schema);
    let mut names = required.clone();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for name in props.keys() {
            if !required.contains(name) {
                names.push(format!("{name}?"));
            }
        }
    }
    names
}

/// About how many tokens `request` becomes once rendered: the bytes of the rendered
/// system turn (with its one-line tool list) and of each message's rendered text, at
/// [`codesmith_protocol::BYTES_PER_TOKEN`] bytes per token, plus a few tokens of
/// ChatML framing per turn. Needs no tokenizer, so it is available before the model
/// is loaded.
pub fn estimate_tokens(request: &ChatRequest) -> u64 {
    const FRAMING_PER_TURN: u64 = 5;
    let system = render_system(&request.system, &request.tools).len();
    let messages: usize = request
        .messages
        .iter()
        .map(|m| match m.role {
            Role::Assistant => render_assistant(m).len(),
            _ if has_tool_results(m) => render_user(m, None).len() + TASK_REMINDER_BYTES,
            _ => render_user(m, None).len(),
        })
        .sum();
    let turns = request.messages.len() as u64 + 2;
    codesmith_protocol::approx_tokens(system + messages) + FRAMING_PER_TURN * turns
}

/// The text of an assistant turn: its text blocks, then each tool call as a
/// `<tool_call>` block (thinking is not shown to the model).
pub fn render_assistant(message: &Message) -> String {
    let mut out = String::new();
    for block in &message.content {
        if let ContentBlock::Text { text } = block {
            out.push_str(text);
        }
    }
    for call in message.tool_calls() {
        let name = serde_json::to_string(&call.name).unwrap_or_else(|_| "\"\"".to_string());
        let args = call.arguments.trim();
        let args = if args.is_empty() { "{}" } else { args };
        out.push_str(OPEN_TAG);
        out.push_str(&format!("{{\"name\": {name}, \"arguments\": {args}}}"));
        out.push_str(CLOSE_TAG);
    }
    out
}

/// Why the embedded model is sent a text in place of each image.
const NO_IMAGES: &str = "the local model does not read images";

/// The text of a user turn: tool results as `<tool_response>` blocks (an image they
/// carry as a line saying it was omitted) followed by a reminder of the task they serve
/// (`task`, the person's latest text before them; a small model loses track of it behind
/// a long result), then any text and attached images (the same omission line).
fn render_user(message: &Message, task: Option<&str>) -> String {
    let mut parts = Vec::new();
    for block in &message.content {
        if let ContentBlock::ToolResult(result) = block {
            let mut body = result.content.clone();
            for image in &result.images {
                body.push('\n');
                body.push_str(&image.omitted_text(NO_IMAGES));
            }
            parts.push(format!("<tool_response>\n{body}\n</tool_response>"));
        }
    }
    if let Some(task) = task.filter(|_| !parts.is_empty()) {
        parts.push(format!("Use the result above to answer: {}", task.trim()));
    }
    for block in &message.content {
        match block {
            ContentBlock::Text { text } => parts.push(text.clone()),
            ContentBlock::Image(image) => parts.push(image.omitted_text(NO_IMAGES)),
            _ => {}
        }
    }
    parts.join("\n")
}

/// True when `message` carries tool results.
pub(crate) fn has_tool_results(message: &Message) -> bool {
    message
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolResult(_)))
}

/// Token ids of assistant turns this provider generated, keyed by their
/// rendered text, so that re-rendering history reproduces exactly the tokens
/// already in the KV cache (re-tokenizing generated text can differ).
#[derive(Debug, Default)]
pub struct Remembered {
    turns: VecDeque<(String, Vec<u32>)>,
}

impl Remembered {
    /// Records that the assistant turn rendering to `text` was generated as `ids`.
    pub fn insert(&mut self, text: String, ids: Vec<u32>) {
        self.turns.retain(|(t, _)| *t != text);
        if self.turns.len() == REMEMBERED_TURNS {
            self.turns.pop_front();
        }
        self.turns.push_back((text, ids));
    }

    fn get(&self, text: &str) -> Option<&[u32]> {
        self.turns
            .iter()
            .find(|(t, _)| t == text)
            .map(|(_, ids)| ids.as_slice())
    }
}

/// Renders the whole request into prompt token ids, ending with the
/// assistant header so the model answers next.
///
/// # Errors
/// [`LocalError::Tokenizer`] when the tokenizer lacks the ChatML control
/// tokens `<|im_start|>` / `<|im_end|>`.
pub fn render_prompt(
    tokenizer: &LocalTokenizer,
    request: &ChatRequest,
    remembered: &Remembered,
) -> Result<Vec<u32>, LocalError> {
    let control = |name: &str| {
        tokenizer.token_id(name).ok_or_else(|| {
            LocalError::Tokenizer(format!(
                "the vocabulary has no `{name}`; it is not a ChatML model"
            ))
        })
    };
    let start = control("<|im_start|>")?;
    let end = control("<|im_end|>")?;
    let newline = tokenizer.encode("\n")?;
    let mut ids = Vec::new();
    let turn = |ids: &mut Vec<u32>, role: &str, body: Option<&[u32]>, text: &str| {
        ids.push(start);
        ids.extend(tokenizer.encode(&format!("{role}\n"))?);
        match body {
            Some(known) => ids.extend_from_slice(known),
            None => ids.extend(tokenizer.encode(text)?),
        }
        ids.push(end);
        ids.extend_from_slice(&newline);
        Ok::<(), LocalError>(())
    };
    turn(
        &mut ids,
        "system",
        None,
        &render_system(&request.system, &request.tools),
    )?;
    let mut task: Option<String> = None;
    for message in &request.messages {
        match message.role {
            Role::User => {
                let text = render_user(message, task.as_deref());
                if !has_tool_results(message) {
                    task = Some(text.clone());
                }
                turn(&mut ids, "user", None, &text)?;
            }
            Role::Assistant => {
                let text = render_assistant(message);
                turn(&mut ids, "assistant", remembered.get(&text), &text)?;
            }
        }
    }
    ids.push(start);
    ids.extend(tokenizer.encode("assistant\n")?);
    Ok(ids)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use codesmith_protocol::ToolCall;

    fn spec(name: &str, description: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: schema,
        }
    }

    #[test]
    fn the_estimate_counts_the_compact_tool_list_not_the_full_catalogue() {
        let long = format!("Do a thing. {}", "Explained at length. ".repeat(100));
        let tools: Vec<ToolSpec> = (0..14)
            .map(|i| {
                spec(
                    &format!("tool_{i}"),
                    &long,
                    serde_json::json!({"properties": {"path": {}}}),
                )
            })
            .collect();
        let request = ChatRequest {
            model: "m".into(),
            system: "You are CodeSmith.".into(),
            messages: vec![Message::user_text("List the crates.")],
            tools: tools.clone(),
            max_tokens: None,
            temperature: None,
            stop: Vec::new(),
            prompt_cache_key: None,
        };
        let estimate = estimate_tokens(&request);
        let catalogue_json = serde_json::to_string(&tools).unwrap().len() as u64 / 4;
        // What the model reads: 14 one-line entries plus the framing, not 30 KB of JSON.
        let rendered = render_system(&request.system, &tools).len() as u64 / 4;
        assert!(
            estimate >= rendered && estimate < rendered + 40,
            "{estimate} vs {rendered}"
        );
        assert!(
            estimate * 10 < catalogue_json,
            "{estimate} vs {catalogue_json}"
        );
    }

    #[test]
    fn system_section_lists_tools_compactly() {
        let tools = vec![
            spec(
                "exec_shell",
                "Run a shell command. Long explanation follows.\nMore lines.",
                serde_json::json!({"type": "object", "properties": {"command": {}, "timeout_secs": {}}, "required": ["command"]}),
            ),
            spec(
                "read_file",
                "Read a text file",
                serde_json::json!({"properties": {"path": {}, "max_lines": {}, "start_line": {}}, "required": ["path"]}),
            ),
        ];
        let text = render_system("You are CodeSmith.", &tools);
        assert!(text.starts_with("You are CodeSmith.\n\n# Tools\nYou act by calling tools."));
        assert!(text.contains(
            r#"<tool_call>{"name": "read_file", "arguments": {"path": "README.md"}}</tool_call>"#
        ));
        assert!(text.contains("\n- exec_shell: Run a shell command. (command, timeout_secs?)"));
        assert!(text.contains("\n- read_file: Read a text file (path, max_lines?, start_line?)"));
        assert_eq!(text, render_system("You are CodeSmith.", &tools));
        assert_eq!(render_system("", &[]), DEFAULT_SYSTEM);
    }

    #[test]
    fn assistant_turn_renders_calls_after_text() {
        let message = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    text: "hidden".into(),
                },
                ContentBlock::Text {
                    text: "Looking.".into(),
                },
                ContentBlock::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "list_dir".into(),
                    arguments: String::new(),
                }),
            ],
        };
        assert_eq!(
            render_assistant(&message),
            r#"Looking.<tool_call>{"name": "list_dir", "arguments": {}}</tool_call>"#
        );
    }

    #[test]
    fn long_summaries_are_cut_on_char_boundaries() {
        let long = "é".repeat(200);
        let cut = summary(&long);
        assert_eq!(cut.chars().count(), SUMMARY_CHARS);
        assert!(cut.ends_with("..."));
    }
}
