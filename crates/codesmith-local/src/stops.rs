//! Stop sequences over streamed text: text that might be the start of a stop
//! sequence is held back until it is decided, and the stream is cut right
//! before the first full match.

use crate::toolcall::partial_tag_suffix;

/// Scans streamed text for any of a set of stop sequences.
#[derive(Debug, Default)]
pub(crate) struct StopScanner {
    stops: Vec<String>,
    held: String,
}

impl StopScanner {
    /// A scanner for `stops` (empty strings are ignored).
    pub(crate) fn new(stops: impl IntoIterator<Item = String>) -> Self {
        StopScanner {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            held: String::new(),
        }
    }

    /// Adds text. Returns the text that is safe to emit and the stop
    /// sequence that matched, if any (the emitted text then ends right before it).
    pub(crate) fn push(&mut self, text: &str) -> (String, Option<String>) {
        self.held.push_str(text);
        let first = self
            .stops
            .iter()
            .filter_map(|stop| self.held.find(stop.as_str()).map(|at| (at, stop)))
            .min_by_key(|(at, _)| *at);
        if let Some((at, stop)) = first {
            let out = self.held[..at].to_string();
            let stop = stop.clone();
            self.held.clear();
            return (out, Some(stop));
        }
        let keep = self
            .stops
            .iter()
            .map(|stop| partial_tag_suffix(&self.held, stop))
            .max()
            .unwrap_or(0);
        let out = self.held[..self.held.len() - keep].to_string();
        self.held.drain(..self.held.len() - keep);
        (out, None)
    }

    /// Releases the held-back text at the end of the stream.
    pub(crate) fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], chunks: &[&str]) -> (String, bool) {
        let mut scanner = StopScanner::new(stops.iter().map(|s| s.to_string()));
        let mut out = String::new();
        for chunk in chunks {
            let (text, hit) = scanner.push(chunk);
            out.push_str(&text);
            if hit.is_some() {
                return (out, true);
            }
        }
        out.push_str(&scanner.finish());
        (out, false)
    }

    #[test]
    fn stops_at_every_split() {
        let text = "alpha END beta";
        for (i, _) in text.char_indices() {
            assert_eq!(
                run(&["END"], &[&text[..i], &text[i..]]),
                ("alpha ".to_string(), true)
            );
        }
    }

    #[test]
    fn partial_match_is_released_at_the_end() {
        assert_eq!(
            run(&["END"], &["alpha EN"]),
            ("alpha EN".to_string(), false)
        );
        assert_eq!(run(&["END"], &["a E", "x"]), ("a Ex".to_string(), false));
        assert_eq!(run(&[], &["a", "b"]), ("ab".to_string(), false));
    }

    #[test]
    fn earliest_of_several_stops_wins() {
        assert_eq!(run(&["zz", "b"], &["a b zz"]), ("a ".to_string(), true));
    }
}
