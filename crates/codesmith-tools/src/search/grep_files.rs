//! `grep_files`: regex search over the workspace with ripgrep's crates.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
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
use crate::fs::encoding::{Encoding, Sniffed, sniff};
use crate::fs::os_error::workspace_refusal;
use crate::fs::text::{MAX_TEXT_BYTES, not_found};
use crate::syntax_check::syntax::cut_chars;
use crate::tool::join_refusal;
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::walk::{MAX_FILE_BYTES, Scope, SkipRule, glob_predicate, rel, scoped_builder};

/// Default and maximum number of matching lines shown (a binary file that matches takes one
/// line).
pub(super) const MAX_RESULTS: usize = 100;
/// Longest matching line shown whole, in characters; a longer one is shown as a window
/// around the match.
const MAX_LINE_CHARS: usize = 300;
/// Characters shown on each side of the match in a long line's window.
const WINDOW_CHARS: usize = 100;

const EXAMPLE: &str = r#"{"pattern": "fn main"}"#;

const DESCRIPTION: &str = "Search file contents in the workspace with a regular expression (Rust regex \
syntax) and get `path:line: text` for each matching line. Use this instead of grep -r, rg, ag or git \
grep in the shell. Files are decoded the way read_file decodes them (UTF-16/UTF-32 with or without a \
BOM, Windows-1252): matches in them are shown decoded, with line numbers of the decoded text, and the \
result names each file's encoding. A line over 300 characters is shown as a window of about 100 characters either side \
of the match, with its column: `path:line:column: …text…`. A binary file (one with NUL bytes) that \
matches is listed as `path: binary file matches`, never dumped. By default it leaves out .git, \
node_modules, target, dist, build, __pycache__, .venv, *.min.js, files over 10 MB and anything \
.gitignore ignores, and the result counts and names what it left out; include_ignored: true searches \
them (except .git), and a glob that names them (\"*.min.js\") searches those. Every match is counted \
before the list is cut at max_results lines (default and maximum 100): meta.total_matches counts \
matches (several on one line count separately), meta.matching_lines counts lines, and meta.truncated \
tells you whether to narrow the search with path or glob.\n\
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
        // Searching a pipe, socket or device would block or never end; saying "no
        // matches" without searching it would be untrue.
        if std::fs::metadata(&path.abs).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
            return Err(crate::fs::text::not_regular(&path.rel));
        }
        let root = ctx
            .workspace
            .canonicalize()
            .map_err(|e| workspace_refusal(&ctx.workspace, &e))?;
        let request = Request {
            root,
            start: path.abs,
            skip: ctx.private_home(),
            matcher: matcher(&args.pattern, args.case_insensitive)?,
            glob: args.glob.clone(),
            include_ignored: args.include_ignored,
            max: args
                .max_results
                .unwrap_or(MAX_RESULTS)
                .clamp(1, MAX_RESULTS),
        };
        tokio::task::spawn_blocking(move || grep(&request))
            .await
            .map_err(|e| join_refusal("grep_files", &e))?
    }
}

