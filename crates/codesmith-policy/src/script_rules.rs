//! Programs embedded in a command's arguments: sed scripts, awk programs,
//! jq filters. Each is read far enough to prove it stays inside a small,
//! fully understood subset (reading its input and printing); anything else
//! (a command run, a file written or read by name, the environment, an
//! indirect call) is named, and the call asks. A script that runs what it
//! reads (`sed e`, `awk '{system($0)}'`) fed from a pipe is a pipe into a
//! shell.

/// What a script does beyond reading its input and printing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Escape {
    /// Names the construct and why it asks.
    pub reason: &'static str,
    /// True when the script runs the text it reads as a command.
    pub runs_input: bool,
}

impl Escape {
    const fn asks(reason: &'static str) -> Self {
        Escape {
            reason,
            runs_input: false,
        }
    }
}

/// The first thing a GNU sed script does beyond editing its input: the `e`
/// command and the `e` flag of `s` run commands (a bare `e` runs the
/// pattern space, the input itself), `w`/`W` and the `w` flag write
/// files, `r`/`R` read any file; a command not listed, or text that could
/// not be read, is not understood. A label (`:x`, `b x`) ends at `;` or a
/// newline, as GNU sed reads it.
pub(crate) fn sed_escape(script: &str) -> Option<Escape> {
    let bytes = script.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < bytes.len() && matches!(bytes[*i], b' ' | b'\t' | b'\n' | b';' | b'!') {
            *i += 1;
        }
    };
    // Skips one address (`1`, `$`, `/re/`, `\%re%`, `1~2`, `+3`).
    let skip_address = |i: &mut usize| -> bool {
        match bytes.get(*i) {
            Some(b'0'..=b'9' | b'$' | b'+' | b'~') => {
                while *i < bytes.len() && matches!(bytes[*i], b'0'..=b'9' | b'$' | b'+' | b'~') {
                    *i += 1;
                }
                true
            }
            Some(b'/') | Some(b'\\') => {
                let delim = if bytes[*i] == b'\\' {
                    *i += 1;
                    match bytes.get(*i) {
                        Some(d) => *d,
                        None => return false,
                    }
                } else {
                    b'/'
                };
                *i += 1;
                while *i < bytes.len() && bytes[*i] != delim {
                    if bytes[*i] == b'\\' {
                        *i += 1;
                    }
                    *i += 1;
                }
                *i += 1;
                while *i < bytes.len() && matches!(bytes[*i], b'I' | b'M') {
                    *i += 1;
                }
                true
            }
            _ => false,
        }
    };
    // True when only blanks lie between `at` and the end of the command.
    let bare = |at: usize| {
        bytes[at..]
            .iter()
            .take_while(|b| !matches!(b, b';' | b'\n' | b'}'))
            .all(|b| matches!(b, b' ' | b'\t'))
    };
    loop {
        skip_ws(&mut i);
        if i >= bytes.len() {
            return None;
        }
        if skip_address(&mut i) {
            if bytes.get(i) == Some(&b',') {
                i += 1;
                skip_address(&mut i);
            }
            skip_ws(&mut i);
        }
        let &command = bytes.get(i)?;
        i += 1;
        match command {
            b'e' => {
                return Some(Escape {
                    reason: "the sed script runs a command (`e`); edit without `e`, or approve it",
                    runs_input: bare(i),
                });
            }
            b'w' | b'W' => {
                return Some(Escape::asks(
                    "the sed script writes a file (`w`); redirect the output instead, or approve it",
                ));
            }
            b'r' | b'R' => {
                return Some(Escape::asks(
                    "the sed script reads a file by name (`r`); name it as an operand, or approve it",
                ));
            }
            b's' | b'y' => {
                let Some(&delim) = bytes.get(i) else {
                    return Some(Escape::asks("the sed script could not be read"));
                };
                if matches!(delim, b'\n' | b'\\') {
                    return Some(Escape::asks("the sed script could not be read"));
                }
                i += 1;
                for _ in 0..2 {
                    while i < bytes.len() && bytes[i] != delim {
                        if bytes[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                if command == b's' {
                    while i < bytes.len() && !matches!(bytes[i], b';' | b'\n' | b'}') {
                        match bytes[i] {
                            b'e' => {
                                return Some(Escape {
                                    reason: "the sed script runs the pattern space as a command \
                                             (`s///e`); edit without `e`, or approve it",
                                    runs_input: true,
                                });
                            }
                            b'w' => {
                                return Some(Escape::asks(
                                    "the sed script writes a file (`s///w`); redirect the output \
                                     instead, or approve it",
                                ));
                            }
                            b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9' | b' ' => {}
                            _ => {
                                return Some(Escape::asks(
                                    "the sed script has a substitution flag that is not understood",
                                ));
                            }
                        }
                        i += 1;
                    }
                }
            }
            b':' | b'b' | b't' | b'T' => {
                // A label, up to `;` or the end of the line (GNU sed).
                while i < bytes.len() && !matches!(bytes[i], b'\n' | b';') {
                    if command != b':' && bytes[i] == b'}' {
                        break;
                    }
                    i += 1;
                }
            }
            b'a' | b'i' | b'c' | b'#' => {
                // Text up to the end of the line.
                while i < bytes.len() && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'p' | b'P' | b'd' | b'D' | b'n' | b'N' | b'g' | b'G' | b'h' | b'H' | b'x' | b'='
            | b'l' | b'q' | b'Q' | b'z' | b'{' | b'}' | b'F' => {
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            _ => {
                return Some(Escape::asks(
                    "the sed script has a command that is not understood; approve it if it is \
                     harmless",
                ));
            }
        }
    }
}

/// The first thing an awk program does beyond reading its input and
/// printing to standard output: `system()`, `getline` (from a command or a
/// named file), output redirected to a file or a command (`print > f`,
/// `print | cmd`), gawk's `@` (indirect calls, `@load`, `@include`), the
/// environment (`ENVIRON`, `PROCINFO`) and `ARGV` (which names the files
/// read). Strings, regular expressions and comments are skipped, so data
/// that only mentions these is not counted.
pub(crate) fn awk_escape(program: &str) -> Option<Escape> {
    let bytes = program.as_bytes();
    let mut i = 0;
    // True after a token that ends an operand: a `/` then divides.
    let mut after_operand = false;
    // Paren depth where the current `print`/`printf` statement started.
    let mut print_depth: Option<usize> = None;
    let mut depth = 0usize;
    let mut escape: Option<Escape> = None;
    let note = |found: Escape, escape: &mut Option<Escape>| {
        if escape.is_none_or(|e| !e.runs_input && found.runs_input) {
            *escape = Some(found);
        }
    };
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                after_operand = true;
                continue;
            }
            b'/' if !after_operand => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'/' && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                after_operand = true;
                continue;
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'|' if bytes.get(i + 1) == Some(&b'|') => {
                i += 2;
                after_operand = false;
                continue;
            }
            b'|' => {
                // `print | "sh"` hands what it prints to a shell.
                let target = program[i + 1..].trim_start_matches(['&', ' ', '\t']);
                let shell = [
                    "\"sh",
                    "\"bash",
                    "\"/bin/sh",
                    "\"/bin/bash",
                    "\"zsh",
                    "\"dash",
                ]
                .iter()
                .any(|s| {
                    target
                        .strip_prefix(s)
                        .is_some_and(|rest| rest.starts_with(['"', ' ']))
                });
                let to_command = print_depth.is_some() && shell;
                note(
                    Escape {
                        reason: "the awk program pipes to or from a command (`|`); approve it if \
                                 the command is harmless",
                        runs_input: to_command,
                    },
                    &mut escape,
                );
            }
            b'@' => note(
                Escape::asks(
                    "the awk program uses gawk's `@` (an indirect call, `@load` or `@include`), \
                     which is not analysed",
                ),
                &mut escape,
            ),
            b'>' if print_depth.is_some_and(|d| d == depth) => note(
                Escape::asks(
                    "the awk program writes its output to a file (`print > FILE`); redirect the \
                     command's output instead, or approve it",
                ),
                &mut escape,
            ),
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' | b'\n' | b'{' | b'}' => print_depth = None,
            _ => {}
        }
        if b.is_ascii_alphabetic() || b == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            match &program[start..i] {
                "print" | "printf" => print_depth = Some(depth),
                "system" => {
                    // `system($0)`, `system("sh " $1)`: what is run comes
                    // from the input.
                    let call = &program[i..];
                    let end = call.find(')').unwrap_or(call.len());
                    note(
                        Escape {
                            reason: "the awk program runs a command (`system()`); approve it if \
                                     the command is harmless",
                            runs_input: call[..end].contains('$'),
                        },
                        &mut escape,
                    );
                }
                "getline" => note(
                    Escape::asks(
                        "the awk program reads with `getline` (from a command or a named file), \
                         which is not analysed",
                    ),
                    &mut escape,
                ),
                "ENVIRON" | "PROCINFO" => note(
                    Escape::asks(
                        "the awk program reads the environment (`ENVIRON`/`PROCINFO`), which holds \
                         secrets",
                    ),
                    &mut escape,
                ),
                "ARGV" | "SYMTAB" | "FUNCTAB" => note(
                    Escape::asks(
                        "the awk program changes or reads `ARGV`/`SYMTAB` (which files are read, \
                         which variables are reached), which is not analysed",
                    ),
                    &mut escape,
                ),
                _ => {}
            }
            after_operand = true;
            continue;
        }
        after_operand = b.is_ascii_digit() || matches!(b, b')' | b']' | b'$');
        i += 1;
    }
    escape
}

/// Why a jq filter reaches beyond the JSON it reads: the environment
/// (`env`, `$ENV`), modules loaded from files (`import`, `include`).
pub(crate) fn jq_escape(filter: &str) -> Option<&'static str> {
    let mut tokens = filter.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'));
    tokens.find_map(|token| match token {
        "env" | "$ENV" => Some("jq reads the environment (`env`, `$ENV`), which holds secrets"),
        "import" | "include" => {
            Some("jq loads a module from a file (`import`, `include`), which is not analysed")
        }
        _ => None,
    })
}
