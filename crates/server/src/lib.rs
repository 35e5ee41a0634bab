//! Switchboard server layer (see docs/ARCHITECTURE.md).
