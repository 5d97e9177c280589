//! Top-level item boundaries of Rust source, found by a light lexer, so the syntax check can
//! re-parse only the items an edit touched (the check puts a parse on every write; this
//! keeps that parse proportional to the edit, not the file).
//!
//! A boundary is the offset just after a `}` or `;` at bracket depth 0, outside comments,
//! strings and character literals. Every real item end is such a boundary; a few are not
//! real (e.g. the `}` of a struct literal in `const X: S = S {};`). The check stays sound
//! because it requires both the old and the new middle section to parse on their own as a
//! sequence of items, which a section cut at a false boundary does not.

/// What kind of items a [`Container`] holds, which decides how a section of it is parsed
/// on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerKind {
    /// The file itself: top-level items.
    File,
    /// The body of an inline `mod name { … }`: items.
    Module,
    /// The body of an `impl … { … }` at item position: associated items.
    Impl,
    /// The body of a `trait … { … }` at item position: trait items.
    Trait,
}

/// A region whose contents are a sequence of items: the file itself, the body of an
/// inline `mod name { … }`, or of an `impl`/`trait` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// What the region holds.
    pub kind: ContainerKind,
    /// Byte range of the contents: `(0, len)` for the file; for a block, from just after
    /// its `{` to its `}`.
    pub body: (usize, usize),
    /// Offsets just after each `}` or `;` directly inside the contents, ascending.
    pub bounds: Vec<usize>,
}

/// One token of Rust source as the light lexer sees it. Offsets are bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    /// `(`, `[` or `{` at the offset.
    Open(u8, usize),
    /// `)`, `]` or `}` at the offset.
    Close(u8, usize),
    /// `;` at the offset.
    Semi(usize),
    /// An identifier or keyword: its byte range.
    Ident(usize, usize),
    /// Any other punctuation, or a literal, starting at the offset.
    Other(usize),
}

/// A literal or comment the lexer found no end for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unterminated {
    /// Byte offset where it starts.
    pub(crate) at: usize,
    /// `string literal`, `raw string literal` or `block comment`.
    pub(crate) what: &'static str,
    /// The text that would end it.
    pub(crate) closer: &'static str,
}

/// Tokenises `src` just enough to follow brackets: comments, strings, raw strings, byte
/// and C strings, character literals and lifetimes are skipped as units.
pub(crate) fn lex_rust(src: &str, mut f: impl FnMut(Tok)) -> Result<(), Unterminated> {
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = memchr_from(b, b'\n', i).unwrap_or(b.len());
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = skip_block_comment(b, i).ok_or(Unterminated {
                    at: i,
                    what: "block comment",
                    closer: "*/",
                })?;
            }
            c if c.is_ascii_whitespace() => i += 1,
            b'"' => {
                f(Tok::Other(i));
                i = skip_string(b, i + 1).ok_or(Unterminated {
                    at: i,
                    what: "string literal",
                    closer: "\"",
                })?;
            }
            b'r' | b'b' | b'c' if starts_ident(b, i) => {
                let literal = skip_prefixed_literal(b, i).ok_or(Unterminated {
                    at: i,
                    what: "string literal",
                    closer: "\"",
                })?;
                if let Some(end) = literal {
                    f(Tok::Other(i));
                    i = end;
                } else {
                    let end = skip_ident(b, i);
                    f(Tok::Ident(i, end));
                    i = end;
                }
            }
            b'\'' => {
                f(Tok::Other(i));
                i = skip_quote(src, i);
            }
            b'{' | b'(' | b'[' => {
                f(Tok::Open(c, i));
                i += 1;
            }
            b')' | b']' | b'}' => {
                f(Tok::Close(c, i));
                i += 1;
            }
            b';' => {
                f(Tok::Semi(i));
                i += 1;
            }
            c if c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80 => {
                let end = skip_ident(b, i);
                f(Tok::Ident(i, end));
                i = end;
            }
            _ => {
                f(Tok::Other(i));
                i += 1;
            }
        }
    }
    Ok(())
}

/// The opening bracket that `close` pairs with.
pub(crate) fn opener_of(close: u8) -> u8 {
    match close {
        b')' => b'(',
        b']' => b'[',
        _ => b'{',
    }
}

/// Offsets just after each depth-0 `}` or `;` in `src`, ascending. `None` when the lexer
/// loses track (unbalanced brackets, unterminated literal or comment).
#[cfg(test)]
pub fn item_boundaries(src: &str) -> Option<Vec<usize>> {
    item_containers(src).map(|mut c| c.swap_remove(0).bounds)
}

