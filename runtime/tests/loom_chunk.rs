//! Model-checks the write-versus-save-versus-reclaim protocol of a cold chunk with loom:
//! `RUSTFLAGS="--cfg loom" cargo test -p marvin-runtime --test loom_chunk --release`.
//!
//! Two app threads each write one member of the same chunk (as `Heap::access` does for a
//! chunk member: the chunk's entry held shared, the chunk faulted in first when it is out,
//! DIRTY set on the chunk before and after the write, CLEAN taken off the entry), while the
//! saver (`swap/src/saver.rs`: clear DIRTY, copy the chunk, look at DIRTY, publish SAVED and
//! CLEAN, look at DIRTY again) and the reclaimer (try-lock, take only a reclaimable entry,
//! drop the pages) run beside them. Whatever the interleaving, reading both members
//! afterwards gives both writes: none is lost to a reclaim of a stale checkpoint. The entry
//! lock is the shipped `src/reclaim_table/lock.rs`, compiled over loom's atomics as in
//! `loom_reclaim_table.rs`; the chunk's header bit, pages and checkpoint are modelled.
#![cfg(loom)]

use marvin_sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use marvin_sync::{thread, Arc, Mutex};

/// What `lock.rs` is built from: `marvin-sync`'s atomics, loom's in this build.
mod atomics {
    pub(super) use marvin_sync::atomic::{fence, AtomicU32, Ordering};
    pub(super) use marvin_sync::spin_hint;
}

#[allow(dead_code)]
#[path = "../src/reclaim_table/lock.rs"]
mod lock;

use lock::{EntryFlags, EntryLock};

/// One chunk of two members: its entry, its header's DIRTY bit, its pages (the two
/// members' words, zero once reclaimed) and its checkpoint (under the stub's state lock).
struct Chunk {
    lock: EntryLock,
    dirty: AtomicU32,
    words: [AtomicU64; 2],
    checkpoint: Mutex<[u64; 2]>,
}

impl Chunk {
    /// A saved, clean, cold, resident chunk of a background app, both members zero.
    fn new() -> Arc<Chunk> {
        let c = Chunk {
            lock: EntryLock::new(),
            dirty: AtomicU32::new(0),
            words: [AtomicU64::new(0), AtomicU64::new(0)],
            checkpoint: Mutex::new([0, 0]),
        };
        c.lock.insert_flags(EntryFlags::RECLAIMABLE);
        Arc::new(c)
    }

    /// Faults the chunk in when it is out (the caller holds the entry shared).
    fn ensure_resident(&self) {
        let cp = self.checkpoint.lock().unwrap();
        if !self.lock.flags().contains(EntryFlags::RESIDENT) {
            for (w, v) in self.words.iter().zip(cp.iter()) {
                w.store(*v, SeqCst);
            }
            self.lock.insert_flags(EntryFlags::RESIDENT);
        }
    }

    /// A write of `value` into member `i` through the barrier.
    fn write(&self, i: usize, value: u64) {
        assert!(self.lock.lock_shared_or_give_up(|_| false));
        self.ensure_resident();
        self.dirty.store(1, SeqCst);
        self.words[i].store(value, SeqCst);
        self.dirty.store(1, SeqCst);
        self.lock.remove_flags(EntryFlags::CLEAN);
        self.lock.unlock_shared();
    }

    /// A read of both members through the barrier.
    fn read(&self) -> [u64; 2] {
        assert!(self.lock.lock_shared_or_give_up(|_| false));
        self.ensure_resident();
        let v = [self.words[0].load(SeqCst), self.words[1].load(SeqCst)];
        self.lock.unlock_shared();
        v
    }

    /// One saver pass over the chunk.
    fn save(&self) {
        assert!(self.lock.lock_shared_or_give_up(|_| false));
        let flags = self.lock.flags();
        if flags.contains(EntryFlags::RESIDENT) && !flags.contains(EntryFlags::CLEAN) {
            let mut cp = self.checkpoint.lock().unwrap();
            self.dirty.store(0, SeqCst);
            *cp = [self.words[0].load(SeqCst), self.words[1].load(SeqCst)];
            if self.dirty.load(SeqCst) == 0 {
                self.lock
                    .insert_flags(EntryFlags::SAVED | EntryFlags::CLEAN | EntryFlags::COLD);
                if self.dirty.load(SeqCst) != 0 {
                    self.lock.remove_flags(EntryFlags::CLEAN);
                }
            }
        }
        self.lock.unlock_shared();
    }

    /// One reclaimer attempt: never waits, takes only a reclaimable entry.
    fn reclaim(&self) -> bool {
        if !self.lock.try_lock_reclaimer() {
            return false;
        }
        let took = self.lock.flags().contains(EntryFlags::RECLAIMABLE);
        if took {
            for w in &self.words {
                w.store(0, SeqCst);
            }
            self.lock.remove_flags(EntryFlags::RESIDENT);
        }
        self.lock.unlock_reclaimer();
        took
    }
}

#[test]
fn writers_into_one_chunk_lose_nothing_to_the_saver_and_the_reclaimer() {
    loom::model(|| {
        let c = Chunk::new();
        let writers: Vec<_> = (0..2)
            .map(|i| {
                let c = c.clone();
                thread::spawn(move || c.write(i, i as u64 + 1))
            })
            .collect();
        c.save();
        c.reclaim();
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(c.read(), [1, 2]);
        // And once more through a save and a reclaim with nobody writing.
        c.save();
        c.reclaim();
        assert_eq!(c.read(), [1, 2]);
    });
}
