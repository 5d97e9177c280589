//! Atomic file replacement and parent-directory creation.
//!
//! A write goes to a temporary file in the target's own directory (so the final rename
//! never crosses a file system), is flushed with fsync, takes the permissions of the file
//! it replaces, and is renamed over the target. A reader sees the old bytes or the new
//! bytes, never a half-written file (seed 002, "atomic writes": temp + fsync + rename).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Replaces (or creates) `path` with `bytes` atomically.
///
/// `path` must be a real location (see [`crate::fs::paths::ResolvedPath::abs`]); its parent
/// directory must exist. An existing file keeps its permission bits; a new file gets
/// `0o644` on Unix. The directory entry is fsynced on a best-effort basis.
///
/// Errors: any host I/O error (the temporary file is removed on failure and the target is
/// untouched). Callers turn these into the generic `INTERNAL` refusal.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent directory"))?;
    let old_perms = fs::metadata(path).ok().map(|m| m.permissions());
    let mut tmp = tempfile::Builder::new()
        .prefix(".codesmith-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.flush()?;
    let perms = match old_perms {
        Some(p) => p,
        None => default_permissions(tmp.as_file())?,
    };
    tmp.as_file().set_permissions(perms)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(unix)]
fn default_permissions(_file: &fs::File) -> io::Result<fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Ok(fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn default_permissions(file: &fs::File) -> io::Result<fs::Permissions> {
    Ok(file.metadata()?.permissions())
}

/// Creates every missing directory above `path`, outermost first, and returns the ones it
/// created (so a result can name them; seed 004: "createdDirectories").
///
/// Each level is created with `create_dir` and then checked with `symlink_metadata`: a
/// symlink appearing at a level is an error (`io::ErrorKind::InvalidInput`), so a race that
/// swaps in a link cannot redirect later levels. Containment must be checked before this
/// call (see [`crate::fs::paths::resolve`]).
pub fn create_parents(path: &Path) -> io::Result<Vec<PathBuf>> {
    let Some(parent) = path.parent() else {
        return Ok(Vec::new());
    };
    let mut missing = Vec::new();
    let mut cur = parent;
    while fs::symlink_metadata(cur).is_err() {
        missing.push(cur.to_path_buf());
        match cur.parent() {
            Some(p) => cur = p,
            None => break,
        }
    }
    missing.reverse();
    for dir in &missing {
        match fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let meta = fs::symlink_metadata(dir)?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a directory",
            ));
        }
    }
    Ok(missing)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
        }
        // No temp files left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn creates_and_names_parents() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/c.txt");
        let made = create_parents(&p).unwrap();
        assert_eq!(made, vec![dir.path().join("a"), dir.path().join("a/b")]);
        write_atomic(&p, b"x").unwrap();
        assert!(create_parents(&p).unwrap().is_empty());
    }
}
