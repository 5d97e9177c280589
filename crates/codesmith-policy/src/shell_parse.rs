//! Shell text to simple commands, through the `tree-sitter-bash` grammar.
//!
//! The parser splits a command line into the simple commands it would run:
//! every `&&`, `||`, `;`, `|`, `&` and newline separates them, and the
//! commands inside `$(…)`, backticks, `<(…)`, subshells, groups, loops and
//! function bodies are collected too. Words are evaluated statically where the
//! shell would not expand anything (quotes removed, backslashes resolved);
//! anything that depends on run time (`$VAR`, `$(…)`) is marked dynamic.
//!
//! Nothing here judges safety: see `classify` for that.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use tree_sitter::{Node, Parser, Tree};

use crate::heredoc::{Heredocs, collect_kind, heredocs_as_bash_reads};

/// One shell word after static evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The value with quotes and escapes removed; for dynamic words, the
    /// best-effort literal text (for example `$HOME/x`).
    pub text: String,
    /// True when the value is only known at run time (expansions,
    /// substitutions).
    pub dynamic: bool,
    /// True when the word holds a `$(…)`, backtick or `<(…)` substitution.
    pub substitution: bool,
    /// The construct that keeps this word from being fully understood
    /// (`None` for literals, quoted strings, decoded `$'…'` strings and
    /// plain `$NAME` / `${NAME}` expansions). A command with such a word
    /// can never earn an allow.
    pub opaque: Option<&'static str>,
    /// True when the word becomes zero or more words known only at run time: an unquoted
    /// glob (`*.txt`), an unquoted expansion (split into words), or what another program
    /// hands over (`find … -exec CMD {} +`). Such words may turn into more operands than
    /// written, or into options.
    pub expands: bool,
}

impl Word {
    pub(crate) fn literal(text: &str) -> Self {
        Word {
            text: text.to_string(),
            dynamic: false,
            substitution: false,
            opaque: None,
            expands: false,
        }
    }

    /// A word known only at run time, built by `construct`.
    pub(crate) fn opaque(text: &str, construct: &'static str) -> Self {
        Word {
            text: text.to_string(),
            dynamic: true,
            substitution: text.contains("$(") || text.contains('`'),
            opaque: Some(construct),
            expands: true,
        }
    }

    /// A plain `$NAME` / `${NAME}` expansion: known at run time, understood.
    fn expansion(text: &str) -> Self {
        Word {
            text: text.to_string(),
            dynamic: true,
            substitution: false,
            opaque: None,
            expands: true,
        }
    }

    fn absorb(&mut self, inner: Word) {
        self.text.push_str(&inner.text);
        self.dynamic |= inner.dynamic;
        self.substitution |= inner.substitution;
        self.expands |= inner.expands;
        if self.opaque.is_none() {
            self.opaque = inner.opaque;
        }
    }
}

impl AsRef<str> for Word {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// What a redirection does with its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RedirectKind {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`: writes the target path.
    Write,
    /// `<`: reads the target path.
    Read,
    /// `>&N`, `<&N`, `>&-`: duplicates or closes a descriptor.
    Duplicate,
}

/// A file redirection on a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
    /// True when a write truncates the target first (`>`, `>|`, `&>`,
    /// `>&file`), false for appends (`>>`, `&>>`) and other kinds.
    pub overwrite: bool,
}

/// One simple command as the shell would run it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SimpleCommand {
    /// Source text of the command (without its redirections).
    pub text: String,
    /// `NAME=value` prefixes (and the operands of `export`, `declare`,
    /// `local`, …): name and statically evaluated value.
    pub assignments: Vec<(String, Word)>,
    /// Command name followed by its arguments.
    pub words: Vec<Word>,
    /// File redirections that apply to it.
    pub redirects: Vec<Redirect>,
    /// True when its standard input comes from a pipe.
    pub piped_input: bool,
    /// Script text fed on standard input by a here-document or here-string.
    pub stdin_text: Option<String>,
    /// True when a here-document fed to it expands backticks we did not parse.
    pub stdin_unparsed_substitution: bool,
    /// The `( … )` subshell it runs in: 0 for the line's own shell, a fresh
    /// number per subshell otherwise (a `cd` there does not leak out).
    pub subshell: usize,
}

/// The result of parsing one command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ParsedScript {
    /// Simple commands in source order (substitutions after their host).
    pub commands: Vec<SimpleCommand>,
    /// False when the grammar reported a syntax error or missing token.
    pub ok: bool,
    /// True when the script defines a shell function.
    pub defines_function: bool,
    /// A function that starts itself in the background (the fork bomb's
    /// shape, whatever its name or spacing).
    pub fork_bomb: bool,
    /// A loop without end (`while :`, `while true`, `until false`) whose
    /// body starts a command in the background: `Some(true)` when that
    /// command is the script itself (`$0`), a fork bomb.
    pub fork_loop: Option<bool>,
    /// Script-level constructs that are not analysed (arithmetic commands,
    /// `[[ -v ]]`, unquoted here-documents with substitutions, …), named.
    pub constructs: Vec<&'static str>,
    /// The words a `for` / `select` loop variable takes (`for f in
    /// ~/.ssh/*`): the loop body reads them through the variable.
    pub loop_words: Vec<Word>,
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
    /// How many backtick bodies deep the parse running on this thread is.
    static NESTED: Cell<usize> = const { Cell::new(0) };
    /// How many walker steps deep (across nested parses) this thread is.
    static WALK_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Most levels of nodes one syntax tree may hold (about three per `$(…)`,
/// `( … )` or `{ …; }` nesting); a deeper line is left unparsed, so no
/// recursive step over the tree can overflow the stack.
const MAX_TREE_DEPTH: usize = 256;

/// Most walker steps inside one another, counted across the nested parses
/// of backtick bodies; deeper leaves the line unparsed.
const MAX_WALK_DEPTH: usize = 512;

/// Most backtick bodies inside one another that are parsed; deeper nesting
/// leaves the line unparsed.
const MAX_NESTED: usize = 16;

/// Most here-document line joins done before a line is left unparsed.
const MAX_HEREDOC_JOINS: usize = 4;

/// The grammar's tree for `source`. The thread's parser is taken out while
/// it works, so a parse started from a walk (a backtick body) gets a
/// parser of its own instead of a borrow panic.
fn parse_tree(source: &str) -> Option<Tree> {
    let mut parser = match PARSER.with(|cell| cell.borrow_mut().take()) {
        Some(parser) => parser,
        None => {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            parser
        }
    };
    let tree = parser.parse(source, None);
    PARSER.with(|cell| *cell.borrow_mut() = Some(parser));
    tree.filter(|tree| tree_depth(tree) <= MAX_TREE_DEPTH)
}

/// How many levels of nodes `tree` holds, counted without recursion.
fn tree_depth(tree: &Tree) -> usize {
    let mut cursor = tree.walk();
    let mut depth = 0usize;
    let mut deepest = 0usize;
    loop {
        deepest = deepest.max(depth);
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return deepest;
            }
            depth -= 1;
        }
    }
}

/// Parses `source` as bash. Never panics; a parser failure yields `ok = false`.
///
/// Flat lines with a pipeline of three or more stages are split first (see
/// `pipe_split`) because the grammar is slow on them; the result is the same.
pub(crate) fn parse(source: &str) -> ParsedScript {
    let mut source = Cow::Borrowed(source);
    if source.contains("<<") && source.contains("\\\n") {
        for _ in 0..MAX_HEREDOC_JOINS {
            match join_heredoc_continuations(&source) {
                Some(joined) => source = Cow::Owned(joined),
                None => break,
            }
        }
    }
    if let Some(joined) = join_glued_continuations(&source) {
        return parse_unjoined(&joined);
    }
    parse_unjoined(&source)
}

/// True when `source` parses as complete bash commands: no syntax error, nothing missing
/// (a closing quote, a here-document's end line, `fi`, `done`, …).
pub(crate) fn parses_whole(source: &str) -> bool {
    parse(source).ok
}

/// `source` with each line continuation (`\` at a line end) that joins two parts of one
/// word removed, as bash removes it before reading words (`tou\<newline>ch` is `touch`);
/// the grammar would read two words. `None` when there is none. A continuation inside
/// single quotes, a double-quoted string (its unescaping removes it), a here-document
/// body or a comment stays.
fn join_glued_continuations(source: &str) -> Option<String> {
    if !source.contains("\\\n") {
        return None;
    }
    let tree = parse_tree(source)?;
    let root = tree.root_node();
    let bytes = source.as_bytes();
    let mut cut = Vec::new();
    for (at, _) in source.match_indices("\\\n") {
        let escaped = bytes[..at]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count()
            % 2
            == 1;
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + 2).copied();
        let glued = |b: Option<u8>| b.is_some_and(|b| !b.is_ascii_whitespace());
        if escaped || !glued(before) || !glued(after) {
            continue;
        }
        // The backslash alone: a range over the newline would leave a comment that
        // ends there, and cut a `\` that only ends the comment.
        let mut node = root.descendant_for_byte_range(at, at + 1);
        let mut literal = false;
        while let Some(n) = node {
            if matches!(n.kind(), "command_substitution" | "process_substitution") {
                break;
            }
            if matches!(
                n.kind(),
                "raw_string" | "string" | "ansi_c_string" | "comment" | "heredoc_body"
            ) {
                literal = true;
                break;
            }
            node = n.parent();
        }
        if !literal {
            cut.push(at);
        }
    }
    if cut.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(source.len());
    let mut from = 0;
    for at in cut {
        out.push_str(&source[from..at]);
        from = at + 2;
    }
    out.push_str(&source[from..]);
    Some(out)
}

