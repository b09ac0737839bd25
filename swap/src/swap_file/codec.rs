//! Compressed checkpoints: a policy may ask for payloads to be stored as LZ4 blocks
//! (`lz4_flex`), so that a restore reads fewer bytes of the file than it brings back.
//! A payload is stored compressed only when that saves at least an eighth of its bytes;
//! otherwise (random bytes, already compressed data) it is stored as it is, and reading
//! it back costs exactly what it costs without compression.
//!
//! A compressed payload's checksum covers the stored block, checked before the block is
//! decompressed; the block must then decompress to exactly the object's payload length.

use serde::{Deserialize, Serialize};

use super::error::CorruptKind;

/// How a policy wants checkpoints stored (`[saver] compress`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compression {
    /// Every payload as it is (Marvin).
    #[default]
    None,
    /// A payload that shrinks by at least an eighth as one LZ4 block.
    Lz4,
}

/// Compresses `payload` into `scratch` as `compression` says: `Some(len)` when the block
/// (the first `len` bytes of `scratch`) is worth storing instead of the payload, `None`
/// when the payload should be stored as it is.
pub fn encode(compression: Compression, payload: &[u8], scratch: &mut Vec<u8>) -> Option<usize> {
    match compression {
        Compression::None => None,
        Compression::Lz4 => {
            if payload.len() < 64 {
                return None;
            }
            let worth = payload.len() - payload.len() / 8;
            scratch.clear();
            scratch.resize(lz4_flex::block::get_maximum_output_size(payload.len()), 0);
            match lz4_flex::block::compress_into(payload, scratch) {
                Ok(len) if len < worth => Some(len),
                _ => None,
            }
        }
    }
}

/// Decompresses the LZ4 block `stored` into `out`, which it must fill exactly.
pub fn decode_lz4(stored: &[u8], out: &mut [u8]) -> Result<(), CorruptKind> {
    let expected = out.len() as u64;
    match lz4_flex::block::decompress_into(stored, out) {
        Ok(n) if n == out.len() => Ok(()),
        Ok(n) => Err(CorruptKind::BadCompressed {
            expected,
            reason: format!("it decompressed to {n} bytes"),
        }),
        Err(e) => Err(CorruptKind::BadCompressed {
            expected,
            reason: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressible_payloads_shrink_and_come_back() {
        let mut payload = vec![0u8; 4072];
        payload[..8].copy_from_slice(&42u64.to_le_bytes());
        let mut scratch = Vec::new();
        let len = encode(Compression::Lz4, &payload, &mut scratch).expect("it shrinks");
        assert!(len < 200, "4 KiB of zeros took {len} bytes");
        let mut out = vec![1u8; payload.len()];
        decode_lz4(&scratch[..len], &mut out).unwrap();
        assert_eq!(out, payload);
        assert_eq!(encode(Compression::None, &payload, &mut scratch), None);
    }

    #[test]
    fn random_payloads_are_stored_as_they_are() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let payload: Vec<u8> = (0..4072)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert_eq!(encode(Compression::Lz4, &payload, &mut Vec::new()), None);
    }

    #[test]
    fn bad_blocks_are_errors() {
        let mut payload = vec![7u8; 4096];
        payload[100] = 1;
        let mut scratch = Vec::new();
        let len = encode(Compression::Lz4, &payload, &mut scratch).unwrap();
        // Too short an output, too long an output, garbage: errors, never a panic.
        assert!(decode_lz4(&scratch[..len], &mut [0u8; 100]).is_err());
        assert!(decode_lz4(&scratch[..len], &mut vec![0u8; 5000]).is_err());
        assert!(decode_lz4(&[0xff; 16], &mut vec![0u8; 4096]).is_err());
        for cut in 0..len {
            assert!(decode_lz4(&scratch[..cut], &mut vec![0u8; 4096]).is_err());
        }
    }
}
