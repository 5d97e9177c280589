//! `@path` in a task: the workspace file it names is attached to the task, as Claude Code
//! does. A path resolves inside the workspace only (the file tools' containment, CodeSmith's
//! home refused); what it resolves to is an [`Attachment`] of one kind or another, or the
//! reason it cannot be attached. A word after `@` that names no file is sent as typed. An
//! image (PNG, JPEG, GIF, WebP) is attached as an image, downscaled as `exec --image` does.
//!
//! `@SERVER:URI`, where SERVER is a configured MCP server, is a resource mention instead
//! (as in Claude Code): the resource is read from that server as `mcp_resource_read`
//! reads it ([`codesmith_tools::mcp::resources::read`]) and attached finished as that
//! tool's result is ([`codesmith_engine::finish_outcome`]: sanitized, size-capped,
//! wrapped as the server's `<external_content source="mcp:SERVER">`, images as images).
//! Only a configured server's name makes a mention a resource: `@src/main.rs`,
//! `@C:\dir` and `@a:b` stay paths. A resource mention that cannot be attached (the
//! server is not connected, the read fails, or `NAME:SCHEME:…` names no configured
//! server) is a line for the person saying what to do; the task is sent all the same.

use std::io::Read;
use std::path::Path;

use codesmith_tools::ToolContext;
use codesmith_tools::mcp::McpStart;
use serde_json::json;

/// Most bytes of a file attached; a longer file is cut there, and the attachment says so.
pub(crate) const MAX_ATTACHED_BYTES: usize = 256 * 1024;

/// A file `@path` resolved to, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attachment {
    /// A text file (UTF-8): its text, cut at [`MAX_ATTACHED_BYTES`] when `truncated`.
    Text {
        /// The workspace-relative path.
        path: String,
        /// The text.
        text: String,
        /// The file was longer than [`MAX_ATTACHED_BYTES`].
        truncated: bool,
    },
    /// An image, as it is sent (see `codesmith_tools::image::attach_async`).
    Image {
        /// The workspace-relative path.
        path: String,
        /// The image part the task carries.
        part: codesmith_protocol::ImagePart,
        /// It was scaled down from this size (pixels), if it was.
        downscaled_from: Option<(u32, u32)>,
    },
}

impl Attachment {
    /// The text the model reads for this attachment.
    fn model_text(&self) -> String {
        match self {
            Attachment::Text {
                path,
                text,
                truncated,
            } => {
                // The file's own text cannot close the block it is quoted in.
                let inert = |t: &str| t.replace("</attached_file", "&lt;/attached_file");
                let cut = if *truncated {
                    format!(
                        "\n[cut after {} bytes; read the rest with read_file]",
                        text.len()
                    )
                } else {
                    String::new()
                };
                format!(
                    "<attached_file path=\"{}\">\n{}{cut}\n</attached_file>",
                    inert(path).replace('"', "&quot;"),
                    inert(text)
                )
            }
            Attachment::Image { path, .. } => format!(
                "[attached image: {}]",
                path.replace(['[', ']'], "").replace('\n', " ")
            ),
        }
    }

    /// This text attachment cut so that its [`Attachment::model_text`] takes at most
    /// `max` bytes (whole characters kept), marked cut; `None` for an image, or when
    /// less than [`MIN_CUT_BYTES`] of the text would be left.
    fn cut_to(self, max: usize) -> Option<Attachment> {
        let Attachment::Text { path, mut text, .. } = self else {
            return None;
        };
        let whole = Attachment::Text {
            path: path.clone(),
            text: text.clone(),
            truncated: true,
        };
        let overhead = whole.model_text().len().saturating_sub(text.len());
        let mut keep = max.checked_sub(overhead)?;
        if keep < MIN_CUT_BYTES {
            return None;
        }
        keep = keep.min(text.len());
        while !text.is_char_boundary(keep) {
            keep -= 1;
        }
        text.truncate(keep);
        Some(Attachment::Text {
            path,
            text,
            truncated: true,
        })
    }

