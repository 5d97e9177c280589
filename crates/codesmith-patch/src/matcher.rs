//! Locating a run of lines in a file by content.
//!
//! Passes go from strict to loose (exact, then ignoring trailing whitespace, then ignoring
//! surrounding whitespace, then with typographic punctuation folded), as codex's
//! `seek_sequence` does; the first pass with a hit wins. Within a pass, a hunk that states its
//! position (`@@ -120,7 …`) is tried at that position and then at distances 1, 2, … up to
//! [`MAX_FUZZ`] lines either side; beyond that window only a unique match is accepted. A hunk
//! without a position is searched forward from the end of the previous hunk.

use std::borrow::Cow;
use std::cell::OnceCell;

/// How far (in lines, either side) a hunk is sought around the position its header states.
pub const MAX_FUZZ: usize = 50;

/// How loosely a hunk's lines were compared with the file's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchLevel {
    /// Byte for byte (line terminators aside).
    Exact,
    /// Trailing spaces and tabs ignored.
    TrailingWhitespace,
    /// Leading and trailing whitespace ignored.
    Whitespace,
    /// Surrounding whitespace ignored and curly quotes, dashes and non-breaking spaces folded.
    Punctuation,
}

impl MatchLevel {
    const ALL: [MatchLevel; 4] = [
        MatchLevel::Exact,
        MatchLevel::TrailingWhitespace,
        MatchLevel::Whitespace,
        MatchLevel::Punctuation,
    ];

    fn normalize(self, s: &str) -> Cow<'_, str> {
        match self {
            MatchLevel::Exact => Cow::Borrowed(s),
            MatchLevel::TrailingWhitespace => Cow::Borrowed(s.trim_end()),
            MatchLevel::Whitespace => Cow::Borrowed(s.trim()),
            MatchLevel::Punctuation => Cow::Owned(fold_punctuation(s.trim())),
        }
    }
}

fn fold_punctuation(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
            | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}' | '\u{2003}' | '\u{2009}' | '\u{202F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// Where a run of lines was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) pos: usize,
    pub(crate) level: MatchLevel,
}

/// What the caller knows about where to look.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seek {
    /// Nothing before this index may match (the end of the previous hunk).
    pub(crate) cursor: usize,
    /// The position the hunk header states, already shifted by earlier hunks' offset.
    pub(crate) expected: Option<usize>,
    /// Try the end of the file first (`*** End of File`).
    pub(crate) at_eof: bool,
}

/// A file's lines with their normalized forms computed once per level, on first use, and
/// shared by every hunk of the file.
pub(crate) struct Haystack<'a> {
    lines: &'a [&'a str],
    views: [OnceCell<Vec<Cow<'a, str>>>; 4],
}

impl<'a> Haystack<'a> {
    pub(crate) fn new(lines: &'a [&'a str]) -> Self {
        Haystack {
            lines,
            views: Default::default(),
        }
    }

    pub(crate) fn lines(&self) -> &'a [&'a str] {
        self.lines
    }

    fn view(&self, level: MatchLevel) -> &[Cow<'a, str>] {
        self.views[level as usize]
            .get_or_init(|| self.lines.iter().map(|s| level.normalize(s)).collect())
    }
}

struct Pass<'f, 'p> {
    file: &'f [Cow<'f, str>],
    pattern: Vec<Cow<'p, str>>,
}

impl Pass<'_, '_> {
    fn matches_at(&self, p: usize) -> bool {
        self.file[p..p + self.pattern.len()] == self.pattern[..]
    }
}

/// Finds `pattern` (non-empty) in `hay`.
pub(crate) fn locate(hay: &Haystack<'_>, pattern: &[&str], seek: Seek) -> Option<Found> {
    let n = hay.lines.len();
    let m = pattern.len();
    if m == 0 || seek.cursor > n || m > n - seek.cursor {
        return None;
    }
    let last = n - m;
    for level in MatchLevel::ALL {
        let pass = Pass {
            file: hay.view(level),
            pattern: pattern.iter().map(|s| level.normalize(s)).collect(),
        };
        let found = |pos| Some(Found { pos, level });
        if seek.at_eof && pass.matches_at(last) {
            return found(last);
        }
        match seek.expected {
            Some(e) => {
                let e = e.clamp(seek.cursor, last);
                for d in 0..=MAX_FUZZ {
                    let below = e.checked_sub(d).filter(|&p| p >= seek.cursor);
                    let above = Some(e + d).filter(|&p| p <= last && d > 0);
                    for p in [below, above].into_iter().flatten() {
                        if pass.matches_at(p) {
                            return found(p);
                        }
                    }
                }
                let mut hits = (seek.cursor..=last).filter(|&p| pass.matches_at(p));
                if let (Some(p), None) = (hits.next(), hits.next()) {
                    return found(p);
                }
            }
            None => {
                if let Some(p) = (seek.cursor..=last).find(|&p| pass.matches_at(p)) {
                    return found(p);
                }
            }
        }
    }
    None
}

