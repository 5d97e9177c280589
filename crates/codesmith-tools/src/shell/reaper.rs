//! The per-command reaper: the process that holds a command's whole tree, however it
//! detached, and takes it down when the command ends or when CodeSmith dies.
//!
//! Every shell command is started through a tiny reaper `R`, forked (not executed) in the
//! child that `Command::spawn` creates, just before the exec:
//!
//! ```text
//! codesmith ── R (child subreaper, parent-death signal SIGTERM, group leader)
//!               └── bash -c … (parent-death signal SIGKILL)  ── everything it starts
//! ```
//!
//! - `R` is a child subreaper (`PR_SET_CHILD_SUBREAPER`, see `prctl(2)`): a process of the
//!   command whose parent dies (`setsid -f`, `nohup … &`, a double fork, a daemonizing
//!   `fork(); setsid(); fork()`) is re-parented to `R`, not to CodeSmith or init. So while
//!   `R` lives, the command's processes are exactly `R`'s descendants by parent link, a
//!   mark that no `setsid`, `env -i` or process-group change can shed.
//! - `R` reports the command's wait status on a pipe as soon as the command's own shell
//!   exits, and then stays, holding what the shell left behind, until CodeSmith has swept
//!   it (`super::tree`) and tells `R` to finish with `SIGTERM`.
//! - On `SIGTERM`, `SIGINT` or `SIGHUP`, and on the death of CodeSmith (its parent-death
//!   signal, `PR_SET_PDEATHSIG`, is `SIGTERM`; this covers a `SIGKILL` of CodeSmith, which
//!   nothing can catch), `R` sends `SIGKILL` to each of its children, again and again as
//!   the grandchildren of killed processes are re-parented to it, reaps them all and
//!   exits.
//! - The shell gets `SIGKILL` as its own parent-death signal, so it cannot outlive `R`.
//!
//! Limits: the parent-death signal fires when the *thread* that spawned the command ends
//! (see `prctl(2)`), which in CodeSmith is the main thread or a runtime worker, both of
//! which live as long as the process. A process that makes itself a subreaper, moves to a
//! PID namespace of its own and outlives its namespace's parent can still escape. One that
//! kills `R` itself with `SIGKILL` (it runs as the same user) hands what `R` held to
//! CodeSmith, a child subreaper too, whose sweep then takes those orphans (see
//! `super::tree::kill_tree`) unless it kills CodeSmith as well. The sandbox's PID namespace
//! (`bwrap --unshare-pid --die-with-parent`) closes that for sandboxed commands.
//!
//! The code that runs in `R` is limited to raw system calls on stack buffers: it runs in
//! the child of a `fork` of a multi-threaded process, where allocating or taking a lock
//! is not safe.

use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// The comm name of a reaper (`/proc/PID/comm`), so `ps` shows what it is.
pub(crate) const REAPER_NAME: &CStr = c"codesmith-reap";

/// How often a finishing reaper repeats its kill sweep while children remain.
const SWEEP_EVERY_NS: i64 = 5_000_000;
/// Sweeps at that pace before a reaper whose children will not die (a process stuck in
/// the kernel, or one it may not signal) slows down to one sweep a second.
const FAST_SWEEPS: u32 = 2_000;

/// The two ends of the status pipe: `R` writes the shell's raw wait status (4 bytes,
/// native endian) into `write` when it exits; CodeSmith reads `read`.
pub(crate) struct StatusPipe {
    /// Read end, kept by CodeSmith.
    pub(crate) read: OwnedFd,
    /// Write end, kept only by the reaper (close-on-exec, and closed by CodeSmith after
    /// the spawn).
    pub(crate) write: OwnedFd,
}

impl StatusPipe {
    /// A new pipe, both ends close-on-exec.
    pub(crate) fn new() -> io::Result<Self> {
        let mut fds: [RawFd; 2] = [-1; 2];
        // SAFETY: pipe2 fills the two descriptors, which are then owned here alone.
        unsafe {
            if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(StatusPipe {
                read: OwnedFd::from_raw_fd(fds[0]),
                write: OwnedFd::from_raw_fd(fds[1]),
            })
        }
    }
}

