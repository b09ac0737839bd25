//! Typed views of an object's payload: instance slots, array elements and the
//! references an object holds.
//!
//! Payload words are atomics, so objects can be shared between an app's threads and the
//! runtime's own threads without data races; relaxed loads and stores compile to plain
//! moves.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use crate::header::{ObjHeader, ObjKind, HEADER_BYTES};

/// A live, resident object. Only the heap and the barrier create these.
#[derive(Clone, Copy)]
pub struct Obj<'h> {
    hdr: &'h ObjHeader,
}

impl<'h> Obj<'h> {
    /// # Safety
    /// `addr` must be the address of an initialised object (header followed by its
    /// payload) that stays live and resident, and is not moved, for `'h`.
    #[inline(always)]
    pub unsafe fn from_addr(addr: usize) -> Obj<'h> {
        // SAFETY: the caller guarantees an initialised, live, resident object at `addr`
        // that does not move for 'h, so its header is valid to borrow for 'h.
        let hdr = unsafe { &*(addr as *const ObjHeader) };
        Obj { hdr }
    }

    #[inline(always)]
    pub fn header(&self) -> &'h ObjHeader {
        self.hdr
    }

    #[inline(always)]
    pub fn addr(&self) -> usize {
        self.hdr as *const ObjHeader as usize
    }

    #[inline(always)]
    pub fn kind(&self) -> ObjKind {
        self.hdr.kind()
    }

    #[inline(always)]
    pub fn len(&self) -> u32 {
        self.hdr.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.hdr.len == 0
    }

    /// Total size in bytes, header included.
    pub fn size(&self) -> usize {
        HEADER_BYTES + self.kind().payload_bytes(self.len())
    }

    /// The 8-byte words of an instance, int array or ref array (empty for byte arrays).
    #[inline(always)]
    pub fn words(&self) -> &'h [AtomicU64] {
        let n = match self.kind() {
            ObjKind::ByteArray => 0,
            _ => self.hdr.len as usize,
        };
        // SAFETY: the payload of a word object is `len` 8-byte words right after the
        // 16-byte header (16-byte aligned), live for 'h per `from_addr`'s contract.
        unsafe { std::slice::from_raw_parts((self.addr() + HEADER_BYTES) as *const AtomicU64, n) }
    }

    /// Payload word `i` without checking the kind or the length.
    ///
    /// # Safety
    /// The object must be a word object (instance, int or ref array) with more than
    /// `i` words: for instance, an instance whose class was just checked against a
    /// layout that has slot `i`.
    #[inline(always)]
    pub unsafe fn slot_unchecked(&self, i: usize) -> &'h AtomicU64 {
        debug_assert!(i < self.words().len());
        // SAFETY: the caller guarantees word `i` exists; it lives as long as the object.
        unsafe { &*((self.addr() + HEADER_BYTES + 8 * i) as *const AtomicU64) }
    }

    /// The bytes of a byte array (empty for other kinds).
    #[inline(always)]
    pub fn bytes(&self) -> &'h [AtomicU8] {
        let n = match self.kind() {
            ObjKind::ByteArray => self.hdr.len as usize,
            _ => 0,
        };
        // SAFETY: the payload of a byte array is `len` bytes after the header, live
        // for 'h per `from_addr`'s contract.
        unsafe { std::slice::from_raw_parts((self.addr() + HEADER_BYTES) as *const AtomicU8, n) }
    }

    /// The payload words that hold references (leading slots of an instance, every
    /// element of a ref array).
    #[inline]
    pub fn ref_words(&self) -> &'h [AtomicU64] {
        match self.kind() {
            ObjKind::Instance => &self.words()[..self.hdr.nrefs as usize],
            ObjKind::RefArray => self.words(),
            _ => &[],
        }
    }

    /// Calls `f` with every non-null reference the object holds.
    #[inline]
    pub fn for_each_ref(&self, mut f: impl FnMut(u64)) {
        for w in self.ref_words() {
            let v = w.load(Ordering::Relaxed);
            if v != 0 {
                f(v);
            }
        }
    }

    /// Appends the payload's bytes to `out`, read with relaxed atomic loads: safe
    /// against concurrent writers, whose racing writes may or may not be seen (the
    /// saver's dirty-bit protocol detects that case).
    pub fn copy_payload(&self, out: &mut Vec<u8>) {
        match self.kind() {
            ObjKind::ByteArray => {
                out.extend(self.bytes().iter().map(|b| b.load(Ordering::Relaxed)))
            }
            _ => {
                for w in self.words() {
                    out.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
                }
            }
        }
    }

    /// Writes an object (header and payload) into memory that holds none, for a
    /// restore from a checkpoint.
    ///
    /// # Safety
    /// `addr` must be 16-byte aligned memory of at least `HEADER_BYTES + payload.len()`
    /// bytes that no other thread reads or writes meanwhile, and `payload` must be the
    /// payload of an object shaped as `header` says.
    pub unsafe fn write_at(addr: usize, header: ObjHeader, payload: &[u8]) {
        debug_assert_eq!(payload.len(), header.kind().payload_bytes(header.len));
        // SAFETY: the caller guarantees exclusive, large-enough, aligned memory.
        unsafe {
            std::ptr::write(addr as *mut ObjHeader, header);
            std::ptr::copy_nonoverlapping(
                payload.as_ptr(),
                (addr + HEADER_BYTES) as *mut u8,
                payload.len(),
            );
        }
    }
}
