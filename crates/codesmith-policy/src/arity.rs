//! The arity dictionary: each command's canonical prefix.
//!
//! Flags never count toward a prefix; positional sub-commands do, up to the
//! arity recorded for the longest matching dictionary key. So `git status -s`
//! and `git -C repo status --porcelain` both have the prefix `git status`,
//! while `git push` is a different prefix (an allowance for `git status` must
//! match `git status -s` but never `git push`). Approval fingerprints and
//! exec-policy explanations use this prefix.

/// Longest dictionary key, in words, that is looked up.
const MAX_KEY_WORDS: usize = 3;

/// The canonical prefix of one simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalPrefix {
    /// The prefix, words joined by single spaces (for example `git status`).
    /// For a command missing from the dictionary this is the whole command.
    pub text: String,
    /// True when the program is in the arity dictionary.
    pub known: bool,
}

/// Returns the canonical prefix of `argv` (program first, wrappers already
/// removed). An empty `argv` yields an empty, unknown prefix.
///
/// Commands missing from the dictionary keep every word, so an approval for
/// `./deploy.sh staging` never covers `./deploy.sh production`.
pub fn canonical_prefix<S: AsRef<str>>(argv: &[S]) -> CanonicalPrefix {
    let Some(program) = argv.first().map(AsRef::as_ref) else {
        return CanonicalPrefix {
            text: String::new(),
            known: false,
        };
    };
    let program = program_key(program);
    let positionals = positionals(&program, argv);
    for take in (1..=positionals.len().min(MAX_KEY_WORDS)).rev() {
        let key = positionals[..take].join(" ");
        if let Some(arity) = arity_of(&key) {
            return CanonicalPrefix {
                text: positionals[..arity.min(positionals.len())].join(" "),
                known: true,
            };
        }
    }
    let mut words = vec![program];
    words.extend(argv.iter().skip(1).map(|w| w.as_ref().to_string()));
    CanonicalPrefix {
        text: words.join(" "),
        known: false,
    }
}

/// The flags of `argv` that make a command more dangerous than its prefix
/// says, in a fixed spelling: `rm` → `-r`, `-f`; `git push` → `--force`,
/// `--force-with-lease`, `--mirror`, `--delete`; `curl` / `wget` → `--upload`
/// (`-d @file`, `--data-binary @…`, `-T`, `-F`, `--post-file`). Approval
/// fingerprints carry them, so a grant for `rm` never covers `rm -rf` and
/// one for `git push` never covers `git push --force`.
pub fn widening_flags<S: AsRef<str>>(argv: &[S]) -> Vec<&'static str> {
    let words: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
    let mut out: Vec<&'static str> = Vec::new();
    let mut add = |flag: &'static str| {
        if !out.contains(&flag) {
            out.push(flag);
        }
    };
    let short = |w: &str, c: char| w.starts_with('-') && !w.starts_with("--") && w.contains(c);
    match words.first().copied() {
        Some("rm") => {
            for w in &words[1..] {
                if *w == "--recursive" || short(w, 'r') || short(w, 'R') {
                    add("-r");
                }
                if *w == "--force" || short(w, 'f') {
                    add("-f");
                }
            }
        }
        Some("git") if words.contains(&"push") => {
            for w in &words[1..] {
                if w.starts_with("--force-with-lease") {
                    add("--force-with-lease");
                } else if *w == "--force"
                    || *w == "-f"
                    || w.starts_with("--force-if-includes")
                    || (w.starts_with('+') && w.len() > 1)
                {
                    add("--force");
                } else if *w == "--mirror" {
                    add("--mirror");
                } else if *w == "--delete" || *w == "-d" || (w.starts_with(':') && w.len() > 1) {
                    add("--delete");
                } else if short(w, 'f') {
                    add("--force");
                }
            }
        }
        Some("curl" | "wget" | "http" | "xh") => {
            for w in &words[1..] {
                let upload = matches!(
                    *w,
                    "-T" | "--upload-file"
                        | "-F"
                        | "--form"
                        | "--form-string"
                        | "--post-file"
                        | "--body-file"
                ) || w.starts_with("--upload-file=")
                    || w.starts_with("--form=")
                    || w.starts_with("--post-file=")
                    || w.starts_with("-T")
                    || w.starts_with("-F");
                let data = matches!(
                    *w,
                    "-d" | "--data"
                        | "--data-binary"
                        | "--data-raw"
                        | "--data-urlencode"
                        | "--json"
                ) || w.starts_with("--data")
                    || w.starts_with("-d");
                if upload || data {
                    add("--upload");
                }
            }
        }
        _ => {}
    }
    out
}

