//! An MCP server's tool as a registry [`Tool`]: capability, argument and result handling.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::client::{CallError, McpServer};
use super::transport::TransportFault;
use crate::sanitize::sanitize_json;
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

/// Longest excerpt of a server's error text quoted in a refusal, in bytes.
const ERROR_EXCERPT: usize = 2_000;

/// One tool of one MCP server, registered as `mcp__SERVER__TOOL`.
///
/// The catalogue needs `'static` names, so the name and description are leaked once per
/// registered tool when the session's servers start (a bounded, session-long cost).
pub struct McpTool {
    name: &'static str,
    description: &'static str,
    schema: Value,
    capability: Capability,
    /// Whether the server is trusted and the tool declares readOnlyHint (`None` for a
    /// fail-closed entry).
    trust: Option<crate::McpTrust>,
    remote: String,
    server: Arc<McpServer>,
    /// Set for a fail-closed entry: why the tool cannot be used.
    unavailable: Option<String>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool").field("name", &self.name).finish()
    }
}

impl McpTool {
    /// A usable tool. `trust` comes from [`trust_for`]; the capability follows from it.
    pub fn new(
        name: String,
        description: String,
        schema: Value,
        trust: crate::McpTrust,
        remote: String,
        server: Arc<McpServer>,
    ) -> Self {
        McpTool {
            name: Box::leak(name.into_boxed_str()),
            description: Box::leak(description.into_boxed_str()),
            schema,
            capability: trust.capability(),
            trust: Some(trust),
            remote,
            server,
            unavailable: None,
        }
    }

    /// A fail-closed entry: listed so the model learns the tool exists, refused on every
    /// call with `why`.
    pub fn unavailable(name: String, remote: String, why: String, server: Arc<McpServer>) -> Self {
        // The remote name and the reason are the server's bytes: controls made
        // visible, then the one sanitizer, before the model reads them.
        let why = crate::sanitize::sanitize_text(&codesmith_policy::visible_controls(&why))
            .0
            .into_owned();
        let description = format!(
            "Unavailable: the MCP server `{}` offers `{}`, but {why}. Calls are refused.",
            server.name(),
            codesmith_policy::visible_controls(&remote)
        );
        let description = crate::sanitize::sanitize_text(&description).0.into_owned();
        McpTool {
            name: Box::leak(name.into_boxed_str()),
            description: Box::leak(description.into_boxed_str()),
            schema: json!({"type": "object", "properties": {}}),
            capability: Capability::Network,
            trust: None,
            remote,
            server,
            unavailable: Some(why),
        }
    }
}

/// The conservative capability of an MCP tool: read-only only when the user trusts the
/// server (`trusted = true`) AND the tool declares `annotations.readOnlyHint: true`;
/// otherwise network-capable, which asks for approval. Hints from an untrusted server are
/// never believed (the MCP specification says clients must not trust them).
pub fn capability_for(trusted: bool, raw_tool: &Value) -> Capability {
    trust_for(trusted, raw_tool).capability()
}

/// Whether the server is `trusted` and `raw_tool` declares `annotations.readOnlyHint:
/// true`: what [`capability_for`] follows from.
pub fn trust_for(trusted: bool, raw_tool: &Value) -> crate::McpTrust {
    crate::McpTrust {
        server_trusted: trusted,
        read_only_hint: raw_tool
            .pointer("/annotations/readOnlyHint")
            .and_then(Value::as_bool)
            == Some(true),
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn capability(&self) -> Capability {
        self.capability
    }

    fn mcp_trust(&self) -> Option<crate::McpTrust> {
        self.trust
    }

    fn origin(&self) -> crate::ToolOrigin {
        crate::ToolOrigin::Mcp {
            server: self.server.name().to_string(),
            tool: self.remote.clone(),
        }
    }

    /// `mcp:SERVER`: whatever a server answers is data from outside the workspace, also
    /// from a trusted server whose tool declares itself read-only.
    fn external_label(&self, _args: &Value) -> Option<String> {
        Some(crate::trust::clean_label(&format!(
            "mcp:{}",
            self.server.name()
        )))
    }

    fn supports_parallel(&self) -> bool {
        self.capability == Capability::ReadOnly
    }

    async fn call(&self, ctx: &ToolContext, mut args: Value) -> ToolOutcome {
        let server = self.server.name().to_string();
        if let Some(why) = &self.unavailable {
            return Err(Refusal::new(
                ErrorCode::Unavailable,
                format!("`{}` cannot be used: {why}.", self.name),
                "Do not call it again; continue with other tools or tell the user.",
            )
            .with("server", server));
        }
        // The one scrubber cleans what leaves for the server, as it cleans what comes back.
        sanitize_json(&mut args);
        let Value::Object(map) = args else {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                format!("The arguments of `{}` must be a JSON object.", self.name),
                "Send the arguments as an object matching the tool's schema.",
            ));
        };
        match self.server.call(&self.remote, map).await {
            Ok(result) => finish_result(ctx, self.name, &server, &result).await,
            Err(e) => Err(call_refusal(self.name, &server, e)),
        }
    }
}