/// Arranges for `cmd` to run under a reaper (see the module documentation). `status_fd`
/// is the write end of a [`StatusPipe`]; the caller closes its copy after the spawn.
pub(crate) fn install(cmd: &mut tokio::process::Command, status_fd: RawFd) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and only makes raw system
    // calls on stack memory (no allocation, no lock), as `fork(2)` in a multi-threaded
    // process requires.
    unsafe {
        cmd.pre_exec(move || fork_reaper(parent, status_fd));
    }
}

/// In the forked child: forks the command's process (which returns to exec it) and turns
/// this process into its reaper, which never returns.
fn fork_reaper(parent: libc::pid_t, status_fd: RawFd) -> io::Result<()> {
    // SAFETY: plain system calls on values owned by this function.
    unsafe {
        // Named first, then out of CodeSmith's process group: a sweep running for another
        // command at this moment spares CodeSmith's children in another group only when
        // they carry the reaper's name, so there is no instant at which this process is
        // in a group of its own without it.
        libc::prctl(
            libc::PR_SET_NAME,
            REAPER_NAME.as_ptr() as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stop = signal_set();
        let mut previous = MaybeUninit::<libc::sigset_t>::zeroed();
        if libc::sigprocmask(libc::SIG_BLOCK, &raw const stop, previous.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        let reaper = libc::getpid();
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                // The command's process: dies with its reaper, starts with the signal mask
                // it had, and no longer a subreaper (that setting is not inherited).
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != reaper {
                    libc::_exit(128 + libc::SIGKILL);
                }
                libc::sigprocmask(libc::SIG_SETMASK, previous.as_ptr(), std::ptr::null_mut());
                Ok(())
            }
            main => {
                // Its report may meet a closed pipe (CodeSmith died): that must not end it.
                libc::signal(libc::SIGPIPE, libc::SIG_IGN);
                close_all_but(status_fd);
                // The parent may have died before the parent-death signal was armed.
                let orphaned = libc::getppid() != parent;
                reap(main, status_fd, orphaned, &raw mut stop)
            }
        }
    }
}

/// The signals that tell a reaper to finish, plus `SIGCHLD`, which wakes it to reap.
fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigemptyset(set.as_mut_ptr());
        let mut set = set.assume_init();
        for sig in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&raw mut set, sig);
        }
        set
    }
}

/// Closes every descriptor but `keep`: the reaper must not hold the command's output pipes
/// (their end of file is how CodeSmith knows the output is complete) nor the spawn's error
/// pipe (whose end of file tells the spawn the exec succeeded).
fn close_all_but(keep: RawFd) {
    // SAFETY: closing descriptors this process no longer uses.
    unsafe {
        let below = if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0, keep - 1, 0)
        } else {
            0
        };
        let above = libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0);
        if below != 0 || above != 0 {
            // Kernels before 5.9: close one by one, up to a generous bound.
            for fd in 0..65_536 {
                if fd != keep {
                    libc::close(fd);
                }
            }
        }
    }
}

