//! Success-claim detection in the model's final text.
//!
//! Matching is by contiguous phrase, not by regular expression: a negation
//! inside the phrase breaks it ("tests failed" does not contain "tests pass",
//! "测试未通过" does not contain "测试通过"). A negation just before the
//! phrase in the same clause ("not all tests pass", "并非所有测试通过") also
//! cancels the match.

use serde::Serialize;

/// What a claim is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// The tests pass.
    Tests,
    /// The build (or compilation) succeeds.
    Build,
}

impl ClaimKind {
    /// `tests` or `build`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimKind::Tests => "tests",
            ClaimKind::Build => "build",
        }
    }
}

/// A success claim found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// What is claimed.
    pub kind: ClaimKind,
    /// The phrase that matched (lower case).
    pub phrase: &'static str,
    /// The sentence that holds the phrase, trimmed, at most [`MAX_CLAIM_CHARS`] characters.
    pub text: String,
}

/// Longest claim text kept, in characters.
pub const MAX_CLAIM_CHARS: usize = 240;

/// English test-claim phrases, lower case.
const EN_TESTS: &[&str] = &[
    "all tests pass",
    "all the tests pass",
    "all tests are passing",
    "all tests succeed",
    "tests pass",
    "tests are passing",
    "tests now pass",
    "tests all pass",
    "tests succeeded",
    "test suite passes",
    "test suite passed",
    "tests are green",
    "tests all green",
    "all tests green",
    "all green",
    "test passes",
    "test passed",
    "test now passes",
];

/// English build-claim phrases, lower case.
const EN_BUILD: &[&str] = &[
    "build succeeded",
    "build succeeds",
    "build successful",
    "build was successful",
    "build is successful",
    "build passes",
    "build passed",
    "build is green",
    "builds successfully",
    "built successfully",
    "compiles successfully",
    "compiled successfully",
    "compiles cleanly",
    "compiles without errors",
    "compilation succeeded",
    "compilation successful",
];

/// Chinese test-claim phrases.
const ZH_TESTS: &[&str] = &[
    "测试通过",
    "测试全部通过",
    "测试均通过",
    "测试都通过",
    "测试已通过",
    "全部测试通过",
    "所有测试通过",
    "测试全绿",
    "单元测试通过",
    "用例全部通过",
    "用例通过",
];

/// Chinese build-claim phrases.
const ZH_BUILD: &[&str] = &["编译成功", "编译通过", "构建成功", "构建通过", "编译已通过"];

/// English words that, shortly before a phrase in the same clause, negate it.
const EN_NEGATIONS: &[&str] = &[
    "not", "no", "never", "nor", "isn't", "aren't", "don't", "doesn't", "didn't", "won't",
    "haven't", "hasn't", "cannot", "can't", "couldn't", "wasn't", "weren't", "neither", "without",
];

/// Chinese characters that, shortly before a phrase in the same clause, negate it.
const ZH_NEGATIONS: &[char] = &['不', '没', '未', '非', '无', '别'];

/// How many words (English) or characters (Chinese) before a phrase are
/// searched for a negation.
const NEGATION_WINDOW: usize = 4;

