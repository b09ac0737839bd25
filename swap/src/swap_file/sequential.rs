//! A second open file description of a swap file, for reading it front to back (an
//! eager restore). The file's own descriptor is advised `POSIX_FADV_RANDOM` (a fault
//! reads its window and nothing more, see [`super::new_file`]), so reads through it wait
//! for the disk one at a time, without read-ahead. This one is opened anew (through
//! `/proc/self/fd`, so it is the same file even if its name now points elsewhere) and
//! advised `POSIX_FADV_SEQUENTIAL`: the kernel reads ahead of it in large folios, as it
//! does for any sequential reader, and the disk has requests in flight while the reader
//! copies what already came.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;

use super::{page_cache, SlotRead, SwapError, SwapFile};

/// A descriptor of a swap file that the kernel reads ahead of
/// ([`SwapFile::sequential_reader`]).
#[derive(Debug)]
pub struct SequentialReader {
    file: File,
    /// The file's device and inode: a compaction may replace the swap file meanwhile,
    /// and reads through this descriptor are then reads of the old one.
    id: (u64, u64),
}

fn identity(file: &File) -> Option<(u64, u64)> {
    file.metadata().ok().map(|m| (m.dev(), m.ino()))
}

impl SwapFile {
    /// A descriptor of this file that the kernel reads ahead of, for reading it front to
    /// back with [`SwapFile::read_many_sequential`]; `None` where it cannot be opened
    /// (no `/proc`), and reads then go through the file's own descriptor.
    pub fn sequential_reader(&self) -> Option<SequentialReader> {
        let file = File::open(format!("/proc/self/fd/{}", self.file.as_raw_fd())).ok()?;
        let id = identity(&file)?;
        if Some(id) != identity(&self.file) {
            return None;
        }
        page_cache::advise_sequential(&file);
        Some(SequentialReader { file, id })
    }

    /// [`SwapFile::read_many`] through `reader`, when it still is a descriptor of this
    /// file (else through the file's own): every slot is checked alike.
    pub fn read_many_sequential(
        &self,
        reader: &SequentialReader,
        reads: &mut [SlotRead<'_>],
    ) -> Vec<Result<(), SwapError>> {
        if identity(&self.file) == Some(reader.id) {
            self.read_many_via(&reader.file, reads)
        } else {
            self.read_many(reads)
        }
    }
}
