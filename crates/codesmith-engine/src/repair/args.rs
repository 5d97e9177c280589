//! The argument repair ladder.
//!
//! A model that finished its turn but fumbled the JSON of a call's arguments
//! gets a handrail of rungs, each applied on top of the last: strict parse →
//! escape raw control characters inside strings → drop trailing commas →
//! drop surplus closers. Each rung mends a known, harmless slip of complete
//! text (models write literal newlines into file content and trailing commas
//! as in JavaScript); none adds anything the model did not write.
//!
//! Text that ends before its JSON does (an unclosed string, object or array)
//! is never completed: that is what a call cut off mid-way looks like, and
//! running it would run something the model never finished writing (half a
//! file, half a command). It is reported as
//! [`ArgumentsErrorKind::Unfinished`]. An object naming a key twice is
//! ambiguous and never repaired either. Every rung reads through the one
//! strict reader, [`codesmith_protocol::parse_arguments`]. Inputs over
//! [`MAX_REPAIR_BYTES`] are parsed strictly only, and a turn cut at the token
//! cap never climbs the ladder (see [`RepairPolicy::StrictOnly`]).

use codesmith_protocol::{ArgumentsError, ArgumentsErrorKind, parse_arguments};
use serde_json::Value;

/// Inputs longer than this (1 MiB) are parsed strictly and never repaired.
pub const MAX_REPAIR_BYTES: usize = 1 << 20;

/// Whether the ladder may run for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairPolicy {
    /// The turn finished normally: run the whole ladder.
    RepairAllowed,
    /// The turn was truncated: strict parse only.
    StrictOnly,
}

/// A rung of the ladder, above the strict parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// Raw control characters inside strings were escaped.
    ControlChars,
    /// Trailing commas before `}` or `]` were removed.
    TrailingCommas,
    /// Closers without an opener were removed.
    SurplusClosers,
}

impl Rung {
    /// What the model is told when this rung changed its arguments: the slip, that
    /// it was repaired, and what to send instead (one clause, no final period).
    pub fn disclosure(self) -> &'static str {
        match self {
            Rung::ControlChars => {
                "arguments had a raw newline or other control character inside a string; repaired \
                 — escape it in JSON (\\n, \\t)"
            }
            Rung::TrailingCommas => "arguments had a trailing comma; repaired — send valid JSON",
            Rung::SurplusClosers => {
                "arguments had a closing bracket or brace that closed nothing; repaired — send valid JSON"
            }
        }
    }
}

/// Parses `raw` as JSON, climbing the ladder when `policy` allows. Returns the
/// value and the rungs that changed the text, in ladder order (none when the
/// text was valid JSON as sent).
///
/// Empty or whitespace-only input is `{}` with no rung, since models send it for
/// tools without arguments.
///
/// # Errors
/// When every allowed rung failed: the strict reader's error for the text as
/// sent (what the model is told, with its position). Its kind is
/// [`ArgumentsErrorKind::DuplicateKey`] when an object names a key twice,
/// [`ArgumentsErrorKind::Unfinished`] when the text, as sent or after any
/// rung, ends before its JSON does, else [`ArgumentsErrorKind::Invalid`].
pub fn repair_arguments(
    raw: &str,
    policy: RepairPolicy,
) -> Result<(Value, Vec<Rung>), ArgumentsError> {
    if raw.trim().is_empty() {
        return Ok((Value::Object(Default::default()), Vec::new()));
    }
    let mut fault = match parse_arguments(raw) {
        Ok(v) => return Ok((v, Vec::new())),
        Err(e) => e,
    };
    if fault.kind == ArgumentsErrorKind::DuplicateKey
        || policy == RepairPolicy::StrictOnly
        || raw.len() > MAX_REPAIR_BYTES
    {
        return Err(fault);
    }
    let escaped = escape_control_chars(raw);
    let commas = escaped.as_deref().map(drop_trailing_commas);
    let closers = commas.as_deref().and_then(drop_surplus_closers);
    let rungs = [
        (escaped, Rung::ControlChars),
        (commas, Rung::TrailingCommas),
        (closers, Rung::SurplusClosers),
    ];
    let mut changed = Vec::new();
    let mut before = raw;
    for (text, rung) in &rungs {
        let Some(text) = text else { break };
        if text.as_str() != before {
            changed.push(*rung);
        }
        before = text.as_str();
        match parse_arguments(text) {
            Ok(v) => return Ok((v, changed)),
            Err(e) if e.kind == ArgumentsErrorKind::DuplicateKey => {
                fault.kind = e.kind;
                return Err(fault);
            }
            Err(e) if e.kind == ArgumentsErrorKind::Unfinished => fault.kind = e.kind,
            Err(_) => {}
        }
    }
    Err(fault)
}

