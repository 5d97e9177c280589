//! Workspace containment for model-supplied paths.
//!
//! Three stages, one boundary shared by all file tools:
//! 1. the lexically normalized path must lie under the canonical workspace root;
//! 2. a path that exists is canonicalized (following every symlink) and checked again;
//! 3. a path that does not exist yet has its deepest existing ancestor canonicalized, the
//!    missing tail re-appended, and the result checked again.
//!
//! A symlink whose target lies outside the workspace is refused with `OUTSIDE_WORKSPACE`,
//! for reads as well as writes. A dangling symlink is followed lexically and its target is
//! checked like a new path.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use codesmith_policy::normalize_path_strict_bytes;
use std::sync::Arc;

use crate::fs::beneath::Root;
use crate::fs::os_error::{Access, io_refusal, workspace_refusal};
use crate::{ErrorCode, Refusal};

/// How many dangling symlinks in a row are followed before giving up.
const MAX_LINK_HOPS: usize = 8;

/// A model path resolved inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The real location on disk: canonical for an existing path; for a new path, the
    /// canonical deepest existing ancestor with the missing components re-appended.
    pub abs: PathBuf,
    /// The workspace-relative spelling of the path as the model gave it (normalized, `/`
    /// separated, `.` for the root). Used in every message and result.
    pub rel: String,
    /// True when something exists at `abs` (file, directory or other).
    pub exists: bool,
    /// The held handle of the workspace root every operation on this path goes through
    /// (see [`crate::fs::beneath`]).
    pub root: Arc<Root>,
    /// `abs` relative to the root: the location that was checked, opened below the
    /// handle and never re-resolved from `/`.
    pub inner: PathBuf,
}

impl ResolvedPath {
    /// Opens the file for reading below the workspace handle ([`Root::open_read`]).
    ///
    /// Errors: host I/O errors; see [`crate::fs::beneath::is_escape`].
    pub fn open_read(&self) -> io::Result<std::fs::File> {
        self.root.open_read(&self.inner)
    }

    /// Replaces the file atomically below the workspace handle ([`Root::write_atomic`]).
    ///
    /// Errors: host I/O errors (the target is untouched).
    pub fn write_atomic(&self, bytes: &[u8]) -> io::Result<()> {
        self.root.write_atomic(&self.inner, bytes)
    }

    /// Replaces the file atomically with the permission bits and owner `like` (a moved
    /// file's own) instead of the replaced file's ([`Root::write_atomic_as`]).
    ///
    /// Errors: host I/O errors (the target is untouched).
    pub fn write_atomic_as(
        &self,
        bytes: &[u8],
        like: Option<crate::fs::beneath::Ownership>,
    ) -> io::Result<()> {
        self.root.write_atomic_as(&self.inner, bytes, like)
    }

    /// The permission bits and owner of the regular file here, or `None`
    /// ([`Root::ownership`]).
    ///
    /// Errors: host I/O errors.
    pub fn ownership(&self) -> io::Result<Option<crate::fs::beneath::Ownership>> {
        self.root.ownership(&self.inner)
    }

    /// Creates the missing parent directories below the workspace handle and returns
    /// them as real locations (`root/...`), outermost first ([`Root::create_parents`]).
    ///
    /// Errors: host I/O errors, including a level that is a symlink or a file.
    pub fn create_parents(&self) -> io::Result<Vec<PathBuf>> {
        Ok(self
            .root
            .create_parents(&self.inner)?
            .into_iter()
            .map(|d| self.root.path().join(d))
            .collect())
    }

    /// Removes the file below the workspace handle ([`Root::remove_file`]).
    ///
    /// Errors: host I/O errors.
    pub fn remove_file(&self) -> io::Result<()> {
        self.root.remove_file(&self.inner)
    }
}

