//! The command safety classifier (seed 002, wall four).
//!
//! A command line is parsed as shell (see `shell_parse`), split into simple
//! commands, and each one is judged after its wrappers (`sudo`, `env`,
//! `nohup`, `nice`, `time`, `timeout`, `command`, `builtin`, `exec`,
//! `stdbuf`, `xargs`) are peeled off. Nested scripts (`bash -c '…'`, `eval`,
//! here-documents fed to a shell, `find -exec … \;`) are parsed and judged
//! too. The level of the whole is the maximum of its parts, and five
//! catastrophic literals are checked on the raw text independently.

use serde::Serialize;

use crate::SafetyLevel::{self, Dangerous, RequiresApproval, Safe, WorkspaceSafe};
use crate::arity::canonical_prefix;
use crate::catastrophic::catastrophic_reason;
use crate::net_commands::{NETWORK_REASON, needs_network};
use crate::program_rules::{PathJudge, Verdict, program_verdict};
use crate::shell_parse::{RedirectKind, SimpleCommand, Word, parse};
use crate::ws_path::normalize;

/// Deepest nesting of `bash -c`, `eval` and here-documents that is followed;
/// deeper nesting needs approval.
pub const MAX_NESTING: usize = 8;

/// Longest command, in bytes, that is parsed; longer ones need approval.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// One simple command found in a command line, with its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// Source text of the simple command as written (wrappers included,
    /// redirections excluded).
    pub text: String,
    /// Program and arguments after wrappers are removed; quotes and escapes
    /// resolved; a program given by a standard system path (`/usr/bin/git`)
    /// is reduced to its name. Run-time values keep their literal text
    /// (`$HOME`).
    pub argv: Vec<String>,
    /// Wrappers that were removed, outermost first (`sudo`, `env`, …).
    pub wrappers: Vec<String>,
    /// Arity-aware canonical prefix (`git status`), see [`canonical_prefix`].
    pub prefix: String,
    /// The level of this simple command, redirections included.
    pub level: SafetyLevel,
    /// Why it has this level.
    pub reason: String,
    /// True when this command needs the network ([`needs_network`]).
    pub needs_network: bool,
    /// 0 for commands of the line itself, 1 inside `bash -c '…'`, and so on.
    pub depth: usize,
    /// Level contributed by redirections alone (`Safe` when none write).
    /// Exec-policy allow rules cover the command, not where it writes.
    #[serde(skip)]
    pub redirect_level: SafetyLevel,
}

/// The classifier's answer for a whole command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classification {
    /// Maximum level over all segments and whole-line checks.
    pub level: SafetyLevel,
    /// Why: the reason of the part that set the level, prefixed with its text.
    pub reason: String,
    /// The simple commands in reading order (nested ones after their host).
    pub segments: Vec<Segment>,
    /// False when the grammar could not parse the line (level is then at
    /// least `RequiresApproval`).
    pub parsed: bool,
}

/// Classifies `command` for a session whose workspace root is `workspace`
/// (an absolute path string; nothing is read from disk).
///
/// Unknown commands are `RequiresApproval`; so are unparseable lines, lines
/// longer than [`MAX_COMMAND_BYTES`], nesting deeper than [`MAX_NESTING`],
/// network access, writes outside the workspace and history-destroying git.
/// `Dangerous` means a catastrophic literal or a pipe into a shell or
/// interpreter.
pub fn classify_command(command: &str, workspace: &str) -> Classification {
    let mut ctx = Ctx {
        workspace: normalize(workspace),
        cwd: Some(normalize(workspace)),
        segments: Vec::new(),
        notes: Vec::new(),
        parsed: true,
    };
    if command.len() > MAX_COMMAND_BYTES {
        ctx.note(
            RequiresApproval,
            "the command is too long to analyse".to_string(),
        );
    } else {
        ctx.script(command, 0);
    }
    if let Some(reason) = catastrophic_reason(command) {
        ctx.note(Dangerous, reason.to_string());
    }
    ctx.finish()
}

struct Ctx {
    workspace: String,
    cwd: Option<String>,
    segments: Vec<Segment>,
    notes: Vec<(SafetyLevel, String)>,
    parsed: bool,
}

