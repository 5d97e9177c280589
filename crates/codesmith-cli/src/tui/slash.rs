//! Slash commands typed at the prompt: parsing, help text and "did you mean".

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slash {
    /// `/help`: list the commands and keys.
    Help,
    /// `/model [NAME]`: show or switch the model (same provider).
    Model(Option<String>),
    /// `/approval [MODE]`: show or switch the approval mode.
    Approval(Option<String>),
    /// `/approvals [revoke ID|--all]`: list the workspace's saved grants, or revoke some.
    Approvals(Option<String>),
    /// `/accept [auto]`: accept the plan made in plan mode: switch to `auto-edit` (or
    /// `auto`) and start the work with the plan as its first step list.
    Accept(Option<String>),
    /// `/compact`: summarise older history to free context.
    Compact,
    /// `/restore N`: roll the workspace back to before task N.
    Restore(Option<String>),
    /// `/verify`: claim-verifier statistics.
    Verify,
    /// `/memory`: show remembered facts for this workspace.
    Memory,
    /// `/skills [trust NAME]`: list the skills, or trust a project skill on this machine.
    Skills(Option<String>),
    /// `/trust [add PATH]`: list, or add, directories outside the workspace the file
    /// tools may read in this UI run.
    Trust(Option<String>),
    /// `/sessions`: list sessions of this workspace.
    Sessions,
    /// `/resume ID`: switch to another session.
    Resume(Option<String>),
    /// `/doctor`: check the setup.
    Doctor,
    /// `/clear`: start a fresh session and clear the screen.
    Clear,
    /// `/quit`: leave.
    Quit,
}

/// Command names with a one-line description, in help order.
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    ("help", "list commands and keys"),
    ("model", "[NAME] show or switch the model"),
    (
        "approval",
        "[read-only|suggest|auto-edit|auto|never] show or switch the approval mode (Shift-Tab cycles)",
    ),
    (
        "accept",
        "[auto] accept the plan: switch to auto-edit (or auto) and start the work",
    ),
    (
        "approvals",
        "[revoke ID|--all] list the grants \"always\" saved, or revoke them",
    ),
    ("compact", "summarise older history now to free context"),
    (
        "restore",
        "N [yes] preview, then roll files back to before task N",
    ),
    ("verify", "claim-verifier statistics"),
    ("memory", "facts remembered for this workspace"),
    (
        "skills",
        "[trust NAME] list skills, or trust a project skill",
    ),
    (
        "trust",
        "[add PATH] list or add directories outside the workspace tools may read",
    ),
    ("sessions", "list sessions of this workspace"),
    ("resume", "ID switch to another session"),
    ("doctor", "check provider, sandbox and paths"),
    ("clear", "start a fresh session and clear the screen"),
    (
        "quit",
        "leave (also Ctrl-C twice, or Ctrl-D on an empty prompt)",
    ),
];

/// Key bindings shown by `/help`.
pub(crate) const KEYS: &[(&str, &str)] = &[
    ("Enter", "send"),
    ("Tab", "complete a /command"),
    (
        "Shift-Tab",
        "next approval mode: read-only (plan) → suggest → auto-edit → auto",
    ),
    ("Alt-Enter, Shift-Enter, Ctrl-J", "new line"),
    ("↑ / ↓", "previous / next input"),
    ("PgUp / PgDn", "scroll the transcript"),
    (
        "Ctrl-O",
        "expand or collapse tool results and long messages",
    ),
    ("Ctrl-T", "show or hide thinking"),
    (
        "Ctrl-C",
        "interrupt the running turn; twice on an idle prompt quits",
    ),
];

/// The outcome of reading a line that starts with `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// Not a slash command: send it to the model as typed.
    Text(String),
    /// A known command.
    Command(Slash),
    /// An unknown command, with the nearest known name if one is close.
    Unknown {
        /// What was typed (without the slash).
        name: String,
        /// The closest known command.
        suggestion: Option<&'static str>,
    },
}

/// Reads one submitted input. A leading `//` sends the rest, starting with `/`, as text.
pub(crate) fn parse(input: &str) -> Parsed {
    let trimmed = input.trim();
    if let Some(rest) = trimmed.strip_prefix("//") {
        return Parsed::Text(format!("/{rest}"));
    }
    let Some(body) = trimmed.strip_prefix('/') else {
        return Parsed::Text(input.to_string());
    };
    let mut words = body.split_whitespace();
    let name = words.next().unwrap_or_default().to_lowercase();
    let arg = {
        let rest: Vec<&str> = words.collect();
        (!rest.is_empty()).then(|| rest.join(" "))
    };
    let cmd = match name.as_str() {
        "help" | "?" => Slash::Help,
        "model" => Slash::Model(arg),
        "approval" => Slash::Approval(arg),
        "approvals" | "grants" => Slash::Approvals(arg),
        "accept" => Slash::Accept(arg),
        "compact" => Slash::Compact,
        "restore" => Slash::Restore(arg),
        "verify" => Slash::Verify,
        "memory" => Slash::Memory,
        "skills" | "skill" => Slash::Skills(arg),
        "trust" => Slash::Trust(arg),
        "sessions" => Slash::Sessions,
        "resume" => Slash::Resume(arg),
        "doctor" => Slash::Doctor,
        "clear" | "new" => Slash::Clear,
        "quit" | "exit" | "q" => Slash::Quit,
        _ => {
            return Parsed::Unknown {
                suggestion: suggest(&name),
                name,
            };
        }
    };
    Parsed::Command(cmd)
}

