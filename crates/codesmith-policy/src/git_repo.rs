//! The repository a git command will use, and whether its configuration is
//! inert.
//!
//! Git runs programs its repository's configuration names (`core.fsmonitor`,
//! `diff.external`, diff and filter drivers that `.gitattributes` selects,
//! `gpg.program`, `core.sshCommand`, `core.pager`, …), so a git command is let
//! run without approval only when the repository git will find is found here
//! first, as git finds it (the first `.git` directory or gitfile walking up from
//! the working directory), and every key of its configuration is on a short
//! list of keys known to be inert. Anything else asks, naming the key. Include
//! directives (`include.path`, `includeIf.*.path`) are not followed: they ask.
//! (The sandbox separately forbids git from taking a directory that merely
//! looks like a git directory as a bare repository: `safe.bareRepository`.)

use crate::SafetyLevel::Ask;
use crate::program_rules::{PathJudge, SegmentJudgement};
use crate::ws_path::FileProbe;

/// Keys without a subsection, as `section.key` in lower case, known to name no
/// program and no other file.
const INERT: &[&str] = &[
    "core.autocrlf",
    "core.bare",
    "core.filemode",
    "core.ignorecase",
    "core.logallrefupdates",
    "core.precomposeunicode",
    "core.quotepath",
    "core.repositoryformatversion",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.symlinks",
    "extensions.noop",
    "extensions.objectformat",
    "extensions.preciousobjects",
    "extensions.refstorage",
    "extensions.worktreeconfig",
    "fetch.prune",
    "http.extraheader",
    "init.defaultbranch",
    "lfs.repositoryformatversion",
    "pull.ff",
    "pull.rebase",
    "push.autosetupremote",
    "push.default",
    "user.email",
    "user.name",
];

/// Keys of a named subsection (`remote.origin.url`), as `section.key` in lower case.
/// A remote's URL and the headers sent to a URL (`http.<url>.extraheader`, as CI
/// checkouts set it) are only used by commands that reach the network, which ask anyway.
const INERT_NAMED: &[&str] = &[
    "branch.description",
    "branch.merge",
    "branch.rebase",
    "branch.remote",
    "http.extraheader",
    "remote.fetch",
    "remote.pushurl",
    "remote.url",
];

/// The most directories walked up from the working directory.
const MAX_DEPTH: usize = 128;

fn ask(reason: String) -> Option<SegmentJudgement> {
    Some(SegmentJudgement::owned(Ask, reason))
}

fn parent(dir: &str) -> Option<&str> {
    if dir == "/" {
        return None;
    }
    Some(match dir.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &dir[..i],
    })
}

fn join(dir: &str, name: &str) -> String {
    if name.starts_with('/') {
        return crate::path_text::normalize_path(name);
    }
    crate::path_text::normalize_path(&format!("{}/{name}", dir.trim_end_matches('/')))
}

