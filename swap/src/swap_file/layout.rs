//! The on-disk layout of the swap file: the file header and the slot header, encoded and
//! decoded field by field (little-endian) with every field bounds-checked on the way in.
//!
//! ```text
//! file header (64 bytes)      slot header (48 bytes), then `capacity` payload bytes
//! 0  u64 magic "MVSWAP01"     0  u32 magic "SLOT"
//! 8  u32 format version (3)   4  u32 state (1 live, 2 free)
//! 12 u32 owner's pid          8  u64 key (the object's handle)
//! 16 [u8; 16] run id          16 u32 capacity (payload bytes the slot holds, multiple of 16)
//! 32 u64 run start (ns since  20 u32 length (payload bytes in use: stored, compressed or not)
//!        the Unix epoch)      24 u32 generation (times the object was written)
//! 40 u32 CRC-32 of 0..40      28 u32 CRC-32 of the stored payload
//! 44 .. 64 reserved           32 u32 codec (0 stored as is, 1 an LZ4 block)
//!                             36 u32 the object's payload bytes (decompressed)
//!                             40 u32 CRC-32 of header bytes 0..40
//!                             44 .. 48 reserved
//! ```
//!
//! A compressed checkpoint ([`Codec::Lz4`], see [`super::codec`]) stores fewer bytes than
//! its object holds: `length` is what the slot stores (and what its checksum covers), the
//! next field what the object's payload takes once decompressed. Stored as is, both are
//! equal.
//!
//! A slot freed by its owner keeps the header it had on disk: the owner's in-memory index
//! says which slots are live, and every read checks the key and generation it expects.
//! State 2 (free) is still decoded but no longer written.
//!
//! The file header names the run that owns the file ([`RunIdentity`]): a reader checks it
//! before every read and refuses a file another run wrote. The generation in a slot
//! header is checked against the one the owner's index expects, so an older copy of a
//! checkpoint (a file rolled back) is refused although its checksums hold.

use marvin_runtime::RunIdentity;

use super::crc32::crc32;

/// Bytes of the file header.
pub const FILE_HEADER_BYTES: u64 = 64;
/// Bytes of a slot header; a slot's payload starts this far after its [`super::SlotId`].
pub const SLOT_HEADER_BYTES: u64 = 48;
/// Slot capacities are multiples of this, so slots stay aligned.
pub const SLOT_ALIGN: u64 = 16;
/// The largest payload one slot holds.
pub const MAX_PAYLOAD: usize = (u32::MAX as usize) & !(SLOT_ALIGN as usize - 1);

const FILE_MAGIC: u64 = u64::from_le_bytes(*b"MVSWAP01");
const FILE_VERSION: u32 = 3;
const SLOT_MAGIC: u32 = u32::from_le_bytes(*b"SLOT");

/// Whether a slot holds a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// It holds an object's checkpoint.
    Live,
    /// It is free.
    Free,
}

/// How a slot stores its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// The object's payload as it is.
    Raw,
    /// One LZ4 block that decompresses to the object's payload.
    Lz4,
}

/// A decoded slot header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotHeader {
    pub state: SlotState,
    pub key: u64,
    pub capacity: u32,
    /// Payload bytes stored in the slot.
    pub len: u32,
    pub generation: u32,
    /// CRC-32 of the stored payload.
    pub payload_crc: u32,
    pub codec: Codec,
    /// The object's payload bytes once decoded (`len` when [`Codec::Raw`]).
    pub raw_len: u32,
}

/// Why a slot header did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    BadMagic(u32),
    BadChecksum { stored: u32, computed: u32 },
    BadState(u32),
    BadCodec(u32),
}

/// Rounds a payload length up to a slot capacity.
pub fn capacity_for(len: usize) -> u64 {
    (len as u64).div_ceil(SLOT_ALIGN) * SLOT_ALIGN
}

/// Writes the file header of a file owned by run `owner` into the first
/// [`FILE_HEADER_BYTES`] of `out`.
pub fn write_file_header(out: &mut [u8], owner: &RunIdentity) {
    out[..FILE_HEADER_BYTES as usize].fill(0);
    out[0..8].copy_from_slice(&FILE_MAGIC.to_le_bytes());
    out[8..12].copy_from_slice(&FILE_VERSION.to_le_bytes());
    out[12..16].copy_from_slice(&owner.pid.to_le_bytes());
    out[16..32].copy_from_slice(&owner.id);
    out[32..40].copy_from_slice(&owner.started_unix_ns.to_le_bytes());
    let check = crc32(&out[0..40]);
    out[40..44].copy_from_slice(&check.to_le_bytes());
}

/// What a file header that is not this run's says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FileHeaderError {
    /// Not a swap file of this format (magic, version or checksum).
    #[error("not a marvin swap file of format {FILE_VERSION} ({0})")]
    NotASwapFile(String),
    /// A valid header of another run.
    #[error("it belongs to another run ({0})")]
    OtherRun(RunIdentity),
}