/// Resolves `model_path` (relative to `workspace`, or absolute) for reading or writing.
///
/// `workspace` is canonicalized here as well, so a caller passing a non-canonical root is
/// still safe. An empty path or `.` means the workspace root.
///
/// Errors: `INVALID_ARGUMENTS` for a path containing NUL; `OUTSIDE_WORKSPACE` when any stage
/// places the path outside the root (including through a symlink); when the root itself
/// cannot be reached, the refusal [`workspace_refusal`] names (`NOT_FOUND` for a workspace
/// removed or renamed); for a system error on the way to the path, the refusal
/// [`io_refusal`] names (`DENIED` for a directory CodeSmith may not search).
pub fn resolve(workspace: &Path, model_path: &str) -> Result<ResolvedPath, Refusal> {
    let gone = |e: io::Error| workspace_refusal(workspace, &e);
    let root = workspace.canonicalize().map_err(gone)?;
    let root = Root::open(&root).map_err(gone)?;
    resolve_in(&Arc::new(root), model_path)
}

/// Like [`resolve`], below an already held workspace handle (its path is canonical).
///
/// Errors: as [`resolve`].
pub fn resolve_in(handle: &Arc<Root>, model_path: &str) -> Result<ResolvedPath, Refusal> {
    if model_path.contains('\0') {
        return Err(Refusal::new(
            ErrorCode::InvalidArguments,
            "The path contains a NUL character.",
            "Pass a plain workspace-relative path such as \"src/main.rs\".",
        )
        .with("path", model_path.replace('\0', "\\0")));
    }
    let root = handle.path().to_path_buf();
    // Stage 1: lexical containment.
    let joined = if Path::new(model_path).is_absolute() {
        PathBuf::from(model_path)
    } else {
        root.join(model_path)
    };
    let lexical = normalize_lexically(&joined).ok_or_else(|| outside(model_path))?;
    let rel_path = lexical
        .strip_prefix(&root)
        .map_err(|_| outside(model_path))?;
    let rel = display_rel(rel_path);
    // Stages 2 and 3.
    let located = real_location(&lexical, 0);
    // A workspace removed or renamed after its handle was opened: said so, rather than
    // "no file at PATH" (or no answer at all when its parents went too).
    if !matches!(located, Ok((_, true)))
        && let Err(e) = std::fs::symlink_metadata(&root)
    {
        return Err(workspace_refusal(&root, &e));
    }
    let (abs, exists) = located.map_err(|e| match e {
        Located::Io(Some(e)) => io_refusal(model_path, Access::Reach, &e),
        Located::Io(None) => Refusal::internal(),
        Located::Loop => outside(model_path),
    })?;
    let Ok(inner) = abs.strip_prefix(&root).map(Path::to_path_buf) else {
        return Err(outside(model_path));
    };
    Ok(ResolvedPath {
        abs,
        rel,
        exists,
        root: Arc::clone(handle),
        inner,
    })
}

enum Located {
    /// A system error (when there was one) on the way to the path.
    Io(Option<io::Error>),
    Loop,
}

/// Stage 2 (exists: canonicalize) or stage 3 (deepest existing ancestor + tail).
fn real_location(lexical: &Path, hops: usize) -> Result<(PathBuf, bool), Located> {
    match lexical.canonicalize() {
        Ok(c) => return Ok((c, true)),
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            // e.g. ENOTDIR ("a/file.txt/x") or a symlink loop: no file can exist there.
            if is_not_dir(&e) {
                return Ok((lexical.to_path_buf(), false));
            }
            return Err(Located::Io(Some(e)));
        }
        Err(_) => {}
    }
    // A dangling symlink: follow it lexically and check its target like a new path.
    if let Ok(meta) = std::fs::symlink_metadata(lexical)
        && meta.file_type().is_symlink()
    {
        if hops >= MAX_LINK_HOPS {
            return Err(Located::Loop);
        }
        let target = std::fs::read_link(lexical).map_err(|e| Located::Io(Some(e)))?;
        let parent = lexical.parent().unwrap_or(lexical);
        let next = normalize_lexically(&parent.join(target)).ok_or(Located::Loop)?;
        return real_location(&next, hops + 1);
    }
    let mut tail = Vec::new();
    let mut cur = lexical;
    loop {
        let Some(name) = cur.file_name() else {
            return Err(Located::Io(None));
        };
        tail.push(name.to_os_string());
        let Some(parent) = cur.parent() else {
            return Err(Located::Io(None));
        };
        match parent.canonicalize() {
            Ok(base) => {
                let mut out = base;
                for part in tail.iter().rev() {
                    out.push(part);
                }
                return Ok((out, false));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => cur = parent,
            Err(e) if is_not_dir(&e) => return Ok((lexical.to_path_buf(), false)),
            Err(e) => return Err(Located::Io(Some(e))),
        }
    }
}

