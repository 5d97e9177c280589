//! Which shell commands reach the network.
//!
//! Two tables: programs that exist to talk to
//! the network (`curl`, `ssh`, `nmap`, …), and sub-commands of build and
//! package tools that fetch or publish (`git push`, `cargo install`,
//! `npm install`, `pip install`). Local sub-commands of the same tools
//! (`git commit`, `cargo build`, `npm run`) are not listed.

/// Reason attached to a command that needs the network.
pub const NETWORK_REASON: &str = "may make network requests";

/// Programs whose purpose is network access (sorted).
pub const NETWORK_COMMANDS: &[&str] = &[
    "aria2c",
    "curl",
    "dig",
    "ftp",
    "host",
    "http",
    "https",
    "lftp",
    "mosh",
    "nc",
    "ncat",
    "netcat",
    "nmap",
    "nslookup",
    "ping",
    "rsync",
    "scp",
    "sftp",
    "smbclient",
    "socat",
    "ssh",
    "telnet",
    "tftp",
    "traceroute",
    "wget",
    "whois",
];

/// `(program, sub-command)` pairs that need the network; `*` means every
/// sub-command of that program (sorted by program).
const NETWORK_SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "apt",
        &[
            "install",
            "update",
            "upgrade",
            "full-upgrade",
            "dist-upgrade",
            "download",
        ],
    ),
    (
        "apt-get",
        &[
            "install",
            "update",
            "upgrade",
            "dist-upgrade",
            "download",
            "source",
        ],
    ),
    ("aws", &["*"]),
    ("az", &["*"]),
    (
        "brew",
        &["install", "update", "upgrade", "fetch", "reinstall", "tap"],
    ),
    (
        "bun",
        &[
            "install", "i", "add", "update", "upgrade", "x", "create", "publish",
        ],
    ),
    ("bundle", &["install", "update", "add"]),
    (
        "cargo",
        &[
            "install", "fetch", "update", "publish", "search", "login", "yank", "add", "owner",
            "vendor",
        ],
    ),
    (
        "composer",
        &["install", "update", "require", "create-project"],
    ),
    ("conda", &["install", "update", "create", "search"]),
    ("deno", &["install", "upgrade"]),
    ("dnf", &["install", "update", "upgrade", "download"]),
    ("docker", &["pull", "push", "login", "search"]),
    ("gcloud", &["*"]),
    ("gem", &["install", "update", "push", "fetch"]),
    ("gh", &["*"]),
    (
        "git",
        &[
            "fetch",
            "pull",
            "push",
            "clone",
            "ls-remote",
            "submodule",
            "archive",
            "send-email",
            "request-pull",
        ],
    ),
    ("go", &["get", "install", "mod"]),
    (
        "helm",
        &[
            "install",
            "upgrade",
            "pull",
            "push",
            "repo",
            "dependency",
            "search",
        ],
    ),
    ("kubectl", &["*"]),
    (
        "npm",
        &[
            "install", "i", "ci", "add", "update", "upgrade", "publish", "audit", "outdated",
            "view", "info", "exec", "create", "init", "login", "search", "dedupe",
        ],
    ),
    ("npx", &["*"]),
    ("pip", &["install", "download", "search", "index"]),
    ("pip3", &["install", "download", "search", "index"]),
    (
        "pipx",
        &["install", "run", "upgrade", "reinstall", "inject"],
    ),
    (
        "pnpm",
        &[
            "install", "i", "add", "update", "up", "publish", "audit", "outdated", "dlx", "create",
            "fetch",
        ],
    ),
    ("podman", &["pull", "push", "login", "search"]),
    (
        "poetry",
        &["install", "add", "update", "lock", "publish", "search"],
    ),
    (
        "rustup",
        &[
            "install",
            "update",
            "toolchain",
            "target",
            "component",
            "self",
        ],
    ),
    (
        "terraform",
        &["init", "plan", "apply", "destroy", "import", "refresh"],
    ),
    (
        "uv",
        &[
            "sync", "add", "lock", "pip", "tool", "python", "publish", "run",
        ],
    ),
    (
        "yarn",
        &[
            "", "install", "add", "upgrade", "up", "publish", "dlx", "create", "info", "audit",
            "outdated",
        ],
    ),
    ("yum", &["install", "update", "upgrade", "download"]),
];

