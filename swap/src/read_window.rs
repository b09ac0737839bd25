//! The page-cache window of a forward read of a swap file: how far ahead of the reader
//! to ask the kernel to read (`POSIX_FADV_WILLNEED`, so that the disk has several
//! requests in flight while the reader copies what already came), and what behind the
//! reader to drop from the page cache (the checkpoints it read are in their objects now,
//! and the runtime keeps no copy of a checkpoint that the kernel would charge to the app).
//!
//! The swap file's own descriptor reads nothing ahead (it is advised
//! `POSIX_FADV_RANDOM`, see [`crate::swap_file`]), so without this a restore reads at a
//! queue depth of one, each read waiting for the disk in turn. Pure arithmetic on byte
//! offsets; the advice calls are the caller's ([`crate::swap_file::SwapFile::prefetch`],
//! [`crate::swap_file::SwapFile::drop_range`]). Correctness never depends on it: a page
//! dropped too early is read again, one never asked for is read when needed.

use std::ops::Range;

/// What the drops behind a reader round to: the largest folio the page cache holds a
/// file's pages in (2 MiB, a PMD on x86-64), naturally aligned. The advice drops nothing
/// of a folio that its range does not cover whole, and the kernel's read-ahead brings
/// large folios, so a drop of only what the last read covered would leave most of them.
pub const DROP_ALIGN: u64 = 2 << 20;

fn align_down(at: u64) -> u64 {
    at / DROP_ALIGN * DROP_ALIGN
}

/// Ahead-of-the-reader prefetch and behind-the-reader drop of one forward read.
#[derive(Clone, Debug)]
pub struct ReadWindow {
    /// How far past the end of the current read to have asked for.
    ahead: u64,
    /// The fewest bytes one more advice asks for, once the current read is covered.
    step: u64,
    /// Everything below this was asked for (from where the window started).
    asked_to: u64,
    /// Everything below this (from where the window started) was dropped.
    dropped_to: u64,
}

impl ReadWindow {
    /// A window for a read starting at byte `start`, keeping `ahead` bytes asked for
    /// past the reader, in advices of at least `step` bytes.
    pub fn new(start: u64, ahead: u64, step: u64) -> ReadWindow {
        ReadWindow {
            ahead,
            step: step.max(1),
            asked_to: start,
            dropped_to: align_down(start),
        }
    }

    /// The reader is about to read `[from, to)`: the range to ask the kernel for now, if
    /// any. A read past what was asked for starts asking from it (a reader that jumped
    /// ahead); one behind it asks for nothing more than the window already holds.
    pub fn before(&mut self, from: u64, to: u64) -> Option<Range<u64>> {
        let want = to.saturating_add(self.ahead);
        let start = self.asked_to.max(from);
        if want <= start {
            return None;
        }
        if self.asked_to >= to && want - start < self.step {
            return None;
        }
        self.asked_to = want;
        Some(start..want)
    }

    /// The reader read up to `to`: what behind it to drop, from where the last drop
    /// ended to the [`DROP_ALIGN`] boundary at or below `to` (what lies past it may
    /// share a folio with checkpoints not read yet). A reader behind the last drop
    /// drops nothing.
    pub fn after(&mut self, to: u64) -> Option<Range<u64>> {
        let hi = align_down(to);
        if hi <= self.dropped_to {
            return None;
        }
        let lo = std::mem::replace(&mut self.dropped_to, hi);
        Some(lo..hi)
    }

    /// The read is over: what is left to drop, from where the last drop ended to the end
    /// of what was asked for or read (`end`), whichever is further.
    pub fn finish(&mut self, end: u64) -> Option<Range<u64>> {
        let hi = self.asked_to.max(end);
        let lo = self.dropped_to;
        self.dropped_to = self.dropped_to.max(hi);
        (hi > lo).then_some(lo..hi)
    }
}

/// Tells the faults of one app that follow each other through its swap file (each
/// fault's read-ahead window right after the last one's, as a walk over objects saved
/// in address order makes them) from the rest. From the second fault in a row, the
/// faults read through a descriptor the kernel reads ahead of
/// ([`crate::swap_file::SequentialReader`]), as it does for any sequential reader, and
/// what they read leaves the page cache behind them; a fault elsewhere ends the run, and
/// what the kernel may have read ahead of it goes too.
///
/// The faults' own reads do not change: each still brings back the objects of its
/// read-ahead window and nothing more (the memory a fault reserves stays what it reads);
/// the kernel only has the next windows' bytes on the way before they are asked for.
#[derive(Clone, Debug)]
pub struct FaultRun {
    /// How far past a run's last fault the kernel may have read ahead.
    max_ahead: u64,
    /// The end of the last fault's window (0: none yet).
    last_end: u64,
    /// Faults in a row so far, the last one included.
    length: u32,
    /// Where the run's drops reached.
    dropped_to: u64,
}