/// The file (always first) and every inline module, `impl` and `trait` body, with their
/// item boundaries. An `impl` or `trait` counts only at item position (after `}`, `;`,
/// `]`, a container's `{`, the start of the file, or `pub`/`unsafe`/`auto`/`default`) directly
/// inside the file or a module, so `-> impl Trait { … }` is not one. `None` when the lexer
/// loses track.
pub fn item_containers(src: &str) -> Option<Vec<Container>> {
    let mut containers = vec![Container {
        kind: ContainerKind::File,
        body: (0, src.len()),
        bounds: Vec::new(),
    }];
    // Open brackets; for `{`, the container it opens (if it is one).
    let mut stack: Vec<(u8, Option<usize>)> = Vec::new();
    // 0: nothing, 1: saw `mod`, 2: saw `mod name`.
    let mut mod_state = 0u8;
    // An `impl`/`trait` seen at item position: its kind and the stack depth it is at.
    let mut pending: Option<(ContainerKind, usize)> = None;
    // The previous token leaves the next one at item position.
    let mut at_item = true;
    let mut lost = false;
    let lexed = lex_rust(src, |tok| {
        if lost {
            return;
        }
        let was_mod = mod_state;
        mod_state = 0;
        let in_items = match stack.last() {
            None => true,
            Some((_, Some(k))) => containers[*k].kind == ContainerKind::Module,
            Some(_) => false,
        };
        match tok {
            Tok::Ident(s, e) => {
                let word = &src[s..e];
                mod_state = if word == "mod" {
                    1
                } else if was_mod == 1 {
                    2
                } else {
                    0
                };
                if at_item && in_items {
                    match word {
                        "impl" => pending = Some((ContainerKind::Impl, stack.len())),
                        "trait" => pending = Some((ContainerKind::Trait, stack.len())),
                        _ => {}
                    }
                }
                at_item = matches!(word, "pub" | "unsafe" | "auto" | "default");
            }
            Tok::Open(c, i) => {
                let kind = match pending {
                    _ if c != b'{' => None,
                    _ if was_mod == 2 => Some(ContainerKind::Module),
                    Some((kind, depth)) if depth == stack.len() => Some(kind),
                    _ => None,
                };
                if kind.is_some() {
                    pending = None;
                }
                let opened = kind.map(|kind| {
                    containers.push(Container {
                        kind,
                        body: (i + 1, i + 1),
                        bounds: Vec::new(),
                    });
                    containers.len() - 1
                });
                at_item = opened.is_some();
                stack.push((c, opened));
            }
            Tok::Close(c, i) => {
                match stack.pop() {
                    Some((kind, opened)) if kind == opener_of(c) => {
                        if let Some(k) = opened {
                            containers[k].body.1 = i;
                        }
                    }
                    _ => {
                        lost = true;
                        return;
                    }
                }
                if c == b'}' {
                    push_bound(&mut containers, &stack, i + 1);
                }
                at_item = c != b')';
            }
            Tok::Semi(i) => {
                if pending.is_some_and(|(_, depth)| depth == stack.len()) {
                    pending = None;
                }
                push_bound(&mut containers, &stack, i + 1);
                at_item = true;
            }
            Tok::Other(_) => at_item = false,
        }
    });
    (lexed.is_ok() && !lost && stack.is_empty()).then_some(containers)
}

/// Records `at` as a boundary of the container directly around it, if any.
fn push_bound(containers: &mut [Container], stack: &[(u8, Option<usize>)], at: usize) {
    match stack.last() {
        None => containers[0].bounds.push(at),
        Some((b'{', Some(k))) => containers[*k].bounds.push(at),
        Some(_) => {}
    }
}

fn memchr_from(b: &[u8], c: u8, from: usize) -> Option<usize> {
    b[from..].iter().position(|&x| x == c).map(|p| from + p)
}

/// True when `i` starts an identifier (not the middle of one).
fn starts_ident(b: &[u8], i: usize) -> bool {
    i == 0 || !(b[i - 1] == b'_' || b[i - 1].is_ascii_alphanumeric())
}

fn skip_ident(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric() || b[i] >= 0x80) {
        i += 1;
    }
    i
}

/// Nested `/* */`; returns the offset after the closing `*/`.
fn skip_block_comment(b: &[u8], mut i: usize) -> Option<usize> {
    let mut level = 0usize;
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'*' {
            level += 1;
            i += 2;
        } else if b[i] == b'*' && b[i + 1] == b'/' {
            level -= 1;
            i += 2;
            if level == 0 {
                return Some(i);
            }
        } else {
            i += 1;
        }
    }
    None
}

