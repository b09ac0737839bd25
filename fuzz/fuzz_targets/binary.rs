//! Fuzz target: arbitrary bytes as the payload of a binary program, wrapped in a valid
//! header (magic, version, checksum, length) so the fuzzer explores the decoder and the
//! verifier rather than the checksum (`marvin_interpreter::fuzzing::binary`, which
//! `interpreter/tests/fuzz_seeds.rs` also replays). Any panic is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|payload: &[u8]| {
    let _ = marvin_interpreter::fuzzing::binary(payload);
});
