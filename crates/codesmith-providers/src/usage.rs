//! Token counts as providers report them, checked before they are counted.
//!
//! A count is a JSON integer from 0 to 2^53 − 1, the largest integer every
//! JSON reader holds exactly (RFC 8259 §6). Anything else in a usage field (a
//! negative or fractional number, a larger one, a string) is not counted: the
//! other fields are kept, and a [`ProviderEvent::Notice`] names the field,
//! once per field and response. An absent or `null` field is simply not
//! reported.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::provider::ProviderEvent;

/// The largest token count accepted: 2^53 − 1.
pub(crate) const MAX_TOKEN_COUNT: u64 = (1 << 53) - 1;

/// What is wrong with a usage field's value, if anything.
fn fault(value: &Value) -> Option<&'static str> {
    match value {
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) if u <= MAX_TOKEN_COUNT => None,
            (Some(_), _, _) => Some("a number above 2^53 − 1"),
            (None, Some(_), _) => Some("a negative number"),
            (None, None, Some(f)) if f < 0.0 => Some("a negative number"),
            (None, None, Some(f)) if f > MAX_TOKEN_COUNT as f64 => Some("a number above 2^53 − 1"),
            _ => Some("not a whole number"),
        },
        Value::String(_) => Some("a string"),
        Value::Bool(_) => Some("a boolean"),
        Value::Array(_) => Some("an array"),
        Value::Object(_) => Some("an object"),
        Value::Null => None,
    }
}

/// Reads usage fields for one response, reporting each invalid field once.
#[derive(Debug, Default)]
pub(crate) struct UsageReader {
    reported: BTreeSet<String>,
}

impl UsageReader {
    /// The count at `pointer` (a JSON pointer such as `/prompt_tokens`) in
    /// `usage`; `None` when absent, `null` or invalid. An invalid value adds
    /// a notice to `out`, naming the field as `usage.a.b`.
    pub(crate) fn count(
        &mut self,
        provider: &str,
        usage: &Value,
        pointer: &str,
        out: &mut Vec<ProviderEvent>,
    ) -> Option<u64> {
        let value = usage.pointer(pointer)?;
        match fault(value) {
            None => value.as_u64(),
            Some(what) => {
                let field = format!("usage{}", pointer.replace('/', "."));
                if self.reported.insert(field.clone()) {
                    out.push(ProviderEvent::Notice(format!(
                        "{provider} reported `{field}` as {what}, not a token count (a whole number from 0 to \
                         2^53 − 1); that figure is not counted, the others are."
                    )));
                }
                None
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_whole_numbers_in_range_are_counts() {
        let usage = json!({"ok": 12, "max": 9007199254740991_u64, "zero": 0, "null": null,
            "neg": -1, "big": 9007199254740992_u64, "huge": 1e300, "frac": 1.5, "negfrac": -0.5,
            "float_whole": 12.0, "str": "12", "bool": true, "arr": [1], "obj": {"a": 1},
            "u64max": 18446744073709551615_u64});
        let mut reader = UsageReader::default();
        let mut out = Vec::new();
        let mut count = |p: &str| reader.count("p", &usage, p, &mut out);
        assert_eq!(count("/ok"), Some(12));
        assert_eq!(count("/max"), Some(MAX_TOKEN_COUNT));
        assert_eq!(count("/zero"), Some(0));
        assert_eq!(count("/null"), None);
        assert_eq!(count("/absent"), None);
        for bad in [
            "/neg",
            "/big",
            "/huge",
            "/frac",
            "/negfrac",
            "/float_whole",
            "/str",
            "/bool",
            "/arr",
            "/obj",
            "/u64max",
        ] {
            assert_eq!(count(bad), None, "{bad}");
        }
        assert_eq!(count("/neg"), None, "asked twice");
        assert_eq!(out.len(), 11, "one notice per invalid field: {out:?}");
        let ProviderEvent::Notice(text) = &out[0] else {
            panic!("{out:?}")
        };
        assert!(text.contains("`usage.neg` as a negative number"), "{text}");
    }
}
