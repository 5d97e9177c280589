//! `grep_files`: regex search over the workspace with ripgrep's crates.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use globset::GlobBuilder;
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::beneath::Root;
use crate::fs::text::not_found;
use crate::gate::syntax::cut_chars;
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::walk::{MAX_FILE_BYTES, Scope, SkipRule, glob_predicate, rel, scoped_builder};

/// Default and maximum number of matching lines shown.
pub const MAX_RESULTS: usize = 100;
/// Longest matching line shown whole, in characters; a longer one is shown as a window
/// around the match.
const MAX_LINE_CHARS: usize = 300;
/// Characters shown on each side of the match in a long line's window.
const WINDOW_CHARS: usize = 100;

const EXAMPLE: &str = r#"{"pattern": "fn main"}"#;

const DESCRIPTION: &str = "Search file contents in the workspace with a regular expression (Rust regex \
syntax) and get `path:line: text` for each matching line. Use this instead of grep -r, rg, ag or git \
grep in the shell. A line over 300 characters is shown as a window of about 100 characters either side \
of the match, with its column: `path:line:column: …text…`. A binary file (one with NUL bytes) that \
matches is listed as `path: binary file matches`, never dumped. By default it leaves out .git, \
node_modules, target, dist, build, __pycache__, .venv, *.min.js, files over 10 MB and anything \
.gitignore ignores, and the result counts and names what it left out; include_ignored: true searches \
them (except .git), and a glob that names them (\"*.min.js\") searches those. Every match is counted \
before the list is cut at max_results (default and maximum 100): meta.total_matches and meta.truncated \
tell you whether to narrow the search with path or glob.\n\
Examples: {\"pattern\": \"fn main\"}; {\"pattern\": \"todo!\\\\(\", \"path\": \"crates\", \"glob\": \"*.rs\", \
\"case_insensitive\": true}; {\"pattern\": \"apiKey\", \"glob\": \"*.min.js\"}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    max_results: Option<usize>,
    #[serde(default)]
    include_ignored: bool,
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
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "Matching lines to show (default and maximum 100)."},
                "include_ignored": {"type": "boolean", "description": "Also search what is left out by default: ignored files, excluded directories, minified and large files (default false)."}
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
            include_ignored: args.include_ignored,
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
    pub(crate) include_ignored: bool,
    pub(crate) max: usize,
}

/// Matching lines of one file (at most `max` kept; all counted).
struct FileHits {
    path: String,
    /// Line number, column of the match when the line is shown as a window, text.
    lines: Vec<(u64, Option<usize>, String)>,
    /// The file has NUL bytes: only "binary file matches" is shown.
    binary: bool,
}

/// Collects one file's matches.
struct FileSink<'a> {
    matcher: &'a RegexMatcher,
    max: usize,
    count: usize,
    lines: Vec<(u64, Option<usize>, String)>,
    binary: bool,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        self.count += 1;
        if !self.binary && self.lines.len() < self.max {
            let text = String::from_utf8_lossy(m.bytes());
            let text = text.trim_end_matches(['\n', '\r']);
            let (column, shown) = preview(self.matcher, text);
            self.lines
                .push((m.line_number().unwrap_or(0), column, shown));
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        self.lines.clear();
        Ok(true)
    }
}

/// A matching line as shown: whole when short; else a window of [`WINDOW_CHARS`] characters
/// either side of the first match, with `…` at cut ends and the match's 1-based column (in
/// characters).
fn preview(matcher: &RegexMatcher, line: &str) -> (Option<usize>, String) {
    if line.chars().count() <= MAX_LINE_CHARS {
        return (None, line.to_string());
    }
    let (start, end) = match matcher.find(line.as_bytes()) {
        Ok(Some(m)) => (m.start(), m.end()),
        _ => (0, 0),
    };
    let column = line[..start].chars().count() + 1;
    let before: String = {
        let mut v: Vec<char> = line[..start].chars().rev().take(WINDOW_CHARS).collect();
        v.reverse();
        v.into_iter().collect()
    };
    let matched = cut_chars(&line[start..end], WINDOW_CHARS);
    let after: String = line[end..].chars().take(WINDOW_CHARS).collect();
    let head = if before.len() < start { "…" } else { "" };
    let tail = if end + after.len() < line.len() {
        "…"
    } else {
        ""
    };
    (
        Some(column),
        format!("{head}{before}{matched}{after}{tail}"),
    )
}

/// Paths a walk's visitor saw, merged into the shared list when the visitor is dropped.
struct Seen<'a> {
    paths: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    out: &'a Mutex<(Vec<PathBuf>, Vec<PathBuf>)>,
}

impl Drop for Seen<'_> {
    fn drop(&mut self) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.0.append(&mut self.paths);
        out.1.append(&mut self.dirs);
    }
}

