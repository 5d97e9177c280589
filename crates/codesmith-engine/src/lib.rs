//! The agent loop.
