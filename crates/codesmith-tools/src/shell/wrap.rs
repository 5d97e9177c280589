//! The cwd sentinel: how a `cd` survives from one `exec_shell` call to the next.
//!
//! Each call is its own `bash -c` process (environment variables do not survive, by
//! design). The user's command is prefixed with an `EXIT` trap that prints one line,
//! `<sentinel><$PWD>`, after everything else. The engine strips that line, canonicalizes
//! the path and adopts it only when it stays inside the workspace, so the base
//! directory for path resolution survives between exec_shell calls. The sentinel carries a
//! per-call nonce so output cannot forge it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh sentinel: `__CODESMITH_CWD_<nonce>__` (only `[A-Za-z0-9_]`).
pub fn new_sentinel() -> String {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = SERIAL.fetch_add(1, Ordering::Relaxed);
    format!("__CODESMITH_CWD_{}x{n}x{nanos:08x}__", std::process::id())
}

/// The script passed to `bash -c`: stderr merged into stdout, the sentinel trap, then the
/// command verbatim on its own lines.
pub fn wrap_script(command: &str, sentinel: &str) -> String {
    format!("exec 2>&1\ntrap 'printf \"\\n%s%s\\n\" {sentinel} \"$PWD\"' EXIT\n{command}\n")
}

/// Splits the sentinel line off `output`: returns the output without it and the reported
/// `$PWD`, or the output unchanged and `None` when the sentinel never printed.
pub fn split_sentinel(output: &str, sentinel: &str) -> (String, Option<String>) {
    let needle = format!("\n{sentinel}");
    let Some(at) = output.rfind(&needle) else {
        return (output.to_string(), None);
    };
    let rest = &output[at + needle.len()..];
    let (pwd, after) = rest.split_once('\n').unwrap_or((rest, ""));
    let mut kept = String::with_capacity(output.len());
    kept.push_str(&output[..at]);
    kept.push_str(after);
    (kept, Some(pwd.to_string()))
}

/// What to do with the directory a command ended in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CwdChange {
    /// Same directory as it started in, or no sentinel (nothing is adopted).
    Unchanged,
    /// A new directory inside the workspace (canonical).
    Adopted(PathBuf),
    /// The command ended outside the workspace (or in a path that no longer exists);
    /// the session keeps its directory.
    Refused(String),
}

/// Decides whether `reported` (from the sentinel) becomes the session directory, given the
/// canonical `workspace` and the directory the command `started` in.
pub fn adopt(workspace: &Path, started: &Path, reported: Option<&str>) -> CwdChange {
    let Some(reported) = reported else {
        return CwdChange::Unchanged;
    };
    match Path::new(reported).canonicalize() {
        Ok(p) if p == started => CwdChange::Unchanged,
        Ok(p) if p.starts_with(workspace) => CwdChange::Adopted(p),
        _ => CwdChange::Refused(reported.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn split_removes_only_the_sentinel_line() {
        let s = "__CODESMITH_CWD_1__";
        let out = format!("hello\nworld\n{s}/tmp/x\n");
        let (kept, pwd) = split_sentinel(&out, s);
        assert_eq!(kept, "hello\nworld");
        assert_eq!(pwd.as_deref(), Some("/tmp/x"));
        let (kept, pwd) = split_sentinel("no marker", s);
        assert_eq!((kept.as_str(), pwd), ("no marker", None));
    }

    #[test]
    fn adopt_only_inside_workspace() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let sub = root.join("sub");
        assert_eq!(
            adopt(&root, &root, Some(sub.to_str().unwrap())),
            CwdChange::Adopted(sub.clone())
        );
        assert_eq!(
            adopt(&root, &sub, Some(sub.to_str().unwrap())),
            CwdChange::Unchanged
        );
        assert_eq!(
            adopt(&root, &root, Some("/")),
            CwdChange::Refused("/".into())
        );
        assert_eq!(adopt(&root, &root, None), CwdChange::Unchanged);
    }
}
