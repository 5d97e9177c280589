//! The tokenizer, built from the GGUF's own `tokenizer.ggml.tokens` and
//! `tokenizer.ggml.merges` metadata.
//!
//! For SmolLM2 (`tokenizer.ggml.pre = smollm`) the reference pipeline splits
//! every digit into its own piece, then applies GPT-2 byte-level
//! pre-tokenization without a prefix space. candle's built-in GGUF tokenizer
//! adds a prefix space (`Ġsystem` instead of `system`), which is why this
//! module exists.
//!
//! Control tokens (`<|im_start|>`, ...) are never recognised inside text:
//! callers insert their ids explicitly, so user text cannot forge a turn.

use std::collections::HashMap;

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::Tokenizer;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;

use crate::error::LocalError;

/// GGUF token type of control tokens (llama.cpp's `LLAMA_TOKEN_TYPE_CONTROL`).
const TOKEN_TYPE_CONTROL: u32 = 3;

/// A byte-level BPE tokenizer plus the byte string of every token.
pub struct LocalTokenizer {
    inner: Tokenizer,
    /// The raw bytes each token id stands for (control tokens: their literal text).
    token_bytes: Vec<Vec<u8>>,
    /// True for control tokens (`<|endoftext|>`, `<|im_start|>`, `<|im_end|>`, ...).
    control: Vec<bool>,
    by_text: HashMap<String, u32>,
    /// Each token's text, built on first use (see [`LocalTokenizer::token_texts`]).
    texts: std::sync::OnceLock<std::sync::Arc<Vec<Option<String>>>>,
}

impl std::fmt::Debug for LocalTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTokenizer")
            .field("vocab", &self.token_bytes.len())
            .finish_non_exhaustive()
    }
}

