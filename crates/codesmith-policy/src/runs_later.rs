//! Files another program runs later: configuration that a common tool reads
//! on its own and that can make it execute a program (`rustc-wrapper` in
//! `.cargo/config.toml`, `script-shell` in `.npmrc`, a direnv `.envrc`, a
//! `.pth` line Python executes at start-up, a VS Code task, a git hook).
//! Writing one is an approval question in every mode short of `auto`, for
//! the file tools and the shell alike; [`runs_later`] is the one judgement.
//!
//! Build files (`Makefile`, `package.json` scripts, `build.rs`) are the
//! project's own code, reviewed like any other edit, and are not listed.
//!
//! Paths are matched per component as a case-insensitive file system would
//! resolve them ([`crate::ws_path::fold_name`]: `.Cargo/CONFIG.toml`,
//! `.envrc.` are the same files), at any depth: cargo reads
//! `.cargo/config.toml` in every ancestor directory, direnv an `.envrc` in
//! any directory one enters. Callers normalise `..` and resolve symlinks
//! first ([`crate::normalize_path_strict`], the file tools' containment).

use crate::ws_path::fold_name;

/// Instruction file names: the files every later coding-agent session of the project
/// reads as instructions it follows (CodeSmith looks for them in this order). Writing one,
/// by a file tool or a shell command, is an approval question short of `auto`.
pub const INSTRUCTION_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// True when the last component of `path` is an instruction file name
/// ([`INSTRUCTION_NAMES`], any case: the file system may not tell them apart).
pub fn is_instruction_file(path: &str) -> bool {
    let name = path
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(path)
        .split('\t')
        .next()
        .unwrap_or("");
    INSTRUCTION_NAMES
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n) || fold_name(name) == fold_name(n))
}

/// A file another program runs later, and who runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunsLater {
    /// The program that reads the file on its own: `cargo`, `rustup`, `npm`,
    /// `git`, `direnv`, `python`, `VS Code`, …
    pub program: &'static str,
    /// When it does, and what it may run: "at the next cargo command
    /// (`rustc-wrapper`, `runner`, `[alias]`)".
    pub when: &'static str,
}

impl RunsLater {
    /// The words every [`RunsLater::reason`] holds, by which a command's reason shows
    /// that it writes such a file.
    pub const MARK: &'static str = " on its own ";

    /// One sentence for an approval reason: "`.cargo/config.toml` is read by
    /// cargo, which runs programs it names at the next cargo command …".
    pub fn reason(&self, path: &str) -> String {
        format!(
            "`{path}` is read by {} on its own {}, outside CodeSmith's sandbox",
            self.program, self.when
        )
    }
}

const CARGO: RunsLater = RunsLater {
    program: "cargo",
    when: "at the next cargo command and may make it run a program (`rustc-wrapper`, `runner`, `linker`, `[alias]`)",
};
const RUSTUP: RunsLater = RunsLater {
    program: "rustup",
    when: "at the next cargo or rustc command and may choose a toolchain from a path (`[toolchain] path`)",
};
const NPM: RunsLater = RunsLater {
    program: "npm",
    when: "at the next npm command and may make it run a program (`script-shell`, `node-options`)",
};
const YARN: RunsLater = RunsLater {
    program: "yarn",
    when: "at the next yarn command and may make it run a program (`yarnPath`, plugins)",
};
const PNPM: RunsLater = RunsLater {
    program: "pnpm",
    when: "and executed as JavaScript at the next pnpm install",
};
const GIT_HOOKS: RunsLater = RunsLater {
    program: "git",
    when: "as a hook at the next commit, checkout or push",
};
const PRE_COMMIT: RunsLater = RunsLater {
    program: "pre-commit",
    when: "and runs the hooks it lists at the next git commit",
};
const DIRENV: RunsLater = RunsLater {
    program: "direnv",
    when: "and executed as a shell script when a shell enters the directory",
};
const VSCODE: RunsLater = RunsLater {
    program: "VS Code",
    when: "when the folder is opened and may run tasks, debuggers or tools it names",
};
const JETBRAINS: RunsLater = RunsLater {
    program: "JetBrains IDEs",
    when: "when the project is opened and may run tools, run configurations or startup tasks",
};
const ACTIONS: RunsLater = RunsLater {
    program: "GitHub Actions",
    when: "and run with the repository's secrets at the next push or pull request",
};
const GITATTRIBUTES: RunsLater = RunsLater {
    program: "git",
    when: "and may make it run filter and diff drivers at the next checkout, add or diff",
};
const GITMODULES: RunsLater = RunsLater {
    program: "git",
    when: "and may make it fetch and run code at the next submodule update",
};
const PYTHON: RunsLater = RunsLater {
    program: "python",
    when: "at every interpreter start-up (a `.pth` line starting with `import` is executed; `sitecustomize.py` is imported)",
};
const DEVCONTAINER: RunsLater = RunsLater {
    program: "Dev Containers",
    when: "when the folder is opened in a container and runs its lifecycle commands",
};
const DEBUGGER: RunsLater = RunsLater {
    program: "a debugger (gdb, lldb, pdb)",
    when: "and executes its commands when the debugger starts in this directory",
};

