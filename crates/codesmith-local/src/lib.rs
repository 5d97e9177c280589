//! The embedded local model provider.