impl LocalTokenizer {
    /// Builds the tokenizer from a GGUF's metadata.
    ///
    /// # Errors
    /// [`LocalError::Tokenizer`] when the metadata lacks the token list or
    /// merges, or the tokenizer is not GPT-2-style byte-level BPE
    /// (`tokenizer.ggml.model = gpt2`).
    pub fn from_gguf(content: &Content) -> Result<Self, LocalError> {
        let meta = |key: &str| {
            content
                .metadata
                .get(key)
                .ok_or_else(|| LocalError::Tokenizer(format!("the GGUF has no `{key}`")))
        };
        let kind = meta("tokenizer.ggml.model")?
            .to_string()
            .map_err(|e| LocalError::Tokenizer(e.to_string()))?;
        if kind != "gpt2" {
            return Err(LocalError::Tokenizer(format!(
                "tokenizer model `{kind}` is not supported; use a GGUF with GPT-2-style BPE (`gpt2`)"
            )));
        }
        let tokens = string_array(meta("tokenizer.ggml.tokens")?, "tokens")?;
        let merges = string_array(meta("tokenizer.ggml.merges")?, "merges")?
            .into_iter()
            .map(|m| match m.split_once(' ') {
                Some((a, b)) => Ok((a.to_string(), b.to_string())),
                None => Err(LocalError::Tokenizer(format!("bad merge entry `{m}`"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let types: Vec<u32> = match content.metadata.get("tokenizer.ggml.token_type") {
            Some(Value::Array(values)) => values.iter().map(|v| integer(v).unwrap_or(1)).collect(),
            _ => Vec::new(),
        };
        let pre = content
            .metadata
            .get("tokenizer.ggml.pre")
            .and_then(|v| v.to_string().ok())
            .map(String::as_str)
            .unwrap_or("gpt2");
        Self::build(tokens, merges, &types, pre)
    }

    /// Reads the GGUF header at `path` and builds its tokenizer.
    ///
    /// # Errors
    /// [`LocalError::Io`] when the file cannot be opened, [`LocalError::Model`]
    /// when it is not a GGUF, [`LocalError::Tokenizer`] as for [`Self::from_gguf`].
    /// Test builds only (`cfg(test)` or the `test-util` feature): the model loader reads
    /// the header once for weights and tokenizer together.
    #[cfg(any(test, feature = "test-util"))]
    pub fn from_gguf_file(path: &std::path::Path) -> Result<Self, LocalError> {
        let mut file = std::fs::File::open(path).map_err(|e| LocalError::io("opening", path, e))?;
        let content = Content::read(&mut file).map_err(|e| LocalError::Model {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        Self::from_gguf(&content)
    }

    /// Builds the tokenizer from a vocabulary (index = id), its merges, the
    /// GGUF token types (same length as `tokens`, or empty) and the
    /// pre-tokenizer name (`smollm` splits digits individually).
    ///
    /// # Errors
    /// [`LocalError::Tokenizer`] when the BPE model cannot be built.
    pub fn build(
        tokens: Vec<String>,
        merges: Vec<(String, String)>,
        types: &[u32],
        pre: &str,
    ) -> Result<Self, LocalError> {
        let vocab: Vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| LocalError::Tokenizer(e.to_string()))?;
        let mut inner = Tokenizer::new(bpe);
        let byte_level = ByteLevel::new(false, true, true);
        let pre_tokenizer: PreTokenizerWrapper = match pre {
            "smollm" => Sequence::new(vec![Digits::new(true).into(), byte_level.into()]).into(),
            _ => byte_level.into(),
        };
        inner.with_pre_tokenizer(Some(pre_tokenizer));
        inner.with_decoder(Some(ByteLevelDecoder::default()));

        let unicode_to_byte = unicode_to_byte();
        let control: Vec<bool> = (0..tokens.len())
            .map(|i| types.get(i) == Some(&TOKEN_TYPE_CONTROL))
            .collect();
        let token_bytes = tokens
            .iter()
            .zip(&control)
            .map(|(token, &is_control)| {
                if is_control {
                    return token.as_bytes().to_vec();
                }
                let mut out = Vec::with_capacity(token.len());
                for ch in token.chars() {
                    match unicode_to_byte.get(&ch) {
                        Some(&b) => out.push(b),
                        None => out.extend_from_slice(ch.to_string().as_bytes()),
                    }
                }
                out
            })
            .collect();
        let by_text = tokens
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, i as u32))
            .collect();
        Ok(LocalTokenizer {
            inner,
            token_bytes,
            control,
            by_text,
            texts: std::sync::OnceLock::new(),
        })
    }

    /// Encodes plain text into token ids. Control-token spellings inside the
    /// text are tokenized as ordinary characters.
    ///
    /// # Errors
    /// [`LocalError::Tokenizer`] when the tokenizer fails (it does not for valid UTF-8).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, LocalError> {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        let encoding = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| LocalError::Tokenizer(e.to_string()))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The id of a token given its exact vocabulary spelling (e.g. `<|im_end|>`).
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.by_text.get(token).copied()
    }

    /// The raw bytes a token stands for; empty for an out-of-range id.
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.token_bytes
            .get(id as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// True when `id` is a control token (`<|im_end|>`, `<|endoftext|>`, ...).
    pub fn is_control(&self, id: u32) -> bool {
        self.control.get(id as usize).copied().unwrap_or(false)
    }

    /// Each token's text by id: `None` for a control token or one whose bytes
    /// are not whole UTF-8 (part of a multi-byte character). Built once.
    pub(crate) fn token_texts(&self) -> std::sync::Arc<Vec<Option<String>>> {
        let texts = self.texts.get_or_init(|| {
            let texts = self
                .token_bytes
                .iter()
                .zip(&self.control)
                .map(|(bytes, control)| {
                    (!control)
                        .then(|| std::str::from_utf8(bytes).ok().map(str::to_string))
                        .flatten()
                })
                .collect();
            std::sync::Arc::new(texts)
        });
        std::sync::Arc::clone(texts)
    }

    /// Decodes ids to text (invalid UTF-8 replaced by U+FFFD).
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|&id| self.token_bytes(id).iter().copied())
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A GGUF integer of any width as `u32` (token types are stored as `i32`).
fn integer(value: &Value) -> Option<u32> {
    match value {
        Value::U8(v) => Some(u32::from(*v)),
        Value::I8(v) => u32::try_from(*v).ok(),
        Value::U16(v) => Some(u32::from(*v)),
        Value::I16(v) => u32::try_from(*v).ok(),
        Value::U32(v) => Some(*v),
        Value::I32(v) => u32::try_from(*v).ok(),
        Value::U64(v) => u32::try_from(*v).ok(),
        Value::I64(v) => u32::try_from(*v).ok(),
        _ => None,
    }
}

fn string_array(value: &Value, what: &str) -> Result<Vec<String>, LocalError> {
    let values = value
        .to_vec()
        .map_err(|e| LocalError::Tokenizer(format!("`{what}`: {e}")))?;
    values
        .iter()
        .map(|v| {
            v.to_string()
                .cloned()
                .map_err(|e| LocalError::Tokenizer(format!("`{what}`: {e}")))
        })
        .collect()
}

/// GPT-2's byte-to-character table, inverted: printable Latin-1 bytes stand
/// for themselves, every other byte `b` is shown as the `n`-th code point
/// after U+00FF in byte order.
fn unicode_to_byte() -> HashMap<char, u8> {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut map = HashMap::with_capacity(256);
    let mut next = 256u32;
    for b in 0..=255u8 {
        let ch = if printable(b) {
            char::from(b)
        } else {
            let ch = char::from_u32(next).unwrap_or(char::REPLACEMENT_CHARACTER);
            next += 1;
            ch
        };
        map.insert(ch, b);
    }
    map
}

/// Turns a stream of token bytes into text without splitting UTF-8 sequences:
/// incomplete trailing bytes are held until the next token completes them.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes and returns the text that is now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(err) => {
                    let valid = err.valid_up_to();
                    // Safe split: the prefix was just validated.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match err.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                    }
                }
            }
        }
    }

    /// Flushes whatever is left (an incomplete sequence becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

/// A tokenizer with one token per byte and the three ChatML control tokens
/// (ids 256..=258), for tests that need no model file.
#[cfg(test)]
pub(crate) fn byte_tokenizer() -> LocalTokenizer {
    let mut table: Vec<(u8, char)> = unicode_to_byte().into_iter().map(|(c, b)| (b, c)).collect();
    table.sort();
    let mut tokens: Vec<String> = table.into_iter().map(|(_, c)| c.to_string()).collect();
    let mut types = vec![1u32; tokens.len()];
    for control in ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] {
        tokens.push(control.to_string());
        types.push(TOKEN_TYPE_CONTROL);
    }
    match LocalTokenizer::build(tokens, Vec::new(), &types, "smollm") {
        Ok(tokenizer) => tokenizer,
        Err(err) => panic!("byte tokenizer: {err}"),
    }
}