impl FaultRun {
    pub fn new(max_ahead: u64) -> FaultRun {
        FaultRun {
            max_ahead,
            last_end: 0,
            length: 0,
            dropped_to: 0,
        }
    }

    /// Whether a fault whose window starts at `from` continues the run (and so reads
    /// through the descriptor the kernel reads ahead of).
    pub fn continues(&self, from: u64) -> bool {
        self.length > 0 && from == self.last_end
    }

    /// A fault just read its window `[from, to)` of the file: the ranges to drop from
    /// the page cache (the whole pages of a run's window, now in its objects; on a
    /// jump, what the kernel may have read ahead of the run that ended).
    pub fn fault(&mut self, from: u64, to: u64) -> Vec<Range<u64>> {
        let mut drop = Vec::new();
        if self.continues(from) {
            self.length = self.length.saturating_add(1);
            let hi = align_down(to);
            if hi > self.dropped_to {
                drop.push(self.dropped_to..hi);
                self.dropped_to = hi;
            }
        } else {
            drop.extend(self.end());
            self.length = 1;
            self.dropped_to = align_down(from);
        }
        self.last_end = to;
        drop
    }

    /// The run ends (a fault elsewhere, or a launch whose own prefetch takes over): what
    /// the kernel may have read ahead of its last fault, if it had more than one.
    pub fn end(&mut self) -> Option<Range<u64>> {
        let ran = self.length > 1;
        self.length = 0;
        let hi = (self.last_end + self.max_ahead).next_multiple_of(DROP_ALIGN);
        (ran && hi > self.dropped_to).then_some(self.dropped_to..hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_forward_read_asks_ahead_in_steps_and_drops_whole_folios_behind() {
        let mut w = ReadWindow::new(64, 8 * MIB, 2 * MIB);
        // The first read asks for itself and the window ahead of it.
        assert_eq!(w.before(64, MIB), Some(64..9 * MIB));
        // Nothing behind it is a whole 2 MiB yet.
        assert_eq!(w.after(MIB), None);
        // The next read is covered; a step's worth is not due yet.
        assert_eq!(w.before(MIB, 2 * MIB + 5), None);
        assert_eq!(w.after(2 * MIB + 5), Some(0..2 * MIB));
        // Once the reader moved a step, the window moves with it.
        assert_eq!(
            w.before(2 * MIB + 5, 3 * MIB + 5),
            Some(9 * MIB..11 * MIB + 5)
        );
        assert_eq!(w.after(5 * MIB), Some(2 * MIB..4 * MIB));
        // The end drops what was asked for and never read.
        assert_eq!(w.finish(6 * MIB), Some(4 * MIB..11 * MIB + 5));
        assert_eq!(w.finish(6 * MIB), None);
    }

    #[test]
    fn a_read_past_the_window_asks_from_itself_and_a_read_behind_drops_nothing() {
        let mut w = ReadWindow::new(0, 8192, 4096);
        assert_eq!(w.before(0, 4096), Some(0..12_288));
        assert_eq!(w.before(100_000, 104_096), Some(100_000..112_288));
        assert_eq!(w.after(3 * MIB), Some(0..2 * MIB));
        assert_eq!(w.after(MIB), None);
    }

    #[test]
    fn faults_in_a_row_drop_what_they_read_and_a_jump_drops_what_was_read_ahead() {
        let win = 128 << 10;
        let mut run = FaultRun::new(MIB);
        // One fault alone is no run: it drops nothing and the next one continues it.
        assert!(!run.continues(0));
        assert!(run.fault(0, win).is_empty());
        assert!(run.continues(win));
        assert!(!run.continues(5 * win));
        // Faults in a row drop each 2 MiB they are past.
        for k in 1..15 {
            assert!(run.fault(k * win, (k + 1) * win).is_empty(), "fault {k}");
        }
        assert_eq!(run.fault(15 * win, 16 * win), vec![0..2 * MIB]);
        // A fault elsewhere drops what the kernel may have read ahead of the run.
        assert_eq!(run.fault(100 * win, 101 * win), vec![2 * MIB..4 * MIB]);
        // A run of one fault read nothing ahead: a jump after it drops nothing.
        assert!(run.fault(7 * win, 8 * win).is_empty());
        assert_eq!(run.end(), None);
    }
}