/// `source` with the line joins bash makes in its first unquoted
/// here-document whose end the grammar misplaces; `None` when there is none.
fn join_heredoc_continuations(source: &str) -> Option<String> {
    let tree = parse_tree(source)?;
    let Heredocs::Join(cuts) = heredocs_as_bash_reads(tree.root_node(), source) else {
        return None;
    };
    let mut out = String::with_capacity(source.len());
    let mut from = 0;
    for at in cuts {
        out.push_str(source.get(from..at)?);
        from = at + 2;
    }
    out.push_str(source.get(from..)?);
    Some(out)
}

fn parse_unjoined(source: &str) -> ParsedScript {
    if let Some(pipelines) = crate::pipe_split::split_flat(source)
        && pipelines.iter().any(|p| p.len() >= 3)
        && let Some(parsed) = parse_stages(&pipelines)
    {
        return parsed;
    }
    parse_whole(source, false)
}

/// Parses each stage on its own; `None` when a stage is empty or does not
/// parse (the caller then parses the whole line).
fn parse_stages(pipelines: &[Vec<&str>]) -> Option<ParsedScript> {
    let mut out = ParsedScript {
        ok: true,
        ..ParsedScript::default()
    };
    for pipeline in pipelines {
        for (index, stage) in pipeline.iter().enumerate() {
            if stage.trim().is_empty() {
                return None;
            }
            let part = parse_whole(stage, index > 0);
            if !part.ok {
                return None;
            }
            out.defines_function |= part.defines_function;
            out.fork_bomb |= part.fork_bomb;
            out.fork_loop = out.fork_loop.max(part.fork_loop);
            out.constructs.extend(part.constructs);
            out.commands.extend(part.commands);
            out.loop_words.extend(part.loop_words);
        }
    }
    Some(out)
}

/// Parses `source` in one piece; `piped` marks its commands as reading a pipe.
fn parse_whole(source: &str, piped: bool) -> ParsedScript {
    let Some(tree) = parse_tree(source) else {
        return ParsedScript {
            constructs: vec![
                "a line nested too deeply to analyse (or that the shell grammar could not read)",
            ],
            ..ParsedScript::default()
        };
    };
    let root = tree.root_node();
    let mut walker = Walker {
        subshell: 0,
        subshells: 0,
        brace_words: std::cell::Cell::new(0),
        src: source,
        out: ParsedScript {
            ok: !root.has_error(),
            ..ParsedScript::default()
        },
    };
    if source.contains("<<") && !matches!(heredocs_as_bash_reads(root, source), Heredocs::Agree) {
        walker.out.ok = false;
        walker.out.constructs.push(
            "a here-document whose end bash places elsewhere than the policy reads it \
             (a line joined by `\\` at its end, a delimiter line with spaces or tabs, or a \
             start line that continues)",
        );
    }
    if let Some(reason) = bash_disagrees(root, source) {
        walker.out.ok = false;
        walker.out.constructs.push(reason);
    }
    walker.walk(root, piped, &[]);
    walker.out
}

struct Walker<'s> {
    src: &'s str,
    out: ParsedScript,
    /// The subshell being walked (0: none) and the last number handed out.
    subshell: usize,
    subshells: usize,
    /// Words brace expansion has made so far on the line: each is judged, so the line's
    /// total is bounded ([`MAX_LINE_BRACE_WORDS`]), not only each word's.
    brace_words: std::cell::Cell<usize>,
}

