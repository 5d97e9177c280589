//! The argument repair ladder (seed 002, "Fifty Tools, One Slot").
//!
//! A model that finished its turn but fumbled the JSON of a call's arguments
//! gets a handrail of five rungs, each applied on top of the last:
//! strict parse → strip control characters inside strings → drop trailing
//! commas → close unclosed strings and brackets → drop surplus closers.
//! Inputs over [`MAX_REPAIR_BYTES`] are not repaired. A turn cut at the token
//! cap never reaches this ladder (see [`RepairPolicy::StrictOnly`]): repairing
//! half a command would execute something the model never finished writing.

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

/// Which rung produced the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// The text was valid JSON as sent.
    Strict,
    /// Raw control characters inside strings were escaped or dropped.
    ControlChars,
    /// Trailing commas before `}` or `]` were removed.
    TrailingCommas,
    /// Unclosed strings, arrays and objects were closed.
    ClosedBrackets,
    /// Closers without an opener were removed.
    SurplusClosers,
}

/// Parses `raw` as JSON, climbing the ladder when `policy` allows.
///
/// Returns the value and the rung that produced it, or `None` when every
/// allowed rung failed (the caller then tells the model what is wrong with
/// the text as sent, see [`json_error`]). Empty or whitespace-only input is
/// `{}` at the strict rung, since models send it for tools without arguments.
pub fn repair_arguments(raw: &str, policy: RepairPolicy) -> Option<(Value, Rung)> {
    if raw.trim().is_empty() {
        return Some((Value::Object(Default::default()), Rung::Strict));
    }
    if let Ok(v) = serde_json::from_str(raw) {
        return Some((v, Rung::Strict));
    }
    if policy == RepairPolicy::StrictOnly || raw.len() > MAX_REPAIR_BYTES {
        return None;
    }
    let mut text = escape_control_chars(raw)?;
    if let Ok(v) = serde_json::from_str(&text) {
        return Some((v, Rung::ControlChars));
    }
    text = drop_trailing_commas(&text);
    if let Ok(v) = serde_json::from_str(&text) {
        return Some((v, Rung::TrailingCommas));
    }
    let closed = drop_trailing_commas(&close_unclosed(&text)?);
    if let Ok(v) = serde_json::from_str(&closed) {
        return Some((v, Rung::ClosedBrackets));
    }
    let trimmed = drop_surplus_closers(&text)?;
    let trimmed = drop_trailing_commas(&close_unclosed(&trimmed)?);
    serde_json::from_str(&trimmed)
        .ok()
        .map(|v| (v, Rung::SurplusClosers))
}

/// What a strict JSON parser says about `raw`, with the 1-based character
/// position of the fault, e.g. ``expected `,` or `}` at position 18``;
/// `None` when `raw` is valid JSON.
pub fn json_error(raw: &str) -> Option<String> {
    let err = serde_json::from_str::<serde::de::IgnoredAny>(raw).err()?;
    let text = err.to_string();
    let what = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(what, _)| what);
    // serde_json counts columns in bytes; the model counts characters.
    let line_start: usize = raw
        .split_inclusive('\n')
        .take(err.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let mut end = (line_start + err.column()).min(raw.len());
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    let position = raw[..end].chars().count().max(1);
    Some(format!("{what} at position {position}"))
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

/// Rung two: a raw control character inside a string becomes its escape
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

/// Rung three: removes a comma (outside strings) whose next non-space char is
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

/// Rung four: closes an unclosed string, then every open bracket, innermost
/// first. Gives up (`None`) when the unclosed string is empty, stands outside
/// any container, holds a `}`, `]`, `,` or `:`, or ends in a dangling escape:
/// then the quote was probably lost earlier and closing at the end would
/// swallow structure into the value.
fn close_unclosed(text: &str) -> Option<String> {
    let mut stack = Vec::new();
    scan(text, |_, c, in_string| match c {
        '{' if !in_string => stack.push('}'),
        '[' if !in_string => stack.push(']'),
        '}' | ']' if !in_string => {
            stack.pop();
        }
        _ => {}
    });
    let mut out = text.to_string();
    if let Some(start) = open_string_start(text) {
        let tail = &text[start..];
        let risky = tail.is_empty() || stack.is_empty() || tail.contains(['}', ']', ',', ':']);
        if risky || ends_with_dangling_escape(text) {
            return None;
        }
        out.push('"');
    }
    while let Some(closer) = stack.pop() {
        out.push(closer);
    }
    Some(out)
}

/// True when `text` ends in an odd run of backslashes.
fn ends_with_dangling_escape(text: &str) -> bool {
    text.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// The byte offset just past the opening quote of the string `text` ends
/// inside, if it ends inside one.
fn open_string_start(text: &str) -> Option<usize> {
    let mut open: Option<usize> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if open.is_some() {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                open = None;
            }
        } else if c == '"' {
            open = Some(i + 1);
        }
    }
    open
}

