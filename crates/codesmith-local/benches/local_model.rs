//! Local model benchmark (filled in below).
fn main() {}