/// The first success claim in `text`, if any.
pub fn detect(text: &str) -> Option<Claim> {
    let lower = text.to_lowercase();
    let mut best: Option<(usize, ClaimKind, &'static str)> = None;
    let tables: [(&[&'static str], ClaimKind, bool); 4] = [
        (EN_TESTS, ClaimKind::Tests, true),
        (EN_BUILD, ClaimKind::Build, true),
        (ZH_TESTS, ClaimKind::Tests, false),
        (ZH_BUILD, ClaimKind::Build, false),
    ];
    for (phrases, kind, english) in tables {
        for &phrase in phrases {
            for (at, _) in lower.match_indices(phrase) {
                if english && !word_boundary_before(&lower, at) {
                    continue;
                }
                if negated(&lower[..at], english) {
                    continue;
                }
                if best.is_none_or(|(b, _, _)| at < b) {
                    best = Some((at, kind, phrase));
                }
                break;
            }
        }
    }
    let (at, kind, phrase) = best?;
    Some(Claim {
        kind,
        phrase,
        text: sentence_around(&lower, text, at),
    })
}

fn word_boundary_before(lower: &str, at: usize) -> bool {
    lower[..at]
        .chars()
        .next_back()
        .is_none_or(|c| !c.is_alphanumeric())
}

/// True when the clause before a phrase (the text back to the last clause
/// break) ends with a negation within [`NEGATION_WINDOW`].
fn negated(before: &str, english: bool) -> bool {
    let clause = before
        .rsplit([
            '.', '!', '?', ';', ',', ':', '\n', '。', '！', '？', '；', '，', '：',
        ])
        .next()
        .unwrap_or(before);
    if english {
        clause
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .filter(|w| !w.is_empty())
            .rev()
            .take(NEGATION_WINDOW)
            .any(|w| EN_NEGATIONS.contains(&w) || w.ends_with("n't"))
    } else {
        clause
            .chars()
            .rev()
            .take(NEGATION_WINDOW)
            .any(|c| ZH_NEGATIONS.contains(&c))
            || negated(clause, true)
    }
}

/// The sentence of `original` around byte offset `at` of its lower-cased
/// form. Lower-casing can change a character's byte length; when any
/// character does, offsets do not line up and the cut is made on the
/// lower-cased text instead.
fn sentence_around(lower: &str, original: &str, at: usize) -> String {
    let aligned = original
        .chars()
        .all(|c| c.to_lowercase().map(char::len_utf8).sum::<usize>() == c.len_utf8());
    let source = if aligned { original } else { lower };
    let is_break = |c: char| matches!(c, '.' | '!' | '?' | '\n' | '。' | '！' | '？');
    let start = source[..at]
        .rfind(is_break)
        .map(|i| i + source[i..].chars().next().map_or(1, char::len_utf8))
        .unwrap_or(0);
    let end = source[at..]
        .find(is_break)
        .map(|i| at + i)
        .unwrap_or(source.len());
    source[start..end]
        .trim()
        .chars()
        .take(MAX_CLAIM_CHARS)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn english_claims_are_found() {
        for text in [
            "I fixed the bug. All tests pass now.",
            "Done — all tests passed.",
            "The tests are passing.",
            "Tests pass",
            "cargo test: tests all green!",
            "The build succeeded and nothing else changed.",
            "It compiles successfully.",
            "The test suite passes on my machine.",
        ] {
            assert!(detect(text).is_some(), "{text}");
        }
    }

    #[test]
    fn the_claim_text_is_its_sentence() {
        let claim = detect("I fixed the parser. All tests pass now. Bye.").unwrap();
        assert_eq!(claim.text, "All tests pass now");
        assert_eq!(claim.kind, ClaimKind::Tests);
        let claim = detect("Changed lib.rs\nThe build succeeded.").unwrap();
        assert_eq!(claim.kind, ClaimKind::Build);
        assert_eq!(claim.text, "The build succeeded");
    }

    #[test]
    fn negations_are_not_claims() {
        for text in [
            "The tests failed.",
            "3 tests failed; I could not fix them.",
            "Not all tests pass yet.",
            "The tests do not pass.",
            "The tests don't pass yet.",
            "I have not verified that the tests pass.",
            "The build failed with 2 errors.",
            "The build never succeeded.",
            "测试未通过。",
            "测试没有通过",
            "编译失败了",
            "并非所有测试通过",
            "",
            "I edited src/main.rs as asked.",
        ] {
            assert_eq!(detect(text), None, "{text}");
        }
    }

    #[test]
    fn a_negation_in_another_clause_does_not_cancel() {
        assert!(detect("It did not work at first. Now all tests pass.").is_some());
        assert!(detect("The flaky one is not mine, all tests pass.").is_some());
    }

    #[test]
    fn chinese_claims_are_found() {
        let claim = detect("修改完成，所有测试通过。").unwrap();
        assert_eq!(claim.kind, ClaimKind::Tests);
        assert_eq!(claim.text, "修改完成，所有测试通过");
        assert_eq!(detect("项目编译成功").unwrap().kind, ClaimKind::Build);
        assert!(detect("测试全部通过！").is_some());
    }

    #[test]
    fn case_folding_that_changes_lengths_does_not_panic() {
        // 'İ' lower-cases to two characters; 'ẞ' to a shorter one.
        for text in [
            "İİİ ẞ All tests pass. İ",
            "ẞẞ — ALL TESTS PASS",
            "Ωmega: tests pass",
        ] {
            let claim = detect(text).unwrap();
            assert!(claim.text.to_lowercase().contains("tests pass"), "{text}");
        }
    }

    #[test]
    fn no_input_panics() {
        let text = "İẞ测试通过。Not all tests pass, 编译成功！build succeeded\n\u{0}ǅ all green";
        for (i, _) in text.char_indices() {
            let _ = detect(&text[..i]);
            let _ = detect(&text[i..]);
        }
    }

    #[test]
    fn words_must_start_at_a_boundary() {
        assert_eq!(detect("the contests passed quietly"), None);
    }
}
