//! Where a broken file's brackets stop pairing up, so a syntax-check refusal can name the
//! cause (the bracket that was opened and never closed, or the closer that has no
//! opener) instead of the place where the parser gave up, which is often the end of the
//! enclosing block, far from the edit.
//!
//! Rust is scanned with the check's own light lexer ([`super::boundaries`]); TOML and JSON
//! with a small one that knows their strings and (for TOML) `#` comments.

use super::boundaries::{Tok, lex_rust, opener_of};
use super::syntax::Lang;

/// The first bracket problem in a text. Offsets are bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// An opening bracket that is never closed. `cut_by` is the closer that came before
    /// its own (it closes an outer bracket), or `None` when the text ended first.
    Unclosed {
        /// `(`, `[` or `{`.
        open: char,
        /// Where it was opened.
        at: usize,
        /// The closer met before the matching one, and where.
        cut_by: Option<(char, usize)>,
    },
    /// A closing bracket with no opening bracket of its kind before it.
    Unexpected {
        /// `)`, `]` or `}`.
        close: char,
        /// Where it is.
        at: usize,
    },
    /// An opening bracket the edit added and left open: a closer after the edit, which
    /// used to close `outer`, now closes it, so `outer` is the one the parser finds open.
    OpenedByEdit {
        /// `(`, `[` or `{`.
        open: char,
        /// Where the edit opened it.
        at: usize,
        /// The bracket of the same kind left without its closer.
        outer: usize,
    },
    /// A string literal or block comment that never ends.
    Unterminated {
        /// `string literal`, `block comment`, ...
        what: &'static str,
        /// Where it starts.
        at: usize,
        /// The text that would end it.
        closer: &'static str,
    },
}

impl Problem {
    /// The offset the problem is reported at.
    pub fn at(&self) -> usize {
        match *self {
            Problem::Unclosed { at, .. }
            | Problem::OpenedByEdit { at, .. }
            | Problem::Unexpected { at, .. }
            | Problem::Unterminated { at, .. } => at,
        }
    }
}

/// The first bracket problem in `text` read as `lang`, or `None` when its brackets pair up.
/// Among several unclosed brackets, the one inside `focus` (a byte range: the edit) is
/// named, else the innermost.
pub fn find(lang: Lang, text: &str, focus: (usize, usize)) -> Option<Problem> {
    let mut scan = Scan {
        stack: Vec::new(),
        found: None,
        focus,
    };
    let lexed = each_bracket(lang, text, |open, c, at| {
        if open {
            scan.open(c, at);
        } else {
            scan.close(c, at);
        }
    });
    if let Err((what, at, closer)) = lexed {
        return scan
            .found
            .or(Some(Problem::Unterminated { what, at, closer }));
    }
    scan.found.or_else(|| scan.unclosed(None))
}

/// Calls `f(is_open, bracket, offset)` for every bracket of `text` outside strings and
/// comments, in order.
fn each_bracket(
    lang: Lang,
    text: &str,
    mut f: impl FnMut(bool, u8, usize),
) -> Result<(), (&'static str, usize, &'static str)> {
    match lang {
        Lang::Rust => lex_rust(text, |tok| match tok {
            Tok::Open(c, at) => f(true, c, at),
            Tok::Close(c, at) => f(false, c, at),
            _ => {}
        })
        .map_err(|u| (u.what, u.at, u.closer)),
        Lang::Toml | Lang::Json => lex_data(text, lang == Lang::Toml, &mut f),
    }
}

/// The `open` bracket an edit added without closing it, when [`find`] named an unclosed
/// `open` *outside* the edit (`outer`): a closer after the edit then closes the edit's
/// bracket instead of its own, and the outermost bracket is the one left open. The edit
/// replaced `old[start..old_end]` with `new[start..new_end]`; when the new part leaves more
/// `open` brackets unclosed within itself than the old part did, the innermost of them is
/// the one the edit opened. Returns the refined problem, or `None`.
pub fn opened_by_edit(
    lang: Lang,
    old: &str,
    new: &str,
    (start, old_end, new_end): (usize, usize, usize),
    problem: Problem,
) -> Option<Problem> {
    let Problem::Unclosed {
        open, at: outer, ..
    } = problem
    else {
        return None;
    };
    if (start..new_end.max(start + 1)).contains(&outer) {
        return None;
    }
    let unclosed_within = |text: &str, lo: usize, hi: usize| -> Vec<usize> {
        let mut stack: Vec<(u8, usize)> = Vec::new();
        let _ = each_bracket(lang, text, |is_open, c, at| {
            if at < lo || at >= hi {
                return;
            }
            if is_open {
                stack.push((c, at));
            } else if let Some(i) = stack.iter().rposition(|&(o, _)| o == opener_of(c)) {
                stack.truncate(i);
            }
        });
        stack
            .into_iter()
            .filter(|&(c, _)| char::from(c) == open)
            .map(|(_, at)| at)
            .collect()
    };
    let added = unclosed_within(new, start, new_end);
    let had = unclosed_within(old, start, old_end);
    if added.len() <= had.len() {
        return None;
    }
    Some(Problem::OpenedByEdit {
        open,
        at: *added.last()?,
        outer,
    })
}

struct Scan {
    stack: Vec<(u8, usize)>,
    found: Option<Problem>,
    focus: (usize, usize),
}

impl Scan {
    fn open(&mut self, c: u8, at: usize) {
        if self.found.is_none() {
            self.stack.push((c, at));
        }
    }

