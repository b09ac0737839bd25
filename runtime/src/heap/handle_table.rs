//! The handle table: the one place that maps an object handle to where the object lives.
//!
//! A handle is an index into a large anonymous mapping of 64-bit entries, reserved once
//! (untouched pages cost nothing) so the table never moves and can be read without a
//! lock. An entry is 0 when free, otherwise the address of the object's header, with
//! [`ENTRY_STUB`] set when the handle reaches the object through a stub. Moving,
//! stubbing or reclaiming an object changes only its entry; the interpreter keeps
//! handles, never addresses.

use std::hash::BuildHasherDefault;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::{MmapMut, MmapOptions};
use parking_lot::Mutex;

use super::handle_hash::HandleHasher;

/// Tag bit of an entry that points at a stub rather than at the object itself.
pub const ENTRY_STUB: u64 = 1;

/// A reference to an object: an index into the handle table. `0` is null and is never
/// a handle, which lets a MASM `ref` value be the handle index itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Handle(NonZeroU32);

/// A map keyed by handles (the stub registry's), hashed with one multiplication
/// ([`HandleHasher`]).
pub type HandleMap<V> = std::collections::HashMap<Handle, V, BuildHasherDefault<HandleHasher>>;

impl Handle {
    /// The handle of a non-null reference value.
    #[inline(always)]
    pub fn from_value(v: u64) -> Option<Handle> {
        NonZeroU32::new(v as u32).map(Handle)
    }

    /// The reference value of this handle.
    #[inline(always)]
    pub fn value(self) -> u64 {
        self.0.get() as u64
    }

    #[inline(always)]
    pub fn index(self) -> usize {
        self.0.get() as usize
    }
}

/// The table of handle entries.
pub struct HandleTable {
    map: MmapMut,
    capacity: u32,
    /// Entries `1..next_fresh` have been handed out at least once.
    next_fresh: AtomicU32,
    free: Mutex<Vec<u32>>,
}

/// The table has no free handle left.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("handle table full ({0} handles)")]
pub struct TableFull(pub u32);

impl HandleTable {
    /// Reserves room for `capacity` handles.
    pub fn new(capacity: u32) -> std::io::Result<HandleTable> {
        let capacity = capacity.max(2);
        let map = MmapOptions::new()
            .len(capacity as usize * 8)
            .no_reserve_swap()
            .map_anon()?;
        Ok(HandleTable {
            map,
            capacity,
            next_fresh: AtomicU32::new(1),
            free: Mutex::new(Vec::new()),
        })
    }

    #[inline(always)]
    fn entries(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is `capacity * 8` bytes, page aligned (so 8-byte aligned),
        // zero-initialised by the kernel, lives as long as `self`, and is only ever
        // accessed through these atomics.
        unsafe {
            std::slice::from_raw_parts(
                self.map.as_ptr() as *const AtomicU64,
                self.capacity as usize,
            )
        }
    }

    /// The entry of a handle.
    #[inline(always)]
    pub fn entry(&self, h: Handle) -> &AtomicU64 {
        &self.entries()[h.index()]
    }

    /// Hands out a free handle whose entry is set to `entry`.
    pub fn allocate(&self, entry: u64) -> Result<Handle, TableFull> {
        let idx = match self.free.lock().pop() {
            Some(i) => i,
            None => {
                let i = self.next_fresh.fetch_add(1, Ordering::Relaxed);
                if i >= self.capacity {
                    self.next_fresh.store(self.capacity, Ordering::Relaxed);
                    return Err(TableFull(self.capacity));
                }
                i
            }
        };
        // Release: pairs with the Acquire load in the barrier, so a thread that obtains
        // the handle sees the initialised object behind it.
        self.entries()[idx as usize].store(entry, Ordering::Release);
        Ok(Handle(
            NonZeroU32::new(idx).expect("handle 0 is never handed out"),
        ))
    }

    /// Moves up to `n` free handles into `out` (their entries stay 0 until
    /// [`HandleTable::publish`]): from the free list if it has any, else fresh ones.
    pub fn reserve(&self, n: u32, out: &mut Vec<u32>) -> Result<(), TableFull> {
        let mut free = self.free.lock();
        if !free.is_empty() {
            let take = free.len().min(n as usize);
            let at = free.len() - take;
            out.extend(free.drain(at..));
            return Ok(());
        }
        let i = self.next_fresh.fetch_add(n, Ordering::Relaxed);
        if i >= self.capacity || i.checked_add(n).is_none() {
            self.next_fresh.store(self.capacity, Ordering::Relaxed);
            return Err(TableFull(self.capacity));
        }
        let end = (i + n).min(self.capacity);
        if end < i + n {
            self.next_fresh.store(self.capacity, Ordering::Relaxed);
        }
        // Popped from the end: the lowest index goes first.
        out.extend((i..end).rev());
        Ok(())
    }

