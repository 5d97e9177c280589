//! Prints the `codesmith policy check` JSON for a command, with no rules:
//! `cargo run -p codesmith-policy --example policy_check -- 'git status -s' [WORKSPACE]
//! [sandboxed]` (`sandboxed`: judged as run under a sandbox with a private `/tmp`).

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

fn main() {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let workspace = args.next().unwrap_or_else(|| "/workspace".to_string());
    let sandboxed = args.next().is_some_and(|a| a == "sandboxed");
    let report = codesmith_policy::check_report(
        &command,
        &workspace,
        &codesmith_policy::Rules::new(),
        sandboxed,
        codesmith_policy::ApprovalMode::AutoEdit,
    );
    println!("{report:#}");
}
