//! The tokenizer built from the GGUF's own metadata reproduces the reference
//! token ids of SmolLM2's tokenizer (byte-level BPE, no prefix space,
//! individual digits).

#![allow(clippy::unwrap_used)]

mod common;

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
