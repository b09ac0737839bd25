//! Memory another process can reclaim, and every OS call that takes: anonymous memory
//! files (`memfd_create`) sized sparsely and mapped shared, hole punching
//! (`fallocate(PUNCH_HOLE)`), and reaching another process's memory file through a pidfd
//! (`pidfd_open`, `pidfd_getfd`) or, failing that, `/proc/PID/fd/N`. Also the inverse of
//! hole punching for the files the runtime keeps on disk (the reclaim table, the swap
//! file): allocating their blocks up front (`posix_fallocate`, [`reserve`]), and dropping
//! and counting their pages in the page cache ([`drop_cache`], [`cached_pages`]),
//! starting reads of a range into it ahead of need ([`will_need`]), and telling a
//! file system whose page cache is its storage ([`on_tmpfs`]).
//!
//! `madvise(MADV_DONTNEED)` only acts on the caller's own address space, and
//! `process_madvise` does not accept it, so a reclaimer in another process cannot drop an
//! app's anonymous pages. A memory file's pages belong to the file, not to a mapping:
//! whoever holds a descriptor of it can punch a hole, which frees the pages (and
//! uncharges them from the app's memory cgroup) and makes every mapping read zeroes there
//! afterwards. This module is the only place of the crate that makes these calls.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use memmap2::{MmapMut, MmapOptions};

/// Creates an anonymous memory file of `len` bytes (sparse: no page is allocated until it
/// is touched), closed on exec. `name` shows in `/proc/PID/fd` as `/memfd:NAME`.
pub fn create(name: &str, len: u64) -> io::Result<File> {
    let cname = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "memfd name holds a NUL"))?;
    // SAFETY: `cname` is a valid NUL-terminated string for the call's length; the
    // returned descriptor, if any, is fresh and owned by nobody else.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by memfd_create and is owned by nothing else.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.set_len(len)?;
    Ok(file)
}

/// Maps the first `len` bytes of `file` shared, readable and writable.
///
/// The mapping's contents may change under it: this process writes objects into it,
/// and a reclaimer (here or in another process) may punch holes in the file, after which
/// the mapping reads zeroes there. Callers reach the memory only through raw addresses
/// under the reclaim table's lock protocol, never through references that assume the
/// bytes stay put.
pub fn map_shared(file: &File, len: usize) -> io::Result<MmapMut> {
    // SAFETY: a MAP_SHARED mapping of a memory file this process created and sized; it is
    // never truncated, so every mapped page stays backed. Changes by another holder of
    // the file (hole punching) are what the callers expect, as said above.
    unsafe { MmapOptions::new().len(len).map_mut(file) }
}

/// Frees the pages of `[offset, offset + len)` of a memory file (`fallocate` with
/// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`): the file keeps its size, and every
/// mapping of it reads zeroes there until the range is written again.
pub fn punch_hole(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "hole out of range",
        ));
    };
    // SAFETY: a plain system call on a descriptor `file` owns for the call's length; it
    // touches no memory of this process.
    let rc = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            n,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Allocates every disk block of `[offset, offset + len)` of `file` (`posix_fallocate`),
/// growing the file to the end of the range if it is shorter: writing there later (or
/// touching a shared mapping of it) cannot fail for lack of room. A range past `off_t`
/// is `EFBIG`; otherwise a failure is the call's errno (`ENOSPC` for a full disk).
pub fn reserve(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    };
    // SAFETY: posix_fallocate only reads its integer arguments; the descriptor is owned by
    // `file`, open for writing by the caller's contract (else EBADF), for the whole call.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), off, n) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Drops the clean pages of `file` from `from` on from the page cache
/// (`posix_fadvise(POSIX_FADV_DONTNEED)`), for every process that has the file open, and
/// uncharges them from the memory cgroup they were charged to. Only whole pages go, so the
/// page holding `from` stays unless `from` starts it, and the kernel keeps any large folio
/// that the range does not wholly cover (Linux 6.18: a 256 KiB file kept every page when
/// dropped from byte 4096); dirty pages stay until written back.
pub fn drop_cache(file: &File, from: u64) -> io::Result<()> {
    advise(file, from, 0, libc::POSIX_FADV_DONTNEED)
}

