//! The nearest line to a search text that did not match, for the `NO_MATCH` hint.

use std::collections::HashMap;

use crate::syntax_check::syntax::cut_chars;

/// Similarity below which no line is suggested (Dice coefficient over character bigrams).
const MIN_SIMILARITY: f64 = 0.5;

/// The 1-based number and text of the file line most similar to the first non-blank line
/// of `needle`, when one is similar enough.
pub(crate) fn closest_line(hay: &str, needle: &str) -> Option<(usize, String)> {
    let target = needle.lines().map(str::trim).find(|l| !l.is_empty())?;
    let want = bigrams(target);
    if want.is_empty() {
        return None;
    }
    let mut best: Option<(f64, usize, &str)> = None;
    for (i, line) in hay.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.len() > target.len() * 3 + 16 || t.len() * 3 + 16 < target.len() {
            continue;
        }
        let score = dice(&want, &bigrams(t));
        if best.is_none_or(|(s, _, _)| score > s) {
            best = Some((score, i + 1, line));
        }
    }
    let (score, n, line) = best?;
    (score >= MIN_SIMILARITY).then(|| (n, cut_chars(line.trim_end_matches('\r'), 200)))
}

fn bigrams(s: &str) -> HashMap<(char, char), usize> {
    let mut m = HashMap::new();
    let chars: Vec<char> = s.chars().collect();
    for w in chars.windows(2) {
        *m.entry((w[0], w[1])).or_insert(0) += 1;
    }
    m
}

fn dice(a: &HashMap<(char, char), usize>, b: &HashMap<(char, char), usize>) -> f64 {
    let total: usize = a.values().sum::<usize>() + b.values().sum::<usize>();
    if total == 0 {
        return 0.0;
    }
    let common: usize = a
        .iter()
        .map(|(k, &n)| n.min(b.get(k).copied().unwrap_or(0)))
        .sum();
    2.0 * common as f64 / total as f64
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_near_line_only() {
        let hay = "fn main() {\n    let total = compute(1, 2);\n}\n";
        let (n, text) = closest_line(hay, "let totl = compute(1, 2);").unwrap();
        assert_eq!(n, 2);
        assert_eq!(text, "    let total = compute(1, 2);");
        assert!(closest_line(hay, "something else entirely different").is_none());
    }
}
