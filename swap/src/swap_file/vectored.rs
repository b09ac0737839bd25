//! Positioned vectored reads (`preadv`): one system call fills many buffers from one
//! contiguous range of a file, the only unsafe code of the swap file's read path.

use std::fs::File;
use std::io::IoSliceMut;
use std::os::unix::io::AsRawFd;

/// The most buffers one `preadv` call takes (Linux's `IOV_MAX`).
const IOV_MAX: usize = 1024;

/// Reads from `file` at `offset` into `bufs`, in order, until they are full or the file
/// ends; returns the bytes read (short only at the end of the file). Retries on `EINTR`
/// and after short reads; splits calls at [`IOV_MAX`] buffers.
pub fn pread_all(
    file: &File,
    mut bufs: &mut [IoSliceMut<'_>],
    offset: u64,
) -> std::io::Result<u64> {
    let mut done = 0u64;
    IoSliceMut::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        let n = bufs.len().min(IOV_MAX);
        let at = libc::off_t::try_from(offset + done)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: `IoSliceMut` is guaranteed ABI-compatible with `iovec` on Unix; the `n`
        // buffers are valid, writable and exclusively borrowed for the call; the file
        // descriptor is open for the call's length.
        let got = unsafe {
            libc::preadv(
                file.as_raw_fd(),
                bufs.as_ptr() as *const libc::iovec,
                n as libc::c_int,
                at,
            )
        };
        if got < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if got == 0 {
            break; // end of file
        }
        done += got as u64;
        IoSliceMut::advance_slices(&mut bufs, got as usize);
    }
    Ok(done)
}
