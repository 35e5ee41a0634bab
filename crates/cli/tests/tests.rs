//! Integration tests of the `switchboard` binary: each runs the built
//! binary as a user would (real processes, real sockets on loopback).

mod util;

mod approval;
mod call;
mod config;
mod demo;
mod inspect;
mod listing;
mod serve;
mod state;
