//! The transcript: messages and their content blocks.

use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person (or front end) giving the task; tool results also travel as user turns.
    User,
    /// The model.
    Assistant,
}

/// One message of the neutral transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// Ordered content blocks.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// The concatenated text blocks of this message (thinking excluded).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls of this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// One block of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Visible text.
    Text {
        /// The text.
        text: String,
    },
    /// The model's reasoning, stored as plain text without any vendor signature.
    Thinking {
        /// The reasoning text.
        text: String,
    },
    /// A call the model asked for.
    ToolCall(ToolCall),
    /// The result of a call, sent back to the model.
    ToolResult(ToolResult),
    /// An image the person attached to a task (`exec --image`, the UI's attach).
    Image(ImagePart),
}

/// An image in the transcript: its media type and bytes, named by their digest.
///
/// Serialized as `{"media_type", "digest"}` only: the bytes are never written inline
/// into a session file (or anything else serde writes). The session stores each image
/// once, by digest, beside its file and fills [`ImagePart::data`] back in when it is
/// opened; an image whose bytes could not be found keeps empty `data`, and providers
/// then send a short text saying it is no longer available.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// `sha256:` and the lowercase hex SHA-256 of [`ImagePart::data`].
    pub digest: String,
    /// The encoded image (as its media type says); empty when the bytes are missing.
    #[serde(skip)]
    pub data: std::sync::Arc<[u8]>,
}

impl ImagePart {
    /// The tokens one image is counted as in estimates made before a provider reports
    /// usage: Anthropic bills about `width * height / 750` tokens for an image within
    /// its 1568-pixel long-edge limit (at most about 1,600), OpenAI's high detail at
    /// most 1,105 for a 2048 x 768 image; the larger figure is used.
    pub const ESTIMATED_TOKENS: u64 = 1_600;

    /// An image of `media_type` holding `data`, its digest computed here.
    pub fn new(media_type: impl Into<String>, data: Vec<u8>) -> Self {
        use sha2::Digest;
        let hash = sha2::Sha256::digest(&data);
        let mut digest = String::with_capacity(7 + 64);
        digest.push_str("sha256:");
        for byte in hash.iter() {
            digest.push_str(&format!("{byte:02x}"));
        }
        ImagePart {
            media_type: media_type.into(),
            digest,
            data: data.into(),
        }
    }

    /// The digest's hex part (a file name: 64 lowercase hex digits), or `None` when the
    /// digest is not a well-formed `sha256:` one (a hand-edited session file).
    pub fn digest_hex(&self) -> Option<&str> {
        self.digest
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    }

    /// Whether the bytes are here (false after a session was opened whose image store
    /// lost them).
    pub fn has_bytes(&self) -> bool {
        !self.data.is_empty()
    }

    /// The short text a model reads in place of this image: `why` says why it was not
    /// sent (`the local model does not read images`); a missing image says that instead.
    pub fn omitted_text(&self, why: &str) -> String {
        if self.has_bytes() {
            format!(
                "[image omitted: {}, {} bytes; {why}]",
                self.media_type,
                self.data.len()
            )
        } else {
            format!(
                "[image omitted: {} {}; its bytes are no longer stored beside the session]",
                self.media_type, self.digest
            )
        }
    }
}

/// A tool call as the model sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned (or locally generated) call id; results refer to it.
    pub id: String,
    /// Tool name as the model spelled it (name repair happens in the engine).
    pub name: String,
    /// The raw JSON text of the arguments, exactly as received. It may be
    /// malformed or truncated; the engine parses and repairs it.
    pub arguments: String,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the [`ToolCall`] this answers.
    pub call_id: String,
    /// The text the model reads (usually the serialized result envelope).
    pub content: String,
    /// True when the tool refused or failed.
    #[serde(default)]
    pub is_error: bool,
    /// Images the result carries after its text (`read_file` on an image, an MCP tool's
    /// image content), in order. Providers send them inside the tool result where the
    /// dialect allows, else as a user-role part right after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImagePart>,
}

impl ToolResult {
    /// A text-only result of the call `call_id`.
    pub fn text(call_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        ToolResult {
            call_id: call_id.into(),
            content: content.into(),
            is_error,
            images: Vec::new(),
        }
    }
}

/// Why a model response ended. Non-exhaustive: providers name new reasons over time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The model stopped to have tools run.
    ToolUse,
    /// The output-token cap was reached (OpenAI `length`, Anthropic `max_tokens`).
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The provider filtered the content.
    ContentFilter,
    /// The stream ended without its protocol's terminal signal.
    Interrupted,
    /// Any other reason, as the wire named it.
    Other(String),
}

impl StopReason {
    /// True when the output was cut at the token cap.
    pub fn is_truncation(&self) -> bool {
        matches!(self, StopReason::MaxTokens)
    }
}

/// Token usage of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (including cached ones).
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from a prefix cache (cache reads), when the provider reports it.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to a prefix cache (Anthropic's
    /// `cache_creation_input_tokens`); 0 where the provider reports none
    /// (OpenAI-compatible servers cache without a write charge).
    #[serde(default)]
    pub cache_write_input_tokens: u64,
}

impl Usage {
    /// Adds another request's usage to this one, saturating at `u64::MAX`
    /// (a provider's figures are not trusted to stay small).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.cache_write_input_tokens = self
            .cache_write_input_tokens
            .saturating_add(other.cache_write_input_tokens);
    }

    /// Share of the prompt tokens served from the cache, 0.0 to 1.0 (0.0 without input).
    pub fn cache_hit_ratio(&self) -> f64 {
        if self.input_tokens == 0 {
            0.0
        } else {
            self.cached_input_tokens as f64 / self.input_tokens as f64
        }
    }
}

/// Bytes of text per token in the rough estimate used where no tokenizer is
/// at hand (before a request is sent, for a provider that cannot count):
/// OpenAI's rule of thumb of about four characters of English per token.
pub const BYTES_PER_TOKEN: u64 = 4;

/// About how many tokens `bytes` bytes of text are: `bytes /`
/// [`BYTES_PER_TOKEN`], rounded up (one byte is one token, none is none).
pub fn approx_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// One entry of the tool catalogue sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name (snake_case).
    pub name: String,
    /// Byte-stable description: when to use it, what to use it instead of, examples.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rough_estimate_rounds_up_at_four_bytes_a_token() {
        assert_eq!(
            [0, 1, 4, 5, 8, 4096].map(approx_tokens),
            [0, 1, 1, 2, 2, 1024]
        );
    }

    #[test]
    fn usage_sums_saturate_instead_of_overflowing() {
        let mut total = Usage {
            input_tokens: u64::MAX - 1,
            output_tokens: 5,
            cached_input_tokens: u64::MAX,
            cache_write_input_tokens: u64::MAX,
        };
        total.add(&Usage {
            input_tokens: 10,
            output_tokens: 7,
            cached_input_tokens: 1,
            cache_write_input_tokens: 2,
        });
        assert_eq!(total.input_tokens, u64::MAX);
        assert_eq!(total.output_tokens, 12);
        assert_eq!(total.cached_input_tokens, u64::MAX);
        assert_eq!(total.cache_write_input_tokens, u64::MAX);
    }
}
