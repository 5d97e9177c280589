//! Output spill: oversized shell output is cut to head + tail for the model, and the full
//! text is saved under `$CODESMITH_HOME/tool_outputs/` for `retrieve_tool_result`.
//!
//! Figures: a 30,000-byte
//! budget split 22,000 head / 8,000 tail (the tail keeps error messages and test summaries),
//! the full output written atomically, spill names carrying the pid (the directory is
//! shared between processes), files kept for 7 days and removed at start-up.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

/// Output budget in bytes for one shell result.
pub const OUTPUT_CAP: usize = 30_000;
/// Bytes kept from the start of an oversized output.
pub const HEAD_BYTES: usize = 22_000;
/// Bytes kept from the end of an oversized output.
pub const TAIL_BYTES: usize = 8_000;
/// How long spill files are kept.
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// Default page size of `retrieve_tool_result`, in bytes.
pub const PAGE_BYTES: usize = 20_000;

/// The spill directory under a CodeSmith home.
pub fn spill_dir(home: &Path) -> PathBuf {
    home.join("tool_outputs")
}

/// True when `name` is a single safe path component: only `[A-Za-z0-9._-]`, bounded length,
/// no dot at either end (the shared guard in `codesmith-policy`).
pub fn is_safe_ref(name: &str) -> bool {
    codesmith_policy::is_safe_name(name)
}

/// Text cut to head + tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    /// What the model sees: the whole text, or head + marker + tail.
    pub text: String,
    /// Bytes left out of the middle (0 when nothing was cut).
    pub omitted: usize,
}

/// Keeps the first `head` and last `tail` bytes of `text` when it is longer than
/// `head + tail`, cutting on char boundaries; the middle is replaced by `marker(omitted)`.
pub fn head_tail(text: &str, head: usize, tail: usize, marker: impl Fn(usize) -> String) -> Capped {
    if text.len() <= head + tail {
        return Capped {
            text: text.to_string(),
            omitted: 0,
        };
    }
    let mut h = head;
    while !text.is_char_boundary(h) {
        h -= 1;
    }
    let mut t = text.len() - tail;
    while !text.is_char_boundary(t) {
        t += 1;
    }
    let omitted = t - h;
    let mut out = String::with_capacity(h + (text.len() - t) + 200);
    out.push_str(&text[..h]);
    out.push_str(&marker(omitted));
    out.push_str(&text[t..]);
    Capped { text: out, omitted }
}

/// Writes `text` atomically (temp file, fsync, rename; mode 0600) as a new spill file and
/// returns its ref (`shell-<pid>-<millis>-<n>.txt`).
///
/// Errors: the host I/O error (the caller logs it and withholds the retrieval pointer).
pub fn write_spill(home: &Path, text: &str) -> std::io::Result<String> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let dir = spill_dir(home);
    crate::private::create_dir_all(&dir)?;
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let n = SERIAL.fetch_add(1, Ordering::Relaxed);
    let name = format!("shell-{}-{millis}-{n}.txt", std::process::id());
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(dir.join(&name)).map_err(|e| e.error)?;
    Ok(name)
}

/// Turns raw terminal output into what the model reads, then caps it to the shell budget.
///
/// `shown` is reduced by [`codesmith_policy::screen_text`] first: escape sequences and
/// control characters are removed and carriage-return overdraw is resolved to what a
/// terminal would finally show, so colours, titles and progress bars neither reach the model
/// nor eat the budget. When the result is cut and `full` is given, `full` (the whole raw
/// output the cut text belongs to; usually `shown` itself) is spilled byte for byte, escapes
/// included, and the marker names the ref to pass to `retrieve_tool_result`. `full == None`
/// (a running task's poll) cuts without saving and says what is saved when the
/// task ends. Returns the capped text and the spill ref, if one was written.
pub fn cap_output(home: &Path, shown: &str, full: Option<&str>) -> (Capped, Option<String>) {
    cap_parts(home, shown, 0, "", full)
}

