//! The command safety classifier.
//!
//! A command line is parsed as shell (see `shell_parse`), split into simple
//! commands, and each one is judged after its wrappers (`sudo`, `env`,
//! `nohup`, `nice`, `time`, `timeout`, `command`, `builtin`, `exec`,
//! `stdbuf`, `xargs`) are peeled off. Nested scripts (`bash -c '…'`, `eval`,
//! here-documents fed to a shell, `find -exec … \;`) are parsed and judged
//! too. The level of the whole is the maximum of its parts. An allow is
//! earned (every word understood, every variable inert, every program and
//! option on an allow-list); the deny floor is judged on the decoded argv,
//! and the raw text is checked only when the line does not parse.

use serde::Serialize;

use crate::SafetyLevel::{self, Ask, Dangerous, Safe, WorkspaceSafe};
use crate::arity::canonical_prefix;
use crate::catastrophic::catastrophic_reason;
use crate::net_commands::{NETWORK_REASON, needs_network};
use crate::path_text::normalize_path;
use crate::program_rules::{PathJudge, SegmentJudgement, program_judgement};
use crate::shell_parse::{RedirectKind, SimpleCommand, Word, parse};
use crate::ws_path::{PathFacts, SystemPaths};

/// Deepest nesting of `bash -c`, `eval` and here-documents that is followed;
/// deeper nesting needs approval.
pub const MAX_NESTING: usize = 8;

/// Longest command, in bytes, that is parsed; longer ones need approval.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// One simple command found in a command line, with its judgement.
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
    /// The names of the environment variables the command line sets for this command
    /// (`PATH=./bin npm test`, `env PATH=bin npm test` → `["PATH"]`), in order.
    pub assignments: Vec<String>,
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
    /// Why the exec policy cannot name every program this command may start from the text,
    /// when it cannot: its program word is only known at run time (`$T x`, `command "$@"`),
    /// a program the policy does not know is given a word only known at run time, it runs a
    /// file in the current shell (`source`, `.`, start-up files), it changes what later
    /// commands run (`alias`, `trap`, `PATH=`), or its judgement found code it does not see
    /// (`git -c`, `env -S`, a write to a git hook). Deny rules cannot be checked against
    /// such a command (see [`crate::decide`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_unseen: Option<&'static str>,
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
    /// least `Ask`).
    pub parsed: bool,
    /// The first part of the line the policy could not read, when there is one: a line
    /// that does not parse, is too long or nests too deeply, or a construct across commands
    /// it does not analyse (a substitution in a here-document, arithmetic on data read
    /// earlier), whatever the segments say.
    pub line_note: Option<String>,
}

/// Classifies `command` for a session whose workspace root is `workspace`
/// (an absolute path string), looking at the real file system only to
/// follow symlinks ([`SystemPaths`]). See [`classify_command_with`].
pub fn classify_command(command: &str, workspace: &str) -> Classification {
    thread_local! {
        /// The last workspace root and where it resolves: a session asks
        /// about one root many times, and it does not move under it.
        static ROOT: std::cell::RefCell<Option<(String, String)>> =
            const { std::cell::RefCell::new(None) };
    }
    let facts = SystemPaths::new();
    let root = ROOT.with(|cell| {
        let mut slot = cell.borrow_mut();
        match slot.as_ref() {
            Some((ws, root)) if ws == workspace => root.clone(),
            _ => {
                let root = facts.resolve(&normalize_path(workspace));
                *slot = Some((workspace.to_string(), root.clone()));
                root
            }
        }
    });
    classify_resolved(command, root, &facts)
}

/// Classifies `command` with what `facts` tells about the file system and
/// the task's snapshot.
///
/// An allow is earned: `Safe` / `WorkspaceSafe` only when every word is
/// understood (literal, quoted, decoded `$'…'`, brace-expanded, or a plain
/// `$NAME` / `${NAME}`), every variable set is on the inert list, and every
/// program is on an allow-list with the options it was given. Everything
/// else is `Ask` with a reason naming what was not understood:
/// unknown commands and options, unparseable lines, lines longer than
/// [`MAX_COMMAND_BYTES`], nesting deeper than [`MAX_NESTING`], network
/// access, writes outside the workspace or under `.git/` / `.codesmith/`,
/// deletions no snapshot holds, history-destroying git. `Dangerous` means a
/// catastrophic deletion, a fork bomb, or a pipe into a shell or
/// interpreter, all judged on what will really run (decoded argv), never on
/// text quoted as data.
pub fn classify_command_with(
    command: &str,
    workspace: &str,
    facts: &dyn PathFacts,
) -> Classification {
    classify_resolved(command, facts.resolve(&normalize_path(workspace)), facts)
}

/// [`classify_command_with`] for a workspace root already resolved.
///
/// With a private `/tmp` ([`PathFacts::private_tmp`]) the line is judged
/// knowing writes and deletions below it are harmless; that answer stands
/// only when the line makes no symlink (every part is [`link_free`]): a
/// link made there at run time (by `ln`, an archive, a tree copy, a build)
/// could lead a later path of the line out of `/tmp`, so otherwise the line
/// is judged again as if `/tmp` were the host's.
///
/// Relative paths are judged from [`PathFacts::start_dir`] when the caller names one
/// (the directory the command really starts in), else from the root.
fn classify_resolved(command: &str, root: String, facts: &dyn PathFacts) -> Classification {
    let start = match facts.start_dir() {
        Some(dir) if dir.starts_with('/') => facts.resolve(&normalize_path(dir)),
        _ => root.clone(),
    };
    if facts.private_tmp() {
        let (sandboxed, used_tmp) =
            classify_once(command, root.clone(), start.clone(), facts, true);
        if !used_tmp || sandboxed.segments.iter().all(link_free) {
            return sandboxed;
        }
    }
    classify_once(command, root, start, facts, false).0
}

/// One pass of the classifier; also says whether a write or deletion was
/// let run because it lands in the private `/tmp`.
fn classify_once(
    command: &str,
    root: String,
    start: String,
    facts: &dyn PathFacts,
    private_tmp: bool,
) -> (Classification, bool) {
    let mut ctx = Ctx {
        cwd: Some(start),
        oldpwd: None,
        cdpath: false,
        workspace: root,
        facts,
        links: Vec::new(),
        subshell_cwd: None,
        segments: Vec::new(),
        notes: Vec::new(),
        parsed: true,
        printed: None,
        moved: false,
        unsure_links: None,
        listed_secret: None,
        unknown_program: false,
        unread: None,
        literal_vars: Vec::new(),
        private_tmp: private_tmp.then(|| std::cell::Cell::new(false)),
        endless_pipe: false,
    };
    if command.len() > MAX_COMMAND_BYTES {
        ctx.unread_note("the command is too long to analyse".to_string());
    } else {
        ctx.script(command, 0);
    }
    let used_tmp = ctx.private_tmp.as_ref().is_some_and(std::cell::Cell::get);
    (ctx.finish(), used_tmp)
}

/// Programs that write only the paths they are given, never a symlink
/// (besides those that only read or print).
const LINK_FREE_WRITERS: &[&str] = &[
    "bunzip2", "bzip2", "chmod", "cp", "find", "gunzip", "gzip", "mkdir", "rm", "rmdir", "sed",
    "shred", "sort", "tee", "touch", "truncate", "uniq", "unlink", "unxz", "xz", "zstd",
];

/// True when `segment` cannot make a symlink: it only reads (`Safe`, or a
/// read-only program whose output is redirected), is a shell whose script
/// is judged as segments of its own, or is one of [`LINK_FREE_WRITERS`]
/// (`cp` only with options that copy file contents: no `-r`, `-a`, `-d`,
/// `-P`, `-s`, `-l`, …).
fn link_free(segment: &Segment) -> bool {
    let Some(program) = segment.argv.first().map(String::as_str) else {
        return true;
    };
    if segment.level == Safe
        || SHELLS.contains(&program)
        || crate::program_rules::is_read_only(program)
    {
        return true;
    }
    if program == "cp" {
        return segment.argv[1..]
            .iter()
            .take_while(|w| *w != "--")
            .filter(|w| w.starts_with('-') && w.len() > 1)
            .all(|w| match w.strip_prefix("--") {
                Some(long) => matches!(
                    long.split('=').next().unwrap_or(""),
                    "force"
                        | "interactive"
                        | "no-clobber"
                        | "update"
                        | "verbose"
                        | "no-target-directory"
                        | "target-directory"
                ),
                None => w[1..].chars().all(|c| "finpuvtT".contains(c)),
            });
    }
    LINK_FREE_WRITERS.binary_search(&program).is_ok()
}

struct Ctx<'f> {
    workspace: String,
    cwd: Option<String>,
    /// The directory before the last `cd` on the line (`~-`, `$OLDPWD`);
    /// `None` when not known (the shell's own `OLDPWD` is not).
    oldpwd: Option<String>,
    /// True once the line sets `CDPATH`: a relative `cd` may then go
    /// anywhere it lists.
    cdpath: bool,
    facts: &'f dyn PathFacts,
    /// Symlinks made earlier on the line (`ln -s T L`): (link, target).
    links: Vec<(String, String)>,
    /// The working directory inside the last `( … )` subshell seen.
    subshell_cwd: Option<(usize, Option<String>)>,
    segments: Vec<Segment>,
    notes: Vec<(SafetyLevel, String)>,
    parsed: bool,
    /// What the last simple command printed, word by word, when it was an
    /// `echo` of literal words (the input of a following `| xargs`).
    printed: Option<Vec<Word>>,
    /// True once a command on the line moved files: a path that does not
    /// exist before the line may then hold the user's data.
    moved: bool,
    /// The first command on the line that may have put symlinks into the
    /// work tree whose targets are not known ([`makes_unknown_links`]).
    unsure_links: Option<String>,
    /// The directory holding credential stores that the previous command
    /// listed file names from, for a piped `xargs` to inherit.
    listed_secret: Option<String>,
    /// Variables a bare assignment on the line set to a literal
    /// (`X=/`), for the catastrophic checks.
    literal_vars: Vec<(String, String)>,
    /// `Some` when judging for a private `/tmp`; set once that was relied on.
    private_tmp: Option<std::cell::Cell<bool>>,
    /// True when the last simple command prints without end into the pipe
    /// (`yes`, `cat /dev/zero`).
    endless_pipe: bool,
    /// True when the program of the command being judged is not known to the classifier
    /// (an unknown name, or a program run by a path), so what it does with its arguments
    /// is not known either.
    unknown_program: bool,
    /// The first part of the line the policy could not read ([`Ctx::unread_note`]).
    unread: Option<String>,
}

/// True when `argv` may create symlinks in the work tree whose targets the
/// classifier does not see: git commands that check out other trees
/// (`checkout`, `switch`, `reset`, `stash`, `merge`, `cherry-pick`,
/// `rebase`, `restore`, `worktree`, `am`, `pull`), and recursive or
/// archive copies (`cp -r`/`-R`/`-a`/`-d`/`-P`), which copy symlinks as
/// symlinks.
fn makes_unknown_links(argv: &[String]) -> bool {
    match argv.first().map(String::as_str) {
        Some("git") => argv
            .iter()
            .skip(1)
            .find(|w| !w.starts_with('-'))
            .is_some_and(|sub| {
                matches!(
                    sub.as_str(),
                    "checkout"
                        | "switch"
                        | "reset"
                        | "stash"
                        | "merge"
                        | "cherry-pick"
                        | "rebase"
                        | "restore"
                        | "worktree"
                        | "am"
                        | "pull"
                        | "revert"
                )
            }),
        Some("cp") => argv.iter().skip(1).any(|w| {
            w.starts_with("--recursive")
                || w.starts_with("--archive")
                || w.starts_with("--no-dereference")
                || (w.starts_with('-')
                    && !w.starts_with("--")
                    && w.contains(['r', 'R', 'a', 'd', 'P']))
        }),
        _ => false,
    }
}

/// `words` with `$NAME`, `${NAME}` (alone or before `/…`) replaced by the
/// literal values `vars` records for them.
fn substitute_literal_vars(words: &[Word], vars: &[(String, String)]) -> Vec<Word> {
    words
        .iter()
        .map(|word| {
            if !word.dynamic || vars.is_empty() {
                return word.clone();
            }
            let mut text = word.text.clone();
            for (name, value) in vars {
                text = text.replace(&format!("${{{name}}}"), value);
                // `$name` ends where a name cannot go on (`$d*`, `$d/x`).
                let plain = format!("${name}");
                let mut out = String::new();
                let mut rest = text.as_str();
                while let Some(at) = rest.find(&plain) {
                    let after = &rest[at + plain.len()..];
                    out.push_str(&rest[..at]);
                    if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                        out.push_str(&plain);
                    } else {
                        out.push_str(value);
                    }
                    rest = after;
                }
                out.push_str(rest);
                text = out;
            }
            if text == word.text {
                return word.clone();
            }
            Word {
                dynamic: text.contains(['$', '`']),
                text,
                ..word.clone()
            }
        })
        .collect()
}

