//! Path normalisation by text: `.` and `..` resolved, repeated and trailing
//! slashes dropped, without touching the disk. The one implementation the
//! command classifier, the catastrophic-pattern check and the file tools'
//! workspace boundary share; the two rules differ only in what `..` does
//! where there is nothing left to climb out of.
//!
//! - [`normalize_path`] (the kernel's view, for judging what a command reaches):
//!   `..` at the root stays at the root, as `path_resolution(7)` specifies
//!   for `/..`; the `/proc/PID/root` links (`/proc/self/root`, `/proc/1/root`,
//!   `/proc/thread-self/root`) lead back to the root directory, so
//!   `/proc/self/root/etc` is `/etc`. At the start of a relative path (whose
//!   base the caller does not know) a `..` is dropped; callers join relative
//!   paths to a known directory first.
//! - [`normalize_path_strict`] (containment of a path someone else wrote): `..`
//!   that climbs above the root, or above the start of a relative path, makes
//!   the path meaningless and the answer is `None`, so a containment check
//!   refuses it. `/proc` links are left as written (a spelling through them
//!   is not the workspace's spelling and stays outside).
//!
//! Both work on bytes as well ([`normalize_path_strict_bytes`]), so a `Path` that
//! is not UTF-8 is normalised the same way.

/// What `..` does when there is nothing left to climb out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// Stay at the root (the kernel's rule); fold `/proc/PID/root`.
    Kernel,
    /// The path has no lexical meaning: `None`.
    Strict,
}

/// The kernel's view of `path` by text: `.` and `..` resolved, `..` above the
/// root clamped to the root, `/proc/PID/root` folded to `/`, repeated and
/// trailing slashes dropped. An absolute path stays absolute (`/` at least);
/// a relative one stays relative (`""` for `.` or the empty path).
///
/// Examples: `/a/./b//c/../d/` is `/a/b/d`; `/../..` is `/`; `a/../../b` is
/// `b`; `/proc/self/root/../etc` is `/etc`.
pub fn normalize_path(path: &str) -> String {
    if is_normalized(path) {
        return path.to_string();
    }
    let parts = components(path.as_bytes(), Rule::Kernel).unwrap_or_default();
    // Splitting at `/` (ASCII) never cuts a UTF-8 sequence, so the joined
    // parts are valid UTF-8 again.
    String::from_utf8_lossy(&join(path.starts_with('/'), &parts, path.len())).into_owned()
}

/// `path` with `.` and `..` resolved by text and repeated and trailing
/// slashes dropped; `None` when a `..` climbs above `/` (absolute) or above
/// the start (relative). `/proc` links are not folded.
///
/// Examples: `/a/b/../c/./d` is `/a/c/d`; `/..`, `/../a` and `a/../..` are
/// `None`; `./a/` is `a`.
pub fn normalize_path_strict(path: &str) -> Option<String> {
    if is_normalized(path) {
        return Some(path.to_string());
    }
    normalize_path_strict_bytes(path.as_bytes())
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// [`normalize_path_strict`] over the bytes of a path (a Unix path need not be
/// UTF-8).
pub fn normalize_path_strict_bytes(path: &[u8]) -> Option<Vec<u8>> {
    let parts = components(path, Rule::Strict)?;
    Some(join(path.first() == Some(&b'/'), &parts, path.len()))
}

/// The components left after resolving `.` and `..` under `rule`.
fn components(path: &[u8], rule: Rule) -> Option<Vec<&[u8]>> {
    let absolute = path.first() == Some(&b'/');
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                if parts.pop().is_none() && rule == Rule::Strict {
                    return None;
                }
            }
            b"root"
                if rule == Rule::Kernel && absolute && parts.len() == 2 && parts[0] == b"proc" =>
            {
                parts.clear();
            }
            other => parts.push(other),
        }
    }
    Some(parts)
}

fn join(absolute: bool, parts: &[&[u8]], capacity: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity + 1);
    for (index, part) in parts.iter().enumerate() {
        if absolute || index > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(part);
    }
    if absolute && out.is_empty() {
        out.push(b'/');
    }
    out
}

/// True when both rules return `path` unchanged: an absolute path without
/// empty, `.` or `..` components or a trailing slash, outside `/proc`
/// (whose `PID/root` links the kernel rule folds).
fn is_normalized(path: &str) -> bool {
    if path == "/" {
        return true;
    }
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    !rest.starts_with("proc") && rest.split('/').all(|part| !matches!(part, "" | "." | ".."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_rules_differ_only_above_the_root_and_in_proc() {
        for (path, kernel, strict) in [
            ("/a/./b//c/../d/", "/a/b/d", Some("/a/b/d")),
            ("/", "/", Some("/")),
            ("//", "/", Some("/")),
            ("", "", Some("")),
            (".", "", Some("")),
            ("./a/", "a", Some("a")),
            ("a/./b/../c", "a/c", Some("a/c")),
            ("/a/b/..", "/a", Some("/a")),
            ("/..", "/", None),
            ("/../etc", "/etc", None),
            ("/a/../../b", "/b", None),
            ("..", "", None),
            ("a/../../b", "b", None),
            ("/proc/self/root/etc", "/etc", Some("/proc/self/root/etc")),
            ("/proc/1/root/..", "/", Some("/proc/1")),
            ("/procfs/root", "/procfs/root", Some("/procfs/root")),
            (
                "/x/proc/self/root",
                "/x/proc/self/root",
                Some("/x/proc/self/root"),
            ),
        ] {
            assert_eq!(normalize_path(path), kernel, "kernel {path:?}");
            assert_eq!(
                normalize_path_strict(path).as_deref(),
                strict,
                "strict {path:?}"
            );
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_survive() {
        let path = b"/w\xffs/./x/../y";
        assert_eq!(
            normalize_path_strict_bytes(path).as_deref(),
            Some(&b"/w\xffs/y"[..])
        );
        assert_eq!(normalize_path_strict_bytes(b"/\xff/../.."), None);
    }
}