/// Like [`cap_output`], for output already cut in two: `head` (its start), `gap` bytes left
/// out, and `tail` (its end). Each part goes through the terminal filter on its own; the
/// result keeps at most [`HEAD_BYTES`] of `head` and [`TAIL_BYTES`] of `tail`, and one
/// marker counts everything left out (`gap` and what the cut removed). With `gap == 0` and
/// an empty `tail` this is [`cap_output`].
pub fn cap_parts(
    home: &Path,
    head: &str,
    gap: usize,
    tail: &str,
    full: Option<&str>,
) -> (Capped, Option<String>) {
    let marker = |omitted: usize, reference: &Option<String>| match (reference, full.is_some()) {
        (Some(r), _) => format!(
            "\n[... {omitted} bytes omitted. Full output saved; call retrieve_tool_result \
             {{\"ref\": \"{r}\"}} to page through it.]\n"
        ),
        (None, true) => format!(
            "\n[... {omitted} bytes omitted. The full output could not be saved; rerun the \
             command with its output filtered (grep, tail) or redirected to a file.]\n"
        ),
        (None, false) => format!(
            "\n[... {omitted} bytes omitted. The command (task or session) is still \
             running; when it ends, its first and last 512 KiB of output are saved for \
             retrieve_tool_result.]\n"
        ),
    };
    let head = codesmith_policy::screen_text(head);
    if gap == 0 && tail.is_empty() {
        let shown = head.as_ref();
        if shown.len() <= OUTPUT_CAP {
            return (
                head_tail(shown, HEAD_BYTES, TAIL_BYTES, |_| String::new()),
                None,
            );
        }
        let reference = full.and_then(|f| write_spill(home, f).ok());
        let capped = head_tail(shown, HEAD_BYTES, TAIL_BYTES, |o| marker(o, &reference));
        return (capped, reference);
    }
    let tail = codesmith_policy::screen_text(tail);
    let mut h = head.len().min(HEAD_BYTES);
    while !head.is_char_boundary(h) {
        h -= 1;
    }
    let mut t = tail.len().saturating_sub(TAIL_BYTES);
    while !tail.is_char_boundary(t) {
        t += 1;
    }
    let omitted = gap + (head.len() - h) + t;
    let reference = full.and_then(|f| write_spill(home, f).ok());
    let mut text = String::with_capacity(h + (tail.len() - t) + 200);
    text.push_str(&head[..h]);
    text.push_str(&marker(omitted, &reference));
    text.push_str(&tail[t..]);
    (Capped { text, omitted }, reference)
}

/// Removes spill files older than [`RETENTION`]; call once at start-up. Returns how many
/// were removed. A missing directory is not an error.
pub fn cleanup_old(home: &Path) -> std::io::Result<usize> {
    cleanup_older_than(home, RETENTION)
}

/// Removes spill files whose modification time is older than `age`.
pub fn cleanup_older_than(home: &Path, age: Duration) -> std::io::Result<usize> {
    let entries = match std::fs::read_dir(spill_dir(home)) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|d| d >= age);
        if meta.is_file() && old && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// `retrieve_tool_result`: pages through a spilled output.
#[derive(Debug, Clone, Copy, Default)]
pub struct RetrieveToolResult;

const RETRIEVE_DESCRIPTION: &str = "Read the full output of an earlier command whose result \
was cut (the marker says \"call retrieve_tool_result {\\\"ref\\\": ...}\"). Pages by byte \
offset: pass the next_offset from the previous page to continue. Use this instead of \
re-running a long command to see the omitted middle. Examples: {\"ref\": \
\"shell-123-1700000000000-0.txt\"}; {\"ref\": \"shell-123-1700000000000-0.txt\", \"offset\": \
20000, \"limit\": 20000}.";

#[async_trait]
impl Tool for RetrieveToolResult {
    fn name(&self) -> &'static str {
        "retrieve_tool_result"
    }

    fn description(&self) -> &'static str {
        RETRIEVE_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "ref": {"type": "string", "description": "The ref named in the truncation marker."},
                "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start at (default 0)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": OUTPUT_CAP, "description": "Bytes per page (default 20000, max 30000)."}
            },
            "required": ["ref"],
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
        let reference = args.get("ref").and_then(Value::as_str).unwrap_or("");
        if !is_safe_ref(reference) {
            return Err(Refusal::new(
                ErrorCode::InvalidArguments,
                format!("{reference:?} is not a spill ref."),
                "Copy the ref exactly as the truncation marker gives it, e.g. \
                 \"shell-123-1700000000000-0.txt\".",
            )
            .with("ref", reference));
        }
        let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(PAGE_BYTES, |l| (l as usize).clamp(1, OUTPUT_CAP));
        let path = spill_dir(&ctx.home).join(reference);
        let text = match tokio::fs::read(&path).await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Refusal::new(
                    ErrorCode::NotFound,
                    format!("No saved output named {reference}."),
                    "Saved outputs are kept for 7 days; rerun the command if it is gone.",
                )
                .with("ref", reference));
            }
            Err(e) => {
                return Err(crate::fs::os_error::io_refusal(
                    &path.to_string_lossy(),
                    crate::fs::os_error::Access::Read,
                    &e,
                )
                .with("ref", reference));
            }
        };
        Ok(page(&text, offset, limit).with("ref", reference))
    }
}