fn matcher(pattern: &str, case_insensitive: bool) -> Result<RegexMatcher, Refusal> {
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| {
            Refusal::new(
                ErrorCode::InvalidArguments,
                format!("The pattern is not a valid regular expression: {e}"),
                "Escape regex metacharacters such as ( [ { . * + ? with a backslash, or search \
                 for a simpler literal.",
            )
            .with("pattern", pattern)
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
    /// Matches (regex occurrences) in the file.
    matches: usize,
    /// Lines with at least one match.
    matching_lines: usize,
    /// The file is binary (as `read_file` decides): only "binary file matches" is shown.
    binary: bool,
    /// The encoding the file was decoded from, when not UTF-8.
    decoded: Option<Encoding>,
}

/// Collects one file's matches.
struct FileSink<'a> {
    matcher: &'a RegexMatcher,
    max: usize,
    /// Matching lines.
    count: usize,
    /// Matches on those lines.
    matches: usize,
    lines: Vec<(u64, Option<usize>, String)>,
    binary: bool,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        self.count += 1;
        let line = m.bytes().strip_suffix(b"\n").unwrap_or(m.bytes());
        let mut n = 0usize;
        let _ = self.matcher.find_iter(line, |_| {
            n += 1;
            true
        });
        self.matches += n.max(1);
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
        walker.overrides(ob.build().map_err(|e| bad_glob(glob, &e))?);
    }
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let seen: Mutex<(Vec<PathBuf>, Vec<PathBuf>)> = Mutex::new((Vec::new(), Vec::new()));
    let max = req.max;
    let size_cap = !req.include_ignored;
    // Files are opened below a handle of the workspace, so a directory swapped for a
    // symlink during the walk cannot make the search read outside.
    let handle = Root::open(&req.root).map_err(|e| workspace_refusal(&req.root, &e))?;
    let handle = &handle;
    walker.build_parallel().run(|| {
        let matcher = req.matcher.clone();
        // Decoding is `sniff`'s alone (the one read_file uses); the searcher's own BOM
        // sniffing and transcoding stay off.
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::convert(0))
            .bom_sniffing(false)
            .line_number(true)
            .build();
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
            let len = match file.metadata() {
                Ok(m) if size_cap && m.len() > MAX_FILE_BYTES => {
                    scope
                        .skipped
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .add(SkipRule::TooLarge, rel(root, entry.path()));
                    return WalkState::Continue;
                }
                Ok(m) => {
                    use std::os::unix::fs::MetadataExt;
                    if m.nlink() > 1 {
                        scope
                            .skipped
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .add(SkipRule::Linked, rel(root, entry.path()));
                        return WalkState::Continue;
                    }
                    m.len()
                }
                Err(_) => return WalkState::Continue,
            };
            let rel_path = rel(root, entry.path());
            let secret =
                |head: Option<&[u8]>| codesmith_policy::secret_file(&rel_path, head).is_some();
            let mut sink = FileSink {
                matcher: &matcher,
                max,
                count: 0,
                matches: 0,
                lines: Vec::new(),
                binary: false,
            };
            let Some(decoded) = search_one(&mut searcher, &matcher, file, len, &secret, &mut sink)
            else {
                scope
                    .skipped
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .add(SkipRule::Secret, rel_path);
                return WalkState::Continue;
            };
            if sink.count > 0 {
                let fh = FileHits {
                    path: rel(root, entry.path()),
                    lines: sink.lines,
                    matches: sink.matches,
                    matching_lines: sink.count,
                    binary: sink.binary,
                    decoded,
                };
                hits.lock().unwrap_or_else(PoisonError::into_inner).push(fh);
            }
            WalkState::Continue
        })
    });
    let (paths, dirs) = seen.into_inner().unwrap_or_else(PoisonError::into_inner);
    let paths: HashSet<PathBuf> = paths.into_iter().collect();
    scope.count_ignored(&req.start, &paths, &dirs);
    let mut files = hits.into_inner().unwrap_or_else(PoisonError::into_inner);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(scope.annotate(render(files, max, &req.root, &req.start)))
}

/// Searches one opened file of `len` bytes into `sink` and returns the encoding it was
/// decoded from when not UTF-8; `None` (nothing searched) when `secret` says the file
/// holds one, judged by its first [`crate::files::concerns::HEAD_BYTES`] (by its path alone
/// for a file too large to read whole).
///
/// A file up to [`MAX_TEXT_BYTES`] is classified and decoded by [`sniff`], the function
/// `read_file` uses, so both tools agree on what is text and what it says: decoded text is
/// searched (line numbers are those of the decoded text), and a binary file is searched as
/// raw bytes (NUL bytes as line breaks) only to say whether it matches. A larger file (only
/// searched with `include_ignored`; `read_file` refuses it) is searched as raw bytes, with a
/// NUL byte making it binary.
fn search_one(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    mut file: std::fs::File,
    len: u64,
    secret: &dyn Fn(Option<&[u8]>) -> bool,
    sink: &mut FileSink<'_>,
) -> Option<Option<Encoding>> {
    use std::io::{Read, Seek};
    if len > MAX_TEXT_BYTES {
        if secret(None) || large_secret(&mut file, secret) {
            return None;
        }
        let _ = searcher.search_file(matcher, &file, &mut *sink);
        return Some(None);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    if (&mut file)
        .take(MAX_TEXT_BYTES + 1)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return Some(None);
    }
    let head = usize::try_from(crate::files::concerns::HEAD_BYTES).unwrap_or(usize::MAX);
    if secret(Some(&bytes[..bytes.len().min(head)])) {
        return None;
    }
    Some(match sniff(bytes) {
        Sniffed::Text { text, encoding, .. } => {
            // Judged whole and decoded, as `read_file` judges it: a key after the first
            // 64 KiB, or in a UTF-16 file, is found.
            if secret(Some(text.as_bytes())) {
                return None;
            }
            let _ = searcher.search_slice(matcher, text.as_bytes(), &mut *sink);
            (encoding != Encoding::Utf8).then_some(encoding)
        }
        Sniffed::Binary { .. } => {
            sink.binary = true;
            if file.rewind().is_ok() {
                let _ = searcher.search_file(matcher, &file, &mut *sink);
            }
            None
        }
    })
}