impl<'s> Walker<'s> {
    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// Walks `node`, emitting simple commands. `piped` marks commands whose
    /// stdin is a pipe; `redirects` are redirections inherited from an
    /// enclosing `redirected_statement`. Past `MAX_WALK_DEPTH` steps inside
    /// one another the line is left unparsed instead.
    fn walk(&mut self, node: Node<'_>, piped: bool, redirects: &[Node<'_>]) {
        let depth = WALK_DEPTH.with(Cell::get);
        if depth >= MAX_WALK_DEPTH {
            self.too_deep();
            return;
        }
        WALK_DEPTH.with(|d| d.set(depth + 1));
        self.walk_node(node, piped, redirects);
        WALK_DEPTH.with(|d| d.set(depth));
    }

    /// Leaves the line unparsed: it nests deeper than the walk goes.
    fn too_deep(&mut self) {
        if self.out.ok {
            self.out
                .constructs
                .push("a line nested too deeply to analyse");
        }
        self.out.ok = false;
    }

    fn walk_node(&mut self, node: Node<'_>, piped: bool, redirects: &[Node<'_>]) {
        match node.kind() {
            "command" => self.command(node, piped, redirects),
            "subshell" => {
                let outer = self.subshell;
                self.subshells += 1;
                self.subshell = self.subshells;
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.walk(child, piped, redirects);
                }
                self.subshell = outer;
            }
            "pipeline" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                // A redirection after a pipeline belongs to its last stage.
                let last = children.len().saturating_sub(1);
                for (index, child) in children.into_iter().enumerate() {
                    let own: &[Node<'_>] = if index == last { redirects } else { &[] };
                    self.walk(child, piped || index > 0, own);
                }
            }
            "redirected_statement" => {
                let mut cursor = node.walk();
                let mut own: Vec<Node<'_>> = redirects.to_vec();
                own.extend(node.children_by_field_name("redirect", &mut cursor));
                let body_kind = node.child_by_field_name("body").map(|b| b.kind());
                if !matches!(body_kind, Some("command" | "pipeline"))
                    && own.iter().any(|r| !redirect_words(*r).is_empty())
                {
                    // Bash refuses `{ …; } >x y`; what the words would be is not known.
                    self.out
                        .constructs
                        .push("words after a redirection of a compound command");
                }
                if let Some(body) = node.child_by_field_name("body") {
                    self.walk(body, piped, &own);
                    let last_stage = if body.kind() == "pipeline" {
                        body.named_child(body.named_child_count().saturating_sub(1) as u32)
                    } else {
                        Some(body)
                    };
                    if last_stage.is_none_or(|stage| stage.kind() != "command") {
                        // A test, declaration, `case` or group may apply no
                        // redirection to a command of its own; the files
                        // are opened all the same (`[[ -f x ]] > f`).
                        let mut files = Vec::new();
                        for redirect in own.iter().skip(redirects.len()) {
                            collect_kind(*redirect, "file_redirect", &mut files);
                        }
                        if !files.is_empty() {
                            self.bare_redirects(node, piped, &files);
                        }
                    }
                } else {
                    self.bare_redirects(node, piped, &own);
                }
                // Substitutions inside redirect targets still run, and the
                // grammar hangs what follows a here-document's start line
                // (`cat <<EOF | sh`, `cat <<EOF && rm x`) under the redirect.
                for redirect in own.iter().skip(redirects.len()) {
                    self.walk_substitutions(*redirect);
                    if redirect.kind() == "heredoc_redirect" {
                        self.heredoc_tail(*redirect);
                    }
                }
            }
            "command_substitution" if self.text(node).starts_with('`') => self.backticks(node),
            "command_substitution" | "process_substitution" => {
                // Commands in `>(…)` read what the outer command writes.
                let reads_writer = self.text(node).starts_with(">(");
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.walk(child, reads_writer, &[]);
                }
            }
            "function_definition" => {
                self.out.defines_function = true;
                if let Some(body) = node.child_by_field_name("body") {
                    if let Some(name) = node.child_by_field_name("name") {
                        let name = self.text(name).to_string();
                        if self.starts_itself_in_background(body, &name) {
                            self.out.fork_bomb = true;
                        }
                    }
                    self.walk(body, false, &[]);
                }
            }
            "compound_statement" if self.text(node).starts_with("((") => {
                self.out.constructs.push("an arithmetic command `((…))`");
                self.walk_substitutions(node);
            }
            "while_statement" | "until_statement" if self.forks_without_end(node) => {
                let body = node
                    .child_by_field_name("body")
                    .map_or("", |b| self.text(b));
                let itself = body.contains("$0") || body.contains("BASH_SOURCE");
                self.out.fork_loop = self.out.fork_loop.max(Some(itself));
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.walk(child, piped, redirects);
                }
            }
            "c_style_for_statement" => {
                self.out.constructs.push("an arithmetic `for ((…))` loop");
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.walk(child, piped, &[]);
                }
            }
            "test_command" => {
                let text = self.text(node);
                let evaluates = text.split_whitespace().any(|t| {
                    matches!(
                        t,
                        "-v" | "-R" | "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge"
                    )
                });
                if evaluates || text.starts_with("((") {
                    self.out
                        .constructs
                        .push("a test that evaluates variables (`-v`, arithmetic comparison)");
                }
                // In `[ … ]` (a plain command) an unescaped `<` or `>` is a
                // redirection that opens a file; the grammar reads a comparison.
                let mut comparisons = Vec::new();
                collect_kind(node, "binary_expression", &mut comparisons);
                if !text.starts_with("[[")
                    && !text.starts_with("((")
                    && comparisons.iter().any(|c| {
                        c.child_by_field_name("operator")
                            .is_some_and(|op| matches!(op.kind(), "<" | ">" | ">>" | "<<"))
                    })
                {
                    self.out
                        .constructs
                        .push("an unescaped `<` or `>` inside `[ … ]` (bash opens a file there)");
                }
                self.walk_substitutions(node);
            }
            "for_statement" | "select_statement" => {
                let mut cursor = node.walk();
                let values: Vec<Node<'_>> =
                    node.children_by_field_name("value", &mut cursor).collect();
                // Over words only known at run time (`$(seq 1 100000)`),
                // a body that starts commands in the background may start
                // any number of them.
                let unbounded = values.iter().any(|v| {
                    let t = self.text(*v);
                    t.contains('$') || t.contains('`') || t.contains(['*', '?'])
                });
                for value in values {
                    let mut words = Vec::new();
                    self.push_words(value, &mut words);
                    self.out.loop_words.extend(words);
                }
                if unbounded
                    && let Some(body) = node.child_by_field_name("body")
                    && backgrounds(self.text(body).as_bytes())
                {
                    self.out.constructs.push(
                        "a loop over words only known at run time that starts commands in the \
                         background (how many pile up is not known)",
                    );
                }
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.walk(child, piped, redirects);
                }
            }
            "declaration_command" | "unset_command" => self.declaration(node, piped),
            "variable_assignment" | "variable_assignments" => {
                let mut command = SimpleCommand {
                    piped_input: piped,
                    subshell: self.subshell,
                    text: self.text(node).to_string(),
                    ..SimpleCommand::default()
                };
                self.assignment(node, &mut command);
                let index = self.out.commands.len();
                self.walk_substitutions(node);
                self.out
                    .commands
                    .insert(index.min(self.out.commands.len()), command);
            }
            "file_redirect" if redirects.is_empty() => {
                // A redirection with no command (`> a.txt`) still opens,
                // and truncates, its file.
                self.bare_redirects(node, piped, &[node]);
                self.walk_substitutions(node);
            }
            "heredoc_redirect" | "herestring_redirect" | "file_redirect" => {
                self.walk_substitutions(node);
            }
            // Statements that hold statements: each one is walked.
            "program" | "list" | "negated_command" | "if_statement" | "elif_clause"
            | "else_clause" | "while_statement" | "do_group" | "case_statement" | "case_item"
            | "compound_statement" | "ERROR" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.walk(child, piped, redirects);
                }
            }
            // Words and expressions where a statement may stand (a `case`
            // subject or pattern, a loop's arithmetic): only what their
            // substitutions run.
            "word"
            | "number"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "translated_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "arithmetic_expansion"
            | "brace_expression"
            | "extglob_pattern"
            | "regex"
            | "variable_name"
            | "special_variable_name"
            | "string_content"
            | "array"
            | "subscript"
            | "binary_expression"
            | "unary_expression"
            | "ternary_expression"
            | "postfix_expression"
            | "parenthesized_expression"
            | "test_operator"
            | "comment" => self.walk_substitutions(node),
            _ => {
                // A construct this walker does not know: what it runs is not
                // known, so nothing on the line may be allowed. (Inside a
                // syntax error the line is already unparsed.)
                if self.out.ok {
                    self.out
                        .constructs
                        .push("a shell construct the command policy does not recognise");
                }
                self.out.ok = false;
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.walk(child, piped, redirects);
                }
            }
        }
    }

    /// Walks a backtick substitution as bash reads it: its body ends at
    /// the first backtick no backslash escapes (quotes do not protect one),
    /// and bash removes the backslash before `` ` ``, `$` and `\` (and `"`
    /// inside double quotes) before it runs the body as a script of its own,
    /// so `` \` `` opens a nested substitution. A body with such escapes is
    /// parsed again after removing them; one whose end the grammar places
    /// elsewhere leaves the line unparsed.
    fn backticks(&mut self, node: Node<'_>) {
        let raw = self.text(node);
        let bytes = raw.as_bytes();
        let mut i = 1;
        let mut end = None;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'`' => {
                    end = Some(i);
                    break;
                }
                _ => i += 1,
            }
        }
        if raw.len() < 2 || end != Some(raw.len() - 1) {
            self.out.ok = false;
            self.out.constructs.push(
                "backticks whose end bash places elsewhere than the policy reads it (a quote \
                 does not protect a backtick inside backticks)",
            );
            return;
        }
        let body = &raw[1..raw.len() - 1];
        let unescaped = unescape_backticks(body, self.inside_double_quotes(node));
        if unescaped == body {
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
            for child in children {
                self.walk(child, false, &[]);
            }
            return;
        }
        let depth = NESTED.with(Cell::get);
        if depth >= MAX_NESTED {
            self.out.ok = false;
            self.out
                .constructs
                .push("backticks nested too deeply to analyse");
            return;
        }
        NESTED.with(|n| n.set(depth + 1));
        let nested = parse(&unescaped);
        NESTED.with(|n| n.set(depth));
        self.merge_nested(nested);
    }

    /// True when `node` sits inside a double-quoted string of the script it
    /// belongs to (not of an enclosing substitution's host).
    fn inside_double_quotes(&self, node: Node<'_>) -> bool {
        let mut node = node.parent();
        while let Some(n) = node {
            match n.kind() {
                "string" => return true,
                "command_substitution" | "process_substitution" | "program" => return false,
                _ => node = n.parent(),
            }
        }
        false
    }

    /// Adds what a script nested in this one (a backtick body) runs.
    fn merge_nested(&mut self, nested: ParsedScript) {
        self.out.ok &= nested.ok;
        self.out.defines_function |= nested.defines_function;
        self.out.fork_bomb |= nested.fork_bomb;
        self.out.fork_loop = self.out.fork_loop.max(nested.fork_loop);
        self.out.constructs.extend(nested.constructs);
        self.out.loop_words.extend(nested.loop_words);
        let base = self.subshells;
        for mut command in nested.commands {
            command.subshell = match command.subshell {
                0 => self.subshell,
                n => base + n,
            };
            self.subshells = self.subshells.max(command.subshell);
            self.out.commands.push(command);
        }
    }

    /// Emits a command with no words for redirections that stand alone
    /// (`> a.txt`, `: > a.txt` is a command): the shell still opens them.
    fn bare_redirects(&mut self, node: Node<'_>, piped: bool, redirects: &[Node<'_>]) {
        let mut command = SimpleCommand {
            piped_input: piped,
            subshell: self.subshell,
            text: self.text(node).trim().to_string(),
            ..SimpleCommand::default()
        };
        for redirect in redirects {
            self.redirect(*redirect, &mut command);
        }
        self.out.commands.push(command);
    }

    /// Walks the commands the grammar nests inside a `heredoc_redirect`
    /// after its start line. After `|` they read a pipe; after `&&`, `||` or
    /// `;` they do not.
    fn heredoc_tail(&mut self, node: Node<'_>) {
        let arguments = argument_children(node);
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        let mut after_pipe = false;
        for child in children {
            if !child.is_named() {
                let op = self.text(child);
                after_pipe = op == "|" || op == "|&";
                continue;
            }
            if arguments.contains(&child) {
                continue;
            }
            match child.kind() {
                "heredoc_start" | "heredoc_body" | "heredoc_end" | "file_redirect" => {}
                _ => {
                    let piped = after_pipe
                        || child.kind() == "pipeline" && !self.follows_list_operator(child);
                    self.walk(child, piped, &[]);
                }
            }
        }
    }

    /// True when the token before `node` is `&&`, `||` or `;`.
    fn follows_list_operator(&self, node: Node<'_>) -> bool {
        node.prev_sibling()
            .is_some_and(|p| matches!(self.text(p), "&&" | "||" | ";"))
    }

    /// Emits the commands of any substitution below `node`.
    fn walk_substitutions(&mut self, node: Node<'_>) {
        let depth = WALK_DEPTH.with(Cell::get);
        if depth >= MAX_WALK_DEPTH {
            self.too_deep();
            return;
        }
        WALK_DEPTH.with(|d| d.set(depth + 1));
        self.walk_substitutions_below(node);
        WALK_DEPTH.with(|d| d.set(depth));
    }

    fn walk_substitutions_below(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        let heredoc = node.kind() == "heredoc_redirect";
        for child in children {
            if heredoc && !matches!(child.kind(), "heredoc_body" | "file_redirect") {
                continue;
            }
            match child.kind() {
                "command_substitution" | "process_substitution" => self.walk(child, false, &[]),
                _ => self.walk_substitutions(child),
            }
        }
    }

    fn command(&mut self, node: Node<'_>, piped: bool, inherited: &[Node<'_>]) {
        let first_index = self.out.commands.len();
        let mut command = SimpleCommand {
            piped_input: piped,
            subshell: self.subshell,
            ..SimpleCommand::default()
        };
        let mut start = None;
        let mut end = node.start_byte();
        let mut redirect_nodes: Vec<Node<'_>> = inherited.to_vec();
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        // Where each redirection starts: a word glued to one (`{fd}<x`,
        // `3<<<x`) names its descriptor, not an argument.
        let redirect_starts: Vec<usize> = inherited
            .iter()
            .chain(children.iter().filter(|c| {
                matches!(
                    c.kind(),
                    "file_redirect" | "heredoc_redirect" | "herestring_redirect"
                )
            }))
            .map(Node::start_byte)
            .collect();
        // The source text of each word, for `text` when the words are not
        // one stretch of source.
        let mut pieces: Vec<&str> = Vec::new();
        let mut respelled = false;
        for child in children {
            match child.kind() {
                "variable_assignment" => {
                    self.assignment(child, &mut command);
                    self.walk_substitutions(child);
                }
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    redirect_nodes.push(child);
                    self.walk_substitutions(child);
                    if child.kind() == "heredoc_redirect" {
                        self.heredoc_tail(child);
                    }
                    continue;
                }
                "command_name" => {
                    let word = child.named_child(0).unwrap_or(child);
                    self.push_words(word, &mut command.words);
                    self.walk_substitutions(child);
                    pieces.push(self.text(child));
                }
                _ if redirect_starts.contains(&child.end_byte())
                    && self.names_descriptor(child) =>
                {
                    self.walk_substitutions(child);
                    respelled = true;
                    continue;
                }
                _ => {
                    self.push_words(child, &mut command.words);
                    if matches!(
                        child.kind(),
                        "command_substitution" | "process_substitution"
                    ) {
                        self.walk(child, false, &[]);
                    } else {
                        self.walk_substitutions(child);
                    }
                    pieces.push(self.text(child));
                }
            }
            start.get_or_insert(child.start_byte());
            end = child.end_byte();
        }
        // Words the grammar files under a redirection (`tee <x FILE`,
        // `cat <<EOF FILE`) are arguments of the command, in order.
        for redirect in &redirect_nodes {
            for word in redirect_words(*redirect) {
                self.push_words(word, &mut command.words);
                pieces.push(self.text(word));
                respelled = true;
            }
        }
        let start = start.unwrap_or(node.start_byte());
        command.text = if respelled {
            pieces.join(" ")
        } else {
            self.src.get(start..end).unwrap_or("").trim().to_string()
        };
        for redirect in redirect_nodes {
            self.redirect(redirect, &mut command);
        }
        // The host command comes before the commands of its substitutions
        // so segment order follows reading order.
        self.out
            .commands
            .insert(first_index.min(self.out.commands.len()), command);
    }

    /// True when `word`, glued to the redirection after it, is the
    /// descriptor bash redirects rather than an argument: digits (`3<<<x`)
    /// or `{NAME}` (`{fd}<x`, which stores a new descriptor in `NAME`). A
    /// `{NAME[…]}` there evaluates a subscript: the line is then marked as
    /// not analysed.
    fn names_descriptor(&mut self, word: Node<'_>) -> bool {
        let raw = self.text(word);
        if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
            return true;
        }
        let Some(name) = raw.strip_prefix('{').and_then(|r| r.strip_suffix('}')) else {
            return false;
        };
        if name.contains('[') {
            self.out
                .constructs
                .push("a redirection that stores its descriptor in an array element `{name[…]}`");
            return true;
        }
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    }

    fn redirect(&mut self, node: Node<'_>, command: &mut SimpleCommand) {
        match node.kind() {
            "heredoc_redirect" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                let quoted = children
                    .iter()
                    .find(|c| c.kind() == "heredoc_start")
                    .is_some_and(|c| {
                        let t = self.text(*c);
                        t.contains('\'') || t.contains('"') || t.contains('\\')
                    });
                for child in children {
                    match child.kind() {
                        "heredoc_body" => {
                            let body = self.text(child).to_string();
                            if !quoted && body.contains('`') {
                                command.stdin_unparsed_substitution = true;
                            }
                            if !quoted && expands_code(&body) {
                                self.out.constructs.push(
                                    "an unquoted here-document whose body runs substitutions",
                                );
                            }
                            command.stdin_text = Some(body);
                        }
                        "file_redirect" => self.redirect(child, command),
                        _ => {}
                    }
                }
            }
            "herestring_redirect" => {
                let mut cursor = node.walk();
                let value = node
                    .named_children(&mut cursor)
                    .filter(|c| c.kind() != "file_descriptor")
                    .last()
                    .map(|c| self.word(c))
                    .unwrap_or_else(|| Word::literal(""));
                if let Some(construct) = value.opaque {
                    self.out.constructs.push(construct);
                }
                command.stdin_text = Some(value.text);
            }
            "file_redirect" => {
                let mut cursor = node.walk();
                let mut operator = String::new();
                for child in node.children(&mut cursor) {
                    if !child.is_named() {
                        operator.push_str(self.text(child));
                    }
                }
                let target = node
                    .child_by_field_name("destination")
                    .filter(|_| !operator.ends_with('-'))
                    .map(|c| {
                        let raw = self.text(c);
                        if raw.contains('{') && brace_pattern(raw).is_some() {
                            Word::opaque(raw, "a brace expansion in a redirection")
                        } else {
                            self.word(c)
                        }
                    })
                    .unwrap_or_else(|| Word::literal(""));
                // `>&N`, `<&N` and `>&-` duplicate or close a descriptor;
                // with any other target `>&` (and `N>&`) writes a file,
                // as `&>` does (bash's `>&word` form).
                let descriptor = operator.ends_with('-')
                    || (target.text.is_empty() && target.opaque.is_none())
                    || !target.dynamic
                        && (target.text == "-"
                            || (!target.text.is_empty()
                                && target.text.chars().all(|c| c.is_ascii_digit())));
                let kind = if operator.contains('&') && !operator.starts_with('&') && descriptor {
                    RedirectKind::Duplicate
                } else if operator.starts_with('<') && !operator.contains('>') {
                    RedirectKind::Read
                } else {
                    RedirectKind::Write
                };
                let overwrite = kind == RedirectKind::Write && !operator.contains(">>");
                command.redirects.push(Redirect {
                    kind,
                    target,
                    overwrite,
                });
            }
            _ => {}
        }
    }

    /// What a command substitution prints when it is `echo` of one plain
    /// word (`$(echo ls)`, `` `echo pwd` ``): exactly that word, so it is
    /// known before the line runs. `None` for anything else.
    fn static_echo(&self, node: Node<'_>) -> Option<String> {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        let [command] = children.as_slice() else {
            return None;
        };
        if command.kind() != "command" {
            return None;
        }
        let mut cursor = command.walk();
        let parts: Vec<Node<'_>> = command.named_children(&mut cursor).collect();
        let [name, argument] = parts.as_slice() else {
            return None;
        };
        if name.kind() != "command_name" || self.text(*name) != "echo" || argument.kind() != "word"
        {
            return None;
        }
        let text = self.text(*argument);
        let plain = !text.is_empty()
            && !text.starts_with('-')
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '+'));
        plain.then(|| text.to_string())
    }

    /// Statically evaluates a word-like node.
    fn word(&self, node: Node<'_>) -> Word {
        let raw = self.text(node);
        // Any leaf whose text bash still expands may hide a backtick the grammar kept as text.
        let leaf = node.named_child_count() == 0
            && !matches!(
                node.kind(),
                "raw_string" | "ansi_c_string" | "command_substitution"
            );
        if leaf && has_unescaped(raw, &['`']) {
            return Word::opaque(raw, "a backtick the policy cannot pair");
        }
        match node.kind() {
            "word" | "number" => Word {
                expands: has_unescaped(raw, GLOB),
                ..Word::literal(&unescape_unquoted(raw))
            },
            "raw_string" => Word::literal(raw.trim_start_matches('\'').trim_end_matches('\'')),
            "ansi_c_string" => Word::literal(&decode_ansi_c(raw)),
            "simple_expansion" => Word::expansion(raw),
            "expansion" if is_plain_braced_name(raw) => Word::expansion(raw),
            "expansion" => Word::opaque(raw, "a parameter expansion with an operator (`${…}`)"),
            "arithmetic_expansion" => Word::opaque(raw, "an arithmetic expansion `$((…))`"),
            "command_substitution" => match self.static_echo(node) {
                Some(text) => Word::literal(&text),
                None => Word::opaque(raw, "a command substitution"),
            },
            "process_substitution" => Word::opaque(raw, "a process substitution"),
            "string" => {
                let mut cursor = node.walk();
                let mut word = Word::literal("");
                let mut saw_child = false;
                for child in node.named_children(&mut cursor) {
                    saw_child = true;
                    if child.kind() == "string_content" && !has_unescaped(self.text(child), &['`'])
                    {
                        word.text
                            .push_str(&unescape_double_quoted(self.text(child)));
                    } else {
                        word.absorb(self.word(child));
                    }
                }
                if !saw_child {
                    let inner = raw.strip_prefix('"').unwrap_or(raw);
                    let inner = inner.strip_suffix('"').unwrap_or(inner);
                    word.text = unescape_double_quoted(inner);
                }
                // Inside double quotes nothing is split or globbed.
                word.expands = false;
                word
            }
            "concatenation" => {
                let mut cursor = node.walk();
                let mut word = Word::literal("");
                let mut saw_child = false;
                for child in node.named_children(&mut cursor) {
                    saw_child = true;
                    word.absorb(self.word(child));
                }
                if !saw_child {
                    word.text = unescape_unquoted(raw);
                    word.expands = has_unescaped(raw, GLOB);
                }
                word
            }
            "translated_string" => Word::opaque(raw, "a locale-translated string `$\"…\"`"),
            "brace_expression" => Word::literal(raw),
            _ => Word::opaque(raw, "a shell construct that is not analysed"),
        }
    }

    /// Pushes the word(s) `node` stands for: brace expansion
    /// (`{a,b}`, `{1..3}`) is done here, before anything is judged.
    fn push_words(&self, node: Node<'_>, out: &mut Vec<Word>) {
        let word = self.word(node);
        let raw = self.text(node);
        if !matches!(node.kind(), "word" | "concatenation" | "brace_expression")
            || !raw.contains('{')
            || word.opaque.is_some()
        {
            out.push(word);
            return;
        }
        let plain = node.kind() != "concatenation" || {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .all(|c| matches!(c.kind(), "word" | "brace_expression" | "number"))
        };
        if !plain || raw.contains('\\') {
            if brace_pattern(raw).is_some() {
                out.push(Word::opaque(raw, "a brace expansion mixed with quoting"));
            } else {
                out.push(word);
            }
            return;
        }
        let expanded = expand_braces(raw, MAX_BRACE_WORDS).filter(|words| {
            let total = self.brace_words.get() + words.len();
            self.brace_words.set(total);
            total <= MAX_LINE_BRACE_WORDS
        });
        match expanded {
            Some(words) => out.extend(words.iter().map(|w| Word {
                dynamic: word.dynamic,
                expands: word.expands,
                ..Word::literal(w)
            })),
            None => out.push(Word::opaque(raw, "a brace expansion too large to analyse")),
        }
    }

    /// Records one `NAME=value` assignment on `command`.
    fn assignment(&self, node: Node<'_>, command: &mut SimpleCommand) {
        let name_node = node.child_by_field_name("name");
        let name = name_node.map(|n| self.text(n)).unwrap_or("");
        let mut value = node
            .child_by_field_name("value")
            .map(|v| self.word(v))
            .unwrap_or_else(|| Word::literal(""));
        if name_node.is_some_and(|n| n.kind() == "subscript") {
            value = Word::opaque(
                self.text(node),
                "an array subscript (evaluated as arithmetic)",
            );
        }
        if self.text(node).contains("+=") && value.opaque.is_none() {
            value.dynamic = true;
        }
        let name = name.split('[').next().unwrap_or(name).to_string();
        command.assignments.push((name, value));
    }

    /// `export`, `declare`, `local`, `typeset`, `readonly`, `unset` become a
    /// simple command: the keyword, its flags, and assignments.
    fn declaration(&mut self, node: Node<'_>, piped: bool) {
        let index = self.out.commands.len();
        let mut command = SimpleCommand {
            piped_input: piped,
            subshell: self.subshell,
            text: self.text(node).to_string(),
            ..SimpleCommand::default()
        };
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            if !child.is_named() {
                command.words.push(Word::literal(self.text(child)));
                continue;
            }
            match child.kind() {
                "variable_assignment" => self.assignment(child, &mut command),
                "variable_name" => command.words.push(Word::literal(self.text(child))),
                _ => self.push_words(child, &mut command.words),
            }
            self.walk_substitutions(child);
        }
        self.out
            .commands
            .insert(index.min(self.out.commands.len()), command);
    }

    /// True when `body` (a function body) runs the function `name` and
    /// puts something in the background with `&`.
    /// True when the loop `node` never ends by its condition (`while :`,
    /// `while true`, `until false`) and its body starts a command in the
    /// background (`&` that is not `&&`, `>&` or `&>`).
    fn forks_without_end(&self, node: Node<'_>) -> bool {
        let text = self.text(node);
        let until = text.starts_with("until");
        let Some(body) = node.child_by_field_name("body") else {
            return false;
        };
        let head = text[..body.start_byte().saturating_sub(node.start_byte())]
            .trim_start_matches(if until { "until" } else { "while" })
            .trim()
            .trim_end_matches(';')
            .trim();
        let endless = if until {
            matches!(head, "false" | "! true" | "! :")
        } else {
            matches!(head, ":" | "true" | "[ 1 ]" | "[[ 1 ]]")
        };
        endless && backgrounds(self.text(body).as_bytes())
    }

    fn starts_itself_in_background(&self, body: Node<'_>, name: &str) -> bool {
        let text = self.text(body);
        let bytes = text.as_bytes();
        let background = bytes.iter().enumerate().any(|(i, b)| {
            *b == b'&'
                && bytes.get(i + 1) != Some(&b'&')
                && bytes.get(i + 1) != Some(&b'>')
                && (i == 0 || !matches!(bytes[i - 1], b'&' | b'>' | b'<'))
        });
        background && self.calls(body, name)
    }

    fn calls(&self, node: Node<'_>, name: &str) -> bool {
        if node.kind() == "command_name" && self.text(node) == name {
            return true;
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        children.into_iter().any(|c| self.calls(c, name))
    }
}

