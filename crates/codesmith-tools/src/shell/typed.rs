//! What a shell reading an interactive session's terminal makes of the text typed into
//! it, across `pty_send` calls: the complete commands each input finishes, and what the
//! shell keeps waiting for (an open quote, a `\` continuation, a here-document, a line
//! ending in `|`), so that the command policy judges each command as the unit the shell
//! runs, never line by line.

use serde_json::Value;

/// Most bytes of open text a session's state keeps; past it the input is not followed.
const MAX_OPEN_BYTES: usize = 256 * 1024;

/// What a session's shell holds of the text typed into it, as far as CodeSmith can
/// follow it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TypedLine {
    /// Nothing: the shell is at a fresh prompt.
    #[default]
    Clear,
    /// Typed text that does not finish a command yet, and why (for people).
    Open {
        /// The text, line breaks included.
        text: String,
        /// Why the shell waits for more.
        why: &'static str,
    },
    /// Input that could not be followed (editing keys, control characters, history
    /// expansion, a write that failed part way), and why: what the shell holds is not
    /// known until `ctrl-c` clears its line.
    Lost(&'static str),
}

/// What one `pty_send` input does to a shell reading the terminal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Typing {
    /// The complete commands the shell runs once it reads the input, as one script
    /// (empty when none).
    pub commands: String,
    /// What the shell holds afterwards.
    pub after: TypedLine,
}

const CONTROLS: &str = "it contains control characters (editing keys, completion or escape \
                        sequences), so what the shell's line holds cannot be followed";
const KEYS: &str = "it presses editing or navigation keys, so what the shell's line holds \
                    cannot be followed";
const EOF_OPEN: &str = "ctrl-d at a continuation prompt either ends the shell or drops the \
                        open command";
const TOO_LONG: &str = "the open text is too long for the command policy to follow";

/// The effect of the `pty_send` arguments `args` (`text`, then `keys` in order) on a shell
/// whose line held `before`. Keys: `ctrl-c` clears the line (the shell drops an open
/// command), `enter` ends a line like a line break, `ctrl-d` on a clear line leaves it
/// clear; any other key, or text with a control character other than a line break or
/// carriage return, is not followed.
pub fn typing(before: &TypedLine, args: &Value) -> Typing {
    let mut out = Typing {
        commands: String::new(),
        after: before.clone(),
    };
    match args.get("text") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => type_text(&mut out, text),
        Some(_) => out.after = TypedLine::Lost(CONTROLS),
    }
    match args.get("keys") {
        None | Some(Value::Null) => {}
        Some(Value::Array(keys)) => {
            for key in keys {
                let bytes = key.as_str().and_then(super::key_bytes);
                match bytes.as_deref() {
                    Some([3]) => out.after = TypedLine::Clear,
                    Some([b'\r'] | [b'\n']) => type_text(&mut out, "\n"),
                    Some([4]) if out.after == TypedLine::Clear => {}
                    Some([4]) => out.after = TypedLine::Lost(EOF_OPEN),
                    _ => out.after = TypedLine::Lost(KEYS),
                }
            }
        }
        Some(_) => out.after = TypedLine::Lost(KEYS),
    }
    out
}

fn type_text(out: &mut Typing, text: &str) {
    if text.is_empty() {
        return;
    }
    let open = match &out.after {
        TypedLine::Lost(_) => return,
        TypedLine::Clear => "",
        TypedLine::Open { text, .. } => text.as_str(),
    };
    if text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\r')
    {
        out.after = TypedLine::Lost(CONTROLS);
        return;
    }
    let joined = format!("{open}{text}");
    let input = codesmith_policy::shell_input(&joined);
    out.commands.push_str(&input.complete);
    out.after = match input.why {
        _ if input.lost => TypedLine::Lost(input.why.unwrap_or(TOO_LONG)),
        _ if input.open.len() > MAX_OPEN_BYTES => TypedLine::Lost(TOO_LONG),
        Some(why) => TypedLine::Open {
            text: input.open,
            why,
        },
        None => TypedLine::Clear,
    };
}

/// Directories whose programs are known by their names.
const SYSTEM_BIN_DIRS: &[&str] = &["/bin", "/usr/bin", "/usr/local/bin"];

