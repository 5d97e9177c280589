//! The shared walker configuration, and the account of what a walk left out.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use globset::GlobMatcher;
use ignore::{DirEntry, WalkBuilder};
use serde_json::{Value, json};

use crate::ToolOutput;

/// Directory names never descended into (unless `include_ignored` is set).
pub const EXCLUDED_DIRS: [&str; 7] = [
    ".git",
    "node_modules",
    "target",
    "dist",
    "build",
    "__pycache__",
    ".venv",
];

/// Files larger than this (10 MB) are skipped by `grep_files` (checked with `fstat` on the
/// opened file, so the walk itself needs no `stat` per entry).
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Example paths named per skip rule in a result.
const MAX_EXAMPLES: usize = 3;

/// Why a walk left a path out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SkipRule {
    /// Matched by `.gitignore`, `.ignore` or `.git/info/exclude`.
    Ignored,
    /// A directory excluded by name ([`EXCLUDED_DIRS`]).
    ExcludedDir,
    /// A minified bundle (`*.min.js`).
    Minified,
    /// Larger than [`MAX_FILE_BYTES`].
    TooLarge,
    /// Holds a secret ([`codesmith_policy::secret_file`]): withheld, whatever the pattern,
    /// so matching cannot reveal its content a character at a time either.
    Secret,
    /// A regular file with other hard links, which may lie outside the workspace.
    Linked,
}

const RULES: [SkipRule; 6] = [
    SkipRule::Ignored,
    SkipRule::ExcludedDir,
    SkipRule::Minified,
    SkipRule::TooLarge,
    SkipRule::Secret,
    SkipRule::Linked,
];

impl SkipRule {
    /// True for the rules `include_ignored` cannot lift: what is withheld for the user's
    /// protection, not left out for relevance.
    fn withheld(self) -> bool {
        matches!(self, SkipRule::Secret | SkipRule::Linked)
    }
}

impl SkipRule {
    fn key(self) -> &'static str {
        match self {
            SkipRule::Ignored => "ignored",
            SkipRule::ExcludedDir => "excluded_dir",
            SkipRule::Minified => "minified",
            SkipRule::TooLarge => "too_large",
            SkipRule::Secret => "secret",
            SkipRule::Linked => "hard_linked",
        }
    }

    fn describe(self, n: usize) -> String {
        let s = if n == 1 { "" } else { "s" };
        match self {
            SkipRule::Ignored => format!("{n} path{s} ignored by .gitignore/.ignore"),
            SkipRule::ExcludedDir => format!(
                "{n} director{} excluded by name",
                if n == 1 { "y" } else { "ies" }
            ),
            SkipRule::Minified => format!("{n} file{s} skipped as minified (`*.min.js`)"),
            SkipRule::TooLarge => format!("{n} file{s} over 10 MB"),
            SkipRule::Secret => format!("{n} file{s} holding secrets"),
            SkipRule::Linked => {
                format!("{n} file{s} with other hard links (which may lie outside the workspace)")
            }
        }
    }
}

/// Counts (and a few example paths) of what a walk left out, per rule.
#[derive(Debug, Default, Clone)]
pub(crate) struct Skipped {
    counts: [usize; 6],
    examples: [Vec<String>; 6],
}

impl Skipped {
    /// Records `rel` as left out by `rule`.
    pub(crate) fn add(&mut self, rule: SkipRule, rel: String) {
        let i = rule as usize;
        self.counts[i] += 1;
        if self.examples[i].len() < MAX_EXAMPLES {
            self.examples[i].push(rel);
        }
    }

    /// Nothing was left out.
    pub(crate) fn is_empty(&self) -> bool {
        self.counts.iter().all(|&n| n == 0)
    }

    /// One line for the result: every rule with its count and examples, and how to
    /// include them. `None` when nothing was left out.
    pub(crate) fn note(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let parts = |withheld: bool| -> Vec<String> {
            RULES
                .iter()
                .filter(|r| r.withheld() == withheld && self.counts[**r as usize] > 0)
                .map(|&r| {
                    let i = r as usize;
                    let mut examples = self.examples[i].clone();
                    examples.sort();
                    let mut examples = examples.join(", ");
                    if self.counts[i] > self.examples[i].len() {
                        examples.push_str(", …");
                    }
                    format!("{} ({examples})", r.describe(self.counts[i]))
                })
                .collect()
        };
        let mut notes = Vec::new();
        let left_out = parts(false);
        if !left_out.is_empty() {
            notes.push(format!(
                "[Not searched: {}. Pass include_ignored: true to search them.]",
                left_out.join("; ")
            ));
        }
        let withheld = parts(true);
        if !withheld.is_empty() {
            notes.push(format!(
                "[Withheld, whatever the pattern: {}. read_file shows one after the user \
                 approves it.]",
                withheld.join("; ")
            ));
        }
        Some(notes.join("\n"))
    }

    /// The counts for `meta.skipped`, by rule name.
    pub(crate) fn meta(&self) -> Value {
        let mut m = serde_json::Map::new();
        for r in RULES {
            if self.counts[r as usize] > 0 {
                m.insert(r.key().into(), json!(self.counts[r as usize]));
            }
        }
        Value::Object(m)
    }
}

