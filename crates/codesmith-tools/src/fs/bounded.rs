//! Reading a small file whose type and size are not trusted: configuration, rules, memory
//! and skill files, which a cloned repository or a careless user may have made a FIFO, a
//! symlink to `/dev/zero` or a huge file.
//!
//! The file is opened without blocking (`O_NONBLOCK`, so a FIFO is not waited on), its type
//! is checked on the opened handle (so nothing can be swapped in between the check and the
//! read), and at most `limit + 1` bytes are read.

use std::fmt;
use std::io::{self, Read};
use std::path::Path;

/// Whether the last component of the path may be a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Follow a symlink to the file it names (a user's dotfiles may link their config).
    Yes,
    /// Refuse a symlink (`O_NOFOLLOW`): the file must be the path itself.
    No,
}

/// Why [`read_regular`] gave no content.
#[derive(Debug)]
pub enum ReadError {
    /// The file is larger than the limit.
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The path is not a regular file (a FIFO, a device, a directory, a socket).
    NotRegular,
    /// The file does not exist.
    NotFound,
    /// It could not be opened or read (permissions, not UTF-8, a refused symlink, …).
    Io(io::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::TooLarge { limit } => write!(f, "it is larger than {limit} bytes"),
            ReadError::NotRegular => {
                f.write_str("it is not a regular file (a FIFO, a device or a directory)")
            }
            ReadError::NotFound => f.write_str("it does not exist"),
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// Reads the regular file at `path` of at most `limit` bytes; never blocks on a FIFO or
/// reads a device.
///
/// # Errors
/// [`ReadError::NotFound`] when it does not exist; [`ReadError::NotRegular`] for anything
/// but a regular file; [`ReadError::TooLarge`] over `limit`; [`ReadError::Io`] otherwise
/// (with [`Follow::No`], a symlink is `Io` with `ELOOP`).
pub fn read_regular(path: &Path, limit: u64, follow: Follow) -> Result<Vec<u8>, ReadError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let nofollow = if follow == Follow::No {
            libc::O_NOFOLLOW
        } else {
            0
        };
        options.custom_flags(nofollow | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => ReadError::NotFound,
        _ => ReadError::Io(e),
    })?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular);
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// [`read_regular`] (symlinks followed) as UTF-8 text.
///
/// # Errors
/// Those of [`read_regular`]; text that is not UTF-8 is [`ReadError::Io`] with
/// `InvalidData`.
pub fn read_regular_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_regular(path, limit, Follow::Yes)?;
    String::from_utf8(bytes).map_err(|_| {
        ReadError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "it is not UTF-8 text",
        ))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_device_a_directory_and_a_large_file_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        make_fifo(&fifo);
        assert!(matches!(
            read_regular(&fifo, 10, Follow::Yes),
            Err(ReadError::NotRegular)
        ));
        let zero = d.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(matches!(
            read_regular(&zero, 10, Follow::Yes),
            Err(ReadError::NotRegular)
        ));
        assert!(matches!(
            read_regular(&zero, 10, Follow::No),
            Err(ReadError::Io(_))
        ));
        assert!(matches!(
            read_regular(d.path(), 10, Follow::Yes),
            Err(ReadError::NotRegular)
        ));
        let big = d.path().join("big");
        std::fs::write(&big, "x".repeat(11)).unwrap();
        assert!(matches!(
            read_regular(&big, 10, Follow::Yes),
            Err(ReadError::TooLarge { limit: 10 })
        ));
        assert_eq!(read_regular_text(&big, 11).unwrap(), "x".repeat(11));
        assert!(matches!(
            read_regular(&d.path().join("absent"), 10, Follow::Yes),
            Err(ReadError::NotFound)
        ));
    }

    fn make_fifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}