/// The program words after wrappers are removed.
struct Unwrapped {
    words: Vec<Word>,
    wrappers: Vec<String>,
    verdict: Option<Verdict>,
    /// `command -v`, `sudo -l` and friends: nothing is executed.
    query_only: bool,
}

const SHELLS: &[&str] = &["ash", "bash", "dash", "fish", "ksh", "mksh", "sh", "zsh"];

const STANDARD_BIN_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/opt/homebrew/bin",
];

impl Ctx {
    fn note(&mut self, level: SafetyLevel, reason: String) {
        self.notes.push((level, reason));
    }

    fn finish(self) -> Classification {
        let mut level = Safe;
        let mut reason = String::new();
        for segment in &self.segments {
            if segment.level > level || (reason.is_empty() && segment.level >= level) {
                level = segment.level;
                reason = format!("`{}`: {}", segment.text, segment.reason);
            }
        }
        for (note_level, note) in &self.notes {
            if *note_level > level || (*note_level == level && self.segments.is_empty()) {
                level = *note_level;
                reason = note.clone();
            }
        }
        if reason.is_empty() {
            reason = "nothing to run".to_string();
        }
        Classification {
            level,
            reason,
            segments: self.segments,
            parsed: self.parsed,
        }
    }

    fn script(&mut self, source: &str, depth: usize) {
        if depth > MAX_NESTING {
            self.note(
                RequiresApproval,
                "scripts are nested too deeply to analyse".to_string(),
            );
            return;
        }
        if depth > 0
            && let Some(reason) = catastrophic_reason(source)
        {
            self.note(Dangerous, reason.to_string());
        }
        let parsed = parse(source);
        if !parsed.ok {
            self.parsed = false;
            self.note(
                RequiresApproval,
                "the command could not be parsed as shell".to_string(),
            );
        }
        if parsed.defines_function {
            self.note(RequiresApproval, "defines a shell function".to_string());
        }
        for command in parsed.commands {
            self.simple(&command, depth);
        }
    }