    /// Whether [`HandleTable::reserve`] of `n` would touch a page of the table not
    /// touched yet (no free handle to reuse, and fresh ones reach a new page).
    pub fn reserve_touches_page(&self, n: u32) -> bool {
        let fresh = self.next_fresh.load(Ordering::Relaxed).min(self.capacity) as usize;
        let after = (fresh + n as usize).min(self.capacity as usize);
        let page = crate::heap::PAGE;
        (after * 8).div_ceil(page) > (fresh * 8).div_ceil(page) && self.free.lock().is_empty()
    }

    /// Points a handle reserved with [`HandleTable::reserve`] at its object.
    #[inline(always)]
    pub fn publish(&self, idx: u32, entry: u64) -> Handle {
        // Release: as in `allocate`.
        self.entries()[idx as usize].store(entry, Ordering::Release);
        Handle(NonZeroU32::new(idx).expect("handle 0 is never handed out"))
    }

    /// Gives back reserved handles that were never published.
    pub fn unreserve(&self, idx: impl IntoIterator<Item = u32>) {
        self.free.lock().extend(idx);
    }

    /// Whether fresh handles are within a few entries of a page of the table not touched
    /// yet (and none is free to reuse): the next allocations may touch it.
    pub fn fresh_page_near(&self) -> bool {
        const PER_PAGE: u32 = (crate::heap::PAGE / 8) as u32;
        let fresh = self.next_fresh.load(Ordering::Relaxed);
        let r = fresh % PER_PAGE;
        fresh < self.capacity && (r == 0 || r >= PER_PAGE - 8) && self.free.lock().is_empty()
    }

    /// Returns handles to the free list (their entries must no longer be reachable).
    pub fn release(&self, handles: impl IntoIterator<Item = Handle>) {
        let mut free = self.free.lock();
        for h in handles {
            self.entries()[h.index()].store(0, Ordering::Relaxed);
            free.push(h.0.get());
        }
    }

    /// Bytes of the table in memory: the pages of every entry handed out so far (the
    /// rest of the reservation was never touched) and the free list.
    pub fn resident_bytes(&self) -> usize {
        let fresh = self.next_fresh.load(Ordering::Relaxed).min(self.capacity) as usize;
        let pages = (fresh * 8).div_ceil(crate::heap::PAGE) * crate::heap::PAGE;
        pages + self.free.lock().capacity() * std::mem::size_of::<u32>()
    }

    /// Calls `f` for every handle in use with its entry.
    pub fn for_each(&self, mut f: impl FnMut(Handle, u64)) {
        let end = self.next_fresh.load(Ordering::Acquire).min(self.capacity) as usize;
        for (i, e) in self.entries()[1..end].iter().enumerate() {
            let v = e.load(Ordering::Acquire);
            if v != 0 {
                f(Handle(NonZeroU32::new(i as u32 + 1).expect("non-zero")), v);
            }
        }
    }

    /// Whether `v` is a value this table could have handed out and that is in use.
    pub fn is_live(&self, v: u64) -> bool {
        v != 0
            && v < self.next_fresh.load(Ordering::Acquire) as u64
            && self.entries()[v as usize].load(Ordering::Acquire) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_reused_after_release() {
        let t = HandleTable::new(16).unwrap();
        let a = t.allocate(0x1000).unwrap();
        let b = t.allocate(0x2000).unwrap();
        assert_ne!(a, b);
        assert!(t.is_live(a.value()));
        t.release([a]);
        assert!(!t.is_live(a.value()));
        let c = t.allocate(0x3000).unwrap();
        assert_eq!(c, a);
        assert_eq!(t.entry(c).load(Ordering::Relaxed), 0x3000);
    }

    #[test]
    fn reserve_takes_freed_handles_first_then_fresh_ones_up_to_capacity() {
        let t = HandleTable::new(8).unwrap();
        let mut out = Vec::new();
        t.reserve(3, &mut out).unwrap();
        assert_eq!(out, [3, 2, 1]);
        // Reserved handles are not live until published.
        assert!(!t.is_live(1));
        let h = t.publish(out.pop().unwrap(), 0x1000);
        assert_eq!(h.value(), 1);
        assert!(t.is_live(1));
        t.release([h]);
        t.reserve(3, &mut out).unwrap();
        assert_eq!(
            out,
            [3, 2, 1],
            "the freed handle comes back before fresh ones"
        );
        // Fresh ones stop at the capacity; then the table is full, an error.
        t.reserve(10, &mut out).unwrap();
        assert_eq!(out, [3, 2, 1, 7, 6, 5, 4]);
        assert!(t.reserve(1, &mut out).is_err());
        t.unreserve(out.drain(..));
        assert!(t.allocate(8).is_ok());
    }

    #[test]
    fn a_full_table_is_an_error_not_a_panic() {
        let t = HandleTable::new(3).unwrap();
        t.allocate(8).unwrap();
        t.allocate(8).unwrap();
        assert!(t.allocate(8).is_err());
        assert!(t.allocate(8).is_err());
    }
}
