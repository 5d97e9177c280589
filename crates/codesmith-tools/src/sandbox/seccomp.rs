//! The seccomp filters every sandboxed command runs under (bubblewrap's
//! `--add-seccomp-fd`), built with the `seccompiler` crate.
//!
//! What is refused follows the system calls that the established sandboxes refuse to
//! unprivileged code (Docker's default profile, Codex's Linux sandbox, Chromium's
//! baseline): mounting and moving mounts, the kernel keyrings, eBPF, perf events,
//! `userfaultfd`, loading kernels and modules, new user namespaces (`unshare` or `clone`
//! with `CLONE_NEWUSER`; `clone3`, whose flags a filter cannot read, answers `ENOSYS` so
//! that the C library falls back to `clone`), joining namespaces, file handles
//! (`open_by_handle_at`, the classic container escape), `io_uring` (its operations bypass
//! seccomp), changing the clock, swap, reboot, the kernel log, process accounting, port I/O,
//! `personality` other than the harmless values, and faking terminal input
//! (`ioctl(TIOCSTI)`, `ioctl(TIOCLINUX)`). A refused call fails with `EPERM`.
//!
//! Giving a file the set-user-ID or set-group-ID bit is refused too (`chmod` and its
//! relatives, and the mode of a file being created; `openat2`, whose mode a filter cannot
//! read, answers `ENOSYS` so that callers fall back to `openat`): when CodeSmith runs as root
//! the workspace is mounted with an idmapping, so a file the command owns inside is owned by
//! root on the host, and a set-user-ID copy of a shell there would give host root to any
//! local user who runs it.
//!
//! Available on x86_64 and aarch64; elsewhere there is no filter and the report says so.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The system calls refused outright, by name (what `codesmith sandbox explain` and
/// `doctor` print).
pub const REFUSED: &[&str] = &[
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "setns",
    "open_by_handle_at",
    "name_to_handle_at",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "iopl",
    "ioperm",
    "quotactl",
    "lookup_dcookie",
    "vhangup",
    "uselib",
];

/// The calls refused only for some arguments, described for reports.
pub const REFUSED_WITH_ARGUMENTS: &[&str] = &[
    "unshare(CLONE_NEWUSER)",
    "clone(CLONE_NEWUSER)",
    "clone3 (ENOSYS: its flags cannot be read)",
    "personality(other than 0, 8, 0x20000, 0x20008, 0xffffffff)",
    "ioctl(TIOCSTI)",
    "ioctl(TIOCLINUX)",
    "chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mknod, mknodat with the \
     set-user-ID or set-group-ID bit",
    "openat2 (ENOSYS: its mode cannot be read)",
];

/// The compiled filters, each as the bytes of its `struct sock_filter` array, ready for
/// bubblewrap's `--add-seccomp-fd`; built once. `None` on an architecture without a filter
/// or when building failed.
pub(crate) fn programs() -> Option<&'static [Vec<u8>]> {
    static PROGRAMS: OnceLock<Option<Vec<Vec<u8>>>> = OnceLock::new();
    PROGRAMS.get_or_init(build).as_deref()
}

fn arch() -> Option<TargetArch> {
    match std::env::consts::ARCH {
        "x86_64" => Some(TargetArch::x86_64),
        "aarch64" => Some(TargetArch::aarch64),
        _ => None,
    }
}

