//! The object header: access and state bits as `bitflags`, the two 4-bit access history
//! registers, and the object's kind and shape.
//!
//! The header is defined once here, with named accessors; nothing else shifts or masks
//! header words. Layout of the 32-bit atomic word:
//!
//! ```text
//! bits 0..8   HeaderBits (READ, WRITE, DIRTY, STUB, MARKED, NO_SWAP, RUNTIME_READ, SAVED)
//! bits 8..12  read history register  (bit 8 = most recent round)
//! bits 12..16 write history register (bit 12 = most recent round)
//! ```

use std::sync::atomic::{AtomicU32, Ordering};

bitflags::bitflags! {
    /// The state bits of an object header.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct HeaderBits: u32 {
        /// Read since the last working-set round.
        const READ = 1 << 0;
        /// Written since the last working-set round.
        const WRITE = 1 << 1;
        /// Written since its last checkpoint was saved (its swap copy is stale).
        const DIRTY = 1 << 2;
        /// Reached through a stub: accesses take the slow path of the barrier.
        const STUB = 1 << 3;
        /// Marked live by the current collection.
        const MARKED = 1 << 4;
        /// Never a swap candidate.
        const NO_SWAP = 1 << 5;
        /// The collector or the runtime itself is reading: the barrier leaves READ alone.
        const RUNTIME_READ = 1 << 6;
        /// A checkpoint of the object exists in the swap file.
        const SAVED = 1 << 7;
    }
}

const FLAG_MASK: u32 = 0xff;
const READ_REG_SHIFT: u32 = 8;
const WRITE_REG_SHIFT: u32 = 12;
const REG_MASK: u32 = 0xf;

/// What an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ObjKind {
    /// A class instance: `len` 8-byte slots, the first `nrefs` of them references.
    Instance = 0,
    /// An array of 64-bit integers.
    IntArray = 1,
    /// An array of bytes.
    ByteArray = 2,
    /// An array of references.
    RefArray = 3,
}

impl ObjKind {
    fn from_u8(v: u8) -> ObjKind {
        match v & 3 {
            0 => ObjKind::Instance,
            1 => ObjKind::IntArray,
            2 => ObjKind::ByteArray,
            _ => ObjKind::RefArray,
        }
    }

    /// Bytes of payload for `len` elements or slots.
    pub fn payload_bytes(self, len: u32) -> usize {
        match self {
            ObjKind::ByteArray => len as usize,
            _ => len as usize * 8,
        }
    }
}

/// The header at the start of every object; the payload follows it.
#[repr(C, align(16))]
#[derive(Debug)]
pub struct ObjHeader {
    word: AtomicU32,
    kind: u8,
    _pad: u8,
    /// For instances: how many of the leading slots hold references.
    pub nrefs: u16,
    /// Class id for instances, 0 for arrays.
    pub class: u32,
    /// Number of elements (arrays) or slots (instances).
    pub len: u32,
}

/// Size of [`ObjHeader`] in bytes: the payload starts this far into an object.
pub const HEADER_BYTES: usize = std::mem::size_of::<ObjHeader>();

impl ObjHeader {
    /// A fresh header: no access bits, empty registers.
    pub fn new(kind: ObjKind, class: u32, len: u32, nrefs: u16) -> ObjHeader {
        ObjHeader {
            word: AtomicU32::new(0),
            kind: kind as u8,
            _pad: 0,
            nrefs,
            class,
            len,
        }
    }

    #[inline(always)]
    pub fn kind(&self) -> ObjKind {
        ObjKind::from_u8(self.kind)
    }

    /// The current state bits.
    #[inline(always)]
    pub fn bits(&self) -> HeaderBits {
        HeaderBits::from_bits_truncate(self.word.load(Ordering::Acquire) & FLAG_MASK)
    }

    /// Sets bits; returns the bits as they were.
    #[inline(always)]
    pub fn set(&self, bits: HeaderBits) -> HeaderBits {
        // SeqCst: DIRTY set by a writer must be ordered with the saver's clear-then-check
        // (see the saver's protocol); the other bits ride along.
        HeaderBits::from_bits_truncate(
            self.word.fetch_or(bits.bits(), Ordering::SeqCst) & FLAG_MASK,
        )
    }

    /// Clears bits; returns the bits as they were.
    #[inline(always)]
    pub fn clear(&self, bits: HeaderBits) -> HeaderBits {
        HeaderBits::from_bits_truncate(
            self.word.fetch_and(!bits.bits(), Ordering::SeqCst) & FLAG_MASK,
        )
    }

