//! What the app alone knows of a stubbed object, in one byte of its stub: memory of the
//! app's own that no reclaimer (another process, a stray write into the shared reclaim
//! table) can reach. The reclaim table's flags are shared memory and only a published
//! copy; these bits are what the runtime checks them against before it drops resident
//! bytes or brings a checkpoint back (see `docs/swap-safety.md`, "What the app alone
//! knows").
//!
//! - `MARKED`: the collector's mark.
//! - `CURRENT`: the object's checkpoint holds its latest contents. Set by the saver, under
//!   the stub's state lock, after a save no write raced with; cleared by every write
//!   through the stub, as it enters (before the write) and as it ends (after it), the same
//!   protocol as the table's CLEAN. A restore, a reclaim or a page-at-a-time restore is
//!   done only while it is set.
//! - `DAMAGED`: the object cannot be trusted any more (its checkpoint failed a check while
//!   its pages came back, or the table contradicted `CURRENT`): every access fails with an
//!   error naming it, and it is never saved or restored again. Set with one atomic
//!   `fetch_or`, so a signal handler may set it.
//!
//! The atomics come from the crate's `stub_atomics` module (`std`'s); the loom model
//! `tests/loom_stub_bits.rs` compiles this file with loom's in their place and checks that
//! a write racing a save never leaves `CURRENT` set.

use super::stub_atomics::{fence, AtomicU8, Ordering};

const MARKED: u8 = 1;
const CURRENT: u8 = 2;
const DAMAGED: u8 = 4;

/// The private bits of one stub (see the module's doc).
#[derive(Debug, Default)]
pub struct StubBits(AtomicU8);

impl StubBits {
    /// No mark, no current checkpoint, not damaged.
    pub fn new() -> StubBits {
        StubBits(AtomicU8::new(0))
    }

    /// Sets (`on`) or clears the collector's mark; returns whether it was set.
    pub fn swap_marked(&self, on: bool) -> bool {
        let before = if on {
            self.0.fetch_or(MARKED, Ordering::Relaxed)
        } else {
            self.0.fetch_and(!MARKED, Ordering::Relaxed)
        };
        before & MARKED != 0
    }

    /// Whether the checkpoint holds the object's latest contents.
    #[inline]
    pub fn is_current(&self) -> bool {
        self.0.load(Ordering::SeqCst) & CURRENT != 0
    }

    /// Records that the checkpoint just written holds the object's latest contents. The
    /// saver calls this under the stub's state lock, then looks at the header's DIRTY bit
    /// again ([`StubBits::set_current_then`]).
    pub fn set_current(&self) {
        self.0.fetch_or(CURRENT, Ordering::SeqCst);
    }

    /// Sets `CURRENT`, then (after a `SeqCst` fence) calls `raced`, which says whether a
    /// write happened meanwhile (the header's DIRTY bit); if so, `CURRENT` is cleared
    /// again. Returns whether it stays set. A writer sets DIRTY before it clears
    /// `CURRENT` ([`StubBits::clear_current`], a read-modify-write): either the writer's
    /// clear comes after this set and clears it, or it comes before, and `raced`, which
    /// reads DIRTY after this set synchronized with that clear, sees DIRTY.
    pub fn set_current_then(&self, raced: impl FnOnce() -> bool) -> bool {
        self.set_current();
        fence(Ordering::SeqCst);
        if raced() {
            self.clear_current();
            return false;
        }
        true
    }

    /// Records a write: the checkpoint is no longer current. Always a read-modify-write:
    /// it reads the latest value of the byte, so when the saver's `set_current` came
    /// before it, the two synchronize and the saver's look at DIRTY, which comes after,
    /// sees the writer's DIRTY, set before; when it came after, it clears the bit. (A
    /// plain load first, skipping the write when clear, would need a `SeqCst` fence
    /// between the DIRTY set and the load: the loom model found the interleaving without
    /// one, where both sides miss each other.)
    #[inline]
    pub fn clear_current(&self) {
        self.0.fetch_and(!CURRENT, Ordering::SeqCst);
    }

    /// Whether the object was found damaged.
    #[inline]
    pub fn is_damaged(&self) -> bool {
        // Acquire, after an Acquire fence: a thread that found a page another thread's
        // fault filled (with zeroes, for a damaged object) reads this after the page's
        // bytes; the filling thread set the bit before it placed the page.
        fence(Ordering::Acquire);
        self.0.load(Ordering::Acquire) & DAMAGED != 0
    }

    /// Marks the object damaged, for good. Async-signal-safe (one atomic operation).
    pub fn set_damaged(&self) {
        self.0.fetch_or(DAMAGED, Ordering::SeqCst);
    }
}

thread_local! {
    /// Damage this thread's own touches found ([`note_damage_on_this_thread`]).
    static TOUCH_DAMAGE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Records that a touch by this thread found its object damaged (the page-at-a-time
/// restore's signal handler, on the touching thread). Async-signal-safe: a constant
/// thread-local without a destructor, read and written in place.
pub fn note_damage_on_this_thread() {
    TOUCH_DAMAGE.with(|c| c.set(c.get().wrapping_add(1)));
}

/// How many damaged touches this thread made so far: an access compares it before and
/// after, to tell a damage its own touch found from one another thread found.
pub(crate) fn damage_on_this_thread() -> u32 {
    TOUCH_DAMAGE.with(std::cell::Cell::get)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_bits_are_independent() {
        let b = StubBits::new();
        assert!(!b.is_current() && !b.is_damaged());
        assert!(!b.swap_marked(true));
        b.set_current();
        assert!(b.is_current());
        assert!(b.swap_marked(false));
        assert!(b.is_current(), "the mark leaves CURRENT alone");
        b.clear_current();
        assert!(!b.is_current());
        assert!(b.set_current_then(|| false));
        assert!(
            !b.set_current_then(|| true),
            "a raced write clears it again"
        );
        assert!(!b.is_current());
        b.set_damaged();
        assert!(b.is_damaged() && !b.swap_marked(false));
    }
}
