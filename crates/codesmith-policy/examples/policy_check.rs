//! Prints the `codesmith policy check` JSON for a command, with no rules:
//! `cargo run -p codesmith-policy --example policy_check -- 'git status -s' [WORKSPACE]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let workspace = args.next().unwrap_or_else(|| "/workspace".to_string());
    let report =
        codesmith_policy::check_report(&command, &workspace, &codesmith_policy::Rules::new());
    println!("{report:#}");
}