/// The words of the simple command `text` when the shell splits its
/// unquoted `$IFS` (`rm$IFS-rf$IFS/` is `rm -rf /` with the default IFS):
/// the text with each `$IFS` / `${IFS}` written as a blank, parsed again;
/// `None` when it holds none.
fn split_ifs(text: &str) -> Option<Vec<Word>> {
    if !text.contains("$IFS") && !text.contains("${IFS}") {
        return None;
    }
    let respelled = text.replace("${IFS}", " ").replace("$IFS", " ");
    let parsed = parse(&respelled);
    let first = parsed.commands.into_iter().next()?;
    Some(unwrap(&first.words, None).words)
}

/// The program words after wrappers are removed.
struct Unwrapped {
    words: Vec<Word>,
    wrappers: Vec<String>,
    judgement: Option<SegmentJudgement>,
    /// `command -v`, `sudo -l` and friends: nothing is executed.
    query_only: bool,
    /// `env NAME=value` assignments, judged like `NAME=value cmd`.
    assignments: Vec<(String, Word)>,
    /// Paths a wrapper writes (`time -o FILE`).
    writes: Vec<Word>,
    /// Paths a wrapper reads (`xargs -a FILE`).
    reads: Vec<Word>,
    /// The directory a wrapper runs the command in (`env -C DIR`), as written.
    chdir: Option<Word>,
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

impl Ctx<'_> {
    fn note(&mut self, level: SafetyLevel, reason: String) {
        self.notes.push((level, reason));
    }

    /// A note about a part of the line the policy could not read (see
    /// [`Classification::line_note`]).
    fn unread_note(&mut self, reason: String) {
        self.unread.get_or_insert_with(|| reason.clone());
        self.note(Ask, reason);
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
        let line_note = self.unread.clone();
        Classification {
            level,
            reason,
            segments: self.segments,
            parsed: self.parsed,
            line_note,
        }
    }

    fn script(&mut self, source: &str, depth: usize) {
        if depth > MAX_NESTING {
            self.unread_note("scripts are nested too deeply to analyse".to_string());
            return;
        }
        let parsed = parse(source);
        if !parsed.ok {
            self.parsed = false;
            self.unread_note("the command could not be parsed as shell".to_string());
            // What did parse is judged below; the raw text is the only
            // thing left to check for the catastrophic shapes.
            if let Some(reason) = catastrophic_reason(source) {
                self.note(Dangerous, reason.to_string());
            }
        }
        if parsed.fork_bomb {
            self.note(
                Dangerous,
                "a fork bomb: a function that starts itself in the background".to_string(),
            );
        }
        match parsed.fork_loop {
            Some(true) => self.note(
                Dangerous,
                "a fork bomb: a loop without end that starts the script itself (`$0`) in the \
                 background"
                    .to_string(),
            ),
            Some(false) => self.note(
                Ask,
                "a loop without end that starts commands in the background (they pile up until \
                 the machine runs out of processes); bound the loop, or approve it"
                    .to_string(),
            ),
            None => {}
        }
        if parsed.defines_function {
            self.note(Ask, "defines a shell function".to_string());
        }
        for construct in &parsed.constructs {
            self.unread_note(format!("uses {construct}, which is not analysed"));
        }
        // A loop variable stands for these words wherever the body uses it.
        // (Substitutions there are commands of their own, judged below.)
        let loop_read = self
            .judge()
            .reads(parsed.loop_words.iter().filter(|w| w.opaque.is_none()));
        if loop_read.level > Safe {
            self.note(
                loop_read.level,
                format!(
                    "a loop variable stands for what it {}",
                    loop_read.reason.replacen("reads ", "names: ", 1)
                ),
            );
        }
        for command in parsed.commands {
            self.simple(&command, depth);
        }
    }

    /// When `argv` lists file names (`find`, `fd`, `ls`, `locate`) from a
    /// directory holding credential stores or a dotenv file, that directory.
    fn listing_of_secrets(&self, argv: &[String], words: &[Word]) -> Option<String> {
        let args = words.get(1..)?;
        let roots: Vec<&Word> = match argv.first()?.as_str() {
            "locate" | "plocate" | "mlocate" => return Some("/".to_string()),
            "find" => args
                .iter()
                .skip_while(|w| matches!(w.text.as_str(), "-H" | "-L" | "-P"))
                .take_while(|w| !w.text.starts_with(['-', '(', '!']))
                .collect(),
            "fd" | "fdfind" => args
                .iter()
                .filter(|w| !w.text.starts_with('-'))
                .skip(1)
                .collect(),
            "ls" | "tree" => args.iter().filter(|w| !w.text.starts_with('-')).collect(),
            _ => return None,
        };
        let judge = self.judge();
        if roots.iter().any(|r| {
            crate::ws_path::is_credential(&r.text)
                || judge
                    .resolve(r)
                    .is_some_and(|p| crate::ws_path::is_credential(&p))
        }) {
            return roots.first().map(|r| r.text.clone());
        }
        judge.credential_holder(&roots)
    }

    /// `command` with each `$(git ls-files PATHSPEC…)` word (no options:
    /// tracked files only) standing for the files it lists: paths below
    /// the working directory inside the workspace, as a glob there would
    /// (`*`). `None` when there is none, or the working directory is not
    /// known to be inside the workspace.
    fn tracked_listing(&self, command: &SimpleCommand) -> Option<SimpleCommand> {
        let inside = self
            .cwd
            .as_deref()
            .is_some_and(|cwd| crate::ws_path::within(cwd, &self.workspace));
        let is_listing = |w: &Word| {
            let inner = w.text.strip_prefix("$(")?.strip_suffix(')')?;
            let parsed = parse(inner);
            let [only] = parsed.commands.as_slice() else {
                return None;
            };
            let words: Vec<&str> = only.words.iter().map(|w| w.text.as_str()).collect();
            (parsed.ok
                && only.redirects.is_empty()
                && only.assignments.is_empty()
                && words.len() >= 2
                && words[0] == "git"
                && words[1] == "ls-files"
                && only.words[2..]
                    .iter()
                    .all(|w| !w.dynamic && (!w.text.starts_with('-') || w.text == "--")))
            .then_some(())
        };
        if !inside
            || !command
                .words
                .iter()
                .any(|w| w.opaque == Some("a command substitution") && is_listing(w).is_some())
        {
            return None;
        }
        let mut replaced = command.clone();
        for word in &mut replaced.words {
            if word.opaque == Some("a command substitution") && is_listing(word).is_some() {
                *word = Word::literal("*");
            }
        }
        Some(replaced)
    }

