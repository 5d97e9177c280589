//! Strips what models wrap around a patch: blank lines, a Markdown fence, a shell heredoc.

use super::Line;

/// Returns the slice of `lines` that holds the patch proper.
pub(crate) fn strip_wrapper<'s, 'a>(lines: &'s [Line<'a>]) -> &'s [Line<'a>] {
    let mut s = trim_blank(lines);
    // Markdown fence: ```diff … ```
    if let (Some(first), Some(last)) = (s.first(), s.last())
        && s.len() >= 2
        && first.raw.trim_start().starts_with("```")
        && last.raw.trim() == "```"
    {
        s = trim_blank(&s[1..s.len() - 1]);
    }
    // Heredoc: `apply_patch <<'EOF'` … `EOF`
    if let Some(first) = s.first()
        && let Some(delim) = heredoc_delimiter(first.raw)
    {
        s = &s[1..];
        if let Some(end) = s.iter().rposition(|l| l.raw.trim() == delim) {
            s = &s[..end];
        }
        s = trim_blank(s);
    }
    s
}

fn trim_blank<'s, 'a>(lines: &'s [Line<'a>]) -> &'s [Line<'a>] {
    let start = lines.iter().position(|l| !l.raw.trim().is_empty());
    let end = lines.iter().rposition(|l| !l.raw.trim().is_empty());
    match (start, end) {
        (Some(a), Some(b)) => &lines[a..=b],
        _ => &lines[..0],
    }
}

/// The delimiter word of a heredoc opener such as `apply_patch <<'EOF'`, `cat <<-"PATCH"`.
fn heredoc_delimiter(line: &str) -> Option<&str> {
    let t = line.trim();
    if t.starts_with("***") || t.starts_with("---") || t.starts_with("+++") {
        return None;
    }
    let at = t.find("<<")?;
    let rest = t[at + 2..].trim_start_matches('-').trim_start();
    let rest = rest.trim_start_matches(['\'', '"']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let word = &rest[..end];
    (!word.is_empty()).then_some(word)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn finds_heredoc_delimiters() {
        assert_eq!(heredoc_delimiter("apply_patch <<'EOF'"), Some("EOF"));
        assert_eq!(heredoc_delimiter("cat <<EOF | apply_patch"), Some("EOF"));
        assert_eq!(heredoc_delimiter("apply_patch <<-\"PATCH\""), Some("PATCH"));
        assert_eq!(heredoc_delimiter("*** Begin Patch"), None);
        assert_eq!(heredoc_delimiter("just text"), None);
    }
}
