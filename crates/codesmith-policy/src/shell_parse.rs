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

use std::cell::RefCell;

use tree_sitter::{Node, Parser};

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
}

impl Word {
    pub(crate) fn literal(text: &str) -> Self {
        Word {
            text: text.to_string(),
            dynamic: false,
            substitution: false,
        }
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
}

/// One simple command as the shell would run it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SimpleCommand {
    /// Source text of the command (without its redirections).
    pub text: String,
    /// `NAME=value` prefixes.
    pub assignments: Vec<String>,
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
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parses `source` as bash. Never panics; a parser failure yields `ok = false`.
///
/// Flat lines with a pipeline of three or more stages are split first (see
/// `pipe_split`) because the grammar is slow on them; the result is the same.
pub(crate) fn parse(source: &str) -> ParsedScript {
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
            out.commands.extend(part.commands);
        }
    }
    Some(out)
}

/// Parses `source` in one piece; `piped` marks its commands as reading a pipe.
fn parse_whole(source: &str, piped: bool) -> ParsedScript {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            if parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .is_err()
            {
                return ParsedScript::default();
            }
            *slot = Some(parser);
        }
        let Some(parser) = slot.as_mut() else {
            return ParsedScript::default();
        };
        let Some(tree) = parser.parse(source, None) else {
            return ParsedScript::default();
        };
        let root = tree.root_node();
        let mut walker = Walker {
            src: source,
            out: ParsedScript {
                ok: !root.has_error(),
                ..ParsedScript::default()
            },
        };
        walker.walk(root, piped, &[]);
        walker.out
    })
}

struct Walker<'s> {
    src: &'s str,
    out: ParsedScript,
}

impl Walker<'_> {
    fn text(&self, node: Node<'_>) -> &str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// Walks `node`, emitting simple commands. `piped` marks commands whose
    /// stdin is a pipe; `redirects` are redirections inherited from an
    /// enclosing `redirected_statement`.
    fn walk(&mut self, node: Node<'_>, piped: bool, redirects: &[Node<'_>]) {
        match node.kind() {
            "command" => self.command(node, piped, redirects),
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
                if let Some(body) = node.child_by_field_name("body") {
                    self.walk(body, piped, &own);
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
                    self.walk(body, false, &[]);
                }
            }
            "heredoc_redirect" | "herestring_redirect" | "file_redirect" => {
                self.walk_substitutions(node);
            }
            _ => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.walk(child, piped, redirects);
                }
            }
        }
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
            ..SimpleCommand::default()
        };
        let mut start = None;
        let mut end = node.start_byte();
        let mut redirect_nodes: Vec<Node<'_>> = inherited.to_vec();
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "variable_assignment" => {
                    command.assignments.push(self.text(child).to_string());
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
                    command.words.push(self.word(word));
                    self.walk_substitutions(child);
                }
                _ => {
                    command.words.push(self.word(child));
                    if matches!(
                        child.kind(),
                        "command_substitution" | "process_substitution"
                    ) {
                        self.walk(child, false, &[]);
                    } else {
                        self.walk_substitutions(child);
                    }
                }
            }
            start.get_or_insert(child.start_byte());
            end = child.end_byte();
        }
        let start = start.unwrap_or(node.start_byte());
        command.text = self.src.get(start..end).unwrap_or("").trim().to_string();
        for redirect in redirect_nodes {
            self.redirect(redirect, &mut command);
        }
        // The host command comes before the commands of its substitutions
        // so segment order follows reading order.
        self.out
            .commands
            .insert(first_index.min(self.out.commands.len()), command);
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
                            command.stdin_text = Some(body);
                        }
                        "file_redirect" => self.redirect(child, command),
                        _ => {}
                    }
                }
                // Words after the start line's marker are the command's
                // arguments (`cat <<EOF file.txt`); the grammar files them
                // under the redirect.
                for word in argument_children(node) {
                    command.words.push(self.word(word));
                }
            }
            "herestring_redirect" => {
                let value = node
                    .named_child(0)
                    .map(|c| self.word(c))
                    .unwrap_or_else(|| Word::literal(""));
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
                    .map(|c| self.word(c))
                    .unwrap_or_else(|| Word::literal(""));
                let kind = if operator.contains('&') && !operator.starts_with('&') {
                    RedirectKind::Duplicate
                } else if operator == "<" {
                    RedirectKind::Read
                } else {
                    RedirectKind::Write
                };
                command.redirects.push(Redirect { kind, target });
            }
            _ => {}
        }
    }

    /// Statically evaluates a word-like node.
    fn word(&self, node: Node<'_>) -> Word {
        let raw = self.text(node);
        match node.kind() {
            "word" | "number" => Word {
                text: unescape_unquoted(raw),
                dynamic: false,
                substitution: false,
            },
            "raw_string" => Word::literal(raw.trim_start_matches('\'').trim_end_matches('\'')),
            "ansi_c_string" => Word::literal(&decode_ansi_c(raw)),
            "string" => {
                let mut cursor = node.walk();
                let mut word = Word::literal("");
                for child in node.named_children(&mut cursor) {
                    if child.kind() == "string_content" {
                        word.text
                            .push_str(&unescape_double_quoted(self.text(child)));
                    } else {
                        let inner = self.word(child);
                        word.text.push_str(&inner.text);
                        word.dynamic |= inner.dynamic;
                        word.substitution |= inner.substitution;
                    }
                }
                if word.text.is_empty() {
                    // Content the grammar did not split out (rare): keep it.
                    let inner = raw.strip_prefix('"').unwrap_or(raw);
                    let inner = inner.strip_suffix('"').unwrap_or(inner);
                    word.text = unescape_double_quoted(inner);
                }
                word
            }
            "concatenation" => {
                let mut cursor = node.walk();
                let mut word = Word::literal("");
                for child in node.named_children(&mut cursor) {
                    let inner = self.word(child);
                    word.text.push_str(&inner.text);
                    word.dynamic |= inner.dynamic;
                    word.substitution |= inner.substitution;
                }
                if word.text.is_empty() {
                    word.text = unescape_unquoted(raw);
                }
                word
            }
            "command_substitution" | "process_substitution" => Word {
                text: raw.to_string(),
                dynamic: true,
                substitution: true,
            },
            _ => {
                // Expansions, arithmetic, globs we cannot evaluate.
                let substitution = raw.contains("$(") || raw.contains('`');
                Word {
                    text: raw.to_string(),
                    dynamic: true,
                    substitution,
                }
            }
        }
    }
}

/// Children of `node` in its `argument` field.
fn argument_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.children_by_field_name("argument", &mut cursor)
        .collect()
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

/// Decodes the common escapes of a `$'…'` string.
fn decode_ansi_c(raw: &str) -> String {
    let inner = raw
        .strip_prefix("$'")
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(raw);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => {}
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
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
    fn split_and_whole_parses_agree_on_the_dcg_corpus() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/suites/dcg-command-corpus/tests/corpus");
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
}
