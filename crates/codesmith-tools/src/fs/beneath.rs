//! File operations relative to a held directory handle of the workspace.
//!
//! [`crate::fs::paths::resolve`] decides *whether* a path is inside the workspace; this
//! module makes sure the file actually touched is the one that was checked. A path string
//! is never handed to the kernel from `/` again after the check: every open, create,
//! rename and unlink is done relative to [`Root`], an open descriptor of the workspace
//! directory, so a directory swapped for a symlink between the check and the write cannot
//! redirect the operation outside.
//!
//! - On Linux 5.6+ a path below the root is opened with `openat2(2)` and
//!   `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the kernel refuses (`EXDEV`) any step that
//!   leaves the root, through `..`, an absolute symlink, or a `/proc` magic link.
//! - Elsewhere (older kernels, a seccomp filter that rejects `openat2`, other Unix
//!   systems) the path is walked one component at a time with `O_NOFOLLOW`; any symlink
//!   on the way is refused (`ELOOP`). The paths this module is given are the canonical
//!   locations the check produced, which contain no symlinks, so the walk refuses only
//!   what a race put there.
//! - The temporary file of an atomic write is created with `O_EXCL | O_NOFOLLOW` in the
//!   directory handle of the target and renamed within that same handle.
//!
//! The same approach as the `cap-std` capability library and `openat2(2)`'s own
//! rationale (man page, "RESOLVE_BENEATH").

use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

/// An open handle of the canonical workspace directory.
#[derive(Debug)]
pub struct Root {
    path: PathBuf,
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
}

impl PartialEq for Root {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Eq for Root {}

impl Root {
    /// Opens the directory `canonical` (which should already be canonical: it is the
    /// prefix every checked path is compared with).
    ///
    /// Errors: the host error when it cannot be opened as a directory.
    pub fn open(canonical: &Path) -> io::Result<Root> {
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let fd = rustix::fs::open(
                canonical,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            Ok(Root {
                path: canonical.to_path_buf(),
                fd,
            })
        }
        #[cfg(not(unix))]
        {
            if !canonical.is_dir() {
                return Err(io::Error::new(io::ErrorKind::NotFound, "not a directory"));
            }
            Ok(Root {
                path: canonical.to_path_buf(),
            })
        }
    }

    /// The canonical path the handle was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the file at `rel` (relative to the root) for reading. The open does not
    /// block on a FIFO or a device (`O_NONBLOCK`), so callers can check the file type
    /// with [`File::metadata`] before reading.
    ///
    /// Errors: `NotFound`; `CrossesDevices`/`InvalidInput`-like host errors (`EXDEV`,
    /// `ELOOP`) when resolution would leave the root — see [`is_escape`].
    pub fn open_read(&self, rel: &Path) -> io::Result<File> {
        #[cfg(unix)]
        {
            use rustix::fs::OFlags;
            let fd = self.open_beneath(rel, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY)?;
            let file = File::from(fd);
            // Regular files ignore O_NONBLOCK; clear it anyway so reads behave normally.
            let _ = rustix::fs::fcntl_setfl(&file, OFlags::empty());
            Ok(file)
        }
        #[cfg(not(unix))]
        {
            File::open(self.path.join(rel))
        }
    }

