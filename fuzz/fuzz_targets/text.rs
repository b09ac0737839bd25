//! Fuzz target: arbitrary bytes as a program file (text, or binary if they start with the
//! magic number) through load, link and verify (`marvin_interpreter::fuzzing::text`,
//! which `interpreter/tests/fuzz_seeds.rs` also replays). Any panic is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = marvin_interpreter::fuzzing::text(data);
});
