//! The region directory: where an app's memory-file-backed large-object regions are, so
//! that a reclaimer in another process can turn an object's address into (memory file,
//! offset) and punch the hole itself.
//!
//! A small side file next to the app's reclaim table (`NAME.regions` in its swap
//! directory), rewritten whole (to a temporary name, then renamed over) each time a
//! region is added: a reader sees the old directory or the new one, never a half-written
//! one. Regions are added rarely (one per 256 MiB), so nothing here is on a hot path.
//!
//! Layout (little-endian):
//!
//! ```text
//! offset 0   8 bytes  magic "MVREGDR1"
//! offset 8   u32      format version (1)
//! offset 12  u32      entry size in bytes (32)
//! offset 16  u32      pid of the process whose descriptors are listed
//! offset 20  u32      region count n (at most MAX_REGIONS)
//! offset 24  u32      page size the addresses are aligned to (4096)
//! offset 28  u32      CRC-32 of the whole file with this field zero
//! offset 32  n entries of 32 bytes:
//!            u64 base address, u64 length in bytes,
//!            i32 descriptor number in the owner, u32 zero, u64 inode of the memory file
//! ```
//!
//! [`RegionDirectory::decode`] checks every field (magic, version, sizes, checksum,
//! alignment, overlap) before anything uses it: a damaged or foreign file is an error
//! that says what is wrong.

use std::path::Path;

use super::large_space::PAGE;
use crate::swap_folder::{FolderError, SwapFolder};

const MAGIC: &[u8; 8] = b"MVREGDR1";
const VERSION: u32 = 1;
const HEADER_BYTES: usize = 32;
const ENTRY_BYTES: usize = 32;
/// The most regions a directory lists (256 GiB of 256 MiB regions).
pub const MAX_REGIONS: usize = 1024;

/// One region: `len` bytes mapped at `base` in the owner, backed by the memory file that
/// is the owner's descriptor `fd`, inode `ino`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionRecord {
    pub base: u64,
    pub len: u64,
    pub fd: i32,
    pub ino: u64,
}

/// The regions of one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionDirectory {
    pub pid: u32,
    /// Sorted by base address, never overlapping.
    pub regions: Vec<RegionRecord>,
}