    fn judge(&self) -> PathJudge<'_> {
        PathJudge {
            workspace: &self.workspace,
            cwd: self.cwd.as_deref(),
            oldpwd: self.oldpwd.as_deref(),
            trust_absence: !self.moved,
            unsure_links: self.unsure_links.as_deref(),
            facts: self.facts,
            links: &self.links,
            private_tmp: self.private_tmp.as_ref(),
        }
    }

    fn simple(&mut self, command: &SimpleCommand, depth: usize) {
        if command.subshell == 0 {
            self.simple_here(command, depth);
            return;
        }
        // A subshell starts from the outer directory; its `cd` stays inside.
        let outer = self.cwd.clone();
        if let Some((id, cwd)) = &self.subshell_cwd
            && *id == command.subshell
        {
            self.cwd = cwd.clone();
        }
        self.simple_here(command, depth);
        self.subshell_cwd = Some((command.subshell, self.cwd.take()));
        self.cwd = outer;
    }

    fn simple_here(&mut self, command: &SimpleCommand, depth: usize) {
        self.unknown_program = false;
        let listed;
        let command = match self.tracked_listing(command) {
            Some(replaced) => {
                listed = replaced;
                &listed
            }
            None => command,
        };
        self.cdpath |= command.assignments.iter().any(|(name, _)| name == "CDPATH")
            || command.words.iter().any(|w| w.text.starts_with("CDPATH="));
        let upstream_endless = std::mem::take(&mut self.endless_pipe) && command.piped_input;
        let redirect = self.redirect_judgement(command);
        // What the command reads on stdin, word by word, when it is known:
        // an `echo` piped in, or a here-string / here-document without
        // expansions (`xargs rm -rf <<< /`).
        let listed_secret = self.listed_secret.take();
        let input = if command.piped_input {
            self.printed.take()
        } else {
            command
                .stdin_text
                .as_deref()
                .filter(|t| !t.contains(['$', '`']) && !command.stdin_unparsed_substitution)
                .map(|t| t.split_whitespace().map(Word::literal).collect())
        };
        let unwrapped = unwrap(&command.words, input.as_deref());
        // `env -C DIR` runs the command in DIR (unknown when DIR is): its
        // paths are judged from there, and the line's directory is back
        // after it.
        let outer_cwd = unwrapped.chdir.as_ref().map(|dir| {
            let inner = self.judge().resolve(dir);
            std::mem::replace(&mut self.cwd, inner)
        });
        let index = self.segments.len();
        let argv: Vec<String> = unwrapped.words.iter().map(|w| w.text.clone()).collect();
        let mut judgement = if command.words.is_empty() {
            SegmentJudgement::new(Safe, "only sets variables or redirects")
        } else if unwrapped.query_only {
            SegmentJudgement::new(Safe, "only looks a command up")
        } else {
            self.program(&unwrapped.words, command, depth)
        };
        if let Some(wrapper) = &unwrapped.judgement
            && (wrapper.level > judgement.level
                || (wrapper.level == judgement.level && judgement.reason == "unknown command"))
        {
            judgement = wrapper.clone();
        }
        // Every word counts, wrappers' option values included
        // (`xargs -a ~/.ssh/id_rsa`, `--rawfile x ~/.netrc`); below a
        // private `/tmp` nothing is the user's (`rm -rf /tmp/*`).
        if command
            .words
            .iter()
            .skip(1)
            .any(|w| mentions_credential(&w.text) && !self.judge().in_private_tmp(w))
            && judgement.level < Ask
        {
            judgement = SegmentJudgement::new(Ask, "touches a credential file");
        }
        if !unwrapped.writes.is_empty() {
            judgement = judgement.max(self.judge().writes(&unwrapped.writes));
        }
        if !unwrapped.reads.is_empty() {
            judgement = judgement.max(self.judge().reads(&unwrapped.reads));
        }
        // A prefix assignment lives in the environment of that one command;
        // the builtins that only print or return a status read none of it.
        let reads_no_environment = unwrapped.wrappers.is_empty()
            && argv
                .first()
                .is_some_and(|p| matches!(p.as_str(), "echo" | "printf" | "true" | "false" | ":"));
        for (name, value) in &command.assignments {
            let inert_here = reads_no_environment
                && value.opaque.is_none()
                && !matches!(name.as_str(), "PS4" | "BASH_XTRACEFD");
            if !inert_here {
                judgement = judgement.max(assignment_judgement(name, value));
            }
        }
        for (name, value) in &unwrapped.assignments {
            judgement = judgement.max(assignment_judgement(name, value));
        }
        if judgement.level == Safe {
            let fed = unwrapped.wrappers.iter().any(|w| w == "xargs");
            if let Some(asks) = runtime_operands(&unwrapped.words, fed) {
                judgement = asks;
            }
        }
        // `echo` only prints its arguments, so a substitution there is data
        // (its own commands are judged as segments of their own).
        let prints_only = argv.first().is_some_and(|p| p == "echo")
            && command
                .words
                .iter()
                .all(|w| w.opaque.is_none() || w.opaque == Some("a command substitution"));
        if !prints_only
            && let Some(construct) = command
                .words
                .iter()
                .chain(command.redirects.iter().map(|r| &r.target))
                .find_map(|w| w.opaque)
            && judgement.level < Ask
        {
            judgement =
                SegmentJudgement::owned(Ask, format!("uses {construct}, which is not analysed"));
        }
        if unwrapped.words.is_empty() && unwrapped.wrappers.iter().any(|w| w == "env") {
            judgement = judgement.max(SegmentJudgement::new(
                Ask,
                crate::program_rules::PRINTS_ENVIRONMENT,
            ));
        }
        if let Some(name) = command
            .words
            .iter()
            .chain(command.redirects.iter().map(|r| &r.target))
            .filter(|w| w.dynamic)
            .find_map(|w| secret_expansion(&w.text))
            .or_else(|| command.stdin_text.as_deref().and_then(secret_expansion))
            && judgement.level < Ask
        {
            judgement = SegmentJudgement::owned(
                Ask,
                format!(
                    "expands the secret variable `{name}` (its value would reach the transcript)"
                ),
            );
        }
        let local_submodule = argv.len() >= 3
            && argv[0] == "git"
            && argv[1] == "submodule"
            && matches!(argv[2].as_str(), "status" | "summary");
        let network = !unwrapped.query_only && needs_network(&argv) && !local_submodule;
        if network && judgement.level < Ask {
            judgement = SegmentJudgement::new(Ask, NETWORK_REASON);
        }
        let judged_unseen = judgement.unseen.or(redirect.unseen);
        let mut level = judgement.level;
        let mut reason = judgement.reason.into_owned();
        if redirect.level > level {
            level = redirect.level;
            reason = redirect.reason.to_string();
        }
        // The catastrophic deletions, on the decoded words, with variables
        // set to literals earlier on the line put in (`X=/; rm -rf $X`).
        if command.words.is_empty() {
            for (name, value) in &command.assignments {
                if !value.dynamic && value.opaque.is_none() {
                    self.literal_vars.retain(|(n, _)| n != name);
                    self.literal_vars.push((name.clone(), value.text.clone()));
                }
            }
        }
        let unwrapped_words = unwrapped.words.clone();
        let substituted = substitute_literal_vars(&unwrapped_words, &self.literal_vars);
        let unwrapped = Unwrapped {
            words: split_ifs(&command.text).unwrap_or(substituted),
            ..unwrapped
        };
        let floor_cwd = self.cwd.clone();
        if unwrapped.words.first().is_some_and(|p| p.text == "rm")
            && let Some(catastrophic) = crate::catastrophic::rm_catastrophic(
                &unwrapped.words[1..],
                floor_cwd.as_deref(),
                self.facts.home(),
            )
            .or_else(|| {
                crate::catastrophic::rm_catastrophic(
                    &self.through_links(&unwrapped.words[1..]),
                    floor_cwd.as_deref(),
                    self.facts.home(),
                )
            })
        {
            level = Dangerous;
            reason = catastrophic;
        }
        if let Some((program, args)) = unwrapped.words.split_first()
            && let Some(catastrophic) = crate::catastrophic::program_catastrophic(
                &program.text,
                args,
                floor_cwd.as_deref(),
                self.facts.home(),
            )
        {
            level = Dangerous;
            reason = catastrophic;
        }
        // A command that is asked about anyway (unknown programs, wrappers
        // that run their arguments: `watch`, `su -c`, `strace`, `at`)
        // is refused when what it is given to run is catastrophic.
        // Data sent over the network (`curl -d 'rm -rf /'`) is not run here.
        let runs_stdin = argv
            .first()
            .is_some_and(|p| matches!(p.as_str(), "at" | "batch"));
        if level == Ask
            && !network
            && let Some(catastrophic) = unwrapped.words[1.min(unwrapped.words.len())..]
                .iter()
                .map(|w| w.text.as_str())
                .chain(command.stdin_text.as_deref().filter(|_| runs_stdin))
                .find_map(catastrophic_reason)
                .map(str::to_string)
                .or_else(|| {
                    let words = &unwrapped.words;
                    let at = words
                        .iter()
                        .skip(1)
                        .position(|w| w.text.rsplit('/').next() == Some("rm"))?;
                    crate::catastrophic::rm_catastrophic(
                        &words[at + 2..],
                        self.cwd.as_deref(),
                        self.facts.home(),
                    )
                })
        {
            level = Dangerous;
            reason = catastrophic;
        }
        // `find ~ -type f | xargs cat`: what xargs hands the program comes
        // from a listing of a directory that holds credential stores.
        if command.piped_input
            && unwrapped.wrappers.iter().any(|w| w == "xargs")
            && level < Ask
            && let Some(dir) = &listed_secret
        {
            level = Ask;
            reason = format!(
                "runs on the names listed from `{dir}`, which holds credential stores or a dotenv file"
            );
        }
        self.listed_secret = self.listing_of_secrets(&argv, &unwrapped.words);
        if let Some(catastrophic) = command
            .redirects
            .iter()
            .filter(|r| r.kind == RedirectKind::Write)
            .find_map(|r| crate::catastrophic::redirect_catastrophic(&r.target.text))
        {
            level = Dangerous;
            reason = catastrophic;
        }
        if argv.first().is_some_and(|p| p == "ln" || p == "cp") {
            self.record_symlink(&argv[0], &unwrapped.words[1..]);
        }
        // Output without end: into a file it fills the disk.
        if let Some(why) = endless_output(&argv, upstream_endless) {
            let to_file =
                command.redirects.iter().any(|r| {
                    r.kind == RedirectKind::Write && !crate::ws_path::is_sink(&r.target.text)
                }) || (argv[0] == "tee"
                    && argv[1..]
                        .iter()
                        .any(|a| !a.starts_with('-') && !crate::ws_path::is_sink(a)));
            if to_file && level < Ask {
                level = Ask;
                reason = format!(
                    "writes without end: {why} (it fills the disk); bound it (`head -c SIZE`), or \
                     approve it"
                );
            } else if !to_file {
                self.endless_pipe = true;
            }
        }
        self.printed = echoed_words(&unwrapped.words);
        self.moved |= argv.first().is_some_and(|p| {
            matches!(p.as_str(), "mv" | "rename" | "rsync" | "mmv")
                || (p == "git" && argv.get(1).is_some_and(|s| s == "mv"))
        });
        if self.unsure_links.is_none() && makes_unknown_links(&argv) {
            self.unsure_links = Some(command.text.trim().to_string());
        }
        if let Some(outer) = outer_cwd {
            self.cwd = outer;
        }
        let prefix = canonical_prefix(&argv).text;
        let unknown_program = std::mem::take(&mut self.unknown_program);
        let runs_unseen = judged_unseen
            .or_else(|| {
                (unknown_program && any_runtime_word(command)).then_some(
                    "a program the exec policy does not know is given a word only known at run \
                     time, which may be a program it runs",
                )
            })
            .or_else(|| runs_unseen(command, &unwrapped_words, &argv, &unwrapped.wrappers, level));
        self.segments.insert(
            index.min(self.segments.len()),
            Segment {
                text: command.text.clone(),
                argv,
                wrappers: unwrapped.wrappers,
                assignments: command
                    .assignments
                    .iter()
                    .chain(&unwrapped.assignments)
                    .map(|(name, _)| name.clone())
                    .collect(),
                prefix,
                level,
                reason,
                needs_network: network,
                depth,
                redirect_level: redirect.level,
                runs_unseen,
            },
        );
    }

    /// `rm`'s operands with the symlinks on their way followed, as `rm`
    /// follows them: every component but the last, and the last too when a
    /// slash or a glob comes after it (`link/`, `link/*`). Options and words
    /// only known at run time are kept as written.
    fn through_links(&self, args: &[Word]) -> Vec<Word> {
        let judge = self.judge();
        args.iter()
            .map(|word| {
                if word.dynamic || word.text.starts_with('-') {
                    return word.clone();
                }
                let text = word.text.as_str();
                let (parent, last) = match text.trim_end_matches('/').rsplit_once('/') {
                    Some((parent, last)) => (parent, last),
                    None => (".", text.trim_end_matches('/')),
                };
                let parent = if parent.is_empty() { "/" } else { parent };
                let whole = text.ends_with('/') || last.contains(['*', '?', '[']);
                let resolved = if whole && !last.contains(['*', '?', '[']) {
                    judge.resolve(&Word::literal(text.trim_end_matches('/')))
                } else {
                    judge
                        .resolve(&Word::literal(parent))
                        .map(|p| format!("{}/{last}", p.trim_end_matches('/')))
                };
                match resolved {
                    Some(path) => Word::literal(&path),
                    None => word.clone(),
                }
            })
            .collect()
    }

    fn redirect_judgement(&self, command: &SimpleCommand) -> SegmentJudgement {
        let judge = self.judge();
        let appends: Vec<&Word> = command
            .redirects
            .iter()
            .filter(|r| r.kind == RedirectKind::Write && !r.overwrite)
            .map(|r| &r.target)
            .collect();
        let overwrites: Vec<&Word> = command
            .redirects
            .iter()
            .filter(|r| r.kind == RedirectKind::Write && r.overwrite)
            .map(|r| &r.target)
            .collect();
        if command.redirects.iter().any(|r| {
            r.target.text.starts_with("/dev/tcp/") || r.target.text.starts_with("/dev/udp/")
        }) {
            return SegmentJudgement::new(Ask, NETWORK_REASON);
        }
        // An input redirection reads its file like an operand would
        // (`cat < ~/.ssh/id_rsa` is `cat ~/.ssh/id_rsa`).
        let read = judge.reads(
            command
                .redirects
                .iter()
                .filter(|r| r.kind == RedirectKind::Read)
                .map(|r| &r.target),
        );
        if read.level > Safe {
            return read;
        }
        if appends.is_empty() && overwrites.is_empty() {
            return SegmentJudgement::new(Safe, "no redirection");
        }
        // `> f` truncates f: judged like deleting what it held.
        let overwritten = judge.overwrites(overwrites);
        if appends.is_empty() {
            return overwritten;
        }
        overwritten.max(judge.writes(appends))
    }

    /// Judges the program in `words` (wrappers already removed).
    fn program(
        &mut self,
        words: &[Word],
        command: &SimpleCommand,
        depth: usize,
    ) -> SegmentJudgement {
        let Some(first) = words.first() else {
            return SegmentJudgement::new(Safe, "no command after the wrappers");
        };
        if first.dynamic {
            return SegmentJudgement::new(Ask, "the program name is only known at run time");
        }
        let Some(program) = program_name(&first.text) else {
            return SegmentJudgement::new(Ask, "runs a program by path");
        };
        let args = &words[1..];
        match program {
            "cd" => self.change_dir(args),
            // `pushd DIR` changes directory as `cd DIR` does.
            "pushd"
                if args.len() == 1 && !args[0].text.starts_with(['-', '+']) && !args[0].dynamic =>
            {
                self.change_dir(args)
            }
            "pushd" | "popd" => {
                self.cwd = None;
                SegmentJudgement::new(
                    Safe,
                    "changes directory (later paths are judged as unknown)",
                )
            }
            p if SHELLS.contains(&p) => self.shell(args, command, depth),
            // `at` and `batch` run their standard input as a shell script.
            "at" | "batch" if command.piped_input => SegmentJudgement::new(
                Dangerous,
                "pipes data into a shell interpreter (at runs its input as a script)",
            ),
            "eval" => self
                .eval(args, depth)
                .max(SegmentJudgement::new(Ask, "eval runs text as a script")),
            "source" | "." => {
                if args.first().is_some_and(|w| w.text.starts_with("<(")) {
                    SegmentJudgement::new(Dangerous, "runs code produced by a process substitution")
                } else if command.piped_input
                    && args.first().is_some_and(|w| reads_stdin_path(&w.text))
                {
                    SegmentJudgement::new(
                        Dangerous,
                        "pipes data into the shell (`source /dev/stdin`)",
                    )
                } else {
                    SegmentJudgement::new(Ask, "runs a script file in the current shell")
                }
            }
            "export" | "declare" | "typeset" | "local" | "readonly" | "unset" => {
                declaration_judgement(program, args, !command.assignments.is_empty())
            }
            "find" => self.find(args, command, depth),
            p if interpreter_kind(p).is_some() => self.interpreter(p, args, command, depth),
            p if command.piped_input
                && let Some(why) = crate::program_rules::runs_its_input(p, args) =>
            {
                SegmentJudgement::owned(Dangerous, format!("pipes data into a shell: {why}"))
            }
            p => match program_judgement(p, args, self.judge()) {
                Some(judgement) => judgement,
                None if needs_network(
                    &words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(),
                ) =>
                {
                    SegmentJudgement::new(Ask, NETWORK_REASON)
                }
                None => {
                    self.unknown_program = true;
                    SegmentJudgement::new(Ask, "unknown command")
                }
            },
        }
    }

    /// Follows `cd`: the new directory is resolved through symlinks (what
    /// `cd -P` does; for plain `cd`, `..` after a link is judged by text
    /// and then resolved, which lands in the same place or is unknown).
    fn change_dir(&mut self, args: &[Word]) -> SegmentJudgement {
        let target = args
            .iter()
            .find(|w| !w.text.starts_with('-') || w.text == "-");
        let physical = args.iter().any(|w| w.text == "-P");
        let before = self.cwd.clone();
        self.cwd = match target {
            Some(w) if w.text == "-" => self.oldpwd.clone(),
            Some(w) if physical && w.text.contains("..") => None,
            // With `CDPATH` set, `cd NAME` may go to NAME below any listed
            // directory.
            Some(w) if self.cdpath && !w.text.starts_with(['/', '.', '~']) => None,
            Some(w) => self.judge().resolve(w),
            None => self.facts.home().map(str::to_string),
        };
        self.oldpwd = before;
        SegmentJudgement::new(Safe, "changes directory")
    }

    /// Remembers the symlinks `ln -s` and `cp -s` make, in every form
    /// (`ln -s T L`, `ln -s T` into the working directory, `ln -s T1 T2
    /// DIR`, `-t DIR`, `--target-directory=DIR`), so later paths through
    /// them are judged where they really point.
    fn record_symlink(&mut self, program: &str, args: &[Word]) {
        let Ok(parsed) = crate::getopt::parse(&crate::program_rules::file_copy_spec(program), args)
        else {
            return;
        };
        let symbolic = parsed.has("s") || parsed.has("symbolic") || parsed.has("symbolic-link");
        if !symbolic {
            return;
        }
        let files: Vec<&Word> = parsed.operands.iter().collect();
        let judge = self.judge();
        let basename = |w: &Word| {
            w.text
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_string()
        };
        let into = |dir: &Word, target: &Word| Word {
            text: format!("{}/{}", dir.text.trim_end_matches('/'), basename(target)),
            ..dir.clone()
        };
        let mut pairs: Vec<(Word, &Word)> = Vec::new();
        if let Some(dir) = parsed.values(&["t", "target-directory"]).last() {
            pairs.extend(files.iter().map(|t| (into(dir, t), *t)));
        } else {
            match files.as_slice() {
                [] => {}
                [target] if program == "ln" => {
                    pairs.push((into(&Word::literal("."), target), target))
                }
                [target, link] => {
                    pairs.push(((*link).clone(), *target));
                    let is_dir = link.text.ends_with('/')
                        || judge
                            .resolve(link)
                            .is_some_and(|p| self.facts.exists(&p) == Some(true));
                    if is_dir {
                        pairs.push((into(link, target), *target));
                    }
                }
                [targets @ .., dir] => pairs.extend(targets.iter().map(|t| (into(dir, t), *t))),
            }
        }
        let mut made = Vec::new();
        for (link_word, target_word) in pairs {
            let link = judge.resolve(&link_word);
            // A relative target is relative to the link's directory.
            let target = match &link {
                Some(link) if !target_word.text.starts_with(['/', '~', '$']) => {
                    let dir = link.rsplit_once('/').map_or("/", |(d, _)| d);
                    Some(normalize_path(&format!("{dir}/{}", target_word.text)))
                }
                _ => judge.resolve(target_word),
            };
            match (link, target) {
                (Some(link), Some(target)) => made.push((link, target)),
                // Where the link points is not known: paths through it are not.
                (Some(link), None) => made.push((link, "/unknown-symlink-target".to_string())),
                _ => {}
            }
        }
        self.links.extend(made);
    }

    /// A shell started with options: what it runs, and asks when an option
    /// changes how that is read (`bash -k -c …`, `sh -o keyword`, `bash -O …`).
    fn shell(&mut self, args: &[Word], command: &SimpleCommand, depth: usize) -> SegmentJudgement {
        let judgement = self.shell_started(args, command, depth);
        match crate::program_rules::shell_options_refused(args) {
            Some(why) => judgement.max(SegmentJudgement::owned(Ask, why)),
            None => judgement,
        }
    }

    fn shell_started(
        &mut self,
        args: &[Word],
        command: &SimpleCommand,
        depth: usize,
    ) -> SegmentJudgement {
        // `-n` reads the script without running any of it.
        let checks_only = args
            .iter()
            .take_while(|w| w.text.starts_with('-') && w.text != "--" && !w.dynamic)
            .all(|w| {
                w.text.len() > 1
                    && !w.text.starts_with("--")
                    && w.text[1..].chars().all(|c| "nvxeuc".contains(c))
            })
            && args.iter().any(|w| {
                w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('n')
            });
        let script_flag = args
            .iter()
            .any(|w| w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('c'));
        let files: Vec<&Word> = args
            .iter()
            .skip_while(|w| w.text.starts_with('-'))
            .take(1)
            .filter(|_| !script_flag)
            .collect();
        // (An interactive shell ignores `-n`: a script or `-c` is needed.)
        if checks_only && !command.piped_input && (script_flag || !files.is_empty()) {
            return self.judge().reads(files).max(SegmentJudgement::new(
                Safe,
                "only checks the script's syntax (`-n` runs none of it)",
            ));
        }
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
                // Each `o` / `O` in a cluster (`-euo pipefail`) takes the next word.
                if !text.starts_with("--") {
                    index += text.chars().filter(|c| matches!(c, 'o' | 'O')).count();
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
                return SegmentJudgement::new(Ask, "shell -c without a script");
            };
            return self.nested(script, depth, "runs the nested script (judged separately)");
        }
        if let Some(file) = operand {
            if file.text.starts_with("<(") {
                return SegmentJudgement::new(
                    Dangerous,
                    "runs code produced by a process substitution",
                );
            }
            if command.piped_input && reads_stdin_path(&file.text) {
                return SegmentJudgement::new(Dangerous, "pipes data into a shell interpreter");
            }
            return SegmentJudgement::new(Ask, "runs a script file");
        }
        if command.piped_input {
            return SegmentJudgement::new(Dangerous, "pipes data into a shell interpreter");
        }
        if let Some(body) = &command.stdin_text {
            self.script(body, depth + 1);
            if command.stdin_unparsed_substitution {
                return SegmentJudgement::new(
                    Ask,
                    "the here-document expands backticks that were not analysed",
                );
            }
            return SegmentJudgement::new(Safe, "runs the here-document (judged separately)");
        }
        SegmentJudgement::new(Ask, "starts an interactive shell")
    }

    /// Judges a script given as one word (`bash -c WORD`, `eval WORD`).
    fn nested(&mut self, script: &Word, depth: usize, ok_reason: &'static str) -> SegmentJudgement {
        if script.substitution {
            return SegmentJudgement::new(
                Dangerous,
                "runs a script built at run time by a substitution",
            );
        }
        if script.dynamic {
            return SegmentJudgement::new(Ask, "runs a script only known at run time")
                .unseen("it runs a script only known at run time");
        }
        self.script(&script.text, depth + 1);
        SegmentJudgement::new(Safe, ok_reason)
    }

    fn eval(&mut self, args: &[Word], depth: usize) -> SegmentJudgement {
        let joined = Word {
            text: args
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            dynamic: args.iter().any(|w| w.dynamic),
            substitution: args.iter().any(|w| w.substitution),
            opaque: args.iter().find_map(|w| w.opaque),
            expands: args.iter().any(|w| w.expands),
        };
        self.nested(
            &joined,
            depth,
            "evaluates the nested script (judged separately)",
        )
    }

    fn find(&mut self, args: &[Word], command: &SimpleCommand, depth: usize) -> SegmentJudgement {
        let mut judgement = SegmentJudgement::new(Safe, "only searches");
        // `-H`, `-L`, `-P`, `-D OPTS`, `-O LEVEL` come before the roots;
        // `-L` (and the `-follow` primary) follow symlinks out of them.
        let mut lead = 0;
        while let Some(w) = args.get(lead) {
            match w.text.as_str() {
                "-H" | "-L" | "-P" => lead += 1,
                "-D" => lead += 2,
                t if t.starts_with("-O") && t.len() > 2 => lead += 1,
                _ => break,
            }
        }
        let follows_links = args[..lead.min(args.len())].iter().any(|w| w.text == "-L")
            || args.iter().any(|w| w.text == "-follow");
        let args = &args[lead.min(args.len())..];
        // Paths found under roots inside the workspace stay inside it.
        let roots: Vec<&Word> = args
            .iter()
            .take_while(|w| !w.text.starts_with('-') && w.text != "(" && w.text != "!")
            .collect();
        let dot = Word::literal(".");
        let searched: Vec<&Word> = if roots.is_empty() {
            vec![&dot]
        } else {
            roots.clone()
        };
        let judge = self.judge();
        let found_inside = !follows_links
            && searched
                .iter()
                .all(|r| judge.place(r) == crate::ws_path::PathPlace::Inside);
        // What the commands of `-exec` are handed may be a credential
        // file: the roots hold credential stores (and no `-name` keeps
        // them out), a `-name` pattern can match one, or links are followed.
        let names = find_name_patterns(args);
        let secret_name = names.iter().find(|n| crate::ws_path::name_may_be_secret(n));
        let hands_secrets = if follows_links {
            Some(
                "follows symlinks out of the roots (`-L`/`-follow`), so found paths lead anywhere"
                    .to_string(),
            )
        } else if let Some(name) = secret_name {
            Some(format!("its pattern `{name}` can match a credential file"))
        } else if names.is_empty() {
            judge.credential_holder(&searched).map(|dir| {
                format!("it searches `{dir}`, which holds credential stores or a dotenv file")
            })
        } else {
            None
        };
        // What `{}` stands for: `ROOT/PATTERN` when one `-name` pattern
        // selects what is found, so `-exec rm {} \;` is judged like
        // `-delete`.
        let found = match (roots.first(), names.as_slice()) {
            (Some(root), [name]) => format!("{}/{name}", root.text.trim_end_matches('/')),
            (None, [name]) => format!("./{name}"),
            _ => "./found".to_string(),
        };
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
                    // With `+`, `{}` becomes as many paths as were found.
                    let many = args.get(end).is_some_and(|w| w.text == "+");
                    let inner: Vec<Word> = args[start..end]
                        .iter()
                        .map(|w| {
                            if w.text.contains("{}") && found_inside {
                                Word {
                                    expands: many,
                                    ..Word::literal(&w.text.replace("{}", &found))
                                }
                            } else if w.text.contains("{}") {
                                Word {
                                    dynamic: true,
                                    expands: many || w.expands,
                                    ..w.clone()
                                }
                            } else {
                                w.clone()
                            }
                        })
                        .collect();
                    // `find / -exec rm -rf {} +` deletes what `find / -delete` does.
                    let deletes = inner.first().is_some_and(|w| {
                        matches!(program_name(&w.text), Some("rm" | "shred" | "unlink"))
                    });
                    if deletes
                        && unfiltered(&args[roots.len()..index])
                        && let Some(root) = roots.iter().find(|r| {
                            self.judge().resolve(r).is_some_and(|p| {
                                crate::catastrophic::catastrophic_dir(&p, self.facts.home())
                                    .is_some()
                            })
                        })
                    {
                        judgement = judgement.max(SegmentJudgement::owned(
                            Dangerous,
                            format!(
                                "matches a catastrophic pattern: find {} -exec {} deletes the whole tree",
                                root.text, inner[0].text
                            ),
                        ));
                    }
                    let nested = SimpleCommand {
                        text: inner
                            .iter()
                            .map(|w| w.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" "),
                        words: inner,
                        ..SimpleCommand::default()
                    };
                    let hands_found = args[start..end].iter().any(|w| w.text.contains("{}"));
                    if hands_found && let Some(why) = &hands_secrets {
                        judgement = judgement.max(SegmentJudgement::owned(
                            Ask,
                            format!(
                                "find {text} runs `{}` on the paths it finds, and {why}; narrow \
                                 the search (a root inside the workspace, a `-name` pattern), or \
                                 approve it",
                                nested.words.first().map_or("", |w| w.text.as_str())
                            ),
                        ));
                    }
                    self.simple(&nested, depth + 1);
                    index = end + 1;
                    continue;
                }
                "-delete" => {
                    judgement = judgement.max(self.find_delete(args, &roots, follows_links));
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    let written = self.judge().writes(args.get(index + 1));
                    if written.level > judgement.level {
                        judgement = written;
                    }
                    index += 1;
                }
                t if FIND_VALUED.contains(&t) => index += 1,
                t if FIND_FLAGS.contains(&t) => {}
                t if t.starts_with("-newer") && t.len() == 8 => index += 1,
                t if t.starts_with('-') && index >= roots.len() => {
                    judgement = judgement.max(SegmentJudgement::owned(
                        Ask,
                        format!("unknown find primary `{t}`"),
                    ));
                }
                _ => {}
            }
            index += 1;
        }
        let _ = command;
        judgement
    }

    /// `find … -delete`: `Dangerous` for the whole file system or home,
    /// `WorkspaceSafe` when what is matched is regenerable build output or
    /// held by the snapshot, otherwise it asks.
    fn find_delete(&self, args: &[Word], roots: &[&Word], follows_links: bool) -> SegmentJudgement {
        let judge = self.judge();
        let home = self.facts.home();
        let everything = unfiltered(&args[roots.len()..]);
        let dot = Word::literal(".");
        let searched: Vec<&Word> = if roots.is_empty() {
            vec![&dot]
        } else {
            roots.to_vec()
        };
        if everything
            && let Some(root) = searched.iter().find(|r| {
                judge
                    .resolve(r)
                    .is_some_and(|p| crate::catastrophic::catastrophic_dir(&p, home).is_some())
                    || r.text == "~"
                    || r.text == "$HOME"
            })
        {
            return SegmentJudgement::owned(
                Dangerous,
                format!(
                    "matches a catastrophic pattern: find {} -delete deletes the whole tree",
                    root.text
                ),
            );
        }
        if follows_links {
            return SegmentJudgement::new(
                Ask,
                "find -L … -delete follows symlinks out of its roots (what it deletes is not known)",
            );
        }
        let names = find_name_patterns(args);
        let targets: Vec<Word> = if roots.is_empty() {
            vec![Word::literal(".")]
        } else {
            roots.iter().map(|w| (*w).clone()).collect()
        };
        if !names.is_empty() {
            let mut worst =
                SegmentJudgement::new(WorkspaceSafe, "deletes regenerable build output");
            for root in &targets {
                for name in &names {
                    let matched = Word {
                        text: format!("{}/{name}", root.text.trim_end_matches('/')),
                        ..root.clone()
                    };
                    worst = worst.max(judge.deletes([&matched]));
                }
            }
            return worst;
        }
        judge.deletes(&targets)
    }

    fn interpreter(
        &mut self,
        program: &str,
        args: &[Word],
        command: &SimpleCommand,
        depth: usize,
    ) -> SegmentJudgement {
        let _ = depth;
        let kind = interpreter_kind(program).unwrap_or(InterpreterKind::Other);
        if !args.is_empty()
            && args
                .iter()
                .all(|w| matches!(w.text.as_str(), "--version" | "-V" | "--help" | "-h" | "-v"))
        {
            return SegmentJudgement::new(Safe, "prints version or help");
        }
        // `node --test [FILES]`: the project's own tests, like `cargo test`.
        if kind == InterpreterKind::Node
            && args.iter().any(|w| w.text == "--test")
            && args.iter().all(|w| {
                let t = w.text.as_str();
                matches!(t, "--test" | "--test-only")
                    || t.starts_with("--test-name-pattern=")
                    || t.starts_with("--test-reporter=")
                    || t.starts_with("--test-concurrency=")
                    || (!t.starts_with('-')
                        && !w.dynamic
                        && self.judge().place(w) == crate::ws_path::PathPlace::Inside)
            })
        {
            return SegmentJudgement::new(WorkspaceSafe, "runs the project's tests");
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
        let inline_reads_stdin = inline
            && args.iter().any(|w| {
                ["stdin", "STDIN", "<>", "input(", "readFileSync(0", "fd/0"]
                    .iter()
                    .any(|m| w.text.contains(m))
            });
        if command.piped_input
            && (reads_program_from_stdin
                || script.is_some_and(|w| reads_stdin_path(&w.text))
                || inline_reads_stdin
                || (inline && kind == InterpreterKind::Perl))
        {
            return SegmentJudgement::new(Dangerous, "pipes data into an interpreter");
        }
        if let Some(file) = script
            && file.text.starts_with("<(")
        {
            return SegmentJudgement::new(
                Dangerous,
                "runs code produced by a process substitution",
            );
        }
        if inline {
            return SegmentJudgement::new(Ask, "runs inline code");
        }
        if let Some(module) = module {
            return python_module_judgement(module, args, self.judge());
        }
        if reads_program_from_stdin {
            if command.stdin_text.is_some() {
                return SegmentJudgement::new(Ask, "runs code from a here-document");
            }
            return SegmentJudgement::new(Ask, "starts an interactive interpreter");
        }
        SegmentJudgement::new(Ask, "runs a script")
    }
}