    /// Creates every missing directory above `rel`, outermost first, and returns the
    /// created ones relative to the root. Each level is created with `mkdirat` in the
    /// handle of its parent and opened with `O_NOFOLLOW`, so a symlink appearing at any
    /// level is an error rather than a redirection.
    ///
    /// Errors: host errors; `ELOOP`/`ENOTDIR` when a level is a symlink or a file.
    pub fn create_parents(&self, rel: &Path) -> io::Result<Vec<PathBuf>> {
        let Some(parent) = rel.parent() else {
            return Ok(Vec::new());
        };
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let mut created = Vec::new();
            let mut cur: Option<std::os::fd::OwnedFd> = None;
            let mut sofar = PathBuf::new();
            for part in normal_components(parent)? {
                sofar.push(part);
                let dir = cur.as_ref().map_or_else(|| fd_ref(&self.fd), fd_ref);
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let next = match rustix::fs::openat(dir, part, flags, Mode::empty()) {
                    Ok(fd) => fd,
                    Err(rustix::io::Errno::NOENT) => {
                        match rustix::fs::mkdirat(dir, part, Mode::from_raw_mode(0o777)) {
                            Ok(()) => created.push(sofar.clone()),
                            Err(rustix::io::Errno::EXIST) => {}
                            Err(e) => return Err(e.into()),
                        }
                        rustix::fs::openat(dir, part, flags, Mode::empty())?
                    }
                    Err(e) => return Err(e.into()),
                };
                cur = Some(next);
            }
            Ok(created)
        }
        #[cfg(not(unix))]
        {
            let mut created = Vec::new();
            let mut sofar = PathBuf::new();
            for part in normal_components(parent)? {
                sofar.push(part);
                match std::fs::create_dir(self.path.join(&sofar)) {
                    Ok(()) => created.push(sofar.clone()),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(created)
        }
    }

    /// The permission bits and owner of the regular file at `rel` (not following a
    /// symlink), or `None` when nothing regular is there.
    ///
    /// Errors: host I/O errors other than "not found" while opening the parent directory.
    pub fn ownership(&self, rel: &Path) -> io::Result<Option<Ownership>> {
        #[cfg(unix)]
        {
            use rustix::fs::OFlags;
            let name = rel
                .file_name()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
            let parent = rel.parent().unwrap_or(Path::new(""));
            let dir = match self
                .open_beneath(parent, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC)
            {
                Ok(d) => d,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            Ok(stat_ownership(&dir, name))
        }
        #[cfg(not(unix))]
        {
            let _ = rel;
            Ok(None)
        }
    }

    /// Replaces (or creates) the file at `rel` with `bytes` atomically, keeping the
    /// permission bits and owner of the file it replaces; see [`Root::write_atomic_as`].
    ///
    /// Errors: host I/O errors; the temporary file is removed on failure and the target
    /// is untouched.
    pub fn write_atomic(&self, rel: &Path, bytes: &[u8]) -> io::Result<()> {
        self.write_atomic_as(rel, bytes, None)
    }

    /// Replaces (or creates) the file at `rel` with `bytes` atomically: a temporary file
    /// is created in the directory handle of `rel`'s parent, written, given its
    /// permissions and owner, fsynced and renamed over `rel` within that same handle; the
    /// directory is then fsynced (best effort). The parent directory must exist.
    ///
    /// Permissions and owner come from `like` when given (a moved file keeps its own),
    /// else from the regular file being replaced. The owner and group are set with
    /// `fchown` on the temporary file before its mode (which `chown` would clear setuid
    /// bits from) and before the rename; a process that may not give the file away (not
    /// root) keeps what it can (the group when it is a member) and writes anyway, as
    /// editors do. A new file is created with mode `0o666` filtered by the process umask
    /// (and the directory's default ACL), as editors and `git checkout` create files.
    ///
    /// Errors: host I/O errors; the temporary file is removed on failure and the target
    /// is untouched.
    pub fn write_atomic_as(
        &self,
        rel: &Path,
        bytes: &[u8],
        like: Option<Ownership>,
    ) -> io::Result<()> {
        let name = rel
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        #[cfg(unix)]
        {
            use rustix::fs::{AtFlags, Mode, OFlags};
            use std::io::Write;
            let dir =
                self.open_beneath(parent, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC)?;
            let old = if like.is_none() {
                open_replaced(&dir, name)?
            } else {
                None
            };
            if let Some(old) = &old
                && rustix::fs::fstat(old)?.st_nlink > 1
            {
                return write_in_place(&dir, name, old, bytes);
            }
            let keep = like.or_else(|| stat_ownership(&dir, name));
            // A replacement starts private until its owner and mode are set; a new file
            // gets the umask's default from the kernel.
            let (tmp_name, fd) = create_temp(&dir, if keep.is_some() { 0o600 } else { 0o666 })?;
            let result = (|| {
                let mut file = File::from(fd);
                file.write_all(bytes)?;
                file.flush()?;
                if let Some(k) = keep {
                    keep_owner(&file, k)?;
                    if let Some(old) = &old {
                        copy_xattrs(old, &file);
                    }
                    rustix::fs::fchmod(&file, Mode::from_raw_mode(k.mode))?;
                }
                file.sync_all()?;
                rustix::fs::renameat(&dir, &tmp_name, &dir, name)?;
                Ok::<(), io::Error>(())
            })();
            if let Err(e) = result {
                let _ = rustix::fs::unlinkat(&dir, &tmp_name, AtFlags::empty());
                return Err(e);
            }
            let _ = rustix::fs::fsync(&dir);
            Ok(())
        }
        #[cfg(not(unix))]
        {
            use std::io::Write;
            let _ = (name, like);
            let dir = self.path.join(parent);
            let old = std::fs::metadata(self.path.join(rel))
                .ok()
                .map(|m| m.permissions());
            let mut tmp = tempfile::Builder::new()
                .prefix(".codesmith-")
                .suffix(".tmp")
                .tempfile_in(&dir)?;
            tmp.write_all(bytes)?;
            tmp.flush()?;
            if let Some(p) = old {
                tmp.as_file().set_permissions(p)?;
            }
            tmp.as_file().sync_all()?;
            tmp.persist(self.path.join(rel)).map_err(|e| e.error)?;
            Ok(())
        }
    }

    /// Opens the file CodeSmith keeps on its own behalf at `rel` (a ledger, an index)
    /// for reading and appending, creating it with mode `0o644` (filtered by the umask)
    /// when missing. No symlink is followed at any level (each step is opened with
    /// `O_NOFOLLOW`), and anything but a regular file with one hard link is refused, so a
    /// link the workspace ships cannot send CodeSmith's own write elsewhere. The parent
    /// directories must exist (see [`Root::create_parents`]).
    ///
    /// Errors: `ELOOP` for a symlink on the way ([`is_escape`]); `PermissionDenied` for
    /// a hard-linked or non-regular file; other host errors.
    pub fn open_own_append(&self, rel: &Path) -> io::Result<File> {
        #[cfg(unix)]
        {
            use rustix::fs::OFlags;
            let parts = normal_components(rel)?;
            let fd = walk_nofollow_mode(
                &self.fd,
                &parts,
                OFlags::RDWR | OFlags::APPEND | OFlags::CREATE | OFlags::NONBLOCK | OFlags::CLOEXEC,
                0o644,
            )?;
            own_file(fd)
        }
        #[cfg(not(unix))]
        {
            std::fs::OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .open(self.path.join(rel))
        }
    }

    /// Opens the file CodeSmith keeps on its own behalf at `rel` for reading, with the
    /// refusals of [`Root::open_own_append`].
    ///
    /// Errors: `NotFound` when missing; as [`Root::open_own_append`].
    pub fn open_own_read(&self, rel: &Path) -> io::Result<File> {
        #[cfg(unix)]
        {
            use rustix::fs::OFlags;
            let parts = normal_components(rel)?;
            let fd = walk_nofollow_mode(
                &self.fd,
                &parts,
                OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
                0,
            )?;
            own_file(fd)
        }
        #[cfg(not(unix))]
        {
            File::open(self.path.join(rel))
        }
    }

    /// Replaces the file CodeSmith keeps on its own behalf at `rel` with `bytes`
    /// atomically (temporary file renamed over it). A symlink, a hard-linked file or
    /// anything not regular at `rel`, or a symlink on the way to it, is refused rather
    /// than replaced or written through. The parent directory must exist.
    ///
    /// Errors: as [`Root::open_own_append`]; host I/O errors.
    pub fn replace_own(&self, rel: &Path, bytes: &[u8]) -> io::Result<()> {
        #[cfg(unix)]
        {
            use rustix::fs::{AtFlags, FileType, OFlags};
            let name = rel
                .file_name()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
            let parent = rel.parent().unwrap_or(Path::new(""));
            let parts = normal_components(parent)?;
            let dir = walk_nofollow_mode(
                &self.fd,
                &parts,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                0,
            )?;
            let like = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => {
                    let kind = FileType::from_raw_mode(st.st_mode);
                    if kind.is_symlink() {
                        return Err(rustix::io::Errno::LOOP.into());
                    }
                    if !kind.is_file() || st.st_nlink > 1 {
                        return Err(not_own_file());
                    }
                    Ownership {
                        mode: st.st_mode & 0o7777,
                        uid: st.st_uid,
                        gid: st.st_gid,
                    }
                }
                Err(rustix::io::Errno::NOENT) => {
                    let st = rustix::fs::fstat(&dir)?;
                    Ownership {
                        mode: 0o644,
                        uid: st.st_uid,
                        gid: st.st_gid,
                    }
                }
                Err(e) => return Err(e.into()),
            };
            // With `like` given the target is always renamed over, never written in place.
            self.write_atomic_as(rel, bytes, Some(like))
        }
        #[cfg(not(unix))]
        {
            self.write_atomic(rel, bytes)
        }
    }

    /// Removes the file (or symlink) at `rel`, in the directory handle of its parent.
    ///
    /// Errors: host I/O errors (`NotFound` when nothing is there).
    pub fn remove_file(&self, rel: &Path) -> io::Result<()> {
        self.unlink(rel, false)
    }

    /// Removes the empty directory at `rel`, in the directory handle of its parent.
    ///
    /// Errors: host I/O errors (for example when it is not empty).
    pub fn remove_dir(&self, rel: &Path) -> io::Result<()> {
        self.unlink(rel, true)
    }

    fn unlink(&self, rel: &Path, dir: bool) -> io::Result<()> {
        #[cfg(unix)]
        {
            use rustix::fs::{AtFlags, OFlags};
            let name = rel
                .file_name()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
            let parent = self.open_beneath(
                rel.parent().unwrap_or(Path::new("")),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            )?;
            let flags = if dir {
                AtFlags::REMOVEDIR
            } else {
                AtFlags::empty()
            };
            Ok(rustix::fs::unlinkat(&parent, name, flags)?)
        }
        #[cfg(not(unix))]
        {
            if dir {
                std::fs::remove_dir(self.path.join(rel))
            } else {
                std::fs::remove_file(self.path.join(rel))
            }
        }
    }

    /// Opens `rel` below the root with `flags`: `openat2` with `RESOLVE_BENEATH |
    /// RESOLVE_NO_MAGICLINKS` on Linux, the `O_NOFOLLOW` walk where that is unavailable.
    #[cfg(unix)]
    fn open_beneath(
        &self,
        rel: &Path,
        flags: rustix::fs::OFlags,
    ) -> io::Result<std::os::fd::OwnedFd> {
        use rustix::fs::{Mode, OFlags};
        let parts = normal_components(rel)?;
        let flags = flags | OFlags::CLOEXEC;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            use rustix::fs::ResolveFlags;
            let joined: PathBuf = if parts.is_empty() {
                PathBuf::from(".")
            } else {
                parts.iter().collect()
            };
            match rustix::fs::openat2(
                &self.fd,
                &joined,
                flags,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            ) {
                Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {}
                // openat2 may fail with EAGAIN when a concurrent rename races the lookup;
                // the walk below gives a definite answer.
                Err(rustix::io::Errno::AGAIN) => {}
                other => return Ok(other?),
            }
        }
        walk_nofollow(&self.fd, &parts, flags)
    }
}

/// The component-wise walk: every intermediate directory is opened with
/// `O_NOFOLLOW | O_DIRECTORY`, the last component with `O_NOFOLLOW` and `flags`.
#[cfg(unix)]
fn walk_nofollow(
    root: &std::os::fd::OwnedFd,
    parts: &[&std::ffi::OsStr],
    flags: rustix::fs::OFlags,
) -> io::Result<std::os::fd::OwnedFd> {
    walk_nofollow_mode(root, parts, flags, 0)
}

/// A file opened for CodeSmith's own bookkeeping: regular, one hard link.
#[cfg(unix)]
fn own_file(fd: std::os::fd::OwnedFd) -> io::Result<File> {
    use rustix::fs::{FileType, OFlags};
    let st = rustix::fs::fstat(&fd)?;
    if !FileType::from_raw_mode(st.st_mode).is_file() || st.st_nlink > 1 {
        return Err(not_own_file());
    }
    let file = File::from(fd);
    let _ = rustix::fs::fcntl_setfl(&file, rustix::fs::fcntl_getfl(&file)? & !OFlags::NONBLOCK);
    Ok(file)
}

#[cfg(unix)]
fn not_own_file() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "not a regular file with a single hard link; CodeSmith does not write its own \
         files through a link (remove it and retry)",
    )
}

