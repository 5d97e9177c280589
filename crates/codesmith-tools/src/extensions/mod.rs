//! Markdown extensions: custom slash commands ([`commands`]) and custom agents
//! ([`agents`]), one Markdown file each with optional YAML front matter.
//!
//! Two roots are searched for each: the user's `$CODESMITH_HOME/commands/` (or
//! `agents/`) and the project's `<workspace>/.codesmith/commands/` (or `agents/`). A
//! project's files arrive with the repository, so they are untrusted until the user
//! trusts each one on this machine (`codesmith trust command NAME`, `codesmith trust
//! agent NAME`), pinned to the SHA-256 of its bytes ([`crate::skills::trust`]). A user's
//! file of a name wins over a project's file of the same name.
//!
//! Files are read bounded ([`MAX_FILE_BYTES`], at most [`MAX_FILES_PER_ROOT`] per root,
//! regular files only; a project's symlinks are refused), front matter through the one
//! screened YAML reader of skills. A bad file is skipped with a notice that says what to
//! fix; it never hides the others.

pub mod agents;
pub mod commands;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use yaml_rust2::Yaml;

use crate::skills::Scope;
use crate::skills::trust::{TrustKind, TrustState, TrustStore};

/// Largest command or agent file, in bytes.
pub const MAX_FILE_BYTES: u64 = 32 * 1024;
/// Most `.md` files read from one root; the rest are skipped with a notice.
pub const MAX_FILES_PER_ROOT: usize = 200;

/// One Markdown file found in a root.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The file name without `.md`.
    pub(crate) stem: String,
    pub(crate) path: PathBuf,
    pub(crate) text: String,
    pub(crate) scope: Scope,
    /// Lowercase hex SHA-256 of the file's bytes.
    pub(crate) digest: String,
    /// How far it is trusted (always [`TrustState::User`] for the user's root).
    pub(crate) trust: TrustState,
}

/// The roots of `dir_name` (`commands`, `agents`): the user's, then the project's
/// (never one inside `home`, as a project's `.codesmith` that is the user's own).
fn roots(home: &Path, workspace: &Path, dir_name: &str) -> Vec<(Scope, PathBuf)> {
    let mut roots = vec![(Scope::User, home.join(dir_name))];
    let project = workspace.join(".codesmith");
    let inside_home = match (project.canonicalize(), home.canonicalize()) {
        (Ok(p), Ok(h)) => p.starts_with(h),
        _ => false,
    };
    if !inside_home {
        roots.push((Scope::Project, project.join(dir_name)));
    }
    roots
}

/// Reads the `.md` files of both roots of `dir_name`; `notices` gets one line per
/// skipped file. Names are checked by `valid_name` (which says why a name is refused).
pub(crate) fn read_roots(
    home: &Path,
    workspace: &Path,
    dir_name: &str,
    kind: TrustKind,
    trust: &TrustStore,
    notices: &mut Vec<String>,
) -> Vec<Found> {
    let mut found = Vec::new();
    for (scope, root) in roots(home, workspace, dir_name) {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        paths.sort();
        if paths.len() > MAX_FILES_PER_ROOT {
            notices.push(format!(
                "{}: only the first {MAX_FILES_PER_ROOT} .md files are read",
                root.display()
            ));
            paths.truncate(MAX_FILES_PER_ROOT);
        }
        for path in paths {
            let Some(stem) = path
                .file_stem()
                .and_then(|s| s.to_str())
                .map(str::to_string)
            else {
                notices.push(format!("skipped {}: its name is not UTF-8", path.display()));
                continue;
            };
            if scope == Scope::Project
                && std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink())
            {
                notices.push(format!(
                    "skipped {}: a project's {dir_name} may not be symlinks; replace it with the \
                     file itself",
                    path.display()
                ));
                continue;
            }
            let bytes = match crate::fs::bounded::read_regular(
                &path,
                MAX_FILE_BYTES,
                crate::fs::bounded::Follow::Yes,
            ) {
                Ok(b) => b,
                Err(e) => {
                    notices.push(format!("skipped {}: {e}", path.display()));
                    continue;
                }
            };
            let Ok(text) = String::from_utf8(bytes.clone()) else {
                notices.push(format!("skipped {}: it is not UTF-8 text", path.display()));
                continue;
            };
            let digest = sha256_hex(&bytes);
            let trust = match scope {
                Scope::User => TrustState::User,
                Scope::Project => trust.project_state(workspace, kind, &stem, &digest),
            };
            found.push(Found {
                stem,
                path,
                text,
                scope,
                digest,
                trust,
            });
        }
    }
    found
}

