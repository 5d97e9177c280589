//! The tokenizer built from the GGUF's own metadata reproduces the reference
//! token ids of SmolLM2's tokenizer (byte-level BPE, no prefix space,
//! individual digits).

#![allow(clippy::unwrap_used)]

use crate::common;

use codesmith_local::LocalTokenizer;

#[test]
fn tokenizer_matches_reference_ids() {
    if common::skip_real_model("tokenizer_matches_reference_ids") {
        return;
    }
    let tok = LocalTokenizer::from_gguf_file(&common::model_path()).unwrap();
    let cases: &[(&str, &[u32])] = &[
        // No prefix space: `system` (9690), never `Ġsystem` (817).
        ("system\n", &[9690, 198]),
        ("Hello, world", &[19556, 28, 905]),
        // Digits are split one by one and never merged with a space.
        ("a 123 b", &[81, 216, 33, 34, 35, 278]),
        (
            "fn main() {\n    println!(\"hi\");\n}",
            &[
                7853, 1085, 1000, 1662, 472, 1628, 34115, 17, 1470, 6004, 21646, 198, 109,
            ],
        ),
        (
            "  two  spaces\n\nend",
            &[216, 827, 216, 5600, 198, 198, 486],
        ),
        // Control-token spellings in text are ordinary characters.
        ("<|im_end|>", &[44, 108, 306, 79, 486, 108, 46]),
    ];
    for (text, expected) in cases {
        let ids = tok.encode(text).unwrap();
        assert_eq!(&ids, expected, "ids of {text:?}");
        assert_eq!(tok.decode(&ids), *text);
    }
    assert_eq!(tok.token_id("<|im_start|>"), Some(1));
    assert_eq!(tok.token_id("<|im_end|>"), Some(2));
    assert!(tok.is_control(2) && !tok.is_control(9690));
    let text = "naïve café 😀";
    assert_eq!(tok.decode(&tok.encode(text).unwrap()), text);
}

#[test]
fn chatml_prompt_uses_control_ids_only_at_turn_boundaries() {
    use codesmith_local::prompt::{Remembered, render_prompt};
    use codesmith_protocol::{ContentBlock, Message, Role, ToolCall, ToolResult};
    use codesmith_providers::ChatRequest;

    if common::skip_real_model("chatml_prompt_uses_control_ids_only_at_turn_boundaries") {
        return;
    }
    let tok = LocalTokenizer::from_gguf_file(&common::model_path()).unwrap();
    let request = ChatRequest {
        model: String::new(),
        system: "Be brief.".into(),
        messages: vec![
            Message::user_text("hi <|im_end|> there"),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "list_dir".into(),
                    arguments: "{}".into(),
                })],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    content: "a.rs".into(),
                    is_error: false,
                    images: Vec::new(),
                })],
            },
        ],
        tools: Vec::new(),
        max_tokens: None,
        temperature: None,
        stop: Vec::new(),
        prompt_cache_key: None,
    };
    let ids = render_prompt(&tok, &request, &Remembered::default()).unwrap();
    // <|im_start|>system\n ... and it ends with <|im_start|>assistant\n.
    assert_eq!(&ids[..3], &[1, 9690, 198]);
    assert_eq!(&ids[ids.len() - 4..], &[1, 520, 9531, 198]);
    // Four turns plus the open assistant header: 5 starts, 4 ends; the
    // `<|im_end|>` typed by the user stays text.
    assert_eq!(ids.iter().filter(|&&i| i == 1).count(), 5);
    assert_eq!(ids.iter().filter(|&&i| i == 2).count(), 4);
    let text = tok.decode(&ids);
    assert!(text.contains(
        "<|im_start|>assistant\n<tool_call>{\"name\": \"list_dir\", \"arguments\": {}}</tool_call><|im_end|>\n"
    ));
    // A tool result is followed by a reminder of the task it serves.
    assert!(text.contains(
        "<|im_start|>user\n<tool_response>\na.rs\n</tool_response>\nUse the result above to answer: hi <|im_end|> there<|im_end|>\n"
    ));
}
