//! `fim_edit`: fill in the middle. The span between a `prefix` anchor and the `suffix`
//! anchor after it is replaced by `middle`, behind the gate every writer shares
//! (freshness, syntax check, rustfmt disclosure, atomic write, snapshot: see
//! [`super::commit::commit_text`]).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::lock::path_lock;
use crate::fs::text::convert_line_endings;
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::args::{invalid, parse};
use super::commit::commit_text;
use super::edit_file::{Pick, WithClosest, checked_file, in_ending, no_match, select};
use super::matching::{Strategy, line_of, locate};

const EXAMPLE: &str = r#"{"path": "src/lib.rs", "prefix": "fn area(w: u32, h: u32) -> u32 {\n", "suffix": "\n}", "middle": "    w * h"}"#;

const DESCRIPTION: &str = "Fill in the middle of a file: replace the text between a `prefix` \
anchor and the first `suffix` anchor after it with `middle`, keeping both anchors. Use it to \
rewrite the body of a function or block when you know the lines around it but not (or not \
exactly) the old body; use edit_file when you can quote the old text. `prefix` must match the \
file exactly once (pass occurrence=N to pick one); an empty prefix means the start of the file, \
an empty suffix its end (not both). The same checks as edit_file apply: the file must have been \
read in this session (or pass its sha256), and Rust/TOML/JSON that parsed before must still parse. \
Example: {\"path\": \"src/lib.rs\", \"prefix\": \"fn area(w: u32, h: u32) -> u32 {\\n\", \
\"suffix\": \"\\n}\", \"middle\": \"    w * h\"}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    prefix: String,
    suffix: String,
    middle: String,
    occurrence: Option<i64>,
    sha256: Option<String>,
    #[serde(default)]
    force_fresh: bool,
}

/// The `fim_edit` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct FimEdit;

#[async_trait]
impl Tool for FimEdit {
    fn name(&self) -> &'static str {
        "fim_edit"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Workspace-relative file path."},
                "prefix": {"type": "string", "description": "Text just before the span to replace, copied from read_file output without line numbers (\"\" for the start of the file)."},
                "suffix": {"type": "string", "description": "Text just after the span (its first match after prefix; \"\" for the end of the file)."},
                "middle": {"type": "string", "description": "The new text between prefix and suffix."},
                "occurrence": {"type": "integer", "minimum": 1, "description": "Which match of prefix to use, 1-based, when it matches several places."},
                "sha256": {"type": "string", "description": "Expected SHA-256 of the whole file, or its first 12 or more hex digits."}
            },
            "required": ["path", "prefix", "suffix", "middle"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> Capability {
        Capability::WritesFiles
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutcome {
        let args: Args = parse("fim_edit", args, EXAMPLE)?;
        fill(ctx, &args)
    }
}

fn fill(ctx: &ToolContext, args: &Args) -> ToolOutcome {
    if args.prefix.is_empty() && args.suffix.is_empty() {
        return Err(invalid(
            "prefix and suffix are both empty, so the whole file would be replaced.",
            "Quote the text around the span to replace, or use write_file to replace the whole \
             file.",
        ));
    }
    if let Some(n) = args.occurrence
        && n < 1
    {
        return Err(invalid(
            format!("occurrence={n} is not valid; it counts matches from 1."),
            "Pass occurrence=1 for the first match of prefix, 2 for the second, and so on.",
        ));
    }
    crate::files::args::allow_force_fresh(
        ctx,
        args.force_fresh,
        "Read the file with read_file first, then edit it.",
    )?;
    let path = ctx.resolve_for_write(&args.path)?;
    let lock = path_lock(&path.abs);
    let _guard = lock.lock();
    let file = checked_file(ctx, &path, args.sha256.as_deref(), args.force_fresh)?;
    let hay = file.text.as_str();
    let rel = path.rel.as_str();
    // Where the middle starts: after the chosen match of prefix.
    let (start, strategy) = if args.prefix.is_empty() {
        (0, Strategy::Exact)
    } else {
        let needle = in_ending(&args.prefix, file.ending);
        let found = locate(hay, &needle, "")
            .ok_or_else(|| no_match(rel, "prefix").with_closest(hay, &args.prefix))?;
        let count = found.spans.len();
        let chosen = match args.occurrence {
            Some(n) => select(&found.spans, Pick::Nth(n.max(1) as usize), rel, false)?,
            None if count > 1 => {
                return Err(Refusal::new(
                    ErrorCode::AmbiguousMatch,
                    format!(
                        "The prefix text matched {count} locations in \"{rel}\"; pass \
                         occurrence=N (1..={count}) to pick one, or quote a longer prefix."
                    ),
                    "Add lines before the span to make prefix unique, or pass occurrence=N.",
                )
                .with("path", rel)
                .with("field", "prefix")
                .with("matches", count)
                .with("valid_occurrences", format!("1..={count}")));
            }
            None => found.spans.clone(),
        };
        (chosen[0].1, found.strategy)
    };
    // Where it ends: at the first match of suffix after that.
    let end = if args.suffix.is_empty() {
        hay.len()
    } else {
        let needle = in_ending(&args.suffix, file.ending);
        let found = locate(&hay[start..], &needle, "")
            .ok_or_else(|| no_match(rel, "suffix").with_closest(&hay[start..], &args.suffix))?;
        start + found.spans[0].0
    };
    let middle = convert_line_endings(&args.middle, file.ending);
    let mut new_text = String::with_capacity(hay.len() + middle.len());
    new_text.push_str(&hay[..start]);
    new_text.push_str(&middle);
    new_text.push_str(&hay[end..]);
    if new_text == file.text {
        return Err(invalid(
            "The middle is already what the file holds between prefix and suffix; nothing would \
             change.",
            "If the file is already right, no edit is needed; otherwise check middle.",
        )
        .with("path", rel));
    }
    let first_line = line_of(hay, start);
    let report = commit_text(ctx, &path, Some(&file), &new_text, None)?;
    let mut msg = format!(
        "Edited \"{rel}\": filled {} bytes between prefix and suffix starting at line \
         {first_line} (replacing {} bytes).",
        middle.len(),
        end - start
    );
    for note in [strategy.note(), report.formatted_note()]
        .into_iter()
        .flatten()
    {
        msg.push(' ');
        msg.push_str(note);
    }
    let change =
        report
            .diff
            .clone()
            .into_change(rel, codesmith_protocol::ChangeKind::Modified, None);
    Ok(ToolOutput::new(msg)
        .with_changes([change])
        .with("path", rel)
        .with("sha256", report.sha256.as_str())
        .with("first_line", first_line)
        .with("replaced_bytes", end - start)
        .with("match", strategy.id())
        .with("formatted", report.formatted))
}
