//! The `lsp` tool: definition, references, hover and symbols from the session's language
//! servers (read-only; the servers run in the sandbox, see [`super`]).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::server_text;
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

/// Most locations or symbols listed in one answer.
const MAX_ITEMS: usize = 50;

/// Most characters of one symbol's name.
const MAX_NAME_CHARS: usize = 200;

/// Most characters of one location's path.
const MAX_PATH_CHARS: usize = 300;

/// Most characters of a hover's text.
const MAX_HOVER_CHARS: usize = 4_000;

/// Most characters of one whole answer (the items past it are counted, not listed).
const MAX_ANSWER_CHARS: usize = 12_000;

const DESCRIPTION: &str = "Ask the project's language server (runs in the sandbox). Use it instead of \
grepping for a symbol when you need where it is defined, who uses it, its type or a file's outline. \
Operations: definition, references and hover take path plus a 1-based line and column of the symbol; \
document_symbols takes path; workspace_symbols takes query (a name). Positions in answers are 1-based. \
Examples: {\"operation\": \"definition\", \"path\": \"src/app.py\", \"line\": 12, \"column\": 9}; \
{\"operation\": \"workspace_symbols\", \"query\": \"parse_config\"}";

/// The `lsp` tool (registered only when a language server is configured or found).
///
/// Its answers are text a language server wrote, and the server runs code the workspace
/// controls: every string the server supplies (hover text, symbol names, locations' paths)
/// passes through `server_text` in [`super`] (terminal escapes removed, the one sanitizer, no
/// markup, each item bounded), and the whole answer is bounded too. The answer is not
/// wrapped as `<external_content>`: like `exec_shell`'s output, it comes from the
/// workspace's own code run in the sandbox, not from outside the workspace (what
/// [`crate::Tool::external_label`] marks, such as fetched pages and MCP servers' results),
/// so it keeps the default of a read-only tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct LspTool;

fn invalid(message: impl Into<String>, hint: &str) -> Refusal {
    Refusal::new(ErrorCode::InvalidArguments, message, hint)
}

fn unavailable(why: String) -> Refusal {
    Refusal::new(
        ErrorCode::Unavailable,
        format!("The language server cannot answer: {why}."),
        "Use grep_files and read_file instead.",
    )
}

/// `path:line:col` of an LSP `Location` or `LocationLink`, workspace-relative when inside.
fn location(ctx: &ToolContext, value: &Value) -> Option<String> {
    let uri = value
        .get("uri")
        .or_else(|| value.get("targetUri"))?
        .as_str()?;
    let range = value
        .get("range")
        .or_else(|| value.get("targetSelectionRange"))?;
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    let path = percent_decode(path);
    let shown = std::path::Path::new(&path)
        .strip_prefix(&ctx.workspace)
        .map(|p| p.display().to_string())
        .unwrap_or(path.clone());
    let shown = server_text(&shown, MAX_PATH_CHARS, true);
    Some(format!(
        "{shown}:{}:{}",
        range["start"]["line"].as_u64()? + 1,
        range["start"]["character"].as_u64()? + 1
    ))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..(i + 3).min(s.len())], 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Symbol kinds by their LSP number.
fn kind_name(kind: u64) -> &'static str {
    const NAMES: [&str; 26] = [
        "symbol",
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
    ];
    NAMES.get(kind as usize).copied().unwrap_or("symbol")
}