/// Why a region directory was refused.
#[derive(Debug, thiserror::Error)]
pub enum RegionDirError {
    #[error("region directory {path}: cannot {op}: {source}")]
    Io {
        op: &'static str,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid region directory: {reason}")]
    Invalid {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error(transparent)]
    Folder(#[from] FolderError),
}

impl RegionDirectory {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.regions.len() * ENTRY_BYTES);
        out.extend_from_slice(MAGIC);
        for v in [
            VERSION,
            ENTRY_BYTES as u32,
            self.pid,
            self.regions.len() as u32,
            PAGE as u32,
            0,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for r in &self.regions {
            out.extend_from_slice(&r.base.to_le_bytes());
            out.extend_from_slice(&r.len.to_le_bytes());
            out.extend_from_slice(&r.fd.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&r.ino.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out[28..32].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Parses and checks a directory's bytes; the error says what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<RegionDirectory, String> {
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
        if bytes.len() < HEADER_BYTES {
            return Err(format!("{} bytes is shorter than the header", bytes.len()));
        }
        if &bytes[0..8] != MAGIC {
            return Err(format!("bad magic {:02x?}", &bytes[0..8]));
        }
        if u32_at(8) != VERSION {
            return Err(format!("format version {} (expected {VERSION})", u32_at(8)));
        }
        if u32_at(12) as usize != ENTRY_BYTES {
            return Err(format!(
                "entry size {} (expected {ENTRY_BYTES})",
                u32_at(12)
            ));
        }
        let n = u32_at(20) as usize;
        if n > MAX_REGIONS {
            return Err(format!("{n} regions (at most {MAX_REGIONS})"));
        }
        if bytes.len() != HEADER_BYTES + n * ENTRY_BYTES {
            return Err(format!(
                "{} bytes for {n} regions (expected {})",
                bytes.len(),
                HEADER_BYTES + n * ENTRY_BYTES
            ));
        }
        if u32_at(24) as usize != PAGE {
            return Err(format!("page size {} (expected {PAGE})", u32_at(24)));
        }
        let mut zeroed = bytes.to_vec();
        zeroed[28..32].fill(0);
        let crc = crc32fast::hash(&zeroed);
        if crc != u32_at(28) {
            return Err(format!(
                "checksum {:#010x} does not match the contents ({crc:#010x})",
                u32_at(28)
            ));
        }
        let mut regions = Vec::with_capacity(n);
        for i in 0..n {
            let o = HEADER_BYTES + i * ENTRY_BYTES;
            let r = RegionRecord {
                base: u64_at(o),
                len: u64_at(o + 8),
                fd: u32_at(o + 16) as i32,
                ino: u64_at(o + 24),
            };
            let page = PAGE as u64;
            if !r.base.is_multiple_of(page) || !r.len.is_multiple_of(page) || r.len == 0 {
                return Err(format!(
                    "region {i} ({:#x}, {} bytes) is not whole pages",
                    r.base, r.len
                ));
            }
            if r.base.checked_add(r.len).is_none() {
                return Err(format!("region {i} wraps around the address space"));
            }
            if r.fd < 0 {
                return Err(format!("region {i} has descriptor {}", r.fd));
            }
            regions.push(r);
        }
        regions.sort_unstable_by_key(|r| r.base);
        if let Some(w) = regions
            .windows(2)
            .find(|w| w[0].base + w[0].len > w[1].base)
        {
            return Err(format!(
                "regions at {:#x} and {:#x} overlap",
                w[0].base, w[1].base
            ));
        }
        Ok(RegionDirectory {
            pid: u32_at(16),
            regions,
        })
    }

    /// Writes the directory to `path`: to a temporary file beside it, then renamed over
    /// it, so readers never see a partial directory.
    pub fn write(&self, path: &Path) -> Result<(), RegionDirError> {
        let io = |op, source| RegionDirError::Io {
            op,
            path: path.to_owned(),
            source,
        };
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        std::fs::write(&tmp, self.encode()).map_err(|e| io("write", e))?;
        std::fs::rename(&tmp, path).map_err(|e| io("rename into place", e))
    }

    /// Writes the directory as `name` in a swap folder: to `NAME.tmp`, created new, then
    /// renamed over `name`, which must be nothing yet or this run's own file (never a link
    /// or another user's file: [`SwapFolder::rename_own`]).
    pub fn write_in(&self, folder: &SwapFolder, name: &str) -> Result<(), RegionDirError> {
        use std::io::Write;
        let tmp = format!("{name}.tmp");
        let mut file = folder.create_new(&tmp)?;
        let written = file.write_all(&self.encode()).and_then(|()| file.flush());
        let result = match written {
            Ok(()) => folder
                .open_own(name)
                .and_then(|current| folder.rename_own((&tmp, &file), (name, current.as_ref())))
                .map_err(RegionDirError::from),
            Err(source) => Err(RegionDirError::Io {
                op: "write",
                path: folder.path_of(&tmp),
                source,
            }),
        };
        if result.is_err() {
            let _ = folder.remove(&tmp);
        }
        result
    }

    /// Reads and checks the directory at `path`.
    pub fn read(path: &Path) -> Result<RegionDirectory, RegionDirError> {
        use std::io::Read;
        let io = |op, source| RegionDirError::Io {
            op,
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(|e| io("open", e))?;
        // Never read more than the largest valid directory (and one byte to notice).
        let limit = (HEADER_BYTES + MAX_REGIONS * ENTRY_BYTES + 1) as u64;
        let mut bytes = Vec::new();
        file.take(limit)
            .read_to_end(&mut bytes)
            .map_err(|e| io("read", e))?;
        RegionDirectory::decode(&bytes).map_err(|reason| RegionDirError::Invalid {
            path: path.to_owned(),
            reason,
        })
    }

    /// The region holding `[addr, addr + len)` whole, and the offset of `addr` in it.
    pub fn locate(&self, addr: u64, len: u64) -> Option<(usize, u64)> {
        let i = self
            .regions
            .partition_point(|r| r.base <= addr)
            .checked_sub(1)?;
        let r = &self.regions[i];
        let off = addr - r.base;
        (off.checked_add(len)? <= r.len).then_some((i, off))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RegionDirectory {
        RegionDirectory {
            pid: 42,
            regions: vec![
                RegionRecord {
                    base: 0x7f00_0000_0000,
                    len: 256 << 20,
                    fd: 5,
                    ino: 1001,
                },
                RegionRecord {
                    base: 0x7e00_0000_0000,
                    len: 1 << 20,
                    fd: 6,
                    ino: 1002,
                },
            ],
        }
    }

    #[test]
    fn round_trips_and_locates() {
        let d = sample();
        let back = RegionDirectory::decode(&d.encode()).unwrap();
        assert_eq!(back.pid, 42);
        // Sorted by base on the way in.
        assert_eq!(back.regions[0].base, 0x7e00_0000_0000);
        assert_eq!(back.locate(0x7f00_0000_2000, 4096), Some((1, 0x2000)));
        assert_eq!(back.locate(0x7e00_0000_0000 + (1 << 20) - 4096, 8192), None);
        assert_eq!(back.locate(0x1000, 4096), None);
    }

    #[test]
    fn every_damage_is_refused_with_a_reason() {
        let good = sample().encode();
        let mut cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..20].to_vec(), "shorter than the header"),
            (good[..good.len() - 1].to_vec(), "bytes for 2 regions"),
            (vec![0xff; good.len()], "bad magic"),
        ];
        let mut flipped = good.clone();
        flipped[40] ^= 1;
        cases.push((flipped, "checksum"));
        let mut version = good.clone();
        version[8] = 9;
        cases.push((version, "format version 9"));
        let mut many = good.clone();
        many[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        cases.push((many, "regions (at most"));
        for (bytes, want) in cases {
            let err = RegionDirectory::decode(&bytes).unwrap_err();
            assert!(err.contains(want), "{err} (expected {want})");
        }
        // Well-formed but inconsistent entries, with a valid checksum.
        let mut d = sample();
        d.regions[1].base = 0x7f00_0000_1000;
        let err = RegionDirectory::decode(&d.encode()).unwrap_err();
        assert!(err.contains("overlap"), "{err}");
        let mut d = sample();
        d.regions[0].len = 100;
        let err = RegionDirectory::decode(&d.encode()).unwrap_err();
        assert!(err.contains("not whole pages"), "{err}");
        let mut d = sample();
        d.regions[0].fd = -1;
        let err = RegionDirectory::decode(&d.encode()).unwrap_err();
        assert!(err.contains("descriptor -1"), "{err}");
    }

    #[test]
    fn written_files_are_read_back_and_garbage_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.regions");
        sample().write(&path).unwrap();
        assert_eq!(RegionDirectory::read(&path).unwrap().regions.len(), 2);
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let err = RegionDirectory::read(&path).unwrap_err().to_string();
        assert!(err.contains("is not a valid region directory"), "{err}");
        let err = RegionDirectory::read(&dir.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot open"), "{err}");
    }
}
