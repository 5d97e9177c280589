//! The loaded model and its KV cache, with prefix reuse between requests.
//!
//! Because a session's history is append-only, each request's prompt usually
//! extends the tokens already fed to the model. The KV cache is then kept and
//! only the new suffix is prefilled; a prompt that diverges falls back to the
//! state saved right after the previous prompt's prefill, or to a full
//! prefill.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::generation::LogitsProcessor;
use candle_transformers::models::quantized_llama::{MAX_SEQ_LEN, ModelWeights};

use crate::constrain::Steering;
use crate::error::LocalError;
use crate::tokenizer::LocalTokenizer;

/// Prompt tokens fed to the model per forward pass during prefill; bounds the
/// attention scratch memory (heads x chunk x context floats) and the time
/// between two liveness checks (a forward pass cannot be interrupted: on a
/// loaded machine an unoptimised build prefills ~30 tokens/s).
const PREFILL_CHUNK: usize = 32;

/// Sampling and length settings for one generation.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Output-token cap (>= 1).
    pub max_tokens: usize,
    /// `None` or `<= 0` means greedy (argmax) decoding.
    pub temperature: Option<f64>,
    /// Seed for temperature sampling.
    pub seed: u64,
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The model produced a control token (`<|im_end|>`, `<|endoftext|>`, ...).
    EndOfTurn,
    /// `max_tokens` tokens were generated.
    MaxTokens,
    /// The context window is full.
    ContextFull,
    /// The token callback asked to stop (stop sequence, consumer gone).
    Stopped,
}

/// The result of [`LocalModel::generate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Generated token ids, without the control token that ended the turn.
    pub tokens: Vec<u32>,
    /// Why it stopped.
    pub finish: Finish,
    /// Prompt length in tokens.
    pub prompt_tokens: usize,
    /// Prompt tokens served from the kept KV cache (not prefilled again).
    pub reused_tokens: usize,
    /// Wall time spent prefilling `prompt_tokens - reused_tokens` tokens.
    pub prefill_time: Duration,
    /// Wall time spent generating `tokens`.
    pub decode_time: Duration,
}

/// A model state: the weights with their KV cache, the tokens that cache
/// holds, and the logits for the next position.
#[derive(Clone)]
struct State {
    weights: ModelWeights,
    fed: Vec<u32>,
    logits: Option<Tensor>,
}

/// A GGUF llama-architecture model loaded on the CPU, with its tokenizer and
/// a KV cache kept between calls to [`LocalModel::generate`].
pub struct LocalModel {
    path: PathBuf,
    tokenizer: Arc<LocalTokenizer>,
    context_length: usize,
    live: State,
    /// The state right after the last prompt's prefill.
    snapshot: Option<State>,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("path", &self.path)
            .field("context_length", &self.context_length)
            .field("cached_tokens", &self.live.fed.len())
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Loads a GGUF file (llama architecture, GPT-2-style BPE tokenizer).
    ///
    /// # Errors
    /// [`LocalError::Io`] when the file cannot be opened, [`LocalError::Model`]
    /// when it is not a usable GGUF, [`LocalError::Tokenizer`] when its
    /// tokenizer metadata is unusable.
    pub fn load(path: &Path) -> Result<Self, LocalError> {
        let model_err = |detail: String| LocalError::Model {
            path: path.to_path_buf(),
            detail,
        };
        let file = std::fs::File::open(path).map_err(|e| LocalError::io("opening", path, e))?;
        let mut reader = std::io::BufReader::new(file);
        let content =
            gguf_file::Content::read(&mut reader).map_err(|e| model_err(e.to_string()))?;
        let arch = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        if arch != "llama" {
            return Err(model_err(format!(
                "architecture `{arch}` is not supported; the local provider runs llama-architecture GGUFs"
            )));
        }
        let tokenizer = Arc::new(LocalTokenizer::from_gguf(&content)?);
        let context_length = content
            .metadata
            .get("llama.context_length")
            .and_then(|v| v.to_u32().ok())
            .map_or(MAX_SEQ_LEN, |n| (n as usize).min(MAX_SEQ_LEN));
        let weights = ModelWeights::from_gguf(content, &mut reader, &Device::Cpu)
            .map_err(|e| model_err(e.to_string()))?;
        Ok(LocalModel {
            path: path.to_path_buf(),
            tokenizer,
            context_length,
            live: State {
                weights,
                fed: Vec::new(),
                logits: None,
            },
            snapshot: None,
        })
    }

    /// The GGUF this model was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model's tokenizer.
    pub fn tokenizer(&self) -> &LocalTokenizer {
        &self.tokenizer
    }