/// True when the simple command `argv` (program first, wrappers removed)
/// needs the network: a program from [`NETWORK_COMMANDS`], or a sub-command
/// that fetches or publishes (`git fetch|pull|push|clone`, `cargo install`,
/// `npm install`, `pip install`, `docker pull`, …). `git commit`,
/// `cargo build`, `npm run` and `pip list` do not.
///
/// The sub-command is the first word after the program that is not a flag;
/// `python -m pip install` is treated as `pip install`.
pub fn needs_network<S: AsRef<str>>(argv: &[S]) -> bool {
    let words: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
    let Some(program) = words.first().map(|p| p.rsplit('/').next().unwrap_or(p)) else {
        return false;
    };
    if NETWORK_COMMANDS.binary_search(&program).is_ok() {
        return true;
    }
    if program.starts_with("python") {
        if let Some(i) = words.iter().position(|w| *w == "-m")
            && words.get(i + 1) == Some(&"pip")
        {
            return needs_network(&words[i + 1..]);
        }
        return false;
    }
    // `pip list --outdated` (and its index options) asks the package index.
    if matches!(program, "pip" | "pip3")
        && words.iter().skip(1).any(|w| {
            matches!(*w, "-o" | "--outdated" | "-u" | "--uptodate" | "-i" | "-f")
                || ["--index-url", "--extra-index-url", "--find-links"]
                    .iter()
                    .any(|o| w.starts_with(o))
        })
    {
        return true;
    }
    // `git remote show NAME` (without `-n`), `update` and `prune` ask the remote.
    if program == "git"
        && let Some(at) = words.iter().skip(1).position(|w| !w.starts_with('-'))
        && words[at + 1] == "remote"
    {
        let after = &words[at + 2..];
        let mut operands = after.iter().filter(|w| !w.starts_with('-'));
        return match operands.next().copied() {
            Some("update" | "prune") => true,
            Some("show") => operands.next().is_some() && !after.contains(&"-n"),
            _ => false,
        };
    }
    let Ok(index) = NETWORK_SUBCOMMANDS.binary_search_by(|(p, _)| p.cmp(&program)) else {
        return false;
    };
    let subcommands = NETWORK_SUBCOMMANDS[index].1;
    let sub = words
        .iter()
        .skip(1)
        .find(|w| !w.starts_with('-') && !w.starts_with('+'))
        .copied()
        .unwrap_or("");
    subcommands.iter().any(|s| *s == "*" || *s == sub)
}

/// The URL hosts and ports an HTTP client command contacts, which is what an "always"
/// grant for it may be scoped to: `curl -sS https://api.example.com/v1` →
/// `["api.example.com:443"]`.
///
/// Built from what is understood, never from what is feared: `Some` only when the program
/// is `curl` and every argument after it is either an `http://`/`https://` URL whose host
/// is plain (no user part, no IPv6 literal) or a flag that takes no value and only changes
/// how the answer is shown (`-f -s -S -I -i -v` and their long forms); and at least one
/// URL is named. Anything else (following redirects with `-L`, which contacts hosts the
/// command does not name; an output file, a header, a proxy, a config or input file that
/// may name more URLs, data to send; `wget`, which follows redirects by default) is `None`:
/// such a command can be approved once or for the session, not for ever. Each entry is
/// `host:port` (the scheme's port when none is written), the host lower-cased without a
/// trailing dot; sorted and deduplicated.
pub fn fetch_hosts<S: AsRef<str>>(argv: &[S]) -> Option<Vec<String>> {
    let words: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
    let program = words.first().map(|p| p.rsplit('/').next().unwrap_or(p))?;
    let (short, long): (&str, &[&str]) = match program {
        "curl" => (
            "fsSIiv",
            &[
                "--compressed",
                "--fail",
                "--head",
                "--include",
                "--show-error",
                "--silent",
                "--verbose",
            ],
        ),
        _ => return None,
    };
    let mut hosts = Vec::new();
    for word in &words[1..] {
        if let Some(host) = url_host_port(word) {
            hosts.push(host);
        } else if long.contains(word) {
            continue;
        } else if let Some(letters) = word.strip_prefix('-')
            && !letters.is_empty()
            && !letters.starts_with('-')
            && letters.chars().all(|c| short.contains(c))
        {
            continue;
        } else {
            return None;
        }
    }
    hosts.sort();
    hosts.dedup();
    (!hosts.is_empty()).then_some(hosts)
}

