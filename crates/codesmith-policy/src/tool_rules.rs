//! Sub-command tables of package managers, build drivers and container
//! tools. Local builds and tests are `WorkspaceSafe`; fetching, publishing and
//! installing need approval ("may make network requests"); unknown
//! sub-commands need approval too.

use crate::SafetyLevel::{Ask, Safe, WorkspaceSafe};
use crate::net_commands::NETWORK_REASON;
use crate::program_rules::SegmentJudgement;
use crate::shell_parse::Word;

/// First word that is not a flag (or a `+toolchain`), or `""`.
fn subcommand(args: &[Word]) -> &str {
    args.iter()
        .map(|w| w.text.as_str())
        .find(|w| !w.starts_with('-') && !w.starts_with('+'))
        .unwrap_or("")
}

/// Options every tool's read sub-commands understand: help, version, verbosity, colour
/// and machine-readable output.
const READ_OPTIONS: &[&str] = &[
    "--color=",
    "--help",
    "--json",
    "--no-color",
    "--quiet",
    "--verbose",
    "--version",
    "-V",
    "-h",
    "-q",
    "-v",
];

/// The first option of `args` (before `--`) that neither [`READ_OPTIONS`] nor `understood`
/// names (an entry ending in `=` matches `--name=value`).
fn unknown_option<'a>(args: &'a [Word], understood: &[&str]) -> Option<&'a str> {
    args.iter()
        .map(|w| w.text.as_str())
        .take_while(|w| *w != "--")
        .filter(|w| w.starts_with('-') && *w != "-")
        .find(|w| {
            !crate::arity::option_named(w, READ_OPTIONS)
                && !crate::arity::option_named(w, understood)
        })
}

/// The judgement of a tool's sub-command from its tables: `safe` sub-commands read (only
/// with options from [`READ_OPTIONS`] or `understood`: an option the table does not know
/// may write, fetch or run something, so it asks), `local` ones build or edit the
/// project, `network` ones fetch; anything else asks.
fn table(
    args: &[Word],
    safe: &[&str],
    understood: &[&str],
    local: &[&str],
    network: &[&str],
) -> SegmentJudgement {
    let sub = subcommand(args);
    if safe.contains(&sub) {
        match unknown_option(args, understood) {
            Some(option) => SegmentJudgement::owned(
                Ask,
                format!(
                    "`{sub}` with the option `{option}`, which the read-only table does not know \
                     (it may write, fetch or run something)"
                ),
            ),
            None => SegmentJudgement::new(Safe, "reads project information"),
        }
    } else if local.contains(&sub) {
        SegmentJudgement::new(WorkspaceSafe, "builds, tests or edits the project")
    } else if network.contains(&sub) {
        SegmentJudgement::new(Ask, NETWORK_REASON)
    } else {
        SegmentJudgement::new(Ask, "unknown sub-command")
            .unseen(crate::program_rules::UNKNOWN_SUB_COMMAND)
    }
}

/// `cargo SUB`: `build`/`test`/`clippy` are local, `install`/`publish` fetch.
pub(crate) fn cargo_judgement(args: &[Word]) -> SegmentJudgement {
    // Resolving dependencies writes Cargo.lock unless it is held as it is.
    if matches!(subcommand(args), "tree" | "metadata")
        && !args
            .iter()
            .any(|w| w.text == "--locked" || w.text == "--frozen")
    {
        return SegmentJudgement::new(
            WorkspaceSafe,
            "may write Cargo.lock while resolving dependencies (add --locked to only read)",
        );
    }
    table(
        args,
        &[
            "help",
            "locate-project",
            "metadata",
            "pkgid",
            "read-manifest",
            "tree",
            "verify-project",
            "version",
        ],
        &[
            "--all-features",
            "--charset",
            "--charset=",
            "--depth",
            "--depth=",
            "--duplicates",
            "--edges",
            "--edges=",
            "--features",
            "--features=",
            "--format",
            "--format-version",
            "--format-version=",
            "--format=",
            "--frozen",
            "--invert",
            "--invert=",
            "--locked",
            "--no-default-features",
            "--no-deps",
            "--offline",
            "--package",
            "--package=",
            "--prefix",
            "--prefix=",
            "--workspace",
            "-d",
            "-e",
            "-i",
            "-p",
        ],
        &[
            "b", "bench", "build", "c", "check", "clean", "clippy", "d", "doc", "fix", "fmt",
            "init", "new", "nextest", "package", "r", "remove", "rm", "run", "rustc", "rustdoc",
            "t", "test",
        ],
        &[
            "add",
            "fetch",
            "generate-lockfile",
            "install",
            "login",
            "owner",
            "publish",
            "search",
            "uninstall",
            "update",
            "vendor",
            "yank",
        ],
    )
}