    /// One line for the person: what was attached.
    fn shown(&self) -> String {
        match self {
            Attachment::Text {
                path,
                text,
                truncated,
            } => format!(
                "attached {path} ({} bytes{})",
                text.len(),
                if *truncated { ", cut" } else { "" }
            ),
            Attachment::Image {
                path,
                part,
                downscaled_from,
            } => match downscaled_from {
                Some((w, h)) => format!(
                    "attached image {path} ({}, downscaled from {w}x{h})",
                    part.media_type
                ),
                None => format!("attached image {path} ({})", part.media_type),
            },
        }
    }
}

/// What `@path` resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A file, attached.
    File(Attachment),
    /// Nothing by that name: the word is sent as typed (`@decorator`, an address).
    NotAFile,
    /// A file that cannot be attached, and why.
    Refused(String),
}

/// Resolves `path` (as typed after `@`) in the workspace of `ctx`; an image is fitted on
/// the blocking pool (`codesmith_tools::image::attach_async`).
pub(crate) async fn resolve(ctx: &ToolContext, path: &str) -> Resolved {
    let resolved = match ctx.resolve(path) {
        Ok(r) => r,
        Err(refusal) if refusal.code == codesmith_tools::ErrorCode::NotFound => {
            return Resolved::NotAFile;
        }
        Err(refusal) => return Resolved::Refused(refusal.message),
    };
    if !resolved.exists {
        return Resolved::NotAFile;
    }
    if !resolved.abs.is_file() {
        return Resolved::Refused(format!("{} is not a file", resolved.rel));
    }
    match read_bounded(&resolved.abs) {
        Ok((bytes, _)) if codesmith_tools::image::sniff(&bytes).is_some() => {
            match codesmith_tools::image::attach_async(&resolved.abs).await {
                Ok(fitted) => Resolved::File(Attachment::Image {
                    path: resolved.rel,
                    downscaled_from: fitted.downscaled().then_some(fitted.original),
                    part: fitted.part,
                }),
                Err(e) => Resolved::Refused(format!("{}: {e}", resolved.rel)),
            }
        }
        Ok((bytes, truncated)) => match String::from_utf8(bytes) {
            Ok(text) => Resolved::File(Attachment::Text {
                path: resolved.rel,
                text,
                truncated,
            }),
            Err(e) if truncated && e.utf8_error().error_len().is_none() => {
                // Cut inside a character: keep the whole ones.
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                Resolved::File(Attachment::Text {
                    path: resolved.rel,
                    text: String::from_utf8(bytes).unwrap_or_default(),
                    truncated,
                })
            }
            Err(_) => Resolved::Refused(format!(
                "{} is not a text file (not UTF-8); name it in the task and let the model \
                 look at it",
                resolved.rel
            )),
        },
        Err(e) => Resolved::Refused(format!("cannot read {}: {e}", resolved.rel)),
    }
}

fn read_bounded(path: &Path) -> std::io::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_ATTACHED_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    let truncated = bytes.len() > MAX_ATTACHED_BYTES;
    bytes.truncate(MAX_ATTACHED_BYTES);
    Ok((bytes, truncated))
}

/// The `@…` words of `task`: a word starting with `@` at the start or after
/// whitespace, without trailing punctuation (`,.;:!?)`).
fn mentions(task: &str) -> Vec<&str> {
    task.split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .map(|w| w.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '\'', '"']))
        .filter(|w| !w.is_empty())
        .collect()
}

/// What one `@word` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mention<'a> {
    /// `@SERVER:URI` with SERVER a configured MCP server's name: that server's resource.
    Resource {
        /// The server's name.
        server: &'a str,
        /// The resource's URI, as typed.
        uri: &'a str,
    },
    /// Anything else: a workspace path, or a word sent as typed.
    Path(&'a str),
}