/// The refusal for a request to `server` on behalf of `tool` that produced no result.
pub(super) fn call_refusal(tool: &str, server: &str, e: CallError) -> Refusal {
    let r = match e {
        CallError::Down(why) => Refusal::new(
            ErrorCode::Unavailable,
            format!("`{tool}` was not run: the MCP server `{server}` is not running ({why})."),
            "Continue without this server's tools, or tell the user to check it with `codesmith mcp list`.",
        ),
        CallError::Timeout => Refusal::new(
            ErrorCode::Timeout,
            format!(
                "`{tool}` did not answer in time (nor report progress); the call was cancelled \
                 at the server."
            ),
            "Try a smaller request, or continue without it.",
        ),
        CallError::Ceiling(secs) => Refusal::new(
            ErrorCode::Timeout,
            format!(
                "`{tool}` was still running after {secs}s, the most one call may take \
                 (tool_max_secs); the call was cancelled at the server."
            ),
            "Try a smaller request, or continue without it.",
        ),
        CallError::Transport(fault) => Refusal::new(
            ErrorCode::ToolError,
            format!("`{tool}` failed: the MCP server `{server}` answered, but {fault}."),
            match fault {
                TransportFault::Oversized { .. } => {
                    "The answer was dropped; the server is still connected. Ask for less (a \
                     smaller range, a page) or continue without it."
                }
                _ => {
                    "The answer was dropped; the server is still connected. Try another way, \
                     or continue without it; repeating the same call will likely fail the \
                     same way."
                }
            },
        ),
        CallError::Removed => Refusal::new(
            ErrorCode::Unavailable,
            format!("`{tool}` was removed by the server: `{server}` no longer offers it."),
            "Do not call it again; use the server's other tools.",
        ),
        CallError::Protocol(message) => Refusal::new(
            ErrorCode::ToolError,
            format!(
                "The MCP server `{server}` rejected the call to `{tool}`: {}",
                excerpt(&message)
            ),
            "Check the arguments against the tool's schema and send a corrected call.",
        ),
        CallError::Closed(how) => Refusal::new(
            ErrorCode::Unavailable,
            match how {
                Some(how) => format!(
                    "`{tool}` did not finish: the MCP server `{server}` stopped during the call \
                     ({})",
                    excerpt(&how)
                ),
                None => format!(
                    "`{tool}` did not finish: the MCP server `{server}` stopped during the call."
                ),
            },
            "It is restarted once on the next call; if the call may have had effects, check before \
             repeating it.",
        ),
    };
    r.with("server", server.to_string())
}

