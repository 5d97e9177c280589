//! Skills: instructions the model loads only when a task needs them.
//!
//! A skill is a folder holding `SKILL.md` (YAML front matter with `name` and
//! `description`, then a Markdown body) and optionally other files (scripts, templates,
//! references). Two roots are searched: the user's `$CODESMITH_HOME/skills/` and the
//! project's `<workspace>/.codesmith/skills/`.
//!
//! Progressive disclosure: only each
//! skill's name and one-line description reach the system prompt ([`prompt_lines`]); the
//! body arrives when the model calls the `skill` tool ([`SkillTool`]), as an ordinary tool
//! result.
//!
//! Trust (granted locally, never carried by the artifact): user skills are trusted; a
//! project skill comes from the repository, so its body is delivered wrapped as external
//! data until the user trusts it on this machine with `codesmith skills trust NAME`. The
//! record lives in `$CODESMITH_HOME`, bound to the workspace and the SHA-256 of the
//! skill's whole content ([`trust`]); nothing inside a skill or a repository can say it is
//! trusted.
//!
//! Bundled exemplar skills ship inside the binary and are installed into the user's root
//! with a bundle version; an upgrade never overwrites a user's edit ([`bundle`]).
//!
//! A bad skill is skipped with a notice that says what to fix; it never hides the others.

pub mod bundle;
mod install;
mod load;
mod parse;
mod tool;
pub mod trust;

use std::fmt;
use std::path::{Path, PathBuf};

pub use install::{InstallError, install_skill};
pub use load::{
    LoadedSkill, MAX_SKILL_FILE_NAME, content_digest, discover, is_skill_file_name, load_skill_dir,
};
pub(crate) use parse::split_front_matter;
pub use parse::{MAX_DESCRIPTION_CHARS, SkillDoc, check_skill_name, parse_skill_md};
pub use tool::SkillTool;

/// The file every skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";
/// Largest `SKILL.md`, in bytes.
pub const MAX_SKILL_FILE_BYTES: u64 = 32 * 1024;
/// Largest other file of a skill, in bytes.
pub const MAX_OTHER_FILE_BYTES: u64 = 128 * 1024;
/// Largest skill (all its files together), in bytes.
pub const MAX_SKILL_BYTES: u64 = 512 * 1024;
/// Most files in one skill folder, `SKILL.md` included.
pub const MAX_SKILL_FILES: usize = 64;
/// Deepest sub-folder of a skill (`SKILL.md` is at depth 0).
pub const MAX_SKILL_DEPTH: usize = 3;
/// Most skill folders examined in one root (valid or not); the rest are skipped with a
/// notice.
pub const MAX_SKILLS_PER_ROOT: usize = 100;
/// Characters of a description shown in the system prompt (longer ones end with `…`).
pub const MAX_PROMPT_DESCRIPTION_CHARS: usize = 160;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// `$CODESMITH_HOME/skills/`: the user's own, trusted.
    User,
    /// `<workspace>/.codesmith/skills/`: from the repository, data until trusted locally.
    Project,
}

impl Scope {
    /// `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// The user's skills root: `<home>/skills`.
pub fn user_skills_dir(home: &Path) -> PathBuf {
    home.join("skills")
}

/// The project's skills root: `<workspace>/.codesmith/skills`.
pub fn project_skills_dir(workspace: &Path) -> PathBuf {
    workspace.join(".codesmith").join("skills")
}

/// Why a skill folder was not accepted. Each message says what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkillError {
    /// The folder has no `SKILL.md`.
    NoSkillFile,
    /// `SKILL.md` does not start with a `---` front-matter block.
    NoFrontMatter,
    /// The front matter is not YAML this loader accepts.
    BadYaml(String),
    /// A required front-matter key is missing or empty.
    MissingField(String),
    /// `name` breaks `^[a-z0-9][a-z0-9-]{0,63}$`.
    BadName {
        /// The name as written.
        name: String,
        /// The rule it breaks.
        why: String,
    },
    /// `name` differs from the folder's name.
    NameMismatch {
        /// The front matter's name.
        name: String,
        /// The folder's name.
        folder: String,
    },
    /// The description breaks a limit.
    BadDescription(String),
    /// A file, or the whole skill, is over a size or count limit.
    TooLarge(String),
    /// A symlink points outside the skill's folder (or the folder outside its root).
    SymlinkEscape(String),
    /// A symlink where none is accepted (`codesmith skills install`).
    Symlink(String),
    /// A file or folder inside the skill has a name outside the accepted set.
    BadFileName(String),
    /// `SKILL.md` is not UTF-8.
    NotUtf8,
    /// The folder could not be read.
    Unreadable(String),
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillError::NoSkillFile => write!(
                f,
                "the folder has no {SKILL_FILE}; add one that starts with front matter \
                 (`---`, `name: ...`, `description: ...`, `---`)"
            ),
            SkillError::NoFrontMatter => write!(
                f,
                "{SKILL_FILE} does not start with front matter; make its first line `---`, \
                 then `name: ...` and `description: ...`, then a closing `---` line"
            ),
            SkillError::BadYaml(why) => write!(
                f,
                "the front matter is not valid: {why}; write plain `key: value` lines"
            ),
            SkillError::MissingField(key) => write!(
                f,
                "the front matter has no `{key}`; add a `{key}: ...` line between the `---` lines"
            ),
            SkillError::BadName { name, why } => write!(
                f,
                "the name {name:?} is not allowed ({why}); use 1-64 characters of a-z, 0-9 and \
                 '-', not starting with '-'"
            ),
            SkillError::NameMismatch { name, folder } => write!(
                f,
                "the front matter says name {name:?} but the folder is {folder:?}; make them the same"
            ),
            SkillError::BadDescription(why) => {
                write!(f, "the description is not usable: {why}; shorten it")
            }
            SkillError::TooLarge(why) => {
                write!(f, "{why}; move large material out of the skill folder")
            }
            SkillError::SymlinkEscape(path) => write!(
                f,
                "{path} is a symlink that leads outside the skill's folder; replace it with \
                 the file itself"
            ),
            SkillError::Symlink(path) => write!(
                f,
                "{path} is a symlink; copy the real file into the skill folder instead"
            ),
            SkillError::BadFileName(path) => write!(
                f,
                "the file name {path:?} is not accepted in a skill; rename it using only \
                 letters, digits, '.', '_', '-' and '+' (at most {} characters per name)",
                load::MAX_SKILL_FILE_NAME
            ),
            SkillError::NotUtf8 => write!(f, "{SKILL_FILE} is not UTF-8 text; save it as UTF-8"),
            SkillError::Unreadable(why) => write!(f, "the folder cannot be read: {why}"),
        }
    }
}

