//! Ranges of a swap file in the page cache: dropping the pages of one range
//! (`posix_fadvise(POSIX_FADV_DONTNEED)`), for a restore that drops what it read as it
//! goes instead of the whole file at once.

use std::fs::File;
use std::os::unix::io::AsRawFd;

/// Drops the clean pages of `[from, to)` of `file` from the page cache. Only advice: an
/// error leaves pages cached, so it is ignored.
pub fn drop_range(file: &File, from: u64, to: u64) {
    let (Ok(at), Ok(len)) = (
        libc::off_t::try_from(from),
        libc::off_t::try_from(to.saturating_sub(from)),
    ) else {
        return;
    };
    if len == 0 {
        return;
    }
    // SAFETY: a plain advice call on a descriptor `file` owns for the call; it reads no
    // memory of ours.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), at, len, libc::POSIX_FADV_DONTNEED) };
}

/// Advises `file` (this open file description only) that it is read front to back
/// (`POSIX_FADV_SEQUENTIAL`): the kernel reads ahead of it, up to twice the device's
/// `read_ahead_kb`. Only advice: an error leaves the default read-ahead.
pub fn advise_sequential(file: &File) {
    // SAFETY: a plain advice call on a descriptor `file` owns for the call, over the
    // whole file; it reads no memory of ours.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL) };
}