fn excerpt(text: &str) -> &str {
    clip(text, ERROR_EXCERPT)
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub(crate) fn clip(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The text of a `CallToolResult`: text blocks as they are, images and audio as a short
/// description, resource links and embedded resources by URI (with their text when they
/// carry some), and the structured content as JSON when no text block carries it.
pub async fn result_text(result: &Value) -> String {
    result_content(result, false).await.0
}

/// Most images one tool result carries to the model; further ones are counted in a note.
pub const MAX_RESULT_IMAGES: usize = 8;

/// Most bytes (fitted, encoded) of images one tool result carries to the model.
pub const MAX_RESULT_IMAGE_BYTES: usize = 16 * 1024 * 1024;

/// [`result_text`], and with `images` (the session's model reads them) the result's
/// image blocks as images: each fitted to the providers' limits ([`crate::image::fit`])
/// and named in the text where it stood (`[image 1: …; it follows this result]`). An
/// image that cannot be decoded, or any image when `images` is false, stays a line
/// saying it was omitted and why. At most [`MAX_RESULT_IMAGES`] images
/// ([`MAX_RESULT_IMAGE_BYTES`]) are attached; one line counts the rest. Images are fitted
/// on the blocking pool ([`crate::image::fit_async`]).
pub async fn result_content(
    result: &Value,
    images: bool,
) -> (String, Vec<codesmith_protocol::ImagePart>) {
    let mut parts: Vec<String> = Vec::new();
    let mut attached: Vec<codesmith_protocol::ImagePart> = Vec::new();
    let mut attached_bytes = 0usize;
    let mut over = 0usize;
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in blocks {
        let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
        match s("type") {
            "text" => parts.push(s("text").to_string()),
            // At most MAX_RESULT_IMAGES images (and MAX_RESULT_IMAGE_BYTES) per result:
            // the rest are counted in one note.
            "image" if images && attached.len() >= MAX_RESULT_IMAGES => over += 1,
            "image" if images => match mcp_image(s("data")).await {
                Ok(fitted) if attached_bytes + fitted.part.data.len() > MAX_RESULT_IMAGE_BYTES => {
                    over += 1;
                }
                Ok(fitted) => {
                    attached_bytes += fitted.part.data.len();
                    attached.push(fitted.part.clone());
                    parts.push(format!(
                        "[image {}: {}; it follows this result]",
                        attached.len(),
                        fitted.describe()
                    ));
                }
                Err(why) => parts.push(format!(
                    "[image omitted: {}, {} bytes base64; {why}]",
                    s("mimeType"),
                    s("data").len()
                )),
            },
            "image" | "audio" => parts.push(format!(
                "[{} omitted: {}, {} bytes base64]",
                s("type"),
                s("mimeType"),
                s("data").len()
            )),
            "resource_link" => parts.push(format!("[resource link: {} ({})]", s("uri"), s("name"))),
            "resource" => {
                let res = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = res.get("uri").and_then(Value::as_str).unwrap_or("");
                match res.get("text").and_then(Value::as_str) {
                    Some(text) => parts.push(format!("[resource {uri}]\n{text}")),
                    None => parts.push(format!("[binary resource omitted: {uri}]")),
                }
            }
            other => parts.push(format!("[{other} content omitted]")),
        }
    }
    if over > 0 {
        parts.push(format!(
            "[{over} more image(s) omitted: one result carries at most {MAX_RESULT_IMAGES} \
             images and {} MiB of them]",
            MAX_RESULT_IMAGE_BYTES / (1024 * 1024)
        ));
    }
    let has_text = parts.iter().any(|p| !p.is_empty());
    if !has_text && let Some(structured) = result.get("structuredContent") {
        parts.push(structured.to_string());
    }
    (parts.join("\n"), attached)
}

/// An MCP image block's base64 `data`, decoded and fitted. The media type is judged from
/// the bytes, not from the server's `mimeType`.
async fn mcp_image(data: &str) -> Result<crate::image::Fitted, String> {
    use base64::Engine as _;
    if data.len() as u64 > crate::image::MAX_FILE_BYTES * 4 / 3 + 4 {
        return Err(format!(
            "larger than the {} bytes an image may be",
            crate::image::MAX_FILE_BYTES
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("its data is not base64 ({e})"))?;
    crate::image::fit_async(bytes)
        .await
        .map_err(|e| e.to_string())
}

/// A `CallToolResult` as an outcome: `isError` becomes a `TOOL_ERROR` refusal quoting the
/// server's text; a result is size-capped with the shell's spill (the full text saved for
/// `retrieve_tool_result`). Sanitizing and the `<external_content source="mcp:…">`
/// wrapper are applied where every result is finished.
pub(crate) async fn finish_result(
    ctx: &ToolContext,
    tool: &str,
    server: &str,
    result: &Value,
) -> ToolOutcome {
    let (text, images) = result_content(result, ctx.images).await;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(Refusal::new(
            ErrorCode::ToolError,
            format!("`{tool}` reported an error: {}", excerpt(&text)),
            "Read the error; fix the arguments or take another way. Do not repeat the same call unchanged.",
        )
        .with("server", server.to_string()));
    }
    let (capped, spill) = crate::spill::cap_output(&ctx.home, &text, Some(&text));
    let mut out = ToolOutput::new(capped.text).with("server", server.to_string());
    if capped.omitted > 0 {
        out = out.with("omitted_bytes", capped.omitted);
    }
    if let Some(r) = spill {
        out = out.with("spill_ref", r);
    }
    out.images = images;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_count_only_for_trusted_servers() {
        let ro = json!({"name": "t", "annotations": {"readOnlyHint": true}});
        assert_eq!(capability_for(true, &ro), Capability::ReadOnly);
        assert_eq!(capability_for(false, &ro), Capability::Network);
        assert_eq!(
            capability_for(true, &json!({"name": "t"})),
            Capability::Network
        );
    }

    #[tokio::test]
    async fn content_blocks_become_text() {
        let r = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "QUJD", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "mem://x", "text": "body"}}
        ]});
        assert_eq!(
            result_text(&r).await,
            "hello\n[image omitted: image/png, 4 bytes base64]\n[resource link: file:///a (a)]\n[resource mem://x]\nbody"
        );
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";
        let pic = json!({"content": [
            {"type": "text", "text": "chart:"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "image", "data": "QUJD", "mimeType": "image/png"}
        ]});
        let (text, images) = result_content(&pic, true).await;
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].media_type, "image/png");
        assert!(
            text.starts_with("chart:\n[image 1: image/png, 1x1 pixels"),
            "{text}"
        );
        assert!(
            text.contains("[image omitted: image/png, 4 bytes base64; not a PNG"),
            "{text}"
        );
        assert!(result_content(&pic, false).await.1.is_empty());
        let s = json!({"content": [], "structuredContent": {"n": 1}});
        assert_eq!(result_text(&s).await, "{\"n\":1}");
    }

    #[tokio::test]
    async fn one_result_carries_a_bounded_number_of_images() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";
        for n in [500, MAX_RESULT_IMAGES + 1] {
            let blocks: Vec<Value> = (0..n)
                .map(|_| json!({"type": "image", "data": png, "mimeType": "image/png"}))
                .collect();
            let (text, images) = result_content(&json!({ "content": blocks }), true).await;
            assert_eq!(images.len(), MAX_RESULT_IMAGES);
            let rest = n - MAX_RESULT_IMAGES;
            assert!(
                text.contains(&format!("[{rest} more image(s) omitted")),
                "{text}"
            );
            assert_eq!(text.matches("[image ").count(), MAX_RESULT_IMAGES, "{text}");
        }
    }
}
