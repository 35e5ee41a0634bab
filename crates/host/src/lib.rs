//! Switchboard host layer (see docs/ARCHITECTURE.md).
