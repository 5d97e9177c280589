//! Gates a write passes before it reaches the disk (seed 000, "Close the Syntax Gate").
//!
//! - [`syntax`]: the regression-only parse gate for `.rs`, `.toml` and `.json`; the only
//!   gate with the power to refuse.
//! - [`rustfmt`]: layout normalisation for Rust files that were rustfmt-clean; never
//!   refuses, silently steps aside on any failure.

pub mod boundaries;
pub mod delimiters;
pub mod rustfmt;
pub mod syntax;