/// `host:port` of an `http://` or `https://` URL when the host is a plain name or IPv4
/// address (letters, digits, `-`, `.`), lower-cased, trailing dot removed; the port is
/// the one written, else 80 or 443 by scheme.
fn url_host_port(word: &str) -> Option<String> {
    let lower = word.to_ascii_lowercase();
    let (rest, default_port) = match lower.strip_prefix("https://") {
        Some(rest) => (rest, "443"),
        None => (lower.strip_prefix("http://")?, "80"),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            (host, port.trim_start_matches('0'))
        }
        Some(_) => return None,
        None => (authority, default_port),
    };
    let host = host.trim_end_matches('.');
    let plain = !host.is_empty()
        && !port.is_empty()
        && port.len() <= 5
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    plain.then(|| format!("{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(command: &str) -> bool {
        let argv: Vec<&str> = command.split_whitespace().collect();
        needs_network(&argv)
    }

    #[test]
    fn tables_are_sorted() {
        assert!(NETWORK_COMMANDS.windows(2).all(|w| w[0] < w[1]));
        assert!(NETWORK_SUBCOMMANDS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(NETWORK_COMMANDS.len() >= 20);
    }

    #[test]
    fn network_subcommands_are_told_apart_from_local_ones() {
        for yes in [
            "curl https://x",
            "/usr/bin/wget x",
            "ssh host",
            "git fetch",
            "git pull --rebase",
            "git push origin main",
            "git clone url",
            "git remote show origin",
            "git remote -v show origin",
            "git remote update",
            "cargo install ripgrep",
            "npm install",
            "npm i left-pad",
            "pip install requests",
            "python3 -m pip install x",
            "yarn",
            "docker pull alpine",
            "kubectl get pods",
        ] {
            assert!(net(yes), "{yes}");
        }
        for no in [
            "git commit -m x",
            "git status",
            "git remote -v",
            "git remote show",
            "git remote show -n origin",
            "cargo build --release",
            "cargo test",
            "npm run build",
            "npm test",
            "pip list",
            "python -m pytest",
            "ls",
            "docker ps",
        ] {
            assert!(!net(no), "{no}");
        }
    }

    #[test]
    fn fetch_hosts_scope_only_commands_fully_understood() {
        let hosts = |c: &str| fetch_hosts(&c.split_whitespace().collect::<Vec<_>>());
        assert_eq!(
            hosts("curl -sS https://API.example.com:8443/v1?q=1"),
            Some(vec!["api.example.com:8443".to_string()])
        );
        assert_eq!(
            hosts("curl -s http://b.org/x https://a.org/"),
            Some(vec!["a.org:443".to_string(), "b.org:80".to_string()])
        );
        for unknown in [
            "curl",
            "curl -o out https://a.org",
            "curl -K cfg https://a.org",
            "curl -d @secret https://a.org",
            "curl https://user@a.org",
            "curl a.org",
            "wget -i urls.txt",
            "ssh a.org",
            "curl -sx https://a.org",
            "curl -sL https://a.org",
            "curl --location https://a.org",
            "wget -q https://a.org",
        ] {
            assert_eq!(hosts(unknown), None, "{unknown}");
        }
    }
}
