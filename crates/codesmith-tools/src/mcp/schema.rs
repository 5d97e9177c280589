//! The registry's entrance for MCP tools: name checks and input-schema sanitation.
//!
//! Providers accept a narrower JSON Schema than MCP servers send. The root must be an
//! object schema; below it, `anyOf: [X, {"type": "null"}]` is folded into `X`, an object
//! schema without `properties` gets an empty one, and `required` keeps only names that
//! `properties` defines.

use serde_json::{Map, Value};

/// Longest tool name providers accept.
pub const MAX_NAME_LEN: usize = 64;

/// True when `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// True when `server` can name a server: a valid name without `__` (the separator of
/// `mcp__SERVER__TOOL`).
pub fn is_valid_server_name(server: &str) -> bool {
    is_valid_name(server) && !server.contains("__")
}

/// The catalogue name `mcp__SERVER__TOOL`.
pub fn qualified_name(server: &str, tool: &str) -> String {
    format!("{}{server}__{tool}", crate::trust::MCP_PREFIX)
}

/// A name for a tool whose own name cannot be registered: every character outside
/// `[a-zA-Z0-9_-]` becomes `_`, cut to fit [`MAX_NAME_LEN`].
pub fn placeholder_name(server: &str, tool: &str) -> String {
    let cleaned: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut name = qualified_name(server, if cleaned.is_empty() { "_" } else { &cleaned });
    name.truncate(MAX_NAME_LEN);
    name
}

/// Sanitizes an input schema for the providers.
///
/// Errors: the root is not an object schema (its `type` is present and is not
/// `"object"`); the message says what it was.
pub fn sanitize_schema(schema: &Value) -> Result<Value, String> {
    let Value::Object(root) = schema else {
        return Err("its input schema is not a JSON object".into());
    };
    match root.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "its input schema's root type is {other}, not \"object\""
            ));
        }
    }
    let mut root = root.clone();
    root.insert("type".into(), Value::String("object".into()));
    root.remove("$schema");
    let mut out = Value::Object(root);
    clean(&mut out);
    Ok(out)
}

fn is_null_schema(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("null")
}

/// Folds nullable `anyOf`, adds missing `properties`, prunes dangling `required`, all the
/// way down.
fn clean(value: &mut Value) {
    let Value::Object(map) = value else {
        if let Value::Array(items) = value {
            items.iter_mut().for_each(clean);
        }
        return;
    };
    fold_nullable(map);
    for v in map.values_mut() {
        clean(v);
    }
    if map.get("type").and_then(Value::as_str) == Some("object") {
        if !map.get("properties").is_some_and(Value::is_object) {
            map.insert("properties".into(), Value::Object(Map::new()));
        }
        let defined: Vec<String> = map
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        if let Some(Value::Array(required)) = map.get_mut("required") {
            required.retain(|r| r.as_str().is_some_and(|n| defined.iter().any(|d| d == n)));
        }
        if map.get("required").is_some_and(|r| !r.is_array()) {
            map.remove("required");
        }
    }
}

/// `{"anyOf": [X, {"type": "null"}], ...rest}` → `X` merged under `rest`.
fn fold_nullable(map: &mut Map<String, Value>) {
    let Some(Value::Array(options)) = map.get("anyOf") else {
        return;
    };
    let non_null: Vec<&Value> = options.iter().filter(|o| !is_null_schema(o)).collect();
    if non_null.len() != 1 || non_null.len() == options.len() {
        return;
    }
    let Value::Object(inner) = non_null[0].clone() else {
        return;
    };
    map.remove("anyOf");
    for (k, v) in inner {
        map.entry(k).or_insert(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_checked_against_the_provider_pattern() {
        assert!(is_valid_name("get_weather-2"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("a.b"));
        assert!(!is_valid_name(&"x".repeat(65)));
        assert!(is_valid_server_name("my-server_1"));
        assert!(!is_valid_server_name("a__b"));
        assert_eq!(qualified_name("s", "t"), "mcp__s__t");
        assert_eq!(placeholder_name("s", "a.b c"), "mcp__s__a_b_c");
        assert_eq!(placeholder_name("s", &"y".repeat(90)).len(), MAX_NAME_LEN);
    }

    #[test]
    fn schemas_are_folded_completed_and_pruned() {
        let raw = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {
                "q": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "query"},
                "opts": {"type": "object"},
                "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
            },
            "required": ["q", "ghost"]
        });
        let clean = sanitize_schema(&raw).unwrap_or_default();
        assert_eq!(clean["type"], "object");
        assert!(clean.get("$schema").is_none());
        assert_eq!(
            clean["properties"]["q"],
            json!({"type": "string", "description": "query"})
        );
        assert_eq!(clean["properties"]["opts"]["properties"], json!({}));
        assert_eq!(
            clean["properties"]["either"]["anyOf"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
        assert_eq!(clean["required"], json!(["q"]));
        let bare = sanitize_schema(&json!({"type": "object"})).unwrap_or_default();
        assert_eq!(bare, json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn a_non_object_root_is_refused() {
        assert!(sanitize_schema(&json!({"type": "string"})).is_err());
        assert!(sanitize_schema(&json!([1])).is_err());
    }
}
