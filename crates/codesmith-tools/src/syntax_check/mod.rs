//! The syntax check a write passes before it reaches the disk, and the layout step after
//! it.
//!
//! - [`syntax`]: the regression-only parse check for `.rs`, `.toml` and `.json`; the only
//!   step with the power to refuse.
//! - [`rustfmt`]: layout normalisation for Rust files that were rustfmt-clean; never
//!   refuses, silently steps aside on any failure.

pub mod boundaries;
pub mod delimiters;
pub mod rustfmt;
pub mod syntax;
