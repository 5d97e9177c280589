//! MCP resources as two tools over every connected server that offers them:
//! `mcp_resources_list` and `mcp_resource_read`.
//!
//! Both only read (`resources/list`, `resources/read` change nothing at the server by the
//! protocol's definition), so they run without approval; what they return is the
//! server's external content, wrapped as `<external_content source="mcp:SERVER">` where
//! every result is finished. They are deferred with the MCP tools when those are.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::client::McpServer;
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome};

/// The listing tool's name.
pub const LIST: &str = "mcp_resources_list";
/// The reading tool's name.
pub const READ: &str = "mcp_resource_read";

/// Most resources listed per server.
const MAX_LISTED: usize = 200;

/// One of the two resource tools over `servers` (those that offer resources).
pub struct ResourceTool {
    read: bool,
    description: &'static str,
    servers: Vec<Arc<McpServer>>,
}

impl std::fmt::Debug for ResourceTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTool")
            .field("name", &self.name())
            .finish()
    }
}

impl ResourceTool {
    /// Both tools over `servers`, or none when no server offers resources.
    pub fn pair(servers: &[Arc<McpServer>]) -> Vec<ResourceTool> {
        let offering: Vec<Arc<McpServer>> = servers
            .iter()
            .filter(|s| s.about().resources)
            .cloned()
            .collect();
        if offering.is_empty() {
            return Vec::new();
        }
        let names: Vec<&str> = offering.iter().map(|s| s.name()).collect();
        let list = format!(
            "Lists the resources (documents, records, files) MCP servers offer: URI, name, \
             type and description. Servers: {}.",
            names.join(", ")
        );
        let read = "Reads one resource of an MCP server by its URI (from mcp_resources_list). \
                    Text comes back as it is; an image as an image; other binary content is \
                    described, not included.";
        vec![
            ResourceTool {
                read: false,
                description: Box::leak(list.into_boxed_str()),
                servers: offering.clone(),
            },
            ResourceTool {
                read: true,
                description: read,
                servers: offering,
            },
        ]
    }

    fn server(&self, args: &Value) -> Result<Option<&Arc<McpServer>>, Refusal> {
        let Some(name) = args.get("server").and_then(Value::as_str) else {
            return Ok(None);
        };
        self.servers
            .iter()
            .find(|s| s.name() == name)
            .map(Some)
            .ok_or_else(|| {
                let known: Vec<&str> = self.servers.iter().map(|s| s.name()).collect();
                Refusal::new(
                    ErrorCode::NotFound,
                    format!("No connected MCP server `{name}` offers resources."),
                    format!("Use one of: {}.", known.join(", ")),
                )
            })
    }
}

fn refusal(tool: &str, server: &str, e: super::client::CallError) -> Refusal {
    super::tool::call_refusal(tool, server, e)
}

