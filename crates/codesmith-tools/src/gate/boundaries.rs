//! Top-level item boundaries of Rust source, found by a light lexer, so the syntax gate can
//! re-parse only the items an edit touched (seed 000 notes the gate puts a parse on every
//! write; this keeps that parse proportional to the edit, not the file).
//!
//! A boundary is the offset just after a `}` or `;` at bracket depth 0, outside comments,
//! strings and character literals. Every real item end is such a boundary; a few are not
//! real (e.g. the `}` of a struct literal in `const X: S = S {};`). The gate stays sound
//! because it requires both the old and the new middle section to parse on their own as a
//! sequence of items, which a section cut at a false boundary does not.

/// A region whose contents are a sequence of items: the file itself, or the body of an
/// inline `mod name { … }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// Byte range of the contents: `(0, len)` for the file; for a module, from just after
    /// its `{` to its `}`.
    pub body: (usize, usize),
    /// Offsets just after each `}` or `;` directly inside the contents, ascending.
    pub bounds: Vec<usize>,
}

/// Offsets just after each depth-0 `}` or `;` in `src`, ascending. `None` when the lexer
/// loses track (unbalanced brackets, unterminated literal or comment).
pub fn item_boundaries(src: &str) -> Option<Vec<usize>> {
    item_containers(src).map(|mut c| c.swap_remove(0).bounds)
}

/// The file (always first) and every inline module body, with their item boundaries.
/// `None` when the lexer loses track.
pub fn item_containers(src: &str) -> Option<Vec<Container>> {
    let b = src.as_bytes();
    let mut containers = vec![Container {
        body: (0, src.len()),
        bounds: Vec::new(),
    }];
    // Open brackets; for `{`, the container it opens (if it is a module body).
    let mut stack: Vec<(u8, Option<usize>)> = Vec::new();
    // 0: nothing, 1: saw `mod`, 2: saw `mod name`.
    let mut mod_state = 0u8;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = memchr_from(b, b'\n', i).unwrap_or(b.len());
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = skip_block_comment(b, i)?;
                continue;
            }
            c if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let was_mod = mod_state;
        mod_state = 0;
        match c {
            b'"' => {
                i = skip_string(b, i + 1)?;
                continue;
            }
            b'r' | b'b' | b'c' if starts_ident(b, i) => {
                if let Some(end) = skip_prefixed_literal(b, i)? {
                    i = end;
                    continue;
                }
                let end = skip_ident(b, i);
                mod_state = if was_mod == 1 { 2 } else { 0 };
                i = end;
                continue;
            }
            b'\'' => {
                i = skip_quote(src, i);
                continue;
            }
            b'{' => {
                let opened = (was_mod == 2).then(|| {
                    containers.push(Container {
                        body: (i + 1, i + 1),
                        bounds: Vec::new(),
                    });
                    containers.len() - 1
                });
                stack.push((b'{', opened));
            }
            b'(' | b'[' => stack.push((c, None)),
            b')' | b']' | b'}' => {
                let open = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                let (kind, opened) = stack.pop()?;
                if kind != open {
                    return None;
                }
                if let Some(k) = opened {
                    containers[k].body.1 = i;
                }
                if c == b'}' {
                    push_bound(&mut containers, &stack, i + 1);
                }
            }
            b';' => push_bound(&mut containers, &stack, i + 1),
            c if c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80 => {
                let end = skip_ident(b, i);
                mod_state = if &b[i..end] == b"mod" {
                    1
                } else if was_mod == 1 {
                    2
                } else {
                    0
                };
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    stack.is_empty().then_some(containers)
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
    fn finds_item_ends_and_skips_literals() {
        let src = "fn a() { let s = \"}\"; let c = '}'; let q = '\\''; }\n// }\n/* } /* } */ */\nstruct S;\nfn b<'a>(x: &'a str) -> &'a str { x }\nconst R: &str = r#\"}\"#;\n";
        let b = item_boundaries(src).unwrap();
        let ends: Vec<&str> = b.iter().map(|&i| &src[i - 1..i]).collect();
        assert_eq!(ends, ["}", ";", "}", ";"]);
        assert!(item_boundaries("fn a() {").is_none());
        assert!(item_boundaries("fn a() }").is_none());
    }
}