/// The options a grant for a canonical prefix understands, by prefix: `(prefix, short
/// option letters, whole words)`. A whole word that ends with `=` also matches its
/// `--name=value` form. An option here either changes nothing about what the command may
/// do (`cargo build --release`), or is a widening flag the key carries ([`widening_flags`]).
/// Sorted by prefix.
const KEY_OPTIONS: &[(&str, &str, &[&str])] = &[
    ("cargo bench", "qvp", CARGO_BUILD_OPTIONS),
    ("cargo build", "qvp", CARGO_BUILD_OPTIONS),
    ("cargo check", "qvp", CARGO_BUILD_OPTIONS),
    ("cargo clippy", "qvp", CARGO_BUILD_OPTIONS),
    ("cargo doc", "qvp", CARGO_BUILD_OPTIONS),
    (
        "cargo fmt",
        "qv",
        &["--all", "--check", "--quiet", "--verbose"],
    ),
    ("cargo run", "qvp", CARGO_BUILD_OPTIONS),
    ("cargo test", "qvp", CARGO_BUILD_OPTIONS),
    (
        "git push",
        "fdu",
        &[
            "--delete",
            "--dry-run",
            "--force",
            "--force-if-includes",
            "--force-with-lease",
            "--force-with-lease=",
            "--mirror",
            "--set-upstream",
            "--tags",
        ],
    ),
    ("go build", "", &["-race", "-v"]),
    (
        "go test",
        "",
        &[
            "-count", "-count=", "-race", "-run", "-run=", "-short", "-v",
        ],
    ),
    ("go vet", "", &["-v"]),
    ("npm ci", "", &["--no-audit", "--no-fund", "--silent"]),
    (
        "npm install",
        "D",
        &[
            "--no-audit",
            "--no-fund",
            "--save",
            "--save-dev",
            "--silent",
        ],
    ),
    ("npm run", "s", &["--silent"]),
    ("npm test", "s", &["--silent"]),
    ("pytest", "qvx", &["--quiet", "--verbose"]),
    ("rm", "rRfv", &["--force", "--recursive", "--verbose"]),
];

/// The `cargo` build commands' options that change nothing but which targets, features
/// and output verbosity.
const CARGO_BUILD_OPTIONS: &[&str] = &[
    "--all",
    "--all-features",
    "--all-targets",
    "--benches",
    "--bins",
    "--doc",
    "--examples",
    "--features",
    "--features=",
    "--frozen",
    "--lib",
    "--locked",
    "--no-default-features",
    "--no-fail-fast",
    "--offline",
    "--package",
    "--package=",
    "--quiet",
    "--release",
    "--tests",
    "--verbose",
    "--workspace",
];

/// True when the option `word` is one `table` names: an entry ending in `=` names the
/// `--name=value` form, any other entry the exact word.
pub(crate) fn option_named(word: &str, table: &[&str]) -> bool {
    table.iter().any(|o| match o.strip_suffix('=') {
        Some(name) => word.strip_prefix(name).is_some_and(|v| v.starts_with('=')),
        None => *o == word,
    })
}

/// True when every option of `argv` (program first, wrappers removed) is one a grant for
/// `prefix` understands ([`KEY_OPTIONS`]). Words after `--` are operands. A command with
/// an option the table does not name (`npm test --script-shell=x`, `git -c k=v push`,
/// `cargo --config … build`) cannot be covered by a prefix grant: it gets an exact one.
pub(crate) fn key_understands<S: AsRef<str>>(prefix: &str, argv: &[S]) -> bool {
    let (short, words): (&str, &[&str]) = KEY_OPTIONS
        .binary_search_by(|(p, _, _)| p.cmp(&prefix))
        .map(|i| (KEY_OPTIONS[i].1, KEY_OPTIONS[i].2))
        .unwrap_or(("", &[]));
    for word in argv.iter().skip(1).map(AsRef::as_ref) {
        if word == "--" {
            return true;
        }
        if !word.starts_with('-') || word == "-" {
            continue;
        }
        let whole = option_named(word, words);
        let letters = word
            .strip_prefix('-')
            .filter(|l| !l.starts_with('-') && !l.is_empty())
            .is_some_and(|l| l.chars().all(|c| short.contains(c)));
        if !whole && !letters {
            return false;
        }
    }
    true
}