fn is_not_dir(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotADirectory
}

/// Where `path` is, or would be once created, on disk: each existing component is
/// resolved as the kernel resolves it (symlinks followed, a dangling one through its
/// target); from the first missing component on, the rest is appended with `.` and `..`
/// applied lexically, as `create_dir_all` would create it. A relative `path` is taken
/// against the current directory. For locations that must be recognised before they
/// exist, such as `$CODESMITH_HOME` spelled through a symlink or `..`.
///
/// Errors: host errors other than `NotFound`; `InvalidInput` after more than
/// [`MAX_LINK_HOPS`] dangling symlinks or when `..` climbs above `/`.
pub fn real_location_of(path: &Path) -> io::Result<PathBuf> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    locate(&abs, 0)
}

fn locate(abs: &Path, hops: usize) -> io::Result<PathBuf> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
    let mut cur = PathBuf::from("/");
    let mut missing = false;
    let mut comps = abs.components();
    while let Some(comp) = comps.next() {
        match comp {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => continue,
            Component::ParentDir if missing => {
                if !cur.pop() {
                    return Err(bad("the path climbs above the root"));
                }
                continue;
            }
            _ => {}
        }
        let next = cur.join(comp.as_os_str());
        if missing {
            cur = next;
            continue;
        }
        match next.canonicalize() {
            Ok(real) => cur = real,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink()) {
                    if hops >= MAX_LINK_HOPS {
                        return Err(bad("too many dangling symlinks"));
                    }
                    let mut target = cur.join(std::fs::read_link(&next)?);
                    target.extend(comps);
                    return locate(&target, hops + 1);
                }
                missing = true;
                cur = next;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(cur)
}

/// Resolves `.` and `..` without touching the disk by the strict rule of
/// [`codesmith_policy::normalize_path_strict`]: `None` when `..` climbs above
/// `/` (or above the start of a relative path), so containment refuses it.
pub fn normalize_lexically(path: &Path) -> Option<PathBuf> {
    normalize_path_strict_bytes(path.as_os_str().as_bytes())
        .map(|bytes| PathBuf::from(OsString::from_vec(bytes)))
}

