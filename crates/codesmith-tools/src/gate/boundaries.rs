//! Top-level item boundaries of Rust source, found by a light lexer, so the syntax gate can
//! re-parse only the items an edit touched (seed 000 notes the gate puts a parse on every
//! write; this keeps that parse proportional to the edit, not the file).
//!
//! A boundary is the offset just after a `}` or `;` at bracket depth 0, outside comments,
//! strings and character literals. Every real item end is such a boundary; a few are not
//! real (e.g. the `}` of a struct literal in `const X: S = S {};`). The gate stays sound
//! because it requires both the old and the new middle section to parse on their own as a
//! sequence of items, which a section cut at a false boundary does not.

/// Offsets just after each depth-0 `}` or `;` in `src`, ascending. `None` when the lexer
/// loses track (unbalanced brackets, unterminated literal or comment).
pub fn item_boundaries(src: &str) -> Option<Vec<usize>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut depth: i64 = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = memchr_from(b, b'\n', i).unwrap_or(b.len());
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = skip_block_comment(b, i)?;
                continue;
            }
            b'"' => {
                i = skip_string(b, i + 1)?;
                continue;
            }
            b'r' | b'b' | b'c' if starts_ident(b, i) => {
                if let Some(end) = skip_prefixed_literal(b, i)? {
                    i = end;
                    continue;
                }
                i = skip_ident(b, i);
                continue;
            }
            b'\'' => {
                i = skip_quote(src, i);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' => depth -= 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    out.push(i + 1);
                }
            }
            b';' if depth == 0 => out.push(i + 1),
            c if c == b'_' || c.is_ascii_alphanumeric() => {
                i = skip_ident(b, i);
                continue;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
        i += 1;
    }
    (depth == 0).then_some(out)
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
    fn finds_item_ends_and_skips_literals() {
        let src = "fn a() { let s = \"}\"; let c = '}'; let q = '\\''; }\n// }\n/* } /* } */ */\nstruct S;\nfn b<'a>(x: &'a str) -> &'a str { x }\nconst R: &str = r#\"}\"#;\n";
        let b = item_boundaries(src).unwrap();
        let ends: Vec<&str> = b.iter().map(|&i| &src[i - 1..i]).collect();
        assert_eq!(ends, ["}", ";", "}", ";"]);
        assert!(item_boundaries("fn a() {").is_none());
        assert!(item_boundaries("fn a() }").is_none());
    }
}