/// Rung five: drops `}` or `]` outside strings that close nothing. A closer
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

    fn repaired(raw: &str) -> Option<(Value, Rung)> {
        repair_arguments(raw, RepairPolicy::RepairAllowed)
    }

    #[test]
    fn strict_json_passes_untouched() {
        assert_eq!(
            repaired(r#"{"a": 1}"#),
            Some((json!({"a": 1}), Rung::Strict))
        );
        assert_eq!(repaired("  "), Some((json!({}), Rung::Strict)));
    }

    #[test]
    fn each_rung_repairs_its_fault() {
        assert_eq!(
            repaired("{\"a\": \"x\ny\"}").unwrap(),
            (json!({"a": "x\ny"}), Rung::ControlChars)
        );
        assert_eq!(
            repaired(r#"{"a": [1, 2,], }"#).unwrap(),
            (json!({"a": [1, 2]}), Rung::TrailingCommas)
        );
        assert_eq!(
            repaired(r#"{"path": "src/ma"#).unwrap(),
            (json!({"path": "src/ma"}), Rung::ClosedBrackets)
        );
        assert_eq!(
            repaired(r#"{"a": [1, {"b": 2"#).unwrap().0,
            json!({"a": [1, {"b": 2}]})
        );
        assert_eq!(
            repaired(r#"{"a": 1}}"#).unwrap(),
            (json!({"a": 1}), Rung::SurplusClosers)
        );
        assert_eq!(
            repaired(r#"{"a": [1]}]"#).unwrap(),
            (json!({"a": [1]}), Rung::SurplusClosers)
        );
    }

    #[test]
    fn commas_and_brackets_inside_strings_are_data() {
        assert_eq!(
            repaired(r#"{"a": "x,}", "b": "]"}"#).unwrap().0,
            json!({"a": "x,}", "b": "]"})
        );
        assert_eq!(
            repaired(r#"{"a": "x,}", "b": "c"#).unwrap().0,
            json!({"a": "x,}", "b": "c"})
        );
        assert_eq!(
            repaired(r#"{"a": "say \"hi\""#).unwrap().0,
            json!({"a": "say \"hi\""})
        );
    }

    #[test]
    fn ambiguous_damage_is_refused_not_guessed() {
        assert!(repaired(r#"{"a": "x\"#).is_none(), "dangling escape");
        assert!(
            repaired(r#"{"url": "https://x.com/}"#).is_none(),
            "lost quote before a closer"
        );
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
        let raw = r#"{"command": "rm -rf /tmp/leg"#;
        assert!(repair_arguments(raw, RepairPolicy::StrictOnly).is_none());
        assert!(repaired(raw).is_some());
    }

    #[test]
    fn hopeless_input_is_refused() {
        assert!(repaired("not json at all").is_none());
        assert!(repaired(r#"{"a": }"#).is_none());
    }

    #[test]
    fn json_errors_name_the_fault_and_its_position() {
        assert_eq!(
            json_error(r#"{"path": "m.txt" "content": "x"}"#).as_deref(),
            Some("expected `,` or `}` at position 18")
        );
        assert_eq!(
            json_error("{\"é\": 1,\n \"b\" 2}").as_deref(),
            Some("expected `:` at position 15")
        );
        assert_eq!(
            json_error(r#"{"a": "#).as_deref(),
            Some("EOF while parsing a value at position 6")
        );
        assert_eq!(json_error(r#"{"a": 1}"#), None);
    }

    #[test]
    fn oversized_input_is_not_repaired() {
        let raw = format!("{{\"a\": \"{}", "x".repeat(MAX_REPAIR_BYTES));
        assert!(repaired(&raw).is_none());
    }

    #[test]
    fn multibyte_text_survives_every_rung() {
        assert_eq!(
            repaired("{\"a\": \"日本語😀,\",").unwrap().0,
            json!({"a": "日本語😀,"})
        );
        assert_eq!(
            repaired("{\"a\": \"日本語😀").unwrap().0,
            json!({"a": "日本語😀"})
        );
    }
}