/// `lines`, one a line, up to [`MAX_ANSWER_CHARS`]; the lines past it are counted.
fn bounded(lines: &[String]) -> String {
    let mut out = String::new();
    let mut chars = 0;
    for (i, line) in lines.iter().enumerate() {
        chars += line.chars().count() + 1;
        if chars > MAX_ANSWER_CHARS {
            out.push_str(&format!(
                "… ({} more not shown; ask about a narrower place)",
                lines.len() - i
            ));
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.truncate(out.trim_end_matches('\n').len());
    out
}

fn symbols(ctx: &ToolContext, items: &[Value], depth: usize, out: &mut Vec<String>) {
    for item in items {
        if out.len() >= MAX_ITEMS {
            return;
        }
        let name = server_text(item["name"].as_str().unwrap_or("?"), MAX_NAME_CHARS, true);
        let kind = kind_name(item["kind"].as_u64().unwrap_or(0));
        let at = match item.get("location") {
            Some(loc) => location(ctx, loc).unwrap_or_default(),
            None => format!(
                "line {}",
                item["selectionRange"]["start"]["line"]
                    .as_u64()
                    .unwrap_or(0)
                    + 1
            ),
        };
        out.push(format!("{}{kind} {name} ({at})", "  ".repeat(depth)));
        if let Some(children) = item["children"].as_array() {
            symbols(ctx, children, depth + 1, out);
        }
    }
}

#[async_trait]
impl Tool for LspTool {
    fn name(&self) -> &'static str {
        "lsp"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": ["definition", "references", "hover", "document_symbols", "workspace_symbols"]},
                "path": {"type": "string", "description": "Workspace-relative file (all but workspace_symbols)."},
                "line": {"type": "integer", "minimum": 1, "description": "1-based line of the symbol."},
                "column": {"type": "integer", "minimum": 1, "description": "1-based column of the symbol."},
                "query": {"type": "string", "description": "A symbol name (workspace_symbols)."}
            },
            "required": ["operation"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::ReadOnly
    }

    fn supports_parallel(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let Some(manager) = ctx.lsp.clone() else {
            return Err(unavailable("no language server is configured".into()));
        };
        let op = args["operation"].as_str().unwrap_or("");
        if op == "workspace_symbols" {
            let query = args["query"].as_str().unwrap_or("").trim();
            if query.is_empty() {
                return Err(invalid(
                    "workspace_symbols needs a \"query\".",
                    "Pass {\"operation\": \"workspace_symbols\", \"query\": \"name\"}.",
                ));
            }
            let Some((name, client)) = manager.any_running().await else {
                return Err(unavailable(
                    "no language server runs yet; ask document_symbols on a file first".into(),
                ));
            };
            let answer = client
                .request(
                    "workspace/symbol",
                    json!({"query": query}),
                    manager.timeout(),
                )
                .await
                .map_err(|e| unavailable(format!("{name}: {e}")))?;
            let mut out = Vec::new();
            symbols(
                ctx,
                answer.as_array().map_or(&[][..], Vec::as_slice),
                0,
                &mut out,
            );
            return Ok(ToolOutput::new(if out.is_empty() {
                format!("No symbol matches {query:?}.")
            } else {
                bounded(&out)
            })
            .with("server", name));
        }
        let rel = args["path"].as_str().unwrap_or("");
        if rel.is_empty() {
            return Err(invalid(
                format!("{op} needs a \"path\"."),
                "Name the workspace-relative file.",
            ));
        }
        let path = ctx.resolve(rel)?;
        let (name, client, uri) = manager
            .for_lookup(ctx, &path.abs)
            .await
            .map_err(unavailable)?;
        let doc = json!({"uri": uri});
        let (method, params) = match op {
            "document_symbols" => ("textDocument/documentSymbol", json!({"textDocument": doc})),
            "definition" | "references" | "hover" => {
                let (Some(line), Some(column)) = (args["line"].as_u64(), args["column"].as_u64())
                else {
                    return Err(invalid(
                        format!("{op} needs \"line\" and \"column\" (1-based)."),
                        "Read the file to find the symbol's position.",
                    ));
                };
                let mut params = json!({
                    "textDocument": doc,
                    "position": {"line": line.saturating_sub(1), "character": column.saturating_sub(1)}
                });
                if op == "references" {
                    params["context"] = json!({"includeDeclaration": true});
                }
                let method = match op {
                    "definition" => "textDocument/definition",
                    "references" => "textDocument/references",
                    _ => "textDocument/hover",
                };
                (method, params)
            }
            other => {
                return Err(invalid(
                    format!("operation {other:?} is not known."),
                    "Use definition, references, hover, document_symbols or workspace_symbols.",
                ));
            }
        };
        let answer = client
            .request(method, params, manager.timeout())
            .await
            .map_err(|e| unavailable(format!("{name}: {e}")))?;
        let text = match op {
            "hover" => {
                let contents = &answer["contents"];
                let text = match contents {
                    Value::String(s) => s.clone(),
                    Value::Array(items) => items
                        .iter()
                        .map(|i| i.as_str().or(i["value"].as_str()).unwrap_or("").to_string())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    other => other["value"].as_str().unwrap_or("").to_string(),
                };
                let text = server_text(&text, MAX_HOVER_CHARS, false);
                if text.trim().is_empty() {
                    "No hover information at that position.".to_string()
                } else {
                    text
                }
            }
            "document_symbols" => {
                let mut out = Vec::new();
                symbols(
                    ctx,
                    answer.as_array().map_or(&[][..], Vec::as_slice),
                    0,
                    &mut out,
                );
                if out.is_empty() {
                    "No symbols.".to_string()
                } else {
                    bounded(&out)
                }
            }
            _ => {
                let items = match &answer {
                    Value::Array(items) => items.clone(),
                    Value::Null => Vec::new(),
                    one => vec![one.clone()],
                };
                let found: Vec<String> = items
                    .iter()
                    .filter_map(|i| location(ctx, i))
                    .take(MAX_ITEMS)
                    .collect();
                if found.is_empty() {
                    format!("No {op} found at that position.")
                } else {
                    bounded(&found)
                }
            }
        };
        Ok(ToolOutput::new(text).with("server", name))
    }
}
