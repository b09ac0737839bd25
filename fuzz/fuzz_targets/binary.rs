//! Fuzz target: arbitrary bytes as the payload of a binary program, wrapped in a valid
//! header (magic, version, checksum, length) so the fuzzer explores the decoder and the
//! verifier rather than the checksum. Any panic is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marvin_interpreter::binary::{checksum, MAGIC, VERSION};
use marvin_interpreter::load::load_bytes;
use marvin_interpreter::verify::verify;

fuzz_target!(|payload: &[u8]| {
    let mut file = MAGIC.to_vec();
    file.extend_from_slice(&VERSION.to_le_bytes());
    file.extend_from_slice(&0u16.to_le_bytes());
    file.extend_from_slice(&checksum(payload).to_le_bytes());
    file.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    file.extend_from_slice(payload);
    let Ok(mut program) = load_bytes("fuzz.mvb", &file) else {
        return;
    };
    if program.link(&[("N".into(), 3)]).is_ok() || program.link(&[]).is_ok() {
        let _ = verify(program);
    }
});
