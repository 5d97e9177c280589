//! The one mapping from an operating-system error met by a file tool to the refusal the
//! model reads: what happened to which path, in plain words, with the code a caller can act
//! on. A permission refusal (`EACCES`, `EPERM`) names the path and says CodeSmith may not
//! read (or write) it; other kinds are named as the system names them (`Input/output
//! error`), never as a bare "internal" failure.

use std::io::{self, ErrorKind};
use std::path::Path;

use crate::{ErrorCode, Refusal};

/// What the tool was doing with the path when the system refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading a file or listing a directory.
    Read,
    /// Creating, writing, renaming or removing.
    Write,
    /// Finding where the path leads (a directory on its way, a link).
    Reach,
}

impl Access {
    fn verb(self) -> &'static str {
        match self {
            Access::Read => "Reading",
            Access::Write => "Writing",
            Access::Reach => "Looking up",
        }
    }
}

/// The refusal for `e`, met while doing `access` on `rel` (the path as the model named
/// it, workspace-relative where it is inside). Codes: `DENIED` for a permission refusal
/// or a read-only file system, `NOT_FOUND` for a missing path or a file where a directory
/// was expected on a read, `INVALID_ARGUMENTS` for the latter on a write, a directory where
/// a file was expected or a link loop, `TOO_LARGE` for a file over the system's limit, `UNAVAILABLE` for a full disk or
/// a busy or interrupted operation (try again), else `INTERNAL` naming the system's error.
/// Details: `path`, `os_error` (the error's kind, snake case) and `errno` when known.
pub fn io_refusal(rel: &str, access: Access, e: &io::Error) -> Refusal {
    let errno = e.raw_os_error();
    // The system's own words for the error ("Permission denied", "Input/output error").
    let said = errno.map_or_else(
        || e.kind().to_string(),
        |n| nix::errno::Errno::from_raw(n).desc().to_string(),
    );
    // A loop of symbolic links (its kind is not stable yet): by its number.
    if errno == Some(libc::ELOOP) {
        return Refusal::new(
            ErrorCode::InvalidArguments,
            format!("\"{rel}\" leads through a loop of symbolic links."),
            "Name the file by a path without the looping link.",
        )
        .with("path", rel)
        .with("os_error", "filesystem_loop")
        .with("errno", libc::ELOOP);
    }
    // A name or path over the system's limits is the argument's fault, not CodeSmith's.
    if errno == Some(libc::ENAMETOOLONG) {
        return Refusal::new(
            ErrorCode::InvalidArguments,
            format!(
                "The path \"{rel}\" is too long for the file system ({} bytes; a name may be \
                 at most 255 bytes, a path at most 4096).",
                rel.len()
            ),
            "Use a shorter file name or path.",
        )
        .with("path", rel)
        .with("path_bytes", rel.len())
        .with("os_error", "name_too_long")
        .with("errno", libc::ENAMETOOLONG);
    }
    let (code, message, hint, kind) = match e.kind() {
        ErrorKind::PermissionDenied => {
            let what = match access {
                Access::Read => "not readable by CodeSmith",
                Access::Write => "not writable by CodeSmith",
                Access::Reach => {
                    "not reachable by CodeSmith (a directory on its way may not be searched)"
                }
            };
            (
                ErrorCode::Denied,
                format!("\"{rel}\" is {what}: the operating system refused access ({said})."),
                "Its permissions (or a security module) keep CodeSmith out: continue without \
                 it, or ask the user to change its permissions.",
                "permission_denied",
            )
        }
        ErrorKind::NotFound => (
            ErrorCode::NotFound,
            format!("No file exists at \"{rel}\"."),
            "Check the path with list_dir or file_search.",
            "not_found",
        ),
        ErrorKind::NotADirectory if access == Access::Write => (
            ErrorCode::InvalidArguments,
            format!(
                "\"{rel}\" cannot be written: a part of it before the last is a file, not a \
                 directory."
            ),
            "Choose a path whose directories are directories (list_dir shows what is there).",
            "not_a_directory",
        ),
        ErrorKind::NotADirectory => (
            ErrorCode::NotFound,
            format!(
                "\"{rel}\" does not exist: a part of it before the last is a file, not a \
                 directory."
            ),
            "Check the path with list_dir.",
            "not_a_directory",
        ),
        ErrorKind::IsADirectory => (
            ErrorCode::InvalidArguments,
            format!("\"{rel}\" is a directory, not a file."),
            "Use list_dir to see its entries, then name a file inside it.",
            "is_a_directory",
        ),
        ErrorKind::ReadOnlyFilesystem => (
            ErrorCode::Denied,
            format!("\"{rel}\" is on a read-only file system; it cannot be changed."),
            "Write somewhere else in the workspace, or tell the user.",
            "read_only_filesystem",
        ),
        ErrorKind::FileTooLarge => (
            ErrorCode::TooLarge,
            format!("\"{rel}\" is larger than the file system allows ({said})."),
            "Work on a smaller part of it, or tell the user.",
            "file_too_large",
        ),
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => (
            ErrorCode::Unavailable,
            format!(
                "{} \"{rel}\" failed: no space is left on the device ({said}).",
                access.verb()
            ),
            "Tell the user the disk is full; nothing was changed.",
            "storage_full",
        ),
        ErrorKind::ResourceBusy
        | ErrorKind::ExecutableFileBusy
        | ErrorKind::WouldBlock
        | ErrorKind::Interrupted
        | ErrorKind::TimedOut => (
            ErrorCode::Unavailable,
            format!("{} \"{rel}\" failed: {said}.", access.verb()),
            "Try again in a moment; if it keeps failing, tell the user.",
            "busy",
        ),
        _ => (
            ErrorCode::Internal,
            format!("{} \"{rel}\" failed: {said}.", access.verb()),
            "Try again; if it keeps failing, continue another way and tell the user.",
            "other",
        ),
    };
    let mut refusal = Refusal::new(code, message, hint)
        .with("path", rel)
        .with("os_error", kind);
    if let Some(n) = errno {
        refusal = refusal.with("errno", n);
    }
    refusal
}