/// Who runs the file at `path` later on their own, if anyone.
///
/// `path` is workspace-relative (or absolute), `/`-separated, with `.` and
/// `..` already resolved. `hooks_dir` is the directory git's `core.hooksPath`
/// names, relative to the workspace, when the repository sets one: every file
/// below it is a git hook.
pub fn runs_later(path: &str, hooks_dir: Option<&str>) -> Option<RunsLater> {
    let parts: Vec<String> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .map(fold_name)
        .collect();
    let name = parts.last()?.as_str();
    let parent = parts.len().checked_sub(2).map(|i| parts[i].as_str());
    let under = |dir: &str| parts[..parts.len() - 1].iter().any(|p| p == dir);
    if let Some(hooks) = hooks_dir {
        let hooks: Vec<String> = hooks
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(fold_name)
            .collect();
        if !hooks.is_empty() && parts.len() > hooks.len() && parts.starts_with(&hooks) {
            return Some(GIT_HOOKS);
        }
    }
    let found = match name {
        "config" | "config.toml" if parent == Some(".cargo") => CARGO,
        "rust-toolchain" | "rust-toolchain.toml" => RUSTUP,
        ".npmrc" => NPM,
        ".yarnrc" | ".yarnrc.yml" => YARN,
        ".pnpmfile.cjs" | ".pnpmfile.mjs" | ".pnpmfile.js" => PNPM,
        ".pre-commit-config.yaml" | ".pre-commit-config.yml" => PRE_COMMIT,
        ".gitattributes" => GITATTRIBUTES,
        ".gitmodules" => GITMODULES,
        "sitecustomize.py" | "usercustomize.py" => PYTHON,
        ".devcontainer.json" => DEVCONTAINER,
        ".gdbinit" | ".lldbinit" | ".pdbrc" | ".pdbrc.py" => DEBUGGER,
        ".envrc" => DIRENV,
        _ if name.starts_with(".envrc.") => DIRENV,
        _ if name.ends_with(".pth") => PYTHON,
        _ if name.ends_with(".code-workspace") => VSCODE,
        "tasks.json" | "settings.json" | "launch.json" if parent == Some(".vscode") => VSCODE,
        _ if under(".husky") => GIT_HOOKS,
        _ if under(".idea") => JETBRAINS,
        _ if under(".devcontainer") => DEVCONTAINER,
        _ if parts
            .windows(2)
            .take(parts.len().saturating_sub(2))
            .any(|w| w[0] == ".github" && w[1] == "workflows") =>
        {
            ACTIONS
        }
        _ => return None,
    };
    Some(found)
}

/// The directory `core.hooksPath` names in the git configuration `config`
/// (the text of `.git/config`), relative to the work tree as git takes it
/// (a relative value is relative to the work tree's root; `./` and trailing
/// slashes dropped). `None` when it is not set, points outside the work tree
/// (absolute, `~`) or climbs out of it.
pub fn hooks_path(config: &str) -> Option<String> {
    hooks_path_in(config, None)
}

/// [`hooks_path`], where an absolute value inside `work_tree` (absolute,
/// normalised) also counts, given relative to it.
pub fn hooks_path_in(config: &str, work_tree: Option<&str>) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    for line in config.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split([']', ' ', '"']).next().unwrap_or_default();
            in_core = name.eq_ignore_ascii_case("core");
            // `[core] hooksPath = x` on one line.
            let Some(rest) = section.split_once(']').map(|(_, r)| r.trim()) else {
                continue;
            };
            if in_core && let Some(value) = hooks_value(rest) {
                found = Some(value);
            }
            continue;
        }
        if in_core && let Some(value) = hooks_value(line) {
            found = Some(value);
        }
    }
    let value = found?;
    let value = match work_tree {
        Some(root) if value.starts_with('/') => {
            let abs = crate::normalize_path(&value);
            abs.strip_prefix(root)?.strip_prefix('/')?.to_string()
        }
        _ => value,
    };
    if value.starts_with(['/', '~']) {
        return None;
    }
    crate::normalize_path_strict(&value).filter(|v| !v.is_empty())
}