/// Endless sources of bytes.
const ENDLESS_DEVICES: &[&str] = &["/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"];

/// Why `argv` prints without end: `yes`, a reader of `/dev/zero` or
/// `/dev/urandom` (or of an endless pipe, `upstream`), `head` asked for
/// more than a gigabyte or a hundred million lines of one.
fn endless_output(argv: &[String], upstream: bool) -> Option<String> {
    let (program, args) = argv.split_first()?;
    let files: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let endless_file = files
        .iter()
        .find(|f| ENDLESS_DEVICES.contains(&normalize_path(f).as_str()));
    match program.as_str() {
        "yes" => Some("`yes` prints forever".to_string()),
        "head" => {
            let mut operands = Vec::new();
            let mut words = args.iter();
            while let Some(a) = words.next() {
                if matches!(a.as_str(), "-c" | "-n" | "--bytes" | "--lines") {
                    words.next();
                } else if !a.starts_with('-') {
                    operands.push(a);
                }
            }
            let from_endless = endless_file.is_some() || (upstream && operands.is_empty());
            if !from_endless {
                return None;
            }
            let mut count: Option<(u128, bool)> = None;
            let mut iter = args.iter();
            while let Some(a) = iter.next() {
                let (value, lines) = match a.as_str() {
                    "-c" | "--bytes" => (iter.next().cloned(), false),
                    "-n" | "--lines" => (iter.next().cloned(), true),
                    t if t.starts_with("--bytes=") => (Some(t[8..].to_string()), false),
                    t if t.starts_with("--lines=") => (Some(t[8..].to_string()), true),
                    t if t.starts_with("-c") => (Some(t[2..].to_string()), false),
                    t if t.starts_with("-n") => (Some(t[2..].to_string()), true),
                    t if t.len() > 1 && t[1..].chars().all(|c| c.is_ascii_digit()) => {
                        (Some(t[1..].to_string()), true)
                    }
                    _ => continue,
                };
                count = Some((
                    value.as_deref().and_then(size_value).unwrap_or(u128::MAX),
                    lines,
                ));
            }
            let (n, lines) = count.unwrap_or((10, true));
            let limit = if lines { 100_000_000 } else { 1_000_000_000 };
            (n > limit).then(|| {
                format!(
                    "`head` copies {n} {} of an endless stream",
                    if lines { "lines" } else { "bytes" }
                )
            })
        }
        "cat" | "tac" | "od" | "xxd" | "base64" | "hexdump" | "strings" | "tr" | "rev" | "tee" => {
            match endless_file {
                Some(f) => Some(format!("`{program}` reads `{f}`, which never ends")),
                // `tee FILE` writes what it is given, its operands included.
                None if upstream && (files.is_empty() || program == "tee") => {
                    Some(format!("`{program}` passes on an endless stream"))
                }
                None => None,
            }
        }
        // `seq` counts to its last operand: `inf` never ends.
        "seq" => files
            .last()
            .filter(|last| {
                let last = last.trim_start_matches('+').to_ascii_lowercase();
                matches!(last.as_str(), "inf" | "infinity")
                    || last.parse::<f64>().is_ok_and(|n| n > 1e9)
            })
            .map(|last| format!("`seq` counts to {last}")),
        // What only counts or hashes its input prints a line or two, and
        // `tail` without `-f` prints nothing until its input ends.
        "wc" | "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum"
        | "b2sum" | "cksum" | "sum" | "true" | "false" | ":" => None,
        "tail"
            if !args.iter().any(|a| {
                a == "--follow"
                    || a.starts_with("--follow=")
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains(['f', 'F']))
            }) =>
        {
            None
        }
        // Any other program that reads an endless stream is not known to
        // bound what it makes of it (`gzip`, `sort`, `base32`, `tail -f`).
        _ => match endless_file {
            Some(f) => Some(format!(
                "`{program}` reads `{f}`, which never ends, and is not known to bound its output"
            )),
            None if upstream && files.is_empty() => Some(format!(
                "`{program}` reads an endless stream and is not known to bound its output"
            )),
            None => None,
        },
    }
}

