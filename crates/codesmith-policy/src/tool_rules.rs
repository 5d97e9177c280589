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

fn table(sub: &str, safe: &[&str], local: &[&str], network: &[&str]) -> SegmentJudgement {
    if safe.contains(&sub) {
        SegmentJudgement::new(Safe, "reads project information")
    } else if local.contains(&sub) {
        SegmentJudgement::new(WorkspaceSafe, "builds, tests or edits the project")
    } else if network.contains(&sub) {
        SegmentJudgement::new(Ask, NETWORK_REASON)
    } else {
        SegmentJudgement::new(Ask, "unknown sub-command")
    }
}

/// `cargo SUB`: `build`/`test`/`clippy` are local, `install`/`publish` fetch.
pub(crate) fn cargo_judgement(args: &[Word]) -> SegmentJudgement {
    table(
        subcommand(args),
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
        subcommand(args),
        &[
            "config", "explain", "help", "list", "ls", "why", "root", "bin", "prefix",
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
        subcommand(args),
        &[
            "check", "freeze", "help", "list", "show", "debug", "inspect",
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
    let sub = subcommand(args);
    match program {
        "poetry" => table(
            sub,
            &["show", "check", "env", "version", "about"],
            &["build"],
            &[
                "add", "install", "lock", "publish", "remove", "search", "update",
            ],
        ),
        "uv" => table(
            sub,
            &["help", "version", "tree"],
            &["venv", "build", "format"],
            &[
                "add", "lock", "pip", "publish", "python", "remove", "run", "sync", "tool",
            ],
        ),
        _ => table(
            sub,
            &["list", "info", "env"],
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
        subcommand(args),
        &["doc", "env", "help", "list", "version"],
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
        subcommand(args),
        &["show", "which", "help", "doc"],
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
