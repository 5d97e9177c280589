//! The steps a sandboxed command takes between `fork` and the `exec` of bubblewrap, in
//! the command's own process (after its reaper was forked, see `crate::shell`):
//!
//! 1. join the resource-limit cgroups and set `RLIMIT_NPROC` and `RLIMIT_CORE`
//!    ([`super::limits`]), so no shell has to be started for it;
//! 2. when CodeSmith runs as root: in a private mount namespace of this process only,
//!    stage the host paths the sandbox offers under a fresh tmpfs (each a detached clone
//!    of its tree, `open_tree(2)` + `move_mount(2)`; the writable ones through an idmapped
//!    mount, `mount_setattr(2)` with `MOUNT_ATTR_IDMAP`, that shows the files' owner as the
//!    sandbox's user and writes files with their owner's id), then give up root for good:
//!    no supplementary groups, real, effective and saved ids all [`SANDBOX_UID`]. bubblewrap
//!    then runs unprivileged and its user namespace maps to that host uid, never to 0;
//! 3. a new, empty session keyring (`keyctl(KEYCTL_JOIN_SESSION_KEYRING)`), so nothing of
//!    the caller's keyrings is reachable;
//! 4. every inherited descriptor above stderr is marked close-on-exec except the seccomp
//!    filters bubblewrap reads.
//!
//! The code that runs in the child is limited to raw system calls on memory prepared
//! before the fork: it runs in the child of a multi-threaded process, where allocating or
//! taking a lock is not safe.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use super::SANDBOX_UID;

/// Most paths one command stages (a command with more is refused before it starts).
pub(crate) const MAX_STAGED: usize = 64;

const OPEN_TREE_CLONE: libc::c_uint = 1;
const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const AT_EMPTY_PATH: libc::c_uint = 0x1000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// One host path staged for a root harness.
#[derive(Debug)]
pub(crate) struct Staged {
    /// The host path.
    source: CString,
    /// Where it is staged (`<staging>/<n>`).
    target: CString,
    /// True for a directory (the mount point made is a directory, else an empty file).
    dir: bool,
    /// The user namespace of the idmapping for a writable path.
    idmap: Option<RawFd>,
}

/// Everything the child needs, prepared before the fork.
#[derive(Debug, Default)]
pub(crate) struct Prelude {
    /// `cgroup.procs` files to join.
    pub(crate) cgroup_procs: Vec<CString>,
    /// `RLIMIT_NPROC`.
    pub(crate) nproc: u64,
    /// The staging directory and staged paths, when CodeSmith is root.
    pub(crate) staging: Option<CString>,
    pub(crate) staged: Vec<Staged>,
    /// The uid and gid to become (when CodeSmith is root).
    pub(crate) drop_to: Option<(u32, u32)>,
    /// Descriptors bubblewrap must inherit (the seccomp filters).
    pub(crate) keep: Vec<OwnedFd>,
}

impl Prelude {
    /// Adds `source` (a host path) to the staged paths and returns where bubblewrap finds it;
    /// writable paths get the idmapping of their owner.
    ///
    /// # Errors
    /// More than [`MAX_STAGED`] paths, a path with a NUL byte, or an idmapping that could not
    /// be made.
    pub(crate) fn stage(
        &mut self,
        staging: &Path,
        source: &Path,
        writable: bool,
    ) -> io::Result<std::path::PathBuf> {
        if self.staged.len() >= MAX_STAGED {
            return Err(io::Error::other(format!(
                "more than {MAX_STAGED} paths to offer the sandbox"
            )));
        }
        let meta = std::fs::metadata(source)?;
        let target = staging.join(self.staged.len().to_string());
        let idmap = if writable {
            use std::os::unix::fs::MetadataExt;
            Some(idmap_userns(meta.uid(), meta.gid())?)
        } else {
            None
        };
        self.staged.push(Staged {
            source: cstring(source)?,
            target: cstring(&target)?,
            dir: meta.is_dir(),
            idmap,
        });
        Ok(target)
    }

