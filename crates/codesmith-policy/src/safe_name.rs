//! The one guard for ids and slugs that become a path component.
//!
//! Session ids, spill refs, task ids and skill names all end up joined onto a
//! directory, so every such join accepts only a *single safe path
//! component*: letters, digits, `.`, `_` and `-`, never starting or ending
//! with a dot (so `.`, `..` and hidden names are out), non-empty and bounded.

use std::fmt;
use std::path::{Path, PathBuf};

/// Longest accepted name, in bytes (all accepted characters are one byte).
pub const MAX_SAFE_NAME_LEN: usize = 128;

/// Why a name is not a safe single path component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnsafeName {
    /// The name is empty.
    Empty,
    /// The name is longer than [`MAX_SAFE_NAME_LEN`] bytes.
    TooLong {
        /// Length of the offered name in bytes.
        len: usize,
    },
    /// The name starts or ends with `.` (covers `.` and `..`).
    EdgeDot,
    /// A character outside `[A-Za-z0-9._-]`.
    BadChar {
        /// The first offending character.
        ch: char,
        /// Its byte offset in the name.
        at: usize,
    },
}

impl fmt::Display for UnsafeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsafeName::Empty => write!(f, "the name is empty"),
            UnsafeName::TooLong { len } => write!(
                f,
                "the name is {len} bytes long; at most {MAX_SAFE_NAME_LEN} are allowed"
            ),
            UnsafeName::EdgeDot => write!(f, "the name may not start or end with '.'"),
            UnsafeName::BadChar { ch, at } => write!(
                f,
                "character {ch:?} at byte {at} is not allowed; use only A-Z, a-z, 0-9, '.', '_' and '-'"
            ),
        }
    }
}

impl std::error::Error for UnsafeName {}

/// Checks that `name` is one safe path component and returns it unchanged.
///
/// Accepts `[A-Za-z0-9._-]{1,128}` not starting or ending with `.`.
/// Errors name the first rule broken; nothing is rewritten or trimmed.
pub fn check_safe_name(name: &str) -> Result<&str, UnsafeName> {
    if name.is_empty() {
        return Err(UnsafeName::Empty);
    }
    if let Some((at, ch)) = name
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(UnsafeName::BadChar { ch, at });
    }
    if name.len() > MAX_SAFE_NAME_LEN {
        return Err(UnsafeName::TooLong { len: name.len() });
    }
    if name.starts_with('.') || name.ends_with('.') {
        return Err(UnsafeName::EdgeDot);
    }
    Ok(name)
}

/// True when [`check_safe_name`] accepts `name`.
pub fn is_safe_name(name: &str) -> bool {
    check_safe_name(name).is_ok()
}

/// Joins a checked `name` onto `base`: the only way an id should become a path.
///
/// Pure (no file system access). The result is always a direct child of `base`.
pub fn join_safe(base: &Path, name: &str) -> Result<PathBuf, UnsafeName> {
    check_safe_name(name).map(|n| base.join(n))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_ids() {
        for ok in ["a", "sess-2026_11.29", "A1", "x.y", "-", "_", "a..b"] {
            assert_eq!(check_safe_name(ok), Ok(ok), "{ok}");
        }
        let max = "a".repeat(MAX_SAFE_NAME_LEN);
        assert!(is_safe_name(&max));
    }

    #[test]
    fn refuses_traversal_and_odd_characters() {
        assert_eq!(check_safe_name(""), Err(UnsafeName::Empty));
        assert_eq!(check_safe_name("."), Err(UnsafeName::EdgeDot));
        assert_eq!(check_safe_name(".."), Err(UnsafeName::EdgeDot));
        assert_eq!(check_safe_name(".hidden"), Err(UnsafeName::EdgeDot));
        assert_eq!(check_safe_name("trail."), Err(UnsafeName::EdgeDot));
        assert_eq!(
            check_safe_name("../etc"),
            Err(UnsafeName::BadChar { ch: '/', at: 2 })
        );
        for bad in [
            "a/b", "a\\b", "/abs", "a b", "a\0b", "é", "a:b", "~", "a\nb",
        ] {
            assert!(!is_safe_name(bad), "{bad:?}");
        }
        let long = "a".repeat(MAX_SAFE_NAME_LEN + 1);
        assert_eq!(
            check_safe_name(&long),
            Err(UnsafeName::TooLong {
                len: MAX_SAFE_NAME_LEN + 1
            })
        );
    }

    #[test]
    fn join_stays_a_direct_child() {
        let base = Path::new("/home/u/.codesmith/sessions");
        let p = join_safe(base, "abc-1").unwrap();
        assert_eq!(p.parent().unwrap(), base);
        assert!(join_safe(base, "..").is_err());
        assert!(join_safe(base, "/etc/passwd").is_err());
    }
}