    fn close(&mut self, c: u8, at: usize) {
        if self.found.is_some() {
            return;
        }
        let want = opener_of(c);
        match self.stack.iter().rposition(|&(o, _)| o == want) {
            Some(i) if i + 1 == self.stack.len() => {
                self.stack.pop();
            }
            Some(i) => {
                self.stack.drain(..=i);
                self.found = self.unclosed(Some((char::from(c), at)));
            }
            None => {
                self.found = Some(Problem::Unexpected {
                    close: char::from(c),
                    at,
                });
            }
        }
    }

    /// The unclosed bracket to name among those left on the stack.
    fn unclosed(&self, cut_by: Option<(char, usize)>) -> Option<Problem> {
        let (lo, hi) = self.focus;
        let &(open, at) = self
            .stack
            .iter()
            .rev()
            .find(|&&(_, at)| lo <= at && at <= hi)
            .or_else(|| self.stack.last())?;
        Some(Problem::Unclosed {
            open: char::from(open),
            at,
            cut_by,
        })
    }
}

/// TOML or JSON brackets: strings (`"…"` with escapes; TOML also `'…'`, `"""…"""` and
/// `'''…'''`) and TOML `#` comments are skipped.
fn lex_data(
    text: &str,
    toml: bool,
    f: &mut impl FnMut(bool, u8, usize),
) -> Result<(), (&'static str, usize, &'static str)> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' if toml => {
                i = b[i..]
                    .iter()
                    .position(|&x| x == b'\n')
                    .map_or(b.len(), |p| i + p);
            }
            q @ (b'"' | b'\'') if q == b'"' || toml => {
                let triple = toml && b[i..].starts_with(&[q, q, q]);
                let (delim, closer): (&[u8], &'static str) = match (q, triple) {
                    (b'"', true) => (b"\"\"\"", "\"\"\""),
                    (b'"', false) => (b"\"", "\""),
                    (_, true) => (b"'''", "'''"),
                    (_, false) => (b"'", "'"),
                };
                let escapes = q == b'"';
                let mut k = i + delim.len();
                loop {
                    if k >= b.len() || (!triple && b[k] == b'\n') {
                        return Err(("string", i, closer));
                    }
                    if escapes && b[k] == b'\\' {
                        k += 2;
                    } else if b[k..].starts_with(delim) {
                        k += delim.len();
                        break;
                    } else {
                        k += 1;
                    }
                }
                i = k;
            }
            c @ (b'{' | b'[') => {
                f(true, c, i);
                i += 1;
            }
            c @ (b'}' | b']') => {
                f(false, c, i);
                i += 1;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn off(text: &str, needle: &str) -> usize {
        text.find(needle).unwrap()
    }

    #[test]
    fn an_unclosed_paren_is_named_where_it_was_opened() {
        let new = "fn main() {\n    let x = (1;\n    println!(\"{x}\");\n}\n";
        let p = find(Lang::Rust, new, (24, 26)).unwrap();
        assert_eq!(
            p,
            Problem::Unclosed {
                open: '(',
                at: off(new, "(1"),
                cut_by: Some(('}', new.len() - 2)),
            }
        );
    }

    #[test]
    fn a_stray_closer_is_named() {
        let new = "fn main() {\n    let x = 1);\n}\n";
        let p = find(Lang::Rust, new, (0, 0)).unwrap();
        assert_eq!(
            p,
            Problem::Unexpected {
                close: ')',
                at: off(new, ");"),
            }
        );
    }

    #[test]
    fn the_unclosed_bracket_inside_the_edit_wins() {
        let new = "fn a() {\n    f(1,\n";
        let p = find(Lang::Rust, new, (off(new, "f("), new.len())).unwrap();
        assert!(
            matches!(
                p,
                Problem::Unclosed {
                    open: '(',
                    cut_by: None,
                    ..
                }
            ),
            "{p:?}"
        );
        let p = find(Lang::Rust, new, (0, 0)).unwrap();
        assert!(matches!(p, Problem::Unclosed { open: '(', .. }), "{p:?}");
    }

    #[test]
    fn brackets_in_strings_and_comments_do_not_count() {
        let rust = "fn a() { let s = \"(\"; let c = '('; /* ( */ // (\n let r = r#\"(\"#; }\n";
        assert_eq!(find(Lang::Rust, rust, (0, 0)), None);
        let toml = "a = \"[\" # [\nb = '{'\nc = \"\"\"\n[\n\"\"\"\n[t]\nd = [1, {x = 2}]\n";
        assert_eq!(find(Lang::Toml, toml, (0, 0)), None);
        assert_eq!(find(Lang::Json, "{\"a\": \"}\\\"\"}", (0, 0)), None);
    }

    #[test]
    fn toml_and_json_get_the_same_treatment() {
        let toml = "[deps]\na = { version = \"1\"\nb = 2\n";
        let p = find(Lang::Toml, toml, (0, toml.len())).unwrap();
        assert_eq!(
            p,
            Problem::Unclosed {
                open: '{',
                at: off(toml, "{"),
                cut_by: None
            }
        );
        let json = "{\n  \"a\": [1, 2,\n  \"b\": 3\n}\n";
        let p = find(Lang::Json, json, (0, json.len())).unwrap();
        assert_eq!(
            p,
            Problem::Unclosed {
                open: '[',
                at: off(json, "["),
                cut_by: Some(('}', json.len() - 2)),
            }
        );
        let p = find(Lang::Json, "{\"a\": \"x}\n", (0, 0)).unwrap();
        assert!(matches!(p, Problem::Unterminated { at: 6, .. }), "{p:?}");
    }
}