    /// Runs the steps in the forked child. Only raw system calls on prepared memory.
    ///
    /// # Errors
    /// The `errno` of the first step that failed; the command then does not start.
    pub(crate) fn run(&self) -> io::Result<()> {
        // SAFETY: system calls on memory owned by `self`, prepared before the fork, and on
        // stack buffers; nothing allocates or locks.
        unsafe {
            let pid = libc::getpid();
            let mut digits = [0u8; 24];
            let len = decimal(pid as u64, &mut digits);
            for file in &self.cgroup_procs {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                let wrote = libc::write(fd, digits.as_ptr().cast(), len);
                libc::close(fd);
                if wrote < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            let nproc = libc::rlimit {
                rlim_cur: self.nproc,
                rlim_max: self.nproc,
            };
            libc::setrlimit(libc::RLIMIT_NPROC, &nproc);
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            if let Some(staging) = &self.staging {
                self.stage_mounts(staging)?;
            }
            if libc::chdir(c"/".as_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some((uid, gid)) = self.drop_to {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setresgid(gid, gid, gid) != 0
                    || libc::setresuid(uid, uid, uid) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                // Root must be gone for good: getting it back must fail.
                if libc::setresuid(0, 0, 0) == 0 {
                    return Err(io::Error::from_raw_os_error(libc::EPERM));
                }
                // A change of credentials clears the parent-death signal: the command must
                // still die with its reaper.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            }
            // A fresh anonymous session keyring; where keyrings are unavailable (a
            // container's own filter) there is nothing to inherit either.
            libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_JOIN_SESSION_KEYRING,
                std::ptr::null::<libc::c_char>(),
            );
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            );
            for fd in &self.keep {
                if libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }

    /// Stages the paths (see the module documentation, step 2).
    unsafe fn stage_mounts(&self, staging: &CString) -> io::Result<()> {
        // SAFETY: as in `run`.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            let mut fds = [-1 as RawFd; MAX_STAGED];
            for (i, s) in self.staged.iter().enumerate() {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    s.source.as_ptr(),
                    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE,
                ) as RawFd;
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                fds[i] = fd;
                if let Some(userns) = s.idmap {
                    let attr = MountAttr {
                        attr_set: MOUNT_ATTR_IDMAP,
                        attr_clr: 0,
                        propagation: 0,
                        userns_fd: userns as u64,
                    };
                    if libc::syscall(
                        libc::SYS_mount_setattr,
                        fd,
                        c"".as_ptr(),
                        AT_EMPTY_PATH,
                        &raw const attr,
                        std::mem::size_of::<MountAttr>(),
                    ) != 0
                    {
                        return Err(io::Error::last_os_error());
                    }
                }
            }
            if libc::mount(
                c"tmpfs".as_ptr(),
                staging.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                c"mode=0755".as_ptr().cast(),
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            for (i, s) in self.staged.iter().enumerate() {
                if s.dir {
                    if libc::mkdir(s.target.as_ptr(), 0o755) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                } else {
                    let f = libc::open(
                        s.target.as_ptr(),
                        libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                        0o644,
                    );
                    if f < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    libc::close(f);
                }
                if libc::syscall(
                    libc::SYS_move_mount,
                    fds[i],
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    s.target.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                libc::close(fds[i]);
            }
        }
        Ok(())
    }
}

/// Writes `n` in decimal into `buf`; returns the length.
fn decimal(mut n: u64, buf: &mut [u8; 24]) -> usize {
    let mut tmp = [0u8; 24];
    let mut i = 0;
    loop {
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        i += 1;
        if n == 0 {
            break;
        }
    }
    for j in 0..i {
        buf[j] = tmp[i - 1 - j];
    }
    i
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other(format!("{} has a NUL byte", path.display())))
}

/// A pipe whose read end holds `bytes` (at most a pipe's capacity) and is close-on-exec
/// until [`Prelude::run`] clears that in the child.
pub(crate) fn pipe_with(bytes: &[u8]) -> io::Result<OwnedFd> {
    let (read, write) = pipe()?;
    let mut file = std::fs::File::from(write);
    io::Write::write_all(&mut file, bytes)?;
    drop(file);
    Ok(read)
}

/// The user namespace whose idmapping shows files owned by `uid`/`gid` as owned by
/// [`SANDBOX_UID`], made once per owner and kept for the life of the process.
fn idmap_userns(uid: u32, gid: u32) -> io::Result<RawFd> {
    static MADE: Mutex<Option<HashMap<(u32, u32), OwnedFd>>> = Mutex::new(None);
    let mut made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
    let map = made.get_or_insert_with(HashMap::new);
    if let Some(fd) = map.get(&(uid, gid)) {
        return Ok(fd.as_raw_fd());
    }
    let fd = new_userns(
        &format!("{uid} {SANDBOX_UID} 1\n"),
        &format!("{gid} {SANDBOX_UID} 1\n"),
    )?;
    let raw = fd.as_raw_fd();
    map.insert((uid, gid), fd);
    Ok(raw)
}

/// Makes a user namespace with the given maps: a forked child enters a new one and waits
/// while this process writes its maps and opens it, then exits.
fn new_userns(uid_map: &str, gid_map: &str) -> io::Result<OwnedFd> {
    let (ready_read, ready_write) = pipe()?;
    let (release_read, release_write) = pipe()?;
    let (ready_fd, release_fd) = (ready_write.as_raw_fd(), release_read.as_raw_fd());
    let (parent_read, parent_release) = (ready_read.as_raw_fd(), release_write.as_raw_fd());
    // SAFETY: the child makes only raw system calls on descriptors that exist before the
    // fork, then exits with `_exit`; it never returns into Rust code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            // The parent's ends: the child must not hold the release pipe open itself.
            libc::close(parent_read);
            libc::close(parent_release);
            let ok: u8 = u8::from(libc::unshare(libc::CLONE_NEWUSER) == 0);
            libc::write(ready_fd, (&raw const ok).cast(), 1);
            let mut byte = 0u8;
            libc::read(release_fd, (&raw mut byte).cast(), 1);
            libc::_exit(0);
        }
    }
    drop(ready_write);
    drop(release_read);
    let mut ok = 0u8;
    // SAFETY: reads one byte into a stack variable.
    let got = unsafe { libc::read(ready_read.as_raw_fd(), (&raw mut ok).cast(), 1) };
    let result = if got == 1 && ok == 1 {
        (|| {
            std::fs::write(format!("/proc/{pid}/uid_map"), uid_map)?;
            std::fs::write(format!("/proc/{pid}/gid_map"), gid_map)?;
            std::fs::File::open(format!("/proc/{pid}/ns/user")).map(OwnedFd::from)
        })()
    } else {
        Err(io::Error::other(
            "could not make a user namespace for the idmapped workspace",
        ))
    };
    // The child reads end-of-file and exits.
    drop(release_write);
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(pid, &raw mut status, 0) };
    result
}

/// A close-on-exec pipe: (read end, write end).
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [RawFd; 2] = [-1; 2];
    // SAFETY: pipe2 fills the two descriptors, owned here alone from then on.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// The first directory of `/mnt`, `/media`, `/srv` that exists as a real directory: where a
/// root harness stages paths in its private mount namespace (bubblewrap never shows these
/// inside).
pub(crate) fn staging_dir() -> Option<&'static Path> {
    ["/mnt", "/media", "/srv"]
        .into_iter()
        .map(Path::new)
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_writes_digits() {
        let mut buf = [0u8; 24];
        let n = decimal(1_234_567, &mut buf);
        assert_eq!(&buf[..n], b"1234567");
        let n = decimal(0, &mut buf);
        assert_eq!(&buf[..n], b"0");
    }
}
