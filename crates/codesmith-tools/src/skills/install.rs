//! `codesmith skills install PATH`: copying a checked skill folder into the user's root.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{Scope, SkillError, load_skill_dir, user_skills_dir};

/// Why a folder was not installed.
#[derive(Debug)]
#[non_exhaustive]
pub enum InstallError {
    /// The folder is not a valid skill (symlinks are refused here).
    Invalid(PathBuf, SkillError),
    /// A skill of that name is installed already.
    Exists(PathBuf),
    /// Writing the copy failed.
    Io(PathBuf, std::io::Error),
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstallError::Invalid(p, e) => {
                write!(f, "{} is not an installable skill: {e}", p.display())
            }
            InstallError::Exists(p) => write!(
                f,
                "a skill is already installed at {}; edit it there, or remove it first to \
                 install this one",
                p.display()
            ),
            InstallError::Io(p, e) => write!(f, "cannot write {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for InstallError {}

/// Checks the folder `src` (strictly: no symlink at all, every limit of
/// [`load_skill_dir`]) and copies the bytes it checked into `<home>/skills/NAME/`
/// (directories `0700`, files `0600`). The copy is assembled in a hidden folder of the
/// root and renamed into place, so a half-copied skill is never listed.
///
/// # Errors
/// [`InstallError`]: the reason and what to do.
pub fn install_skill(home: &Path, src: &Path) -> Result<PathBuf, InstallError> {
    if std::fs::symlink_metadata(src).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(InstallError::Invalid(
            src.to_path_buf(),
            SkillError::Symlink("the folder itself".into()),
        ));
    }
    let loaded = load_skill_dir(src, Scope::User, true)
        .map_err(|e| InstallError::Invalid(src.to_path_buf(), e))?;
    let root = user_skills_dir(home);
    let target = root.join(&loaded.skill.name);
    if std::fs::symlink_metadata(&target).is_ok() {
        return Err(InstallError::Exists(target));
    }
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| InstallError::Io(p, e)
    };
    crate::private::create_dir_all(&root).map_err(io(&root))?;
    let staging = root.join(format!(
        ".install-{}-{}",
        loaded.skill.name,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&staging);
    let result = (|| {
        for (rel, bytes) in &loaded.contents {
            let path = staging.join(rel);
            if let Some(parent) = path.parent() {
                crate::private::create_dir_all(parent).map_err(io(parent))?;
            }
            crate::private::open_options()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|mut f| {
                    std::io::Write::write_all(&mut f, bytes).and_then(|()| f.sync_all())
                })
                .map_err(io(&path))?;
        }
        std::fs::rename(&staging, &target).map_err(io(&target))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result.map(|()| target)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn installs_a_checked_copy_and_refuses_symlinks_and_duplicates() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src/tidy");
        std::fs::create_dir_all(src.join("ref")).unwrap();
        std::fs::write(
            src.join("SKILL.md"),
            "---\nname: tidy\ndescription: Tidy imports.\n---\nSort them.\n",
        )
        .unwrap();
        std::fs::write(src.join("ref/notes.md"), "n").unwrap();
        let home = d.path().join("home");
        let at = install_skill(&home, &src).unwrap();
        assert_eq!(at, user_skills_dir(&home).join("tidy"));
        assert_eq!(
            std::fs::read_to_string(at.join("ref/notes.md")).unwrap(),
            "n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(at.join("SKILL.md"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(matches!(
            install_skill(&home, &src),
            Err(InstallError::Exists(_))
        ));

        // `codesmith skills install .` from inside the folder names the folder itself.
        let home2 = d.path().join("home2");
        let at = install_skill(&home2, &src.join(".")).unwrap();
        assert_eq!(at, user_skills_dir(&home2).join("tidy"));

        let linked = d.path().join("src/linked");
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(
            linked.join("SKILL.md"),
            "---\nname: linked\ndescription: L.\n---\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("SKILL.md", linked.join("again.md")).unwrap();
        let err = install_skill(&home, &linked).unwrap_err();
        assert!(err.to_string().contains("again.md is a symlink"), "{err}");
        assert!(!user_skills_dir(&home).join("linked").exists());
    }
}