/// [`walk_nofollow`] with the creation mode of the last component (used with `O_CREAT`).
#[cfg(unix)]
fn walk_nofollow_mode(
    root: &std::os::fd::OwnedFd,
    parts: &[&std::ffi::OsStr],
    flags: rustix::fs::OFlags,
    mode: u32,
) -> io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let Some((last, dirs)) = parts.split_last() else {
        return Ok(rustix::fs::openat(root, ".", flags, Mode::empty())?);
    };
    let mut cur: Option<std::os::fd::OwnedFd> = None;
    for part in dirs {
        let dir = cur.as_ref().map_or_else(|| fd_ref(root), fd_ref);
        let next = match rustix::fs::openat(
            dir,
            *part,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            // `O_DIRECTORY | O_NOFOLLOW` on a symlink reports ENOTDIR; name it a symlink.
            Err(rustix::io::Errno::NOTDIR)
                if rustix::fs::statat(dir, *part, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| {
                        rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink()
                    }) =>
            {
                return Err(rustix::io::Errno::LOOP.into());
            }
            Err(e) => return Err(e.into()),
        };
        cur = Some(next);
    }
    let dir = cur.as_ref().map_or_else(|| fd_ref(root), fd_ref);
    Ok(rustix::fs::openat(
        dir,
        *last,
        flags | OFlags::NOFOLLOW,
        Mode::from_raw_mode(mode),
    )?)
}