/// Reads `word` (as typed after `@`) against the `configured` MCP servers' names: a
/// resource only when the part before the first `:` is one of them and a URI follows.
fn parse<'a>(word: &'a str, configured: &[&str]) -> Mention<'a> {
    match word.split_once(':') {
        Some((server, uri)) if !uri.is_empty() && configured.contains(&server) => {
            Mention::Resource { server, uri }
        }
        _ => Mention::Path(word),
    }
}

/// The server name of a word written as a resource mention, `NAME:SCHEME:…` (NAME as a
/// server may be named, SCHEME as RFC 3986 spells one), whatever NAME is; `None` for
/// anything else (`a:b`, `C:\dir`, `src/x.rs`).
fn resource_shaped(word: &str) -> Option<&str> {
    let (name, uri) = word.split_once(':')?;
    let (scheme, rest) = uri.split_once(':')?;
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (codesmith_tools::mcp::schema::is_valid_server_name(name) && scheme_ok && !rest.is_empty())
        .then_some(name)
}

/// Where to look when a resource mention fails.
const SEE_SERVERS: &str = "/doctor or `codesmith mcp list` shows the MCP servers and why one is \
                           not running";

/// An MCP resource attached: the text the model reads, its images and the line shown.
struct Attached {
    text: String,
    images: Vec<codesmith_protocol::ImagePart>,
    shown: String,
}

/// Reads `uri` of the configured server `server` for the task; `Err` is the line the
/// person is shown instead.
async fn resource(
    mcp: &McpStart,
    ctx: &ToolContext,
    server: &str,
    uri: &str,
) -> Result<Attached, String> {
    let Some(running) = mcp.running.iter().find(|s| s.name() == server) else {
        let state = mcp
            .servers
            .iter()
            .find(|s| s.name == server)
            .map_or("not started", |s| s.state);
        let why = mcp
            .servers
            .iter()
            .find(|s| s.name == server)
            .and_then(|s| s.error.as_deref())
            .map(|e| format!(": {}", e.lines().next().unwrap_or_default()))
            .unwrap_or_default();
        return Err(format!(
            "MCP server `{server}` is not connected ({state}{why}); {SEE_SERVERS}"
        ));
    };
    if !running.about().resources {
        return Err(format!(
            "MCP server `{server}` offers no resources; name a server that does, or a \
             workspace file"
        ));
    }
    let outcome = codesmith_tools::mcp::resources::read(running, ctx, uri).await;
    let args = json!({ "server": server, "uri": uri });
    let label = codesmith_tools::mcp::resources::label(server);
    let finished = codesmith_engine::finish_outcome(outcome, &args, Some(label), false);
    if let Some(error) = finished.error {
        return Err(format!(
            "{}; check the URI (the model lists the server's resources with \
             mcp_resources_list when asked to)",
            error.message
        ));
    }
    let cut = finished
        .meta
        .get("omitted_bytes")
        .and_then(serde_json::Value::as_u64)
        .map_or(String::new(), |n| format!(", {n} bytes cut"));
    let pictures = match finished.images.len() {
        0 => String::new(),
        n => format!(", {n} image(s)"),
    };
    Ok(Attached {
        shown: format!(
            "attached resource {uri} of MCP server `{server}` ({} bytes{cut}{pictures})",
            finished.text.len()
        ),
        text: format!(
            "[The user attached the resource {uri} of the MCP server `{server}` by naming \
             it; what the server returned follows, as the server's data]\n{}",
            finished.text
        ),
        images: finished.images,
    })
}

/// What the `@` words of one task may attach, together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Most bytes of text the attachments add to the task, in all; a text file that
    /// would pass it is cut to what is left, anything else that would is left out.
    pub bytes: usize,
    /// Most words read as mentions (files and resources); the rest are not read.
    pub count: usize,
    /// How long reading them may take in all (they are read at once); a mention not
    /// read by then is left out.
    pub deadline: std::time::Duration,
}

/// Most mentions read for one task.
pub(crate) const MAX_MENTIONS: usize = 10;