/// After an opening `"`: returns the offset after the closing `"`.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// `r"…"`, `r#"…"#`, `b"…"`, `br#"…"#`, `c"…"`, `cr"…"`, `b'x'`. `Ok(None)` when the
/// identifier at `i` is not a literal prefix.
fn skip_prefixed_literal(b: &[u8], i: usize) -> Option<Option<usize>> {
    let mut j = i;
    if b[j] == b'b' || b[j] == b'c' {
        j += 1;
        if b[i] == b'b' && b.get(j) == Some(&b'\'') {
            // Byte literal b'x' or b'\n'.
            let mut k = j + 1;
            if b.get(k) == Some(&b'\\') {
                k += 2;
            } else {
                k += 1;
            }
            while k < b.len() && b[k] != b'\'' {
                k += 1;
            }
            return Some(Some(k + 1));
        }
    }
    let raw = b.get(j) == Some(&b'r');
    if raw {
        j += 1;
    }
    let mut hashes = 0;
    while raw && b.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    if b.get(j) != Some(&b'"') {
        return Some(None);
    }
    if !raw {
        return skip_string(b, j + 1).map(Some);
    }
    let mut k = j + 1;
    while k < b.len() {
        if b[k] == b'"'
            && b[k + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == b'#')
                .count()
                == hashes
        {
            return Some(Some(k + 1 + hashes));
        }
        k += 1;
    }
    None
}

/// A `'`: a char literal (`'a'`, `'\n'`, `'é'`) or a lifetime/label (`'a`).
fn skip_quote(src: &str, i: usize) -> usize {
    let b = src.as_bytes();
    if b.get(i + 1) == Some(&b'\\') {
        let mut k = i + 3;
        while k < b.len() && b[k] != b'\'' {
            k += 1;
        }
        return k + 1;
    }
    let mut chars = src[i + 1..].char_indices();
    if let Some((_, c)) = chars.next()
        && let Some((off, '\'')) = chars.next()
    {
        let _ = c;
        return i + 1 + off + 1;
    }
    i + 1
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn module_bodies_are_containers() {
        let src = "mod a {\n    fn x() {}\n    mod b { struct S; }\n}\nfn y() {}\n";
        let c = item_containers(src).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].bounds.len(), 2);
        assert_eq!(
            &src[c[1].body.0..c[1].body.1],
            "\n    fn x() {}\n    mod b { struct S; }\n"
        );
        assert_eq!(c[1].bounds.len(), 2);
        assert_eq!(&src[c[2].body.0..c[2].body.1], " struct S; ");
        // `mod` in a path or a call is not a module body.
        let c = item_containers("fn f() { m::mod_x(); }\n").unwrap();
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn impl_and_trait_bodies_are_containers_at_item_position_only() {
        let src = "#[derive(X)]\nstruct S;\nimpl<T: Fn(u8) -> [u8; 2]> Tr for S where T: A {\n    fn a(&self) {}\n    const B: u8 = 1;\n}\nunsafe trait U { fn f(); }\nfn g() -> impl Iterator<Item = u8> { std::iter::empty() }\nfn h(x: impl Fn()) { impl S {} }\n";
        let c = item_containers(src).unwrap();
        let kinds: Vec<ContainerKind> = c.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                ContainerKind::File,
                ContainerKind::Impl,
                ContainerKind::Trait
            ]
        );
        assert_eq!(
            &src[c[1].body.0..c[1].body.1],
            "\n    fn a(&self) {}\n    const B: u8 = 1;\n"
        );
        assert_eq!(c[1].bounds.len(), 2);
        assert_eq!(&src[c[2].body.0..c[2].body.1], " fn f(); ");
        // Inside a module too.
        let c = item_containers("mod m { impl S { fn a() {} } }").unwrap();
        assert_eq!(c[2].kind, ContainerKind::Impl);
    }

    #[test]
    fn finds_item_ends_and_skips_literals() {
        let src = "fn a() { let s = \"}\"; let c = '}'; let q = '\\''; }\n// }\n/* } /* } */ */\nstruct S;\nfn b<'a>(x: &'a str) -> &'a str { x }\nconst R: &str = r#\"}\"#;\n";
        let b = item_boundaries(src).unwrap();
        let ends: Vec<&str> = b.iter().map(|&i| &src[i - 1..i]).collect();
        assert_eq!(ends, ["}", ";", "}", ";"]);
        assert!(item_boundaries("fn a() {").is_none());
        assert!(item_boundaries("fn a() }").is_none());
    }
}
