//! Fuzz target: kernel text through `stencil::parse`, and every kernel it accepts run on a
//! tiny random grid on the CPU backend and compared with the reference interpreter (see
//! `harness.rs`, which `tests/parse.rs` also runs over the committed corpus).

#![no_main]

mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::parse_and_run(data));