#[cfg(unix)]
fn fd_ref(fd: &std::os::fd::OwnedFd) -> std::os::fd::BorrowedFd<'_> {
    use std::os::fd::AsFd;
    fd.as_fd()
}

/// The permission bits and owner of a file, as an atomic replacement keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ownership {
    /// Permission bits, including setuid/setgid/sticky (`st_mode & 0o7777`).
    pub mode: u32,
    /// Owning user id.
    pub uid: u32,
    /// Owning group id.
    pub gid: u32,
}

/// The ownership of the regular file `name` in `dir` (a symlink is not followed).
#[cfg(unix)]
fn stat_ownership(dir: &std::os::fd::OwnedFd, name: &std::ffi::OsStr) -> Option<Ownership> {
    match rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() => Some(Ownership {
            mode: st.st_mode & 0o7777,
            uid: st.st_uid,
            gid: st.st_gid,
        }),
        _ => None,
    }
}

/// Gives `file` the owner and group of `k` when they differ. Without the privilege to
/// (`EPERM`), the group alone is tried and then nothing is changed.
#[cfg(unix)]
fn keep_owner(file: &File, k: Ownership) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let st = file.metadata()?;
    if st.uid() == k.uid && st.gid() == k.gid {
        return Ok(());
    }
    match std::os::unix::fs::fchown(file, Some(k.uid), Some(k.gid)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            let _ = std::os::unix::fs::fchown(file, None, Some(k.gid));
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The regular file `name` in `dir` opened for reading (not following a symlink, not
/// blocking), or `None` when there is none.
#[cfg(unix)]
fn open_replaced(
    dir: &std::os::fd::OwnedFd,
    name: &std::ffi::OsStr,
) -> io::Result<Option<std::os::fd::OwnedFd>> {
    use rustix::fs::{FileType, Mode, OFlags};
    match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode).is_file() => {
            Ok(Some(fd))
        }
        // No file, a symlink, or one this process may not read: nothing to keep beyond
        // the mode and owner `stat` gives.
        Ok(_)
        | Err(
            rustix::io::Errno::NOENT
            | rustix::io::Errno::LOOP
            | rustix::io::Errno::ACCESS
            | rustix::io::Errno::PERM,
        ) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Rewrites the hard-linked regular file `old` (open as `name` in `dir`) in place, so every
/// name of it sees the new bytes (a rename would silently split the link, leaving the other
/// names with the old text), as editors do for hard-linked files (Vim's `backupcopy=auto`).
/// Mode, owner and extended attributes are the inode's own and stay. Not atomic: the file
/// is truncated, written and fsynced through a second handle checked to be the same inode.
#[cfg(unix)]
fn write_in_place(
    dir: &std::os::fd::OwnedFd,
    name: &std::ffi::OsStr,
    old: &std::os::fd::OwnedFd,
    bytes: &[u8],
) -> io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    use std::io::Write;
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let (a, b) = (rustix::fs::fstat(old)?, rustix::fs::fstat(&fd)?);
    if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino) {
        return Err(io::Error::new(
            io::ErrorKind::Interrupted,
            "the file was replaced while it was being written",
        ));
    }
    let mut file = File::from(fd);
    file.set_len(0)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Copies the extended attributes of `from` onto `to` (user attributes, POSIX ACLs, security
/// labels), best effort: an attribute the file system or the process may not set is left
/// out, as `cp --preserve=xattr` does.
#[cfg(unix)]
fn copy_xattrs(from: &std::os::fd::OwnedFd, to: &File) {
    let Ok(len) = rustix::fs::flistxattr_query(from) else {
        return;
    };
    let mut names = vec![0u8; len];
    let Ok(len) = rustix::fs::flistxattr(from, &mut names[..]) else {
        return;
    };
    for name in names[..len].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let Ok(name) = std::ffi::CString::new(name) else {
            continue;
        };
        let Ok(size) = rustix::fs::fgetxattr_query(from, name.as_c_str()) else {
            continue;
        };
        let mut value = vec![0u8; size];
        if let Ok(n) = rustix::fs::fgetxattr(from, name.as_c_str(), &mut value[..]) {
            let _ = rustix::fs::fsetxattr(
                to,
                name.as_c_str(),
                &value[..n],
                rustix::fs::XattrFlags::empty(),
            );
        }
    }
}

/// Creates `.codesmith-<n>.tmp` with `O_CREAT | O_EXCL | O_NOFOLLOW` in `dir` with `mode`
/// (filtered by the umask), retrying on a name collision.
#[cfg(unix)]
fn create_temp(
    dir: &std::os::fd::OwnedFd,
    mode: u32,
) -> io::Result<(String, std::os::fd::OwnedFd)> {
    use rustix::fs::{Mode, OFlags};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    for _ in 0..64 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!(".codesmith-{}-{nanos:x}-{n}.tmp", std::process::id());
        match rustix::fs::openat(
            dir,
            &name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => return Ok((name, fd)),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary file name",
    ))
}