/// A size as `head` reads it (`20000000000`, `20G`, `5MiB`, `10kB`).
fn size_value(text: &str) -> Option<u128> {
    let digits = text.trim_start_matches('-');
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let n: u128 = digits[..end].parse().ok()?;
    let unit = &digits[end..];
    let power = match unit.chars().next().map(|c| c.to_ascii_uppercase()) {
        None => 0,
        Some('B') if unit.len() == 1 => return Some(n * 512),
        Some('K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        Some('T') => 4,
        Some('P') => 5,
        Some('E') => 6,
        _ => return None,
    };
    let base: u128 = if unit.ends_with("B") && !unit.ends_with("iB") && unit.len() == 2 {
        1000
    } else {
        1024
    };
    Some(n * base.pow(power))
}

/// True when `find` primaries `args` select everything under the roots
/// (no test, only traversal options and the action).
fn unfiltered(args: &[Word]) -> bool {
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let everything = match w.text.as_str() {
            "-delete"
            | "-depth"
            | "-xdev"
            | "-mount"
            | "-print"
            | "-print0"
            | "-ls"
            | "-true"
            | "-noleaf"
            | "-nowarn"
            | "-warn"
            | "-daystart"
            | "-follow"
            | "-ignore_readdir_race"
            | "-noignore_readdir_race"
            | "-H"
            | "-L"
            | "-P"
            | "-a"
            | "-and"
            | "("
            | ")" => true,
            "-maxdepth" | "-mindepth" => iter
                .next()
                .is_some_and(|n| n.text.chars().all(|c| c.is_ascii_digit())),
            "-type" | "-xtype" => iter
                .next()
                .is_some_and(|t| t.text.split(',').all(|k| matches!(k, "f" | "d" | "l"))),
            // A pattern that matches every name.
            "-name" | "-iname" | "-path" | "-ipath" | "-wholename" | "-iwholename" | "-regex"
            | "-iregex" => iter
                .next()
                .is_some_and(|p| matches!(p.text.as_str(), "*" | ".*" | "*/*")),
            _ => false,
        };
        if !everything {
            return false;
        }
    }
    true
}

/// `find` primaries that take a value in the next word.
const FIND_VALUED: &[&str] = &[
    "-amin",
    "-atime",
    "-cmin",
    "-ctime",
    "-fstype",
    "-gid",
    "-group",
    "-ilname",
    "-iname",
    "-inum",
    "-ipath",
    "-iregex",
    "-iwholename",
    "-links",
    "-lname",
    "-maxdepth",
    "-mindepth",
    "-mmin",
    "-mtime",
    "-name",
    "-newer",
    "-path",
    "-perm",
    "-printf",
    "-regex",
    "-regextype",
    "-samefile",
    "-size",
    "-type",
    "-uid",
    "-used",
    "-user",
    "-wholename",
    "-xtype",
];

/// `find` primaries and operators that take no value and only test or print.
const FIND_FLAGS: &[&str] = &[
    "!",
    "(",
    ")",
    ",",
    "-a",
    "-and",
    "-d",
    "-daystart",
    "-depth",
    "-empty",
    "-executable",
    "-false",
    "-follow",
    "-ignore_readdir_race",
    "-ls",
    "-mount",
    "-noleaf",
    "-nogroup",
    "-not",
    "-nouser",
    "-o",
    "-or",
    "-print",
    "-print0",
    "-prune",
    "-quit",
    "-readable",
    "-true",
    "-writable",
    "-xdev",
    "-H",
    "-L",
    "-P",
    "-delete",
];

/// The `-name` / `-iname` patterns of a `find` command.
fn find_name_patterns(args: &[Word]) -> Vec<String> {
    args.windows(2)
        .filter(|w| matches!(w[0].text.as_str(), "-name" | "-iname"))
        .map(|w| w[1].text.clone())
        .collect()
}

/// True when `word` is a credential path, or an option whose attached
/// value is one (`--file=~/.netrc`, `-f/root/.ssh/id_rsa`).
fn mentions_credential(word: &str) -> bool {
    crate::ws_path::is_credential(word)
        || word
            .split_once('=')
            .is_some_and(|(_, v)| crate::ws_path::is_credential(v))
        || (word.starts_with('-') && word.len() > 2 && crate::ws_path::is_credential(&word[2..]))
}

/// The first `$NAME` / `${NAME…}` in `text` whose name holds a secret
/// ([`crate::is_secret_env_name`]).
fn secret_expansion(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = rest[at + 1..].trim_start_matches('{');
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..end];
        if !name.is_empty() && crate::is_secret_env_name(name) {
            return Some(name);
        }
        rest = &rest[at + 1..];
    }
    None
}

/// Paths that read the standard input when run as a script.
fn reads_stdin_path(path: &str) -> bool {
    matches!(
        path,
        "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "/dev/fd/0/"
    )
}

/// Variables that leave a command's judgement alone: locale, terminal and
/// build chatter. Nothing here loads or runs code.
const INERT_VARIABLES: &[&str] = &[
    "CARGO_INCREMENTAL",
    "CARGO_TERM_COLOR",
    "CI",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "DEBUG",
    "FORCE_COLOR",
    "GOFLAGS_NOOP",
    "LANG",
    "LANGUAGE",
    "LINES",
    "NODE_ENV",
    "NO_COLOR",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONUNBUFFERED",
    "PYTHONWARNINGS",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_MIN_STACK",
    "RUST_TEST_THREADS",
    "TERM",
    "TZ",
    "VERBOSE",
];

/// True when a word or an assigned value of `command` is only known at run time.
fn any_runtime_word(command: &SimpleCommand) -> bool {
    command
        .words
        .iter()
        .chain(command.assignments.iter().map(|(_, value)| value))
        .any(|w| w.dynamic || w.opaque.is_some())
}

