//! A running command's latest output lines, for a person watching (see
//! [`crate::context::LiveOutput`]): bounded, secrets masked as in the result, the
//! harness's sentinel line left out.

use std::convert::Infallible;
use std::time::Duration;

use super::process::{self, SharedOutput};
use crate::context::LiveOutput;

/// Most lines sent at a time: the last ones.
pub const LIVE_LINES: usize = 5;
/// Longest line sent, in characters (the rest is cut).
pub const LIVE_LINE_CHARS: usize = 200;
/// How often the output is looked at.
pub const LIVE_INTERVAL: Duration = Duration::from_millis(200);
/// Bytes of the newest output kept to find the last lines in.
const TAIL_BYTES: usize = 8 * 1024;

/// Sends `output`'s last lines to `live` each time they change, until dropped. `sentinel`
/// is the marker the harness's own last line carries; `mask` makes text fit to show
/// (the scrubber the result uses).
pub(crate) async fn watch(
    output: SharedOutput,
    live: LiveOutput,
    sentinel: String,
    mask: impl Fn(String) -> String,
) -> Infallible {
    let mut cursor = 0;
    let mut tail = String::new();
    let mut sent: Vec<String> = Vec::new();
    let mut tick = tokio::time::interval(LIVE_INTERVAL);
    loop {
        tick.tick().await;
        let slice = process::lock(&output).read(cursor, 0, TAIL_BYTES, false);
        cursor = slice.next;
        let text = slice.head + &slice.tail;
        if text.is_empty() {
            continue;
        }
        tail.push_str(&text);
        if tail.len() > 2 * TAIL_BYTES {
            let mut cut = tail.len() - TAIL_BYTES;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail.drain(..cut);
        }
        let lines = last_lines(&mask(tail.clone()), &sentinel);
        if lines != sent && !lines.is_empty() {
            sent.clone_from(&lines);
            live.send(lines);
        }
    }
}

/// The last [`LIVE_LINES`] non-blank lines of `text` as a terminal shows them (a line
/// redrawn with `\r`, as progress bars do, is its last drawing), each cut to
/// [`LIVE_LINE_CHARS`] characters; lines holding `sentinel` are left out.
pub(crate) fn last_lines(text: &str, sentinel: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .lines()
        .filter(|l| !l.contains(sentinel))
        .filter_map(|l| {
            let shown = l.rsplit('\r').find(|s| !s.trim().is_empty())?;
            Some(shown.chars().take(LIVE_LINE_CHARS).collect::<String>())
        })
        .rev()
        .take(LIVE_LINES)
        .collect();
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_are_bounded_and_drawn_as_a_terminal_would() {
        let text = "a\nb\n\nc\nprogress 10%\rprogress 90%\nd\ne\nf\n__S__ 0 /tmp\n";
        assert_eq!(
            last_lines(text, "__S__"),
            ["c", "progress 90%", "d", "e", "f"]
        );
        let long = "x".repeat(1_000);
        assert_eq!(last_lines(&long, "S")[0].chars().count(), LIVE_LINE_CHARS);
    }
}
