//! The header that makes a file or block device a Linux swap area (what `mkswap`
//! writes), so the run needs no util-linux: page 0 holds, after 1024 bytes left for
//! boot loaders, `version` = 1, `last_page`, `nr_badpages` = 0, a 16-byte UUID and a
//! 16-byte label (`struct swap_header` in Linux's `include/linux/swap.h`, all native-endian),
//! and ends with the magic `SWAPSPACE2` in its last 10 bytes.

/// The magic at the end of the first page.
pub const MAGIC: &[u8; 10] = b"SWAPSPACE2";
const VERSION_OFFSET: usize = 1024;
const LAST_PAGE_OFFSET: usize = 1028;
const NR_BADPAGES_OFFSET: usize = 1032;
const UUID_OFFSET: usize = 1036;
const LABEL_OFFSET: usize = 1052;
/// The smallest swap area this layer makes (the kernel takes fewer, but a few pages of
/// swap are no use).
pub const MIN_PAGES: u64 = 16;

/// The first page of a swap area of `pages` pages of `page_size` bytes, labelled
/// `label` (cut to 16 bytes) with `uuid`.
pub fn header(page_size: usize, pages: u64, uuid: [u8; 16], label: &str) -> Vec<u8> {
    assert!(
        page_size >= 4096 && page_size.is_power_of_two(),
        "page size {page_size}"
    );
    assert!(
        (MIN_PAGES..=u32::MAX as u64 + 1).contains(&pages),
        "{pages} pages"
    );
    let mut page = vec![0u8; page_size];
    page[VERSION_OFFSET..VERSION_OFFSET + 4].copy_from_slice(&1u32.to_ne_bytes());
    page[LAST_PAGE_OFFSET..LAST_PAGE_OFFSET + 4]
        .copy_from_slice(&((pages - 1) as u32).to_ne_bytes());
    page[NR_BADPAGES_OFFSET..NR_BADPAGES_OFFSET + 4].copy_from_slice(&0u32.to_ne_bytes());
    page[UUID_OFFSET..UUID_OFFSET + 16].copy_from_slice(&uuid);
    let label = &label.as_bytes()[..label.len().min(16)];
    page[LABEL_OFFSET..LABEL_OFFSET + label.len()].copy_from_slice(label);
    page[page_size - MAGIC.len()..].copy_from_slice(MAGIC);
    page
}

/// A random version-4 UUID.
pub fn random_uuid() -> [u8; 16] {
    let mut u: [u8; 16] = rand::random();
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(page: &[u8], off: usize) -> u32 {
        u32::from_ne_bytes(page[off..off + 4].try_into().unwrap())
    }

    #[test]
    fn header_fields_sit_where_the_kernel_reads_them() {
        let uuid = random_uuid();
        let page = header(4096, 256, uuid, "marvin");
        assert_eq!(page.len(), 4096);
        assert!(page[..1024].iter().all(|&b| b == 0), "boot bits stay zero");
        assert_eq!(u32_at(&page, 1024), 1, "version");
        assert_eq!(u32_at(&page, 1028), 255, "last_page = pages - 1");
        assert_eq!(u32_at(&page, 1032), 0, "no bad pages");
        assert_eq!(&page[1036..1052], &uuid);
        assert_eq!(&page[1052..1058], b"marvin");
        assert_eq!(&page[4086..], b"SWAPSPACE2");
        // A larger page puts the magic at the end of that page.
        let page = header(16384, 64, uuid, "a label longer than sixteen bytes");
        assert_eq!(&page[16384 - 10..], MAGIC);
        assert_eq!(&page[1052..1068], b"a label longer t");
        assert_eq!(uuid[6] >> 4, 4, "UUID version 4");
    }

    #[test]
    fn matches_mkswap_where_it_is_installed() {
        // util-linux's mkswap writes the same fields; compare with it when present.
        let Ok(dir) = tempfile::tempdir() else { return };
        let f = dir.path().join("s");
        std::fs::write(&f, vec![0u8; 64 * 4096]).unwrap();
        let uuid = "c0ffee00-1234-4abc-8def-0123456789ab";
        let status = std::process::Command::new("mkswap")
            .args(["-U", uuid, "-L", "marvin", "-p", "4096"])
            .arg(&f)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        let Ok(status) = status else {
            println!("skipped: no mkswap to compare with");
            return;
        };
        if !status.success() {
            println!("skipped: mkswap failed here");
            return;
        }
        let theirs = std::fs::read(&f).unwrap();
        let hex: String = uuid.chars().filter(|c| *c != '-').collect();
        let bytes: Vec<u8> = (0..16)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let ours = header(4096, 64, bytes.try_into().unwrap(), "marvin");
        assert_eq!(
            &theirs[..4096],
            &ours[..],
            "our header is byte for byte mkswap's"
        );
    }
}
