//! Switchboard client layer (see docs/ARCHITECTURE.md).