    /// Sets `bits` only if some of them are missing: the common case (already set) is a
    /// plain load, which keeps the barrier's fast path free of atomic read-modify-writes.
    #[inline(always)]
    pub fn ensure(&self, bits: HeaderBits) {
        if self.word.load(Ordering::Relaxed) & bits.bits() != bits.bits() {
            // Relaxed suffices for every bit set here, DIRTY included (the barrier's fast
            // path sets WRITE | DIRTY through this):
            // - DIRTY is read only for stubbed objects: by the saver, which walks the stub
            //   registry and clears DIRTY before its copy and checks it after, and by the
            //   page-out baseline under the entry's reclaimer lock. The reclaimer never
            //   reads the header (it trusts the entry's CLEAN flag), and only stubbed
            //   objects have entries.
            // - A write to a stubbed object never comes here: its handle entry carries the
            //   stub tag, so the barrier takes `StubAccess`, which sets DIRTY with `set`
            //   (SeqCst) before and after the write, under the entry's shared lock. Those
            //   are the stores the saver's clear-then-check is ordered with.
            // - The fast path comes here only after its Acquire load found the handle entry
            //   untagged: the object had no stub. An object gets one in
            //   `Heap::stub_object`, with the app's mutators stopped (or before its handle
            //   is published), which sets STUB | DIRTY itself (SeqCst) before tagging the
            //   entry (Release). A fast-path access that read the untagged entry ends
            //   before its mutator stops at the safepoint, whose hand-off orders it before
            //   the stubbing; every later access sees the tag. A fresh stub starts DIRTY,
            //   so no checkpoint depends on a DIRTY set here.
            // - fetch_or is a read-modify-write of the one word: it loses no bit that
            //   another thread sets or clears meanwhile. READ and WRITE feed the
            //   working-set rounds (`age`), which run with the mutators stopped.
            self.word.fetch_or(bits.bits(), Ordering::Relaxed);
        }
    }

    /// The 4-bit read history (bit 0 = the most recent round).
    pub fn read_history(&self) -> u8 {
        ((self.word.load(Ordering::Relaxed) >> READ_REG_SHIFT) & REG_MASK) as u8
    }

    /// The 4-bit write history (bit 0 = the most recent round).
    pub fn write_history(&self) -> u8 {
        ((self.word.load(Ordering::Relaxed) >> WRITE_REG_SHIFT) & REG_MASK) as u8
    }

    /// One working-set round (the Clock algorithm): shifts the READ and WRITE bits into
    /// the history registers and clears them. Returns the new (read, write) registers.
    pub fn age(&self) -> (u8, u8) {
        let mut cur = self.word.load(Ordering::Relaxed);
        loop {
            let r = (cur >> READ_REG_SHIFT) & REG_MASK;
            let w = (cur >> WRITE_REG_SHIFT) & REG_MASK;
            let read_now = (cur & HeaderBits::READ.bits() != 0) as u32;
            let write_now = (cur & HeaderBits::WRITE.bits() != 0) as u32;
            let nr = ((r << 1) | read_now) & REG_MASK;
            let nw = ((w << 1) | write_now) & REG_MASK;
            let next = (cur & FLAG_MASK & !(HeaderBits::READ | HeaderBits::WRITE).bits())
                | (nr << READ_REG_SHIFT)
                | (nw << WRITE_REG_SHIFT);
            match self
                .word
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return (nr as u8, nw as u8),
                Err(now) => cur = now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_sixteen_bytes() {
        assert_eq!(HEADER_BYTES, 16);
    }

    #[test]
    fn set_and_clear_report_previous_bits() {
        let h = ObjHeader::new(ObjKind::IntArray, 0, 4, 0);
        assert_eq!(
            h.set(HeaderBits::WRITE | HeaderBits::DIRTY),
            HeaderBits::empty()
        );
        assert!(h.bits().contains(HeaderBits::DIRTY));
        assert!(h.clear(HeaderBits::DIRTY).contains(HeaderBits::DIRTY));
        assert_eq!(h.bits(), HeaderBits::WRITE);
        assert_eq!(h.kind(), ObjKind::IntArray);
    }

    #[test]
    fn aging_shifts_bits_into_registers_and_clears_them() {
        let h = ObjHeader::new(ObjKind::Instance, 3, 2, 1);
        h.ensure(HeaderBits::READ);
        assert_eq!(h.age(), (0b1, 0b0));
        assert!(!h.bits().contains(HeaderBits::READ));
        h.ensure(HeaderBits::WRITE);
        assert_eq!(h.age(), (0b10, 0b1));
        h.set(HeaderBits::DIRTY);
        for _ in 0..4 {
            h.age();
        }
        // Four idle rounds push every access out of the 4-bit window...
        assert_eq!((h.read_history(), h.write_history()), (0, 0));
        // ...but never touch the state bits.
        assert!(h.bits().contains(HeaderBits::DIRTY));
    }
}
