//! Fuzz target: arbitrary bytes as a program file (text, or binary if they start with the
//! magic number) through load, link and verify. Any panic is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marvin_interpreter::load::load_bytes;
use marvin_interpreter::verify::verify;

fuzz_target!(|data: &[u8]| {
    let Ok(mut program) = load_bytes("fuzz.masm", data) else {
        return;
    };
    if program.link(&[]).is_ok() {
        let _ = verify(program);
    }
});