/// Node kinds a command-ending newline may stand in directly: between the
/// statements of a script, a group, a loop or a substitution, or after an
/// operator (`&&`, `|`) that lets the command go on on the next line.
const NEWLINE_HOLDERS: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "compound_statement",
    "subshell",
    "do_group",
    "if_statement",
    "elif_clause",
    "else_clause",
    "while_statement",
    "for_statement",
    "select_statement",
    "c_style_for_statement",
    "case_statement",
    "case_item",
    "function_definition",
    "command_substitution",
    "process_substitution",
];

/// Why the grammar's tree for `source` does not read the line as bash does, or `None`.
/// Checked independently of the grammar:
/// - every newline bash ends a command at (see `bash_command_newlines`) separates
///   statements in the tree: a tree that carries a command, word or comment across it
///   (`echo ==⏎rm x`, `ls⏎\rm x`, `ls #\⏎rm x`, `git log \<CR><LF>rm x`) hides what runs;
/// - no form feed, vertical tab or carriage return stands outside quotes (bash's blanks
///   are only space and tab, so a `#` after one is not a comment);
/// - every `$'…'` ends where bash ends it (`\\` is one backslash, `\'` a quote);
/// - no `[[ … =~ … ]]` regex holds a substitution the grammar kept as text.
fn bash_disagrees(root: Node<'_>, source: &str) -> Option<&'static str> {
    let mut heredocs = Vec::new();
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let text = source.get(node.byte_range()).unwrap_or("");
        match node.kind() {
            // From the start of its first line (`<<-` bodies start after tabs).
            "heredoc_body" | "heredoc_end" => {
                let start = source
                    .get(..node.start_byte())
                    .and_then(|s| s.rfind('\n'))
                    .map_or(0, |n| n + 1);
                heredocs.push(start..node.end_byte());
            }
            "ansi_c_string" if ansi_c_end(text) != Some(text.len().saturating_sub(1)) => {
                return Some(
                    "a `$'…'` string whose end bash places elsewhere than the policy reads it",
                );
            }
            // A quote the grammar kept as plain pattern text: bash reads it as opening a
            // quoted string, so its words end elsewhere (`[[ x =~ a" ]]; echo " ]]`).
            "regex" | "extglob_pattern" | "word"
                if node.child_count() == 0 && has_unescaped_quote(text) =>
            {
                return Some("a quote the policy reads as plain text inside a pattern or word");
            }
            "regex"
                if text.contains('`')
                    || text.contains("<(")
                    || text.contains(">(")
                    || text.matches("$(").count() > {
                        let mut found = Vec::new();
                        collect_kind(node, "command_substitution", &mut found);
                        found.len()
                    } =>
            {
                return Some("a substitution inside a `[[ … =~ … ]]` regex");
            }
            _ => {}
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return newlines_disagree(root, source, &heredocs);
            }
        }
    }
}