/// Why the programs `command` may start cannot all be named from its text, besides what
/// its judgement found (see [`Segment::runs_unseen`]):
///
/// - the program word (after wrappers) is only known at run time or is a glob
///   (`$T x`, `command "$@"`, `/usr/bin/tou?h`);
/// - `eval`, or a shell's `-c`, runs text only known at run time;
/// - it runs a file in the current shell, which can define aliases and functions under any
///   name (`source`, `.`, a shell's `--rcfile` or `--init-file`, a shell's start-up files);
/// - it defines what later commands run, whatever its text says: an alias, a hashed path,
///   a loaded builtin, a trap, a key binding, a completion command, history re-run (`fc`),
///   shell options (`shopt`), or a variable that names or loads code (`PATH`, `HOME`,
///   `PROMPT_COMMAND`, `PS1`, `GIT_*`, `BASH_FUNC_*`, … — [`is_code_variable`]);
/// - `xargs` hands it words from its input and the policy does not understand it;
/// - it is not understood and uses a construct the policy does not analyse that can run
///   code through run-time values ([`runs_code_unseen`]).
fn runs_unseen(
    command: &SimpleCommand,
    words: &[Word],
    argv: &[String],
    wrappers: &[String],
    level: SafetyLevel,
) -> Option<&'static str> {
    if words
        .first()
        .is_some_and(|w| w.dynamic || w.opaque.is_some() || w.text.contains(['*', '?', '[']))
    {
        return Some("its program word is only known at run time or is a glob");
    }
    let program = argv.first().map(String::as_str).unwrap_or("");
    if (program == "eval" || SHELLS.contains(&program)) && any_runtime_word(command) {
        return Some("it runs text only known at run time as a script");
    }
    if matches!(program, "source" | ".")
        || (SHELLS.contains(&program)
            && argv[1..]
                .iter()
                .any(|a| a.starts_with("--rcfile") || a.starts_with("--init-file")))
    {
        return Some(
            "it runs a file in the current shell, which can define aliases and functions under \
             any name",
        );
    }
    if reads_start_files(argv) {
        return Some(
            "it starts a shell that reads start-up files (`~/.bashrc`, `~/.profile`), which can \
             define aliases and functions under any name; start an interactive shell as \
             `bash --norc --noprofile -i`",
        );
    }
    if matches!(
        program,
        "alias"
            | "bind"
            | "builtin"
            | "compgen"
            | "complete"
            | "enable"
            | "fc"
            | "hash"
            | "let"
            | "shopt"
            | "trap"
    ) {
        return Some("it changes what later commands run");
    }
    // The environment a program is given passes only inert variables: anything else
    // (`FOO=x cmd`, `env FOO=x cmd`, `export FOO=x`) may choose what the program or a
    // later one runs, whatever its name. Library paths (`PYTHONPATH`) load code from files,
    // which deny rules do not read anyway.
    let declares = command.words.first().is_some_and(|w| {
        matches!(
            w.text.as_str(),
            "env" | "export" | "declare" | "typeset" | "local" | "readonly"
        )
    });
    let is_name = |name: &str| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%')
    };
    let words_set = || {
        command.words.iter().filter_map(|w| {
            w.text
                .split_once('=')
                .map(|(name, _)| name)
                .filter(|name| is_name(name))
        })
    };
    let assigned = || command.assignments.iter().map(|(name, _)| name.as_str());
    let not_inert = |name: &str| {
        !(INERT_VARIABLES.contains(&name)
            || name.starts_with("LC_")
            || name == "IFS"
            || LOADS_FILES.iter().any(|p| name.starts_with(p)))
    };
    let hands_code =
        (!argv.is_empty() && assigned().any(not_inert)) || (declares && words_set().any(not_inert));
    // A bare assignment sets a shell variable; it matters when the shell or an exported
    // variable's readers take code or configuration from it, and so does a `NAME=value`
    // word anywhere once `set -k` has made such words environment.
    if hands_code || assigned().chain(words_set()).any(is_code_variable) {
        return Some(
            "it sets a variable that is not known to be inert (it may name or load code, or \
             choose which configuration programs read)",
        );
    }
    if level >= Ask && wrappers.iter().any(|w| w == "xargs") {
        return Some("xargs hands it words from its input, which may be a program it runs");
    }
    if level >= Ask
        && command
            .words
            .iter()
            .chain(command.assignments.iter().map(|(_, value)| value))
            .any(runs_code_unseen)
    {
        return Some(
            "it uses a shell construct the policy does not analyse that can run code through a \
             value only known at run time (arithmetic, a subscript, an indirection)",
        );
    }
    None
}

/// True when `word` is a construct the policy does not analyse that can run code through
/// values only known at run time: arithmetic naming a variable (`$((x))`, where `x` may hold
/// `a[$(cmd)]`), a parameter expansion with a subscript, an indirection or a substring
/// offset (`${a[x]}`, `${!x}`, `${s:x}`), or a construct the parser does not know.
/// `$((2+3))`, `${f%.txt}`, `${x:-default}` and process substitutions (whose commands are
/// judged as their own segments) run none.
fn runs_code_unseen(word: &Word) -> bool {
    let Some(construct) = word.opaque else {
        return false;
    };
    let text = word.text.as_str();
    let names =
        |inner: &str| inner.contains(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$');
    if construct.starts_with("an arithmetic expansion") {
        return names(text.trim_start_matches('$').trim_matches(['(', ')']));
    }
    if construct.starts_with("an array subscript") {
        return text
            .split_once('[')
            .and_then(|(_, rest)| rest.rsplit_once(']'))
            .is_none_or(|(inner, _)| names(inner));
    }
    // An array literal runs nothing unless an element names its subscript (`([k]=v)`).
    if construct == "a shell construct that is not analysed" && text.starts_with('(') {
        return text.contains('[');
    }
    if construct.starts_with("a parameter expansion") {
        let substring = text
            .match_indices(':')
            .any(|(at, _)| !text[at + 1..].starts_with(['-', '=', '+', '?']));
        return text.contains(['[', '!']) || substring;
    }
    construct == "a shell construct that is not analysed"
}

/// True when `argv` starts a shell that reads start-up files a command may have written
/// (`~/.bashrc`, `~/.profile`, `~/.zshrc`): a login shell (`-l`, `--login`, with `-c` too)
/// other than `bash --noprofile`, and an interactive one (no `-c` and no script operand,
/// or `-i`) other than `bash --norc` and `sh` / `dash` / `ash` (which read only `$ENV`,
/// judged as an assignment).
fn reads_start_files(argv: &[String]) -> bool {
    let Some(shell) = argv.first().filter(|p| SHELLS.contains(&p.as_str())) else {
        return false;
    };
    let options: Vec<&str> = argv[1..]
        .iter()
        .map(String::as_str)
        .take_while(|a| a.starts_with(['-', '+']))
        .collect();
    let short = |letter: char| {
        options
            .iter()
            .any(|o| !o.starts_with("--") && o.starts_with('-') && o.contains(letter))
    };
    let login = short('l') || options.contains(&"--login");
    let has_script = argv.len() > 1 + options.len();
    let interactive = short('i') || !(short('c') || has_script);
    match shell.as_str() {
        // A login shell reads `~/.profile`, `-c` or not; otherwise only `$ENV`, judged as
        // an assignment.
        "sh" | "dash" | "ash" => login,
        "bash" => {
            (login && !options.contains(&"--noprofile"))
                || (interactive && !options.contains(&"--norc"))
        }
        _ => login || interactive,
    }
}

/// Variables (and prefixes, ending in `*`) that make programs load or run
/// code, with why.
const CODE_VARIABLES: &[(&str, &str)] = &[
    ("BASH_ENV", "names a script bash runs at start"),
    (
        "BASH_FUNC_*",
        "defines a shell function bash imports at start",
    ),
    (
        "HOME",
        "chooses the start-up and configuration files programs read (`.bashrc`, `.gitconfig`)",
    ),
    (
        "INPUTRC",
        "names the key bindings file readline reads, which can type commands",
    ),
    (
        "CDPATH",
        "changes where `cd` goes, so relative paths point elsewhere",
    ),
    ("EDITOR", "names a program that is run"),
    ("ENV", "names a script sh runs at start"),
    (
        "GIT_*",
        "git reads configuration and commands to run from GIT_* variables",
    ),
    ("IFS", "changes how the shell splits words"),
    ("LD_*", "makes the dynamic loader load other code"),
    ("DYLD_*", "makes the dynamic loader load other code"),
    ("LESSCLOSE", "names a command less runs"),
    ("LESSOPEN", "names a command less runs"),
    ("NODE_OPTIONS", "makes node load code"),
    ("PAGER", "names a program that is run"),
    ("PATH", "changes which programs run"),
    ("PERL5LIB", "makes perl load code"),
    ("PERL5OPT", "makes perl load code"),
    ("PROMPT_COMMAND", "names a command the shell runs"),
    (
        "PS0",
        "is expanded (running substitutions) before each command an interactive shell runs",
    ),
    ("PS1", "is expanded (running substitutions) at each prompt"),
    (
        "PS2",
        "is expanded (running substitutions) at each continuation prompt",
    ),
    ("PS3", "is expanded (running substitutions) by `select`"),
    ("PS4", "is expanded (running substitutions) by `set -x`"),
    ("PYTHONPATH", "makes python load code"),
    ("PYTHONSTARTUP", "makes python run a script"),
    ("RUBYOPT", "makes ruby load code"),
    ("RUSTC_WRAPPER", "names a program cargo runs"),
    ("SHELLOPTS", "changes shell options"),
    ("VISUAL", "names a program that is run"),
    (
        "XDG_CONFIG_HOME",
        "chooses the configuration files programs read (git's aliases among them)",
    ),
    ("ZDOTDIR", "chooses the start-up files zsh reads"),
];

/// The entry of [`CODE_VARIABLES`] that `name` falls under.
fn code_variable(name: &str) -> Option<&'static (&'static str, &'static str)> {
    CODE_VARIABLES
        .iter()
        .find(|(pattern, _)| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => *pattern == name,
        })
}

/// Variables (and prefixes) that only make an interpreter or the loader load code from
/// files: code in files like a script's, which deny rules do not read.
const LOADS_FILES: &[&str] = &[
    "DYLD_",
    "LD_",
    "NODE_OPTIONS",
    "PERL5LIB",
    "PERL5OPT",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "RUBYOPT",
];

/// True when setting `name` names a program or script that is run, chooses the start-up
/// or configuration files a shell or git reads, or changes what the shell runs
/// ([`CODE_VARIABLES`] but the ones that only make an interpreter or the loader load code
/// from files, which is code in files like a script's: `PYTHONPATH`, `NODE_OPTIONS`, …).
fn is_code_variable(name: &str) -> bool {
    // `IFS` changes how words split, never which program a named word is (a program word
    // from an expansion is judged as unknown on its own).
    name != "IFS"
        && code_variable(name).is_some()
        && !LOADS_FILES.iter().any(|p| name.starts_with(p))
}

/// Judges `NAME=value` (as a prefix, through `env`, or exported).
fn assignment_judgement(name: &str, value: &Word) -> SegmentJudgement {
    if let Some(construct) = value.opaque {
        return SegmentJudgement::owned(
            Ask,
            format!("sets `{name}` from {construct}, which is not analysed"),
        );
    }
    let inert = INERT_VARIABLES.contains(&name) || name.starts_with("LC_");
    if inert {
        return SegmentJudgement::new(Safe, "sets an inert variable");
    }
    let code = code_variable(name);
    if let Some((_, why)) = code {
        return SegmentJudgement::owned(Ask, format!("sets `{name}`, which {why}"));
    }
    if name.ends_with("_OPTIONS") || name.ends_with("_OPTS") || name.ends_with("FLAGS") {
        return SegmentJudgement::owned(
            Ask,
            format!("sets `{name}`, which passes options that can load code"),
        );
    }
    SegmentJudgement::owned(
        Ask,
        format!("sets `{name}`, which is not known to be inert"),
    )
}

