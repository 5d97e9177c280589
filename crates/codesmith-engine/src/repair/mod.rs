//! Repair of a shaky model's tool calls: arguments, names, and forged calls in text.

pub mod args;
pub mod fake_calls;
pub mod names;