fn build() -> Option<Vec<Vec<u8>>> {
    let arch = arch()?;
    let refuse = refused_rules().ok()?;
    let eperm = SeccompFilter::new(
        refuse,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .ok()?;
    let mut clone3 = BTreeMap::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    clone3.insert(libc::SYS_openat2, Vec::new());
    let enosys = SeccompFilter::new(
        clone3,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .ok()?;
    let mut out = Vec::new();
    for filter in [eperm, enosys] {
        let program: BpfProgram = filter.try_into().ok()?;
        out.push(to_bytes(&program));
    }
    if arch == TargetArch::x86_64 {
        out.push(x32_refused());
    }
    Some(out)
}

/// On x86_64, a system call number with bit 30 set is the x32 ABI's spelling of the same
/// call, which the filters above (matching plain numbers) would not see; the kernels that
/// enable x32 would run it. This program refuses every such number (`EPERM`), as Docker's
/// and Chromium's x86_64 filters do. `seccompiler` cannot express a range of numbers, so it
/// is written out: load the number, compare, return.
fn x32_refused() -> Vec<u8> {
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JGE_K: u16 = 0x35;
    const BPF_RET_K: u16 = 0x06;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    let ins = |code, jt, jf, k| seccompiler::sock_filter { code, jt, jf, k };
    to_bytes(&vec![
        // A = seccomp_data.nr (offset 0)
        ins(BPF_LD_W_ABS, 0, 0, 0),
        // if A >= X32_SYSCALL_BIT goto refuse else goto allow
        ins(BPF_JMP_JGE_K, 0, 1, X32_SYSCALL_BIT),
        ins(BPF_RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32),
        ins(BPF_RET_K, 0, 0, RET_ALLOW),
    ])
}

/// The program as the kernel reads it: 8 bytes per instruction, native endian.
fn to_bytes(program: &BpfProgram) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for ins in program {
        bytes.extend_from_slice(&ins.code.to_ne_bytes());
        bytes.push(ins.jt);
        bytes.push(ins.jf);
        bytes.extend_from_slice(&ins.k.to_ne_bytes());
    }
    bytes
}

fn syscall_number(name: &str) -> Option<i64> {
    Some(match name {
        "mount" => libc::SYS_mount,
        "umount2" => libc::SYS_umount2,
        "pivot_root" => libc::SYS_pivot_root,
        "move_mount" => libc::SYS_move_mount,
        "open_tree" => libc::SYS_open_tree,
        "fsopen" => libc::SYS_fsopen,
        "fsconfig" => libc::SYS_fsconfig,
        "fsmount" => libc::SYS_fsmount,
        "fspick" => libc::SYS_fspick,
        "mount_setattr" => libc::SYS_mount_setattr,
        "keyctl" => libc::SYS_keyctl,
        "add_key" => libc::SYS_add_key,
        "request_key" => libc::SYS_request_key,
        "bpf" => libc::SYS_bpf,
        "perf_event_open" => libc::SYS_perf_event_open,
        "userfaultfd" => libc::SYS_userfaultfd,
        "kexec_load" => libc::SYS_kexec_load,
        "kexec_file_load" => libc::SYS_kexec_file_load,
        "init_module" => libc::SYS_init_module,
        "finit_module" => libc::SYS_finit_module,
        "delete_module" => libc::SYS_delete_module,
        "setns" => libc::SYS_setns,
        "open_by_handle_at" => libc::SYS_open_by_handle_at,
        "name_to_handle_at" => libc::SYS_name_to_handle_at,
        "io_uring_setup" => libc::SYS_io_uring_setup,
        "io_uring_enter" => libc::SYS_io_uring_enter,
        "io_uring_register" => libc::SYS_io_uring_register,
        "swapon" => libc::SYS_swapon,
        "swapoff" => libc::SYS_swapoff,
        "reboot" => libc::SYS_reboot,
        "syslog" => libc::SYS_syslog,
        "acct" => libc::SYS_acct,
        "settimeofday" => libc::SYS_settimeofday,
        "clock_settime" => libc::SYS_clock_settime,
        "clock_adjtime" => libc::SYS_clock_adjtime,
        "adjtimex" => libc::SYS_adjtimex,
        #[cfg(target_arch = "x86_64")]
        "iopl" => libc::SYS_iopl,
        #[cfg(target_arch = "x86_64")]
        "ioperm" => libc::SYS_ioperm,
        "quotactl" => libc::SYS_quotactl,
        "lookup_dcookie" => libc::SYS_lookup_dcookie,
        "vhangup" => libc::SYS_vhangup,
        #[cfg(target_arch = "x86_64")]
        "uselib" => libc::SYS_uselib,
        _ => return None,
    })
}

fn refused_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, seccompiler::BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for name in REFUSED {
        if let Some(nr) = syscall_number(name) {
            // An empty rule list matches every call of that number.
            rules.insert(nr, Vec::new());
        }
    }
    let newuser = libc::CLONE_NEWUSER as u64;
    let flag_set = |arg: u8| {
        SeccompCondition::new(
            arg,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(newuser),
            newuser,
        )
    };
    rules.insert(
        libc::SYS_unshare,
        vec![SeccompRule::new(vec![flag_set(0)?])?],
    );
    rules.insert(libc::SYS_clone, vec![SeccompRule::new(vec![flag_set(0)?])?]);
    // personality(2): anything but the harmless values (query, Linux, 32-bit, UNAME26).
    let personality = [0u64, 0x0008, 0x20000, 0x20008, 0xffff_ffff]
        .into_iter()
        .map(|v| SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, v))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_personality, vec![SeccompRule::new(personality)?]);
    // ioctl(2) on a terminal: faking input, and the Linux console's selection paste. (The
    // request's type differs between C libraries, hence the casts.)
    #[allow(clippy::unnecessary_cast)]
    let ioctl = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64]
        .into_iter()
        .map(|req| {
            SeccompRule::new(vec![SeccompCondition::new(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                req,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctl);
    // A mode with the set-user-ID or set-group-ID bit, at argument `arg`.
    let privileged_mode = |arg: u8| {
        [libc::S_ISUID as u64, libc::S_ISGID as u64]
            .into_iter()
            .map(|bit| {
                SeccompRule::new(vec![SeccompCondition::new(
                    arg,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(bit),
                    bit,
                )?])
            })
            .collect::<Result<Vec<_>, _>>()
    };
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut mode_at = vec![
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (libc::SYS_fchmodat2, 2),
        (libc::SYS_openat, 3),
        (libc::SYS_mknodat, 2),
    ];
    #[cfg(target_arch = "x86_64")]
    mode_at.extend([
        (libc::SYS_chmod, 1),
        (libc::SYS_open, 2),
        (libc::SYS_creat, 1),
        (libc::SYS_mknod, 1),
    ]);
    for (nr, arg) in mode_at {
        rules.insert(nr, privileged_mode(arg)?);
    }
    Ok(rules)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_refused_name_has_a_number_here() {
        for name in REFUSED {
            let expected_elsewhere =
                matches!(*name, "iopl" | "ioperm" | "uselib") && std::env::consts::ARCH != "x86_64";
            assert!(
                syscall_number(name).is_some() || expected_elsewhere,
                "no number for {name}"
            );
        }
    }

    #[test]
    fn the_filters_compile_to_whole_instructions() {
        let programs = programs().expect("a filter on this architecture");
        let expected = if std::env::consts::ARCH == "x86_64" {
            3
        } else {
            2
        };
        assert_eq!(programs.len(), expected);
        for p in programs {
            assert!(!p.is_empty() && p.len() % 8 == 0, "{}", p.len());
        }
    }
}