/// `None` when the repository git will use from the command's working directory
/// is found and its configuration holds only inert keys; otherwise the question
/// to ask, naming what was not understood.
pub(crate) fn repository_question(judge: PathJudge<'_>) -> Option<SegmentJudgement> {
    let Some(cwd) = judge.cwd else {
        return ask(
            "git: the working directory is not known, so the repository git uses (whose \
             configuration can name programs git runs) is not checked"
                .to_string(),
        );
    };
    let facts = judge.facts;
    let mut dir = facts.resolve(cwd);
    for _ in 0..MAX_DEPTH {
        let dot_git = join(&dir, ".git");
        let at = facts.resolve(&dot_git);
        match facts.probe(&at) {
            FileProbe::Directory => return git_dir_question(judge, &at),
            FileProbe::Text(text) => {
                let Some(target) = gitfile_target(&text) else {
                    return ask(format!(
                        "git: `{dot_git}` is a file that does not name a git directory the way \
                         git reads it (`gitdir: PATH` and a line end)"
                    ));
                };
                let git_dir = facts.resolve(&join(&dir, target));
                if facts.probe(&git_dir) != FileProbe::Directory {
                    return ask(format!(
                        "git: `{dot_git}` names `{git_dir}`, which is not known to be a directory, \
                         so the repository's configuration is not checked"
                    ));
                }
                return git_dir_question(judge, &git_dir);
            }
            FileProbe::Missing => {}
            FileProbe::Unknown => {
                return ask(format!(
                    "git: `{dot_git}` could not be read, so the repository's configuration is \
                     not checked"
                ));
            }
        }
        // A directory that itself looks like a git directory is taken as a bare
        // repository by a git without `safe.bareRepository=explicit` (the sandbox
        // sets it; a command run elsewhere may not have it): its config is checked too.
        // Git accepts a HEAD that is a symlink into `refs/` (even dangling), and
        // follows a symlinked `objects`: anything there that is not plainly absent
        // (or, for HEAD, a directory) counts.
        if !matches!(
            facts.probe(&join(&dir, "HEAD")),
            FileProbe::Missing | FileProbe::Directory
        ) && matches!(
            facts.probe(&join(&dir, "objects")),
            FileProbe::Directory | FileProbe::Unknown
        ) {
            return git_dir_question(judge, &dir);
        }
        match parent(&dir) {
            Some(up) => dir = up.to_string(),
            None => break,
        }
    }
    ask(format!(
        "git finds no repository from `{cwd}` (outside one it reads files as `--no-index` \
         does, and a directory that looks like a git directory is not one it may use)"
    ))
}

/// The configuration files of `git_dir` (its common directory's `config`, and
/// its own `config.worktree`), each checked.
fn git_dir_question(judge: PathJudge<'_>, git_dir: &str) -> Option<SegmentJudgement> {
    let facts = judge.facts;
    let common = match facts.probe(&join(git_dir, "commondir")) {
        FileProbe::Missing => git_dir.to_string(),
        FileProbe::Text(text) => match line_ends_stripped(&text) {
            Some(path) => facts.resolve(&join(git_dir, path)),
            None => {
                return ask(format!(
                    "git: `{git_dir}/commondir` does not name one directory the way git reads it"
                ));
            }
        },
        _ => {
            return ask(format!(
                "git: `{git_dir}/commondir` could not be read, so the repository's \
                 configuration is not checked"
            ));
        }
    };
    let config = join(&common, "config");
    if facts.probe(&config) == FileProbe::Missing {
        // Every repository git creates has one; a git directory without it is
        // one this judgement cannot vouch for.
        return ask(format!(
            "git: the repository's config `{config}` is missing, so the git directory is not \
             one git made and is not checked"
        ));
    }
    for file in [config, join(git_dir, "config.worktree")] {
        match facts.probe(&file) {
            FileProbe::Missing => {}
            FileProbe::Text(text) => {
                if let Err(why) = inert_config(&text) {
                    return ask(format!("the repository's config (`{file}`) {why}"));
                }
            }
            _ => {
                return ask(format!(
                    "git: the repository's config `{file}` could not be read, so the programs \
                     it may name are not checked"
                ));
            }
        }
    }
    None
}

/// The path a gitfile's `text` names, read as git reads it: the text must start
/// with exactly `gitdir: `, and the path is all the rest with its trailing line
/// ends (`\n`, `\r`) removed. `None` for anything else, and for a path that
/// still holds a line end, a NUL or nothing (git would read it as a different
/// path than this judgement could check).
fn gitfile_target(text: &str) -> Option<&str> {
    line_ends_stripped(text.strip_prefix("gitdir: ")?)
}

/// `text` without its trailing `\n` and `\r` (as git reads `.git` files and
/// `commondir`), when what is left is one non-empty line without NUL.
fn line_ends_stripped(text: &str) -> Option<&str> {
    let path = text.trim_end_matches(['\n', '\r']);
    (!path.is_empty() && !path.contains(['\n', '\r', '\0'])).then_some(path)
}

