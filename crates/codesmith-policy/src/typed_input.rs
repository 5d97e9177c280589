//! Text typed into a terminal that a shell reads: which complete commands the shell
//! runs, and what it keeps waiting for.
//!
//! An interactive shell reads a line, and when the line does not finish a command (an
//! open quote, a `\` continuation, a here-document without its end line, a line ending
//! in `|`, `&&` or `||`, an open `if`/`for`/`(`/`{`) it shows its continuation prompt
//! and joins the next line, even one typed much later. [`shell_input`] follows that
//! reading with the parser the exec policy uses, so every command is judged as the
//! unit the shell runs, whatever the lines or calls it was typed in.

use crate::shell_parse;

/// Most bytes one [`shell_input`] call parses in all (the text is parsed again at each
/// line break while a command is open); past it the rest is not followed.
const PARSE_BUDGET: usize = 4 * 1024 * 1024;

/// What a shell does with typed text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellInput {
    /// The complete commands the shell runs, in the order typed, each ending with a line
    /// break (empty when none). Judge them as one script.
    pub complete: String,
    /// The text the shell holds, waiting for the rest of a command (empty when none).
    pub open: String,
    /// Why `open` is not a complete command, for a reason shown to people; `None` when
    /// `open` is empty.
    pub why: Option<&'static str>,
    /// True when the text could not be followed (history expansion, or more than the
    /// parse budget): what the shell holds afterwards is not known.
    pub lost: bool,
}

/// Splits `text` (typed after whatever an earlier input left open, which the caller
/// prepends) into the complete commands a shell runs and the open rest, the way an
/// interactive shell reads it: line by line, running what it has once the lines read
/// parse as complete commands. A carriage return ends a line as a line break does.
///
/// Text with other control characters (editing keys, completion) is the caller's to
/// refuse: this function treats them as ordinary characters.
pub fn shell_input(text: &str) -> ShellInput {
    let text = text.replace('\r', "\n");
    let mut out = ShellInput::default();
    let mut buffer = String::new();
    let mut parsed = 0usize;
    for line in text.split_inclusive('\n') {
        buffer.push_str(line);
        if !line.ends_with('\n') {
            break;
        }
        if buffer.trim().is_empty() {
            buffer.clear();
            continue;
        }
        if let Some(why) = history_expansion(line) {
            out.why = Some(why);
            out.lost = true;
            out.open = buffer;
            return out;
        }
        parsed += buffer.len();
        if parsed > PARSE_BUDGET {
            out.why = Some("the input is too long for the command policy to follow");
            out.lost = true;
            out.open = text[out.complete.len()..].to_string();
            return out;
        }
        if open_reason(&buffer).is_none() {
            out.complete.push_str(&buffer);
            buffer.clear();
        }
    }
    out.why = (!buffer.is_empty()).then(|| open_reason(&buffer).unwrap_or(NO_LINE_BREAK));
    out.open = buffer;
    out
}

const NO_LINE_BREAK: &str =
    "the text does not end with a line break, so it joins whatever is typed next";

/// Why `source` is not a sequence of complete commands a shell would run as it is, or
/// `None` when it is.
fn open_reason(source: &str) -> Option<&'static str> {
    let Some(body) = source.strip_suffix('\n') else {
        return Some(NO_LINE_BREAK);
    };
    let backslashes = body.bytes().rev().take_while(|&b| b == b'\\').count();
    if backslashes % 2 == 1 {
        return Some("the last line ends with `\\`, so the shell joins the next line to it");
    }
    let last = body.lines().last().unwrap_or("").trim_end();
    if last.ends_with('|') || last.ends_with("&&") {
        return Some(
            "the last line ends with `|`, `&&` or `||`, so the shell waits for the rest of the command",
        );
    }
    if shell_parse::parses_whole(source) {
        return None;
    }
    Some(
        "the shell would wait for more or reject it: an open quote, substitution, \
         here-document, bracket or compound command (`if`, `for`, `case`, `{`), or text \
         the command policy cannot parse",
    )
}

