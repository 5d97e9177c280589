//! `read_file`: one page of a text file, numbered, with the next call spelled out.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::paths::ResolvedPath;
use crate::fs::text::{LoadedText, TextFile, load_bytes_or_image, not_text, sha256_hex};
use crate::{Capability, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::args::parse;

/// Lines returned when `max_lines` is not given.
pub(super) const DEFAULT_LINES: usize = 200;
/// Hard cap on lines per call.
pub(super) const MAX_LINES: usize = 500;
/// Hard cap on visible text per call, in bytes.
pub(super) const MAX_VISIBLE_BYTES: usize = 16 * 1024;

const EXAMPLE: &str = r#"{"path": "src/main.rs"}"#;

const DESCRIPTION: &str = "Read a text file from the workspace. Use this instead of cat, head, tail or \
sed -n '..p' in the shell: it needs no approval and tells you how to read on. A small file (up to 200 \
lines and 16 KB) comes back exactly as it is. A larger file, or any call with start_line or max_lines, \
comes back one page at a time with numbered lines (`     7│ text`; the number and `│ ` are not part of \
the file, never copy them into edit_file). A page is at most 500 lines and 16 KB (200 lines by default); \
a cut page ends with the exact arguments for the next call. Reading past the end returns [NO CONTENT] \
and the line count. Where a result shows a sha256 (one-shot use), edit_file accepts it as a freshness check. \
Read a file before you edit or overwrite it. UTF-16 and UTF-32 files (with or without BOM) \
and legacy Latin-1/Windows-1252 files are decoded, with a first line saying so; a binary file (one \
with NUL bytes, such as a tar archive) is refused with its size and type. A PNG, JPEG, GIF or WebP \
image comes back as the image itself when your model reads images (larger ones downscaled, and the \
result says so); otherwise its type and size.\n\
Examples: {\"path\": \"src/main.rs\"} (first 200 lines); \
{\"path\": \"src/big.rs\", \"start_line\": 201, \"max_lines\": 200} (the next page after a cut read)";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    start_line: Option<usize>,
    max_lines: Option<usize>,
}

/// The `read_file` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadFile;

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Workspace-relative file path."},
                "start_line": {"type": "integer", "minimum": 1, "description": "1-based first line to show (default 1)."},
                "max_lines": {"type": "integer", "minimum": 1, "maximum": MAX_LINES, "description": "Lines to show (default 200, at most 500)."}
            },
            "required": ["path"],
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
        let args: Args = parse("read_file", args, EXAMPLE)?;
        read(ctx, &args).await
    }
}

async fn read(ctx: &ToolContext, args: &Args) -> ToolOutcome {
    let path = ctx.resolve_for_read(&args.path)?;
    let bytes = load_bytes_or_image(&path)?;
    if let Some(media_type) = crate::image::sniff(&bytes) {
        return read_image(ctx, &path, media_type, bytes).await;
    }
    let sha256 = sha256_hex(&bytes);
    let file = TextFile::decode_owned(bytes).map_err(|e| not_text(&path.rel, &e))?;
    let loaded = LoadedText { file, sha256 };
    ctx.freshness.mark_fresh(&path.abs);
    // A secret nobody approved reading reaches the model with its values masked (and
    // without a digest, which would let a short secret be guessed offline).
    let secret = (!ctx.person_approved)
        .then(|| crate::files::concerns::secret_in(&path, Some(loaded.file.text.as_bytes())))
        .flatten();
    let masked = secret.map(|kind| codesmith_policy::mask_secret_text(kind, &loaded.file.text));
    let text = masked.as_ref().unwrap_or(&loaded.file.text);
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let ranged = args.start_line.is_some() || args.max_lines.is_some();
    let mut base = ToolOutput::new(Value::Null)
        .with("path", path.rel.as_str())
        .with("total_lines", total);
    base = match secret {
        Some(kind) => base.with("masked", kind.describe()),
        None => base.with("sha256", loaded.sha256.as_str()),
    };
    let note = match (loaded.file.note(), secret) {
        (note, Some(kind)) => Some(format!(
            "{}[\"{}\" is {}: its values are shown as {}. Nobody approved reading it; \
             the user can, in an interactive session (`--approval suggest`).]",
            note.map(|n| format!("{n}\n")).unwrap_or_default(),
            path.rel,
            kind.describe(),
            codesmith_policy::REDACTED
        )),
        (note, None) => note,
    };
    if loaded.file.note().is_some() {
        base = base.with("encoding", loaded.file.encoding.name());
    }
    let noted = |out: String| match &note {
        Some(n) => Value::String(format!("{n}\n{out}")),
        None => Value::String(out),
    };
    if !ranged && total <= DEFAULT_LINES && text.len() <= MAX_VISIBLE_BYTES {
        return Ok(ToolOutput {
            output: noted(text.clone()),
            ..base.with("truncated", false)
        });
    }
    let start = args.start_line.unwrap_or(1).max(1);
    let max = args.max_lines.unwrap_or(DEFAULT_LINES).clamp(1, MAX_LINES);
    if start > total {
        let out = format!(
            "[NO CONTENT] start_line={start} is past the end of \"{}\", which has {total} lines.",
            path.rel
        );
        return Ok(ToolOutput {
            output: Value::String(out),
            ..base.with("truncated", false)
        });
    }
    let (page, end, cut) = render_page(&lines, start, max, &path.rel);
    let mut out = match &note {
        Some(n) => format!("{n}\n{page}"),
        None => page,
    };
    // A cut line is as much "not the whole file" as a missing one.
    let truncated = end < total || cut;
    if end < total {
        out.push_str(&format!(
            "\n[Showing lines {start}-{end} of {total}. To continue, call read_file with \
             path=\"{}\" start_line={} max_lines={max}]",
            path.rel,
            end + 1
        ));
    }
    Ok(ToolOutput {
        output: Value::String(out),
        ..base
            .with("start_line", start)
            .with("end_line", end)
            .with("truncated", truncated)
    })
}