/// Runs the search. Public to the crate for the benchmark.
pub(crate) fn grep(req: &Request) -> ToolOutcome {
    let mut scope = Scope::new(&req.root);
    scope.include_ignored = req.include_ignored;
    scope.skip = req.skip.clone();
    let bad_glob = |glob: &str, e: &dyn std::fmt::Display| {
        Refusal::new(
            ErrorCode::InvalidArguments,
            format!("The glob \"{glob}\" is not valid: {e}"),
            "Use a file-name glob such as \"*.rs\" or \"src/**/*.ts\".",
        )
    };
    if let Some(glob) = &req.glob {
        let by_path = glob.contains('/');
        let m = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| bad_glob(glob, &e))?
            .compile_matcher();
        scope.want(glob, glob_predicate(m, by_path, req.start.clone()));
    }
    let mut walker = scoped_builder(&req.start, None, &scope);
    if let Some(glob) = &req.glob {
        let mut ob = OverrideBuilder::new(&req.start);
        ob.add(glob).map_err(|e| bad_glob(glob, &e))?;
        walker.overrides(ob.build().map_err(|_| Refusal::internal())?);
    }
    let total = AtomicUsize::new(0);
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let seen: Mutex<(Vec<PathBuf>, Vec<PathBuf>)> = Mutex::new((Vec::new(), Vec::new()));
    let max = req.max;
    let size_cap = !req.include_ignored;
    // Files are opened below a handle of the workspace, so a directory swapped for a
    // symlink during the walk cannot make the search read outside.
    let handle = Root::open(&req.root).map_err(|_| Refusal::internal())?;
    let handle = &handle;
    walker.build_parallel().run(|| {
        let matcher = req.matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::convert(0))
            .line_number(true)
            .build();
        let total = &total;
        let hits = &hits;
        let root = &req.root;
        let scope = &scope;
        let mut local = Seen {
            paths: Vec::new(),
            dirs: Vec::new(),
            out: &seen,
        };
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            local.paths.push(entry.path().to_path_buf());
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                local.dirs.push(entry.path().to_path_buf());
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Ok(inner) = entry.path().strip_prefix(root) else {
                return WalkState::Continue;
            };
            let Ok(file) = handle.open_read(inner) else {
                return WalkState::Continue;
            };
            match file.metadata() {
                Ok(m) if size_cap && m.len() > MAX_FILE_BYTES => {
                    scope
                        .skipped
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .add(SkipRule::TooLarge, rel(root, entry.path()));
                    return WalkState::Continue;
                }
                Ok(_) => {}
                Err(_) => return WalkState::Continue,
            }
            let mut sink = FileSink {
                matcher: &matcher,
                max,
                count: 0,
                lines: Vec::new(),
                binary: false,
            };
            let _ = searcher.search_file(&matcher, &file, &mut sink);
            if sink.count > 0 {
                total.fetch_add(if sink.binary { 1 } else { sink.count }, Ordering::Relaxed);
                let fh = FileHits {
                    path: rel(root, entry.path()),
                    lines: sink.lines,
                    binary: sink.binary,
                };
                hits.lock().unwrap_or_else(PoisonError::into_inner).push(fh);
            }
            WalkState::Continue
        })
    });
    let (paths, dirs) = seen.into_inner().unwrap_or_else(PoisonError::into_inner);
    let paths: HashSet<PathBuf> = paths.into_iter().collect();
    scope.count_ignored(&req.start, &paths, &dirs);
    let total = total.into_inner();
    let mut files = hits.into_inner().unwrap_or_else(PoisonError::into_inner);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(scope.annotate(render(files, total, max, &req.root, &req.start)))
}

fn render(files: Vec<FileHits>, total: usize, max: usize, root: &Path, start: &Path) -> ToolOutput {
    let file_count = files.len();
    let binary_files = files.iter().filter(|f| f.binary).count();
    let mut out = String::new();
    let mut shown = 0;
    'outer: for f in &files {
        if f.binary {
            if shown == max {
                break 'outer;
            }
            out.push_str(&format!(
                "{}: binary file matches (read it with exec_shell: `file`, `xxd | head`)\n",
                f.path
            ));
            shown += 1;
            continue;
        }
        for (n, column, text) in &f.lines {
            if shown == max {
                break 'outer;
            }
            match column {
                Some(c) => out.push_str(&format!("{}:{n}:{c}: {text}\n", f.path)),
                None => out.push_str(&format!("{}:{n}: {text}\n", f.path)),
            }
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
        .with("binary_files_with_matches", binary_files)
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
        include_ignored: false,
        max: MAX_RESULTS,
    };
    let out = grep(&req)?;
    Ok(out
        .meta
        .get("total_matches")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize)
}