fn display_rel(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// The `OUTSIDE_WORKSPACE` refusal for `model_path`.
pub fn outside(model_path: &str) -> Refusal {
    Refusal::new(
        ErrorCode::OutsideWorkspace,
        format!("The path \"{model_path}\" resolves outside the workspace."),
        "Use a path inside the workspace, relative to its root (e.g. \"src/lib.rs\"); \
         symlinks that lead outside the workspace are refused too.",
    )
    .with("path", model_path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalization() {
        assert_eq!(
            normalize_lexically(Path::new("/a/b/../c/./d")).unwrap(),
            PathBuf::from("/a/c/d")
        );
        assert!(normalize_lexically(Path::new("/..")).is_none());
    }

    #[test]
    fn three_stages() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.rs"), "x").unwrap();
        let r = resolve(&ws, "src/a.rs").unwrap();
        assert!(r.exists);
        assert_eq!(r.rel, "src/a.rs");
        let r = resolve(&ws, "./src/../src/new/deep.rs").unwrap();
        assert!(!r.exists);
        assert_eq!(r.rel, "src/new/deep.rs");
        assert_eq!(resolve(&ws, "").unwrap().rel, ".");
        let e = resolve(&ws, "../outside.txt").unwrap_err();
        assert_eq!(e.code, ErrorCode::OutsideWorkspace);
        let e = resolve(&ws, "/etc/passwd").unwrap_err();
        assert_eq!(e.code, ErrorCode::OutsideWorkspace);
    }

    /// The containment rule for `..`: a model path whose dots climb above `/`
    /// or out of the workspace is refused, even when the text would land back
    /// inside after the climb (`/../WS/x`); the kernel's `/proc/PID/root`
    /// links are not folded, so a spelling through them stays outside.
    #[test]
    fn dot_dot_escapes_are_refused_by_text() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        let ws_text = ws.to_str().unwrap();
        for p in [
            "..".to_string(),
            "../ws2/src".to_string(),
            "src/../../x".to_string(),
            "./src/../..".to_string(),
            "/..".to_string(),
            format!("/..{ws_text}/src"),
            format!("/../..{ws_text}"),
            format!("{ws_text}/../ws2"),
            format!("/proc/self/root{ws_text}/src"),
            format!("/proc/1/root{ws_text}"),
        ] {
            let e = resolve(&ws, &p).unwrap_err();
            assert_eq!(e.code, ErrorCode::OutsideWorkspace, "{p}");
        }
        for (p, rel) in [
            ("", "."),
            (".", "."),
            ("./.", "."),
            ("src/", "src"),
            ("src//new/", "src/new"),
            ("src/./a/../b", "src/b"),
            ("src/..", "."),
            ("src/../src/../", "."),
        ] {
            assert_eq!(resolve(&ws, p).unwrap().rel, rel, "{p:?}");
        }
        // Climbing out and back in by name stays inside.
        assert_eq!(resolve(&ws, "../ws/src").unwrap().rel, "src");
        let inside = format!("{ws_text}/src/../src/x");
        assert_eq!(resolve(&ws, &inside).unwrap().rel, "src/x");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_leading_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let out = dir.path().join("out");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(&out, ws.join("link")).unwrap();
        std::os::unix::fs::symlink(out.join("secret"), ws.join("file")).unwrap();
        std::os::unix::fs::symlink(out.join("nope"), ws.join("dangling")).unwrap();
        for p in [
            "link/secret",
            "file",
            "link/new.txt",
            "dangling",
            "link/x/y.rs",
        ] {
            let e = resolve(&ws, p).unwrap_err();
            assert_eq!(e.code, ErrorCode::OutsideWorkspace, "{p}");
        }
        // A link that stays inside is fine.
        std::fs::write(ws.join("real.txt"), "r").unwrap();
        std::os::unix::fs::symlink(ws.join("real.txt"), ws.join("alias.txt")).unwrap();
        let r = resolve(&ws, "alias.txt").unwrap();
        assert_eq!(r.rel, "alias.txt");
        assert!(r.abs.ends_with("real.txt"));
    }

    #[cfg(unix)]
    #[test]
    fn real_location_of_sees_through_links_and_dots_before_the_path_exists() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::os::unix::fs::symlink(&ws, base.join("alias")).unwrap();
        std::os::unix::fs::symlink(ws.join("later"), base.join("dangling")).unwrap();
        let want = ws.join(".home");
        for spelled in [
            base.join("alias/.home"),
            base.join("nowhere/../ws/.home"),
            base.join("alias/./x/y/../../.home"),
            base.join("dangling/../.home"),
        ] {
            assert_eq!(real_location_of(&spelled).unwrap(), want, "{spelled:?}");
        }
        assert_eq!(
            real_location_of(&base.join("dangling/a")).unwrap(),
            ws.join("later/a")
        );
        std::os::unix::fs::symlink("loop", base.join("loop")).unwrap();
        assert!(real_location_of(&base.join("loop/x")).is_err());
    }
}