    fn judge(&self) -> PathJudge<'_> {
        PathJudge {
            workspace: &self.workspace,
            cwd: self.cwd.as_deref(),
        }
    }

    fn simple(&mut self, command: &SimpleCommand, depth: usize) {
        let redirect = self.redirect_verdict(command);
        let unwrapped = unwrap(&command.words);
        let index = self.segments.len();
        let argv: Vec<String> = unwrapped.words.iter().map(|w| w.text.clone()).collect();
        let mut verdict = if command.words.is_empty() {
            Verdict::new(Safe, "only sets variables or redirects")
        } else if unwrapped.query_only {
            Verdict::new(Safe, "only looks a command up")
        } else {
            self.program(&unwrapped.words, command, depth)
        };
        if let Some(wrapper) = &unwrapped.verdict
            && wrapper.level > verdict.level
        {
            verdict = wrapper.clone();
        }
        if argv
            .iter()
            .skip(1)
            .any(|a| crate::ws_path::is_credential(a))
            && verdict.level < RequiresApproval
        {
            verdict = Verdict::new(RequiresApproval, "touches a credential file");
        }
        let network = !unwrapped.query_only && needs_network(&argv);
        if network && verdict.level < RequiresApproval {
            verdict = Verdict::new(RequiresApproval, NETWORK_REASON);
        }
        let mut level = verdict.level;
        let mut reason = verdict.reason.into_owned();
        if redirect.level > level {
            level = redirect.level;
            reason = redirect.reason.to_string();
        }
        // The catastrophic literals again, on the unquoted words.
        if argv.first().is_some_and(|p| p == "rm")
            && let Some(catastrophic) = catastrophic_reason(&argv.join(" "))
        {
            level = Dangerous;
            reason = catastrophic.to_string();
        }
        let prefix = canonical_prefix(&argv).text;
        self.segments.insert(
            index.min(self.segments.len()),
            Segment {
                text: command.text.clone(),
                argv,
                wrappers: unwrapped.wrappers,
                prefix,
                level,
                reason,
                needs_network: network,
                depth,
                redirect_level: redirect.level,
            },
        );
    }

    fn redirect_verdict(&self, command: &SimpleCommand) -> Verdict {
        let judge = self.judge();
        let writes: Vec<&Word> = command
            .redirects
            .iter()
            .filter(|r| r.kind == RedirectKind::Write)
            .map(|r| &r.target)
            .collect();
        let reads_credential = command
            .redirects
            .iter()
            .any(|r| r.kind == RedirectKind::Read && crate::ws_path::is_credential(&r.target.text));
        if command.redirects.iter().any(|r| {
            r.target.text.starts_with("/dev/tcp/") || r.target.text.starts_with("/dev/udp/")
        }) {
            return Verdict::new(RequiresApproval, NETWORK_REASON);
        }
        if reads_credential {
            return Verdict::new(RequiresApproval, "reads a credential file");
        }
        if writes.is_empty() {
            return Verdict::new(Safe, "no redirection");
        }
        judge.writes(writes)
    }

    /// Judges the program in `words` (wrappers already removed).
    fn program(&mut self, words: &[Word], command: &SimpleCommand, depth: usize) -> Verdict {
        let Some(first) = words.first() else {
            return Verdict::new(Safe, "no command after the wrappers");
        };
        if first.dynamic {
            return Verdict::new(
                RequiresApproval,
                "the program name is only known at run time",
            );
        }
        let Some(program) = program_name(&first.text) else {
            return Verdict::new(RequiresApproval, "runs a program by path");
        };
        let args = &words[1..];
        match program {
            "cd" => {
                self.change_dir(args);
                Verdict::new(Safe, "changes directory")
            }
            p if SHELLS.contains(&p) => self.shell(args, command, depth),
            "eval" => self.eval(args, depth),
            "source" | "." => {
                if args.first().is_some_and(|w| w.text.starts_with("<(")) {
                    Verdict::new(Dangerous, "runs code produced by a process substitution")
                } else {
                    Verdict::new(RequiresApproval, "runs a script file in the current shell")
                }
            }
            "find" => self.find(args, command, depth),
            p if interpreter_kind(p).is_some() => self.interpreter(p, args, command, depth),
            p => match program_verdict(p, args, self.judge()) {
                Some(verdict) => verdict,
                None if needs_network(
                    &words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(),
                ) =>
                {
                    Verdict::new(RequiresApproval, NETWORK_REASON)
                }
                None => Verdict::new(RequiresApproval, "unknown command"),
            },
        }
    }

    fn change_dir(&mut self, args: &[Word]) {
        let target = args
            .iter()
            .find(|w| !w.text.starts_with('-') || w.text == "-");
        self.cwd = match (target, self.cwd.as_deref()) {
            (Some(w), _) if w.dynamic || w.text.starts_with('~') || w.text == "-" => None,
            (Some(w), _) if w.text.starts_with('/') => Some(normalize(&w.text)),
            (Some(w), Some(cwd)) => Some(normalize(&format!("{cwd}/{}", w.text))),
            _ => None,
        };
    }

    fn shell(&mut self, args: &[Word], command: &SimpleCommand, depth: usize) -> Verdict {
        let mut index = 0;
        let mut wants_script = false;
        let mut reads_stdin = false;
        while index < args.len() {
            let text = args[index].text.as_str();
            if text == "--" {
                index += 1;
                break;
            }
            if (text.starts_with('-') || text.starts_with('+')) && text.len() > 1 {
                if !text.starts_with("--") && text.contains('c') {
                    wants_script = true;
                }
                if !text.starts_with("--") && text.contains('s') {
                    reads_stdin = true;
                }
                if text == "-o" || text == "+o" || text == "-O" || text == "+O" {
                    index += 1;
                }
                index += 1;
                continue;
            }
            break;
        }
        let operand = if reads_stdin && !wants_script {
            None
        } else {
            args.get(index)
        };
        if wants_script {
            let Some(script) = operand else {
                return Verdict::new(RequiresApproval, "shell -c without a script");
            };
            return self.nested(script, depth, "runs the nested script (judged separately)");
        }
        if let Some(file) = operand {
            if file.text.starts_with("<(") {
                return Verdict::new(Dangerous, "runs code produced by a process substitution");
            }
            return Verdict::new(RequiresApproval, "runs a script file");
        }
        if command.piped_input {
            return Verdict::new(Dangerous, "pipes data into a shell interpreter");
        }
        if let Some(body) = &command.stdin_text {
            self.script(body, depth + 1);
            if command.stdin_unparsed_substitution {
                return Verdict::new(
                    RequiresApproval,
                    "the here-document expands backticks that were not analysed",
                );
            }
            return Verdict::new(Safe, "runs the here-document (judged separately)");
        }
        Verdict::new(RequiresApproval, "starts an interactive shell")
    }

    /// Judges a script given as one word (`bash -c WORD`, `eval WORD`).
    fn nested(&mut self, script: &Word, depth: usize, ok_reason: &'static str) -> Verdict {
        if script.substitution {
            return Verdict::new(
                Dangerous,
                "runs a script built at run time by a substitution",
            );
        }
        if script.dynamic {
            return Verdict::new(RequiresApproval, "runs a script only known at run time");
        }
        self.script(&script.text, depth + 1);
        Verdict::new(Safe, ok_reason)
    }

    fn eval(&mut self, args: &[Word], depth: usize) -> Verdict {
        let joined = Word {
            text: args
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            dynamic: args.iter().any(|w| w.dynamic),
            substitution: args.iter().any(|w| w.substitution),
        };
        self.nested(
            &joined,
            depth,
            "evaluates the nested script (judged separately)",
        )
    }

    fn find(&mut self, args: &[Word], command: &SimpleCommand, depth: usize) -> Verdict {
        let mut verdict = Verdict::new(Safe, "only searches");
        // Paths found under roots inside the workspace stay inside it.
        let roots: Vec<&Word> = args
            .iter()
            .take_while(|w| !w.text.starts_with('-') && w.text != "(" && w.text != "!")
            .collect();
        let judge = self.judge();
        let found_inside = !roots.is_empty()
            && roots
                .iter()
                .all(|r| judge.place(r) == crate::ws_path::PathPlace::Inside);
        let mut index = 0;
        while index < args.len() {
            let text = args[index].text.as_str();
            match text {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let start = index + 1;
                    let mut end = start;
                    while end < args.len() && args[end].text != ";" && args[end].text != "+" {
                        end += 1;
                    }
                    let inner: Vec<Word> = args[start..end]
                        .iter()
                        .map(|w| {
                            if w.text.contains("{}") && found_inside {
                                Word::literal(&w.text.replace("{}", "./found"))
                            } else if w.text.contains("{}") {
                                Word {
                                    dynamic: true,
                                    ..w.clone()
                                }
                            } else {
                                w.clone()
                            }
                        })
                        .collect();
                    let nested = SimpleCommand {
                        text: inner
                            .iter()
                            .map(|w| w.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" "),
                        words: inner,
                        ..SimpleCommand::default()
                    };
                    self.simple(&nested, depth + 1);
                    index = end + 1;
                    continue;
                }
                "-delete" => {
                    verdict = Verdict::new(RequiresApproval, "deletes the files it finds");
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    let written = self.judge().writes(args.get(index + 1));
                    if written.level > verdict.level {
                        verdict = written;
                    }
                }
                _ => {}
            }
            index += 1;
        }
        let _ = command;
        verdict
    }

    fn interpreter(
        &mut self,
        program: &str,
        args: &[Word],
        command: &SimpleCommand,
        depth: usize,
    ) -> Verdict {
        let _ = depth;
        let kind = interpreter_kind(program).unwrap_or(InterpreterKind::Other);
        if !args.is_empty()
            && args
                .iter()
                .all(|w| matches!(w.text.as_str(), "--version" | "-V" | "--help" | "-h" | "-v"))
        {
            return Verdict::new(Safe, "prints version or help");
        }
        let inline_flags: &[&str] = match kind {
            InterpreterKind::Python => &["-c"],
            InterpreterKind::Node => &["-e", "--eval", "-p", "--print"],
            InterpreterKind::Perl => &["-e", "-E"],
            InterpreterKind::Ruby | InterpreterKind::Other => &["-e"],
            InterpreterKind::Php => &["-r"],
        };
        let mut inline = false;
        let mut module: Option<&str> = None;
        let mut script: Option<&Word> = None;
        let mut iter = args.iter();
        while let Some(word) = iter.next() {
            let text = word.text.as_str();
            if inline_flags.contains(&text)
                || (kind == InterpreterKind::Perl
                    && text.starts_with('-')
                    && !text.starts_with("--")
                    && text.contains(['e', 'E']))
            {
                inline = true;
                break;
            }
            if kind == InterpreterKind::Python && text == "-m" {
                module = iter.next().map(|w| w.text.as_str());
                break;
            }
            if text == "-" {
                script = Some(word);
                break;
            }
            if text.starts_with('-') && text.len() > 1 {
                continue;
            }
            script = Some(word);
            break;
        }
        let reads_program_from_stdin =
            !inline && module.is_none() && script.is_none_or(|w| w.text == "-");
        if command.piped_input
            && (reads_program_from_stdin || (inline && kind == InterpreterKind::Perl))
        {
            return Verdict::new(Dangerous, "pipes data into an interpreter");
        }
        if let Some(file) = script
            && file.text.starts_with("<(")
        {
            return Verdict::new(Dangerous, "runs code produced by a process substitution");
        }
        if inline {
            return Verdict::new(RequiresApproval, "runs inline code");
        }
        if let Some(module) = module {
            return python_module_verdict(module, args, self.judge());
        }
        if reads_program_from_stdin {
            if command.stdin_text.is_some() {
                return Verdict::new(RequiresApproval, "runs code from a here-document");
            }
            return Verdict::new(RequiresApproval, "starts an interactive interpreter");
        }
        Verdict::new(RequiresApproval, "runs a script")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InterpreterKind {
    Python,
    Node,
    Perl,
    Ruby,
    Php,
    Other,
}

fn interpreter_kind(program: &str) -> Option<InterpreterKind> {
    let python = program == "python"
        || program == "pypy"
        || program == "pypy3"
        || program
            .strip_prefix("python")
            .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if python {
        return Some(InterpreterKind::Python);
    }
    match program {
        "node" | "nodejs" | "deno" => Some(InterpreterKind::Node),
        "perl" => Some(InterpreterKind::Perl),
        "ruby" | "irb" => Some(InterpreterKind::Ruby),
        "php" => Some(InterpreterKind::Php),
        "lua" | "luajit" | "Rscript" | "tclsh" | "osascript" => Some(InterpreterKind::Other),
        _ => None,
    }
}

fn python_module_verdict(module: &str, args: &[Word], judge: PathJudge<'_>) -> Verdict {
    match module {
        "pytest" | "unittest" | "mypy" | "black" | "ruff" | "pylint" | "flake8" | "isort"
        | "compileall" | "py_compile" | "doctest" | "venv" | "virtualenv" | "build" => {
            Verdict::new(WorkspaceSafe, "builds, tests or checks the project")
        }
        "json.tool" | "pydoc" | "platform" | "site" | "sysconfig" | "tabnanny" | "this" => {
            Verdict::new(Safe, "only reads or prints")
        }
        "pip" => {
            let start = args
                .iter()
                .position(|w| w.text == "pip")
                .map_or(args.len(), |i| i + 1);
            program_verdict("pip", &args[start..], judge)
                .unwrap_or_else(|| Verdict::new(RequiresApproval, "unknown pip sub-command"))
        }
        _ => Verdict::new(RequiresApproval, "runs a Python module"),
    }
}

/// The name to look a program up by: `/usr/bin/git` → `git`; a program given
/// by any other path (`./git`, `bin/tool`) has no trusted name.
fn program_name(text: &str) -> Option<&str> {
    match text.rsplit_once('/') {
        None => Some(text),
        Some((dir, name)) if STANDARD_BIN_DIRS.contains(&dir) && !name.is_empty() => Some(name),
        Some(_) => None,
    }
}

/// Unicode dashes a pasted command may carry instead of `-`.
const DASHES: &[char] = &[
    '\u{2010}', '\u{2011}', '\u{2012}', '\u{2013}', '\u{2014}', '\u{2015}', '\u{2212}', '\u{FE63}',
    '\u{FF0D}',
];

/// Judging copy of a word: Unicode dashes read as `-`, so `git reset ‐‐hard`
/// is judged like `git reset --hard`.
fn judging_word(word: &Word) -> Word {
    if word.text.is_ascii() {
        return word.clone();
    }
    Word {
        text: word.text.replace(DASHES, "-"),
        ..word.clone()
    }
}

/// Peels wrappers off `words`.
fn unwrap(words: &[Word]) -> Unwrapped {
    let mut out = Unwrapped {
        words: Vec::new(),
        wrappers: Vec::new(),
        verdict: None,
        query_only: false,
    };
    let mut rest: Vec<Word> = words.iter().map(judging_word).collect();
    while let Some(first) = rest.first() {
        if first.dynamic {
            break;
        }
        let Some(name) = program_name(&first.text).map(str::to_string) else {
            break;
        };
        let (skip, value_flags): (usize, &[&str]) = match name.as_str() {
            "sudo" | "doas" => (
                1,
                &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"],
            ),
            "env" => (1, &["-u", "--unset", "-C", "--chdir"]),
            "nice" => (1, &["-n", "--adjustment"]),
            "time" => (1, &["-f", "--format", "-o", "--output"]),
            "nohup" | "builtin" | "setsid" | "unbuffer" => (1, &[]),
            "exec" => (1, &["-a"]),
            "command" => (1, &[]),
            "stdbuf" => (1, &["-i", "-o", "-e"]),
            "ionice" => (1, &["-c", "-n", "-p"]),
            "timeout" => (1, &["-s", "--signal", "-k", "--kill-after"]),
            "xargs" => (
                1,
                &[
                    "-I",
                    "-i",
                    "-n",
                    "-P",
                    "-L",
                    "-l",
                    "-s",
                    "-d",
                    "-E",
                    "-e",
                    "-a",
                    "--arg-file",
                    "--delimiter",
                    "--max-args",
                    "--max-procs",
                    "--replace",
                    "--max-lines",
                ],
            ),
            _ => break,
        };
        let mut index = skip;
        let mut replace: Option<String> = None;
        while index < rest.len() {
            let text = rest[index].text.as_str();
            if text == "--" {
                index += 1;
                break;
            }
            if name == "env" && !text.starts_with('-') && text.contains('=') {
                index += 1;
                continue;
            }
            if !text.starts_with('-') || text.len() == 1 {
                break;
            }
            if (name == "command") && (text == "-v" || text == "-V") {
                out.query_only = true;
            }
            if (name == "sudo" || name == "doas")
                && matches!(text, "-l" | "-v" | "-k" | "-K" | "-e" | "-s" | "-i")
            {
                out.verdict = Some(Verdict::new(
                    RequiresApproval,
                    "runs with elevated privileges",
                ));
            }
            if name == "env" && (text == "-S" || text.starts_with("--split-string")) {
                out.verdict = Some(Verdict::new(
                    RequiresApproval,
                    "env -S runs a command split from a string",
                ));
            }
            if name == "xargs" && (text == "-I" || text == "-i" || text == "--replace") {
                replace = rest.get(index + 1).map(|w| w.text.clone());
            }
            if value_flags.contains(&text) {
                index += 1;
            }
            index += 1;
        }
        if name == "timeout" && index < rest.len() {
            index += 1; // the duration
        }
        if name == "nice"
            && rest.get(1).is_some_and(|w| {
                w.text.starts_with('-') && w.text[1..].chars().all(|c| c.is_ascii_digit())
            })
        {
            index = index.max(2);
        }
        out.wrappers.push(name.clone());
        if name == "sudo" || name == "doas" {
            let level = Verdict::new(RequiresApproval, "runs with elevated privileges");
            out.verdict.get_or_insert(level);
        }
        let mut inner: Vec<Word> = rest[index.min(rest.len())..].to_vec();
        if name == "xargs" {
            if inner.is_empty() {
                inner.push(Word::literal("echo"));
            }
            match &replace {
                Some(token) => {
                    for word in inner.iter_mut().skip(1) {
                        if word.text.contains(token.as_str()) {
                            word.dynamic = true;
                        }
                    }
                }
                None => inner.push(Word {
                    text: "{input}".to_string(),
                    dynamic: true,
                    substitution: false,
                }),
            }
        }
        rest = inner;
        if out.query_only {
            break;
        }
    }
    if let Some(first) = rest.first_mut()
        && !first.dynamic
        && let Some(name) = program_name(&first.text)
    {
        first.text = name.to_string();
    }
    out.words = rest;
    out
}