/// Whether a file too large to decode holds a secret anywhere by its content, read in
/// chunks that overlap by more than a key header's length; the file is rewound for the
/// search. A read error counts as a secret (fail closed).
fn large_secret(file: &mut std::fs::File, secret: &dyn Fn(Option<&[u8]>) -> bool) -> bool {
    use std::io::{Read, Seek};
    const CHUNK: usize = 1 << 20;
    const OVERLAP: usize = 256;
    let mut buf = vec![0u8; CHUNK + OVERLAP];
    let mut kept = 0;
    loop {
        let n = match file.read(&mut buf[kept..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => return true,
        };
        let filled = kept + n;
        if secret(Some(&buf[..filled])) {
            return true;
        }
        kept = filled.min(OVERLAP);
        buf.copy_within(filled - kept..filled, 0);
    }
    file.rewind().is_err()
}

fn render(files: Vec<FileHits>, max: usize, root: &Path, start: &Path) -> ToolOutput {
    let file_count = files.len();
    let binary_files = files.iter().filter(|f| f.binary).count();
    let total: usize = files.iter().map(|f| f.matches).sum();
    let matching_lines: usize = files
        .iter()
        .filter(|f| !f.binary)
        .map(|f| f.matching_lines)
        .sum();
    // What a complete list would show: every matching line, one line per binary file.
    let entries = matching_lines + binary_files;
    let mut out = String::new();
    let mut shown = 0;
    let decoded: Vec<(&str, Encoding)> = files
        .iter()
        .filter_map(|f| Some((f.path.as_str(), f.decoded?)))
        .collect();
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
    let truncated = entries > shown;
    let scope = match rel(root, start) {
        s if s.is_empty() => ".".to_string(),
        s => s,
    };
    if total == 0 {
        out = format!("No matches in \"{scope}\".");
    } else {
        if !decoded.is_empty() {
            let names: Vec<String> = decoded
                .iter()
                .map(|(p, e)| format!("{p} ({})", e.name()))
                .collect();
            out.push_str(&format!(
                "[Decoded before searching, as read_file shows them (line numbers count lines of \
                 the decoded text): {}.]\n",
                names.join(", ")
            ));
        }
        if truncated {
            out.push_str(&format!(
                "[{total} match{} on {matching_lines} line{} in {file_count} file{}; showing the \
                 first {shown} lines. Narrow the search with path or glob, or a more specific \
                 pattern.]",
                if total == 1 { "" } else { "es" },
                if matching_lines == 1 { "" } else { "s" },
                if file_count == 1 { "" } else { "s" },
            ));
        } else if out.ends_with('\n') {
            out.pop();
        }
    }
    let decoded_json: serde_json::Map<String, Value> = decoded
        .iter()
        .map(|(p, e)| ((*p).to_string(), json!(e.name())))
        .collect();
    ToolOutput::new(out)
        .with("total_matches", total)
        .with("matching_lines", matching_lines)
        .with("shown", shown)
        .with("files_with_matches", file_count)
        .with("binary_files_with_matches", binary_files)
        .with("decoded", Value::Object(decoded_json))
        .with("truncated", truncated)
}

/// Runs a grep over `root` directly (benchmark entry point): `pattern` as a regex, every
/// rule of the tool applied. Returns the total match count (`meta.total_matches`).
pub fn grep_count(root: &Path, pattern: &str) -> Result<usize, Refusal> {
    let req = Request {
        root: root.to_path_buf(),
        start: root.to_path_buf(),
        skip: None,
        matcher: matcher(pattern, false)?,
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