/// Part of `bash_disagrees`: the newline check, given the here-document bodies and end
/// lines the tree holds (`heredocs_as_bash_reads` has checked they are where bash puts them).
fn newlines_disagree(
    root: Node<'_>,
    source: &str,
    heredocs: &[std::ops::Range<usize>],
) -> Option<&'static str> {
    // Sorted and merged for binary search (a body and its end line may nest or touch).
    let mut merged: Vec<std::ops::Range<usize>> = heredocs.to_vec();
    merged.sort_by_key(|r| r.start);
    merged.dedup_by(|later, earlier| {
        if later.start <= earlier.end {
            earlier.end = earlier.end.max(later.end);
            true
        } else {
            false
        }
    });
    let mut starts: Vec<usize> = heredocs.iter().map(|h| h.start).collect();
    starts.sort_unstable();
    let heredocs = merged.as_slice();
    let (newlines, comments) = match bash_reading(source, heredocs) {
        Ok(reading) => reading,
        Err(reason) => return Some(reason),
    };
    // A comment the grammar sees where bash sees a word (`{ ls; }#`, `ls \ #`) hides the
    // rest of the line from the policy while bash runs it.
    // The comments the grammar reads must be the ones bash reads, both ways: one the
    // grammar sees where bash reads a word (`{ ls; }#`, `ls \ #`) hides what runs, and one
    // bash-side only (`[[ x =~ ( #" ) ]]`) shows the two readings out of step.
    let mut cursor = root.walk();
    let mut stack = vec![root];
    let mut tree_comments = Vec::new();
    while let Some(node) = stack.pop() {
        if node.kind() == "comment" {
            let start = node.start_byte();
            if range_holding(heredocs, start).is_none() {
                tree_comments.push(start);
            }
        }
        stack.extend(node.children(&mut cursor));
    }
    tree_comments.sort_unstable();
    if tree_comments != comments {
        return Some("a comment the policy and bash read in different places");
    }
    for at in newlines {
        // The newline that ends a here-document's start line: its body follows.
        if starts.binary_search(&(at + 1)).is_ok() || starts.binary_search(&at).is_ok() {
            continue;
        }
        let mut node = root.descendant_for_byte_range(at, at + 1);
        while let Some(n) = node {
            if !n.is_named() {
                node = n.parent();
                continue;
            }
            if !NEWLINE_HOLDERS.contains(&n.kind()) {
                return Some(
                    "a newline bash ends a command at that the policy reads inside one \
                     command or comment",
                );
            }
            break;
        }
    }
    None
}

