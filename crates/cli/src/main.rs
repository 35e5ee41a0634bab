//! The `switchboard` command.

fn main() {}