/// False when a session's start command runs a known interpreter or REPL (`python3`,
/// `node`, `psql`, …) as one plain command, named bare or from a system directory, with no
/// assignment: what is typed there is its language, not shell, and is judged line by line.
/// Anything else (a shell, `./python3`, `PATH=… python3`, a command line the check does
/// not understand) counts as reading shell commands.
pub fn reads_shell_commands(command: &str) -> bool {
    const REPLS: &[&str] = &[
        "node",
        "nodejs",
        "deno",
        "bun",
        "irb",
        "pry",
        "ruby",
        "perl",
        "php",
        "lua",
        "luajit",
        "R",
        "julia",
        "ghci",
        "psql",
        "sqlite3",
        "mysql",
        "mariadb",
        "redis-cli",
        "mongosh",
        "bc",
        "iex",
        "erl",
        "ocaml",
        "utop",
        "scala",
        "swipl",
        "gdb",
        "lldb",
        "clj",
        "clojure",
    ];
    if command.chars().any(|c| {
        matches!(
            c,
            ';' | '&' | '|' | '<' | '>' | '(' | ')' | '$' | '`' | '\\' | '\'' | '"'
        )
    }) || command.chars().any(char::is_control)
    {
        return true;
    }
    // An assignment (`PATH=./bin python3`) can make the name another program.
    if command.split_whitespace().any(|w| w.contains('=')) {
        return true;
    }
    let program = command
        .split_whitespace()
        .find(|w| !matches!(*w, "env" | "exec"));
    let Some(program) = program else {
        return true;
    };
    // Only a name found on the search path or in a system directory is known by its name:
    // `./python3` may be any program (a link to bash).
    let name = match program.rsplit_once('/') {
        None => program,
        Some((dir, name)) if SYSTEM_BIN_DIRS.contains(&dir) => name,
        Some(_) => return true,
    };
    let python = ["python", "ipython", "pypy"].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    });
    !(python || REPLS.contains(&name))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn after(before: &TypedLine, args: Value) -> Typing {
        typing(before, &args)
    }

    #[test]
    fn an_open_command_is_carried_to_the_next_input_and_judged_whole() {
        let first = after(&TypedLine::Clear, json!({"text": "tou\\\n"}));
        assert_eq!(first.commands, "");
        assert!(matches!(&first.after, TypedLine::Open { text, .. } if text == "tou\\\n"));
        let second = after(&first.after, json!({"text": "ch x\n"}));
        assert_eq!(second.commands, "tou\\\nch x\n");
        assert_eq!(second.after, TypedLine::Clear);
        // Without a line break the text waits for the next input; enter ends it.
        let partial = after(&TypedLine::Clear, json!({"text": "ls -l"}));
        assert!(matches!(partial.after, TypedLine::Open { .. }));
        let enter = after(&partial.after, json!({"keys": ["enter"]}));
        assert_eq!(enter.commands, "ls -l\n");
    }

    #[test]
    fn ctrl_c_clears_and_editing_keys_are_not_followed() {
        let open = after(&TypedLine::Clear, json!({"text": "echo 'x\n"})).after;
        assert_eq!(
            after(&open, json!({"keys": ["ctrl-c"]})).after,
            TypedLine::Clear
        );
        let lost = after(&TypedLine::Clear, json!({"keys": ["up"]})).after;
        assert!(matches!(lost, TypedLine::Lost(_)));
        // Once lost, typed text runs nothing the policy can name, until ctrl-c.
        let more = after(&lost, json!({"text": "ls\n"}));
        assert!(more.commands.is_empty());
        assert!(matches!(more.after, TypedLine::Lost(_)));
        let cleared = after(&lost, json!({"keys": ["ctrl-c"]}));
        assert_eq!(cleared.after, TypedLine::Clear);
        assert!(matches!(
            after(&TypedLine::Clear, json!({"text": "ls\t\n"})).after,
            TypedLine::Lost(_)
        ));
        assert!(matches!(
            after(&open, json!({"keys": ["ctrl-d"]})).after,
            TypedLine::Lost(_)
        ));
        assert_eq!(
            after(&TypedLine::Clear, json!({"keys": ["ctrl-d"]})).after,
            TypedLine::Clear
        );
    }

    #[test]
    fn only_a_plain_interpreter_command_counts_as_not_a_shell() {
        for repl in ["python3", "python3 -q", "/usr/bin/python3.12 -i", "psql db"] {
            assert!(!reads_shell_commands(repl), "{repl}");
        }
        for shell in [
            "bash --norc -i",
            "sh",
            "zsh",
            "npm init",
            "python3 -c 'import pty; pty.spawn(\"bash\")'",
            "cd x && python3",
            "",
            // A name that may be another program: a path outside the system directories,
            // or an assignment that changes where the name is found.
            "./python3 --norc -i",
            ".venv/bin/python",
            "PATH=./bin python3",
            "env A=1 node",
        ] {
            assert!(reads_shell_commands(shell), "{shell}");
        }
    }
}
