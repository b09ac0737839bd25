//! CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) of swap-file slot headers and
//! payloads, computed by `crc32fast` (carry-less multiplication where the CPU has it, a
//! table otherwise): restores check every byte they read, so this is on the restore path.

/// The CRC-32 of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::crc32;

    /// Bit-at-a-time reference implementation.
    fn slow(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    0xEDB8_8320 ^ (crc >> 1)
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn known_check_values() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926); // the standard CRC-32 check value
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }

    #[test]
    fn slice_by_8_matches_bitwise_for_every_length() {
        let data: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in 0..data.len() {
            assert_eq!(crc32(&data[..len]), slow(&data[..len]), "length {len}");
        }
    }
}