/// An image file: the image itself, fitted to the providers' limits, when the session's
/// model reads images ([`ToolContext::images`]); otherwise a text naming its type and
/// size. Either way the result's text says what the file is. The image is fitted on the
/// blocking pool ([`crate::image::fit_async`]).
async fn read_image(
    ctx: &ToolContext,
    path: &ResolvedPath,
    media_type: &str,
    bytes: Vec<u8>,
) -> ToolOutcome {
    let size = bytes.len();
    let base = ToolOutput::new(Value::Null)
        .with("path", path.rel.as_str())
        .with("media_type", media_type)
        .with("bytes", size);
    if !ctx.images {
        return Ok(ToolOutput {
            output: Value::String(format!(
                "\"{}\" is an image ({media_type}, {size} bytes). The model of this session \
                 does not read images (the local model, or one configured with images = \
                 false), so it is not shown.",
                path.rel
            )),
            ..base.with("image", "omitted")
        });
    }
    let fitted = crate::image::fit_async(bytes).await.map_err(|e| {
        crate::Refusal::new(
            crate::ErrorCode::InvalidArguments,
            format!("\"{}\" looks like {media_type} but {e}.", path.rel),
            "Check the file with exec_shell (`file PATH`); read it as text only if it is text.",
        )
        .with("path", path.rel.as_str())
    })?;
    let (width, height) = fitted.sent;
    Ok(ToolOutput {
        output: Value::String(format!(
            "[image \"{}\": {}] The image follows this result.",
            path.rel,
            fitted.describe()
        )),
        ..base
            .with("width", width)
            .with("height", height)
            .with("downscaled", fitted.downscaled())
            .with_image(fitted.part)
    })
}

/// Numbers lines `start..` (1-based) until `max` lines or the byte cap; returns the page,
/// the last line shown and whether that line was cut. The first line is always shown (cut
/// if it alone is too long, with the shell command that prints the rest of it from the
/// exact byte where the cut fell: `cut -c` counts bytes in GNU coreutils, not characters).
fn render_page(lines: &[&str], start: usize, max: usize, rel: &str) -> (String, usize, bool) {
    let mut out = String::new();
    let mut end = start - 1;
    let mut was_cut = false;
    for (i, line) in lines.iter().enumerate().skip(start - 1).take(max) {
        let n = i + 1;
        let mut row = format!("{n:>6}│ {line}\n");
        if out.len() + row.len() > MAX_VISIBLE_BYTES {
            if end >= start {
                break;
            }
            let room = MAX_VISIBLE_BYTES.saturating_sub(16);
            let shown = room / 4;
            // The byte where the `shown`-th character ends, when the line is longer.
            if let Some((at, _)) = line.char_indices().nth(shown) {
                was_cut = true;
                let quoted = format!("'{}'", rel.replace('\'', "'\\''"));
                row = format!(
                    "{n:>6}│ {}… [line cut at {shown} characters; to see the rest run \
                     exec_shell `sed -n '{n}p' {quoted} | tail -c +{}`]\n",
                    &line[..at],
                    at + 1
                );
            }
        }
        out.push_str(&row);
        end = n;
    }
    if out.ends_with('\n') {
        out.pop();
    }
    (out, end, was_cut)
}