/// `Ok` when every key `text` (git configuration) sets is inert; otherwise what
/// is not, as the rest of a sentence ("sets core.fsmonitor, …").
pub(crate) fn inert_config(text: &str) -> Result<(), String> {
    for key in config_keys(text)? {
        let (section, rest) = key.split_once('.').unwrap_or((key.as_str(), ""));
        let named = rest.rsplit_once('.');
        let listed = match named {
            Some((_, name)) => INERT_NAMED.contains(&format!("{section}.{name}").as_str()),
            None => INERT.contains(&key.as_str()),
        };
        if listed {
            continue;
        }
        if section == "include" || section == "includeif" {
            return Err(format!(
                "includes more configuration (`{key}`), which is not analysed"
            ));
        }
        return Err(format!(
            "sets `{key}`, which is not known to be inert (git runs programs that keys like \
             core.fsmonitor, diff.external or a diff or filter driver name); approve it, or \
             remove the key"
        ));
    }
    Ok(())
}

/// The keys git configuration `text` sets, as `section.key` or
/// `section.subsection.key` (section and key in lower case, the subsection as
/// written). Values are skipped as git reads them: quotes, escapes, comments and
/// a backslash that continues the value on the next line. A line that is not
/// understood is an error.
pub(crate) fn config_keys(text: &str) -> Result<Vec<String>, String> {
    let mut keys = Vec::new();
    let mut section: Option<String> = None;
    let mut continued = false;
    let mut quoted = false;
    for (number, raw) in text.lines().enumerate() {
        let what = || format!("has a line that is not understood (line {})", number + 1);
        if continued {
            continued = value_continues(raw, &mut quoted).ok_or_else(what)?;
            continue;
        }
        let mut line = raw.trim_start();
        if let Some(header) = line.strip_prefix('[') {
            let close = header_end(header).ok_or_else(what)?;
            section = Some(section_name(&header[..close]).ok_or_else(what)?);
            line = header[close + 1..].trim_start();
        }
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        let name_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(line.len());
        let name = &line[..name_end];
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(what());
        }
        let Some(section) = section.as_deref() else {
            return Err(what());
        };
        let after = line[name_end..].trim_start();
        if let Some(value) = after.strip_prefix('=') {
            quoted = false;
            continued = value_continues(value, &mut quoted).ok_or_else(what)?;
        } else if !(after.is_empty() || after.starts_with(['#', ';'])) {
            return Err(what());
        }
        keys.push(format!("{section}.{}", name.to_ascii_lowercase()));
    }
    if continued {
        return Err("ends inside a value".to_string());
    }
    Ok(keys)
}

/// Where the section header `[…` closes: the first `]` outside quotes.
fn header_end(header: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in header.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ']' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// `core`, `remote "origin"` or the old `remote.origin` as `section` or
/// `section.subsection` (section in lower case).
fn section_name(inside: &str) -> Option<String> {
    let inside = inside.trim();
    let (name, sub) = match inside.split_once(|c: char| c.is_ascii_whitespace()) {
        Some((name, rest)) => {
            let rest = rest.trim();
            let quoted = rest.strip_prefix('"')?.strip_suffix('"')?;
            let mut sub = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => sub.push(chars.next()?),
                    '"' => return None,
                    _ => sub.push(c),
                }
            }
            (name, Some(sub))
        }
        None => match inside.split_once('.') {
            Some((name, sub)) => (name, Some(sub.to_ascii_lowercase())),
            None => (inside, None),
        },
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    {
        return None;
    }
    let name = name.to_ascii_lowercase();
    Some(match sub {
        Some(sub) => format!("{name}.{sub}"),
        None => name,
    })
}