/// Decodes a file header (at least [`FILE_HEADER_BYTES`] bytes) into its owner.
pub fn read_file_header(b: &[u8]) -> Result<RunIdentity, FileHeaderError> {
    let b = &b[..FILE_HEADER_BYTES as usize];
    let magic = u64::from_le_bytes(b[0..8].try_into().expect("8 bytes"));
    if magic != FILE_MAGIC {
        return Err(FileHeaderError::NotASwapFile(format!(
            "bad magic {magic:#018x}"
        )));
    }
    let version = u32_at(b, 8);
    if version != FILE_VERSION {
        return Err(FileHeaderError::NotASwapFile(format!("version {version}")));
    }
    let (stored, computed) = (u32_at(b, 40), crc32(&b[0..40]));
    if stored != computed {
        return Err(FileHeaderError::NotASwapFile(format!(
            "header checksum {stored:#010x}, computed {computed:#010x}"
        )));
    }
    Ok(RunIdentity {
        id: b[16..32].try_into().expect("16 bytes"),
        pid: u32_at(b, 12),
        started_unix_ns: u64::from_le_bytes(b[32..40].try_into().expect("8 bytes")),
    })
}

/// Checks that the file header `b` is `owner`'s.
pub fn check_file_header(b: &[u8], owner: &RunIdentity) -> Result<(), FileHeaderError> {
    let found = read_file_header(b)?;
    if found != *owner {
        return Err(FileHeaderError::OtherRun(found));
    }
    Ok(())
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl SlotHeader {
    /// Encodes the header (computing its checksum) into `out[..48]`.
    pub fn encode(&self, out: &mut [u8]) {
        let out = &mut out[..SLOT_HEADER_BYTES as usize];
        out.fill(0);
        let state = match self.state {
            SlotState::Live => 1u32,
            SlotState::Free => 2u32,
        };
        out[0..4].copy_from_slice(&SLOT_MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&state.to_le_bytes());
        out[8..16].copy_from_slice(&self.key.to_le_bytes());
        out[16..20].copy_from_slice(&self.capacity.to_le_bytes());
        out[20..24].copy_from_slice(&self.len.to_le_bytes());
        out[24..28].copy_from_slice(&self.generation.to_le_bytes());
        out[28..32].copy_from_slice(&self.payload_crc.to_le_bytes());
        let codec = match self.codec {
            Codec::Raw => 0u32,
            Codec::Lz4 => 1u32,
        };
        out[32..36].copy_from_slice(&codec.to_le_bytes());
        out[36..40].copy_from_slice(&self.raw_len.to_le_bytes());
        let check = crc32(&out[0..40]);
        out[40..44].copy_from_slice(&check.to_le_bytes());
    }

    /// Decodes a header from `b`, which must hold [`SLOT_HEADER_BYTES`] bytes (the caller
    /// bounds-checks the slot's offset first).
    pub fn decode(b: &[u8]) -> Result<SlotHeader, HeaderError> {
        let b = &b[..SLOT_HEADER_BYTES as usize];
        let magic = u32_at(b, 0);
        if magic != SLOT_MAGIC {
            return Err(HeaderError::BadMagic(magic));
        }
        let stored = u32_at(b, 40);
        let computed = crc32(&b[0..40]);
        if stored != computed {
            return Err(HeaderError::BadChecksum { stored, computed });
        }
        let state = match u32_at(b, 4) {
            1 => SlotState::Live,
            2 => SlotState::Free,
            other => return Err(HeaderError::BadState(other)),
        };
        let codec = match u32_at(b, 32) {
            0 => Codec::Raw,
            1 => Codec::Lz4,
            other => return Err(HeaderError::BadCodec(other)),
        };
        Ok(SlotHeader {
            state,
            key: u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
            capacity: u32_at(b, 16),
            len: u32_at(b, 20),
            generation: u32_at(b, 24),
            payload_crc: u32_at(b, 28),
            codec,
            raw_len: u32_at(b, 36),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_header_round_trips_and_detects_any_flipped_byte() {
        let h = SlotHeader {
            state: SlotState::Live,
            key: 0x0123_4567_89ab_cdef,
            capacity: 4096,
            len: 4076,
            generation: 7,
            payload_crc: 0xdead_beef,
            codec: Codec::Lz4,
            raw_len: 8176,
        };
        let mut buf = [0u8; 48];
        h.encode(&mut buf);
        assert_eq!(SlotHeader::decode(&buf), Ok(h));
        for i in 0..44 {
            let mut bad = buf;
            bad[i] ^= 0x10;
            assert!(
                SlotHeader::decode(&bad).is_err(),
                "flipping byte {i} went unnoticed"
            );
        }
    }

    #[test]
    fn file_header_names_its_run_and_refuses_others() {
        let (me, other) = (RunIdentity::fresh(), RunIdentity::fresh());
        let mut buf = [0u8; FILE_HEADER_BYTES as usize];
        write_file_header(&mut buf, &me);
        assert_eq!(read_file_header(&buf), Ok(me));
        assert_eq!(check_file_header(&buf, &me), Ok(()));
        assert_eq!(
            check_file_header(&buf, &other),
            Err(FileHeaderError::OtherRun(me))
        );
        let mut bad = buf;
        bad[20] ^= 1;
        assert!(matches!(
            read_file_header(&bad),
            Err(FileHeaderError::NotASwapFile(_))
        ));
    }

    #[test]
    fn capacities_are_aligned() {
        assert_eq!(capacity_for(0), 0);
        assert_eq!(capacity_for(1), 16);
        assert_eq!(capacity_for(4076), 4080);
        assert_eq!(capacity_for(4096), 4096);
    }
}
