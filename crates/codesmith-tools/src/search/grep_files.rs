//! `grep_files`: regex search over the workspace with ripgrep's crates.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::beneath::Root;
use crate::fs::text::not_found;
use crate::gate::syntax::cut_chars;
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::walk::{MAX_FILE_BYTES, builder, rel};

/// Default and maximum number of matching lines shown.
pub const MAX_RESULTS: usize = 100;
/// Longest matching line shown, in characters.
const MAX_LINE_CHARS: usize = 300;

const EXAMPLE: &str = r#"{"pattern": "fn main"}"#;

const DESCRIPTION: &str = "Search file contents in the workspace with a regular expression (Rust regex \
syntax) and get `path:line: text` for each matching line. Use this instead of grep -r, rg, ag or git \
grep in the shell. It skips .git, node_modules, target, dist, build, __pycache__, .venv, *.min.js, \
binary files, files over 10 MB and anything .gitignore ignores. Every match is counted before the list \
is cut at max_results (default and maximum 100): meta.total_matches and meta.truncated tell you whether \
to narrow the search with path or glob.\n\
Examples: {\"pattern\": \"fn main\"}; {\"pattern\": \"todo!\\\\(\", \"path\": \"crates\", \"glob\": \"*.rs\", \
\"case_insensitive\": true}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    max_results: Option<usize>,
}

/// The `grep_files` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct GrepFiles;

#[async_trait]
impl Tool for GrepFiles {
    fn name(&self) -> &'static str {
        "grep_files"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)."},
                "path": {"type": "string", "description": "File or directory to search, workspace-relative (default: the whole workspace)."},
                "glob": {"type": "string", "description": "Only search files whose names match this glob, e.g. \"*.rs\"."},
                "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "Matching lines to show (default and maximum 100)."}
            },
            "required": ["pattern"],
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
        let args: Args = crate::files::parse_args("grep_files", args, EXAMPLE)?;
        let path = ctx.resolve(args.path.as_deref().unwrap_or("."))?;
        if !path.exists {
            return Err(not_found(&path.rel));
        }
        let root = ctx
            .workspace
            .canonicalize()
            .map_err(|_| Refusal::internal())?;
        let request = Request {
            root,
            start: path.abs,
            skip: ctx.private_home(),
            matcher: matcher(&args)?,
            glob: args.glob.clone(),
            max: args
                .max_results
                .unwrap_or(MAX_RESULTS)
                .clamp(1, MAX_RESULTS),
        };
        tokio::task::spawn_blocking(move || grep(&request))
            .await
            .map_err(|_| Refusal::internal())?
    }
}

fn matcher(args: &Args) -> Result<RegexMatcher, Refusal> {
    RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| {
            Refusal::new(
                ErrorCode::InvalidArguments,
                format!("The pattern is not a valid regular expression: {e}"),
                "Escape regex metacharacters such as ( [ { . * + ? with a backslash, or search \
                 for a simpler literal.",
            )
            .with("pattern", args.pattern.as_str())
        })
}

/// A search, owned so it can run on a blocking thread.
pub(crate) struct Request {
    pub(crate) root: PathBuf,
    pub(crate) start: PathBuf,
    /// A directory never searched (CodeSmith's home inside the workspace).
    pub(crate) skip: Option<PathBuf>,
    pub(crate) matcher: RegexMatcher,
    pub(crate) glob: Option<String>,
    pub(crate) max: usize,
}

/// Matching lines of one file (at most `max` kept; all counted).
struct FileHits {
    path: String,
    lines: Vec<(u64, String)>,
}

/// Runs the search. Public to the crate for the benchmark.
pub(crate) fn grep(req: &Request) -> ToolOutcome {
    let mut walker = builder(&req.start, None, req.skip.clone());
    if let Some(glob) = &req.glob {
        let mut ob = OverrideBuilder::new(&req.start);
        ob.add(glob).map_err(|e| {
            Refusal::new(
                ErrorCode::InvalidArguments,
                format!("The glob \"{glob}\" is not valid: {e}"),
                "Use a file-name glob such as \"*.rs\" or \"src/**/*.ts\".",
            )
        })?;
        walker.overrides(ob.build().map_err(|_| Refusal::internal())?);
    }
    let total = AtomicUsize::new(0);
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let max = req.max;
    // Files are opened below a handle of the workspace, so a directory swapped for a
    // symlink during the walk cannot make the search read outside.
    let handle = Root::open(&req.root).map_err(|_| Refusal::internal())?;
    let handle = &handle;
    walker.build_parallel().run(|| {
        let matcher = req.matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        let total = &total;
        let hits = &hits;
        let root = &req.root;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Ok(inner) = entry.path().strip_prefix(root) else {
                return WalkState::Continue;
            };
            let Ok(file) = handle.open_read(inner) else {
                return WalkState::Continue;
            };
            if file.metadata().map_or(true, |m| m.len() > MAX_FILE_BYTES) {
                return WalkState::Continue;
            }
            let mut lines = Vec::new();
            let mut count = 0usize;
            let _ = searcher.search_file(
                &matcher,
                &file,
                UTF8(|n, line| {
                    count += 1;
                    if lines.len() < max {
                        let text = line.trim_end_matches(['\n', '\r']);
                        lines.push((n, cut_chars(text, MAX_LINE_CHARS)));
                    }
                    Ok(true)
                }),
            );
            if count > 0 {
                total.fetch_add(count, Ordering::Relaxed);
                let fh = FileHits {
                    path: rel(root, entry.path()),
                    lines,
                };
                hits.lock().unwrap_or_else(PoisonError::into_inner).push(fh);
            }
            WalkState::Continue
        })
    });
    let total = total.into_inner();
    let mut files = hits.into_inner().unwrap_or_else(PoisonError::into_inner);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(render(files, total, max, &req.root, &req.start))
}

fn render(files: Vec<FileHits>, total: usize, max: usize, root: &Path, start: &Path) -> ToolOutput {
    let file_count = files.len();
    let mut out = String::new();
    let mut shown = 0;
    'outer: for f in &files {
        for (n, text) in &f.lines {
            if shown == max {
                break 'outer;
            }
            out.push_str(&format!("{}:{n}: {text}\n", f.path));
            shown += 1;
        }
    }
    let truncated = total > shown;
    let scope = match rel(root, start) {
        s if s.is_empty() => ".".to_string(),
        s => s,
    };
    if total == 0 {
        out = format!("No matches in \"{scope}\".");
    } else if truncated {
        out.push_str(&format!(
            "[{total} matching lines in {file_count} files; showing the first {shown}. Narrow the \
             search with path or glob, or a more specific pattern.]"
        ));
    } else if out.ends_with('\n') {
        out.pop();
    }
    ToolOutput::new(out)
        .with("total_matches", total)
        .with("shown", shown)
        .with("files_with_matches", file_count)
        .with("truncated", truncated)
}

/// Runs a grep over `root` directly (benchmark entry point): `pattern` as a regex, every
/// rule of the tool applied. Returns the total matching-line count.
pub fn grep_count(root: &Path, pattern: &str) -> Result<usize, Refusal> {
    let req = Request {
        root: root.to_path_buf(),
        start: root.to_path_buf(),
        skip: None,
        matcher: RegexMatcherBuilder::new()
            .line_terminator(Some(b'\n'))
            .build(pattern)
            .map_err(|_| Refusal::internal())?,
        glob: None,
        max: MAX_RESULTS,
    };
    let out = grep(&req)?;
    Ok(out
        .meta
        .get("total_matches")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize)
}