/// `npm`, `pnpm`, `yarn`, `bun`: scripts run locally, installs fetch;
/// `config set` and `version` (runs lifecycle scripts, commits, tags) ask.
pub(crate) fn node_pm_judgement(args: &[Word]) -> SegmentJudgement {
    let sub = subcommand(args);
    let rest: Vec<&str> = args
        .iter()
        .map(|w| w.text.as_str())
        .skip_while(|w| *w != sub)
        .skip(1)
        .collect();
    if sub == "config"
        && rest
            .first()
            .is_some_and(|w| !matches!(*w, "get" | "list" | "ls"))
    {
        return SegmentJudgement::new(Ask, "changes package-manager configuration");
    }
    // Registry tokens live in the configuration (`//registry/:_authToken`);
    // printing one (or every value, `config list -l`/`--json`) puts it in
    // the transcript.
    if sub == "config"
        && (rest.iter().skip(1).any(|w| {
            let lower = w.to_ascii_lowercase();
            lower.contains("auth") || crate::is_secret_env_name(w)
        }) || (rest.first().is_some_and(|w| matches!(*w, "list" | "ls"))
            && rest
                .iter()
                .any(|w| matches!(*w, "-l" | "--long" | "--json"))))
    {
        return SegmentJudgement::new(
            Ask,
            "prints package-manager configuration that holds registry tokens",
        );
    }
    if sub == "version" && !rest.is_empty() {
        return SegmentJudgement::new(Ask, "bumps the version (runs scripts, commits and tags)");
    }
    table(
        args,
        &[
            "config", "explain", "help", "list", "ls", "why", "root", "bin", "prefix",
        ],
        &[
            "--all",
            "--depth",
            "--depth=",
            "--dev",
            "--global",
            "--long",
            "--omit=",
            "--parseable",
            "--prod",
            "--production",
            "-a",
            "-g",
            "-l",
            "-p",
        ],
        &[
            "build",
            "dev",
            "format",
            "lint",
            "pack",
            "prune",
            "rebuild",
            "run",
            "run-script",
            "start",
            "t",
            "test",
            "typecheck",
            "version",
        ],
        &[
            "", "add", "audit", "ci", "create", "dedupe", "dlx", "exec", "fetch", "i", "info",
            "init", "install", "login", "outdated", "publish", "search", "up", "update", "upgrade",
            "view", "x", "global",
        ],
    )
}

/// `pip`/`pip3`: queries are safe, installs fetch.
pub(crate) fn pip_judgement(args: &[Word]) -> SegmentJudgement {
    table(
        args,
        &[
            "check", "freeze", "help", "list", "show", "debug", "inspect",
        ],
        &[
            "--editable",
            "--exclude-editable",
            "--files",
            "--format",
            "--format=",
            "--include-editable",
            "--local",
            "--not-required",
            "--user",
            "-e",
            "-f",
            "-l",
        ],
        &[],
        &[
            "download",
            "index",
            "install",
            "search",
            "uninstall",
            "wheel",
        ],
    )
}

/// `uv`, `poetry`, `pipx`, `conda`.
pub(crate) fn python_pm_judgement(program: &str, args: &[Word]) -> SegmentJudgement {
    match program {
        "poetry" => table(
            args,
            &["show", "check", "env", "version", "about"],
            &[],
            &["build"],
            &[
                "add", "install", "lock", "publish", "remove", "search", "update",
            ],
        ),
        "uv" => table(
            args,
            &["help", "version", "tree"],
            &["--frozen", "--locked"],
            &["venv", "build", "format"],
            &[
                "add", "lock", "pip", "publish", "python", "remove", "run", "sync", "tool",
            ],
        ),
        _ => table(
            args,
            &["list", "info", "env"],
            &[],
            &[],
            &[
                "create",
                "install",
                "inject",
                "reinstall",
                "remove",
                "run",
                "update",
                "upgrade",
            ],
        ),
    }
}

/// `go SUB`; `-toolexec`, `-vettool`, `-exec` and `go env -w` ask.
pub(crate) fn go_judgement(args: &[Word]) -> SegmentJudgement {
    if let Some(word) = args.iter().find(|w| {
        [
            "-toolexec",
            "--toolexec",
            "-vettool",
            "--vettool",
            "-exec",
            "--exec",
            "-overlay",
        ]
        .iter()
        .any(|f| w.text == *f || w.text.starts_with(&format!("{f}=")))
    }) {
        return SegmentJudgement::owned(
            Ask,
            format!("go option `{}` runs another program", word.text),
        );
    }
    // `go run pkg@version` (also build, install, test) fetches and builds a
    // module the project does not list.
    if let Some(word) = args
        .iter()
        .skip(1)
        .find(|w| !w.text.starts_with('-') && w.text.contains('@'))
        && matches!(
            subcommand(args),
            "run" | "build" | "test" | "vet" | "generate"
        )
    {
        return SegmentJudgement::owned(
            Ask,
            format!(
                "go {} `{}` fetches and builds a module at a version the project does not list \
                 ({NETWORK_REASON})",
                subcommand(args),
                word.text
            ),
        );
    }
    if subcommand(args) == "env" && args.iter().any(|w| w.text == "-w" || w.text == "-u") {
        return SegmentJudgement::new(Ask, "go env -w changes the Go configuration");
    }
    table(
        args,
        &["doc", "env", "help", "list", "version"],
        &["-deps", "-e", "-f", "-find", "-json", "-m", "-test"],
        &[
            "build", "clean", "fmt", "generate", "run", "test", "vet", "work",
        ],
        &["get", "install", "mod"],
    )
}

/// `docker`/`podman`: inspection is safe, everything that starts, changes or
/// moves containers and images needs approval.
pub(crate) fn container_judgement(args: &[Word]) -> SegmentJudgement {
    let sub = subcommand(args);
    if ["pull", "push", "login", "search"].contains(&sub) {
        return SegmentJudgement::new(Ask, NETWORK_REASON);
    }
    if [
        "diff", "history", "images", "info", "inspect", "logs", "port", "ps", "stats", "top",
        "version",
    ]
    .contains(&sub)
    {
        return SegmentJudgement::new(Safe, "inspects containers or images");
    }
    SegmentJudgement::new(Ask, "starts, changes or removes containers or images")
}

/// `rustup`: `show`/`which` read; the rest downloads toolchains.
pub(crate) fn rustup_judgement(args: &[Word]) -> SegmentJudgement {
    table(
        args,
        &["show", "which", "help", "doc"],
        &[],
        &[],
        &[
            "component",
            "install",
            "self",
            "target",
            "toolchain",
            "update",
            "run",
        ],
    )
}
