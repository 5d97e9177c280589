//! The one strict reader of tool-call arguments.
//!
//! Every layer that turns a call's raw argument text into a value (the stream
//! reducer, the engine's dispatcher and its repair ladder, `codesmith tool`)
//! reads it through [`parse_arguments`], so they all agree on what a call
//! asked for. It is `serde_json` with one difference: an object that names
//! the same key twice (`{"path": "a", "path": "b"}`) is refused as
//! ambiguous instead of keeping the last value. RFC 8259 §4 leaves the
//! meaning of duplicate names open ("the behavior of software that receives
//! such an object is unpredictable"), so no reading of it is safe to run.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// What is wrong with a call's argument text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentsErrorKind {
    /// The text ends before the JSON does: an unclosed string, object or
    /// array. This is what a call cut off mid-way looks like.
    Unfinished,
    /// An object names the same key twice; which value was meant is unknown.
    DuplicateKey,
    /// Anything else a strict JSON parser refuses (a missing comma, a stray
    /// character, text after the value).
    Invalid,
}

/// Why a call's argument text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentsError {
    /// The category.
    pub kind: ArgumentsErrorKind,
    /// What the parser found and the 1-based character position, e.g.
    /// ``expected `,` or `}` at position 18`` or
    /// ``duplicate key `path` at position 22``.
    pub message: String,
}

impl fmt::Display for ArgumentsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ArgumentsError {}

/// Parses `raw` strictly as one JSON value: valid JSON (RFC 8259) with no
/// duplicate key in any object, nothing after the value but whitespace.
/// Nesting is limited to serde_json's 128 levels. Empty text is an error
/// ([`ArgumentsErrorKind::Unfinished`]); callers that read it as `{}` say so.
///
/// # Errors
/// An [`ArgumentsError`] naming the fault and its character position.
pub fn parse_arguments(raw: &str) -> Result<Value, ArgumentsError> {
    let mut de = serde_json::Deserializer::from_str(raw);
    StrictValue::deserialize(&mut de)
        .and_then(|StrictValue(v)| de.end().map(|()| v))
        .map_err(|e| describe(raw, &e))
}

fn describe(raw: &str, err: &serde_json::Error) -> ArgumentsError {
    let kind = match err.classify() {
        serde_json::error::Category::Eof => ArgumentsErrorKind::Unfinished,
        serde_json::error::Category::Data => ArgumentsErrorKind::DuplicateKey,
        _ => ArgumentsErrorKind::Invalid,
    };
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
    let mut end = line_start.saturating_add(err.column()).min(raw.len());
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    let position = raw[..end].chars().count().max(1);
    ArgumentsError {
        kind,
        message: format!("{what} at position {position}"),
    }
}

/// A JSON value read with duplicate keys refused.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> DeserializeSeed<'de> for StrictVisitor {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(StrictVisitor)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                let shown: String = key.chars().take(64).collect();
                let more = if shown.len() < key.len() { "…" } else { "" };
                return Err(de::Error::custom(format_args!(
                    "duplicate key `{shown}{more}`"
                )));
            }
            let value = map.next_value_seed(StrictVisitor)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kind(raw: &str) -> ArgumentsErrorKind {
        parse_arguments(raw).unwrap_err().kind
    }

    #[test]
    fn valid_json_reads_as_serde_json_does() {
        for raw in [
            r#"{"a": 1, "b": [1, 2.5, -3, true, null, "x"], "c": {"d": {}}}"#,
            r#"{"big": 18446744073709551615, "neg": -9223372036854775808, "e": 1e300}"#,
            r#"[{"a": 1}, {"a": 1}]"#,
            r#""just a string""#,
            " {\"é\": \"日本語😀\\n\"} ",
        ] {
            let want: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(parse_arguments(raw).unwrap(), want, "{raw}");
        }
    }

    #[test]
    fn a_key_named_twice_is_ambiguous_at_any_depth() {
        let err = parse_arguments(r#"{"path":"a","path":"b"}"#).unwrap_err();
        assert_eq!(err.kind, ArgumentsErrorKind::DuplicateKey);
        assert!(err.message.contains("duplicate key `path`"), "{err}");
        assert!(err.message.contains("position 18"), "{err}");
        assert_eq!(
            kind(r#"{"edits":[{"old":"x","new":"y","old":"z"}]}"#),
            ArgumentsErrorKind::DuplicateKey
        );
        assert_eq!(
            kind(r#"{"a":{"b":1},"a":{"b":1}}"#),
            ArgumentsErrorKind::DuplicateKey,
            "even identical values: the sender's intent is unknown"
        );
        // Escapes spelling the same key are the same key.
        assert_eq!(
            kind(r#"{"path":"a","p\u0061th":"b"}"#),
            ArgumentsErrorKind::DuplicateKey
        );
        assert_eq!(
            parse_arguments(r#"{"path":"a","Path":"b"}"#).unwrap(),
            json!({"path": "a", "Path": "b"})
        );
    }

    #[test]
    fn unfinished_text_is_told_apart_from_malformed_text() {
        for raw in [
            "",
            "{",
            r#"{"path": "a"#,
            r#"{"path": "a","#,
            r#"{"a": [1, {"b": 2"#,
            r#"{"a": "x\"#,
        ] {
            assert_eq!(kind(raw), ArgumentsErrorKind::Unfinished, "{raw:?}");
        }
        for raw in [
            r#"{"path": "m.txt" "content": "x"}"#,
            r#"{"a": 1}}"#,
            r#"{"a": 1,}"#,
            "{'a': 1}",
        ] {
            assert_eq!(kind(raw), ArgumentsErrorKind::Invalid, "{raw:?}");
        }
        assert_eq!(
            parse_arguments(r#"{"path": "m.txt" "content": "x"}"#)
                .unwrap_err()
                .message,
            "expected `,` or `}` at position 18"
        );
    }
}