/// How many times `pattern` occurs at or after `cursor`, comparing with surrounding whitespace
/// ignored. Used only for failure hints.
pub(crate) fn count(hay: &Haystack<'_>, pattern: &[&str], cursor: usize) -> usize {
    let n = hay.lines.len();
    let m = pattern.len();
    if m == 0 || cursor > n || m > n - cursor {
        return 0;
    }
    let pass = Pass {
        file: hay.view(MatchLevel::Whitespace),
        pattern: pattern
            .iter()
            .map(|s| MatchLevel::Whitespace.normalize(s))
            .collect(),
    };
    (cursor..=n - m).filter(|&p| pass.matches_at(p)).count()
}

/// The index where `pattern` comes closest to matching (most lines equal ignoring surrounding
/// whitespace), nearest to `near` among equals. Used only for failure messages.
pub(crate) fn best_guess(file: &[&str], pattern: &[&str], near: usize) -> usize {
    const BUDGET: usize = 4_000_000;
    if file.is_empty() || pattern.is_empty() {
        return near.min(file.len().saturating_sub(1));
    }
    let last = file.len().saturating_sub(pattern.len().min(file.len()));
    let near = near.min(last);
    let span = (BUDGET / pattern.len()).max(1);
    let (lo, hi) = (near.saturating_sub(span / 2), (near + span / 2).min(last));
    let score = |p: usize| {
        pattern
            .iter()
            .zip(&file[p..])
            .filter(|(a, b)| a.trim() == b.trim())
            .count()
    };
    let mut best = (0usize, usize::MAX, near);
    for p in lo..=hi {
        let s = score(p);
        let dist = p.abs_diff(near);
        if s > best.0 || (s == best.0 && dist < best.1) {
            best = (s, dist, p);
        }
    }
    best.2
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn seek(cursor: usize, expected: Option<usize>) -> Seek {
        Seek {
            cursor,
            expected,
            at_eof: false,
        }
    }

    #[test]
    fn widens_around_the_expected_position() {
        let file: Vec<String> = (0..200).map(|i| format!("l{i}")).collect();
        let mut file: Vec<&str> = file.iter().map(String::as_str).collect();
        file[40] = "x";
        file[160] = "x";
        // Stated position 150: the copy at 160 (distance 10) wins over the one at 40 (110).
        let f = locate(&Haystack::new(&file), &["x"], seek(0, Some(150))).unwrap();
        assert_eq!(f.pos, 160);
        // Stated position 60: 40 is 20 away.
        assert_eq!(
            locate(&Haystack::new(&file), &["x"], seek(0, Some(60)))
                .unwrap()
                .pos,
            40
        );
        // Beyond the window with two candidates: ambiguous, refused.
        assert_eq!(
            locate(&Haystack::new(&file), &["x"], seek(0, Some(100))),
            None
        );
        // Beyond the window but unique: accepted.
        assert_eq!(
            locate(&Haystack::new(&file), &["l5"], seek(0, Some(190)))
                .unwrap()
                .pos,
            5
        );
    }

    #[test]
    fn never_matches_before_the_cursor() {
        let file = ["a", "b", "a", "b"];
        assert_eq!(
            locate(&Haystack::new(&file), &["a", "b"], seek(1, None))
                .unwrap()
                .pos,
            2
        );
        assert_eq!(
            locate(&Haystack::new(&file), &["a", "b"], seek(3, None)),
            None
        );
    }

    #[test]
    fn loosens_step_by_step() {
        let file = ["fn a() {  ", "\tlet x = “q”;", "}"];
        let f = locate(&Haystack::new(&file), &["fn a() {"], seek(0, None)).unwrap();
        assert_eq!(f.level, MatchLevel::TrailingWhitespace);
        let f = locate(&Haystack::new(&file), &["    let x = “q”;"], seek(0, None)).unwrap();
        assert_eq!(f.level, MatchLevel::Whitespace);
        let f = locate(&Haystack::new(&file), &["let x = \"q\";"], seek(0, None)).unwrap();
        assert_eq!((f.pos, f.level), (1, MatchLevel::Punctuation));
    }

    #[test]
    fn exact_beats_loose_even_when_farther() {
        let file = ["a ", "x", "a", "y"];
        let f = locate(&Haystack::new(&file), &["a"], seek(0, Some(0))).unwrap();
        assert_eq!((f.pos, f.level), (2, MatchLevel::Exact));
    }

    #[test]
    fn end_of_file_is_tried_first() {
        let file = ["a", "x", "a"];
        let s = Seek {
            cursor: 0,
            expected: None,
            at_eof: true,
        };
        assert_eq!(locate(&Haystack::new(&file), &["a"], s).unwrap().pos, 2);
    }

    #[test]
    fn best_guess_prefers_most_lines_equal() {
        let file = ["a", "b", "c", "d", "e"];
        assert_eq!(best_guess(&file, &["c", "D", "e"], 0), 2);
        assert_eq!(best_guess(&[], &["x"], 3), 0);
    }
}
