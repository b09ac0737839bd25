//! Quit: the request (which mode, when) and the tagged count that lets the looper tear
//! the queue down only after every thread walking it has left.
//!
//! Posts do not take the count: they never dereference a node they did not allocate
//! (only the head pointer's value), and the quit sentinel on the stack makes every post
//! after it fail. Walkers (`remove`, `has`, barrier removal) take a pass; the looper sets
//! the quitting bit and waits for the count to drain before it frees the remaining nodes
//! in place.

use crossbeam_utils::CachePadded;
use marvin_sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// How the looper quits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuitMode {
    /// Drop every pending message.
    Now,
    /// Deliver what was due at `at`, drop the rest.
    Safely { at: u64 },
}

const NOT_QUITTING: u8 = 0;
const QUIT_NOW: u8 = 1;
const QUIT_SAFELY: u8 = 2;

/// The first quit request wins; later ones are ignored.
#[derive(Default)]
pub struct QuitRequest {
    mode: AtomicU8,
    at: AtomicU64,
}

impl QuitRequest {
    /// Records a request; true for the first one (whose caller then pushes the sentinel).
    pub fn request(&self, mode: QuitMode) -> bool {
        let (code, at) = match mode {
            QuitMode::Now => (QUIT_NOW, 0),
            QuitMode::Safely { at } => (QUIT_SAFELY, at),
        };
        // Relaxed: ordered by the RMW below and, for the looper, by the sentinel push.
        let won = self
            .mode
            .compare_exchange(NOT_QUITTING, code, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if won {
            // Relaxed: the winner's sentinel push (SeqCst) publishes it to the looper.
            self.at.store(at, Ordering::Relaxed);
        }
        won
    }

    /// Whether quit was requested.
    pub fn requested(&self) -> bool {
        self.mode.load(Ordering::Relaxed) != NOT_QUITTING
    }

    /// The request, read by the looper after it saw the sentinel (which orders it).
    pub fn read(&self) -> Option<QuitMode> {
        match self.mode.load(Ordering::Relaxed) {
            QUIT_NOW => Some(QuitMode::Now),
            QUIT_SAFELY => Some(QuitMode::Safely {
                at: self.at.load(Ordering::Relaxed),
            }),
            _ => None,
        }
    }
}

const QUITTING: usize = 1 << (usize::BITS - 1);

/// A count of threads inside, with a quitting bit.
pub struct TaggedCount {
    word: CachePadded<AtomicUsize>,
}

impl Default for TaggedCount {
    fn default() -> Self {
        TaggedCount {
            word: CachePadded::new(AtomicUsize::new(0)),
        }
    }
}

/// Proof of being inside; leaving on drop.
pub struct Pass<'a> {
    count: &'a TaggedCount,
}

impl TaggedCount {
    /// Enters unless quitting.
    pub fn enter(&self) -> Option<Pass<'_>> {
        // Acquire: our later node reads come after the increment in this thread; the
        // increment and the looper's `fetch_or` are ordered by the word's modification
        // order, so either the looper sees us and waits, or we see the bit and leave.
        let before = self.word.fetch_add(1, Ordering::Acquire);
        if before & QUITTING != 0 {
            // Release: pairs with the Acquire loads in `close_and_drain`.
            self.word.fetch_sub(1, Ordering::Release);
            return None;
        }
        Some(Pass { count: self })
    }

    /// Sets the quitting bit, then waits until everyone inside has left. After it
    /// returns nobody is inside and nobody can enter.
    pub fn close_and_drain(&self) {
        self.word.fetch_or(QUITTING, Ordering::SeqCst);
        // Acquire: pairs with each pass's Release decrement, so everything a walker did
        // inside happens before what the caller does next (freeing nodes).
        while self.word.load(Ordering::Acquire) & !QUITTING != 0 {
            marvin_sync::spin_hint();
            #[cfg(not(loom))]
            marvin_sync::thread::yield_now();
        }
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire loads in `close_and_drain`.
        self.count.word.fetch_sub(1, Ordering::Release);
    }
}