/// Whether a path is one the caller asked for (an explicit glob): a left-out file it does
/// not match is not worth naming.
pub(crate) type Wanted = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// What a walk includes beyond the defaults.
#[derive(Clone, Default)]
pub(crate) struct Scope {
    /// Search ignored files, excluded directories (except `.git`), minified and large files.
    pub(crate) include_ignored: bool,
    /// The explicit request, if any.
    pub(crate) wanted: Option<Wanted>,
    /// The request names minified files itself (its glob has `.min.`): those it matches
    /// are searched.
    pub(crate) names_minified: bool,
    /// Where left-out entries seen by the walk's filter are counted.
    pub(crate) skipped: Arc<Mutex<Skipped>>,
    /// The workspace root, for relative names.
    pub(crate) root: PathBuf,
    /// A directory never entered nor counted (CodeSmith's home when it lies in the
    /// workspace, see [`crate::ToolContext::private_home`]).
    pub(crate) skip: Option<PathBuf>,
}

impl Scope {
    /// Sets the explicit request: `glob` as typed, `wanted` its matcher.
    pub(crate) fn want(&mut self, glob: &str, wanted: Wanted) {
        self.names_minified = glob.contains(".min.");
        self.wanted = Some(wanted);
    }

    /// The default scope under `root`.
    pub(crate) fn new(root: &Path) -> Scope {
        Scope {
            root: root.to_path_buf(),
            ..Scope::default()
        }
    }

    fn wants(&self, path: &Path) -> Option<bool> {
        self.wanted.as_ref().map(|w| w(path))
    }

    /// The filter's verdict on `entry`, counting what it leaves out.
    fn keep(&self, entry: &DirEntry) -> bool {
        if self.skip.as_deref() == Some(entry.path()) {
            return false;
        }
        let name = entry.file_name().to_string_lossy();
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if is_dir && name == ".git" {
            return false;
        }
        if self.include_ignored {
            return true;
        }
        let rule = if is_dir && EXCLUDED_DIRS.contains(&name.as_ref()) {
            SkipRule::ExcludedDir
        } else if !is_dir && name.ends_with(".min.js") {
            match self.wants(entry.path()) {
                Some(true) if self.names_minified => return true,
                Some(false) => return false,
                _ => SkipRule::Minified,
            }
        } else {
            return true;
        };
        self.skipped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(rule, rel(&self.root, entry.path()));
        false
    }

    /// Adds to the account the entries of the walked directories that the walk never
    /// yielded and the filter did not see: those the ignore files left out. `seen` holds
    /// every path the walk yielded (files and directories), `dirs` the directories.
    pub(crate) fn count_ignored(&self, start: &Path, seen: &HashSet<PathBuf>, dirs: &[PathBuf]) {
        if self.include_ignored {
            return;
        }
        let mut found = Vec::new();
        let mut dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).chain([start]).collect();
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            let Ok(children) = std::fs::read_dir(dir) else {
                continue;
            };
            for child in children.flatten() {
                let path = child.path();
                if seen.contains(&path) || self.skip.as_deref() == Some(path.as_path()) {
                    continue;
                }
                let name = child.file_name().to_string_lossy().into_owned();
                let is_dir = child.file_type().is_ok_and(|t| t.is_dir());
                let counted_by_filter = if is_dir {
                    EXCLUDED_DIRS.contains(&name.as_str())
                } else {
                    name.ends_with(".min.js")
                };
                if counted_by_filter || (!is_dir && self.wants(&path) == Some(false)) {
                    continue;
                }
                let mut r = rel(&self.root, &path);
                if is_dir {
                    r.push('/');
                }
                found.push(r);
            }
        }
        found.sort();
        let mut skipped = self.skipped.lock().unwrap_or_else(PoisonError::into_inner);
        for r in found {
            skipped.add(SkipRule::Ignored, r);
        }
    }

    /// `out` with the account of what was left out: a last line naming each rule, and
    /// `meta.skipped` with the counts. Unchanged when nothing was left out.
    pub(crate) fn annotate(&self, mut out: ToolOutput) -> ToolOutput {
        let skipped = self
            .skipped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match skipped.note() {
            Some(note) => {
                out.output = Value::String(format!(
                    "{}\n{note}",
                    out.output.as_str().unwrap_or_default()
                ));
                out.with("skipped", skipped.meta())
            }
            None => out,
        }
    }
}

/// The predicate for a file glob as the search tools read it: against the path below
/// `start` when the glob has a `/`, else against the file name.
pub(crate) fn glob_predicate(glob: GlobMatcher, by_path: bool, start: PathBuf) -> Wanted {
    Arc::new(move |p: &Path| {
        if by_path {
            glob.is_match(p.strip_prefix(&start).unwrap_or(p))
        } else {
            p.file_name().is_some_and(|n| glob.is_match(n))
        }
    })
}

/// A walker over `root` with the common rules; `depth` limits descent when given.
///
/// `skip` is a directory never entered (CodeSmith's home when it lies in the workspace,
/// see [`crate::ToolContext::private_home`]).
pub(crate) fn builder(root: &Path, depth: Option<usize>, skip: Option<PathBuf>) -> WalkBuilder {
    let mut scope = Scope::new(root);
    scope.skip = skip;
    scoped_builder(root, depth, &scope)
}

/// A walker over `root` with the rules of `scope`, counting what its filter leaves out.
pub(crate) fn scoped_builder(root: &Path, depth: Option<usize>, scope: &Scope) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    let ignore = !scope.include_ignored;
    b.hidden(false)
        .git_ignore(ignore)
        .git_global(false)
        .git_exclude(ignore)
        .ignore(ignore)
        .parents(ignore)
        .require_git(false)
        .follow_links(false)
        .max_depth(depth);
    let scope = scope.clone();
    b.filter_entry(move |e| scope.keep(e));
    b
}

/// `path` relative to `workspace`, `/`-separated.
pub(crate) fn rel(workspace: &Path, path: &Path) -> String {
    let r = path.strip_prefix(workspace).unwrap_or(path);
    let parts: Vec<String> = r
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}
