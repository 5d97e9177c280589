//! Benchmark of the embedded local model (budgets: load < 1 s from
//! the cached Q8_0 file, >= 50 tokens/s decode, >= 120 tokens/s prefill on two
//! cores, and a second turn that prefills only its new tokens).
//!
//! Run with `cargo bench -p codesmith-local --bench local_model`. The model is
//! fetched into `$CODESMITH_HOME` (or `target/codesmith-test-home`) if needed.
//!
//! candle's CPU kernels synchronise their worker threads with spinning
//! barriers, which collapse when the cores are shared with other busy
//! processes: on a loaded two-core machine `CANDLE_NUM_THREADS=1` decodes
//! about ten times faster than the default. The header line shows the
//! setting in force.

// Tests, benchmarks and examples report what they measured on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::time::Instant;

use codesmith_local::prompt::{Remembered, render_prompt};
use codesmith_local::{GenerateOptions, LocalModel, ensure_model};
use codesmith_protocol::Message;
use codesmith_providers::ChatRequest;

fn home() -> PathBuf {
    std::env::var_os("CODESMITH_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/codesmith-test-home")
        })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this
    // binary without it, and should not spend a minute measuring.
    if !std::env::args().any(|a| a == "--bench") {
        println!("local_model bench skipped: run it with `cargo bench`");
        return Ok(());
    }
    if std::env::var("CODESMITH_SKIP_LOCAL_MODEL").is_ok_and(|v| v == "1") {
        println!("local_model bench skipped: CODESMITH_SKIP_LOCAL_MODEL=1");
        return Ok(());
    }
    let path = ensure_model(&home(), &mut |_| {})?;

    let mut loads = Vec::new();
    let mut model = None;
    for _ in 0..3 {
        let started = Instant::now();
        model = Some(LocalModel::load(&path)?);
        loads.push(started.elapsed().as_secs_f64());
    }
    let mut model = model.ok_or("no model")?;
    let best_load = loads.iter().copied().fold(f64::INFINITY, f64::min);

    let long_text =
        "The quick brown fox jumps over the lazy dog while the farmer counts sheep in the meadow. "
            .repeat(12);
    let mut request = ChatRequest {
        model: String::new(),
        system: "You are a helpful assistant.".to_string(),
        messages: vec![Message::user_text(format!(
            "{long_text}\nWrite a long story about a robot who learns to paint. Use many paragraphs."
        ))],
        tools: Vec::new(),
        max_tokens: None,
        temperature: None,
        stop: Vec::new(),
        prompt_cache_key: None,
    };
    let remembered = Remembered::default();
    let options = GenerateOptions {
        max_tokens: 128,
        temperature: None,
        seed: 0,
    };

    // Warm-up (first-touch page faults, allocator), then the measured turn.
    let prompt = render_prompt(model.tokenizer(), &request, &remembered)?;
    model.generate(
        &prompt,
        &GenerateOptions {
            max_tokens: 4,
            ..options.clone()
        },
        &mut |_| true,
    )?;
    model.reset();
    let cpu_start = cpu_seconds();
    let mut cpu_first_token = None;
    let first = model.generate(&prompt, &options, &mut |_| {
        cpu_first_token.get_or_insert_with(cpu_seconds);
        true
    })?;
    let cpu_end = cpu_seconds();
    let cpu_prefill = cpu_first_token.unwrap_or(cpu_end) - cpu_start;
    let cpu_decode = cpu_end - cpu_first_token.unwrap_or(cpu_end);
    let prefill_tps =
        (first.prompt_tokens - first.reused_tokens) as f64 / first.prefill_time.as_secs_f64();
    let decode_tps = first.tokens.len().saturating_sub(1) as f64 / first.decode_time.as_secs_f64();

    let reply = model.tokenizer().decode(&first.tokens);
    request
        .messages
        .push(Message::assistant_text(reply.clone()));
    request
        .messages
        .push(Message::user_text("Now give it a title."));
    let mut remembered = Remembered::default();
    remembered.insert(reply, first.tokens.clone());
    let prompt2 = render_prompt(model.tokenizer(), &request, &remembered)?;
    // Only the tokens the KV cache does not hold yet should be prefilled.
    let expected_new = prompt2.len() - model.cached_tokens().len();
    let second = model.generate(
        &prompt2,
        &GenerateOptions {
            max_tokens: 16,
            ..options
        },
        &mut |_| true,
    )?;
    let new_tokens = second.prompt_tokens - second.reused_tokens;

    let threads = std::thread::available_parallelism().map_or(0, usize::from);
    let load_avg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load_avg = load_avg.split_whitespace().next().unwrap_or("?");
    let candle_threads =
        std::env::var("CANDLE_NUM_THREADS").unwrap_or_else(|_| "unset".to_string());
    println!(
        "local_model bench ({threads} cores, CANDLE_NUM_THREADS={candle_threads}, \
         1-min load average {load_avg}, model {})",
        path.display()
    );
    println!(
        "  load (cached Q8_0):  best {:.3} s of {:?}",
        best_load,
        loads.iter().map(|s| format!("{s:.3}")).collect::<Vec<_>>()
    );
    println!(
        "  prefill:             {:.1} tokens/s ({} tokens in {:.3} s)",
        prefill_tps,
        first.prompt_tokens,
        first.prefill_time.as_secs_f64()
    );
    println!(
        "  decode:              {:.1} tokens/s ({} tokens in {:.3} s, {:?})",
        decode_tps,
        first.tokens.len(),
        first.decode_time.as_secs_f64(),
        first.finish
    );
    println!(
        "  second turn:         prompt {} tokens, reused {}, prefilled {} new (expected {}) in {:.3} s",
        second.prompt_tokens,
        second.reused_tokens,
        new_tokens,
        expected_new,
        second.prefill_time.as_secs_f64()
    );
    println!(
        "  CPU time:            prefill {:.1} tokens per CPU-second, decode {:.1} tokens per CPU-second \
         (what one uncontended core would reach with CANDLE_NUM_THREADS=1)",
        (first.prompt_tokens - first.reused_tokens) as f64 / cpu_prefill,
        first.tokens.len().saturating_sub(1) as f64 / cpu_decode
    );
    println!(
        "  budgets: load<1s {} | decode>=50 {} | prefill>=120 {} | suffix-only {}",
        ok(best_load < 1.0),
        ok(decode_tps >= 50.0),
        ok(prefill_tps >= 120.0),
        ok(new_tokens == expected_new)
    );

    // For information: decode speed deep into the context (the KV cache
    // grows by concatenation, so each step copies it).
    let filler = "Each line of this log records one build step and its outcome. ".repeat(150);
    let long = ChatRequest {
        messages: vec![Message::user_text(format!("{filler}\nSummarise the log."))],
        ..request
    };
    let prompt3 = render_prompt(model.tokenizer(), &long, &Remembered::default())?;
    let options3 = GenerateOptions {
        max_tokens: 32,
        temperature: None,
        seed: 0,
    };
    let third = model.generate(&prompt3, &options3, &mut |_| true)?;
    println!(
        "  long context:        prefill {} tokens at {:.1} tokens/s; decode {:.1} tokens/s ({} tokens)",
        third.prompt_tokens - third.reused_tokens,
        (third.prompt_tokens - third.reused_tokens) as f64 / third.prefill_time.as_secs_f64(),
        third.tokens.len().saturating_sub(1) as f64 / third.decode_time.as_secs_f64(),
        third.tokens.len()
    );
    Ok(())
}

/// User + system CPU time of this process in seconds (Linux `/proc`; NaN elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the
    // 12th and 13th of them, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => f64::NAN,
    }
}

fn ok(pass: bool) -> &'static str {
    if pass { "ok" } else { "MISSED" }
}
