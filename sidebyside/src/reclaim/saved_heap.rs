//! The reclaim benchmark's subject: a background app reduced to its heap, one-page int
//! arrays stubbed and saved to its swap file ([`SavedHeap`]), the published workload's
//! (zeros) or random ones ([`Fill`]).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context};
use marvin_runtime::ObjKind;
use marvin_runtime::{AccessKind, Barriers};
use marvin_runtime::{Handle, Heap, HeapConfig, LargeBacking};
use marvin_swap::external::ExternalApp;
use marvin_swap::{reclaimer, restore, saver, stubber, AppSwap, PolicyConfig};

use super::floors::drop_page_cache;

/// Words of payload per array: with the 16-byte header, one 4 KiB page.
pub const ARRAY_WORDS: u32 = 509;
/// Bytes of heap each array takes (one page).
pub const ARRAY_BYTES: u64 = 4096;
/// The class id of arrays (as the interpreter sets it).
pub(super) const ARRAY_CLASS: u32 = u32::MAX;
pub(super) const MIB: u64 = 1 << 20;

/// What the arrays of a [`SavedHeap`] hold besides their first and last words (the
/// handle and its complement).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Zeros: the published workload's arrays, which compress well.
    Workload,
    /// Random words, which do not compress.
    Random,
}

/// A background app reduced to its heap: arrays that are stubbed, saved and clean, so
/// the reclaimer may take any of them.
pub struct SavedHeap {
    pub heap: Heap,
    pub swap: Arc<AppSwap>,
    /// Every array, in allocation (and address) order.
    pub handles: Vec<Handle>,
    /// Sum of every array's first word (each holds its handle's value).
    pub checksum: u64,
    _dir: tempfile::TempDir,
}

impl SavedHeap {
    /// Allocates `bytes` of one-page int arrays, stubs them, saves them all and puts
    /// the app in the background.
    pub fn build(bytes: u64) -> anyhow::Result<SavedHeap> {
        SavedHeap::build_on(bytes, LargeBacking::Anonymous)
    }

    /// As [`SavedHeap::build`], with the large objects backed as `backing` says.
    pub fn build_on(bytes: u64, backing: LargeBacking) -> anyhow::Result<SavedHeap> {
        SavedHeap::build_with(bytes, backing, Fill::Workload, PolicyConfig::default())
    }

    /// As [`SavedHeap::build_on`], the arrays filled as `fill` says and saved under
    /// `policy` (its `[saver] compress`, say).
    pub fn build_with(
        bytes: u64,
        backing: LargeBacking,
        fill: Fill,
        policy: PolicyConfig,
    ) -> anyhow::Result<SavedHeap> {
        let n = (bytes / ARRAY_BYTES) as usize;
        let mut random = 0x9e37_79b9_7f4a_7c15u64;
        let heap = Heap::new(HeapConfig {
            handle_capacity: (n as u32 + 1024).next_power_of_two(),
            large_backing: backing,
            ..HeapConfig::default()
        })
        .context("creating the heap")?;
        let mut handles = Vec::with_capacity(n);
        let mut checksum = 0u64;
        for _ in 0..n {
            let h = heap
                .alloc(ObjKind::IntArray, ARRAY_CLASS, ARRAY_WORDS, 0)
                .context("allocating an array")?;
            let a = heap.access::<Barriers>(h, AccessKind::Write)?;
            let words = a.obj().words();
            if fill == Fill::Random {
                for w in words.iter() {
                    random ^= random << 13;
                    random ^= random >> 7;
                    random ^= random << 17;
                    w.store(random, std::sync::atomic::Ordering::Relaxed);
                }
            }
            words[0].store(h.value(), std::sync::atomic::Ordering::Relaxed);
            words[words.len() - 1].store(!h.value(), std::sync::atomic::Ordering::Relaxed);
            checksum = checksum.wrapping_add(h.value());
            handles.push(h);
        }
        let dir = tempfile::tempdir().context("creating the swap directory")?;
        let policy = Arc::new(policy);
        let swap = AppSwap::attach(&heap, dir.path(), "bench", policy, n as u32 + 1024, true)?;
        // SAFETY: this thread is the heap's only user: no mutator runs.
        let stubbed = unsafe { stubber::stub_candidates(&heap, &*swap.policy) }?;
        ensure!(
            stubbed.objects == n as u64,
            "stubbed {} of {n}",
            stubbed.objects
        );
        let space = heap.stub_space().context("stubs enabled")?;
        space.table.set_foreground(false);
        let saved = saver::save(&heap, &swap, Duration::MAX, true);
        ensure!(
            saved.saved_objects == n as u64,
            "saved {} of {n} arrays",
            saved.saved_objects
        );
        Ok(SavedHeap {
            heap,
            swap,
            handles,
            checksum,
            _dir: dir,
        })
    }