/// The arity recorded for a dictionary key such as `git` or `npm run`.
pub fn arity_of(key: &str) -> Option<usize> {
    ARITY
        .binary_search_by(|(k, _)| k.cmp(&key))
        .ok()
        .map(|i| ARITY[i].1)
}

/// Number of entries in the arity dictionary.
pub fn arity_entries() -> usize {
    ARITY.len()
}

/// Maps versioned interpreter names onto their dictionary key
/// (`python3.12` → `python3`).
fn program_key(program: &str) -> String {
    if let Some(rest) = program.strip_prefix("python3.")
        && rest.chars().all(|c| c.is_ascii_digit())
    {
        return "python3".to_string();
    }
    program.to_string()
}

/// Program followed by the positional words, with flags and their values
/// removed. `-m MODULE` of python counts as positional.
fn positionals<S: AsRef<str>>(program: &str, argv: &[S]) -> Vec<String> {
    let mut out = vec![program.to_string()];
    let value_flags = value_flags(program);
    let mut iter = argv.iter().skip(1).map(AsRef::as_ref);
    while let Some(word) = iter.next() {
        if out.len() > MAX_KEY_WORDS {
            break;
        }
        if word == "--" {
            continue;
        }
        if program.starts_with("python") && word == "-m" {
            out.push(word.to_string());
            if let Some(module) = iter.next() {
                out.push(module.to_string());
            }
            continue;
        }
        if word.starts_with('-') && word.len() > 1 {
            if !word.contains('=') && value_flags.contains(&word) {
                iter.next();
            }
            continue;
        }
        if word.starts_with('+') && matches!(program, "cargo" | "rustup" | "rustc") {
            continue;
        }
        out.push(word.to_string());
    }
    out
}

/// Global flags that consume the next word, per program.
fn value_flags(program: &str) -> &'static [&'static str] {
    match program {
        "git" => &["-C", "-c", "--git-dir", "--work-tree", "--namespace"],
        "kubectl" => &[
            "-n",
            "--namespace",
            "--context",
            "--cluster",
            "--kubeconfig",
            "-s",
            "--server",
            "--user",
            "-l",
            "--selector",
            "-o",
            "--output",
        ],
        "docker" | "podman" => &[
            "-H",
            "--host",
            "--context",
            "-c",
            "--config",
            "-l",
            "--log-level",
        ],
        "make" => &["-C", "-f", "-o", "-W", "--directory", "--file", "-I"],
        "cargo" => &["--config", "-Z", "-C", "--manifest-path"],
        "npm" | "pnpm" | "yarn" | "bun" => {
            &["--prefix", "-C", "--filter", "-w", "--workspace", "--cwd"]
        }
        "helm" => &["-n", "--namespace", "--kube-context"],
        "go" => &["-C"],
        "gh" => &["-R", "--repo"],
        "uv" => &["--directory", "--project", "-p", "--python"],
        "aws" => &["--profile", "--region", "--output"],
        _ => &[],
    }
}