/// The reaper's loop: reaps children, reports the command's status once, and on a finish
/// signal (or once orphaned) kills its children until none is left; exits when it has no
/// child left after the command's shell exited.
fn reap(main: libc::pid_t, status_fd: RawFd, orphaned: bool, set: *mut libc::sigset_t) -> ! {
    let mut finishing = orphaned;
    let mut sweeps: u32 = 0;
    let mut main_status: Option<libc::c_int> = None;
    let mut status_fd = Some(status_fd);
    loop {
        loop {
            let mut status: libc::c_int = 0;
            // SAFETY: waitpid writes the status it returns.
            let pid = unsafe { libc::waitpid(-1, &raw mut status, libc::WNOHANG) };
            if pid > 0 {
                if pid == main {
                    main_status = Some(status);
                    if let Some(fd) = status_fd.take() {
                        report_status(fd, status);
                    }
                }
                continue;
            }
            if pid == 0 {
                break;
            }
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // ECHILD: no child left at all.
            // SAFETY: ending this process is what the reaper is for.
            unsafe { libc::_exit(main_status.map_or(0, exit_code)) }
        }
        if finishing {
            kill_children();
            sweeps = sweeps.saturating_add(1);
        }
        let fast = finishing && sweeps < FAST_SWEEPS;
        let wait = libc::timespec {
            tv_sec: if fast { 0 } else { 1 },
            tv_nsec: if fast { SWEEP_EVERY_NS } else { 0 },
        };
        let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `set` is a valid signal set; `info` and `wait` live on this stack.
        let sig = unsafe { libc::sigtimedwait(set, info.as_mut_ptr(), &raw const wait) };
        if matches!(sig, libc::SIGTERM | libc::SIGINT | libc::SIGHUP) {
            finishing = true;
        }
    }
}

/// Writes the command's raw wait status to the status pipe and closes it.
fn report_status(fd: RawFd, status: libc::c_int) {
    let bytes = status.to_ne_bytes();
    // SAFETY: a write of a 4-byte stack buffer to a pipe (atomic below PIPE_BUF).
    unsafe {
        libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
    }
}

/// Exit code of a raw wait status: the code, or 128 + the signal.
fn exit_code(status: libc::c_int) -> libc::c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }
}

/// Sends `SIGKILL` to every child of this process, found through `/proc/PID/stat`.
fn kill_children() {
    // SAFETY: a raw system call.
    let me = unsafe { libc::getpid() };
    let flags =
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
    let Ok(dir) = rustix::fs::open(c"/proc", flags, rustix::fs::Mode::empty()) else {
        return;
    };
    let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
    let mut entries = rustix::fs::RawDir::new(&dir, &mut buf);
    while let Some(entry) = entries.next() {
        let Ok(entry) = entry else { break };
        let Some(pid) = parse_pid(entry.file_name().to_bytes()) else {
            continue;
        };
        if parent_of(pid) == Some(me) {
            // SAFETY: a raw system call.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// A decimal pid, or `None`.
fn parse_pid(digits: &[u8]) -> Option<libc::pid_t> {
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    let mut n: libc::pid_t = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + libc::pid_t::from(d - b'0');
    }
    Some(n)
}

/// The parent pid of `pid` from `/proc/PID/stat` (`pid (comm) state ppid …`; the name may
/// hold spaces and parentheses, so the fields are read after the last `)`).
fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = [0u8; 32];
    let mut len = 0;
    let mut push = |bytes: &[u8]| {
        for &b in bytes {
            if let Some(slot) = path.get_mut(len) {
                *slot = b;
                len += 1;
            }
        }
    };
    push(b"/proc/");
    let mut digits = [0u8; 10];
    let mut n = pid;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    push(&digits[at..]);
    push(b"/stat\0");
    let path = CStr::from_bytes_until_nul(&path).ok()?;
    let fd = rustix::fs::open(
        path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let mut stat = [0u8; 1024];
    let n = rustix::io::read(&fd, &mut stat).ok()?;
    let stat = stat.get(..n)?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat
        .get(close + 1..)?
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    fields.next()?; // state
    parse_pid(fields.next()?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parent_of_reads_this_process() {
        let me = std::process::id() as libc::pid_t;
        // SAFETY: a raw system call.
        let ppid = unsafe { libc::getppid() };
        assert_eq!(parent_of(me), Some(ppid));
        assert_eq!(parse_pid(b"12a"), None);
        assert_eq!(parse_pid(b"4242"), Some(4242));
    }

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(exit_code(3 << 8), 3);
        assert_eq!(exit_code(libc::SIGKILL), 137);
    }
}
