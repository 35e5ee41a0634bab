//! The subcommands, one module each.

pub(crate) mod audit;
pub(crate) mod auth;
pub(crate) mod call;
pub(crate) mod chat;
mod chat_complete;
mod chat_input;
pub(crate) mod config;
pub(crate) mod demo;
pub(crate) mod demo_server;
pub(crate) mod doctor;
pub(crate) mod eval;
pub(crate) mod health;
pub(crate) mod inspect;
pub(crate) mod pins;
pub(crate) mod selftest;
pub(crate) mod serve;
pub(crate) mod servers;
pub(crate) mod skills;
pub(crate) mod tools;