    /// Total bytes of the arrays' pages.
    pub fn bytes(&self) -> u64 {
        self.handles.len() as u64 * ARRAY_BYTES
    }

    /// Total bytes of the arrays themselves (header and payload: what a restore reads).
    pub fn object_bytes(&self) -> u64 {
        self.handles.len() as u64 * (16 + 8 * ARRAY_WORDS as u64)
    }

    /// Bytes of the swap file the arrays' checkpoints take, headers included, from its
    /// start: what a restore of all of them reads.
    pub fn stored_bytes(&self) -> u64 {
        let file = self.swap.file.lock();
        marvin_swap::FILE_HEADER_BYTES + file.used_bytes()
    }

    /// Reads every array once through the barrier (faulting in whatever is out),
    /// summing its first word; fails unless the sum is the expected one.
    pub fn walk_first_words(&self) -> anyhow::Result<()> {
        let mut sum = 0u64;
        for &h in &self.handles {
            let a = self.heap.access::<Barriers>(h, AccessKind::Read)?;
            sum = sum.wrapping_add(a.obj().words()[0].load(std::sync::atomic::Ordering::Relaxed));
        }
        ensure!(
            sum == self.checksum,
            "restored arrays hold the wrong values"
        );
        Ok(())
    }

    /// Reads back every reclaimed array eagerly; returns the bytes read.
    pub fn restore_eager(&self) -> anyhow::Result<u64> {
        let r = restore::restore_all(&self.heap, &self.swap);
        if let Some(e) = r.errors.first() {
            bail!("restore failed: {e}");
        }
        Ok(r.bytes)
    }

    /// This app seen from outside (its table file and region directory), as the System's
    /// reclaimer opens another process.
    pub fn open_from_outside(&self) -> anyhow::Result<ExternalApp> {
        ExternalApp::open(std::process::id(), self._dir.path(), "bench")
            .context("opening the app from outside")
    }

    /// The pages of the arrays, in address order, coalesced into contiguous runs and cut
    /// at `size` bytes: the pages a reclaim of `size` bytes drops.
    pub fn page_runs(&self, size: u64) -> anyhow::Result<Vec<(usize, usize)>> {
        use marvin_runtime::page_round;
        let space = self.heap.stub_space().context("stubs are not enabled")?;
        let registry = space.registry();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut left = size as usize;
        for &h in &self.handles {
            let stub = registry.get(h).context("an array without its stub")?;
            let len = page_round(stub.bytes()).min(left);
            if len == 0 {
                break;
            }
            left -= len;
            match runs.last_mut() {
                Some((a, l)) if *a + *l == stub.addr => *l += len,
                _ => runs.push((stub.addr, len)),
            }
        }
        Ok(runs)
    }

    /// Reclaims everything reclaimable; returns the bytes taken.
    pub fn reclaim_all(&self) -> u64 {
        reclaimer::reclaim_from(&self.heap, u64::MAX).bytes
    }

    /// Writes the swap file back and drops it from the page cache, so the next reads go
    /// to the disk.
    pub fn drop_swap_cache(&self) -> anyhow::Result<()> {
        let file = self.swap.file.lock();
        file.flush()?;
        drop_page_cache(file.path())
    }
}