    /// A shared handle to the tokenizer, usable while the model generates.
    pub fn shared_tokenizer(&self) -> Arc<LocalTokenizer> {
        Arc::clone(&self.tokenizer)
    }

    /// The usable context window in tokens (the GGUF's, capped by candle's
    /// rotary table of 4096 positions).
    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// Tokens currently held in the KV cache.
    pub fn cached_tokens(&self) -> &[u32] {
        &self.live.fed
    }

    /// Drops the KV cache and the saved prefix state.
    pub fn reset(&mut self) {
        self.live.weights.clear_kv_cache();
        self.live.fed.clear();
        self.live.logits = None;
        self.snapshot = None;
    }

    /// Generates a continuation of `prompt`.
    ///
    /// The KV cache is reused when `prompt` extends the tokens it holds (or
    /// the state saved after the previous prompt); otherwise it is rebuilt.
    /// `on_token` is called with each generated token and returns `false` to
    /// stop. A control token ends the turn and is not returned.
    ///
    /// # Errors
    /// [`LocalError::ContextLength`] when the prompt does not leave room for
    /// one output token; [`LocalError::Inference`] when a tensor operation fails.
    pub fn generate(
        &mut self,
        prompt: &[u32],
        options: &GenerateOptions,
        on_token: &mut dyn FnMut(u32) -> bool,
    ) -> Result<Generation, LocalError> {
        self.generate_steered(prompt, options, None, &mut || true, on_token)
    }

    /// [`Self::generate`] with the tool-call channel constrained by `steering`
    /// (see [`crate::constrain`]): while a block is open only tokens that keep it
    /// valid are sampled, and generation stops once a block is closed
    /// ([`Finish::Stopped`]). `keep_going` is called before every forward
    /// pass (each prefill chunk and each generated token, tokens the caller
    /// never sees included); `false` stops at once with [`Finish::Stopped`],
    /// leaving a cache that holds a valid prefix.
    ///
    /// # Errors
    /// As [`Self::generate`].
    pub(crate) fn generate_steered(
        &mut self,
        prompt: &[u32],
        options: &GenerateOptions,
        steering: Option<&mut Steering>,
        keep_going: &mut dyn FnMut() -> bool,
        on_token: &mut dyn FnMut(u32) -> bool,
    ) -> Result<Generation, LocalError> {
        let result = self.run(prompt, options, steering, keep_going, on_token);
        if result.is_err() {
            // A failed forward pass may have left a half-updated cache.
            self.reset();
        }
        result
    }

    fn run(
        &mut self,
        prompt: &[u32],
        options: &GenerateOptions,
        mut steering: Option<&mut Steering>,
        keep_going: &mut dyn FnMut() -> bool,
        on_token: &mut dyn FnMut(u32) -> bool,
    ) -> Result<Generation, LocalError> {
        if prompt.is_empty() || prompt.len() >= self.context_length {
            return Err(LocalError::ContextLength {
                tokens: prompt.len(),
                limit: self.context_length,
            });
        }
        let started = Instant::now();
        let Some(reused_tokens) = self.prefill(prompt, keep_going)? else {
            return Ok(Generation {
                tokens: Vec::new(),
                finish: Finish::Stopped,
                prompt_tokens: prompt.len(),
                reused_tokens: 0,
                prefill_time: started.elapsed(),
                decode_time: Duration::ZERO,
            });
        };
        let prefill_time = started.elapsed();

        let started = Instant::now();
        let temperature = options.temperature.filter(|t| *t > 0.0);
        let mut sampler = LogitsProcessor::new(options.seed, temperature, None);
        let mut tokens = Vec::new();
        let finish = loop {
            let Some(logits) = self.live.logits.as_ref() else {
                return Err(LocalError::Inference("no logits after prefill".to_string()));
            };
            let logits = logits.squeeze(0)?;
            // A mask that allows nothing (a block with no valid way on) is not applied:
            // the block is then left to the parser, which hands it on raw.
            let mask = steering
                .as_deref()
                .and_then(Steering::mask)
                .filter(|mask| mask.iter().any(|&allowed| allowed));
            let bias = steering.as_deref().map(Steering::bias).unwrap_or_default();
            let next = if mask.is_none() && bias.is_empty() {
                sampler.sample(&logits)?
            } else {
                sampler.sample(&adjusted(&logits, mask.as_deref(), &bias)?)?
            };
            if self.tokenizer.is_control(next) {
                break Finish::EndOfTurn;
            }
            tokens.push(next);
            if let Some(steering) = steering.as_deref_mut() {
                steering.accept(next);
            }
            if !on_token(next) {
                break Finish::Stopped;
            }
            if steering.as_deref().is_some_and(Steering::finished) {
                break Finish::Stopped;
            }
            if tokens.len() >= options.max_tokens {
                break Finish::MaxTokens;
            }
            if self.live.fed.len() + 1 >= self.context_length {
                break Finish::ContextFull;
            }
            if !keep_going() {
                break Finish::Stopped;
            }
            self.feed(&[next])?;
        };
        Ok(Generation {
            tokens,
            finish,
            prompt_tokens: prompt.len(),
            reused_tokens,
            prefill_time,
            decode_time: started.elapsed(),
        })
    }