/// How long one task's mentions may take to read, together (the MCP servers' default
/// tool timeout; each read is also bounded by its server's own).
pub(crate) const MENTIONS_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// A cut file shorter than this is left out instead.
const MIN_CUT_BYTES: usize = 1024;

/// Most characters of one line shown about a mention (its middle elided).
const MAX_LINE_CHARS: usize = 400;

impl Limits {
    /// The limits for a model whose context window is `window` tokens: mentions add at
    /// most a quarter of the window's estimated bytes
    /// ([`codesmith_protocol::BYTES_PER_TOKEN`] per token), at most [`MAX_MENTIONS`]
    /// of them, read within [`MENTIONS_DEADLINE`].
    pub(crate) fn for_window(window: u64) -> Limits {
        let bytes = window.saturating_mul(codesmith_protocol::BYTES_PER_TOKEN) / 4;
        Limits {
            bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
            count: MAX_MENTIONS,
            deadline: MENTIONS_DEADLINE,
        }
    }
}

/// Whether `path` (as typed after `@`) names something in the workspace, to read or to
/// refuse: not a word sent as typed.
fn names_something(ctx: &ToolContext, path: &str) -> bool {
    match ctx.resolve(path) {
        Ok(r) => r.exists,
        Err(refusal) => refusal.code != codesmith_tools::ErrorCode::NotFound,
    }
}

/// What became of one mention that was read.
enum Outcome {
    Resource(Result<Attached, String>),
    File(Resolved),
}

/// One `@` word's place in what the person is shown, in the order typed.
enum Slot<'a> {
    /// A line, known without reading.
    Line(String),
    /// The mention read as the `n`th of the reads.
    Read { word: &'a str, n: usize },
}

