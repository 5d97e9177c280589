//! The `codesmith` binary.

fn main() {}