/// True when `text` holds a `'` or `"` not escaped by a `\`.
fn has_unescaped_quote(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' | b'"' => return true,
            _ => i += 1,
        }
    }
    false
}

/// The range of `ranges` (sorted by start, not overlapping: here-document bodies and end
/// lines in the order they come) that holds `at`, found by binary search so a line with
/// thousands of here-documents is read in time proportional to its length.
fn range_holding(ranges: &[std::ops::Range<usize>], at: usize) -> Option<&std::ops::Range<usize>> {
    let index = ranges.partition_point(|r| r.end <= at);
    ranges.get(index).filter(|r| r.contains(&at))
}

/// Where a `$'…'` string (`text` starts with `$'`) ends as bash reads it: the offset
/// of its closing quote. A backslash takes the next character with it, so `\\` is one
/// backslash and `\'` a quote; `None` when it does not end.
fn ansi_c_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 2;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// One open construct while `bash_command_newlines` scans.
enum Open {
    /// Commands: the line itself or a `$(…)`, with the `(` opened inside it and
    /// the `case … esac` it is in (where a `)` closes a pattern, not the `$(…)`).
    Code { parens: usize, cases: usize },
    /// `"…"` or `$"…"`: newlines are quoted.
    Double,
    /// `` `…` ``: ends at the first unescaped backtick; quotes do not protect one.
    Backtick,
    /// `${…}`; `quoted` when inside double quotes.
    Brace { quoted: bool },
}

/// The offsets of the newlines at which bash ends a command in `src`, read with bash's
/// rules and without the grammar (`skip`: here-document bodies and end lines, which
/// bash reads as text). A newline is such an end unless it is quoted (`'…'`, `"…"`,
/// `$'…'`), escaped by an unquoted `\` (a line continuation), or inside `${…}`.
/// A comment starts with `#` at the start of a word (after a blank, a newline or one
/// of `;&|()<>`) and runs to the newline whatever it ends with, so `#…\⏎` still ends
/// the command. When in doubt a newline counts as an end: inside backticks every
/// newline (quotes there are the body's business, and a re-parse checks the body),
/// and inside `${…}` too; the caller then asks when the grammar disagrees.
///
/// # Errors
/// A reason when the scan meets what it does not follow: a form feed, vertical tab
/// or carriage return outside quotes (not a blank to bash, but to the grammar), an
/// unterminated quote, or a `'` inside `${…}` inside double quotes.
#[cfg(test)]
fn bash_command_newlines(
    src: &str,
    skip: &[std::ops::Range<usize>],
) -> Result<Vec<usize>, &'static str> {
    bash_reading(src, skip).map(|(ends, _)| ends)
}

/// Where bash ends commands at newlines, as `bash_command_newlines` says (the same rules
/// and errors), with the offsets, in ascending order, of the `#` that start a comment as
/// bash reads it (the tree's comments must start at one of them). A `case` inside `$(…)`
/// is an error: its `)` may close a pattern or the substitution.
fn bash_reading(
    src: &str,
    skip: &[std::ops::Range<usize>],
) -> Result<(Vec<usize>, Vec<usize>), &'static str> {
    const CASE_IN_SUBSTITUTION: &str = "a `case` inside `$(…)`, whose `)` the policy cannot \
                                        pair for certain";
    let mut comments = Vec::new();
    const CONTROL: &str = "a form feed, vertical tab or carriage return outside quotes \
                           (bash does not read it as a blank)";
    const UNTERMINATED: &str = "a quote the shell reading does not see closed";
    let bytes = src.as_bytes();
    let mut ends = Vec::new();
    let mut stack = vec![Open::Code {
        parens: 0,
        cases: 0,
    }];
    // A blank or operator escaped by a `\` is part of a word (`ls \ #x` is one word `ls`
    // and one word ` #x`), so a `#` after it starts no comment.
    let escaped = |at: usize| {
        bytes[..at]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count()
            % 2
            == 1
    };
    let at_word_start = |i: usize| {
        i == 0
            || (matches!(
                bytes[i - 1],
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
            ) && !escaped(i - 1))
    };
    let word_at = |i: usize, word: &str| {
        at_word_start(i)
            && src[i..].starts_with(word)
            && bytes.get(i + word.len()).is_none_or(|b| {
                matches!(
                    b,
                    b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
                )
            })
    };
    let mut i = 0;
    while i < bytes.len() {
        if let Some(range) = range_holding(skip, i) {
            i = range.end;
            continue;
        }
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        let open_count = stack.len();
        let Some(top) = stack.last_mut() else {
            break;
        };
        // `$$` is the shell's process id: its second `$` opens nothing (`$${`, `$$'`).
        if b == b'$' && next == Some(b'$') {
            i += 2;
            continue;
        }
        // Backticks, `$(…)` and `${…}` open the same way everywhere but inside backticks.
        let quoted = matches!(top, Open::Double | Open::Brace { quoted: true });
        let opened = match (b, next) {
            _ if matches!(top, Open::Backtick) => None,
            (b'`', _) => Some((Open::Backtick, 1)),
            (b'$', Some(b'(')) => Some((
                Open::Code {
                    parens: 0,
                    cases: 0,
                },
                2,
            )),
            (b'$', Some(b'{')) => Some((Open::Brace { quoted }, 2)),
            _ => None,
        };
        if let Some((open, width)) = opened {
            stack.push(open);
            i += width;
            continue;
        }
        match top {
            Open::Code { parens, cases } => match b {
                // Escaped or not, such a byte is no blank to bash; the grammar may skip it.
                b'\\' if matches!(next, Some(0x0b | 0x0c | b'\r')) => return Err(CONTROL),
                b'\\' => i += 1,
                b'\'' => i = find_from(bytes, i + 1, b'\'').ok_or(UNTERMINATED)?,
                b'$' if next == Some(b'\'') => {
                    i += ansi_c_end(&src[i..]).ok_or(UNTERMINATED)?;
                }
                b'$' if next == Some(b'"') => {
                    stack.push(Open::Double);
                    i += 1;
                }
                b'"' => stack.push(Open::Double),
                b'(' => *parens += 1,
                b')' if *parens > 0 => *parens -= 1,
                b')' if *cases > 0 => {}
                b')' if open_count > 1 => {
                    stack.pop();
                }
                b')' => {}
                b'#' if at_word_start(i) => {
                    comments.push(i);
                    i = find_from(bytes, i, b'\n').unwrap_or(bytes.len());
                    continue;
                }
                b'\n' => ends.push(i),
                0x0b | 0x0c | b'\r' => return Err(CONTROL),
                b'c' if word_at(i, "case") && open_count > 1 => return Err(CASE_IN_SUBSTITUTION),
                b'c' if word_at(i, "case") => *cases += 1,
                b'e' if word_at(i, "esac") => *cases = cases.saturating_sub(1),
                _ => {}
            },
            Open::Double => match b {
                b'\\' => i += 1,
                b'"' => {
                    stack.pop();
                }
                _ => {}
            },
            Open::Backtick => match b {
                b'\\' if matches!(next, Some(0x0b | 0x0c | b'\r')) => return Err(CONTROL),
                b'\\' if next == Some(b'\n') => {
                    ends.push(i + 1);
                    i += 1;
                }
                b'\\' => i += 1,
                b'`' => {
                    stack.pop();
                }
                b'\n' => ends.push(i),
                0x0b | 0x0c | b'\r' => return Err(CONTROL),
                _ => {}
            },
            Open::Brace { quoted } => {
                let quoted = *quoted;
                match b {
                    b'\\' if !quoted && matches!(next, Some(0x0b | 0x0c | b'\r')) => {
                        return Err(CONTROL);
                    }
                    b'\\' => i += 1,
                    b'}' => {
                        stack.pop();
                    }
                    b'\'' if quoted => {
                        return Err("a `'` inside `${…}` inside double quotes");
                    }
                    b'\'' => i = find_from(bytes, i + 1, b'\'').ok_or(UNTERMINATED)?,
                    b'"' => stack.push(Open::Double),
                    b'$' if !quoted && next == Some(b'\'') => {
                        i += ansi_c_end(&src[i..]).ok_or(UNTERMINATED)?;
                    }
                    b'\n' => ends.push(i),
                    0x0b | 0x0c | b'\r' if !quoted => return Err(CONTROL),
                    _ => {}
                }
            }
        }
        i += 1;
    }
    if stack
        .iter()
        .any(|open| matches!(open, Open::Double | Open::Backtick | Open::Brace { .. }))
    {
        return Err(UNTERMINATED);
    }
    Ok((ends, comments))
}

