//! `file_search`: find files by name with a glob.

use std::collections::HashSet;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::os_error::workspace_refusal;
use crate::fs::text::not_found;
use crate::tool::join_refusal;
use crate::{Capability, ErrorCode, Refusal, Tool, ToolContext, ToolOutcome, ToolOutput};

use super::walk::{Scope, glob_predicate, rel, scoped_builder};

/// Paths shown when `max_results` is not given.
pub(super) const DEFAULT_RESULTS: usize = 20;
/// Largest `max_results` honoured (smaller values are clamped up to 1).
pub(super) const MAX_RESULTS: usize = 200;

const EXAMPLE: &str = r#"{"pattern": "*.rs"}"#;

const DESCRIPTION: &str = "Find files by name with a glob pattern and get their workspace-relative paths, \
sorted. Use this instead of find, fd, or ls -R in the shell. A pattern without `/` matches file names \
anywhere (\"*.rs\", \"Cargo.toml\"); a pattern with `/` matches the path from the search root \
(\"src/**/*.ts\"). By default it leaves out .git, node_modules, target, dist, build, __pycache__, .venv, \
*.min.js and anything .gitignore ignores, and the result counts and names what it left out; \
include_ignored: true lists them too (except .git), and a pattern that names minified files itself \
(\"**/*.min.js\") finds them. All matches are counted before the list is cut at max_results (default 20, \
1 to 200): meta.total_matches and meta.truncated say whether there is more.\n\
Examples: {\"pattern\": \"*.rs\"}; {\"pattern\": \"**/tests/*.py\", \"path\": \"backend\", \"max_results\": 100}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path: Option<String>,
    max_results: Option<i64>,
    #[serde(default)]
    include_ignored: bool,
}

/// The `file_search` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct FileSearch;

#[async_trait]
impl Tool for FileSearch {
    fn name(&self) -> &'static str {
        "file_search"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob over file names (\"*.rs\") or paths (\"src/**/*.ts\")."},
                "path": {"type": "string", "description": "Directory to search, workspace-relative (default: the whole workspace)."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "Paths to show (default 20, at most 200)."},
                "include_ignored": {"type": "boolean", "description": "Also list what is left out by default: ignored files, excluded directories, minified files (default false)."}
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
        let args: Args = crate::files::parse_args("file_search", args, EXAMPLE)?;
        let path = ctx.resolve(args.path.as_deref().unwrap_or("."))?;
        if !path.exists {
            return Err(not_found(&path.rel));
        }
        let glob = compile(&args.pattern)?;
        let by_path = args.pattern.contains('/');
        let max = args
            .max_results
            .unwrap_or(DEFAULT_RESULTS as i64)
            .clamp(1, MAX_RESULTS as i64) as usize;
        let root = ctx
            .workspace
            .canonicalize()
            .map_err(|e| workspace_refusal(&ctx.workspace, &e))?;
        let start = path.abs;
        let include_ignored = args.include_ignored;
        let skip = ctx.private_home();
        let pattern = args.pattern.clone();
        tokio::task::spawn_blocking(move || {
            let hit = glob_predicate(glob, by_path, start.clone());
            let mut scope = Scope::new(&root);
            scope.include_ignored = include_ignored;
            scope.skip = skip;
            scope.want(&pattern, hit.clone());
            let mut found = Vec::new();
            let mut seen = HashSet::new();
            let mut dirs = Vec::new();
            for entry in scoped_builder(&start, None, &scope).build().flatten() {
                seen.insert(entry.path().to_path_buf());
                if entry.file_type().is_some_and(|t| t.is_dir()) {
                    dirs.push(entry.path().to_path_buf());
                }
                if entry.file_type().is_some_and(|t| t.is_file()) && hit(entry.path()) {
                    found.push(rel(&root, entry.path()));
                }
            }
            scope.count_ignored(&start, &seen, &dirs);
            found.sort();
            scope.annotate(render(found, max))
        })
        .await
        .map_err(|e| join_refusal("file_search", &e))
    }
}

/// Workspace-relative paths of the files matching `pattern` (a glob over paths when it
/// holds a `/`, else over names), walked from the workspace root with the skips every
/// search walk makes (see [`super`]), sorted.
///
/// # Errors
/// `INVALID_ARGUMENTS` for a glob that does not parse; `TOO_LARGE` when more than `max`
/// files match; `NOT_FOUND` (or another code of [`crate::fs::os_error::workspace_refusal`])
/// when the workspace directory cannot be reached.
pub async fn glob_paths(
    ctx: &ToolContext,
    pattern: &str,
    max: usize,
) -> Result<Vec<String>, Refusal> {
    let glob = compile(pattern)?;
    let by_path = pattern.contains('/');
    let root = ctx
        .workspace
        .canonicalize()
        .map_err(|e| workspace_refusal(&ctx.workspace, &e))?;
    let skip = ctx.private_home();
    let pattern = pattern.to_string();
    let found = tokio::task::spawn_blocking(move || {
        let hit = glob_predicate(glob, by_path, root.clone());
        let mut scope = Scope::new(&root);
        scope.skip = skip;
        scope.want(&pattern, hit.clone());
        let mut found: Vec<String> = scoped_builder(&root, None, &scope)
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && hit(e.path()))
            .map(|e| rel(&root, e.path()))
            .collect();
        found.sort();
        found
    })
    .await
    // The walk is file_search's.
    .map_err(|e| join_refusal("file_search", &e))?;
    if found.len() > max {
        return Err(Refusal::new(
            ErrorCode::TooLarge,
            format!(
                "The glob matches {} files; at most {max} are taken.",
                found.len()
            ),
            "Use a narrower glob (a subdirectory, one extension).",
        ));
    }
    Ok(found)
}

fn compile(pattern: &str) -> Result<GlobMatcher, Refusal> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| {
            Refusal::new(
                ErrorCode::InvalidArguments,
                format!("The glob \"{pattern}\" is not valid: {e}"),
                "Use a glob such as \"*.rs\", \"Cargo.toml\" or \"src/**/*.ts\".",
            )
            .with("pattern", pattern)
        })
}

fn render(found: Vec<String>, max: usize) -> ToolOutput {
    let total = found.len();
    let shown: Vec<String> = found.into_iter().take(max).collect();
    let truncated = total > shown.len();
    let mut out = shown.join("\n");
    if total == 0 {
        out = "No files match.".to_string();
    } else if truncated {
        out.push_str(&format!(
            "\n[{total} files match; showing the first {}. Raise max_results (up to 200) or use \
             a narrower pattern or path.]",
            shown.len()
        ));
    }
    ToolOutput::new(out)
        .with("total_matches", total)
        .with("shown", shown.len())
        .with("truncated", truncated)
}