/// `export`, `declare`, `typeset`, `local`, `readonly`, `unset` (their
/// assignments are judged separately).
fn declaration_judgement(program: &str, args: &[Word], assigns: bool) -> SegmentJudgement {
    for word in args {
        let text = word.text.as_str();
        if program == "unset" {
            continue;
        }
        if let Some(flags) = text.strip_prefix(['-', '+'])
            && !text.contains('=')
        {
            if flags.contains(['i', 'n']) {
                return SegmentJudgement::owned(
                    Ask,
                    format!("`{program} {text}` evaluates values as arithmetic or references"),
                );
            }
            if flags.contains('f') {
                return SegmentJudgement::owned(
                    Ask,
                    format!("`{program} {text}` works on shell functions"),
                );
            }
        }
    }
    let names: Vec<&Word> = args
        .iter()
        .filter(|w| !w.text.starts_with(['-', '+']))
        .collect();
    // `unset NAME`, `declare +x NAME`, `export -n NAME` take a variable out of the
    // environment: a GIT_* one may carry the sandbox's protected git settings.
    let removes = program == "unset" || args.iter().any(|w| w.text.starts_with('+'));
    if removes
        && let Some(git) = names
            .iter()
            .find(|w| w.text.starts_with("GIT_") || w.opaque.is_some())
    {
        return SegmentJudgement::owned(
            Ask,
            format!(
                "`{program}` removes `{}` from the environment, and GIT_* variables carry the \
                 sandbox's protected git settings",
                git.text
            ),
        );
    }
    if program != "unset" && names.is_empty() && !assigns {
        return SegmentJudgement::new(Ask, crate::program_rules::PRINTS_ENVIRONMENT);
    }
    let prints = args.iter().any(|w| {
        w.text
            .strip_prefix('-')
            .is_some_and(|f| !f.contains('=') && f.contains('p'))
    });
    if prints
        && names
            .iter()
            .any(|w| crate::is_secret_env_name(w.text.split('=').next().unwrap_or("")))
    {
        return SegmentJudgement::new(Ask, "prints a secret variable into the transcript");
    }
    SegmentJudgement::new(Safe, "declares variables")
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

fn python_module_judgement(module: &str, args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    match module {
        // These write where their operands point (a new environment,
        // `__pycache__` beside each source, reformatted files).
        "black" | "ruff" | "isort" | "compileall" | "py_compile" | "venv" | "virtualenv"
        | "build" => {
            let operands: Vec<&Word> = args
                .iter()
                .skip_while(|w| w.text != module)
                .skip(1)
                .filter(|w| !w.text.starts_with('-'))
                .collect();
            SegmentJudgement::new(WorkspaceSafe, "builds, tests or checks the project")
                .max(judge.writes(operands))
        }
        "pytest" | "unittest" | "mypy" | "pylint" | "flake8" | "doctest" => {
            SegmentJudgement::new(WorkspaceSafe, "builds, tests or checks the project")
        }
        "json.tool" => {
            // `python -m json.tool IN OUT` writes OUT.
            let files: Vec<&Word> = args
                .iter()
                .skip_while(|w| w.text != "json.tool")
                .skip(1)
                .filter(|w| !w.text.starts_with('-'))
                .collect();
            match files.get(1) {
                Some(out) => judge.writes([*out]),
                None => judge.reads(files),
            }
        }
        "platform" | "sysconfig" | "tabnanny" | "this" => {
            SegmentJudgement::new(Safe, "only reads or prints")
        }
        "pydoc" => SegmentJudgement::new(
            Ask,
            "pydoc imports the module it documents (running its code) and may start a pager",
        ),
        "pip" => {
            let start = args
                .iter()
                .position(|w| w.text == "pip")
                .map_or(args.len(), |i| i + 1);
            program_judgement("pip", &args[start..], judge)
                .unwrap_or_else(|| SegmentJudgement::new(Ask, "unknown pip sub-command"))
        }
        _ => SegmentJudgement::new(Ask, "runs a Python module"),
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
/// Programs whose every operand is a file they only read and whose every option only
/// changes what they print: whatever words a glob, an expansion or `xargs` turns into,
/// they read and print.
const RUNTIME_ANY_WORDS: &[&str] = &[
    "basename",
    "cat",
    "cut",
    "dirname",
    "du",
    "echo",
    "egrep",
    "fgrep",
    "grep",
    "head",
    "ls",
    "md5sum",
    "nl",
    "paste",
    "realpath",
    "rev",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "stat",
    "tac",
    "tail",
    "wc",
];

/// Programs whose every operand is a file they only read (some options write or run
/// code): a run-time word that cannot become an option (it starts with a literal that is
/// not `-`, or follows `--`) only adds inputs.
const RUNTIME_INPUT_OPERANDS: &[&str] = &[
    "cmp", "comm", "diff", "find", "git", "join", "od", "rg", "sort", "strings",
];

/// `Ask` when `words` (program first, wrappers removed) hold words known only at run
/// time ([`Word::expands`], or the arguments `xargs` appends when `fed`) that the
/// program's operand rules cannot prove harmless: such a word may become an option
/// (`sort *` next to a file `-oout`) or an operand that is written (`uniq *`: the second
/// operand is the output). `None` when every such word is harmless.
fn runtime_operands(words: &[Word], fed: bool) -> Option<SegmentJudgement> {
    let program = program_name(&words.first()?.text)?;
    let mut after_dashes = false;
    let mut any = fed;
    let mut optionable = fed;
    for word in &words[1..] {
        if word.text == "--" && !after_dashes {
            after_dashes = true;
            continue;
        }
        if word.expands {
            any = true;
            // An unquoted expansion anywhere in the word is split into words, any of
            // which may be an option (`src/$X` with X=`a --pre=sh`).
            optionable |= !after_dashes
                && (word.text.contains('$')
                    || !word.text.starts_with(|c: char| {
                        c.is_alphanumeric() || c == '.' || c == '/' || c == '_'
                    }));
        }
    }
    // `sh -c SCRIPT ARGS…`: the words after the script are its positional parameters
    // (the script itself is judged on its own).
    let script_params = matches!(program, "sh" | "bash" | "dash" | "zsh")
        && words.get(1).is_some_and(|w| w.text == "-c")
        && words.get(2).is_some_and(|w| !w.expands);
    if !any || script_params || RUNTIME_ANY_WORDS.contains(&program) {
        return None;
    }
    if !optionable && RUNTIME_INPUT_OPERANDS.contains(&program) {
        return None;
    }
    let how = if fed {
        "is handed arguments at run time (`xargs`)"
    } else {
        "has words only known at run time (a glob, an unquoted expansion, `find -exec … {} +`)"
    };
    Some(SegmentJudgement::owned(
        Ask,
        format!(
            "`{program}` {how}, which may become options or more operands than written              (`uniq`'s second operand is its output); name the files, put `./` before a              glob or `--` before it, or approve it"
        ),
    ))
}

fn judging_word(word: &Word) -> Word {
    if word.text.is_ascii() {
        return word.clone();
    }
    Word {
        text: word.text.replace(DASHES, "-"),
        ..word.clone()
    }
}

/// The words `echo` prints, split as `xargs` splits its input, when every
/// word is literal (`echo / /home`); `None` for anything else.
fn echoed_words(words: &[Word]) -> Option<Vec<Word>> {
    let (first, args) = words.split_first()?;
    if args.iter().any(|w| w.dynamic || w.opaque.is_some()) {
        return None;
    }
    // `printf FORMAT ARGS` whose format holds only `%s` and separators
    // (`'%s\n'`, `'%s\0'`, `'%s '`) prints its arguments one by one.
    if first.text == "printf" {
        let (format, args) = args.split_first()?;
        let only_separators = format
            .text
            .replace("%s", "")
            .replace("\\n", "")
            .replace("\\0", "")
            .replace("\\t", "")
            .chars()
            .all(char::is_whitespace);
        if !format.text.contains("%s") || !only_separators {
            return None;
        }
        return Some(
            args.iter()
                .flat_map(|w| w.text.split_whitespace())
                .map(Word::literal)
                .collect(),
        );
    }
    // `ls -d PATHS` prints the paths it is given (globs as they match).
    if first.text == "ls" {
        let (options, paths): (Vec<&Word>, Vec<&Word>) =
            args.iter().partition(|w| w.text.starts_with('-'));
        let only_d = !options.is_empty()
            && options
                .iter()
                .all(|o| matches!(o.text.as_str(), "-d" | "-1" | "-d1" | "-1d"))
            && options.iter().any(|o| o.text.contains('d'));
        if !only_d || paths.is_empty() {
            return None;
        }
        return Some(paths.into_iter().map(|w| Word::literal(&w.text)).collect());
    }
    if first.text != "echo" {
        return None;
    }
    let args = match args.first() {
        Some(w) if w.text == "-n" => &args[1..],
        _ => args,
    };
    Some(
        args.iter()
            .flat_map(|w| w.text.split_whitespace())
            .map(Word::literal)
            .collect(),
    )
}

/// GNU env's long options (coreutils 9), for reading abbreviations.
const ENV_LONG: &[&str] = &[
    "split-string",
    "chdir",
    "unset",
    "ignore-environment",
    "null",
    "block-signal",
    "default-signal",
    "ignore-signal",
    "list-signal-handling",
    "debug",
];

/// GNU `xargs` options (findutils 4.9).
const XARGS: crate::getopt::OptSpec = crate::getopt::OptSpec {
    flags: "0oprtx",
    valued: "adEILnPs",
    optional: "eil",
    long: &[
        "arg-file=",
        "delimiter=",
        "eof?",
        "exit",
        "help",
        "interactive",
        "max-args=",
        "max-chars=",
        "max-lines?",
        "max-procs=",
        "no-run-if-empty",
        "null",
        "open-tty",
        "process-slot-var=",
        "replace?",
        "show-limits",
        "verbose",
        "version",
    ],
    stop_at_operand: true,
};

/// What `xargs ARGS` runs and what its own options do.
struct XargsCall {
    /// The command and its arguments, with the input put in.
    inner: Vec<Word>,
    /// Files it reads its input from (`-a FILE`).
    reads: Vec<Word>,
    /// Variables it sets in the child (`--process-slot-var=NAME`).
    assignments: Vec<(String, Word)>,
    /// What its own options make of the call, when more than the command.
    judgement: Option<SegmentJudgement>,
}

/// The command `xargs ARGS` runs, with what it reads (`-a FILE`). Words
/// that hold the replace string (`-I{}`, `-i`, `--replace`) are only known
/// at run time; without one, the input is appended: the literal words of
/// `input` when a known printer feeds the pipe (`echo / | xargs rm -rf`),
/// otherwise a word only known at run time. `-0`, `--null` and `-d` split
/// the input at NUL bytes or the delimiter, not at blanks: a printed line
/// is then one item. A shell run with its input as the script (`xargs -0
/// sh -c`, `xargs -I{} sh -c {}`) is a pipe into a shell; `-P0` (as many
/// processes at once as there are items) asks.
fn xargs_command(args: &[Word], input: Option<&[Word]>) -> Result<XargsCall, String> {
    let parsed = crate::getopt::parse(&XARGS, args)?;
    let replace = parsed.opts.iter().find_map(|o| match o.name.as_str() {
        "I" | "i" | "replace" => Some(
            o.value
                .as_ref()
                .map_or("{}".to_string(), |v| v.text.clone()),
        ),
        _ => None,
    });
    let reads: Vec<Word> = parsed.values(&["a", "arg-file"]).cloned().collect();
    let assignments: Vec<(String, Word)> = parsed
        .values(&["process-slot-var"])
        .map(|name| {
            (
                name.text.clone(),
                Word {
                    dynamic: true,
                    ..Word::literal("{slot}")
                },
            )
        })
        .collect();
    let mut judgement = None;
    if parsed
        .values(&["P", "max-procs"])
        .any(|n| n.dynamic || n.text.trim_start_matches('0').is_empty())
    {
        judgement = Some(SegmentJudgement::new(
            Ask,
            "xargs -P0 starts as many processes at once as there are input items (an unbounded \
             fan-out can exhaust the machine); give -P a number",
        ));
    }
    // With NUL or a delimiter, the printed line may be one item (`echo`)
    // or one item per word (`printf '%s\0'`, a delimiter that is a blank):
    // both readings are judged.
    let joined: Option<Vec<Word>> = input.map(|items| {
        let mut all = vec![Word::literal(
            &items
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        )];
        if items.len() > 1 {
            all.extend(items.iter().cloned());
        }
        all
    });
    let input =
        if parsed.has("0") || parsed.has("null") || parsed.has("d") || parsed.has("delimiter") {
            joined.as_deref()
        } else {
            input
        };
    let mut inner = parsed.operands;
    if inner.is_empty() {
        inner.push(Word::literal("echo"));
    }
    let unknown_input = input.is_none();
    match &replace {
        Some(token) => {
            // Each input line replaces the token; a known printer's line
            // is its words joined by spaces.
            let line = input.map(|items| {
                items
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            for word in inner.iter_mut() {
                if token.is_empty() || word.text.contains(token.as_str()) {
                    match &line {
                        Some(line) if !token.is_empty() => {
                            word.text = word.text.replace(token.as_str(), line);
                        }
                        _ => {
                            if word.text == *token {
                                word.text = "{input}".to_string();
                            }
                            word.dynamic = true;
                        }
                    }
                }
            }
        }
        None => match input {
            Some(items) => inner.extend(items.iter().cloned()),
            None => inner.push(Word {
                dynamic: true,
                ..Word::literal("{input}")
            }),
        },
    }
    if unknown_input && shell_script_word(&inner).is_some_and(|w| w.dynamic && w.text == "{input}")
    {
        judgement = Some(SegmentJudgement::new(
            Dangerous,
            "pipes data into a shell interpreter (xargs hands its input to the shell as the script)",
        ));
    }
    Ok(XargsCall {
        inner,
        reads,
        assignments,
        judgement,
    })
}

/// The script word of `sh -c SCRIPT …` (any shell, flags clustered).
fn shell_script_word(words: &[Word]) -> Option<&Word> {
    let (first, rest) = words.split_first()?;
    if !SHELLS.contains(&program_name(&first.text)?) {
        return None;
    }
    let mut wants_script = false;
    for word in rest {
        let text = word.text.as_str();
        if text.starts_with('-') && text.len() > 1 && !text.starts_with("--") && !word.dynamic {
            wants_script |= text.contains('c');
            continue;
        }
        return wants_script.then_some(word);
    }
    None
}

/// The options of the wrappers that run their operands as a command and
/// have options of their own to judge first: GNU `time`, `nice`,
/// `ionice`, `timeout`, `taskset`, `stdbuf`, `setsid`, `nohup`.
fn wrapper_spec(name: &str) -> Option<crate::getopt::OptSpec> {
    use crate::getopt::OptSpec;
    let spec = |flags, valued, long| OptSpec {
        flags,
        valued,
        optional: "",
        long,
        stop_at_operand: true,
    };
    Some(match name {
        "time" => spec(
            "apqvV",
            "fo",
            &[
                "append",
                "format=",
                "help",
                "output=",
                "portability",
                "quiet",
                "verbose",
                "version",
            ],
        ),
        "nice" => spec("", "n", &["adjustment=", "help", "version"]),
        "ionice" => spec(
            "tV",
            "cnpPu",
            &[
                "class=",
                "classdata=",
                "help",
                "ignore",
                "pid=",
                "pgid=",
                "uid=",
                "version",
            ],
        ),
        "timeout" => spec(
            "v",
            "ks",
            &[
                "foreground",
                "help",
                "kill-after=",
                "preserve-status",
                "signal=",
                "verbose",
                "version",
            ],
        ),
        "taskset" => spec(
            "acpV",
            "",
            &["all-tasks", "cpu-list", "pid", "help", "version"],
        ),
        "stdbuf" => spec(
            "",
            "ioe",
            &["error=", "help", "input=", "output=", "version"],
        ),
        "setsid" => spec("cfwV", "", &["ctty", "fork", "help", "version", "wait"]),
        "nohup" => spec("", "", &["help", "version"]),
        _ => return None,
    })
}

/// Reads the options of wrapper `name` in `args` (after its name): how
/// many words they and the wrapper's own operands take, the files the
/// wrapper writes (`time -o FILE`), and what its options make of the call.
/// `Err` when an option is not understood (named).
fn wrapper_options(
    name: &str,
    spec: crate::getopt::OptSpec,
    args: &[Word],
) -> Result<(usize, Vec<Word>, Option<SegmentJudgement>), SegmentJudgement> {
    let ask = |why: String| SegmentJudgement::owned(Ask, why);
    // `nice -N` is `nice -n N`; `nice --N` is `nice -n -N`.
    let mut legacy_nice = None;
    let args: Vec<Word> = if name == "nice"
        && let Some(first) = args.first()
        && let Some(n) = first.text.strip_prefix('-')
        && n.trim_start_matches('-')
            .chars()
            .all(|c| c.is_ascii_digit())
        && !n.trim_start_matches('-').is_empty()
    {
        legacy_nice = Some(n.to_string());
        args[1..].to_vec()
    } else {
        args.to_vec()
    };
    let skipped = usize::from(legacy_nice.is_some());
    let parsed = crate::getopt::parse(&spec, &args).map_err(|why| {
        ask(format!(
            "{name}: {why} (an option of the wrapper that is not understood); run the command \
             without it, or approve it"
        ))
    })?;
    let consumed = skipped + args.len() - parsed.operands.len();
    let mut operands_taken = 0;
    let mut writes = Vec::new();
    let mut judgement = None;
    match name {
        "time" => writes.extend(parsed.values(&["o", "output"]).cloned()),
        "nice" => {
            let adjustment = parsed
                .values(&["n", "adjustment"])
                .last()
                .map(|w| w.text.clone())
                .or(legacy_nice);
            if adjustment
                .as_deref()
                .is_some_and(|a| a.starts_with('-') || a.starts_with("--"))
            {
                judgement = Some(ask(
                    "nice with a negative adjustment raises the priority (it needs privilege); \
                     use a positive adjustment, or approve it"
                        .to_string(),
                ));
            }
        }
        "ionice" => {
            if parsed.has("p")
                || parsed.has("P")
                || parsed.has("u")
                || parsed.has("pid")
                || parsed.has("pgid")
                || parsed.has("uid")
            {
                return Err(ask(
                    "ionice -p/-P/-u changes the I/O priority of other processes; approve it if \
                     that is intended"
                        .to_string(),
                ));
            }
            if parsed
                .values(&["c", "class"])
                .any(|c| matches!(c.text.as_str(), "1" | "realtime"))
            {
                judgement = Some(ask(
                    "ionice -c1 (real-time I/O) can starve the machine and needs privilege; use \
                     -c2 or -c3, or approve it"
                        .to_string(),
                ));
            }
        }
        "timeout" => {
            operands_taken = 1;
            let duration = parsed.operands.first();
            let understood = duration.is_some_and(|d| {
                let t = d.text.trim_end_matches(['s', 'm', 'h', 'd']);
                !d.dynamic && !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.')
            });
            if !understood {
                return Err(ask(format!(
                    "timeout's duration `{}` is not understood; give a number of seconds",
                    duration.map_or("", |d| d.text.as_str())
                )));
            }
        }
        "taskset" => {
            if parsed.has("p") || parsed.has("pid") || parsed.has("a") || parsed.has("all-tasks") {
                return Err(ask(
                    "taskset -p changes the CPU affinity of another process; approve it if that \
                     is intended"
                        .to_string(),
                ));
            }
            operands_taken = 1;
        }
        "setsid" if parsed.has("f") || parsed.has("fork") => {
            judgement = Some(ask(
                "setsid -f leaves the command running after the call returns; run it without -f, \
                 or approve it"
                    .to_string(),
            ));
        }
        _ => {}
    }
    Ok((
        consumed + operands_taken.min(parsed.operands.len()),
        writes,
        judgement,
    ))
}

/// Peels wrappers off `words`. `input` is what a known printer earlier in
/// the pipeline writes to this command's standard input, word by word.
fn unwrap(words: &[Word], input: Option<&[Word]>) -> Unwrapped {
    let mut out = Unwrapped {
        words: Vec::new(),
        wrappers: Vec::new(),
        judgement: None,
        query_only: false,
        assignments: Vec::new(),
        writes: Vec::new(),
        reads: Vec::new(),
        chdir: None,
    };
    let mut rest: Vec<Word> = words.iter().map(judging_word).collect();
    while let Some(first) = rest.first() {
        if first.dynamic {
            break;
        }
        let Some(name) = program_name(&first.text).map(str::to_string) else {
            break;
        };
        if name == "xargs" {
            match xargs_command(&rest[1..], input) {
                Ok(call) => {
                    out.wrappers.push(name);
                    out.reads.extend(call.reads);
                    out.assignments.extend(call.assignments);
                    if let Some(judgement) = call.judgement {
                        out.judgement = Some(match out.judgement.take() {
                            Some(earlier) => earlier.max(judgement),
                            None => judgement,
                        });
                    }
                    rest = call.inner;
                    continue;
                }
                Err(why) => {
                    out.judgement = Some(SegmentJudgement::owned(Ask, format!("xargs: {why}")));
                    break;
                }
            }
        }
        if let Some(spec) = wrapper_spec(&name) {
            match wrapper_options(&name, spec, &rest[1..]) {
                Ok((consumed, writes, judgement)) => {
                    out.wrappers.push(name);
                    out.writes.extend(writes);
                    if let Some(judgement) = judgement {
                        out.judgement = Some(match out.judgement.take() {
                            Some(earlier) => earlier.max(judgement),
                            None => judgement,
                        });
                    }
                    rest = rest[(1 + consumed).min(rest.len())..].to_vec();
                    continue;
                }
                Err(judgement) => {
                    out.judgement = Some(judgement);
                    break;
                }
            }
        }
        let (skip, value_flags): (usize, &[&str]) = match name.as_str() {
            "sudo" | "doas" => (
                1,
                &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"],
            ),
            "env" => (1, &["-u", "--unset", "-C", "--chdir"]),
            "chrt" => {
                out.judgement = Some(SegmentJudgement::new(
                    Ask,
                    "chrt sets real-time scheduling (it needs privilege and can starve the \
                     machine); approve it if that is intended",
                ));
                break;
            }
            "builtin" | "unbuffer" | "coproc" => (1, &[]),
            "busybox" => (1, &[]),
            "exec" => (1, &["-a"]),
            "command" => (1, &[]),
            _ => break,
        };
        let mut index = skip;
        while index < rest.len() {
            // GNU env accepts any unique prefix of a long option.
            let long = if name == "env" {
                crate::getopt::expand_long(&rest[index].text, ENV_LONG, &[])
            } else {
                std::borrow::Cow::Borrowed(rest[index].text.as_str())
            };
            let text = long.as_ref();
            if text == "--" {
                index += 1;
                break;
            }
            if name == "env" && !text.starts_with('-') && text.contains('=') {
                if let Some((var, value)) = text.split_once('=') {
                    out.assignments.push((
                        var.to_string(),
                        Word {
                            text: value.to_string(),
                            ..rest[index].clone()
                        },
                    ));
                }
                index += 1;
                continue;
            }
            let env_short = |flag: char| {
                text.starts_with('-') && !text.starts_with("--") && text.contains(flag)
            };
            if name == "env" && (env_short('C') || text.starts_with("--chdir")) {
                out.judgement = Some(SegmentJudgement::new(
                    Ask,
                    "env -C runs the command in another directory, so its paths are not judged",
                ));
                // `-C DIR`, `-CDIR`, `-iCDIR`, `--chdir=DIR`, `--chdir DIR`.
                let attached = match text.strip_prefix("--chdir") {
                    Some(long) => long.strip_prefix('='),
                    None => text.find('C').map(|at| &text[at + 1..]),
                };
                out.chdir = match attached.filter(|v| !v.is_empty()) {
                    Some(dir) => Some(Word {
                        text: dir.to_string(),
                        ..rest[index].clone()
                    }),
                    None => rest.get(index + 1).cloned(),
                };
            }
            if name == "time" && (text == "-o" || text == "--output") {
                out.writes.extend(rest.get(index + 1).cloned());
            }
            // GNU time: `-oFILE`, `--output=FILE` and its abbreviations.
            let attached = text
                .strip_prefix("--")
                .and_then(|l| l.split_once('='))
                .filter(|(name, _)| !name.is_empty() && "output".starts_with(name))
                .map(|(_, v)| v)
                .or_else(|| text.strip_prefix("-o").filter(|v| !v.is_empty()));
            if name == "time"
                && let Some(file) = attached
            {
                out.writes.push(Word {
                    text: file.to_string(),
                    ..rest[index].clone()
                });
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
                out.judgement = Some(SegmentJudgement::new(Ask, "runs with elevated privileges"));
            }
            if name == "env" && (env_short('S') || text.starts_with("--split-string")) {
                out.judgement = Some(
                    SegmentJudgement::new(Ask, "env -S runs a command split from a string")
                        .unseen("env -S splits the program from a string by its own rules"),
                );
            }
            // Clearing the environment, or removing a GIT_* variable from it, drops
            // the sandbox's protected git settings as setting one would replace them.
            if name == "env" {
                let unset = match text.strip_prefix("--unset") {
                    Some(long) => long.strip_prefix('=').map(str::to_string),
                    None if env_short('u') => text
                        .split_once('u')
                        .map(|(_, v)| v.to_string())
                        .filter(|v| !v.is_empty()),
                    None => None,
                }
                .or_else(|| {
                    (text.starts_with("--unset") || env_short('u'))
                        .then(|| rest.get(index + 1).map(|w| w.text.clone()))
                        .flatten()
                });
                if text == "--ignore-environment"
                    || env_short('i')
                    || unset.is_some_and(|v| v.starts_with("GIT_"))
                {
                    out.judgement = Some(SegmentJudgement::new(
                        Ask,
                        "env clears the environment or removes a GIT_* variable from it (the \
                         sandbox's protected git settings are carried there)",
                    ));
                }
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
        if matches!(name.as_str(), "exec" | "command" | "builtin" | "coproc") && !out.query_only {
            out.judgement.get_or_insert(SegmentJudgement::owned(
                Ask,
                format!("`{name}` runs a program in a way that is not analysed"),
            ));
        }
        if name == "sudo" || name == "doas" {
            let level = SegmentJudgement::new(Ask, "runs with elevated privileges");
            out.judgement.get_or_insert(level);
        }
        rest = rest[index.min(rest.len())..].to_vec();
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

#[cfg(test)]
mod tests {
    use super::LINK_FREE_WRITERS;

    #[test]
    fn link_free_writers_are_sorted_for_binary_search() {
        assert!(LINK_FREE_WRITERS.windows(2).all(|w| w[0] < w[1]));
    }
}
