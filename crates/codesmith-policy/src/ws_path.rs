//! Where a shell path argument lands, judged lexically (no file system).
//!
//! The caller passes the workspace as a string; `.` and `..` are resolved by
//! text, `~` and `$VAR` count as outside (their value is not known here), and
//! a few well-known sinks (`/dev/null`, `/dev/stdout`, …) are harmless.
//! Symlinks cannot be seen from here; the tool layer canonicalizes real paths
//! before it writes.

/// Where a path written by a command lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathPlace {
    /// A sink that keeps nothing (`/dev/null`, `/dev/stdout`, `/dev/stderr`).
    Sink,
    /// Inside the workspace.
    Inside,
    /// Outside the workspace, or not known until run time.
    Outside,
    /// A system location (`/etc`, `/usr`, `/boot`, `/dev`, `/sys`, `/proc`,
    /// …) or a credential or shell start-up file in the home directory.
    System,
}

const SINKS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

const SYSTEM_PREFIXES: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/opt", "/proc", "/root", "/sbin", "/sys",
    "/usr", "/var",
];

const HOME_SENSITIVE: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gh",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.bashrc",
    "~/.bash_profile",
    "~/.profile",
    "~/.zshrc",
    "~/.zprofile",
    "~/.gitconfig",
    "$HOME/.ssh",
    "$HOME/.aws",
    "$HOME/.bashrc",
    "$HOME/.zshrc",
    "$HOME/.profile",
];

/// Credential stores a read-only command should not read without a person's
/// yes (they are also never mounted into the sandbox).
const CREDENTIALS: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gh",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "$HOME/.ssh",
    "$HOME/.aws",
    "$HOME/.gnupg",
    "$HOME/.netrc",
    "/etc/shadow",
    "/etc/sudoers",
];

/// True when `path` names a credential store (`~/.ssh`, `~/.aws`, …).
pub(crate) fn is_credential(path: &str) -> bool {
    CREDENTIALS.iter().any(|p| at_or_under(path, p))
}

/// Judges `path` as written in a command run from `cwd` (absolute, or `None`
/// when an earlier `cd` made it unknown) for a workspace rooted at
/// `workspace`. `dynamic` marks a path only known at run time.
pub(crate) fn place(path: &str, dynamic: bool, cwd: Option<&str>, workspace: &str) -> PathPlace {
    if SINKS.contains(&path) || path.starts_with("/dev/fd/") {
        return PathPlace::Sink;
    }
    if is_credential(path) || HOME_SENSITIVE.iter().any(|p| at_or_under(path, p)) {
        return PathPlace::System;
    }
    if dynamic || path.starts_with('~') || path.starts_with('$') || path.is_empty() {
        return PathPlace::Outside;
    }
    let absolute = if path.starts_with('/') {
        normalize(path)
    } else {
        match cwd {
            Some(cwd) => normalize(&format!("{cwd}/{path}")),
            None => return PathPlace::Outside,
        }
    };
    let root = normalize(workspace);
    if within(&absolute, &root) && !root.is_empty() && root != "/" {
        return PathPlace::Inside;
    }
    if SYSTEM_PREFIXES.iter().any(|p| within(&absolute, p)) || absolute == "/" {
        return PathPlace::System;
    }
    if root == "/" {
        return PathPlace::Inside;
    }
    PathPlace::Outside
}

/// True when `path` is `prefix` or a path below it (no allocation).
fn at_or_under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Resolves `.` and `..` by text and drops repeated and trailing slashes.
/// `..` above the root stays at the root, as the kernel does.
pub(crate) fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    if path.starts_with('/') {
        format!("/{}", parts.join("/"))
    } else {
        parts.join("/")
    }
}

fn within(path: &str, root: &str) -> bool {
    if root == "/" {
        return path.starts_with('/');
    }
    path == root
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::PathPlace::*;
    use super::*;

    const WS: &str = "/home/dev/proj";

    #[test]
    fn judges_paths_against_the_workspace() {
        let cwd = Some(WS);
        assert_eq!(place("out.txt", false, cwd, WS), Inside);
        assert_eq!(place("./a/../b", false, cwd, WS), Inside);
        assert_eq!(place("/home/dev/proj/x", false, cwd, WS), Inside);
        assert_eq!(place("/home/dev/project2/x", false, cwd, WS), Outside);
        assert_eq!(place("../other/x", false, cwd, WS), Outside);
        assert_eq!(place("../../../../etc/passwd", false, cwd, WS), System);
        assert_eq!(place("/etc/hosts", false, cwd, WS), System);
        assert_eq!(place("~/.ssh/authorized_keys", false, cwd, WS), System);
        assert_eq!(place("~/notes", false, cwd, WS), Outside);
        assert_eq!(place("$OUT", true, cwd, WS), Outside);
        assert_eq!(place("/dev/null", false, cwd, WS), Sink);
        assert_eq!(place("/tmp/x", false, cwd, WS), Outside);
        assert_eq!(place("x", false, None, WS), Outside);
    }

    #[test]
    fn normalizes_lexically() {
        assert_eq!(normalize("/a/./b//c/../d/"), "/a/b/d");
        assert_eq!(normalize("/../.."), "/");
    }
}
