//! Files and directories under `$CODESMITH_HOME` that only their owner may read: sessions,
//! spilled tool outputs, the audit log, approvals, memory, the verification ledger.
//! Directories are created `0700` and files `0600` (the umask can only take bits away).

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::path::Path;

/// Mode of a private directory.
pub const DIR_MODE: u32 = 0o700;
/// Mode of a private file.
pub const FILE_MODE: u32 = 0o600;

/// Creates `path` and every missing parent with mode `0700` (existing directories are left
/// as they are).
///
/// # Errors
/// Any I/O error of `mkdir`.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(path)
    }
    #[cfg(not(unix))]
    {
        DirBuilder::new().recursive(true).create(path)
    }
}

/// `OpenOptions` whose newly created files get mode `0600`; set `create`, `append` etc. as
/// usual.
pub fn open_options() -> OpenOptions {
    #[allow(unused_mut)]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE);
    }
    options
}

/// Sets `path` to `0600` (a file) or `0700` (a directory). For files written by a helper
/// that picks its own mode (an atomic replace).
///
/// # Errors
/// Any I/O error of `stat` or `chmod`.
pub fn restrict(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if std::fs::metadata(path)?.is_dir() {
            DIR_MODE
        } else {
            FILE_MODE
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn directories_are_0700_and_files_0600() {
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("a/b");
        create_dir_all(&deep).unwrap();
        for p in [d.path().join("a"), deep.clone()] {
            assert_eq!(
                std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
        let f = deep.join("f");
        open_options().create(true).append(true).open(&f).unwrap();
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let g = deep.join("g");
        std::fs::write(&g, "x").unwrap();
        restrict(&g).unwrap();
        assert_eq!(
            std::fs::metadata(&g).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
