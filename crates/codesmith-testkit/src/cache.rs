//! A model of Anthropic's prompt cache, for [`crate::ScriptedServer::enable_prompt_cache`].
//!
//! The rules follow Anthropic's prompt-caching documentation:
//! - the cacheable prefix runs in the order tools → system → messages, one
//!   block per tool definition, system text block and message content block;
//! - a block marked `cache_control` is a breakpoint: the request writes the
//!   prefix up to and including it, when that prefix holds at least the
//!   minimum cacheable length;
//! - to read, the API checks the prefix at each breakpoint and at the block
//!   boundaries before it, up to [`LOOKBACK_BLOCKS`] blocks back, and uses the
//!   longest prefix it has seen before; the marker itself is not part of the
//!   hashed content, so moving markers does not change a prefix.
//!
//! Tokens are counted as one per 4 bytes of a block's JSON (a stand-in for a
//! tokenizer that is stable from request to request, which is all the rules need).

use std::collections::HashSet;

use serde_json::Value;

/// Block boundaries the lookback checks before a breakpoint (the breakpoint's included).
pub const LOOKBACK_BLOCKS: usize = 20;

/// What one request reads from, writes to and sends past the cache, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Tokens after the last cache write: Anthropic's `input_tokens`.
    pub input_tokens: u64,
    /// Tokens served from the cache: `cache_read_input_tokens`.
    pub cache_read_input_tokens: u64,
    /// Tokens written to the cache: `cache_creation_input_tokens`.
    pub cache_creation_input_tokens: u64,
}

impl CacheUsage {
    /// All prompt tokens of the request.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }
}

/// The cache entries written so far (prefix hashes) and the minimum length.
#[derive(Debug)]
pub(crate) struct PromptCache {
    min_tokens: u64,
    entries: HashSet<u64>,
}

impl PromptCache {
    pub(crate) fn new(min_tokens: u64) -> Self {
        PromptCache {
            min_tokens,
            entries: HashSet::new(),
        }
    }

    /// Applies the rules to one Messages request body and records its writes.
    pub(crate) fn serve(&mut self, body: &Value) -> CacheUsage {
        let blocks = blocks(body);
        // Running hash and token count of the prefix ending at each block.
        let mut prefix_hash = Vec::with_capacity(blocks.len());
        let mut prefix_tokens = Vec::with_capacity(blocks.len());
        let (mut hash, mut tokens) = (0xcbf2_9ce4_8422_2325_u64, 0u64);
        for (bytes, _) in &blocks {
            for b in bytes {
                hash = (hash ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
            }
            hash = (hash ^ 0xff).wrapping_mul(0x0000_0100_0000_01b3);
            tokens += (bytes.len() as u64).div_ceil(4);
            prefix_hash.push(hash);
            prefix_tokens.push(tokens);
        }
        let breakpoints: Vec<usize> = blocks
            .iter()
            .enumerate()
            .filter(|(_, (_, marked))| *marked)
            .map(|(i, _)| i)
            .collect();
        let mut read = 0;
        for &bp in &breakpoints {
            for i in (bp.saturating_sub(LOOKBACK_BLOCKS - 1)..=bp).rev() {
                if self.entries.contains(&prefix_hash[i]) {
                    read = read.max(prefix_tokens[i]);
                    break;
                }
            }
        }
        let mut written_to = read;
        for &bp in &breakpoints {
            if prefix_tokens[bp] >= self.min_tokens {
                self.entries.insert(prefix_hash[bp]);
                written_to = written_to.max(prefix_tokens[bp]);
            }
        }
        CacheUsage {
            input_tokens: tokens - written_to,
            cache_read_input_tokens: read,
            cache_creation_input_tokens: written_to - read,
        }
    }
}

/// The request's blocks in cache order, each as its JSON without the marker,
/// and whether it carries a `cache_control` marker.
fn blocks(body: &Value) -> Vec<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    let mut push = |block: &Value| {
        let mut block = block.clone();
        let marked = block
            .as_object_mut()
            .and_then(|o| o.remove("cache_control"))
            .is_some();
        out.push((serde_json::to_vec(&block).unwrap_or_default(), marked));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(tool);
    }
    match &body["system"] {
        Value::Array(system) => system.iter().for_each(&mut push),
        Value::String(text) => push(&serde_json::json!({"type": "text", "text": text})),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::Array(content) => content.iter().for_each(&mut push),
            Value::String(text) => push(&serde_json::json!({"type": "text", "text": text})),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn body(n: usize, marks: &[usize]) -> Value {
        let content: Vec<Value> = (0..n)
            .map(|i| {
                let mut b = json!({"type": "text", "text": format!("{i:04}").repeat(100)});
                if marks.contains(&i) {
                    b["cache_control"] = json!({"type": "ephemeral"});
                }
                b
            })
            .collect();
        json!({"messages": [{"role": "user", "content": content}]})
    }

    #[test]
    fn reads_within_the_lookback_and_ignores_short_prefixes() {
        let mut cache = PromptCache::new(1024);
        // 2 blocks of ~105 tokens: below the minimum, nothing is written.
        assert_eq!(cache.serve(&body(2, &[1])).cache_creation_input_tokens, 0);
        let first = cache.serve(&body(12, &[11]));
        assert_eq!(first.cache_read_input_tokens, 0);
        assert!(first.cache_creation_input_tokens > 1024);
        // 19 blocks later: found by the lookback.
        let second = cache.serve(&body(31, &[30]));
        assert_eq!(second.cache_read_input_tokens, first.total());
        // 25 blocks past the last write, one marker only: the lookback misses it...
        let missed = cache.serve(&body(56, &[55]));
        assert_eq!(missed.cache_read_input_tokens, 0);
        // ...a second marker at the previous tail finds it; moved markers change nothing.
        let mut cache = PromptCache::new(1024);
        let a = cache.serve(&body(31, &[30]));
        let b = cache.serve(&body(56, &[30, 55]));
        assert_eq!(b.cache_read_input_tokens, a.total());
    }
}
