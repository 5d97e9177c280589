//! Exemplar skills shipped inside the binary, installed into the user's skills root.
//!
//! A bundle of exemplar skills is
//! installed on first launch and carries a version, so an upgrade can bring better
//! exemplars. [`install_bundle`] records, in `$CODESMITH_HOME/skills-bundle.json`, the
//! bundle version and the SHA-256 of every file it wrote. On a later launch with a higher
//! [`BUNDLE_VERSION`]:
//! - a file the user has not edited (its bytes still hash to the record) is replaced;
//! - a file the user edited is kept, and the new version is written beside it as
//!   `FILE.new` (for `SKILL.md`: `SKILL.md.new`), with a notice;
//! - a bundled skill the user removed stays removed.
//!
//! The same or a lower version changes nothing, so the work is done once per release.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::user_skills_dir;

/// Version of the bundled skills; raise it whenever one of them changes.
pub const BUNDLE_VERSION: u32 = 1;

/// File name of the install record under `$CODESMITH_HOME`.
pub const BUNDLE_RECORD: &str = "skills-bundle.json";

/// Suffix of the new version written beside a file the user edited.
pub const NEW_SUFFIX: &str = ".new";

/// One bundled skill: its name (the folder) and files as (relative path, text).
#[derive(Debug, Clone, Copy)]
pub struct BundledSkill<'a> {
    /// The skill's name and folder.
    pub name: &'a str,
    /// Its files, `SKILL.md` first.
    pub files: &'a [(&'a str, &'a str)],
}

/// A versioned set of bundled skills.
#[derive(Debug, Clone, Copy)]
pub struct Bundle<'a> {
    /// Its version; see [`BUNDLE_VERSION`].
    pub version: u32,
    /// Its skills.
    pub skills: &'a [BundledSkill<'a>],
}

const BUNDLED: &[BundledSkill<'static>] = &[
    BundledSkill {
        name: "delegate",
        files: &[(
            "SKILL.md",
            include_str!("../../assets/skills/delegate/SKILL.md"),
        )],
    },
    BundledSkill {
        name: "failing-test-first",
        files: &[(
            "SKILL.md",
            include_str!("../../assets/skills/failing-test-first/SKILL.md"),
        )],
    },
    BundledSkill {
        name: "mcp-builder",
        files: &[
            (
                "SKILL.md",
                include_str!("../../assets/skills/mcp-builder/SKILL.md"),
            ),
            (
                "server.py",
                include_str!("../../assets/skills/mcp-builder/server.py"),
            ),
        ],
    },
    BundledSkill {
        name: "skill-creator",
        files: &[(
            "SKILL.md",
            include_str!("../../assets/skills/skill-creator/SKILL.md"),
        )],
    },
];

/// The bundle compiled into this binary.
pub fn bundled() -> Bundle<'static> {
    Bundle {
        version: BUNDLE_VERSION,
        skills: BUNDLED,
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    version: u32,
    /// skill name → file path → SHA-256 of the bytes last installed.
    files: BTreeMap<String, BTreeMap<String, String>>,
}

/// What [`install_bundle`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Installed {
    /// Skills written for the first time.
    pub added: Vec<String>,
    /// Skills whose unedited files were replaced by a newer version.
    pub updated: Vec<String>,
    /// Files kept because the user edited them: (`skill/file`, where the new one went).
    pub kept: Vec<(String, String)>,
}

impl Installed {
    /// Notices for the user, one per line; empty when nothing happened.
    pub fn notices(&self, home: &Path, version: u32) -> Vec<String> {
        let root = user_skills_dir(home);
        let mut out = Vec::new();
        if !self.added.is_empty() {
            out.push(format!(
                "installed the bundled skills {} into {} (bundle version {version})",
                self.added.join(", "),
                root.display()
            ));
        }
        if !self.updated.is_empty() {
            out.push(format!(
                "updated the bundled skills {} to bundle version {version}",
                self.updated.join(", ")
            ));
        }
        for (file, new) in &self.kept {
            out.push(format!(
                "kept your edited skill file {}; the bundled version {version} is beside it as \
                 {}: compare the two, merge what you want, then delete the .new file",
                root.join(file).display(),
                root.join(new).display()
            ));
        }
        out
    }
}

fn sha(bytes: &[u8]) -> String {
    crate::fs::text::sha256_hex(bytes)
}

fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        crate::private::create_dir_all(parent)?;
    }
    crate::fs::atomic::write_atomic(path, bytes)?;
    crate::private::restrict(path)
}

