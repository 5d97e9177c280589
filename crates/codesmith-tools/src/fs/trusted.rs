//! Trusted outside paths: directories outside the workspace the file tools may *read*
//! (a sibling checkout, a vendored SDK), named by the user (`[trust] read` in the user
//! config, `/trust add PATH` in the UI) and never by a project or the model. A path
//! below one of them is opened below a held handle of that directory, like a workspace
//! path below the workspace's; writing there stays refused (the writers resolve only
//! inside the workspace), and the sandbox offers the same directories read-only.

use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock};

/// The trusted read roots of one session (canonical directories). Shared by the
/// session's contexts, so a root added while it runs counts for its next call.
#[derive(Debug, Default)]
pub struct TrustedReads(RwLock<Vec<PathBuf>>);

impl TrustedReads {
    /// The roots, in the order they were added.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Adds `dir` (absolute; canonicalised). Returns the canonical directory.
    ///
    /// # Errors
    /// A sentence naming what is wrong: not absolute, missing or not a directory, the
    /// file system root, or a directory that holds `home` (CodeSmith's own home) or lies
    /// inside it.
    pub fn add(&self, dir: &Path, home: &Path) -> Result<PathBuf, String> {
        let canonical = check_root(dir, home)?;
        let mut roots = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if !roots.contains(&canonical) {
            roots.push(canonical.clone());
        }
        Ok(canonical)
    }

    /// The root `abs` (an absolute, lexically normalised path) lies under, if any.
    pub fn root_of(&self, abs: &Path) -> Option<PathBuf> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|r| abs.starts_with(r))
            .cloned()
    }
}

/// Checks one trusted read root: an absolute, existing directory that is not `/` and
/// neither holds nor lies in CodeSmith's home. Returns it canonicalised.
///
/// # Errors
/// A sentence naming what is wrong.
pub fn check_root(dir: &Path, home: &Path) -> Result<PathBuf, String> {
    if !dir.is_absolute() {
        return Err(format!(
            "{} is not an absolute path (write it from /, or ~/ in config.toml)",
            dir.display()
        ));
    }
    let canonical = dir
        .canonicalize()
        .map_err(|e| format!("{} cannot be opened: {e}", dir.display()))?;
    if !canonical.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if canonical.parent().is_none() {
        return Err("the file system root cannot be trusted as a whole".into());
    }
    // Kernel pseudo-file systems hold other processes' environments, memory maps and
    // devices, not files to read as project context.
    if ["/proc", "/sys", "/dev"]
        .iter()
        .any(|p| canonical.starts_with(p))
    {
        return Err(format!(
            "{} is a kernel pseudo-file system (/proc, /sys or /dev), which holds processes' \
             environments and devices, not files to trust",
            dir.display()
        ));
    }
    let home = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
    if home.starts_with(&canonical) || canonical.starts_with(&home) {
        return Err(format!(
            "{} holds or lies in CodeSmith's home ({}), whose approvals and memory tools never \
             read",
            dir.display(),
            home.display()
        ));
    }
    Ok(canonical)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn pseudo_file_systems_are_refused_as_roots() {
        let home = Path::new("/nonexistent-codesmith-home");
        for dir in ["/proc", "/sys", "/dev", "/proc/self"] {
            let err = check_root(Path::new(dir), home).unwrap_err();
            assert!(err.contains("pseudo-file system"), "{dir}: {err}");
        }
        assert!(check_root(&std::env::temp_dir(), home).is_ok());
    }
}