/// Dictionary keys (sorted, for binary search) and their arity in words.
const ARITY: &[(&str, usize)] = &[
    ("ag", 1),
    ("alias", 1),
    ("apt", 2),
    ("apt-get", 2),
    ("aria2c", 1),
    ("awk", 1),
    ("aws", 2),
    ("aws s3", 3),
    ("az", 2),
    ("base64", 1),
    ("basename", 1),
    ("bash", 1),
    ("black", 1),
    ("brew", 2),
    ("builtin", 1),
    ("bun", 2),
    ("bun run", 3),
    ("bundle", 2),
    ("bzip2", 1),
    ("cargo", 2),
    ("cat", 1),
    ("cc", 1),
    ("cd", 1),
    ("chgrp", 1),
    ("chmod", 1),
    ("chown", 1),
    ("chroot", 1),
    ("clang", 1),
    ("clang++", 1),
    ("cmake", 1),
    ("cmp", 1),
    ("code", 1),
    ("column", 1),
    ("comm", 1),
    ("command", 1),
    ("composer", 2),
    ("conda", 2),
    ("conda env", 3),
    ("cp", 1),
    ("crontab", 1),
    ("csplit", 1),
    ("curl", 1),
    ("cut", 1),
    ("dash", 1),
    ("date", 1),
    ("dd", 1),
    ("deno", 1),
    ("df", 1),
    ("diff", 1),
    ("dig", 1),
    ("dirname", 1),
    ("dnf", 2),
    ("docker", 2),
    ("docker buildx", 3),
    ("docker compose", 3),
    ("docker container", 3),
    ("docker image", 3),
    ("docker network", 3),
    ("docker system", 3),
    ("docker volume", 3),
    ("dos2unix", 1),
    ("dotnet", 2),
    ("du", 1),
    ("echo", 1),
    ("egrep", 1),
    ("emacs", 1),
    ("env", 1),
    ("eslint", 1),
    ("eval", 1),
    ("exec", 1),
    ("expand", 1),
    ("export", 1),
    ("false", 1),
    ("fd", 1),
    ("fgrep", 1),
    ("file", 1),
    ("find", 1),
    ("fish", 1),
    ("fmt", 1),
    ("fold", 1),
    ("free", 1),
    ("ftp", 1),
    ("g++", 1),
    ("gawk", 1),
    ("gcc", 1),
    ("gcloud", 2),
    ("gcloud compute", 4),
    ("gem", 2),
    ("gh", 2),
    ("gh issue", 3),
    ("gh pr", 3),
    ("gh release", 3),
    ("gh repo", 3),
    ("gh run", 3),
    ("git", 2),
    ("git bisect", 3),
    ("git config", 3),
    ("git lfs", 3),
    ("git notes", 3),
    ("git remote", 3),
    ("git stash", 3),
    ("git submodule", 3),
    ("git worktree", 3),
    ("go", 2),
    ("go mod", 3),
    ("go tool", 3),
    ("gofmt", 1),
    ("gpg", 1),
    ("gradle", 2),
    ("grep", 1),
    ("gunzip", 1),
    ("gzip", 1),
    ("hadolint", 1),
    ("head", 1),
    ("helm", 2),
    ("helm repo", 3),
    ("hexdump", 1),
    ("history", 1),
    ("host", 1),
    ("hostname", 1),
    ("htop", 1),
    ("http", 1),
    ("iconv", 1),
    ("id", 1),
    ("info", 1),
    ("java", 1),
    ("javac", 1),
    ("jest", 1),
    ("join", 1),
    ("journalctl", 1),
    ("jq", 1),
    ("just", 2),
    ("kill", 1),
    ("killall", 1),
    ("ksh", 1),
    ("kubectl", 2),
    ("kubectl auth", 3),
    ("kubectl config", 3),
    ("kubectl rollout", 3),
    ("less", 1),
    ("lftp", 1),
    ("ln", 1),
    ("ls", 1),
    ("lsof", 1),
    ("lua", 1),
    ("make", 1),
    ("man", 1),
    ("md5sum", 1),
    ("mkdir", 1),
    ("mkfs", 1),
    ("mocha", 1),
    ("more", 1),
    ("mount", 1),
    ("mv", 1),
    ("mvn", 2),
    ("mypy", 1),
    ("nano", 1),
    ("nc", 1),
    ("ncat", 1),
    ("netcat", 1),
    ("nice", 1),
    ("ninja", 1),
    ("nl", 1),
    ("nmap", 1),
    ("node", 1),
    ("nohup", 1),
    ("nox", 2),
    ("npm", 2),
    ("npm exec", 3),
    ("npm run", 3),
    ("npx", 2),
    ("nslookup", 1),
    ("nvm", 2),
    ("od", 1),
    ("open", 1),
    ("openssl", 1),
    ("paste", 1),
    ("patch", 1),
    ("perl", 1),
    ("php", 1),
    ("ping", 1),
    ("pip", 2),
    ("pip3", 2),
    ("pipx", 2),
    ("pipx run", 3),
    ("pkill", 1),
    ("pnpm", 2),
    ("pnpm run", 3),
    ("podman", 2),
    ("podman compose", 3),
    ("poetry", 2),
    ("poetry env", 3),
    ("poetry run", 3),
    ("pre-commit", 2),
    ("prettier", 1),
    ("printenv", 1),
    ("printf", 1),
    ("ps", 1),
    ("pwd", 1),
    ("pytest", 1),
    ("python", 1),
    ("python -m", 3),
    ("python3", 1),
    ("python3 -m", 3),
    ("readlink", 1),
    ("realpath", 1),
    ("reboot", 1),
    ("rev", 1),
    ("rg", 1),
    ("rm", 1),
    ("rmdir", 1),
    ("rsync", 1),
    ("ruby", 1),
    ("ruff", 1),
    ("rustc", 1),
    ("rustfmt", 1),
    ("rustup", 2),
    ("rustup component", 3),
    ("rustup target", 3),
    ("rustup toolchain", 3),
    ("scp", 1),
    ("sed", 1),
    ("seq", 1),
    ("service", 1),
    ("set", 1),
    ("sftp", 1),
    ("sh", 1),
    ("sha256sum", 1),
    ("shasum", 1),
    ("shellcheck", 1),
    ("shfmt", 1),
    ("shutdown", 1),
    ("sleep", 1),
    ("socat", 1),
    ("sort", 1),
    ("source", 1),
    ("split", 1),
    ("ssh", 1),
    ("stat", 1),
    ("strings", 1),
    ("sudo", 1),
    ("swift", 2),
    ("systemctl", 2),
    ("tac", 1),
    ("tail", 1),
    ("tar", 1),
    ("task", 2),
    ("tee", 1),
    ("telnet", 1),
    ("terraform", 2),
    ("terraform state", 3),
    ("terraform workspace", 3),
    ("test", 1),
    ("time", 1),
    ("timeout", 1),
    ("tldr", 1),
    ("top", 1),
    ("touch", 1),
    ("tox", 2),
    ("tr", 1),
    ("traceroute", 1),
    ("tree", 1),
    ("true", 1),
    ("truncate", 1),
    ("tsc", 1),
    ("type", 1),
    ("umount", 1),
    ("uname", 1),
    ("unexpand", 1),
    ("uniq", 1),
    ("unset", 1),
    ("unzip", 1),
    ("uptime", 1),
    ("uv", 2),
    ("uv pip", 3),
    ("uv python", 3),
    ("uv tool", 3),
    ("vim", 1),
    ("vitest", 1),
    ("watch", 1),
    ("wc", 1),
    ("wget", 1),
    ("whereis", 1),
    ("which", 1),
    ("whoami", 1),
    ("whois", 1),
    ("xargs", 1),
    ("xdg-open", 1),
    ("xxd", 1),
    ("xz", 1),
    ("yarn", 2),
    ("yarn run", 3),
    ("yq", 1),
    ("yum", 2),
    ("zip", 1),
    ("zsh", 1),
    ("zstd", 1),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(command: &str) -> String {
        let argv: Vec<&str> = command.split_whitespace().collect();
        canonical_prefix(&argv).text
    }

    #[test]
    fn key_options_are_sorted() {
        assert!(KEY_OPTIONS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn dictionary_is_sorted_and_large_enough() {
        assert!(
            ARITY.windows(2).all(|w| w[0].0 < w[1].0),
            "ARITY must stay sorted"
        );
        assert!(arity_entries() >= 150);
    }

    #[test]
    fn flags_do_not_count_but_subcommands_do() {
        assert_eq!(prefix("git status -s"), "git status");
        assert_eq!(prefix("git status --porcelain"), "git status");
        assert_eq!(prefix("git -C repo status"), "git status");
        assert_eq!(prefix("git push --force origin main"), "git push");
        assert_eq!(prefix("git remote add origin url"), "git remote add");
        assert_eq!(prefix("cargo +nightly build --release"), "cargo build");
        assert_eq!(prefix("npm run build -- --watch"), "npm run build");
        assert_eq!(prefix("npm install lodash"), "npm install");
        assert_eq!(prefix("docker compose up -d"), "docker compose up");
        assert_eq!(prefix("kubectl -n prod get pods"), "kubectl get");
        assert_eq!(prefix("python -m pytest -q tests"), "python -m pytest");
        assert_eq!(prefix("python3.12 -m venv .venv"), "python3 -m venv");
        assert_eq!(prefix("ls -la src"), "ls");
        assert_eq!(prefix("grep -rn foo ."), "grep");
        assert_eq!(prefix("make -C sub test"), "make");
    }

    #[test]
    fn unknown_commands_keep_every_word() {
        let p = canonical_prefix(&["./deploy.sh", "staging"]);
        assert_eq!(p.text, "./deploy.sh staging");
        assert!(!p.known);
        assert!(canonical_prefix::<&str>(&[]).text.is_empty());
    }
}