/// The offset of the first `wanted` at or after `from`.
fn find_from(bytes: &[u8], from: usize, wanted: u8) -> Option<usize> {
    bytes
        .get(from..)?
        .iter()
        .position(|&b| b == wanted)
        .map(|p| from + p)
}

/// The characters that make an unquoted word a glob.
const GLOB: &[char] = &['*', '?', '['];

/// Most words one brace expansion may produce before it is refused.
const MAX_BRACE_WORDS: usize = 256;

/// Most words brace expansion may make on one line in all; past it a brace word is too
/// large to analyse (1,000 words of `{1..256}` took 12 s to judge one by one).
const MAX_LINE_BRACE_WORDS: usize = 4096;

/// True for `${NAME}`, `${1}`, `${@}` and friends: no operator inside.
fn is_plain_braced_name(raw: &str) -> bool {
    raw.strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .map(|name| {
            // `${a[@]}`, `${a[*]}`, `${a[0]}`: a literal index evaluates nothing.
            match name.split_once('[') {
                Some((base, index))
                    if index.strip_suffix(']').is_some_and(|i| {
                        i == "@"
                            || i == "*"
                            || (!i.is_empty() && i.chars().all(|c| c.is_ascii_digit()))
                    }) =>
                {
                    base
                }
                _ => name,
            }
        })
        .is_some_and(|name| {
            !name.is_empty()
                && (name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    || matches!(name, "@" | "*" | "#" | "?" | "$" | "!" | "-"))
                && !name.starts_with('!')
        })
}

/// True when an unquoted here-document body would run code while it is
/// expanded: a command substitution, backticks, or a `${…}` with an operator.
fn expands_code(body: &str) -> bool {
    if body.contains('`') || body.contains("$(") {
        return true;
    }
    let mut rest = body;
    while let Some(start) = rest.find("${") {
        let tail = &rest[start..];
        let end = tail.find('}').map_or(tail.len(), |e| e + 1);
        if !is_plain_braced_name(&tail[..end]) {
            return true;
        }
        rest = &tail[end.min(tail.len())..];
    }
    false
}

/// The byte range of the first `{…}` in `text` that bash would expand
/// (a top-level `,` or a `x..y` sequence inside), with its alternatives.
fn brace_pattern(text: &str) -> Option<(usize, usize, Vec<String>)> {
    let bytes = text.as_bytes();
    let mut search = 0;
    while let Some(found) = text[search..].find('{') {
        let open = search + found;
        let mut depth = 0usize;
        let mut parts = Vec::new();
        let mut part_start = open + 1;
        let mut close = None;
        for (i, b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                b',' if depth == 1 => {
                    parts.push(text[part_start..i].to_string());
                    part_start = i + 1;
                }
                _ => {}
            }
        }
        let close = close?;
        if !parts.is_empty() {
            parts.push(text[part_start..close].to_string());
            return Some((open, close, parts));
        }
        if let Some(sequence) = sequence(&text[open + 1..close]) {
            return Some((open, close, sequence));
        }
        search = open + 1;
    }
    None
}

/// `1..5`, `a..e`, `10..1..2`; `None` for anything else.
fn sequence(inner: &str) -> Option<Vec<String>> {
    let mut pieces = inner.split("..");
    let (from, to) = (pieces.next()?, pieces.next()?);
    // Wide enough that no bound or step bash accepts (64-bit) overflows here.
    let step: i128 = match pieces.next() {
        Some(s) => i128::from(s.parse::<i64>().ok()?).abs().max(1),
        None => 1,
    };
    if pieces.next().is_some() {
        return None;
    }
    let (a, b, chars) = match (from.parse::<i64>(), to.parse::<i64>()) {
        (Ok(a), Ok(b)) => (a, b, false),
        _ => {
            let (mut fa, mut fb) = (from.chars(), to.chars());
            let (a, b) = (fa.next()?, fb.next()?);
            if fa.next().is_some() || fb.next().is_some() || !a.is_ascii() || !b.is_ascii() {
                return None;
            }
            (i64::from(a as u8), i64::from(b as u8), true)
        }
    };
    let (a, b) = (i128::from(a), i128::from(b));
    if (b - a).abs() / step > MAX_BRACE_WORDS as i128 {
        return Some(vec![String::new(); MAX_BRACE_WORDS + 1]);
    }
    let mut out = Vec::new();
    let mut value = a;
    loop {
        out.push(if chars {
            char::from(value as u8).to_string()
        } else {
            value.to_string()
        });
        if value == b {
            break;
        }
        value += if b > a { step } else { -step };
        if (b > a && value > b) || (b < a && value < b) {
            break;
        }
    }
    Some(out)
}

/// Expands every brace in `text` (bash order: left to right, outer first);
/// `None` when more than `limit` words would result.
fn expand_braces(text: &str, limit: usize) -> Option<Vec<String>> {
    // Each `{` starts a search for its match: past this many the word is too large to
    // analyse (a 64 KiB word of nested braces took seconds).
    const MAX_OPEN_BRACES: usize = 256;
    if text.bytes().filter(|b| *b == b'{').count() > MAX_OPEN_BRACES {
        return None;
    }
    let Some((open, close, parts)) = brace_pattern(text) else {
        return Some(vec![text.to_string()]);
    };
    let (head, tail) = (&text[..open], &text[close + 1..]);
    let mut out = Vec::new();
    for part in parts {
        for word in expand_braces(&format!("{head}{part}{tail}"), limit)? {
            out.push(word);
            if out.len() > limit {
                return None;
            }
        }
    }
    Some(out)
}

/// The words the grammar files under the redirection `node` that bash
/// reads as arguments of the command: every destination after the first
/// (`tee <x a b` reads as `tee a b <x`), the words after a here-document's
/// marker (`cat <<EOF a`), and those of the redirections a here-document
/// start line holds.
fn redirect_words(node: Node<'_>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    match node.kind() {
        "file_redirect" => {
            // `>&-` and `<&-` close a descriptor and take no word.
            let mut cursor = node.walk();
            let closes = node
                .children(&mut cursor)
                .any(|c| !c.is_named() && c.kind().ends_with('-'));
            let mut cursor = node.walk();
            out.extend(
                node.children_by_field_name("destination", &mut cursor)
                    .skip(usize::from(!closes)),
            );
        }
        "heredoc_redirect" => {
            out.extend(argument_children(node));
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
            for child in children {
                if child.kind() == "file_redirect" {
                    out.extend(redirect_words(child));
                }
            }
        }
        _ => {}
    }
    out
}

/// Children of `node` in its `argument` field.
fn argument_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.children_by_field_name("argument", &mut cursor)
        .collect()
}

/// True when the source text `raw` holds one of `wanted` that no backslash
/// escapes: a glob character (`*`, `?`, `[`) in an unquoted word, or a
/// backtick where bash would start a command substitution.
fn has_unescaped(raw: &str, wanted: &[char]) -> bool {
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if wanted.contains(&c) {
            return true;
        }
    }
    false
}

