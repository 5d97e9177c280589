//! File-system helpers shared by every file tool (and by `apply_patch`).
//!
//! - [`paths`]: three-stage workspace containment.
//! - [`beneath`]: every open, create, rename and unlink relative to a held handle of the
//!   workspace (`openat2` `RESOLVE_BENEATH`, or an `O_NOFOLLOW` walk), so a checked path
//!   cannot be redirected by a symlink swapped in after the check.
//! - [`bounded`]: reading a small file of untrusted type and size (no FIFO, device or
//!   unbounded read).
//! - [`atomic`]: temp file in the same directory, fsync, rename, mode and owner kept.
//! - [`lock`]: a process-wide, poison-tolerant lock per canonical path.
//! - [`encoding`]: text or binary, and which encoding (UTF-8/16/32, Windows-1252).
//! - [`text`]: decoding, BOM and line-ending detection and preservation.
//! - [`freshness`]: the read-before-write tracker keyed by canonical path (mtime + length).
//! - [`os_error`]: the one mapping from an operating-system error to a file tool's refusal.
//! - [`trusted`]: directories outside the workspace the user lets the file tools read.

pub mod atomic;
pub mod beneath;
pub mod bounded;
pub mod encoding;
pub mod freshness;
pub mod lock;
pub mod os_error;
pub mod paths;
pub mod text;
pub mod trusted;
