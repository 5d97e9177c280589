//! Atomic file replacement for files named by a path (CodeSmith's own state under
//! `$CODESMITH_HOME`, memory files, caches).
//!
//! A write goes to a temporary file in the target's own directory (so the final rename
//! never crosses a file system), is flushed with fsync, takes the permissions and owner of
//! the file it replaces, and is renamed over the target. A reader sees the old bytes or the new
//! bytes, never a half-written file (temp + fsync + rename).
//! There is one implementation: [`crate::fs::beneath::Root::write_atomic`], run in a
//! handle of the target's directory; workspace files go through it directly.

use std::io;
use std::path::Path;

use crate::fs::beneath::Root;

/// Replaces (or creates) `path` with `bytes` atomically.
///
/// Its parent directory must exist. An existing file keeps its permission bits and (when
/// the process may set them, as root) its owner and group; a new file gets `0o666`
/// filtered by the process umask, as editors create files. The directory entry is fsynced on a best-effort basis.
///
/// Errors: any host I/O error (the temporary file is removed on failure and the target is
/// untouched). Callers turn these into the generic `INTERNAL` refusal.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent directory"))?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    Root::open(dir)?.write_atomic(Path::new(name), bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn replaces_and_keeps_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.sh");
        fs::write(&p, "old").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        }
        write_atomic(&p, b"new").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o755
            );
            // A new file gets the umask's default, like one `std::fs::write` creates.
            fs::write(dir.path().join("plain.txt"), b"x").unwrap();
            write_atomic(&dir.path().join("new.txt"), b"x").unwrap();
            let mode = |n: &str| {
                fs::metadata(dir.path().join(n))
                    .unwrap()
                    .permissions()
                    .mode()
            };
            assert_eq!(mode("new.txt"), mode("plain.txt"));
            fs::remove_file(dir.path().join("plain.txt")).unwrap();
        }
        // No temp files left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
