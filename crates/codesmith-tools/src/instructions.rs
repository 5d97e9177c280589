//! Project instructions: AGENTS.md (CLAUDE.md as a fallback name).
//!
//! Workspace files are untrusted and may not promote themselves.
//! - The walk-up from the workspace stops at the user's home directory
//!   (home included, never beyond it); a workspace outside home gets no
//!   walk-up at all, so a planted `/tmp/AGENTS.md` is never read.
//! - `@include PATH` lines pull in another file only when the target, after
//!   canonicalisation (so symlinks cannot escape), lies inside the including
//!   file's own directory subtree. Directives inside code fences are text.
//! - Every instruction file, top-level ones included, is read only when its canonical
//!   path stays inside the directory it was found in; a symlink that leads out is skipped
//!   with a warning.
//! - Include depth and total size are bounded.
//!
//! Files are concatenated outermost first, so the instructions nearest the
//! workspace come last.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// File names looked for in each directory, in order; the first found wins.
pub const INSTRUCTION_NAMES: [&str; 2] = codesmith_policy::INSTRUCTION_NAMES;

/// Bounds on what the loader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstructionLimits {
    /// Deepest include chain (a top file is depth 0). Default 5.
    pub max_depth: usize,
    /// Most bytes of instructions in total, includes counted. Default 64 KiB.
    pub max_total_bytes: usize,
}

impl Default for InstructionLimits {
    fn default() -> Self {
        InstructionLimits {
            max_depth: 5,
            max_total_bytes: 64 * 1024,
        }
    }
}

/// One top-level instruction file with its includes expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Canonical path of the file.
    pub path: PathBuf,
    /// Text with includes expanded in place (refused ones leave a note line).
    pub text: String,
}

/// What the loader found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    /// Files, outermost directory first.
    pub files: Vec<InstructionFile>,
    /// Human-readable warnings: refused includes, size cut, unreadable files.
    pub warnings: Vec<String>,
    /// True when the total size bound cut something off.
    pub truncated: bool,
}

impl Instructions {
    /// All files as one block, each introduced by `## <path>` (paths as found).
    /// Empty when there are no files.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.files {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("## {}\n\n", f.path.display()));
            out.push_str(f.text.trim_end());
            out.push('\n');
        }
        out
    }
}

/// The directories to search, outermost first: the workspace and its
/// ancestors up to and including `home` when the workspace is inside home;
/// only the workspace otherwise (and when `home` is `None`). A `home` that is
/// not an existing absolute directory other than `/` (an empty, relative or
/// missing `$HOME`, or `HOME=/` as some services run with) allows no walk-up:
/// it would otherwise reach `/` and read a planted `/tmp/AGENTS.md`.
pub fn search_dirs(workspace: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let ws = fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let home = home
        .filter(|h| h.is_absolute())
        .and_then(|h| fs::canonicalize(h).ok())
        .filter(|h| h.parent().is_some() && h.is_dir());
    let mut dirs = vec![ws.clone()];
    if let Some(home) = home.filter(|h| ws.starts_with(h)) {
        let mut cur = ws.as_path();
        while cur != home {
            match cur.parent() {
                Some(p) => {
                    dirs.push(p.to_path_buf());
                    cur = p;
                }
                None => break,
            }
        }
    }
    dirs.reverse();
    dirs
}

/// Loads AGENTS.md (or CLAUDE.md) from [`search_dirs`], expanding includes.
/// Never fails: problems become warnings.
pub fn load_instructions(
    workspace: &Path,
    home: Option<&Path>,
    limits: &InstructionLimits,
) -> Instructions {
    let mut loader = Loader {
        limits: *limits,
        used: 0,
        out: Instructions::default(),
    };
    for dir in search_dirs(workspace, home) {
        let Some(path) = INSTRUCTION_NAMES
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file())
        else {
            continue;
        };
        let Ok(canon) = fs::canonicalize(&path) else {
            continue;
        };
        // A symlinked AGENTS.md (say, to ~/.ssh/id_rsa in a cloned repository) must not
        // send what it points at to the provider: the real file has to stay in the
        // directory it was found in.
        if !canon.starts_with(&dir) {
            loader.out.warnings.push(format!(
                "{}: skipped, it is a symlink to {} outside its directory",
                path.display(),
                canon.display()
            ));
            continue;
        }
        let mut stack = Vec::new();
        if let Some(text) = loader.expand(&canon, 0, &mut stack) {
            loader.out.files.push(InstructionFile { path, text });
        }
    }
    loader.out
}

struct Loader {
    limits: InstructionLimits,
    used: usize,
    out: Instructions,
}

/// The target of an `@include` line, or `None` for any other line.
fn include_target(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("@include")?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let target = rest.trim();
    (!target.is_empty()).then_some(target)
}

/// Fence marker (` ``` ` or `~~~`, 3+) that opens or closes a code block.
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start();
    let c = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = t.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

