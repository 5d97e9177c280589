//! Recognizing a connection the sandbox blocked.
//!
//! When the sandbox has cut the network and the
//! failure looks like a blocked connection, the result says the policy did it, so the model
//! stops tweaking flags and retrying.

/// Phrases (lower-case) that tools print when a connection cannot be made.
const BLOCKED_PHRASES: &[&str] = &[
    "could not resolve host",
    "couldn't resolve host",
    "could not resolve hostname",
    "temporary failure in name resolution",
    "name or service not known",
    "nodename nor servname provided",
    "failed to lookup address",
    "getaddrinfo",
    "dns error",
    "network is unreachable",
    "no route to host",
    "unable to resolve host",
    "failed to connect to",
    "couldn't connect to server",
    "could not connect to",
    "connection refused",
    "network unreachable",
    "eai_again",
    "enotfound",
    "enetunreach",
];

/// Markers of a loopback target; a failed connection to one is a local service being down,
/// not the sandbox.
const LOCAL_TARGETS: &[&str] = &["localhost", "127.0.0.1", "::1", "0.0.0.0"];

/// True when `output` reads like a connection the network policy blocked.
pub fn looks_network_blocked(output: &str) -> bool {
    let lower = output.to_lowercase();
    lower.lines().any(|line| {
        BLOCKED_PHRASES.iter().any(|p| line.contains(p))
            && !LOCAL_TARGETS.iter().any(|t| line.contains(t))
    })
}

/// True when some simple command of `command` needs the network (the policy crate's
/// network table: `git fetch`, `cargo install`, `curl`, ... but not `git commit`).
pub fn command_needs_network(command: &str, workspace: &std::path::Path) -> bool {
    let ws = workspace.to_string_lossy();
    codesmith_policy::classify_command(command, &ws)
        .segments
        .iter()
        .any(|s| s.needs_network)
}

/// True when all three conditions hold: the sandbox really cut the network,
/// the command needs the network, and the failure reads like a blocked connection.
pub fn blocked_by_policy(
    network_blocked: bool,
    command: &str,
    workspace: &std::path::Path,
    output: &str,
) -> bool {
    network_blocked && looks_network_blocked(output) && command_needs_network(command, workspace)
}

/// The note appended to such a result.
pub const NETWORK_BLOCKED_NOTE: &str = "[The sandbox policy blocks network access for shell \
commands, so this connection failure will not go away by retrying or changing flags. Use \
fetch_url for web pages, or ask the user to allow network access.]";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_blocked_connections() {
        assert!(looks_network_blocked(
            "curl: (6) Could not resolve host: example.com"
        ));
        assert!(looks_network_blocked(
            "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com"
        ));
        assert!(looks_network_blocked("connect: Network is unreachable"));
        assert!(!looks_network_blocked(
            "curl: (7) Failed to connect to 127.0.0.1 port 8080: Connection refused"
        ));
        assert!(!looks_network_blocked(
            "Connection refused (localhost:5432)"
        ));
        assert!(!looks_network_blocked(
            "error[E0425]: cannot find value `x`"
        ));
    }

    #[test]
    fn all_three_conditions_are_needed() {
        let ws = std::path::Path::new("/ws");
        let out = "fatal: unable to access 'https://x/': Could not resolve host: x";
        assert!(blocked_by_policy(true, "git fetch origin", ws, out));
        assert!(!blocked_by_policy(false, "git fetch origin", ws, out));
        assert!(!blocked_by_policy(true, "git commit -m x", ws, out));
        assert!(!blocked_by_policy(
            true,
            "git fetch origin",
            ws,
            "up to date"
        ));
    }
}
