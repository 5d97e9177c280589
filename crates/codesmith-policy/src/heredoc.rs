//! Where bash ends a here-document, next to where the `tree-sitter-bash`
//! grammar ends it.
//!
//! The grammar does not join the lines of an unquoted body that end in `\` before it
//! looks for the end line, and it accepts end lines bash does not (with a
//! trailing space, or a leading tab after `<<`). The shell parser uses this
//! to make the two readings agree (joining lines as bash does) or to leave
//! the line unparsed.

use tree_sitter::Node;

/// How bash reads the here-documents of a line next to how the grammar read them.
pub(crate) enum Heredocs {
    /// Every here-document ends on the line the grammar ends it on.
    Agree,
    /// Bash joins lines of an unquoted here-document body that end in `\`
    /// before it looks for the end line; these are the byte offsets of those
    /// backslashes (each followed by its line break). Removing them makes
    /// the grammar's reading and bash's the same text.
    Join(Vec<usize>),
    /// The readings differ in a way a join does not repair.
    Disagree,
}

/// Compares where bash ends each here-document of `src` (parsed as `root`)
/// with the grammar's end line. Bash reads a here-document body from the
/// line after the command line that holds its `<<` (after the bodies of
/// earlier here-documents on that line); it ends at the first line that is
/// exactly the delimiter (quote removal applied to the word after `<<`),
/// after leading tabs are removed for `<<-` and, when no part of the
/// delimiter is quoted, after `\` line ends join lines.
pub(crate) fn heredocs_as_bash_reads(root: Node<'_>, src: &str) -> Heredocs {
    let mut heredocs = Vec::new();
    collect_kind(root, "heredoc_redirect", &mut heredocs);
    heredocs.sort_by_key(Node::start_byte);
    // The line break the previous here-document's start line ended at, and
    // where bash ended that here-document.
    let mut previous: Option<(usize, Option<usize>)> = None;
    for heredoc in heredocs {
        let mut cursor = heredoc.walk();
        let children: Vec<Node<'_>> = heredoc.children(&mut cursor).collect();
        let strip_tabs = children
            .iter()
            .any(|c| !c.is_named() && src.get(c.byte_range()) == Some("<<-"));
        let Some(start) = children.iter().find(|c| c.kind() == "heredoc_start") else {
            return Heredocs::Disagree;
        };
        let Some((delimiter, quoted)) = bash_delimiter(src.get(start.byte_range()).unwrap_or(""))
        else {
            return Heredocs::Disagree;
        };
        let Some(line_break) = start_line_end(root, heredoc, src, start.end_byte()) else {
            return Heredocs::Disagree;
        };
        let body_start = match previous {
            Some((earlier, end)) if earlier == line_break => match end {
                Some(end) => end,
                None => return Heredocs::Disagree,
            },
            _ => line_break + 1,
        };
        let (bash_end, cuts) = bash_heredoc_end(src, body_start, &delimiter, quoted, strip_tabs);
        let grammar_end = children
            .iter()
            .find(|c| c.kind() == "heredoc_end")
            .map(|end| line_start(src, end.start_byte()));
        let grammar_body = children
            .iter()
            .find(|c| c.kind() == "heredoc_body" && c.end_byte() > c.start_byte())
            .map(|body| line_start(src, body.start_byte()));
        let agrees = grammar_end == bash_end.map(|(line, _)| line)
            && grammar_body.is_none_or(|line| line == body_start);
        if !agrees {
            return if cuts.is_empty() {
                Heredocs::Disagree
            } else {
                Heredocs::Join(cuts)
            };
        }
        previous = Some((line_break, bash_end.map(|(_, end)| end)));
    }
    Heredocs::Agree
}

/// Every node of `kind` below `node`.
pub(crate) fn collect_kind<'t>(node: Node<'t>, kind: &str, out: &mut Vec<Node<'t>>) {
    if node.kind() == kind {
        out.push(node);
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect_kind(child, kind, out);
    }
}

/// The offset where the line holding `at` starts.
fn line_start(src: &str, at: usize) -> usize {
    src.get(..at)
        .and_then(|before| before.rfind('\n'))
        .map_or(0, |i| i + 1)
}

/// The here-document delimiter bash compares lines with (quote removal
/// applied to the word after `<<`), and whether any part of it is quoted
/// (then the body is taken as it is). `None` for a word whose removal is
/// not followed here (`$'…'`, `$"…"`, an unterminated quote).
fn bash_delimiter(raw: &str) -> Option<(String, bool)> {
    if raw.contains("$'") || raw.contains("$\"") {
        return None;
    }
    let quoted = raw.contains(['\'', '"', '\\']);
    let mut out = String::new();
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next()? {
                    '\'' => break,
                    c => out.push(c),
                }
            },
            '"' => loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => match chars.next()? {
                        c @ ('"' | '\\' | '$' | '`') => out.push(c),
                        '\n' => {}
                        c => {
                            out.push('\\');
                            out.push(c);
                        }
                    },
                    c => out.push(c),
                }
            },
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(c) => out.push(c),
            },
            c => out.push(c),
        }
    }
    Some((out, quoted))
}