/// Removes backslash escapes from an unquoted word (`\g` → `g`, `\ ` → ` `).
fn unescape_unquoted(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Removes the escapes bash honours inside double quotes (`\"`, `\\`, `\$`,
/// `` \` ``, line continuation); other backslashes stay.
fn unescape_double_quoted(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('"' | '\\' | '$' | '`') => {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A backtick body as bash runs it: the backslash before `` ` ``, `$` and
/// `\\` is removed (and before `"` when the backticks are inside double
/// quotes); other backslashes stay.
fn unescape_backticks(body: &str, in_double_quotes: bool) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('`' | '$' | '\\') => {}
                Some('"') if in_double_quotes => {}
                _ => {
                    out.push(c);
                    continue;
                }
            }
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes a `$'…'` string completely, as bash does: `\a \b \e \E \f \n
/// \r \t \v \\ \' \" \?`, octal `\ooo`, `\xHH`, `\uHHHH`, `\UHHHHHHHH`
/// and control characters `\cX`. A NUL ends the string, as in bash.
fn decode_ansi_c(raw: &str) -> String {
    let inner = raw
        .strip_prefix("$'")
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(raw);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    let take = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, radix: u32, max: usize| {
        let mut value: u32 = 0;
        let mut count = 0;
        while count < max {
            match chars.peek().and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = value.saturating_mul(radix).saturating_add(d);
                    chars.next();
                    count += 1;
                }
                None => break,
            }
        }
        (value, count)
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(escape) = chars.next() else {
            out.push('\\');
            break;
        };
        let decoded: Option<char> = match escape {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(escape),
            '0'..='7' => {
                let first = escape.to_digit(8).unwrap_or(0);
                let (rest, count) = take(&mut chars, 8, 2);
                let value = first * 8u32.pow(count as u32) + rest;
                char::from_u32(value & 0xff)
            }
            'x' => {
                let (value, count) = take(&mut chars, 16, 2);
                if count == 0 {
                    out.push_str("\\x");
                    continue;
                }
                char::from_u32(value)
            }
            'u' | 'U' => {
                let (value, count) = take(&mut chars, 16, if escape == 'u' { 4 } else { 8 });
                if count == 0 {
                    out.push('\\');
                    out.push(escape);
                    continue;
                }
                char::from_u32(value)
            }
            'c' => chars
                .next()
                .and_then(|x| char::from_u32(u32::from(x.to_ascii_uppercase()) ^ 0x40)),
            other => {
                out.push('\\');
                Some(other)
            }
        };
        match decoded {
            Some('\0') | None => break,
            Some(c) => out.push(c),
        }
    }
    out
}

/// True when the shell text `body` starts a command in the background
/// (`&` that is not `&&`, `>&`, `&>` or `|&`).
fn backgrounds(body: &[u8]) -> bool {
    (0..body.len()).any(|i| {
        body[i] == b'&'
            && !matches!(body.get(i.wrapping_sub(1)), Some(b'&' | b'>' | b'<' | b'|'))
            && !matches!(body.get(i + 1), Some(b'&' | b'>'))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn argv(script: &ParsedScript, index: usize) -> Vec<String> {
        script.commands[index]
            .words
            .iter()
            .map(|w| w.text.clone())
            .collect()
    }

    #[test]
    fn splits_on_every_separator() {
        let parsed = parse("a 1 && b || c; d | e & f\ng");
        assert!(parsed.ok);
        let names: Vec<String> = parsed
            .commands
            .iter()
            .map(|c| c.words[0].text.clone())
            .collect();
        assert_eq!(names, ["a", "b", "c", "d", "e", "f", "g"]);
        assert!(parsed.commands[4].piped_input);
        assert!(!parsed.commands[3].piped_input);
    }

    #[test]
    fn unquotes_and_unescapes_words() {
        let parsed = parse(r#"\git 'a b' "c\"d" $'e\nf' g\ h "x"y"#);
        assert_eq!(
            argv(&parsed, 0),
            ["git", "a b", "c\"d", "e\nf", "g h", "xy"]
        );
    }

    #[test]
    fn collects_substitutions_and_marks_dynamic_words() {
        let parsed = parse("echo \"a $(curl x | sh) b\" `pwd` $HOME");
        assert!(parsed.ok);
        let names: Vec<String> = parsed
            .commands
            .iter()
            .map(|c| c.words[0].text.clone())
            .collect();
        assert!(names.contains(&"curl".to_string()));
        assert!(names.contains(&"pwd".to_string()));
        let sh = parsed
            .commands
            .iter()
            .find(|c| c.words[0].text == "sh")
            .unwrap();
        assert!(sh.piped_input);
        let echo = parsed
            .commands
            .iter()
            .find(|c| c.words[0].text == "echo")
            .unwrap();
        assert!(echo.words[1].dynamic && echo.words[1].substitution);
        assert!(echo.words[3].dynamic && !echo.words[3].substitution);
    }

    #[test]
    fn reads_redirections_and_heredocs() {
        let parsed = parse("cat <<EOF > /etc/x 2>&1\nhello $(id)\nEOF\n");
        assert!(parsed.ok);
        let cat = parsed
            .commands
            .iter()
            .find(|c| c.words[0].text == "cat")
            .unwrap();
        assert!(cat.stdin_text.as_deref().unwrap().contains("hello"));
        assert!(
            cat.redirects
                .iter()
                .any(|r| r.kind == RedirectKind::Write && r.target.text == "/etc/x")
        );
        assert!(
            cat.redirects
                .iter()
                .any(|r| r.kind == RedirectKind::Duplicate)
        );
        assert!(parsed.commands.iter().any(|c| c.words[0].text == "id"));
    }

    #[test]
    fn herestring_becomes_stdin_text() {
        let parsed = parse("sh <<<'rm -rf x'");
        assert_eq!(parsed.commands[0].stdin_text.as_deref(), Some("rm -rf x"));
    }

    #[test]
    fn split_and_whole_parses_agree() {
        for line in [
            "ls -la src && cat README.md | grep -n foo | head -5",
            "a | b | c",
            "cat x | grep -v '|' | sort | uniq -c > out.txt 2>&1",
            "echo \"$(curl x | sh)\" | tee log | sh",
            "x=1 env A=2 cmd | xargs rm | cat; echo done &",
            "find . -name '*.rs' -exec grep -l TODO {} \\; | sort | head",
            "a || b | c | d && e",
            "grep ${X:-a} f | c | d",
            "a | b <(c | d) | e",
        ] {
            let pipelines = crate::pipe_split::split_flat(line).expect(line);
            let split = parse_stages(&pipelines).expect(line);
            let whole = parse_whole(line, false);
            assert_eq!(split, whole, "{line}");
        }
    }

    /// Every corpus command the fast path accepts parses the same both ways.
    #[test]
    #[allow(clippy::print_stdout)] // reports what it checked
    fn split_and_whole_parses_agree_on_the_dcg_corpus() {
        let Some(dir) = codesmith_testkit::suite_dir("dcg-command-corpus/tests/corpus") else {
            return;
        };
        let mut stack = vec![dir];
        let mut checked = 0;
        while let Some(path) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&path) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let Ok(value) = toml::from_str::<toml::Value>(&text) else {
                    continue;
                };
                let cases = value.get("case").and_then(|c| c.as_array()).cloned();
                for case in cases.unwrap_or_default() {
                    let Some(line) = case.get("command").and_then(|c| c.as_str()) else {
                        continue;
                    };
                    let Some(pipelines) = crate::pipe_split::split_flat(line) else {
                        continue;
                    };
                    let Some(split) = parse_stages(&pipelines) else {
                        continue;
                    };
                    let whole = parse_whole(line, false);
                    if whole.ok {
                        assert_eq!(split, whole, "{line}");
                        checked += 1;
                    }
                }
            }
        }
        println!("fast path agreed with the whole parse on {checked} corpus commands");
    }

    #[test]
    fn unterminated_quote_is_not_ok() {
        assert!(!parse("echo \"unterminated").ok);
    }

    #[test]
    fn bash_ends_commands_at_unquoted_unescaped_newlines() {
        let ends = |src: &str| bash_command_newlines(src, &[]);
        assert_eq!(ends("ls\npwd"), Ok(vec![2]));
        // A continuation joins; a quoted newline is text.
        assert_eq!(ends("ls \\\npwd"), Ok(vec![]));
        assert_eq!(ends("echo 'a\nb'\n"), Ok(vec![10]));
        assert_eq!(ends("echo \"a\nb\""), Ok(vec![]));
        assert_eq!(ends("echo \"a\\\"\nb\""), Ok(vec![]));
        // A comment runs to the newline whatever it ends with; `#` inside a word is text.
        assert_eq!(ends("ls #\\\npwd"), Ok(vec![5]));
        assert_eq!(ends("ls # 'x\npwd"), Ok(vec![7]));
        assert_eq!(ends("echo a#'b\n'\nls"), Ok(vec![11]));
        // `$'…'`: `\\` is one backslash and `\'` a quote.
        assert_eq!(ends("echo $'a\\\\'\nls"), Ok(vec![11]));
        assert_eq!(ends("echo $'a\\'\n'\nls"), Ok(vec![12]));
        // Inside `"$(…)"` and backticks newlines end commands again.
        assert_eq!(ends("echo \"$(ls\npwd)\""), Ok(vec![10]));
        assert_eq!(ends("echo `ls\npwd`"), Ok(vec![8]));
        assert_eq!(ends("echo \"`ls\npwd`\""), Ok(vec![9]));
        // A `case` inside `$(…)` is not guessed: its `)` may close a pattern or the
        // substitution (`echo "$(echo case)"` desynced an earlier reading).
        assert!(ends("echo \"$(case x in a) ls\n;; esac)\"\n").is_err());
        assert!(ends("echo \"$(echo case)\"; ls\n\\touch x #\" esac)\"").is_err());
        // At the top level a pattern's `)` closes nothing that matters.
        assert_eq!(ends("case x in a) ls\n;; esac\nls"), Ok(vec![15, 23]));
        // A here-document body is skipped; the start line's newline ends its command.
        assert_eq!(
            bash_command_newlines("cat <<E\nx\nE\nls", &[8..10, 10..11]),
            Ok(vec![7, 11])
        );
        // Bytes bash does not read as blanks, and unterminated quotes, are refused.
        assert!(ends("ls \\\r\npwd").is_err());
        assert!(ends("ls\r\npwd").is_err());
        assert!(ends("ls \\\x0c# x").is_err());
        assert!(ends("ls \x0c# x").is_err());
        assert!(ends("ls \x0b# x").is_err());
        assert!(ends("echo 'a").is_err());
        assert!(ends("echo \"$(ls)").is_err());
        assert_eq!(ends("echo 'a\x0c'"), Ok(vec![]));
        assert_eq!(ends("echo ${x:-$'\\''}\nls"), Ok(vec![16]));
        assert_eq!(ends("echo \"${x:-$(ls\npwd)}\""), Ok(vec![15]));
    }

    #[test]
    fn an_ansi_c_string_ends_at_the_quote_bash_ends_it_at() {
        assert_eq!(ansi_c_end("$'a'"), Some(3));
        // `\\` and then the closing quote; `\'` is a quote inside.
        assert_eq!(ansi_c_end("$'a\\\\' x '"), Some(5));
        assert_eq!(ansi_c_end("$'a\\' x '"), Some(8));
        assert_eq!(ansi_c_end("$'a"), None);
    }
}