/// The plain components of a root-relative path. `..`, a root or a prefix is refused
/// (`InvalidInput`): callers pass the canonical location below the root.
fn normal_components(rel: &Path) -> io::Result<Vec<&std::ffi::OsStr>> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "path is not relative to the workspace root",
                ));
            }
        }
    }
    Ok(out)
}

/// True when `e` means resolution would have left the root: `EXDEV` from `openat2`
/// `RESOLVE_BENEATH`, or `ELOOP` from an `O_NOFOLLOW` step that met a symlink.
pub fn is_escape(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(
            e.raw_os_error(),
            Some(c) if c == rustix::io::Errno::XDEV.raw_os_error()
                || c == rustix::io::Errno::LOOP.raw_os_error()
        )
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn writes_reads_and_removes_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::open(&dir.path().canonicalize().unwrap()).unwrap();
        let made = root.create_parents(Path::new("a/b/c.txt")).unwrap();
        assert_eq!(made, vec![PathBuf::from("a"), PathBuf::from("a/b")]);
        root.write_atomic(Path::new("a/b/c.txt"), b"one").unwrap();
        root.write_atomic(Path::new("a/b/c.txt"), b"two").unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut root.open_read(Path::new("a/b/c.txt")).unwrap(), &mut s)
            .unwrap();
        assert_eq!(s, "two");
        // No temporary file is left behind.
        assert_eq!(
            std::fs::read_dir(dir.path().join("a/b")).unwrap().count(),
            1
        );
        root.remove_file(Path::new("a/b/c.txt")).unwrap();
        root.remove_dir(Path::new("a/b")).unwrap();
        assert!(!dir.path().join("a/b").exists());
        assert!(root.open_read(Path::new("../x")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_to_outside_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap().join("ws");
        let out = dir.path().canonicalize().unwrap().join("out");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(&out, ws.join("link")).unwrap();
        let root = Root::open(&ws).unwrap();
        let e = root.open_read(Path::new("link/secret")).unwrap_err();
        assert!(is_escape(&e), "{e}");
        assert!(root.write_atomic(Path::new("link/new"), b"x").is_err());
        assert!(root.create_parents(Path::new("link/d/f")).is_err());
        assert!(!out.join("new").exists() && !out.join("d").exists());
        let parts = [std::ffi::OsStr::new("link"), std::ffi::OsStr::new("secret")];
        let e = walk_nofollow(&root.fd, &parts, rustix::fs::OFlags::RDONLY).unwrap_err();
        assert!(is_escape(&e));
    }
}
