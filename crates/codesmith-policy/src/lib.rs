//! Pure policy decisions: no I/O, no async.

mod network;
mod path_text;
mod runs_later;
mod safe_name;
mod scrub;
mod secret_files;
mod ssrf;
mod terminal;
mod typed_input;

pub use network::{HostPattern, NetworkConfig, NetworkDecision, NetworkPolicy, normalize_host};
pub use path_text::{normalize_path, normalize_path_strict, normalize_path_strict_bytes};
pub use runs_later::{
    INSTRUCTION_NAMES, RunsLater, hooks_path, hooks_path_in, is_instruction_file, runs_later,
};
pub use safe_name::{MAX_SAFE_NAME_LEN, UnsafeName, check_safe_name, is_safe_name, join_safe};
pub use scrub::{REDACTED, is_secret_env, is_secret_env_name, scrub_secrets};
pub use secret_files::{SecretKind, mask_secret_text, secret_file, secret_name};
pub use ssrf::{
    AddressPolicy, CLOUD_METADATA_V4, CLOUD_METADATA_V6, Cidr, FAKEIP_RANGE, MalformedLiteral,
    Restricted, RestrictedRange, embedded_ipv4, is_localhost_name, parse_ip_literal,
    restricted_range, restricted_v4,
};
pub use terminal::{
    BLANK_RUN, MAX_OPEN_SEQUENCE, TerminalSafe, json_terminal_safe, screen_text, terminal_safe,
    unfinished_sequence_start, visible_controls, visible_line,
};
pub use typed_input::{ShellInput, shell_input};

// Command safety, arity, exec-policy rules and approvals.
mod approval;
mod archive_rules;
mod arity;
mod catastrophic;
mod classify;
mod exec_rules;
mod getopt;
mod git_repo;
mod git_rules;
mod heredoc;
mod net_commands;
mod pipe_split;
mod program_rules;
mod safe_options;
mod safety_level;
mod script_rules;
mod shell_parse;
mod tool_rules;
mod ws_path;

pub use approval::{
    ApprovalMode, Evaluation, UnknownApprovalMode, approval_prefixes, check_report, decide,
    decide_with,
};
pub use arity::{CanonicalPrefix, arity_entries, arity_of, canonical_prefix, widening_flags};
pub use catastrophic::catastrophic_reason;
pub use classify::{
    Classification, MAX_COMMAND_BYTES, MAX_NESTING, Segment, classify_command,
    classify_command_with,
};
pub use exec_rules::{Decision, MatchedRule, Rule, RuleEvaluation, RuleSource, Rules, RulesError};
pub use net_commands::{NETWORK_COMMANDS, NETWORK_REASON, fetch_hosts, needs_network};
pub use safety_level::SafetyLevel;
pub use ws_path::{
    FileProbe, LexicalPaths, MAX_PROBE_BYTES, PROTECTED_DIRS, PathFacts, PrivateTmp, StartingIn,
    SystemPaths, file_glob_exact, file_glob_matches, probe_system, protected_name,
};