/// Reads (part of) a value as git does, `quoted` carrying an open quote across a
/// continued line: `Some(true)` when a final backslash continues it on the next line,
/// `None` when it is not understood (a quote left open at the end of a line, an
/// escape git rejects).
fn value_continues(value: &str, quoted: &mut bool) -> Option<bool> {
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                None => return Some(true),
                Some('"' | '\\' | 'n' | 't' | 'b') => {}
                Some(_) => return None,
            },
            '"' => *quoted = !*quoted,
            '#' | ';' if !*quoted => return Some(false),
            _ => {}
        }
    }
    (!*quoted).then_some(false)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_as_git_reads_them() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\
                    [remote \"origin\"]\n\turl = https://x/y\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
                    [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n\
                    # [core] fsmonitor = x\n[user]\n\tname = \"A \\\"B\\\"\" ; comment\n\
                    \tEmail = a@b\n[Init]\n\tdefaultBranch = main\n";
        assert_eq!(inert_config(text), Ok(()));
        assert_eq!(
            inert_config("[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: x\n"),
            Ok(())
        );
        assert_eq!(
            config_keys("[core] fsmonitor = x\n").unwrap(),
            vec!["core.fsmonitor"]
        );
        assert_eq!(
            config_keys("[core]\n\tbare = \\\n\tfalse\n[diff]\nexternal\n").unwrap(),
            vec!["core.bare", "diff.external"]
        );
        assert_eq!(
            config_keys("[diff \"x\"]\n\ttextconv = sh\n").unwrap(),
            vec!["diff.x.textconv"]
        );
        assert_eq!(
            config_keys("[remote.Origin]\nurl=x\n").unwrap(),
            vec!["remote.origin.url"]
        );
    }

    #[test]
    fn keys_that_name_programs_or_files_are_named() {
        for (text, key) in [
            (
                "[core]\n\tfsmonitor = \"echo pwned; false\"\n",
                "core.fsmonitor",
            ),
            ("[core]\n\tbare = false\n\tworktree = ..\n", "core.worktree"),
            ("[diff]\n\texternal = ./x\n", "diff.external"),
            ("[diff \"x\"]\n\ttextconv = ./x\n", "diff.x.textconv"),
            ("[filter \"f\"]\n\tsmudge = ./x\n", "filter.f.smudge"),
            ("[gpg]\n\tprogram = ./x\n", "gpg.program"),
            ("[core]\n\tsshCommand = ./x\n", "core.sshcommand"),
            ("[core]\n\tpager = ./x\n", "core.pager"),
            ("[core]\n\thooksPath = x\n", "core.hookspath"),
            (
                "[remote \"o\"]\n\tuploadpack = ./x\n",
                "remote.o.uploadpack",
            ),
            ("[include]\n\tpath = x\n", "include.path"),
            (
                "[includeIf \"gitdir:/\"]\n\tpath = x\n",
                "includeif.gitdir:/.path",
            ),
            // A key hidden on the line of a value's continuation is still a value.
            (
                "[user]\n\tname = a \\\n[core] fsmonitor = x\n",
                "must-not-appear",
            ),
        ] {
            match inert_config(text) {
                Err(why) => assert!(why.contains(key), "{text:?}: {why}"),
                Ok(()) => assert_eq!(key, "must-not-appear", "{text:?}"),
            }
        }
    }

    #[test]
    fn gitfiles_are_read_byte_for_byte_as_git_reads_them() {
        assert_eq!(gitfile_target("gitdir: ../x\n"), Some("../x"));
        assert_eq!(gitfile_target("gitdir: /a b\r\n"), Some("/a b"));
        assert_eq!(gitfile_target("gitdir:  g\n"), Some(" g"));
        for text in [
            "gitdir:g\n",
            "gitdir: ok\nevil\n",
            "gitdir: \n",
            " gitdir: x",
            "GITDIR: x",
        ] {
            assert_eq!(gitfile_target(text), None, "{text:?}");
        }
        assert_eq!(line_ends_stripped(" ../x\n"), Some(" ../x"));
    }

    #[test]
    fn what_is_not_understood_is_an_error() {
        for text in [
            "fsmonitor = x\n",
            "[core\n",
            "[core]\n\tbare = \"false\n",
            "[core]\n\tbare = fa\\lse\n",
            "[core]\n\t%x = 1\n",
            "[core]\n\tbare = false \\\n",
            "[core \"x]\n",
        ] {
            assert!(inert_config(text).is_err(), "{text:?}");
        }
    }
}