/// A history expansion an interactive shell applies to `line` before running it (`!!`,
/// `!word`, `^old^new`): it runs text that was never typed in this call.
fn history_expansion(line: &str) -> Option<&'static str> {
    const WHY: &str = "it uses `!` or `^` history expansion, which an interactive shell \
                       replaces with earlier commands the policy cannot see";
    if line.trim_start().starts_with('^') {
        return Some(WHY);
    }
    let mut single = false;
    for c in line.chars() {
        match c {
            '\'' => single = !single,
            '!' if !single => return Some(WHY),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn split(text: &str) -> (String, String) {
        let input = shell_input(text);
        assert_eq!(input.why.is_some(), !input.open.is_empty(), "{text:?}");
        (input.complete, input.open)
    }

    #[test]
    fn complete_lines_run_and_open_text_waits() {
        assert_eq!(split("ls\n"), ("ls\n".into(), String::new()));
        assert_eq!(split("ls\r"), ("ls\n".into(), String::new()));
        assert_eq!(split("ls"), (String::new(), "ls".into()));
        for open in [
            "tou\\\n",
            "echo 'x\n",
            "echo \"x\n",
            "echo hi |\n",
            "echo hi | \\\n",
            "ls &&\n",
            "ls ||\n",
            "cat <<EOF\nfoo\n",
            "cat <<'EOF'\nfoo\n",
            "if true; then\n",
            "for x in a; do\n",
            "(ls\n",
            "{ ls\n",
            "echo $(\n",
            "echo `ls\n",
            "echo ${x\n",
            "case x in\n",
            "f() {\n",
        ] {
            assert_eq!(split(open), (String::new(), open.to_string()), "{open:?}");
        }
    }

    #[test]
    fn a_command_is_the_unit_the_shell_runs_across_lines() {
        assert_eq!(
            split("tou\\\nch x\n"),
            ("tou\\\nch x\n".into(), String::new())
        );
        assert_eq!(split("ls\necho 'x\n"), ("ls\n".into(), "echo 'x\n".into()));
        assert_eq!(
            split("echo 'x\n';touch y;echo 'z'\n"),
            ("echo 'x\n';touch y;echo 'z'\n".into(), String::new())
        );
        assert_eq!(
            split("echo 'x\n';touch y;echo '\n"),
            (String::new(), "echo 'x\n';touch y;echo '\n".into())
        );
        assert_eq!(
            split("cat <<EOF\nrm -rf x\nEOF\nls\n"),
            ("cat <<EOF\nrm -rf x\nEOF\nls\n".into(), String::new())
        );
    }

    #[test]
    fn history_expansion_is_not_followed() {
        for text in ["!!\n", "!rm\n", "echo \"!-2\"\n", "^a^b\n"] {
            let input = shell_input(text);
            assert!(input.lost, "{text:?}");
            assert!(input.why.unwrap().contains("history"));
        }
        assert!(!shell_input("echo '!'\n").lost);
    }

    #[test]
    fn a_line_continuation_inside_a_word_joins_it_as_bash_does() {
        let mut rules = crate::Rules::new();
        rules
            .add_toml(
                "[[rule]]\npattern = \"touch\"\ndecision = \"deny\"\n",
                crate::RuleSource::User,
            )
            .unwrap();
        for command in [
            "touch x",
            "tou\\\nch x",
            "t\\\no\\\nuch x",
            "echo $(tou\\\nch x)",
            "ls; tou\\\nch x",
        ] {
            let eval = crate::decide(command, "/tmp/ws", &rules, crate::ApprovalMode::Auto);
            assert_eq!(
                eval.decision,
                crate::Decision::Deny,
                "{command:?}: {}",
                eval.reason
            );
        }
        // Quoted or commented, the continuation stays literal text.
        for command in [
            "echo 'tou\\\nch x'",
            "echo \"tou\\\nch\" x",
            "ls # tou\\\nch\n",
        ] {
            let eval = crate::decide(command, "/tmp/ws", &rules, crate::ApprovalMode::Auto);
            assert_ne!(
                eval.decision,
                crate::Decision::Deny,
                "{command:?}: {}",
                eval.reason
            );
        }
    }
}
