//! Ignore rules that live above the workspace.
//!
//! When the workspace is a sub-directory of a git repository, the side
//! repository's work tree (the workspace) does not see the `.gitignore` files
//! of the directories above it, nor the enclosing repository's
//! `.git/info/exclude`. Their patterns are rewritten here relative to the
//! workspace, so that, say, a `node_modules/` or `target/` ignored at the
//! repository root stays out of the snapshots. The enclosing repository is
//! only read as files; git is never run in it.

use std::path::{Component, Path, PathBuf};

/// The patterns of ignore files between the enclosing repository's root and
/// the workspace, rewritten relative to the workspace (one per line; empty
/// when the workspace is not inside a repository or is its root).
pub(crate) fn inherited_patterns(workspace: &Path) -> String {
    let Some(root) = enclosing_root(workspace) else {
        return String::new();
    };
    let mut out = String::new();
    let mut sources = vec![(root.clone(), root.join(".git").join("info").join("exclude"))];
    let mut dir = root.clone();
    sources.push((dir.clone(), dir.join(".gitignore")));
    if let Ok(rel) = workspace.strip_prefix(&root) {
        let parts: Vec<_> = rel.components().collect();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            dir.push(part);
            sources.push((dir.clone(), dir.join(".gitignore")));
        }
    }
    for (base, file) in sources {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Some(rel) = components(workspace, &base) else {
            continue;
        };
        for line in text.lines() {
            if let Some(pattern) = translate(line, &rel) {
                out.push_str(&pattern);
                out.push('\n');
            }
        }
    }
    out
}

/// The nearest directory strictly above `workspace` that holds a `.git`,
/// unless the workspace has its own `.git` (then it is a root itself).
fn enclosing_root(workspace: &Path) -> Option<PathBuf> {
    if workspace.join(".git").exists() {
        return None;
    }
    workspace
        .ancestors()
        .skip(1)
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The path components of `workspace` below `base`.
fn components(workspace: &Path, base: &Path) -> Option<Vec<String>> {
    let rel = workspace.strip_prefix(base).ok()?;
    rel.components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str().map(str::to_string),
            _ => None,
        })
        .collect()
}

/// One ignore line of a file in a directory `rel` above the workspace,
/// rewritten for the workspace; `None` when it cannot apply inside it (or
/// is too clever to rewrite safely: a `**` or glob in the leading part).
fn translate(line: &str, rel: &[String]) -> Option<String> {
    let line = line.trim_end();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (neg, body) = match line.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", line),
    };
    let dir_only = body.ends_with('/');
    let core = body.trim_end_matches('/');
    if core.is_empty() {
        return None;
    }
    if !core.contains('/') {
        // No slash: matches at any depth, inside the workspace too.
        return Some(line.to_string());
    }
    let core = core.trim_start_matches('/');
    if core.starts_with("**/") {
        return Some(line.to_string());
    }
    let parts: Vec<&str> = core.split('/').collect();
    if parts.len() <= rel.len() {
        return None;
    }
    for (pattern, actual) in parts.iter().zip(rel) {
        let literal = !pattern.contains(['*', '?', '[', '\\']);
        if !(*pattern == "*" || (literal && pattern == actual)) {
            return None;
        }
    }
    let rest = parts[rel.len()..].join("/");
    let slash = if dir_only { "/" } else { "" };
    Some(format!("{neg}/{rest}{slash}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rel(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn unanchored_patterns_apply_as_they_are() {
        let r = rel(&["pkg"]);
        assert_eq!(
            translate("node_modules/", &r).as_deref(),
            Some("node_modules/")
        );
        assert_eq!(translate("*.log", &r).as_deref(), Some("*.log"));
        assert_eq!(translate("!keep.log", &r).as_deref(), Some("!keep.log"));
        assert_eq!(translate("**/build", &r).as_deref(), Some("**/build"));
    }

    #[test]
    fn anchored_patterns_are_rebased_or_dropped() {
        let r = rel(&["apps", "web"]);
        assert_eq!(translate("/apps/web/dist/", &r).as_deref(), Some("/dist/"));
        assert_eq!(
            translate("apps/web/a/b.txt", &r).as_deref(),
            Some("/a/b.txt")
        );
        assert_eq!(translate("apps/*/out", &r).as_deref(), Some("/out"));
        assert_eq!(translate("!apps/web/keep", &r).as_deref(), Some("!/keep"));
        assert_eq!(translate("/target", &r), None);
        assert_eq!(translate("apps/api/dist", &r), None);
        assert_eq!(translate("apps/web", &r), None);
        assert_eq!(translate("a*/web/x", &r), None);
        assert_eq!(translate("# comment", &r), None);
        assert_eq!(translate("   ", &r), None);
    }

    #[test]
    fn files_between_the_repository_root_and_the_workspace_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/info/exclude"), "/apps/web/secret\n").unwrap();
        std::fs::write(
            root.join(".gitignore"),
            "target/\n/apps/web/dist/\n/other\n",
        )
        .unwrap();
        let ws = root.join("apps/web");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(root.join("apps/.gitignore"), "*.tmp\n").unwrap();
        std::fs::write(ws.join(".gitignore"), "not-read-here\n").unwrap();
        let patterns = inherited_patterns(&ws);
        let lines: Vec<&str> = patterns.lines().collect();
        assert_eq!(lines, ["/secret", "target/", "/dist/", "*.tmp"]);
        // A repository root of its own inherits nothing.
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        assert_eq!(inherited_patterns(&ws), "");
    }
}
