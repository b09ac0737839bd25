//! The fuzz targets' entry points (`fuzz/fuzz_targets/*.rs` call these), kept in the
//! crate so that a stable test (`interpreter/tests/fuzz_seeds.rs`) replays the seeds
//! and their mutations through exactly the code the fuzzer runs, on every `cargo test`.
//! Any panic in here is a bug; each returns whether the input was accepted (loaded,
//! linked and verified), which the replay test uses to check that the seeds reach the
//! verifier.

use crate::binary::{checksum, MAGIC, VERSION};
use crate::load::load_bytes;
use crate::verify::verify;

/// The `text` target: arbitrary bytes as a program file (text, or binary if they start
/// with the magic number) through load, link and verify.
pub fn text(data: &[u8]) -> bool {
    let Ok(mut program) = load_bytes("fuzz.masm", data) else {
        return false;
    };
    program.link(&[]).is_ok() && verify(program).is_ok()
}

/// The `binary` target: arbitrary bytes as the payload of a binary program, wrapped in a
/// valid header (magic, version, checksum, length) so that the decoder and the verifier
/// are reached rather than the checksum test.
pub fn binary(payload: &[u8]) -> bool {
    let mut file = MAGIC.to_vec();
    file.extend_from_slice(&VERSION.to_le_bytes());
    file.extend_from_slice(&0u16.to_le_bytes());
    file.extend_from_slice(&checksum(payload).to_le_bytes());
    file.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    file.extend_from_slice(payload);
    let Ok(mut program) = load_bytes("fuzz.mvb", &file) else {
        return false;
    };
    (program.link(&[("N".into(), 3)]).is_ok() || program.link(&[]).is_ok())
        && verify(program).is_ok()
}