/// Starts reading `[from, from + len)` of `file` into the page cache without waiting
/// for it (`posix_fadvise(POSIX_FADV_WILLNEED)`): a later read of the range finds its
/// pages cached, or already on their way. The pages are charged to the caller's memory
/// cgroup like any read's.
pub fn will_need(file: &File, from: u64, len: u64) -> io::Result<()> {
    advise(file, from, len, libc::POSIX_FADV_WILLNEED)
}

/// Tells the kernel that `file` is read at random places (`posix_fadvise(POSIX_FADV_RANDOM)`
/// on this descriptor): a read brings in the pages it asks for and no read-ahead around
/// them. [`will_need`] still reads what it names.
pub fn random_access(file: &File) -> io::Result<()> {
    advise(file, 0, 0, libc::POSIX_FADV_RANDOM)
}

/// `posix_fadvise(advice)` over `[from, from + len)` of `file` (`len` 0: to the end).
fn advise(file: &File, from: u64, len: u64, advice: libc::c_int) -> io::Result<()> {
    let (Ok(from), Ok(len)) = (libc::off_t::try_from(from), libc::off_t::try_from(len)) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "range out of reach",
        ));
    };
    // SAFETY: a plain advice call on a descriptor `file` owns for the call; it reads no
    // memory of ours.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), from, len, advice) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Whether `dir` is on tmpfs, whose page cache is its storage: dropping cached pages
/// there drops nothing, and a read never waits for a disk (`statfs`; false when it
/// cannot be asked).
pub fn on_tmpfs(dir: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path, `st` room for one statfs the call fills in.
    let rc = unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) };
    // SAFETY: a successful statfs filled `st` in.
    rc == 0 && unsafe { st.assume_init() }.f_type == libc::TMPFS_MAGIC
}

/// How many pages of `[from, to)` of `file` are in the page cache, by `mincore` over a
/// short-lived read-only mapping of `[0, to)`: `mincore` only looks and reads nothing in.
/// (A probe by reading, even one that must not wait for the disk, starts readahead of
/// the pages after it; a prober descheduled between probes then counts pages that only
/// the probe itself brought back.)
pub fn cached_pages(file: &File, from: u64, to: u64) -> io::Result<usize> {
    let len = usize::try_from(to)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "range out of reach"))?;
    if len == 0 {
        return Ok(0);
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    // SAFETY: a new read-only shared mapping of `len` bytes of a descriptor `file` owns,
    // placed by the kernel; nothing reads through it, and it is unmapped below.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if at == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut resident = vec![0u8; len.div_ceil(page)];
    // SAFETY: `at..at + len` is the mapping just made; `resident` holds one byte for each
    // of its pages, and mincore writes only into it.
    let rc = unsafe { libc::mincore(at, len, resident.as_mut_ptr()) };
    let err = io::Error::last_os_error();
    // SAFETY: the mapping made above, of `len` bytes; nothing refers to it any more.
    unsafe { libc::munmap(at, len) };
    if rc != 0 {
        return Err(err);
    }
    let first = usize::try_from(from).map_or(resident.len(), |f| f / page);
    Ok(resident
        .get(first..)
        .map_or(0, |r| r.iter().filter(|&&b| b & 1 == 1).count()))
}

/// The inode number of an open file (to tell one memory file from another).
pub fn inode(file: &File) -> io::Result<u64> {
    Ok(file.metadata()?.ino())
}

