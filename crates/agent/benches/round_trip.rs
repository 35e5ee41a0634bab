//! Placeholder; the loop round-trip bench follows.
fn main() {}