/// The value of a `hooksPath = VALUE` line (key in any case; quotes and a
/// trailing comment removed).
fn hooks_value(line: &str) -> Option<String> {
    let (key, value) = line.split_once('=')?;
    if !key.trim().eq_ignore_ascii_case("hookspath") {
        return None;
    }
    let value = value.trim();
    let value = match value.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or_default(),
        None => value.split(['#', ';']).next().unwrap_or_default().trim(),
    };
    Some(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listed_files_name_their_program() {
        for (path, program) in [
            (".cargo/config.toml", "cargo"),
            ("crates/x/.cargo/config", "cargo"),
            (".Cargo/CONFIG.TOML", "cargo"),
            ("rust-toolchain.toml", "rustup"),
            ("sub/rust-toolchain", "rustup"),
            (".npmrc", "npm"),
            ("web/.yarnrc.yml", "yarn"),
            (".yarnrc", "yarn"),
            (".pnpmfile.cjs", "pnpm"),
            (".husky/pre-commit", "git"),
            (".husky/_/husky.sh", "git"),
            (".pre-commit-config.yaml", "pre-commit"),
            (".envrc", "direnv"),
            ("deep/dir/.envrc.local", "direnv"),
            (".ENVRC.", "direnv"),
            (".vscode/tasks.json", "VS Code"),
            (".vscode/settings.json", "VS Code"),
            (".vscode/launch.json", "VS Code"),
            (".idea/workspace.xml", "JetBrains IDEs"),
            (".github/workflows/ci.yml", "GitHub Actions"),
            (".github/workflows/sub/x.yml", "GitHub Actions"),
            (".gitattributes", "git"),
            ("a/.gitattributes", "git"),
            (".gitmodules", "git"),
            (".venv/lib/python3.12/site-packages/evil.pth", "python"),
            (
                "venv/lib/python3.11/site-packages/sitecustomize.py",
                "python",
            ),
            (".devcontainer/devcontainer.json", "Dev Containers"),
            (".devcontainer.json", "Dev Containers"),
        ] {
            assert_eq!(
                runs_later(path, None).map(|r| r.program),
                Some(program),
                "{path}"
            );
        }
        for path in [
            "Makefile",
            "package.json",
            "build.rs",
            "src/main.rs",
            "cargo/config.toml",
            ".cargo/credentials.toml",
            ".vscode/extensions.json",
            ".github/CODEOWNERS",
            ".github/workflows",
            "docs/husky.md",
            ".environment",
            "envrc",
        ] {
            assert_eq!(runs_later(path, None), None, "{path}");
        }
    }

    #[test]
    fn the_hooks_path_directory_holds_hooks() {
        assert_eq!(
            runs_later("tools/hooks/pre-push", Some("tools/hooks")).map(|r| r.program),
            Some("git")
        );
        assert_eq!(runs_later("tools/hooks", Some("tools/hooks")), None);
        assert_eq!(runs_later("tools/other", Some("tools/hooks")), None);
        let config = "[core]\n\trepositoryformatversion = 0\n\thooksPath = ./tools/hooks/\n[remote \"o\"]\n\turl = x\n";
        assert_eq!(hooks_path(config).as_deref(), Some("tools/hooks"));
        assert_eq!(
            hooks_path("[Core]\nHOOKSPATH = \"g h\"\n").as_deref(),
            Some("g h")
        );
        assert_eq!(hooks_path("[core]\nhooksPath = /abs\n"), None);
        assert_eq!(
            hooks_path_in("[core]\nhooksPath = /ws/h/../hooks\n", Some("/ws")).as_deref(),
            Some("hooks")
        );
        assert_eq!(
            hooks_path_in("[core]\nhooksPath = /wsx/hooks\n", Some("/ws")),
            None
        );
        assert_eq!(hooks_path("[core]\nhooksPath = ../out\n"), None);
        assert_eq!(hooks_path("[alias]\nhooksPath = x\n"), None);
    }
}