    /// Brings the KV cache to exactly `prompt`, reusing what it can; returns
    /// the number of prompt tokens that did not need prefilling, or `None`
    /// when `keep_going` said stop before a chunk (the cache then holds a
    /// prefix of `prompt`, and no state is saved).
    fn prefill(
        &mut self,
        prompt: &[u32],
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<Option<usize>, LocalError> {
        if !extends(prompt, &self.live) {
            match self.snapshot.take() {
                Some(saved) if extends(prompt, &saved) => self.live = saved,
                _ => {
                    self.live.weights.clear_kv_cache();
                    self.live.fed.clear();
                    self.live.logits = None;
                }
            }
        }
        let reused = self.live.fed.len();
        for chunk in prompt[reused..].chunks(PREFILL_CHUNK) {
            if !keep_going() {
                return Ok(None);
            }
            self.feed(chunk)?;
        }
        self.snapshot = Some(self.live.clone());
        Ok(Some(reused))
    }

    /// Runs `tokens` through the model at the next positions.
    fn feed(&mut self, tokens: &[u32]) -> Result<(), LocalError> {
        let input = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        let logits = self.live.weights.forward(&input, self.live.fed.len())?;
        self.live.fed.extend_from_slice(tokens);
        self.live.logits = Some(logits);
        Ok(())
    }
}

/// `logits` with each `bias` bonus added (token id, bonus) and every token the
/// mask rules out set to negative infinity (the mask allows at least one token).
fn adjusted(
    logits: &Tensor,
    mask: Option<&[bool]>,
    bias: &[(u32, f32)],
) -> Result<Tensor, LocalError> {
    let mut values = logits.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>()?;
    for &(id, bonus) in bias {
        if let Some(value) = values.get_mut(id as usize) {
            *value += bonus;
        }
    }
    if let Some(mask) = mask {
        for (value, allowed) in values.iter_mut().zip(mask.iter().copied()) {
            if !allowed {
                *value = f32::NEG_INFINITY;
            }
        }
        // Tokens past the mask's end (a vocabulary larger than the token list) stay out.
        for value in values.iter_mut().skip(mask.len()) {
            *value = f32::NEG_INFINITY;
        }
    }
    let len = values.len();
    Ok(Tensor::from_vec(values, len, &Device::Cpu)?)
}

/// True when `state` holds a prefix of `prompt` (or all of it) and has the
/// logits to continue from.
fn extends(prompt: &[u32], state: &State) -> bool {
    !state.fed.is_empty() && state.logits.is_some() && prompt.starts_with(&state.fed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn values(logits: &[f32], mask: Option<&[bool]>, bias: &[(u32, f32)]) -> Vec<f32> {
        let tensor = Tensor::from_vec(logits.to_vec(), logits.len(), &Device::Cpu).unwrap();
        adjusted(&tensor, mask, bias)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    }

    #[test]
    fn a_bias_is_added_and_a_mask_still_rules_out() {
        let logits = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(values(&logits, None, &[(0, 5.0)]), vec![6.0, 2.0, 3.0, 4.0]);
        // A masked-out token stays out whatever its bonus; ids past the
        // vocabulary are ignored, and so are tokens past the mask's end.
        let out = values(
            &logits,
            Some(&[true, false, true]),
            &[(1, 100.0), (2, 1.5), (9, 1.0)],
        );
        assert_eq!(out[0], 1.0);
        assert_eq!(out[1], f32::NEG_INFINITY);
        assert_eq!(out[2], 4.5);
        assert_eq!(out[3], f32::NEG_INFINITY);
    }

    #[test]
    fn greedy_sampling_follows_the_bias() {
        let logits = [3.0f32, 2.0];
        let tensor = Tensor::from_vec(logits.to_vec(), 2, &Device::Cpu).unwrap();
        let mut sampler = LogitsProcessor::new(0, None, None);
        assert_eq!(sampler.sample(&tensor).unwrap(), 0);
        let biased = adjusted(&tensor, None, &[(1, 2.0)]).unwrap();
        assert_eq!(sampler.sample(&biased).unwrap(), 1);
    }
}
