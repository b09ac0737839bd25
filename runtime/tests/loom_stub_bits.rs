//! Model-checks the stub's `CURRENT` bit against a racing write with loom:
//! `RUSTFLAGS="--cfg loom" cargo test -p marvin-runtime --test loom_stub_bits --release`.
//!
//! `src/stub_bits.rs` is compiled into this test a second time with its atomics taken
//! from `marvin-sync` (loom's under `cfg(loom)`), as `loom_reclaim_table.rs` does with the
//! entry lock. The protocol checked: the saver, having copied an object whose DIRTY bit
//! it cleared first, sets `CURRENT`, fences, and looks at DIRTY again
//! (`StubBits::set_current_then`); a writer sets DIRTY (a `SeqCst` read-modify-write of
//! the header word, as `ObjHeader::set` does) and then clears `CURRENT`
//! (`StubBits::clear_current`). Whatever the interleaving, a write the copy may have
//! missed never leaves `CURRENT` set: a checkpoint is never taken for the object's latest
//! contents when it is not.
#![cfg(loom)]

use marvin_sync::atomic::{AtomicU64, Ordering};
use marvin_sync::{thread, Arc};

/// What `stub_bits.rs` is built from: `marvin-sync`'s atomics, loom's in this build.
mod stub_atomics {
    pub(super) use marvin_sync::atomic::{fence, AtomicU8, Ordering};
}

#[allow(dead_code)]
#[path = "../src/stub_bits.rs"]
mod stub_bits;

use stub_bits::StubBits;

/// The header's DIRTY bit (`HeaderBits::DIRTY`).
const DIRTY: u64 = 1 << 2;

#[test]
fn a_write_that_races_a_save_never_leaves_the_checkpoint_current() {
    loom::model(|| {
        let bits = Arc::new(StubBits::new());
        // The saver cleared DIRTY before its copy; the write comes after the copy.
        let header = Arc::new(AtomicU64::new(0));
        let writer = {
            let (bits, header) = (bits.clone(), header.clone());
            thread::spawn(move || {
                header.fetch_or(DIRTY, Ordering::SeqCst);
                bits.clear_current();
            })
        };
        let kept = bits.set_current_then(|| header.load(Ordering::Acquire) & DIRTY != 0);
        writer.join().unwrap();
        assert!(
            !bits.is_current(),
            "CURRENT left set (the saver kept it: {kept})"
        );
    });
}

#[test]
fn a_save_no_write_raced_stays_current() {
    loom::model(|| {
        let bits = Arc::new(StubBits::new());
        let header = Arc::new(AtomicU64::new(0));
        let reader = {
            let bits = bits.clone();
            // A reader (the fault path asking) never changes the bit.
            thread::spawn(move || bits.is_current())
        };
        assert!(bits.set_current_then(|| header.load(Ordering::Acquire) & DIRTY != 0));
        let _ = reader.join().unwrap();
        assert!(bits.is_current());
    });
}