/// Walks `text`, calling `f(index, char, in_string)` for every char, where
/// `in_string` is true for chars inside a JSON string (quotes excluded).
fn scan(text: &str, mut f: impl FnMut(usize, char, bool)) {
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            if escaped {
                escaped = false;
                f(i, c, true);
            } else if c == '\\' {
                escaped = true;
                f(i, c, true);
            } else if c == '"' {
                in_string = false;
                f(i, c, false);
            } else {
                f(i, c, true);
            }
        } else {
            if c == '"' {
                in_string = true;
            }
            f(i, c, false);
        }
    }
}

/// Rung one: a raw control character inside a string becomes its escape
/// (`\n`, `\r`, `\t`, or `\u00XX`), so file content with literal newlines
/// keeps every character. A control character right after a backslash has no
/// one right reading, so the rung gives up (`None`).
fn escape_control_chars(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut after_backslash = false;
    let mut ambiguous = false;
    scan(text, |_, c, in_string| {
        if in_string && c.is_control() {
            ambiguous |= after_backslash;
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c => out.push_str(&format!("\\u{:04x}", c as u32)),
            }
        } else {
            out.push(c);
        }
        after_backslash = in_string && c == '\\' && !after_backslash;
    });
    (!ambiguous).then_some(out)
}

/// Rung two: removes a comma (outside strings) whose next non-space char is
/// `}` or `]`, or which ends the text.
fn drop_trailing_commas(text: &str) -> String {
    let mut drop = Vec::new();
    let mut pending: Option<usize> = None;
    scan(text, |i, c, in_string| {
        if in_string {
            pending = None;
            return;
        }
        match c {
            ',' => pending = Some(i),
            '}' | ']' => {
                if let Some(p) = pending.take() {
                    drop.push(p);
                }
            }
            c if c.is_whitespace() => {}
            _ => pending = None,
        }
    });
    if let Some(p) = pending {
        drop.push(p);
    }
    text.char_indices()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(_, c)| c)
        .collect()
}