/// Opens descriptor `fd` of process `pid` as a file of this process, read-write, and
/// checks that it is the memory file with inode `ino`: first through `pidfd_getfd` (which
/// needs ptrace rights over `pid`: the same user and, under Yama, an ancestor, or root),
/// then through `/proc/PID/fd/N` (the file's own permissions). A descriptor that is no
/// longer the published file (closed, reused for something else) is refused, never
/// opened blindly: the `/proc` path is checked with `stat` before it is opened.
pub fn open_remote(pid: u32, fd: i32, ino: u64) -> io::Result<File> {
    let mismatch = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("descriptor {fd} of process {pid} is {what}, not the published memory file (inode {ino})"),
        )
    };
    let via_pidfd = pidfd_open(pid).and_then(|pidfd| pidfd_getfd(&pidfd, fd));
    let file = match via_pidfd {
        Ok(file) => file,
        Err(pidfd_err) => {
            let path = format!("/proc/{pid}/fd/{fd}");
            // `stat` follows the link without opening anything (a FIFO would block).
            let meta = std::fs::metadata(&path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot reach descriptor {fd} of process {pid}: pidfd_getfd: {pidfd_err}; {path}: {e}"),
                )
            })?;
            if !meta.is_file() || meta.ino() != ino {
                return Err(mismatch(&format!("inode {}", meta.ino())));
            }
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)?
        }
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.ino() != ino {
        return Err(mismatch(&format!("inode {}", meta.ino())));
    }
    let link = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    if !link.to_string_lossy().starts_with("/memfd:") {
        return Err(mismatch(&format!("{}", link.display())));
    }
    Ok(file)
}

/// A process descriptor (`pidfd_open`): it names one process for good, even after its
/// pid is reused.
fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: a system call with integer arguments; it returns a fresh descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by nothing else (the kernel returns an int).
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// A duplicate, in this process, of descriptor `fd` of the process behind `pidfd`
/// (closed on exec).
fn pidfd_getfd(pidfd: &OwnedFd, fd: i32) -> io::Result<File> {
    // SAFETY: a system call with integer arguments on a pidfd we own; it returns a fresh
    // descriptor or -1.
    let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by nothing else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(got as i32) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_punched_hole_reads_zeroes_and_frees_the_pages() {
        let file = create("marvin-test", 1 << 20).unwrap();
        let mut map = map_shared(&file, 1 << 20).unwrap();
        map[..8192].fill(0xab);
        map[8192..12288].fill(0xcd);
        punch_hole(&file, 0, 8192).unwrap();
        // The file holds one page now (st_blocks counts 512-byte units; checked before
        // reading the hole, which a shared mapping fills with fresh pages).
        assert_eq!(file.metadata().unwrap().blocks() * 512, 4096);
        assert_eq!(file.metadata().unwrap().len(), 1 << 20, "the size is kept");
        assert!(map[..8192].iter().all(|&b| b == 0));
        assert!(map[8192..12288].iter().all(|&b| b == 0xcd));
    }

    #[test]
    fn reserve_allocates_every_block_and_refuses_a_range_past_off_t() {
        let file = tempfile::tempfile().unwrap();
        reserve(&file, 0, 64 << 10).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 64 << 10, "grown to the end");
        assert!(
            file.metadata().unwrap().blocks() * 512 >= 64 << 10,
            "blocks allocated"
        );
        reserve(&file, 64 << 10, 4096).unwrap();
        assert_eq!(file.metadata().unwrap().len(), (64 << 10) + 4096);
        let err = reserve(&file, u64::MAX - 1, 1).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EFBIG), "{err}");
        let read_only = std::fs::File::open("/proc/self/exe").unwrap();
        assert!(reserve(&read_only, 0, 4096).is_err());
    }

    #[test]
    fn our_own_descriptor_opens_by_inode_and_a_wrong_inode_is_refused() {
        let file = create("marvin-test", 4096).unwrap();
        let ino = inode(&file).unwrap();
        let pid = std::process::id();
        let other = open_remote(pid, file.as_raw_fd(), ino).unwrap();
        assert_eq!(inode(&other).unwrap(), ino);
        let err = open_remote(pid, file.as_raw_fd(), ino + 1).unwrap_err();
        assert!(
            err.to_string().contains("not the published memory file"),
            "{err}"
        );
        // A descriptor that is not a memory file (stdin may be anything: use a pipe-free
        // regular temp file) is refused even with its own inode.
        let tmp = tempfile::tempfile().unwrap();
        let err = open_remote(pid, tmp.as_raw_fd(), inode(&tmp).unwrap()).unwrap_err();
        assert!(
            err.to_string().contains("not the published memory file"),
            "{err}"
        );
    }
}