/// The project file `<workspace>/.codesmith/DIR/NAME.md` of a command (`kind`
/// [`TrustKind::Command`]) or agent ([`TrustKind::Agent`]), read as discovery reads it:
/// its path and the digest a trust pins.
///
/// # Errors
/// No such project file (or it was skipped: a symlink, too large, not UTF-8), or another
/// `kind`; the message says which.
pub fn project_item(
    home: &Path,
    workspace: &Path,
    kind: TrustKind,
    name: &str,
) -> Result<(PathBuf, String), String> {
    let dir = match kind {
        TrustKind::Command => "commands",
        TrustKind::Agent => "agents",
        other => return Err(format!("{} is not a Markdown extension", other.as_str())),
    };
    let mut notices = Vec::new();
    let found = read_roots(
        home,
        workspace,
        dir,
        kind,
        &TrustStore::default(),
        &mut notices,
    );
    if let Some(f) = found
        .into_iter()
        .find(|f| f.scope == Scope::Project && f.stem == name)
    {
        return Ok((f.path, f.digest));
    }
    let skipped = notices
        .iter()
        .find(|n| n.contains(&format!("{name}.md")))
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    Err(format!(
        "there is no project {} {name:?} in {}{skipped}",
        kind.as_str(),
        workspace.join(".codesmith").join(dir).display()
    ))
}

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A front-matter string field: `Ok(None)` when absent, an error when not a string.
pub(crate) fn string_field(
    map: &yaml_rust2::yaml::Hash,
    key: &str,
) -> Result<Option<String>, String> {
    match map.get(&Yaml::String(key.to_string())) {
        None | Some(Yaml::Null) => Ok(None),
        Some(Yaml::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
        Some(Yaml::Integer(i)) => Ok(Some(i.to_string())),
        Some(_) => Err(format!("`{key}` is not a string")),
    }
}

/// A front-matter list of names: a YAML list of strings, or one string of names
/// separated by commas or spaces (`Read, Grep` as Claude Code writes it).
pub(crate) fn list_field(
    map: &yaml_rust2::yaml::Hash,
    key: &str,
) -> Result<Option<Vec<String>>, String> {
    let split = |s: &str| -> Vec<String> {
        s.split(|c: char| c == ',' || c.is_whitespace())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    match map.get(&Yaml::String(key.to_string())) {
        None | Some(Yaml::Null) => Ok(None),
        Some(Yaml::String(s)) => Ok(Some(split(s))),
        Some(Yaml::Array(items)) => items
            .iter()
            .map(|i| match i {
                Yaml::String(s) => Ok(s.trim().to_string()),
                _ => Err(format!("`{key}` holds an item that is not a string")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("`{key}` is not a list of names")),
    }
}

/// Refuses a front matter key outside `known`, so a typo is never ignored: the error
/// names it and the keys there are.
pub(crate) fn check_keys(map: &yaml_rust2::yaml::Hash, known: &[&str]) -> Result<(), String> {
    let unknown = map.keys().find_map(|k| match k {
        Yaml::String(s) if known.contains(&s.as_str()) => None,
        Yaml::String(s) => Some(s.clone()),
        other => Some(format!("{other:?}")),
    });
    match unknown {
        None => Ok(()),
        Some(key) => Err(format!(
            "the front matter key `{key}` is not one of {}; remove it",
            known.join(", ")
        )),
    }
}