/// Rung four: drops `}` or `]` outside strings that close nothing. A closer
/// of the wrong kind (`[{]`) has no one right reading: the rung gives up.
fn drop_surplus_closers(text: &str) -> Option<String> {
    let mut stack = Vec::new();
    let mut drop = Vec::new();
    let mut mismatched = false;
    scan(text, |i, c, in_string| {
        if in_string {
            return;
        }
        match c {
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => match stack.last() {
                Some(open) if *open == c => {
                    stack.pop();
                }
                Some(_) => mismatched = true,
                None => drop.push(i),
            },
            _ => {}
        }
    });
    (!mismatched).then(|| {
        text.char_indices()
            .filter(|(i, _)| !drop.contains(i))
            .map(|(_, c)| c)
            .collect()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repaired(raw: &str) -> Option<(Value, Vec<Rung>)> {
        repair_arguments(raw, RepairPolicy::RepairAllowed).ok()
    }

    fn fault(raw: &str) -> ArgumentsErrorKind {
        repair_arguments(raw, RepairPolicy::RepairAllowed)
            .unwrap_err()
            .kind
    }

    #[test]
    fn strict_json_passes_untouched() {
        assert_eq!(repaired(r#"{"a": 1}"#), Some((json!({"a": 1}), vec![])));
        assert_eq!(repaired("  "), Some((json!({}), vec![])));
    }

    #[test]
    fn each_rung_repairs_its_fault() {
        assert_eq!(
            repaired("{\"a\": \"x\ny\"}").unwrap(),
            (json!({"a": "x\ny"}), vec![Rung::ControlChars])
        );
        assert_eq!(
            repaired(r#"{"a": [1, 2,], }"#).unwrap(),
            (json!({"a": [1, 2]}), vec![Rung::TrailingCommas])
        );
        assert_eq!(
            repaired(r#"{"a": 1}}"#).unwrap(),
            (json!({"a": 1}), vec![Rung::SurplusClosers])
        );
        assert_eq!(
            repaired(r#"{"a": [1]}]"#).unwrap(),
            (json!({"a": [1]}), vec![Rung::SurplusClosers])
        );
    }

    /// Only the rungs that changed the text are reported, each once.
    #[test]
    fn the_rungs_that_changed_the_text_are_reported() {
        assert_eq!(
            repaired("{\"a\": \"x\ny\",}}").unwrap(),
            (
                json!({"a": "x\ny"}),
                vec![
                    Rung::ControlChars,
                    Rung::TrailingCommas,
                    Rung::SurplusClosers
                ]
            )
        );
        assert_eq!(
            repaired("{\"a\": \"x\ny\"}}").unwrap().1,
            vec![Rung::ControlChars, Rung::SurplusClosers]
        );
    }

    /// Text that ends before its JSON does is what a cut-off call looks like:
    /// no rung completes it, whatever else is wrong with it.
    #[test]
    fn unfinished_text_is_never_completed() {
        for raw in [
            r#"{"path": "src/ma"#,
            r#"{"a": [1, {"b": 2"#,
            r#"{"a": "x,}", "b": "c"#,
            r#"{"a": "say \"hi\""#,
            r#"{"path": "a.txt", "content": "line 1"#,
            "{\"path\": \"a.txt\", \"content\": \"line 1\nline 2",
            r#"{"path": "a.txt","#,
            r#"{"path": "a.txt", "content": ["#,
            r#"{"a": "x\"#,
            "{\"a\": \"日本語😀",
            "{",
        ] {
            assert_eq!(fault(raw), ArgumentsErrorKind::Unfinished, "{raw:?}");
        }
    }

    #[test]
    fn a_key_named_twice_is_never_repaired() {
        for raw in [
            r#"{"path":"a","path":"b"}"#,
            r#"{"path":"a","path":"b",}"#,
            "{\"path\":\"a\",\"content\":\"x\ny\",\"path\":\"b\"}",
        ] {
            assert_eq!(fault(raw), ArgumentsErrorKind::DuplicateKey, "{raw:?}");
        }
        let err =
            repair_arguments(r#"{"path":"a","path":"b"}"#, RepairPolicy::StrictOnly).unwrap_err();
        assert_eq!(err.kind, ArgumentsErrorKind::DuplicateKey);
    }

    #[test]
    fn commas_and_brackets_inside_strings_are_data() {
        assert_eq!(
            repaired(r#"{"a": "x,}", "b": "]"}"#).unwrap().0,
            json!({"a": "x,}", "b": "]"})
        );
        assert_eq!(
            repaired(r#"{"a": "x,}", "b": "],",}"#).unwrap().0,
            json!({"a": "x,}", "b": "],"})
        );
    }

    #[test]
    fn ambiguous_damage_is_refused_not_guessed() {
        assert!(repaired(r#"{"url": "https://x.com/}"#).is_none());
        assert!(repaired(r#"["a, b]"#).is_none());
        assert!(repaired("[{]").is_none(), "mismatched closer");
        assert!(
            repaired("{\"a\": \"x\\\ny\"}").is_none(),
            "control char after a backslash"
        );
    }

    #[test]
    fn control_characters_are_escaped_not_lost() {
        assert_eq!(
            repaired("{\"a\": \"x\u{8}y\"}").unwrap().0,
            json!({"a": "x\u{8}y"})
        );
    }

    #[test]
    fn strict_only_refuses_what_repair_would_rescue() {
        let raw = r#"{"command": "ls",}"#;
        assert!(repair_arguments(raw, RepairPolicy::StrictOnly).is_err());
        assert!(repaired(raw).is_some());
    }

    #[test]
    fn hopeless_input_is_refused_with_the_fault_as_sent() {
        assert_eq!(fault("not json at all"), ArgumentsErrorKind::Invalid);
        assert_eq!(fault(r#"{"a": }"#), ArgumentsErrorKind::Invalid);
        let err = repair_arguments(
            r#"{"path": "m.txt" "content": "x"}"#,
            RepairPolicy::RepairAllowed,
        )
        .unwrap_err();
        assert_eq!(err.message, "expected `,` or `}` at position 18");
        let err =
            repair_arguments("{\"é\": 1,\n \"b\" 2}", RepairPolicy::RepairAllowed).unwrap_err();
        assert_eq!(err.message, "expected `:` at position 15");
    }

    #[test]
    fn oversized_input_is_not_repaired() {
        let raw = format!("{{\"a\": \"{}\",}}", "x".repeat(MAX_REPAIR_BYTES));
        assert!(repaired(&raw).is_none());
    }

    #[test]
    fn multibyte_text_survives_every_rung() {
        assert_eq!(
            repaired("{\"a\": \"日本語😀,\",}").unwrap().0,
            json!({"a": "日本語😀,"})
        );
        assert_eq!(
            repaired("{\"a\": \"日本語\n😀\"}}").unwrap().0,
            json!({"a": "日本語\n😀"})
        );
    }
}
