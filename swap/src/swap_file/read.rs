//! Reading checkpoints back, every one checked before it is trusted: the file (still
//! linked, not truncated, this run's header), the slot header (inside the file, its magic
//! and checksum, live, the key, the generation the index expects, the lengths) and the
//! payload's checksum. One checkpoint ([`SwapFile::read`]), several with one vectored read
//! ([`SwapFile::read_many`]), or a large one a run of pages at a time
//! ([`SwapFile::page_source`]).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::layout::{Codec, HeaderError, SlotHeader, SlotState, SLOT_HEADER_BYTES};
use super::{
    codec, crc32, page_sums, vectored, CorruptKind, PageSource, SlotId, SlotInfo, SwapError,
    SwapFile,
};

/// One slot of a [`SwapFile::read_many`], planned.
struct Planned {
    offset: u64,
    /// Its read's index.
    read: usize,
    capacity: u64,
    /// Bytes the slot stores.
    stored: usize,
    /// Where its stored bytes go in the buffer of compressed ones (`None`: stored as is,
    /// read straight into its `out`).
    packed: Option<usize>,
}

/// One checkpoint to read with [`SwapFile::read_many`]: its slot, its object's key, and
/// where its payload goes (exactly the checkpoint's length).
#[derive(Debug)]
pub struct SlotRead<'a> {
    pub slot: SlotId,
    pub key: u64,
    pub out: &'a mut [u8],
}

/// What a slot header that did not decode says about its checkpoint.
pub(super) fn header_corruption(e: HeaderError) -> CorruptKind {
    match e {
        HeaderError::BadMagic(found) => CorruptKind::BadMagic { found },
        HeaderError::BadChecksum { stored, computed } => {
            CorruptKind::BadHeaderChecksum { stored, computed }
        }
        HeaderError::BadState(_) => CorruptKind::NotLive,
        HeaderError::BadCodec(found) => CorruptKind::UnknownCodec { found },
    }
}

impl SwapFile {
    /// Reads the checkpoint of object `key` from `slot` into `out`, whose length must be the
    /// checkpoint's. Checks the file, the header, the key, the length and the checksum.
    pub fn read(&self, slot: SlotId, key: u64, out: &mut [u8]) -> Result<(), SwapError> {
        self.check_file()?;
        self.read_checked(slot, key, out)
    }

    /// Checks the file itself (still linked, not truncated): what [`SwapFile::read`] does
    /// before each read, for a batch of [`SwapFile::read_checked`] calls.
    pub fn check(&self) -> Result<(), SwapError> {
        self.check_file()
    }

    /// As [`SwapFile::read`], for a batch whose file was [`check`](SwapFile::check)ed
    /// first: every slot check (header, key, length, checksum) still runs. On error,
    /// `out` may hold garbage.
    pub fn read_checked(&self, slot: SlotId, key: u64, out: &mut [u8]) -> Result<(), SwapError> {
        let info = self.live_info(slot)?;
        let header = self.header_at(key, slot)?;
        let start = slot.0 + SLOT_HEADER_BYTES;
        // A checkpoint stored as it is goes straight into `out`; a compressed one (the
        // index's length is not the object's) through a buffer it is decompressed from.
        let stored_len = info.live.map_or(out.len(), |l| l.len as usize);
        if start + stored_len as u64 > self.len {
            let kind = CorruptKind::OutOfBounds {
                offset: slot.0,
                file_len: self.len,
            };
            return Err(self.corrupt(key, slot, kind));
        }
        if stored_len == out.len() {
            self.read_exact_at(out, start)?;
            return self
                .check_slot(key, &info, &header, out, out.len())
                .map_err(|kind| self.corrupt(key, slot, kind));
        }
        let mut stored = vec![0u8; stored_len];
        self.read_exact_at(&mut stored, start)?;
        self.check_slot(key, &info, &header, &stored, out.len())
            .and_then(|()| codec::decode_lz4(&stored, out))
            .map_err(|kind| self.corrupt(key, slot, kind))
    }

