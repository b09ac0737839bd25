//! Prefaulting the pages a restore is about to fill, in bulk
//! (`madvise(MADV_POPULATE_WRITE)`): a read into pages the reclaimer returned to the OS
//! otherwise takes one page fault per 4 KiB page inside the kernel's copy, each an
//! exception and a walk of the page tables. The only unsafe code of the eager restore.

/// Makes the pages of `[addr, addr + len)` resident and writable without writing to them
/// (what a write to each page would do, minus the faults). `addr` must be page-aligned.
/// An error (a kernel before 5.14, which lacks the advice; a range not mapped) leaves
/// the pages to fault in on first touch, as without it: callers ignore it.
pub fn populate_write(addr: usize, len: usize) -> std::io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: the advice only faults pages in as a write would, without writing: no
    // byte of any mapping changes, and a range that is not a writable mapping of ours
    // fails with an error instead of touching it.
    let rc = unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Coalesces page-aligned runs `(addr, len)`, given in any order, into maximal
/// contiguous ones, sorted by address: one advice per run instead of one per object.
pub fn coalesce(mut runs: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    runs.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(runs.len());
    for (addr, len) in runs {
        match out.last_mut() {
            Some((a, l)) if *a + *l >= addr => *l = (*l).max(addr + len - *a),
            _ => out.push((addr, len)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_coalesce_and_gaps_split() {
        let runs = vec![
            (8192, 4096),
            (0, 4096),
            (4096, 4096),
            (20480, 8192),
            (24576, 4096),
        ];
        assert_eq!(coalesce(runs), vec![(0, 12288), (20480, 8192)]);
        assert!(coalesce(Vec::new()).is_empty());
    }

    #[test]
    fn populated_pages_keep_their_bytes() {
        let len = 16 * 4096;
        let mut map = memmap2::MmapMut::map_anon(len).unwrap();
        map[5 * 4096] = 7;
        // Older kernels refuse the advice; the bytes stay what they were either way.
        let _ = populate_write(map.as_ptr() as usize, len);
        assert_eq!(map[5 * 4096], 7);
        assert!(map
            .iter()
            .enumerate()
            .all(|(i, &b)| b == 0 || i == 5 * 4096));
    }
}