/// The line break that ends the command line holding the here-document
/// `heredoc` (whose start word ends at `from`): the first line break after
/// it that is not a `\` line continuation. `None` when that break is inside
/// a quoted string, a comment or another word (bash would read the body
/// after a later line), or in another substitution than the here-document.
fn start_line_end(root: Node<'_>, heredoc: Node<'_>, src: &str, from: usize) -> Option<usize> {
    let bytes = src.as_bytes();
    let mut i = from;
    let at = loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'\n' => break i,
            _ => i += 1,
        }
    };
    let context = |node: Node<'_>| -> Option<usize> {
        let mut node = Some(node);
        while let Some(n) = node {
            match n.kind() {
                "command_substitution" | "process_substitution" | "program" => return Some(n.id()),
                "string"
                | "raw_string"
                | "ansi_c_string"
                | "translated_string"
                | "comment"
                | "heredoc_body"
                | "word"
                | "concatenation"
                | "expansion"
                | "arithmetic_expansion"
                | "ERROR" => return None,
                _ => node = n.parent(),
            }
        }
        None
    };
    let leaf = root.descendant_for_byte_range(at, at + 1)?;
    (context(leaf)? == context(heredoc.parent()?)?).then_some(at)
}

/// Where bash ends a here-document whose body starts at `body_start`: the
/// start and end offsets of its end line (`None` when it runs to the end of
/// `src`), and the offsets of the `\` line ends it joins before the end line.
fn bash_heredoc_end(
    src: &str,
    body_start: usize,
    delimiter: &str,
    quoted: bool,
    strip_tabs: bool,
) -> (Option<(usize, usize)>, Vec<usize>) {
    let mut cuts = Vec::new();
    let mut at = body_start;
    while at < src.len() {
        let first = at;
        let mut logical = String::new();
        let mut joins = Vec::new();
        loop {
            let rest = &src[at..];
            let Some(len) = rest.find('\n') else {
                logical.push_str(rest);
                at = src.len();
                break;
            };
            let line = &rest[..len];
            let odd = line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1;
            if !quoted && odd {
                logical.push_str(&line[..len - 1]);
                joins.push(at + len - 1);
                at += len + 1;
                if at >= src.len() {
                    break;
                }
                continue;
            }
            logical.push_str(line);
            at += len + 1;
            break;
        }
        let compared = if strip_tabs {
            logical.trim_start_matches('\t')
        } else {
            logical.as_str()
        };
        cuts.extend(joins);
        if compared == delimiter {
            return (Some((first, at)), cuts);
        }
    }
    (None, cuts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delimiter_is_the_word_after_quote_removal() {
        assert_eq!(bash_delimiter("EOF"), Some(("EOF".into(), false)));
        assert_eq!(bash_delimiter("'EOF'"), Some(("EOF".into(), true)));
        assert_eq!(bash_delimiter("tr\"u\"e"), Some(("true".into(), true)));
        assert_eq!(bash_delimiter("\\EOF"), Some(("EOF".into(), true)));
        assert_eq!(bash_delimiter("\"a\\\"b\""), Some(("a\"b".into(), true)));
        assert_eq!(bash_delimiter("'a\\b'"), Some(("a\\b".into(), true)));
        assert_eq!(bash_delimiter("$'EOF'"), None);
        assert_eq!(bash_delimiter("'EOF"), None);
    }

    #[test]
    fn bash_joins_unquoted_lines_before_it_compares_them() {
        let src = "tr\\\nue\nid\ntrue\n";
        // Unquoted: `tr\` + `ue` is the end line; the join is at offset 2.
        assert_eq!(
            bash_heredoc_end(src, 0, "true", false, false),
            (Some((0, 7)), vec![2])
        );
        // Quoted: lines are taken as they are; the last line ends it.
        assert_eq!(
            bash_heredoc_end(src, 0, "true", true, false),
            (Some((10, 15)), vec![])
        );
        // An even run of `\` joins nothing; `foo\` + `true` is not the end.
        assert_eq!(
            bash_heredoc_end("a\\\\\ntrue\n", 0, "true", false, false).0,
            Some((4, 9))
        );
        assert_eq!(
            bash_heredoc_end("foo\\\ntrue\n", 0, "true", false, false).0,
            None
        );
        // `<<-` removes leading tabs of the joined line, never spaces.
        assert_eq!(
            bash_heredoc_end("\tEOF\n", 0, "EOF", false, true).0,
            Some((0, 5))
        );
        assert_eq!(
            bash_heredoc_end(" EOF\nEOF", 0, "EOF", false, true).0,
            Some((5, 8))
        );
        assert_eq!(bash_heredoc_end("EOF \n", 0, "EOF", false, false).0, None);
    }
}