/// `task` with what its `@…` words name attached after it: workspace files (see
/// [`resolve`]) and, for `@SERVER:URI` with SERVER one of `mcp`'s configured servers,
/// that server's resource (read through `ctx`, see the module's text). Returns the text,
/// the images among the attachments, and the lines that tell the person what was
/// attached or why not, each one visible line. Each word is attached once. The
/// mentions are read at once, within `limits` (count and deadline), and attached in the
/// order typed while they fit its byte budget; what is left out says how to read it.
/// Dropping the future stops the reads.
pub(crate) async fn expand(
    task: &str,
    ctx: &ToolContext,
    mcp: &McpStart,
    limits: &Limits,
) -> (String, Vec<codesmith_protocol::ImagePart>, Vec<String>) {
    let configured: Vec<&str> = mcp.servers.iter().map(|s| s.name.as_str()).collect();
    let mut seen: Vec<&str> = Vec::new();
    let mut slots = Vec::new();
    let mut reads = Vec::new();
    let mut unread: Vec<String> = Vec::new();
    let deadline = tokio::time::Instant::now() + limits.deadline;
    for word in mentions(task) {
        if seen.contains(&word) {
            continue;
        }
        seen.push(word);
        let shown_word = codesmith_policy::visible_line(word, 200);
        let read = match parse(word, &configured) {
            Mention::Resource { server, uri } => futures::future::Either::Left(async move {
                Outcome::Resource(resource(mcp, ctx, server, uri).await)
            }),
            Mention::Path(path) if names_something(ctx, path) => futures::future::Either::Right(
                async move { Outcome::File(resolve(ctx, path).await) },
            ),
            Mention::Path(path) => {
                if let Some(name) = resource_shaped(path) {
                    slots.push(Slot::Line(format!(
                        "not attached: @{shown_word}: no MCP server `{}` is configured \
                         (a resource is named @SERVER:URI); {SEE_SERVERS}",
                        codesmith_policy::visible_line(name, 64)
                    )));
                }
                continue;
            }
        };
        if reads.len() == limits.count {
            unread.push(format!("@{shown_word}"));
            continue;
        }
        slots.push(Slot::Read {
            word,
            n: reads.len(),
        });
        reads.push(tokio::time::timeout_at(deadline, read));
    }
    let mut done: Vec<Option<Outcome>> = futures::future::join_all(reads)
        .await
        .into_iter()
        .map(Result::ok)
        .collect();
    let mut text = task.to_string();
    let mut images = Vec::new();
    let mut lines = Vec::new();
    let mut left = limits.bytes;
    let over_budget = |size: usize, tool: &str| {
        format!(
            "{size} bytes would pass what mentions may attach to one task ({} bytes, a \
             quarter of the model's context window); ask the model to read it with {tool}",
            limits.bytes
        )
    };
    for slot in slots {
        let (word, n) = match slot {
            Slot::Line(line) => {
                lines.push(line);
                continue;
            }
            Slot::Read { word, n } => (word, n),
        };
        let shown_word = codesmith_policy::visible_line(word, 200);
        let not_attached = |why: &str| format!("not attached: @{shown_word}: {why}");
        match done.get_mut(n).and_then(Option::take) {
            None => lines.push(not_attached(&format!(
                "not read within {} s; name it again, or ask the model to read it",
                limits.deadline.as_secs()
            ))),
            Some(Outcome::Resource(Ok(attached))) => {
                let size = attached.text.len() + 2;
                if size > left {
                    lines.push(not_attached(&over_budget(size, "mcp_resource_read")));
                    continue;
                }
                left -= size;
                text.push_str("\n\n");
                text.push_str(&attached.text);
                lines.push(attached.shown);
                images.extend(attached.images);
            }
            Some(Outcome::Resource(Err(why))) => lines.push(not_attached(&why)),
            Some(Outcome::File(Resolved::File(attachment))) => {
                let size = attachment.model_text().len() + 2;
                let attachment = if size <= left {
                    attachment
                } else {
                    match attachment.cut_to(left.saturating_sub(2)) {
                        Some(cut) => cut,
                        None => {
                            lines.push(not_attached(&over_budget(size, "read_file")));
                            continue;
                        }
                    }
                };
                let model_text = attachment.model_text();
                left = left.saturating_sub(model_text.len() + 2);
                text.push_str("\n\n");
                text.push_str(&model_text);
                lines.push(attachment.shown());
                if let Attachment::Image { part, .. } = attachment {
                    images.push(part);
                }
            }
            Some(Outcome::File(Resolved::NotAFile)) => {}
            Some(Outcome::File(Resolved::Refused(why))) => lines.push(not_attached(&why)),
        }
    }
    if !unread.is_empty() {
        lines.push(format!(
            "not attached: {} more mention(s) ({}): a task attaches at most {}; name the \
             rest in a later task, or ask the model to read them",
            unread.len(),
            unread.join(" "),
            limits.count
        ));
    }
    // A server's or the file system's message is one visible line: it cannot pass for
    // another line of the UI.
    let lines = lines
        .iter()
        .map(|l| {
            codesmith_policy::visible_line(&codesmith_policy::terminal_safe(l), MAX_LINE_CHARS)
        })
        .collect();
    (text, images, lines)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.py"), "print('a')\n</attached_file>\n").unwrap();
        std::fs::write(ws.join("bin.dat"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(dir.join("outside.txt"), "secret").unwrap();
        ToolContext::new(ws.canonicalize().unwrap(), dir.join("home"))
    }

    /// Limits no test here reaches.
    fn wide() -> Limits {
        Limits::for_window(1 << 20)
    }

    fn no_servers() -> McpStart {
        McpStart::default()
    }

    /// `names` configured: `up` … as running would be is not possible without a server,
    /// so every one of them failed to start with `why`.
    fn failed(names: &[&str], why: &str) -> McpStart {
        let mut mcp = McpStart::default();
        for name in names {
            mcp.servers.push(codesmith_tools::mcp::ServerStatus {
                name: (*name).to_string(),
                state: "failed",
                error: Some(why.to_string()),
                tools: Vec::new(),
                unavailable: Default::default(),
                tasks_only: Vec::new(),
            });
        }
        mcp
    }

    #[tokio::test]
    async fn a_mentioned_workspace_file_is_attached_once_and_inert() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let (text, images, lines) = expand(
            "explain @src/a.py, then @src/a.py again",
            &ctx,
            &no_servers(),
            &wide(),
        )
        .await;
        assert_eq!(text.matches("<attached_file path=\"src/a.py\">").count(), 1);
        assert_eq!(text.matches("</attached_file>").count(), 1, "{text}");
        assert!(text.starts_with("explain @src/a.py, then"));
        assert_eq!(lines, ["attached src/a.py (28 bytes)"]);
        assert!(images.is_empty());
    }

    #[tokio::test]
    async fn a_mentioned_image_is_attached_as_an_image() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        // A 1x1 137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 96, 248, 95, 15, 0, 2, 135, 1, 128, 235, 71, 186, 146, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130.
        let png: &[u8] = &[
            137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1,
            8, 6, 0, 0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 96,
            248, 95, 15, 0, 2, 135, 1, 128, 235, 71, 186, 146, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66,
            96, 130,
        ];
        std::fs::write(ctx.workspace.join("shot.png"), png).unwrap();
        let (text, images, lines) =
            expand("what is wrong in @shot.png?", &ctx, &no_servers(), &wide()).await;
        assert_eq!(images.len(), 1, "{lines:?}");
        assert_eq!(images[0].media_type, "image/png");
        assert!(text.ends_with("[attached image: shot.png]"), "{text}");
        assert_eq!(lines, ["attached image shot.png (image/png)"]);
    }

    #[tokio::test]
    async fn other_words_are_sent_as_typed_and_what_cannot_be_attached_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let (text, images, lines) =
            expand("use @property and mail a@b.c", &ctx, &no_servers(), &wide()).await;
        assert_eq!(text, "use @property and mail a@b.c");
        assert!(lines.is_empty() && images.is_empty());
        assert!(
            matches!(resolve(&ctx, "bin.dat").await, Resolved::Refused(w) if w.contains("not a text file"))
        );
        assert!(
            matches!(resolve(&ctx, "src").await, Resolved::Refused(w) if w.contains("not a file"))
        );
        assert!(matches!(
            resolve(&ctx, "../outside.txt").await,
            Resolved::Refused(_)
        ));
    }

    #[test]
    fn only_a_configured_servers_name_makes_a_resource_mention() {
        let servers = ["docs", "C"];
        assert_eq!(
            parse("docs:file:///notes.md", &servers),
            Mention::Resource {
                server: "docs",
                uri: "file:///notes.md"
            }
        );
        // The URI is everything after the first colon, colons and all.
        assert_eq!(
            parse("docs:test://static/resource/1", &servers),
            Mention::Resource {
                server: "docs",
                uri: "test://static/resource/1"
            }
        );
        // Paths stay paths: no colon, another name before it, nothing after it.
        for word in [
            "src/main.rs",
            "a:b",
            "D:\\dir\\x.rs",
            "docs:",
            "Docs:x://y",
            "src/docs:x",
        ] {
            assert_eq!(parse(word, &servers), Mention::Path(word), "{word}");
        }
        // A configured server whose name looks like a drive letter wins: it was configured.
        assert!(matches!(
            parse("C:x://y", &servers),
            Mention::Resource { server: "C", .. }
        ));
        assert_eq!(parse("docs:x", &[]), Mention::Path("docs:x"));
    }

    #[test]
    fn a_word_shaped_as_a_resource_mention_is_known_by_its_uri_scheme() {
        assert_eq!(resource_shaped("nosuch:file:///x"), Some("nosuch"));
        assert_eq!(resource_shaped("srv:test://static/1"), Some("srv"));
        for word in [
            "a:b",
            "C:\\dir",
            "src/x.rs",
            "x:1:2",
            "bad name:file:///x",
            "x:file:",
        ] {
            assert_eq!(resource_shaped(word), None, "{word}");
        }
    }

    #[tokio::test]
    async fn a_resource_mention_that_cannot_be_read_is_a_note_and_the_task_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        std::fs::write(ctx.workspace.join("a:b"), "colon file\n").unwrap();
        let mcp = failed(&["docs"], "boom: missing API key\nmore");
        let task = "read @docs:file:///n.md and @nosuch:test://x/1 and @a:b, @x:y";
        let (text, images, lines) = expand(task, &ctx, &mcp, &wide()).await;
        assert!(images.is_empty());
        // Nothing of the failed mentions reaches the model but the words as typed.
        assert!(text.starts_with(task), "{text}");
        assert!(!text.contains("external_content"), "{text}");
        // A file whose name has a colon is still a file.
        assert!(
            text.contains("<attached_file path=\"a:b\">\ncolon file"),
            "{text}"
        );
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(
            lines[0],
            "not attached: @docs:file:///n.md: MCP server `docs` is not connected (failed: \
             boom: missing API key); /doctor or `codesmith mcp list` shows the MCP servers \
             and why one is not running"
        );
        assert!(
            lines[1].starts_with(
                "not attached: @nosuch:test://x/1: no MCP server `nosuch` is configured"
            ) && lines[1].contains("codesmith mcp list"),
            "{lines:?}"
        );
        assert_eq!(lines[2], "attached a:b (11 bytes)");
    }

    #[tokio::test]
    async fn a_task_reads_at_most_the_count_of_mentions_and_says_which_were_left() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let mut task = String::from("look at");
        for n in 1..=12 {
            std::fs::write(ctx.workspace.join(format!("f{n}.txt")), format!("F{n}\n")).unwrap();
            task.push_str(&format!(" @f{n}.txt"));
        }
        // Words that name nothing do not count.
        task.push_str(" @property");
        let (text, _, lines) = expand(&task, &ctx, &no_servers(), &wide()).await;
        assert_eq!(
            text.matches("<attached_file").count(),
            MAX_MENTIONS,
            "{text}"
        );
        assert!(text.contains("F10\n") && !text.contains("F11\n"), "{text}");
        assert_eq!(lines.len(), MAX_MENTIONS + 1, "{lines:?}");
        assert_eq!(
            lines[MAX_MENTIONS],
            "not attached: 2 more mention(s) (@f11.txt @f12.txt): a task attaches at most 10; \
             name the rest in a later task, or ask the model to read them"
        );
    }

    #[tokio::test]
    async fn what_mentions_attach_stays_within_the_byte_budget() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        std::fs::write(ctx.workspace.join("a.txt"), "a".repeat(2000)).unwrap();
        std::fs::write(ctx.workspace.join("b.txt"), "b".repeat(5000)).unwrap();
        std::fs::write(ctx.workspace.join("c.txt"), "c".repeat(2000)).unwrap();
        let limits = Limits {
            bytes: 4096,
            ..wide()
        };
        let task = "see @a.txt @b.txt @c.txt";
        let (text, _, lines) = expand(task, &ctx, &no_servers(), &limits).await;
        assert!(text.len() - task.len() <= 4096, "{}", text.len());
        // The first whole, the second cut to what is left, the third left out.
        assert_eq!(lines[0], "attached a.txt (2000 bytes)");
        assert!(
            lines[1].starts_with("attached b.txt (") && lines[1].ends_with(", cut)"),
            "{lines:?}"
        );
        assert!(text.contains("[cut after ") && text.contains("read the rest with read_file]"));
        assert!(
            lines[2].starts_with("not attached: @c.txt: ")
                && lines[2].contains(
                    "(4096 bytes, a quarter of the model's context window); ask \
                                      the model to read it with read_file"
                ),
            "{lines:?}"
        );
        assert!(!text.contains("ccc"), "{text}");
        assert_eq!(Limits::for_window(32_768).bytes, 32_768);
    }
}
