//! A copy bias toward the tool results a response answers from.
//!
//! A small model asked to answer from a tool result starts copying it, then
//! drifts: it skips entries, invents file names and loops on a suffix
//! (`Cargo.toml.yml.yml...`). While it writes free text after tool results,
//! the sampler gives a bonus to the tokens that continue the result text from
//! where the model's latest words match it (the longest matching tail wins),
//! so a copy stays a faithful copy; parts of the result already copied are not
//! offered again, so the copy moves on instead of looping. The model still
//! chooses where to start copying and when to stop: the bonus is added to its
//! own logits, never a mask.

use std::sync::Arc;

/// Logit bonus for a token that continues the source text.
/// Logit bonus for a token that starts copying a line of the source (the
/// written text ends a line): moderate, so the model picks which lines to copy.
const LINE_BONUS: f32 = 8.0;
/// Extra bonus per byte of matched tail inside a line, up to [`MAX_EXTRA`]:
/// a copy that is under way is finished (a small model otherwise swerves
/// mid-word, e.g. from a name it just wrote to a made-up one).
const PER_BYTE: f32 = 1.0;
/// Largest extra bonus inside a line.
const MAX_EXTRA: f32 = 16.0;
/// Longest tail of the written text (in bytes) that is looked up in the source.
const MAX_MATCH: usize = 64;
/// Shortest tail that counts as copying; a shorter one counts only when it
/// ends a line (the next line of a listing may start anywhere).
const MIN_MATCH: usize = 3;
/// Most places in the source continued at once.
const MAX_PLACES: usize = 32;
/// How far past a place (in bytes) a token's text may reach.
const CONTINUATION: usize = 48;

/// The copy bias of one response.
#[derive(Debug, Clone)]
pub(crate) struct Grounding {
    source: String,
    /// Per source byte: already copied by this response.
    copied: Vec<bool>,
    /// The free text written so far (its last [`MAX_MATCH`] bytes matter).
    written: String,
    texts: Arc<Vec<Option<String>>>,
}

impl Grounding {
    /// A bias toward `source` (the tool results), for a vocabulary whose token
    /// texts are `texts` (`None`: control or partial-UTF-8 tokens, never boosted).
    pub(crate) fn new(source: &str, texts: Arc<Vec<Option<String>>>) -> Self {
        Grounding {
            source: source.to_string(),
            copied: vec![false; source.len()],
            written: String::new(),
            texts,
        }
    }

    /// Byte offsets in the source where the written text's longest matching
    /// tail ends and what follows has not been copied yet (at most [`MAX_PLACES`]).
    fn places(&self) -> Vec<usize> {
        self.matched().0
    }

    /// [`Self::places`] and the length of the tail that matched.
    fn matched(&self) -> (Vec<usize>, usize) {
        let written = self.written.as_str();
        let longest = written.len().min(MAX_MATCH);
        for len in (1..=longest).rev() {
            let start = written.len() - len;
            if !written.is_char_boundary(start) {
                continue;
            }
            let tail = &written[start..];
            if len < MIN_MATCH && !tail.ends_with('\n') {
                break;
            }
            let places: Vec<usize> = self
                .source
                .match_indices(tail)
                .map(|(at, _)| at + len)
                .filter(|&end| end < self.source.len() && !self.copied[end])
                .take(MAX_PLACES)
                .collect();
            if !places.is_empty() {
                return (places, len);
            }
        }
        (Vec::new(), 0)
    }