impl Loader {
    /// Reads a canonical file and expands its includes; `None` when unreadable
    /// or when nothing fits in the size budget.
    fn expand(&mut self, file: &Path, depth: usize, stack: &mut Vec<PathBuf>) -> Option<String> {
        let text = match self.read_bounded(file) {
            Ok(t) => t,
            Err(e) => {
                self.out
                    .warnings
                    .push(format!("{}: not read ({e})", file.display()));
                return None;
            }
        };
        stack.push(file.to_path_buf());
        let base = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut out = String::with_capacity(text.len());
        let mut fence: Option<(char, usize)> = None;
        for line in text.split_inclusive('\n') {
            if let Some((c, n)) = fence_marker(line) {
                fence = match fence {
                    None => Some((c, n)),
                    Some((fc, fn_)) if fc == c && n >= fn_ => None,
                    open => open,
                };
            }
            match include_target(line).filter(|_| fence.is_none()) {
                Some(target) => {
                    let inner = self.include(&base, target, depth, stack);
                    out.push_str(inner.trim_end_matches('\n'));
                    out.push('\n');
                }
                None => out.push_str(line),
            }
        }
        stack.pop();
        Some(out)
    }

    fn include(
        &mut self,
        base: &Path,
        target: &str,
        depth: usize,
        stack: &mut Vec<PathBuf>,
    ) -> String {
        match self.resolve(base, target, depth, stack) {
            Ok(path) => self.expand(&path, depth + 1, stack).unwrap_or_default(),
            Err(why) => {
                self.out
                    .warnings
                    .push(format!("@include {target} in {}: {why}", base.display()));
                format!("[@include {target} skipped: {why}]")
            }
        }
    }

