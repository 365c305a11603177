//! stencil-cpu's integration tests, one test binary (one link of the crate, not one per file).
//! Every module runs in full on every `cargo test` (together about a second): none has a part
//! that only `STENCIL_FULL_TESTS=1` runs.
//!
//! Run one module with a filter: `cargo test -p stencil-cpu --test suite -- stencils::`.

mod common;

mod backend_api;
mod expressions;
mod stencils;