impl std::error::Error for SkillError {}

/// A skill that was found and accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (equal to its folder's name).
    pub name: String,
    /// Its description, as written (trimmed).
    pub description: String,
    /// Where it was found.
    pub scope: Scope,
    /// Its folder.
    pub dir: PathBuf,
    /// Lowercase hex SHA-256 over every file of the folder (see [`content_digest`]):
    /// what a local trust record is bound to.
    pub digest: String,
    /// The other files, as `/`-separated paths relative to the folder, sorted.
    pub files: Vec<String>,
}

/// Every skill found, sorted by name, and the notices about those that were skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillSet {
    /// Accepted skills, sorted by name; names are unique.
    pub skills: Vec<Skill>,
    /// One line per skipped skill or root: where, why and what to do.
    pub notices: Vec<String>,
    /// Names of folders that were skipped, with the reason (for the tool's refusal).
    pub skipped: Vec<(String, String)>,
}

impl SkillSet {
    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }
}

/// One line per skill for the system prompt, sorted by name:
/// `- NAME: DESCRIPTION` (user) or `- NAME (project): DESCRIPTION`.
///
/// The description is sanitized ([`crate::sanitize::sanitize_text`]), its whitespace
/// runs (newlines included) folded to one space, and cut at
/// [`MAX_PROMPT_DESCRIPTION_CHARS`] characters. Same skills, same bytes. `None` when there
/// is no skill.
pub fn prompt_lines(set: &SkillSet) -> Option<String> {
    if set.skills.is_empty() {
        return None;
    }
    let mut out = String::new();
    for skill in &set.skills {
        let (clean, _) = crate::sanitize::sanitize_text(&skill.description);
        let folded = clean
            .split(|c: char| c.is_whitespace() || c.is_control())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let short = crate::syntax_check::syntax::cut_chars(&folded, MAX_PROMPT_DESCRIPTION_CHARS);
        out.push_str("- ");
        out.push_str(&skill.name);
        if skill.scope == Scope::Project {
            out.push_str(" (project)");
        }
        out.push_str(": ");
        out.push_str(&short);
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str, scope: Scope, description: &str) -> Skill {
        Skill {
            name: name.into(),
            description: description.into(),
            scope,
            dir: PathBuf::from("/x"),
            digest: String::new(),
            files: Vec::new(),
        }
    }

    #[test]
    fn prompt_lines_are_one_line_each_sanitized_and_capped() {
        let set = SkillSet {
            skills: vec![
                skill("a", Scope::User, "first\nline\u{200b}  two"),
                skill("b", Scope::Project, &"long ".repeat(100)),
            ],
            ..SkillSet::default()
        };
        let text = prompt_lines(&set).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], "- a: first line two");
        assert!(lines[1].starts_with("- b (project): long long"));
        assert!(lines[1].ends_with('…'));
        assert!(lines[1].chars().count() < MAX_PROMPT_DESCRIPTION_CHARS + 20);
        assert_eq!(prompt_lines(&set), prompt_lines(&set.clone()));
        assert_eq!(prompt_lines(&SkillSet::default()), None);
    }
}