    fn resolve(
        &self,
        base: &Path,
        target: &str,
        depth: usize,
        stack: &[PathBuf],
    ) -> Result<PathBuf, &'static str> {
        if depth + 1 > self.limits.max_depth {
            return Err("include depth limit reached");
        }
        if target.starts_with('~') || Path::new(target).is_absolute() {
            return Err("only paths relative to the including file are allowed");
        }
        let canon = fs::canonicalize(base.join(target)).map_err(|_| "file not found")?;
        if !canon.starts_with(base) {
            return Err("target is outside the including file's directory");
        }
        if !canon.is_file() {
            return Err("target is not a regular file");
        }
        if stack.contains(&canon) {
            return Err("include cycle");
        }
        Ok(canon)
    }

    /// Reads at most the remaining budget; marks truncation.
    fn read_bounded(&mut self, file: &Path) -> std::io::Result<String> {
        let remaining = self.limits.max_total_bytes.saturating_sub(self.used);
        let mut buf = Vec::new();
        fs::File::open(file)?
            .take(remaining as u64 + 1)
            .read_to_end(&mut buf)?;
        if buf.len() > remaining {
            buf.truncate(remaining);
            if !self.out.truncated {
                self.out.warnings.push(format!(
                    "instructions cut at {} bytes in {}",
                    self.limits.max_total_bytes,
                    file.display()
                ));
            }
            self.out.truncated = true;
        }
        self.used += buf.len();
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    fn write(p: &Path, s: &str) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, s).unwrap();
    }

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let home = fs::canonicalize(root.path()).unwrap().join("home");
        let ws = home.join("code/proj");
        fs::create_dir_all(&ws).unwrap();
        (root, home, ws)
    }

    #[test]
    fn an_odd_home_allows_no_walk_up() {
        let (_root, home, ws) = setup();
        let want = vec![fs::canonicalize(&ws).unwrap()];
        for odd in [
            Path::new(""),
            Path::new("/"),
            Path::new("."),
            Path::new("code/.."),
            &home.join("missing/.."),
        ] {
            assert_eq!(search_dirs(&ws, Some(odd)), want, "{odd:?}");
        }
        assert_eq!(search_dirs(&ws, Some(&home)).len(), 3);
    }

    #[test]
    fn walks_up_to_home_and_not_beyond() {
        let (root, home, ws) = setup();
        write(&root.path().join("AGENTS.md"), "ABOVE HOME");
        write(&home.join("AGENTS.md"), "home rules");
        write(&home.join("code/CLAUDE.md"), "code rules");
        write(&ws.join("AGENTS.md"), "project rules");
        write(&ws.join("CLAUDE.md"), "shadowed by AGENTS.md");
        let got = load_instructions(&ws, Some(&home), &InstructionLimits::default());
        let texts: Vec<&str> = got.files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["home rules", "code rules", "project rules"]);
        let r = got.render();
        assert!(!r.contains("ABOVE HOME") && !r.contains("shadowed"));
    }

    #[test]
    fn outside_home_there_is_no_walk_up() {
        let (root, home, _) = setup();
        let ws = root.path().join("tmp/ws");
        write(&root.path().join("tmp/AGENTS.md"), "PLANTED");
        write(&ws.join("AGENTS.md"), "mine");
        let got = load_instructions(&ws, Some(&home), &InstructionLimits::default());
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.files[0].text, "mine");
        let got = load_instructions(&ws, None, &InstructionLimits::default());
        assert_eq!(got.files.len(), 1);
    }

    #[test]
    fn includes_expand_inside_the_subtree() {
        let (_root, home, ws) = setup();
        write(
            &ws.join("docs/style.md"),
            "use tabs\n@include deeper/x.md\n",
        );
        write(&ws.join("docs/deeper/x.md"), "deep rule");
        write(&ws.join("AGENTS.md"), "top\n@include docs/style.md\nend\n");
        let got = load_instructions(&ws, Some(&home), &InstructionLimits::default());
        assert_eq!(got.files[0].text, "top\nuse tabs\ndeep rule\nend\n");
        assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    }

    #[test]
    fn include_escapes_are_refused() {
        let (root, home, ws) = setup();
        write(&home.join("secrets.md"), "SECRET");
        write(&root.path().join("etc/passwd"), "ROOT");
        #[cfg(unix)]
        std::os::unix::fs::symlink(home.join("secrets.md"), ws.join("link.md")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(home.as_path(), ws.join("homedir")).unwrap();
        write(&ws.join("sub/inner.md"), "@include ../AGENTS2.md\n");
        write(&ws.join("AGENTS2.md"), "SIBLING");
        write(
            &ws.join("AGENTS.md"),
            &format!(
                "@include ../../secrets.md\n@include link.md\n@include homedir/secrets.md\n\
                 @include {}\n@include ~/secrets.md\n@include sub/inner.md\n",
                root.path().join("etc/passwd").display()
            ),
        );
        let got = load_instructions(&ws, Some(&home), &InstructionLimits::default());
        let text = &got.files.last().unwrap().text;
        for leaked in ["SECRET", "ROOT", "SIBLING"] {
            assert!(!text.contains(leaked), "{leaked} leaked: {text}");
        }
        assert_eq!(text.matches("skipped").count(), 6, "{text}");
        assert_eq!(got.warnings.len(), 6);
    }

    #[test]
    fn includes_in_code_fences_are_text() {
        let (_root, home, ws) = setup();
        write(&ws.join("x.md"), "INCLUDED");
        write(
            &ws.join("AGENTS.md"),
            "```md\n@include x.md\n```\n~~~~\n@include x.md\n~~~\nstill fenced\n~~~~\n@include x.md\n",
        );
        let got = load_instructions(&ws, Some(&home), &InstructionLimits::default());
        let text = &got.files[0].text;
        assert_eq!(text.matches("@include x.md").count(), 2, "{text}");
        assert_eq!(text.matches("INCLUDED").count(), 1, "{text}");
    }

    #[test]
    fn depth_cycles_and_size_are_bounded() {
        let (_root, home, ws) = setup();
        write(&ws.join("AGENTS.md"), "@include a.md\n");
        write(&ws.join("a.md"), "A\n@include AGENTS.md\n@include b.md\n");
        write(&ws.join("b.md"), "B\n@include c.md\n");
        write(&ws.join("c.md"), "C\n");
        let limits = InstructionLimits {
            max_depth: 2,
            max_total_bytes: 1 << 20,
        };
        let got = load_instructions(&ws, Some(&home), &limits);
        let text = &got.files[0].text;
        assert!(text.contains("A\n") && text.contains("B\n"), "{text}");
        assert!(!text.contains("C\n"), "{text}");
        assert!(text.contains("include cycle") && text.contains("depth limit"));

        write(&ws.join("AGENTS.md"), &"x".repeat(5000));
        let small = InstructionLimits {
            max_depth: 5,
            max_total_bytes: 1000,
        };
        let got = load_instructions(&ws, Some(&home), &small);
        assert!(got.truncated);
        assert_eq!(got.files[0].text.len(), 1000);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_agents_md_leading_out_is_skipped() {
        let (root, home, ws) = setup();
        write(
            &home.join(".ssh/id_rsa"),
            "-----BEGIN OPENSSH PRIVATE KEY-----",
        );
        std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), ws.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(root.path().join("nope"), ws.join("CLAUDE.md")).unwrap();
        let got = load_instructions(&ws, Some(&home), &InstructionLimits::default());
        assert!(!got.render().contains("PRIVATE KEY"), "{}", got.render());
        assert!(got.files.is_empty());
        assert!(
            got.warnings
                .iter()
                .any(|w| w.contains("AGENTS.md: skipped")),
            "{:?}",
            got.warnings
        );
        // A symlink that stays in its directory is still read.
        fs::remove_file(ws.join("AGENTS.md")).unwrap();
        write(&ws.join("docs/rules.md"), "inside rules");
        std::os::unix::fs::symlink(ws.join("docs/rules.md"), ws.join("AGENTS.md")).unwrap();
        let got = load_instructions(&ws, Some(&home), &InstructionLimits::default());
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.files[0].text, "inside rules");
    }
}