#[async_trait]
impl Tool for ResourceTool {
    fn name(&self) -> &'static str {
        if self.read { READ } else { LIST }
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn input_schema(&self) -> Value {
        if self.read {
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The MCP server's name."},
                    "uri": {"type": "string", "description": "The resource's URI."}
                },
                "required": ["server", "uri"]
            })
        } else {
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "Only this MCP server (default: all)."}
                }
            })
        }
    }

    fn capability(&self) -> Capability {
        Capability::ReadOnly
    }

    /// `mcp:SERVER` for one server's content (`mcp` for a listing over all of them).
    fn external_label(&self, args: &Value) -> Option<String> {
        Some(match args.get("server").and_then(Value::as_str) {
            Some(s) => label(s),
            None => crate::trust::clean_label("mcp"),
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let chosen = self.server(&args)?;
        if !self.read {
            let targets: Vec<&Arc<McpServer>> = match chosen {
                Some(s) => vec![s],
                None => self.servers.iter().collect(),
            };
            let targets_named: Vec<String> = targets.iter().map(|s| s.name().to_string()).collect();
            let mut lines = Vec::new();
            for server in targets {
                match server.list_resources().await {
                    Ok(listed) => {
                        let list = listed.items;
                        lines.push(format!("# {} ({} resources)", server.name(), list.len()));
                        for r in list.iter().take(MAX_LISTED) {
                            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
                            let mut line = format!("- {} — {}", s("uri"), s("name"));
                            if !s("mimeType").is_empty() {
                                line.push_str(&format!(" ({})", s("mimeType")));
                            }
                            if !s("description").is_empty() {
                                line.push_str(": ");
                                line.push_str(super::tool::clip(s("description"), 300));
                            }
                            lines.push(line);
                        }
                        if list.len() > MAX_LISTED {
                            lines.push(format!("… {} more not shown", list.len() - MAX_LISTED));
                        }
                        if let Some(cut) = listed.cut {
                            lines.push(format!("… {cut}; the server offers more"));
                        }
                    }
                    Err(e) => lines.push(format!(
                        "# {}: unavailable ({})",
                        server.name(),
                        refusal(LIST, server.name(), e).message
                    )),
                }
            }
            // The server's words go through the one path every MCP result takes (the
            // terminal filter, the size cap and its spill).
            let named: Vec<&str> = targets_named.iter().map(String::as_str).collect();
            let listing = json!({"content": [{"type": "text", "text": lines.join("\n")}]});
            return super::tool::finish_result(ctx, LIST, &named.join(", "), &listing).await;
        }
        let Some(server) = chosen else {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                "mcp_resource_read needs `server` and `uri`.",
                "Take both from mcp_resources_list.",
            ));
        };
        let Some(uri) = args.get("uri").and_then(Value::as_str) else {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                "mcp_resource_read needs `uri`.",
                "Take it from mcp_resources_list.",
            ));
        };
        read(server, ctx, uri).await
    }
}

/// The `<external_content>` label of `server`'s content: `mcp:SERVER`, cleaned as every
/// label is ([`crate::trust::clean_label`]).
pub fn label(server: &str) -> String {
    crate::trust::clean_label(&format!("mcp:{server}"))
}

/// Reads the resource `uri` of `server` (`resources/read`) as `mcp_resource_read` does,
/// for the tool and for an `@SERVER:URI` mention: each text content under a
/// `[resource URI]` line; an image blob as an image through the same path as an MCP tool
/// result's images ([`super::tool::result_content`]: fitted, at most
/// [`super::tool::MAX_RESULT_IMAGES`], and only when `ctx.images`), any other blob
/// described, not included; then finished as a tool result's content is
/// (size-capped with the shell's spill, the full text kept for `retrieve_tool_result`).
/// Sanitizing and the
/// `<external_content source="mcp:SERVER">` wrapper ([`label`]) are applied where every
/// result is finished.
///
/// Errors: the server's refusal or a failed call, as the tool's [`Refusal`].
pub async fn read(server: &McpServer, ctx: &ToolContext, uri: &str) -> ToolOutcome {
    let read = server
        .read_resource(uri)
        .await
        .map_err(|e| refusal(READ, server.name(), e))?;
    // The contents as a tool result's content blocks, so text and images take the one
    // path tool results take.
    let mut blocks = Vec::new();
    for c in read
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        match c.get("text").and_then(Value::as_str) {
            Some(text) => blocks.push(json!({
                "type": "text",
                "text": format!("[resource {}]\n{text}", s("uri")),
            })),
            None if s("mimeType").starts_with("image/") => {
                blocks.push(json!({
                    "type": "text",
                    "text": format!("[resource {}]", s("uri")),
                }));
                blocks.push(json!({"type": "image", "data": s("blob"), "mimeType": s("mimeType")}));
            }
            None => blocks.push(json!({
                "type": "text",
                "text": format!(
                    "[binary resource {} omitted: {}, {} bytes base64]",
                    s("uri"),
                    s("mimeType"),
                    s("blob").len()
                ),
            })),
        }
    }
    super::tool::finish_result(ctx, READ, server.name(), &json!({ "content": blocks })).await
}