/// [`parse`], then a name that is no built-in command is looked up among the custom
/// slash commands (`custom`, the one expansion `exec` uses too): one of them becomes the
/// text it expands to. A custom command's `model` and `allowed-tools` apply in `exec`
/// only; here the task runs in the session as it is.
pub(crate) fn parse_with(
    input: &str,
    custom: &codesmith_tools::extensions::commands::SlashCommands,
) -> Parsed {
    match parse(input) {
        Parsed::Unknown { name, suggestion } => match custom.expand(input) {
            Some(expansion) => Parsed::Text(expansion.text),
            // An MCP server's prompt: the driver has its server render it.
            None if name.starts_with("mcp__") => Parsed::Text(input.trim().to_string()),
            None => Parsed::Unknown { name, suggestion },
        },
        other => other,
    }
}

/// The known command closest to `name`, if it is plausibly a typo of it.
pub(crate) fn suggest(name: &str) -> Option<&'static str> {
    COMMANDS
        .iter()
        .map(|(cmd, _)| (*cmd, strsim::jaro_winkler(name, cmd)))
        .filter(|(cmd, score)| *score >= 0.8 || (cmd.starts_with(name) && !name.is_empty()))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(cmd, _)| cmd)
}

/// Known commands starting with what is typed after the `/` (for hints and Tab).
/// Empty unless `typed` is a lone `/word` (no spaces, one line).
pub(crate) fn completions(typed: &str) -> Vec<&'static str> {
    let Some(word) = typed.strip_prefix('/') else {
        return Vec::new();
    };
    if word.contains(char::is_whitespace) || word.starts_with('/') {
        return Vec::new();
    }
    COMMANDS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| name.starts_with(word))
        .collect()
}

/// The `/help` text, one entry per line.
pub(crate) fn help_lines() -> Vec<String> {
    let mut lines = vec!["Commands:".to_string()];
    for (name, what) in COMMANDS {
        lines.push(format!("  /{name:<9} {what}"));
    }
    lines.push("Keys:".to_string());
    for (key, what) in KEYS {
        lines.push(format!("  {key:<31} {what}"));
    }
    lines.push("Start a message with // to send text that begins with /.".to_string());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_arguments() {
        assert_eq!(parse("/help"), Parsed::Command(Slash::Help));
        assert_eq!(
            parse(" /model gpt-4o "),
            Parsed::Command(Slash::Model(Some("gpt-4o".into())))
        );
        assert_eq!(parse("/restore"), Parsed::Command(Slash::Restore(None)));
        assert_eq!(parse("fix it"), Parsed::Text("fix it".into()));
        assert_eq!(parse("//etc/hosts?"), Parsed::Text("/etc/hosts?".into()));
        assert_eq!(
            parse("/skills trust lint-rules"),
            Parsed::Command(Slash::Skills(Some("trust lint-rules".into())))
        );
    }

    #[test]
    fn a_custom_command_expands_where_no_built_in_one_is_named() {
        use codesmith_tools::extensions::commands::{CustomCommand, SlashCommands};
        let cmd = |name: &str, body: &str| CustomCommand {
            name: name.into(),
            description: None,
            argument_hint: None,
            model: None,
            allowed_tools: None,
            body: body.into(),
            scope: codesmith_tools::skills::Scope::User,
            path: format!("/home/u/.codesmith/commands/{name}.md").into(),
            digest: String::new(),
            trust: codesmith_tools::skills::trust::TrustState::User,
        };
        let custom = SlashCommands::from_commands(vec![
            cmd("review", "Review $ARGUMENTS."),
            cmd("help", "x"),
        ]);
        assert_eq!(
            parse_with("/review a.rs", &custom),
            Parsed::Text("Review a.rs.".into())
        );
        assert_eq!(parse_with("/help", &custom), Parsed::Command(Slash::Help));
        assert!(matches!(
            parse_with("/revu", &custom),
            Parsed::Unknown { .. }
        ));
        // An MCP server's prompt goes to the driver as typed, for its server to render.
        assert_eq!(
            parse_with(" /mcp__every__simple-prompt x=1 ", &custom),
            Parsed::Text("/mcp__every__simple-prompt x=1".into())
        );
    }

    #[test]
    fn completions_match_the_typed_prefix() {
        assert_eq!(completions("/m"), ["model", "memory"]);
        assert_eq!(completions("/res"), ["restore", "resume"]);
        assert!(completions("/model x").is_empty());
        assert!(completions("fix").is_empty());
        assert_eq!(completions("/").len(), COMMANDS.len());
    }

    #[test]
    fn unknown_commands_get_a_suggestion() {
        assert_eq!(
            parse("/modle"),
            Parsed::Unknown {
                name: "modle".into(),
                suggestion: Some("model")
            }
        );
        assert_eq!(suggest("sess"), Some("sessions"));
        assert_eq!(suggest("zzzzzz"), None);
    }
}