/// The refusal for `e`, met on the workspace directory `root` itself (opening it, finding
/// its real path): as [`io_refusal`] with [`Access::Reach`], with the `workspace` detail
/// set. A workspace that no longer exists (removed or renamed while the session ran) is
/// `NOT_FOUND` saying so, with a hint for the user rather than "check the path": no file
/// tool can work in it until it is back.
pub fn workspace_refusal(root: &Path, e: &io::Error) -> Refusal {
    let shown = root.display().to_string();
    let mut refusal = io_refusal(&shown, Access::Reach, e).with("workspace", true);
    if e.kind() == ErrorKind::NotFound {
        refusal.message = format!(
            "The workspace directory \"{shown}\" does not exist any more: it was removed or \
             renamed while the session ran."
        );
        refusal.hint = "No file can be read, searched or written until it is back: tell the \
                        user, who can restore it or start CodeSmith in an existing directory."
            .to_string();
    }
    refusal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_refusals_name_the_path_and_say_it_is_not_readable() {
        for errno in [libc::EACCES, libc::EPERM] {
            let e = io::Error::from_raw_os_error(errno);
            let r = io_refusal("/proc/1/environ", Access::Read, &e);
            assert_eq!(r.code, ErrorCode::Denied);
            assert!(
                r.message
                    .starts_with("\"/proc/1/environ\" is not readable by CodeSmith"),
                "{}",
                r.message
            );
            assert_eq!(r.details["os_error"], "permission_denied");
            assert_eq!(r.details["errno"], errno);
        }
        let e = io::Error::from_raw_os_error(libc::EACCES);
        let r = io_refusal("a.txt", Access::Write, &e);
        assert!(
            r.message.contains("not writable by CodeSmith"),
            "{}",
            r.message
        );
    }

    #[test]
    fn a_name_too_long_is_the_arguments_fault_and_names_the_length() {
        let name = "n".repeat(300);
        let e = io::Error::from_raw_os_error(libc::ENAMETOOLONG);
        let r = io_refusal(&name, Access::Write, &e);
        assert_eq!(r.code, ErrorCode::InvalidArguments);
        assert!(r.message.contains("300 bytes"), "{}", r.message);
        assert_eq!(r.details["path_bytes"], 300);
    }

    #[test]
    fn the_workspace_itself_is_named_with_what_to_do() {
        let root = Path::new("/home/u/project");
        let gone = io::Error::from_raw_os_error(libc::ENOENT);
        let r = workspace_refusal(root, &gone);
        assert_eq!(r.code, ErrorCode::NotFound);
        assert!(
            r.message
                .starts_with("The workspace directory \"/home/u/project\" does not exist"),
            "{}",
            r.message
        );
        assert!(r.hint.contains("tell the user"), "{}", r.hint);
        assert_eq!(r.details["workspace"], true);
        assert_eq!(r.details["path"], "/home/u/project");
        let denied = io::Error::from_raw_os_error(libc::EACCES);
        let r = workspace_refusal(root, &denied);
        assert_eq!(r.code, ErrorCode::Denied);
        assert!(
            r.message.contains("\"/home/u/project\" is not reachable"),
            "{}",
            r.message
        );
        assert_eq!(r.details["workspace"], true);
    }

    #[test]
    fn other_kinds_are_named_plainly() {
        let r = io_refusal("a", Access::Read, &io::Error::from_raw_os_error(libc::EIO));
        assert_eq!(r.code, ErrorCode::Internal);
        assert_eq!(r.message, "Reading \"a\" failed: I/O error.");
        assert_ne!(r.message, Refusal::internal().message);
        let r = io_refusal(
            "a",
            Access::Write,
            &io::Error::from_raw_os_error(libc::EROFS),
        );
        assert_eq!(r.code, ErrorCode::Denied);
        let r = io_refusal(
            "a",
            Access::Write,
            &io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert_eq!(r.code, ErrorCode::Unavailable);
        assert!(r.message.contains("no space"), "{}", r.message);
        let r = io_refusal(
            "d",
            Access::Read,
            &io::Error::from_raw_os_error(libc::EISDIR),
        );
        assert_eq!(r.code, ErrorCode::InvalidArguments);
    }
}