    /// Token ids that continue the source at one of the current places, each
    /// with the bonus to add to its logit: per place, the token with the
    /// longest text that the source continues with (the way a BPE vocabulary
    /// spells the text, near enough; a shorter piece would split a word
    /// where the model never saw it split). Empty when the written text does
    /// not match the source.
    pub(crate) fn bias(&self) -> Vec<(u32, f32)> {
        let (places, matched) = self.matched();
        let continuations: Vec<&str> = places.iter().map(|&at| self.continuation(at)).collect();
        if continuations.is_empty() {
            return Vec::new();
        }
        let bonus = if self.written.ends_with('\n') {
            LINE_BONUS
        } else {
            LINE_BONUS + (PER_BYTE * matched as f32).min(MAX_EXTRA)
        };
        let mut best: Vec<Option<(usize, u32)>> = vec![None; continuations.len()];
        for (id, text) in self.texts.iter().enumerate() {
            let Some(text) = text.as_deref().filter(|t| !t.is_empty()) else {
                continue;
            };
            for (slot, continuation) in best.iter_mut().zip(&continuations) {
                if continuation.starts_with(text) && slot.is_none_or(|(len, _)| text.len() > len) {
                    *slot = Some((text.len(), id as u32));
                }
            }
        }
        let mut ids: Vec<u32> = best.into_iter().flatten().map(|(_, id)| id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().map(|id| (id, bonus)).collect()
    }

    /// Records the text of the token that was chosen.
    pub(crate) fn accept(&mut self, text: &str) {
        for at in self.places() {
            if self.continuation(at).starts_with(text) {
                for byte in &mut self.copied[at..at + text.len()] {
                    *byte = true;
                }
            }
        }
        self.written.push_str(text);
        if self.written.len() > 2 * MAX_MATCH {
            let mut cut = self.written.len() - MAX_MATCH;
            while !self.written.is_char_boundary(cut) {
                cut += 1;
            }
            self.written.drain(..cut);
        }
    }

    /// Up to [`CONTINUATION`] bytes of the source from `at`, cut on a char boundary.
    fn continuation(&self, at: usize) -> &str {
        let mut end = (at + CONTINUATION).min(self.source.len());
        while !self.source.is_char_boundary(end) {
            end -= 1;
        }
        &self.source[at..end]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn vocab(words: &[&str]) -> Arc<Vec<Option<String>>> {
        Arc::new(words.iter().map(|w| Some((*w).to_string())).collect())
    }

    fn boosted(g: &Grounding) -> Vec<u32> {
        let mut ids: Vec<u32> = g.bias().into_iter().map(|(id, _)| id).collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn the_continuation_of_a_matching_tail_is_boosted() {
        let texts = vocab(&["alpha", "\n", "beta", "gamma", "be", "x"]);
        let mut g = Grounding::new("alpha\nbeta\ngamma\n", texts);
        assert!(g.bias().is_empty(), "nothing written yet");
        g.accept("alpha");
        // "\n" follows "alpha" in the source, and the copy is under way.
        assert_eq!(g.bias(), vec![(1, LINE_BONUS + 5.0 * PER_BYTE)]);
        g.accept("\n");
        // After a line break: "beta" (the longest piece, not "be"), not yet
        // "gamma" (the tail "alpha\n" matches, and beta follows it), with the
        // moderate bonus that lets the model pick its lines.
        assert_eq!(g.bias(), vec![(2, LINE_BONUS)]);
    }

    #[test]
    fn the_bonus_grows_with_the_match_up_to_a_cap() {
        let long = "x".repeat(40);
        let texts = vocab(&[&long, "y"]);
        let mut g = Grounding::new(&format!("{long}y"), texts);
        g.accept(&long);
        assert_eq!(g.bias(), vec![(1, LINE_BONUS + MAX_EXTRA)]);
    }

    #[test]
    fn what_was_copied_is_not_offered_again() {
        let texts = vocab(&["crates/", "a/", "b/", "c/", "\n"]);
        let mut g = Grounding::new("crates/a/\ncrates/b/\ncrates/c/\n", texts);
        for word in ["crates/", "a/", "\n", "crates/"] {
            g.accept(word);
        }
        // After the second "crates/": b, which follows the longest matching
        // tail ("crates/a/\ncrates/"), not a again.
        assert_eq!(boosted(&g), vec![2]);
        for word in ["b/", "\n", "crates/"] {
            g.accept(word);
        }
        assert_eq!(boosted(&g), vec![3]);
    }

    #[test]
    fn a_short_tail_inside_a_line_does_not_count() {
        let texts = vocab(&["ab", "cd", "\n"]);
        let mut g = Grounding::new("xab cd\nab\n", texts);
        g.accept("zb");
        assert!(g.bias().is_empty());
        g.accept("\n");
        // A line break matches: the starts of the source's lines.
        assert_eq!(boosted(&g), vec![0]);
    }

    #[test]
    fn a_text_that_leaves_the_source_gets_no_bonus() {
        let texts = vocab(&["Cargo.toml", ".yml", "\n", "Containerfile"]);
        let mut g = Grounding::new("Cargo.toml\nContainerfile\n", texts);
        g.accept("Cargo.toml");
        g.accept(".yml");
        assert!(g.bias().is_empty());
        // Multi-byte text and long writing never split a character.
        for _ in 0..100 {
            g.accept("é");
        }
        assert!(g.bias().is_empty());
    }
}
