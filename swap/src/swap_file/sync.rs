//! The swap file and the page cache: what was written reaches the disk and leaves the
//! cache (so the kernel holds no copy charged to the app), reads ahead are asked for and
//! dropped, and a second descriptor lets the saver wait for the disk without holding the
//! file.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;

use super::layout::FILE_HEADER_BYTES;
use super::{page_cache, SwapError, SwapFile};

/// A second descriptor of a swap file ([`SwapFile::sync_handle`]): the saver waits for its
/// checkpoints to reach the disk through it after letting go of the file, so the app's
/// looper, whose frees and faults take the file, never waits behind an `fdatasync`.
#[derive(Debug)]
pub struct SyncHandle {
    file: File,
    path: PathBuf,
}

impl SyncHandle {
    /// [`SwapFile::sync_and_release`] through this descriptor: waits until everything
    /// written to the file is on disk, then drops its pages from the page cache. (If a
    /// compaction replaced the file meanwhile, this syncs the replaced one; the
    /// compaction synced and released its copy itself.)
    pub fn sync_and_release(&self) -> Result<(), SwapError> {
        self.file.sync_data().map_err(|source| SwapError::Io {
            op: "flush",
            path: self.path.clone(),
            source,
        })?;
        drop_cached(&self.file);
        Ok(())
    }

    /// Writes every dirty page of the file back and waits until the disk has it
    /// (`sync_file_range` with `WAIT_BEFORE | WRITE | WAIT_AFTER`: the data only, no
    /// journal commit), then drops the file's pages from the page cache. The saver calls
    /// it every [`WRITE_BACK_EVERY`] bytes, so its checkpoints never pile up as dirty
    /// pages in the app's memory cgroup: under cgroup v1, a charge at the group's limit
    /// whose reclaim finds only dirty file pages sleeps 100 ms in the kernel
    /// (`reclaim_throttle`), and direct reclaim never writes a file page itself.
    pub fn write_back_and_release(&self) -> Result<(), SwapError> {
        write_back(&self.file).map_err(|source| SwapError::Io {
            op: "write back",
            path: self.path.clone(),
            source,
        })?;
        drop_cached(&self.file);
        Ok(())
    }
}

/// Bytes of checkpoints a saver writes between two
/// [`SyncHandle::write_back_and_release`] calls: at most this much of an app's swap file
/// is dirty in the page cache at a time.
pub const WRITE_BACK_EVERY: usize = 256 << 10;

/// Writes back every dirty page of `file` and waits for them, and for any write already
/// under way (data only).
pub(super) fn write_back(file: &File) -> std::io::Result<()> {
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: a plain call on a descriptor `file` owns for the call, over the whole file
    // (offset 0, length 0: to its end); it reads no memory of ours.
    let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, flags) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Drops `file`'s clean pages from the page cache: the whole file, header page included.
/// Keeping the header page cached would be worth its one page, but the advice drops
/// nothing of a large folio that the range does not cover whole (Linux 6.18: a 256 KiB
/// file kept every page when released from byte 4096), so a release that starts past the
/// header could keep the file's whole cache charged to the app. Dirty pages stay until
/// written back; an error only leaves pages cached, so it is ignored.
pub(super) fn drop_cached(file: &File) {
    let _ = marvin_runtime::memfd::drop_cache(file, 0);
}

impl SwapFile {
    /// Starts reading the used part of `[from, to)` into the page cache without waiting
    /// ([`marvin_runtime::memfd::will_need`]), so faults of the checkpoints there find
    /// them cached or already on their way. Returns the bytes asked for (0 when the range
    /// holds no used byte, or the advice failed: an advice is only a hint).
    pub fn prefetch(&self, from: u64, to: u64) -> u64 {
        let (from, to) = (from.max(FILE_HEADER_BYTES), to.min(self.end));
        if from >= to {
            return 0;
        }
        match marvin_runtime::memfd::will_need(&self.file, from, to - from) {
            Ok(()) => to - from,
            Err(_) => 0,
        }
    }

    /// Drops the clean pages of `[from, to)` from the page cache: what a restore read into
    /// its objects, or asked for and did not read.
    pub fn drop_range(&self, from: u64, to: u64) {
        page_cache::drop_range(&self.file, from, to.min(self.len));
    }

    /// Drops the file's clean pages from the page cache ([`drop_cached`]), without
    /// starting any write (what a prefetch left unread goes).
    pub fn drop_clean(&self) {
        drop_cached(&self.file);
    }

    /// Starts writing the file's dirty pages back and drops its clean pages from the page
    /// cache, without waiting for the disk (after a batch of writes on a path that must
    /// not wait, such as a page-out). Pages still being written stay cached until a
    /// later release or [`SwapFile::sync_and_release`].
    pub fn release_all(&self) {
        // SAFETY: a plain call on a descriptor `self.file` owns, for its length; it reads
        // no memory of ours. An error only leaves pages dirty, so it is ignored.
        unsafe { libc::sync_file_range(self.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
        drop_cached(&self.file);
    }

    /// Waits until everything written is on disk (`fdatasync`), then drops the file's
    /// pages from the page cache ([`drop_cached`]): checkpoints are durable and the kernel
    /// holds no copy of them for this process (at the end of a saver run, after a compaction).
    pub fn sync_and_release(&self) -> Result<(), SwapError> {
        self.flush()?;
        drop_cached(&self.file);
        Ok(())
    }

    /// Checks the file as a read does and returns a second descriptor of it, with which
    /// [`SyncHandle::sync_and_release`] waits for the disk without the caller holding this
    /// file (and whatever lock guards it) meanwhile.
    pub fn sync_handle(&self) -> Result<SyncHandle, SwapError> {
        self.check_file()?;
        let file = self.file.try_clone().map_err(|source| SwapError::Io {
            op: "duplicate its descriptor",
            path: self.path.clone(),
            source,
        })?;
        Ok(SyncHandle {
            file,
            path: self.path.clone(),
        })
    }

    /// Waits until everything written to the file is on disk (`fdatasync`).
    pub fn flush(&self) -> Result<(), SwapError> {
        self.check_file()?;
        self.file.sync_data().map_err(|source| SwapError::Io {
            op: "flush",
            path: self.path.clone(),
            source,
        })
    }
}
