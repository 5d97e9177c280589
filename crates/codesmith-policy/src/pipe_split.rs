//! A conservative pre-splitter for flat command lines.
//!
//! The `tree-sitter-bash` grammar takes 50–100 µs on pipelines of three or
//! more stages (about 2 µs for two). When a line is flat — a list of
//! pipelines of plain commands, joined by `&&`, `||`, `;`, `&` or newlines,
//! with no grouping, keywords, here-documents, backticks or comments at the
//! top level — it is split here at those operators and every stage is
//! parsed on its own. Anything unusual returns `None`, and the caller parses
//! the whole line instead; a test checks both paths agree.

/// Pipelines (each a list of stage texts), or `None` when the line is not
/// plainly flat.
pub(crate) fn split_flat(source: &str) -> Option<Vec<Vec<&str>>> {
    let bytes = source.as_bytes();
    let mut pipelines: Vec<Vec<&str>> = Vec::new();
    let mut stages: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let at_word_start = i == 0 || is_space_or_op(bytes[i - 1]);
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' => i = skip_single(bytes, i)?,
            b'"' => i = skip_double(bytes, i, 0)?,
            b'`' => return None,
            b'#' if at_word_start => return None,
            b'$' if bytes.get(i + 1) == Some(&b'(') => i = skip_parens(bytes, i + 1, 0)?,
            b'$' if bytes.get(i + 1) == Some(&b'{') => i = skip_braces(bytes, i + 1, 0)?,
            b'<' | b'>' if bytes.get(i + 1) == Some(&b'(') => i = skip_parens(bytes, i + 1, 0)?,
            b'<' if bytes.get(i + 1) == Some(&b'<') => return None,
            b'(' | b')' => return None,
            b'{' | b'}' if at_word_start && bytes.get(i + 1).is_none_or(|b| is_space_or_op(*b)) => {
                return None;
            }
            b'|' => {
                match bytes.get(i + 1) {
                    Some(b'&') => return None,
                    Some(b'|') => {
                        stages.push(&source[start..i]);
                        pipelines.push(std::mem::take(&mut stages));
                        i += 2;
                    }
                    _ => {
                        stages.push(&source[start..i]);
                        i += 1;
                    }
                }
                start = i;
            }
            b'&' => {
                let redirect =
                    i > 0 && matches!(bytes[i - 1], b'>' | b'<') || bytes.get(i + 1) == Some(&b'>');
                if redirect {
                    i += 1;
                } else {
                    stages.push(&source[start..i]);
                    pipelines.push(std::mem::take(&mut stages));
                    i += if bytes.get(i + 1) == Some(&b'&') {
                        2
                    } else {
                        1
                    };
                    start = i;
                }
            }
            b';' => {
                if bytes.get(i + 1) == Some(&b';') {
                    return None;
                }
                stages.push(&source[start..i]);
                pipelines.push(std::mem::take(&mut stages));
                i += 1;
                start = i;
            }
            b'\n' => {
                stages.push(&source[start..i]);
                pipelines.push(std::mem::take(&mut stages));
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    let tail = &source[start.min(source.len())..];
    // A trailing `;`, `&` or newline may end the line; a trailing `|`, `&&`
    // or `||` may not, so its empty stage is kept (and later refused).
    let may_end = source[..start.min(source.len())]
        .trim_end()
        .ends_with([';', '\n'])
        || (source[..start.min(source.len())].ends_with('&')
            && !source[..start.min(source.len())].ends_with("&&"));
    if !(tail.trim().is_empty() && stages.is_empty() && may_end && start > 0) {
        stages.push(tail);
        pipelines.push(stages);
    }
    for stage in pipelines.iter().flatten() {
        if starts_with_keyword(stage) {
            return None;
        }
    }
    Some(pipelines)
}

fn is_space_or_op(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b';' | b'&' | b'|')
}

fn starts_with_keyword(stage: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "!", "[[", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function",
        "if", "select", "then", "time", "until", "while",
    ];
    let first = stage.split_whitespace().next().unwrap_or("");
    KEYWORDS.contains(&first) || first.contains("()")
}

/// Most quoted or bracketed regions inside one another that are followed; deeper
/// lines are not split (and the grammar, which bounds its own depth, reads them).
const MAX_DEPTH: usize = 64;

fn skip_single(bytes: &[u8], open: usize) -> Option<usize> {
    let close = bytes[open + 1..].iter().position(|b| *b == b'\'')?;
    Some(open + 1 + close + 1)
}

/// Skips a `"…"` string starting at `open`; `depth` counts the regions it is inside
/// (past `MAX_DEPTH` the line is not split, so the recursion is bounded).
fn skip_double(bytes: &[u8], open: usize, depth: usize) -> Option<usize> {
    let depth = (depth < MAX_DEPTH).then_some(depth + 1)?;
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            b'`' => return None,
            b'$' if bytes.get(i + 1) == Some(&b'(') => i = skip_parens(bytes, i + 1, depth)?,
            _ => i += 1,
        }
    }
    None
}

/// Skips a `( … )` region starting at `open`, honouring quotes inside.
fn skip_parens(bytes: &[u8], open: usize, nesting: usize) -> Option<usize> {
    let nesting = (nesting < MAX_DEPTH).then_some(nesting + 1)?;
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' => i = skip_single(bytes, i)?,
            b'"' => i = skip_double(bytes, i, nesting)?,
            b'`' | b'#' => return None,
            b'<' if bytes.get(i + 1) == Some(&b'<') => return None,
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' => {
                depth = depth.checked_sub(1)?;
                i += 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Skips a `{ … }` parameter expansion starting at `open`.
fn skip_braces(bytes: &[u8], open: usize, nesting: usize) -> Option<usize> {
    let nesting = (nesting < MAX_DEPTH).then_some(nesting + 1)?;
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' => i = skip_single(bytes, i)?,
            b'"' => i = skip_double(bytes, i, nesting)?,
            b'`' => return None,
            b'{' => {
                depth += 1;
                i += 1;
            }
            b'}' => {
                depth = depth.checked_sub(1)?;
                i += 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::split_flat;

    #[test]
    fn splits_flat_lines_at_top_level_operators() {
        let split =
            split_flat("ls -la && cat a | grep 'x|y' | head -5; echo \"$(a | b)\" 2>&1 &").unwrap();
        assert_eq!(
            split,
            vec![
                vec!["ls -la "],
                vec![" cat a ", " grep 'x|y' ", " head -5"],
                vec![" echo \"$(a | b)\" 2>&1 "],
            ]
        );
    }

    #[test]
    fn refuses_anything_not_plainly_flat() {
        for line in [
            "(a | b | c)",
            "{ a | b; }",
            "a | b |& c",
            "cat <<EOF | sh\nx\nEOF",
            "echo `a | b`",
            "if a; then b | c | d; fi",
            "f() { a | b; }",
            "echo 'unterminated | x",
            "case x in a) b;; esac",
            "a # | b | c",
        ] {
            assert!(split_flat(line).is_none(), "{line}");
        }
    }
}