/// Installs or upgrades `bundle` into `<home>/skills/` (see the module docs).
///
/// Nothing is written when the record already holds `bundle.version` or a higher one.
///
/// # Errors
/// Any I/O error; files are replaced atomically, and the record is written last, so an
/// interrupted install is completed by the next launch.
pub fn install_bundle(home: &Path, bundle: &Bundle<'_>) -> io::Result<Installed> {
    let record_path = home.join(BUNDLE_RECORD);
    let record: Option<Record> = std::fs::read(&record_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if record.as_ref().is_some_and(|r| r.version >= bundle.version) {
        return Ok(Installed::default());
    }
    let old = record.unwrap_or_default();
    let root = user_skills_dir(home);
    let mut done = Installed::default();
    let mut files = BTreeMap::new();
    for skill in bundle.skills {
        let dir = root.join(skill.name);
        let recorded = old.files.get(skill.name);
        let mut hashes = BTreeMap::new();
        if recorded.is_some() && !dir.exists() {
            // Installed before and removed by the user since: stays removed.
            files.insert(
                skill.name.to_string(),
                recorded.cloned().unwrap_or_default(),
            );
            continue;
        }
        let (mut added, mut updated) = (false, false);
        for (rel, text) in skill.files {
            let path = dir.join(rel);
            let new_hash = sha(text.as_bytes());
            hashes.insert((*rel).to_string(), new_hash.clone());
            match std::fs::read(&path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    write_private(&path, text.as_bytes())?;
                    if recorded.is_some() {
                        updated = true;
                    } else {
                        added = true;
                    }
                }
                Err(e) => return Err(e),
                Ok(current) if current == text.as_bytes() => {}
                Ok(current) => {
                    let unedited = recorded
                        .and_then(|r| r.get(*rel))
                        .is_some_and(|h| *h == sha(&current));
                    if unedited {
                        write_private(&path, text.as_bytes())?;
                        updated = true;
                    } else {
                        let new_rel = format!("{rel}{NEW_SUFFIX}");
                        write_private(&dir.join(&new_rel), text.as_bytes())?;
                        done.kept.push((
                            format!("{}/{rel}", skill.name),
                            format!("{}/{new_rel}", skill.name),
                        ));
                    }
                }
            }
        }
        if added {
            done.added.push(skill.name.to_string());
        } else if updated {
            done.updated.push(skill.name.to_string());
        }
        files.insert(skill.name.to_string(), hashes);
    }
    let record = Record {
        version: bundle.version,
        files,
    };
    let mut bytes = serde_json::to_vec_pretty(&record).map_err(io::Error::other)?;
    bytes.push(b'\n');
    write_private(&record_path, &bytes)?;
    Ok(done)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::skills::{Scope, discover, load_skill_dir};

    #[test]
    fn every_bundled_skill_is_valid_and_named_like_its_folder() {
        let d = tempfile::tempdir().unwrap();
        let done = install_bundle(d.path(), &bundled()).unwrap();
        assert_eq!(done.added.len(), BUNDLED.len());
        for skill in BUNDLED {
            let loaded = load_skill_dir(
                &user_skills_dir(d.path()).join(skill.name),
                Scope::User,
                true,
            );
            assert!(loaded.is_ok(), "{}: {:?}", skill.name, loaded.err());
        }
        let set = discover(d.path(), &d.path().join("ws"));
        assert!(set.notices.is_empty(), "{:?}", set.notices);
        for s in &set.skills {
            let chars = s.description.chars().count();
            assert!(
                chars <= crate::skills::MAX_PROMPT_DESCRIPTION_CHARS,
                "{}: a {chars}-character description would be cut in the prompt",
                s.name
            );
        }
        for name in [
            "delegate",
            "failing-test-first",
            "mcp-builder",
            "skill-creator",
        ] {
            assert!(set.get(name).is_some(), "{name}");
        }
    }

    #[test]
    fn installs_once_and_an_upgrade_keeps_user_edits() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let v1 = [
            BundledSkill {
                name: "a",
                files: &[("SKILL.md", "---\nname: a\ndescription: A.\n---\nv1\n")],
            },
            BundledSkill {
                name: "b",
                files: &[("SKILL.md", "---\nname: b\ndescription: B.\n---\nv1\n")],
            },
        ];
        let first = install_bundle(
            home,
            &Bundle {
                version: 1,
                skills: &v1,
            },
        )
        .unwrap();
        assert_eq!(first.added, vec!["a", "b"]);
        let again = install_bundle(
            home,
            &Bundle {
                version: 1,
                skills: &v1,
            },
        )
        .unwrap();
        assert_eq!(again, Installed::default());

        let b_file = user_skills_dir(home).join("b/SKILL.md");
        std::fs::write(&b_file, "---\nname: b\ndescription: B.\n---\nmine\n").unwrap();
        let v2 = [
            BundledSkill {
                name: "a",
                files: &[("SKILL.md", "---\nname: a\ndescription: A.\n---\nv2\n")],
            },
            BundledSkill {
                name: "b",
                files: &[("SKILL.md", "---\nname: b\ndescription: B.\n---\nv2\n")],
            },
        ];
        let up = install_bundle(
            home,
            &Bundle {
                version: 2,
                skills: &v2,
            },
        )
        .unwrap();
        assert_eq!(up.updated, vec!["a"]);
        assert_eq!(
            up.kept,
            vec![("b/SKILL.md".into(), "b/SKILL.md.new".into())]
        );
        let a = std::fs::read_to_string(user_skills_dir(home).join("a/SKILL.md")).unwrap();
        assert!(a.ends_with("v2\n"));
        assert!(
            std::fs::read_to_string(&b_file)
                .unwrap()
                .ends_with("mine\n")
        );
        let new = std::fs::read_to_string(user_skills_dir(home).join("b/SKILL.md.new")).unwrap();
        assert!(new.ends_with("v2\n"));
        assert!(up.notices(home, 2)[1].contains("kept your edited skill file"));

        std::fs::remove_dir_all(user_skills_dir(home).join("a")).unwrap();
        install_bundle(
            home,
            &Bundle {
                version: 3,
                skills: &v2,
            },
        )
        .unwrap();
        assert!(!user_skills_dir(home).join("a").exists());
    }
}
