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
/// neither holds nor lies in CodeSmith's home, reached without passing through a kernel
/// pseudo-file system (its links are resolved one at a time before any check). Returns it
/// canonicalised.
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
    // Resolve the path one link at a time first, so that a route through a kernel
    // pseudo-file system (`/proc/self/cwd`, or a link to it, which the kernel would
    // follow to whatever directory the process stands in) is seen and refused.
    let walked = resolve_links(dir)?;
    let canonical = dir
        .canonicalize()
        .map_err(|e| format!("{} cannot be opened: {e}", dir.display()))?;
    if walked != canonical {
        return Err(format!(
            "{} resolves to {} by its links but to {} when opened; trust the directory itself",
            dir.display(),
            walked.display(),
            canonical.display()
        ));
    }
    if !canonical.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if canonical.parent().is_none() {
        return Err("the file system root cannot be trusted as a whole".into());
    }
    // Kernel pseudo-file systems hold other processes' environments, memory maps and
    // devices, not files to read as project context.
    if PSEUDO.iter().any(|p| canonical.starts_with(p)) {
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

/// Kernel pseudo-file systems: never trusted, nor passed through on the way to a root.
const PSEUDO: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Most symbolic links followed while resolving one root.
const MAX_LINKS: usize = 40;

/// `dir` (absolute) with every symbolic link resolved one at a time, refusing as soon as
/// the path reached lies in a kernel pseudo-file system (whose links, such as
/// `/proc/self/cwd`, lead wherever the reading process stands).
fn resolve_links(dir: &Path) -> Result<PathBuf, String> {
    use std::path::Component;
    let mut todo: Vec<std::ffi::OsString> = dir
        .components()
        .rev()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    let mut at = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = todo.pop() {
        if part == ".." {
            at.pop();
        } else {
            at.push(&part);
        }
        if PSEUDO.iter().any(|p| at.starts_with(p)) {
            return Err(format!(
                "{} leads through {}, a kernel pseudo-file system (/proc, /sys or /dev),                  which holds processes' environments and devices, not files to trust",
                dir.display(),
                at.display()
            ));
        }
        let meta = std::fs::symlink_metadata(&at)
            .map_err(|e| format!("{} cannot be opened: {e}", dir.display()))?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(format!(
                    "{} follows more than {MAX_LINKS} symbolic links",
                    dir.display()
                ));
            }
            let target = std::fs::read_link(&at)
                .map_err(|e| format!("{} cannot be opened: {e}", dir.display()))?;
            at.pop();
            if target.is_absolute() {
                at = PathBuf::from("/");
            }
            for c in target.components().rev() {
                match c {
                    Component::Normal(n) => todo.push(n.to_os_string()),
                    Component::ParentDir => todo.push("..".into()),
                    _ => {}
                }
            }
        }
    }
    Ok(at)
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

    #[cfg(target_os = "linux")]
    #[test]
    fn a_route_through_a_pseudo_file_system_is_refused_whatever_it_leads_to() {
        let home = Path::new("/nonexistent-codesmith-home");
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        // /proc/self/cwd leads to wherever the process stands: refused, as is a link to it.
        let err = check_root(Path::new("/proc/self/cwd"), home).unwrap_err();
        assert!(err.contains("leads through /proc"), "{err}");
        let link = dir.path().join("cwd");
        std::os::unix::fs::symlink("/proc/self/cwd", &link).unwrap();
        let err = check_root(&link, home).unwrap_err();
        assert!(err.contains("pseudo-file system"), "{err}");
        // An ordinary link (absolute or relative, through ..) resolves to its directory.
        let abs = dir.path().join("abs");
        std::os::unix::fs::symlink(&real, &abs).unwrap();
        let rel = dir.path().join("rel");
        std::os::unix::fs::symlink(
            "../".to_string() + &dir.path().file_name().unwrap().to_string_lossy() + "/real",
            &rel,
        )
        .unwrap();
        let canonical = real.canonicalize().unwrap();
        assert_eq!(check_root(&abs, home).unwrap(), canonical);
        assert_eq!(check_root(&rel, home).unwrap(), canonical);
        // A link loop is a typed error, not a hang.
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert!(check_root(&a, home).is_err());
    }
}