    /// Reads several checkpoints with one vectored positioned read (`preadv`), each
    /// payload straight into its `out` buffer: slot headers and the bytes between slots go
    /// to scratch buffers. Every slot is
    /// checked as [`SwapFile::read_checked`] checks it; returns one result per read, in
    /// the order given. A read whose result is an error may have left garbage in its
    /// `out`. Like [`SwapFile::read_checked`], it assumes the file itself was
    /// [`check`](SwapFile::check)ed; a file truncated since is reported as such.
    pub fn read_many(&self, reads: &mut [SlotRead<'_>]) -> Vec<Result<(), SwapError>> {
        self.read_many_via(&self.file, reads)
    }

    /// [`SwapFile::read_many`] through `via`, a descriptor of this very file.
    ///
    /// A checkpoint stored as it is is read straight into its `out`; a compressed one
    /// (its stored length, as the index knows it, is not its object's) into one shared
    /// buffer, checked there, then decompressed into its `out`.
    pub(super) fn read_many_via(
        &self,
        via: &File,
        reads: &mut [SlotRead<'_>],
    ) -> Vec<Result<(), SwapError>> {
        let mut results: Vec<Result<(), SwapError>> = Vec::with_capacity(reads.len());
        // The slots to read, by offset: those the index knows. Each with its read's
        // index, its capacity, its stored length and, when compressed, where its stored
        // bytes go in `packed`.
        let mut order: Vec<Planned> = Vec::with_capacity(reads.len());
        for (i, r) in reads.iter().enumerate() {
            match self.live_info(r.slot) {
                Ok(info) => {
                    results.push(Ok(()));
                    let stored = info.live.map_or(r.out.len(), |l| l.len as usize);
                    let capacity = info.capacity;
                    // Placed in `packed` below, in file order.
                    let packed = (stored != r.out.len()).then_some(0);
                    order.push(Planned {
                        offset: r.slot.0,
                        read: i,
                        capacity: capacity as u64,
                        stored,
                        packed,
                    });
                }
                Err(e) => results.push(Err(e)),
            }
        }
        order.sort_unstable_by_key(|p| p.offset);
        let mut packed_len = 0usize;
        order.dedup_by_key(|p| p.offset);
        for p in &mut order {
            if let Some(at) = &mut p.packed {
                *at = packed_len;
                packed_len += p.stored;
            }
        }
        let Some(start) = order.first().map(|p| p.offset) else {
            return results;
        };
        // Scratch: one header per slot, one junk buffer for slack and gaps, and the
        // compressed checkpoints' stored bytes.
        let mut headers = vec![[0u8; SLOT_HEADER_BYTES as usize]; order.len()];
        let mut junk_len = 0u64;
        let mut cursor = start;
        for p in &order {
            junk_len = junk_len
                .max(p.offset - cursor)
                .max(p.capacity - p.stored as u64);
            cursor = p.offset + SLOT_HEADER_BYTES + p.capacity;
        }
        let end = cursor;
        let mut junk = vec![0u8; junk_len as usize];
        let junk_ptr = junk.as_mut_ptr();
        let mut packed = vec![0u8; packed_len];
        let mut packed_rest: &mut [u8] = &mut packed;
        // The order of reads' buffers, each borrowed once.
        let mut outs: Vec<Option<&mut [u8]>> =
            reads.iter_mut().map(|r| Some(&mut *r.out)).collect();
        let mut bufs: Vec<std::io::IoSliceMut<'_>> = Vec::with_capacity(order.len() * 4);
        let mut cursor = start;
        for (p, header) in order.iter().zip(headers.iter_mut()) {
            let gap = (p.offset - cursor) as usize;
            if gap > 0 {
                // SAFETY: `junk` is at least `gap` bytes long and outlives `bufs`; several
                // buffers may name it because its bytes are only ever discarded.
                bufs.push(std::io::IoSliceMut::new(unsafe {
                    std::slice::from_raw_parts_mut(junk_ptr, gap)
                }));
            }
            bufs.push(std::io::IoSliceMut::new(header));
            let out = outs[p.read].take().expect("each slot once");
            let into = if p.packed.is_some() {
                let (here, rest) = std::mem::take(&mut packed_rest).split_at_mut(p.stored);
                packed_rest = rest;
                here
            } else {
                out
            };
            bufs.push(std::io::IoSliceMut::new(into));
            let slack = (p.capacity - p.stored as u64) as usize;
            if slack > 0 {
                // SAFETY: as above, `junk` holds at least `slack` bytes.
                bufs.push(std::io::IoSliceMut::new(unsafe {
                    std::slice::from_raw_parts_mut(junk_ptr, slack)
                }));
            }
            cursor = p.offset + SLOT_HEADER_BYTES + p.capacity;
        }
        let got = vectored::pread_all(via, &mut bufs, start);
        drop(bufs);
        drop(outs);
        let got = match got {
            Ok(n) => n,
            Err(source) => {
                for p in &order {
                    results[p.read] = Err(SwapError::Io {
                        op: "read",
                        path: self.path.clone(),
                        source: std::io::Error::new(source.kind(), source.to_string()),
                    });
                }
                return results;
            }
        };
        for (p, header) in order.iter().zip(&headers) {
            let r = &mut reads[p.read];
            results[p.read] = if p.offset + SLOT_HEADER_BYTES + p.capacity > start + got {
                Err(SwapError::Truncated {
                    path: self.path.clone(),
                    actual: self.file.metadata().map_or(start + got, |m| m.len()),
                    expected: end.max(self.len),
                })
            } else {
                let stored = match p.packed {
                    Some(at) => &packed[at..at + p.stored],
                    None => &*r.out,
                };
                let raw_len = r.out.len();
                SlotHeader::decode(header)
                    .map_err(header_corruption)
                    .and_then(|h| match self.slots.get(&p.offset) {
                        Some(info) if info.capacity as u64 == p.capacity => {
                            self.check_slot(r.key, info, &h, stored, raw_len)
                        }
                        _ => Err(CorruptKind::NotLive),
                    })
                    .and_then(|()| match p.packed {
                        Some(at) => codec::decode_lz4(&packed[at..at + p.stored], r.out),
                        None => Ok(()),
                    })
                    .map_err(|kind| self.corrupt(r.key, r.slot, kind))
            };
        }
        results
    }

    pub(super) fn corrupt(&self, key: u64, slot: SlotId, kind: CorruptKind) -> SwapError {
        SwapError::Corrupt {
            path: self.path.clone(),
            key,
            slot,
            kind,
        }
    }

    /// The checks of a read checkpoint: a live header for `key` with the slot's
    /// capacity and the generation the index expects (`info`), the stored length of
    /// `payload` (the bytes read from the slot), the object's length `raw_len`, a codec
    /// that fits them (as it is: both lengths equal, the payload is the object's bytes;
    /// compressed: fewer bytes stored, decompressed by the caller), and the stored
    /// bytes' checksum.
    pub(super) fn check_slot(
        &self,
        key: u64,
        info: &SlotInfo,
        header: &SlotHeader,
        payload: &[u8],
        raw_len: usize,
    ) -> Result<(), CorruptKind> {
        Self::check_slot_fields(key, info, header, payload.len(), raw_len)?;
        let computed = crc32(payload);
        if computed != header.payload_crc {
            return Err(CorruptKind::BadPayloadChecksum {
                stored: header.payload_crc,
                computed,
            });
        }
        Ok(())
    }

    /// [`SwapFile::check_slot`] but for the payload's checksum, for a slot that stores
    /// `stored` bytes.
    pub(super) fn check_slot_fields(
        key: u64,
        info: &SlotInfo,
        header: &SlotHeader,
        stored: usize,
        raw_len: usize,
    ) -> Result<(), CorruptKind> {
        let capacity = info.capacity;
        if header.state != SlotState::Live {
            return Err(CorruptKind::NotLive);
        }
        if header.key != key {
            return Err(CorruptKind::KeyMismatch { found: header.key });
        }
        // An older checkpoint of the same object (the file rolled back, or a write
        // that never reached the disk) passes every checksum: only the generation the
        // index expects tells it from the current one.
        let expected = info.live.map_or(0, |l| l.generation.get());
        if header.generation != expected {
            return Err(CorruptKind::StaleGeneration {
                found: header.generation,
                expected,
            });
        }
        if header.capacity != capacity {
            return Err(CorruptKind::LengthMismatch {
                stored: header.capacity as u64,
                expected: capacity as u64,
            });
        }
        if header.len as usize != stored || header.len > header.capacity {
            return Err(CorruptKind::LengthMismatch {
                stored: header.len as u64,
                expected: stored as u64,
            });
        }
        let codec_fits = match header.codec {
            Codec::Raw => header.len == header.raw_len,
            Codec::Lz4 => header.len < header.raw_len,
        };
        if header.raw_len as usize != raw_len || !codec_fits {
            return Err(CorruptKind::LengthMismatch {
                stored: header.raw_len as u64,
                expected: raw_len as u64,
            });
        }
        Ok(())
    }

    /// Where object `key`'s checkpoint in `slot` (of `raw_len` payload bytes) can be read
    /// a run of pages at a time, each piece checked against its own checksum
    /// ([`page_sums`]): its slot header is read and checked now, as a whole read checks
    /// it (live, its key, the generation the index expects, its lengths), and it must be
    /// stored as it is. `None` when the checkpoint has no piece checksums (small, or
    /// compressed): it is then read whole.
    pub fn page_source(
        &self,
        slot: SlotId,
        key: u64,
        raw_len: usize,
    ) -> Result<Option<PageSource>, SwapError> {
        let Some(sums) = self.page_sums.get(slot.0) else {
            return Ok(None);
        };
        self.check_file()?;
        let info = self.live_info(slot)?;
        let header = self.header_at(key, slot)?;
        Self::check_slot_fields(key, &info, &header, raw_len, raw_len)
            .map_err(|kind| self.corrupt(key, slot, kind))?;
        if header.codec != Codec::Raw || sums.len() != raw_len.div_ceil(page_sums::SUM_BYTES) {
            return Ok(None);
        }
        let file = match self.shared.get() {
            Some(f) => f.clone(),
            None => {
                let f = Arc::new(self.file.try_clone().map_err(|source| SwapError::Io {
                    op: "open a second handle on",
                    path: self.path.clone(),
                    source,
                })?);
                self.shared.get_or_init(|| f).clone()
            }
        };
        Ok(Some(PageSource {
            file,
            path: self.path.clone(),
            key,
            slot,
            payload_at: slot.0 + SLOT_HEADER_BYTES,
            len: raw_len,
            sums,
        }))
    }

    /// The live slots starting in `[from, to)`, by offset: their ids and owners' keys.
    pub fn live_slots_in(&self, from: u64, to: u64) -> impl Iterator<Item = (SlotId, u64)> + '_ {
        self.slots
            .range(from..to)
            .filter_map(|(&offset, info)| info.live.map(|l| (SlotId(offset), l.key)))
    }

    /// Reads `out.len()` bytes at `offset` of the file. A file that ends before them was
    /// truncated behind our back.
    pub(super) fn read_exact_at(&self, out: &mut [u8], offset: u64) -> Result<(), SwapError> {
        self.file.read_exact_at(out, offset).map_err(|source| {
            if source.kind() == std::io::ErrorKind::UnexpectedEof {
                SwapError::Truncated {
                    path: self.path.clone(),
                    actual: self.file.metadata().map_or(offset, |m| m.len()),
                    expected: self.len,
                }
            } else {
                SwapError::Io {
                    op: "read",
                    path: self.path.clone(),
                    source,
                }
            }
        })
    }

    /// The in-memory record of a live slot, or `NoSuchSlot`.
    pub(super) fn live_info(&self, slot: SlotId) -> Result<SlotInfo, SwapError> {
        match self.slots.get(&slot.0) {
            Some(info) if info.live.is_some() => Ok(*info),
            _ => Err(SwapError::NoSuchSlot {
                path: self.path.clone(),
                slot,
            }),
        }
    }

    /// Reads and decodes the header of `slot` (object `key`'s, as far as the caller
    /// knows), bounds-checked against the file.
    pub(super) fn header_at(&self, key: u64, slot: SlotId) -> Result<SlotHeader, SwapError> {
        self.check_header_bounds(key, slot)?;
        let mut bytes = [0u8; SLOT_HEADER_BYTES as usize];
        self.read_exact_at(&mut bytes, slot.0)?;
        self.decode_header(key, slot, &bytes)
    }

    /// Checks that `slot`'s header (object `key`'s) lies inside the file.
    pub(super) fn check_header_bounds(&self, key: u64, slot: SlotId) -> Result<(), SwapError> {
        let (offset, file_len) = (slot.0, self.len);
        if offset
            .checked_add(SLOT_HEADER_BYTES)
            .is_none_or(|end| end > file_len)
        {
            let out_of_bounds = CorruptKind::OutOfBounds { offset, file_len };
            return Err(self.corrupt(key, slot, out_of_bounds));
        }
        Ok(())
    }

    /// Decodes the header `bytes` read at `slot` (inside the file), checking that the slot
    /// it describes lies inside the file.
    pub(super) fn decode_header(
        &self,
        key: u64,
        slot: SlotId,
        bytes: &[u8],
    ) -> Result<SlotHeader, SwapError> {
        let (offset, file_len) = (slot.0, self.len);
        let header =
            SlotHeader::decode(bytes).map_err(|e| self.corrupt(key, slot, header_corruption(e)))?;
        if offset + SLOT_HEADER_BYTES + header.capacity as u64 > file_len {
            let out_of_bounds = CorruptKind::OutOfBounds { offset, file_len };
            return Err(self.corrupt(key, slot, out_of_bounds));
        }
        Ok(header)
    }
}