/// One page of `text` starting at byte `offset` (moved forward to a char boundary), at most
/// `limit` bytes (moved back to a char boundary, at least one char). Offsets count the saved
/// (raw) bytes; the page itself is reduced by [`codesmith_policy::screen_text`], like the
/// output it was cut from. Past the end the page is `[NO CONTENT]`, not an error.
fn page(text: &str, offset: usize, limit: usize) -> ToolOutput {
    let total = text.len();
    if offset >= total {
        return ToolOutput::new("[NO CONTENT] (offset is past the end of the saved output)")
            .with("total_bytes", total)
            .with("offset", offset)
            .with("next_offset", Value::Null);
    }
    let mut start = offset;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let mut end = (start + limit).min(total);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end == start {
        end = text[start..]
            .chars()
            .next()
            .map_or(total, |c| start + c.len_utf8());
    }
    let next = if end < total { json!(end) } else { Value::Null };
    ToolOutput::new(codesmith_policy::screen_text(&text[start..end]).as_ref())
        .with("total_bytes", total)
        .with("offset", start)
        .with("next_offset", next)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn safe_refs() {
        assert!(is_safe_ref("shell-1-2-3.txt"));
        for bad in ["", ".", "..", ".hidden", "a.", "a/b", "../x", "a b", "é"] {
            assert!(!is_safe_ref(bad), "{bad:?}");
        }
    }

    #[test]
    fn head_tail_respects_char_boundaries() {
        let text = "é".repeat(100); // 200 bytes
        let c = head_tail(&text, 11, 11, |n| format!("[{n}]"));
        assert!(c.text.starts_with(&"é".repeat(5)));
        assert!(c.text.ends_with(&format!("[180]{}", "é".repeat(5))));
        assert_eq!(c.omitted, 180);
    }

    #[test]
    fn cap_spills_and_pages_back() {
        let home = tempfile::tempdir().unwrap();
        let full: String = (0..5000).map(|i| format!("line {i:05}\n")).collect();
        assert!(full.len() > OUTPUT_CAP);
        let (capped, reference) = cap_output(home.path(), &full, Some(&full));
        let reference = reference.unwrap();
        assert!(capped.text.starts_with("line 00000\n"));
        assert!(capped.text.ends_with("line 04999\n"));
        assert!(capped.text.contains(&reference));
        assert!(capped.text.len() < OUTPUT_CAP + 300);
        let saved = std::fs::read_to_string(spill_dir(home.path()).join(&reference)).unwrap();
        assert_eq!(saved, full);
        // Paging reassembles the whole output.
        let mut offset = 0;
        let mut rebuilt = String::new();
        loop {
            let p = page(&saved, offset, 7000);
            rebuilt.push_str(p.output.as_str().unwrap());
            match p.meta["next_offset"].as_u64() {
                Some(n) => offset = n as usize,
                None => break,
            }
        }
        assert_eq!(rebuilt, full);
        assert!(
            page(&saved, full.len() + 5, 10)
                .output
                .as_str()
                .unwrap()
                .starts_with("[NO CONTENT]")
        );
    }

    #[test]
    fn escapes_never_reach_the_model_but_stay_in_the_spill() {
        let home = tempfile::tempdir().unwrap();
        let raw = "\x1b[31mRED\x1b[0m\n\x1b]0;title\x07x\n";
        let (capped, reference) = cap_output(home.path(), raw, Some(raw));
        assert_eq!(capped.text, "RED\nx\n");
        assert!(reference.is_none());
        // A progress bar of many redraws is one line, far under the budget.
        let bar: String = (0..=20_000).map(|i| format!("\r{i:>5}/20000")).collect();
        let (capped, reference) = cap_output(home.path(), &bar, Some(&bar));
        assert_eq!(capped.text, "20000/20000");
        assert!(reference.is_none());
        // Cut output spills the raw bytes; pages of it are reduced again.
        let big: String = (0..5000)
            .map(|i| format!("\x1b[32mline {i:05}\x1b[0m\n"))
            .collect();
        let (capped, reference) = cap_output(home.path(), &big, Some(&big));
        let reference = reference.unwrap();
        assert!(capped.text.starts_with("line 00000\nline 00001\n"));
        assert!(!capped.text.contains('\x1b'));
        let saved = std::fs::read(spill_dir(home.path()).join(&reference)).unwrap();
        assert_eq!(saved, big.as_bytes());
        let p = page(&big, 0, 40);
        assert_eq!(p.output.as_str().unwrap(), "line 00000\nline 00001\n");
    }

    #[test]
    fn running_poll_does_not_spill() {
        let home = tempfile::tempdir().unwrap();
        let full = "x".repeat(OUTPUT_CAP + 1);
        let (capped, reference) = cap_output(home.path(), &full, None);
        assert!(reference.is_none());
        assert!(capped.text.contains("still running"));
        assert!(!spill_dir(home.path()).exists());
    }

    #[test]
    fn cleanup_removes_only_old_files() {
        let home = tempfile::tempdir().unwrap();
        let r = write_spill(home.path(), "x").unwrap();
        assert_eq!(cleanup_old(home.path()).unwrap(), 0);
        assert_eq!(cleanup_older_than(home.path(), Duration::ZERO).unwrap(), 1);
        assert!(!spill_dir(home.path()).join(r).exists());
    }

    #[tokio::test]
    async fn retrieve_refuses_unsafe_refs() {
        let home = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(home.path().to_path_buf(), home.path().to_path_buf());
        let err = RetrieveToolResult
            .call(&ctx, json!({"ref": "../approvals.toml"}))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
        let err = RetrieveToolResult
            .call(&ctx, json!({"ref": "nope.txt"}))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::NotFound);
    }
}
