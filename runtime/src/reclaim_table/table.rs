//! The table itself: a header and a fixed array of entries in one shared memory map, the
//! runtime's owner handle ([`ReclaimTable`], which inserts and removes) and a reclaimer's
//! view of an existing table file ([`ReclaimTableView`], which only locks and reads).
//!
//! File layout (little-endian): a 64-byte header, then `capacity` [`Entry`]s of 32 bytes.
//!
//! ```text
//! offset 0   u64  magic  "MVRCLMT1"
//! offset 8   u32  format version (2)
//! offset 12  u32  entry size in bytes (32)
//! offset 16  u32  capacity (entries)
//! offset 20  u32  the owner's pid
//! offset 24  u32  app flags (bit 0: the app is in the foreground; bit 1: its saver is saving
//!                 its cold objects after a background transition)
//! offset 28  u32  one past the highest entry index ever handed out (scans stop there)
//! offset 32  u64  bytes reclaimed from outside the app (by another process)
//! offset 40  u64  objects reclaimed from outside the app
//! offset 48  [u8; 16] the owner's run id
//! ```
//!
//! The owner's pid and run id ([`RunIdentity`]) let a reader refuse another run's table
//! ([`ReclaimTableView::owner`]).
//!
//! Every field another process may write is an atomic in the map, reached only through
//! lock-free atomics (address-free, so they work across processes). Nothing in or on the
//! map uses a futex or any other process-private lock: the entry lock spins
//! (`lock.rs`), and the runtime's free list is in its own memory, not in the map.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::MmapMut;
use parking_lot::Mutex;

use super::entry::{Entry, EntryError, EntryId};
use crate::run_identity::RunIdentity;
use crate::swap_folder::{FolderError, SwapFolder};

const MAGIC: u64 = u64::from_le_bytes(*b"MVRCLMT1");
const VERSION: u32 = 2;
const HEADER_BYTES: usize = 64;
/// Bytes of one entry in the table's map.
pub const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();
const APP_FOREGROUND: u32 = 1;
const APP_SAVING: u32 = 2;
/// The page size the table's resident bytes are rounded to.
const PAGE_BYTES: usize = 4096;

/// The largest capacity a table accepts (16 M entries, 512 MiB of table).
pub const MAX_CAPACITY: u32 = 1 << 24;

#[repr(C)]
struct TableHeader {
    magic: u64,
    version: u32,
    entry_bytes: u32,
    capacity: u32,
    owner_pid: u32,
    app_flags: AtomicU32,
    /// One past the highest index ever handed out, so a reclaimer in another process
    /// scans only the part of the table in use.
    high_water: AtomicU32,
    /// Bytes and objects a reclaimer in another process returned to the OS (the app's
    /// own reclaims are booked in its memory).
    reclaimed_out_bytes: AtomicU64,
    reclaimed_out_objects: AtomicU64,
    owner_run: [u8; 16],
}

const _: () = assert!(std::mem::size_of::<TableHeader>() == HEADER_BYTES);
const _: () = assert!(ENTRY_BYTES == 32);

/// The table has no free entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("reclaim table is full ({capacity} entries)")]
pub struct TableFull {
    /// The table's capacity.
    pub capacity: u32,
}

/// Why a table could not be created, opened or changed.
#[derive(Debug, thiserror::Error)]
pub enum ReclaimTableError {
    /// The table file could not be created, opened, sized or mapped.
    #[error("reclaim table {path}: cannot {op}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The table file ("<anonymous>" for an anonymous table).
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not a reclaim table this version can read.
    #[error("{path} is not a reclaim table: {reason}")]
    NotATable {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The requested capacity is zero or above [`MAX_CAPACITY`].
    #[error("reclaim table capacity {capacity} is out of range (1..={MAX_CAPACITY})")]
    BadCapacity {
        /// The capacity asked for.
        capacity: u32,
    },
    /// The id does not name an entry of this table.
    #[error("reclaim table entry {id} does not exist (capacity {capacity})")]
    UnknownEntry {
        /// The id given.
        id: EntryId,
        /// The table's capacity.
        capacity: u32,
    },
    /// The entry is already free.
    #[error("reclaim table entry {id} is not occupied")]
    NotOccupied {
        /// The id given.
        id: EntryId,
    },
    /// The entry could not be emptied (it stays taken, never reused).
    #[error("reclaim table {table}: entry {id} cannot be removed: {reason}")]
    Entry {
        /// The table.
        table: String,
        /// The entry.
        id: EntryId,
        /// Why.
        reason: EntryError,
    },
    /// The table's name in its swap folder is taken by something the run did not make.
    #[error(transparent)]
    Folder(#[from] FolderError),
}

impl ReclaimTableError {
    /// Whether the table did not fit on its file system (no space left, or a file size
    /// limit): the swap directory is full.
    pub fn is_disk_full(&self) -> bool {
        let source = match self {
            ReclaimTableError::Io { source, .. } => Some(source),
            ReclaimTableError::Folder(f) => f.io_error(),
            _ => None,
        };
        source.is_some_and(|source| {
            matches!(
                source.raw_os_error(),
                Some(libc::ENOSPC | libc::EFBIG | libc::EDQUOT)
            )
        })
    }
}

/// Who made a table, as its header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableOwner {
    /// The owner's pid.
    pub pid: u32,
    /// The owner's run id.
    pub run: [u8; 16],
}

/// The memory map holding a table, and the only place that casts it.
struct Mapping {
    map: MmapMut,
    capacity: u32,
    path: Option<PathBuf>,
}

impl Mapping {
    fn bytes_for(capacity: u32) -> usize {
        HEADER_BYTES + capacity as usize * ENTRY_BYTES
    }

    /// Writes a fresh header, naming this run as the owner, into an all-zero map of the
    /// right size.
    fn init(mut map: MmapMut, capacity: u32, path: Option<PathBuf>) -> Mapping {
        let owner = RunIdentity::current();
        map[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        map[8..12].copy_from_slice(&VERSION.to_le_bytes());
        map[12..16].copy_from_slice(&(ENTRY_BYTES as u32).to_le_bytes());
        map[16..20].copy_from_slice(&capacity.to_le_bytes());
        map[20..24].copy_from_slice(&owner.pid.to_le_bytes());
        map[48..64].copy_from_slice(&owner.id);
        Mapping {
            map,
            capacity,
            path,
        }
    }

    /// Checks the header of an existing map before any cast.
    fn validate(map: MmapMut, path: &Path) -> Result<Mapping, ReclaimTableError> {
        let bad = |reason: String| ReclaimTableError::NotATable {
            path: path.to_owned(),
            reason,
        };
        if map.len() < HEADER_BYTES {
            return Err(bad(format!(
                "{} bytes is shorter than the header",
                map.len()
            )));
        }
        // Read the header through the typed view only (capacity 0: no entries cast yet).
        let probe = Mapping {
            map,
            capacity: 0,
            path: Some(path.to_owned()),
        };
        let header = probe.header();
        if header.magic != MAGIC {
            return Err(bad(format!("bad magic {:#018x}", header.magic)));
        }
        if header.version != VERSION {
            return Err(bad(format!(
                "format version {} (expected {VERSION})",
                header.version
            )));
        }
        if header.entry_bytes as usize != ENTRY_BYTES {
            return Err(bad(format!(
                "entry size {} (expected {ENTRY_BYTES})",
                header.entry_bytes
            )));
        }
        let capacity = header.capacity;
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(bad(format!("capacity {capacity} out of range")));
        }
        let len = probe.map.len();
        if len < Self::bytes_for(capacity) {
            return Err(bad(format!(
                "{len} bytes is too short for {capacity} entries ({} bytes)",
                Self::bytes_for(capacity)
            )));
        }
        Ok(Mapping { capacity, ..probe })
    }

    fn header(&self) -> &TableHeader {
        // SAFETY: the map is at least HEADER_BYTES long (`init` gets a map of the full size,
        // `validate` checks the length before building a Mapping) and
        // page-aligned, which satisfies TableHeader's alignment of 8. Every bit pattern is a
        // valid TableHeader (integers and an atomic). The plain fields are never written after
        // init, and from here on the map is only reached through shared references, so no
        // `&mut` aliases this one. The reference lives no longer than `self`, which owns the map.
        unsafe { &*(self.map.as_ptr() as *const TableHeader) }
    }

    fn entries(&self) -> &[Entry] {
        // SAFETY: the map holds HEADER_BYTES + capacity * ENTRY_BYTES bytes (checked at
        // init/validate); HEADER_BYTES is a multiple of Entry's alignment (8) and the map is
        // page-aligned, so the entries are aligned. An Entry is made of atomics only, every bit
        // pattern is valid, and all access goes through those atomics (other processes
        // mapping the file use the same atomics: lock-free atomics are address-free). No
        // `&mut` to the map is taken after init. The slice lives no longer than `self`.
        unsafe {
            std::slice::from_raw_parts(
                self.map.as_ptr().add(HEADER_BYTES) as *const Entry,
                self.capacity as usize,
            )
        }
    }

    fn entry(&self, id: EntryId) -> Option<&Entry> {
        self.entries().get(id.index() as usize)
    }

    fn describe(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => "<anonymous>".to_string(),
        }
    }

    fn owner(&self) -> TableOwner {
        let h = self.header();
        TableOwner {
            pid: h.owner_pid,
            run: h.owner_run,
        }
    }

    fn is_foreground(&self) -> bool {
        // Acquire: pairs with the Release in `set_foreground`.
        self.header().app_flags.load(Ordering::Acquire) & APP_FOREGROUND != 0
    }

    fn is_saving(&self) -> bool {
        // Relaxed: a hint for the System's killer; no data is published with it.
        self.header().app_flags.load(Ordering::Relaxed) & APP_SAVING != 0
    }

    fn set_saving(&self, on: bool) {
        let flags = &self.header().app_flags;
        if on {
            flags.fetch_or(APP_SAVING, Ordering::Relaxed);
        } else {
            flags.fetch_and(!APP_SAVING, Ordering::Relaxed);
        }
    }

    /// The published scan bound, never above the capacity (whatever the file holds).
    fn high_water(&self) -> u32 {
        // Acquire: pairs with the Release in `publish_high_water`, so the entries below
        // the bound were occupied (or are free again) before it was read.
        self.header()
            .high_water
            .load(Ordering::Acquire)
            .min(self.capacity)
    }

    fn publish_high_water(&self, bound: u32) {
        self.header().high_water.fetch_max(bound, Ordering::Release);
    }

    fn reclaimed_out(&self) -> (u64, u64) {
        let h = self.header();
        // Relaxed: counters; the entries' flags carry the ordering that matters.
        (
            h.reclaimed_out_bytes.load(Ordering::Relaxed),
            h.reclaimed_out_objects.load(Ordering::Relaxed),
        )
    }

    fn book_reclaimed_out(&self, objects: u64, bytes: u64) {
        let h = self.header();
        h.reclaimed_out_bytes.fetch_add(bytes, Ordering::Relaxed);
        h.reclaimed_out_objects
            .fetch_add(objects, Ordering::Relaxed);
    }

    fn set_foreground(&self, on: bool) {
        let flags = &self.header().app_flags;
        // Release: the reclaimer that reads "background" also sees what the app did before.
        if on {
            flags.fetch_or(APP_FOREGROUND, Ordering::Release);
        } else {
            flags.fetch_and(!APP_FOREGROUND, Ordering::Release);
        }
    }
}

fn open_rw(path: &Path, create: bool) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(create)
        // A reclaimer never maps a link placed under a table's name.
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// The free indices of a table: those freed since they were handed out (a stack, the top
/// handed out first), then the never used ones from `fresh` up. It holds at most as many
/// indices as were ever in use at once, not the capacity.
#[derive(Default)]
struct FreeList {
    freed: Vec<u32>,
    /// The lowest index never handed out.
    fresh: u32,
}

/// The runtime's reclaim table for one app: it inserts and removes entries; reclaimers lock
/// and read them, in this process through `&ReclaimTable`, or in another through a
/// [`ReclaimTableView`] of the same file.
pub struct ReclaimTable {
    mapping: Mapping,
    /// Which indices are free.
    free: Mutex<FreeList>,
    /// One past the highest index ever handed out: scans stop here, so a large table
    /// with few entries costs only the pages it uses.
    high: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for ReclaimTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReclaimTable")
            .field("at", &self.mapping.describe())
            .field("capacity", &self.mapping.capacity)
            .field("occupied", &self.len())
            .finish()
    }
}

impl ReclaimTable {
    /// Creates (or truncates) the table file at `path` with room for `capacity` entries and
    /// maps it shared, so another process can open it with [`ReclaimTableView::open`].
    pub fn create(path: &Path, capacity: u32) -> Result<ReclaimTable, ReclaimTableError> {
        check_capacity(capacity)?;
        let file = open_rw(path, true).map_err(|source| ReclaimTableError::Io {
            op: "create the file",
            path: path.to_owned(),
            source,
        })?;
        ReclaimTable::map_new(file, path, capacity).inspect_err(|_| {
            let _ = std::fs::remove_file(path);
        })
    }

    /// [`ReclaimTable::create`] of the file `name` in a swap folder, created new and never
    /// through a link ([`SwapFolder::create_new`]).
    pub fn create_in(
        folder: &SwapFolder,
        name: &str,
        capacity: u32,
    ) -> Result<ReclaimTable, ReclaimTableError> {
        check_capacity(capacity)?;
        let file = folder.create_new(name)?;
        ReclaimTable::map_new(file, &folder.path_of(name), capacity).inspect_err(|_| {
            let _ = folder.remove(name);
        })
    }

    /// Sizes `file` (new, empty, at `path`) for `capacity` entries and maps it as a table.
    /// On an error the caller removes the half-made file.
    fn map_new(file: File, path: &Path, capacity: u32) -> Result<ReclaimTable, ReclaimTableError> {
        let io = |op, source| ReclaimTableError::Io {
            op,
            path: path.to_owned(),
            source,
        };
        // Every block of the file is allocated now: a sparse file on a file system that
        // fills up would make the first touch of a new page of the map a SIGBUS. A table
        // that does not fit is not left behind half made.
        crate::memfd::reserve(&file, 0, Mapping::bytes_for(capacity) as u64)
            .map_err(|e| io("reserve the file's space", e))?;
        // SAFETY: MAP_SHARED of a file this table just created and sized. The file may be
        // opened by reclaimer processes, which touch it only through the same atomics; a
        // process that truncated or rewrote it would break the table's contract, and no
        // cooperating process does.
        let map = unsafe { MmapMut::map_mut(&file) }.map_err(|e| io("map the file", e))?;
        Ok(ReclaimTable::with_mapping(Mapping::init(
            map,
            capacity,
            Some(path.to_owned()),
        )))
    }

    /// An anonymous, process-private table (for tests and single-process setups).
    pub fn anonymous(capacity: u32) -> Result<ReclaimTable, ReclaimTableError> {
        check_capacity(capacity)?;
        let map = MmapMut::map_anon(Mapping::bytes_for(capacity)).map_err(|source| {
            ReclaimTableError::Io {
                op: "map memory",
                path: PathBuf::from("<anonymous>"),
                source,
            }
        })?;
        Ok(ReclaimTable::with_mapping(Mapping::init(
            map, capacity, None,
        )))
    }

    fn with_mapping(mapping: Mapping) -> ReclaimTable {
        ReclaimTable {
            mapping,
            free: Mutex::new(FreeList::default()),
            high: std::sync::atomic::AtomicU32::new(0),
        }
    }

    /// The table file, if it has one.
    pub fn path(&self) -> Option<&Path> {
        self.mapping.path.as_deref()
    }

    /// The number of entries the table holds.
    pub fn capacity(&self) -> u32 {
        self.mapping.capacity
    }

    /// The number of occupied entries.
    pub fn len(&self) -> usize {
        let free = self.free.lock();
        (free.fresh as usize) - free.freed.len()
    }

    /// Bytes of the table's map the table has touched: its header and every entry up to
    /// the highest index ever handed out, in whole pages (what the process holds
    /// resident for it at most), plus its free list.
    pub fn resident_bytes(&self) -> usize {
        let free = self.free.lock();
        let mapped = Mapping::bytes_for(free.fresh).div_ceil(PAGE_BYTES) * PAGE_BYTES;
        mapped + free.freed.capacity() * std::mem::size_of::<u32>()
    }

    /// Whether no entry is occupied.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records an object at `addr` of `size` bytes, owned by handle `owner`. The entry starts
    /// OCCUPIED and RESIDENT, not saved, clean or cold.
    pub fn insert(&self, addr: u64, size: u64, owner: u64) -> Result<EntryId, TableFull> {
        let index = {
            let mut free = self.free.lock();
            match free.freed.pop() {
                Some(index) => index,
                None if free.fresh < self.capacity() => {
                    free.fresh += 1;
                    free.fresh - 1
                }
                None => {
                    return Err(TableFull {
                        capacity: self.capacity(),
                    })
                }
            }
        };
        let id = EntryId::from_index(index);
        self.mapping.entries()[index as usize].occupy(addr, size, owner);
        // Release: a scan that sees the new bound sees the occupied entry.
        self.high
            .fetch_max(index + 1, std::sync::atomic::Ordering::Release);
        // And the same bound for reclaimers in other processes.
        self.mapping.publish_high_water(index + 1);
        Ok(id)
    }

    /// Empties an entry and makes it free for reuse. Waits (briefly) for a reclaimer that
    /// holds the entry, so a reclaimer never acts on an entry after it was removed.
    pub fn remove(&self, id: EntryId) -> Result<(), ReclaimTableError> {
        let entry = self.get(id).ok_or(ReclaimTableError::UnknownEntry {
            id,
            capacity: self.capacity(),
        })?;
        // The free-list lock also serialises removes, so one entry is never freed twice.
        let mut free = self.free.lock();
        if !entry.is_occupied() {
            return Err(ReclaimTableError::NotOccupied { id });
        }
        // An entry that cannot be emptied is never handed out again.
        entry.vacate().map_err(|reason| ReclaimTableError::Entry {
            table: self.describe(),
            id,
            reason,
        })?;
        free.freed.push(id.index());
        Ok(())
    }

    /// The table's file, or `<anonymous>`, for messages.
    pub fn describe(&self) -> String {
        self.mapping.describe()
    }

    /// The entry `id`.
    ///
    /// # Panics
    /// If `id` is not below the capacity (ids from [`ReclaimTable::insert`] always are).
    pub fn entry(&self, id: EntryId) -> &Entry {
        match self.get(id) {
            Some(entry) => entry,
            None => panic!(
                "reclaim table entry {id} out of range (capacity {})",
                self.capacity()
            ),
        }
    }

    /// The entry `id`, or `None` when it is out of range.
    pub fn get(&self, id: EntryId) -> Option<&Entry> {
        self.mapping.entry(id)
    }

    /// The occupied entries, in index order (a snapshot per entry: entries may come and go).
    pub fn iter_occupied(&self) -> impl Iterator<Item = (EntryId, &Entry)> + '_ {
        // Acquire: pairs with the Release in `insert`.
        let high = self.high.load(std::sync::atomic::Ordering::Acquire) as usize;
        iter_occupied(&self.mapping.entries()[..high])
    }

    /// Whether the app is in the foreground (reclaimers leave such an app alone).
    pub fn is_foreground(&self) -> bool {
        self.mapping.is_foreground()
    }

    /// Records whether the app is in the foreground.
    pub fn set_foreground(&self, on: bool) {
        self.mapping.set_foreground(on);
    }

    /// Bytes and objects a reclaimer in another process has returned to the OS so far
    /// (cumulative; objects faulted back in are not subtracted).
    pub fn reclaimed_out(&self) -> (u64, u64) {
        self.mapping.reclaimed_out()
    }

    /// Whether the app says its saver is saving its cold objects after a background
    /// transition (more of them will soon be reclaimable).
    pub fn is_saving(&self) -> bool {
        self.mapping.is_saving()
    }

    /// Says whether the saver is saving after a background transition (a hint another
    /// process's killer reads, [`ReclaimTableView::is_saving`]).
    pub fn set_saving(&self, on: bool) {
        self.mapping.set_saving(on);
    }
}

/// A reclaimer's view of an existing table file: it locks and reads entries, and clears
/// RESIDENT through its guards; it never inserts or removes.
pub struct ReclaimTableView {
    mapping: Mapping,
}

impl std::fmt::Debug for ReclaimTableView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReclaimTableView")
            .field("at", &self.mapping.describe())
            .field("capacity", &self.mapping.capacity)
            .finish()
    }
}

impl ReclaimTableView {
    /// Maps the table file at `path` (written by [`ReclaimTable::create`]), checking its header.
    pub fn open(path: &Path) -> Result<ReclaimTableView, ReclaimTableError> {
        let io = |op, source| ReclaimTableError::Io {
            op,
            path: path.to_owned(),
            source,
        };
        let file = open_rw(path, false).map_err(|e| io("open the file", e))?;
        // SAFETY: MAP_SHARED of a table file; as in `ReclaimTable::create`, every process
        // touches the entries only through atomics, and the header is validated before use.
        let map = unsafe { MmapMut::map_mut(&file) }.map_err(|e| io("map the file", e))?;
        Ok(ReclaimTableView {
            mapping: Mapping::validate(map, path)?,
        })
    }

    /// The number of entries the table holds.
    pub fn capacity(&self) -> u32 {
        self.mapping.capacity
    }

    /// Who made the table (its header's pid and run id): a reclaimer checks it is the
    /// process it means before it acts on any entry.
    pub fn owner(&self) -> TableOwner {
        self.mapping.owner()
    }

    /// The table's file.
    pub fn path(&self) -> &Path {
        self.mapping
            .path
            .as_deref()
            .unwrap_or(Path::new("<anonymous>"))
    }

    /// The entry `id`, or `None` when it is out of range.
    pub fn get(&self, id: EntryId) -> Option<&Entry> {
        self.mapping.entry(id)
    }

    /// The occupied entries, in index order.
    pub fn iter_occupied(&self) -> impl Iterator<Item = (EntryId, &Entry)> + '_ {
        // Up to the bound the app publishes: the rest of the table was never used, and
        // reading it would only fill the page cache with zeroes.
        iter_occupied(&self.mapping.entries()[..self.high_water() as usize])
    }

    /// One past the highest entry index the app has handed out (what a scan covers).
    pub fn high_water(&self) -> u32 {
        self.mapping.high_water()
    }

    /// Whether the app is in the foreground.
    pub fn is_foreground(&self) -> bool {
        self.mapping.is_foreground()
    }

    /// Books objects this reclaimer returned to the OS in the table's header, where the
    /// app sees them ([`ReclaimTable::reclaimed_out`]).
    pub fn book_reclaimed_out(&self, objects: u64, bytes: u64) {
        self.mapping.book_reclaimed_out(objects, bytes);
    }

    /// Bytes and objects reclaimed from outside so far (cumulative).
    pub fn reclaimed_out(&self) -> (u64, u64) {
        self.mapping.reclaimed_out()
    }

    /// Whether the app says its saver is saving its cold objects after a background
    /// transition ([`ReclaimTable::set_saving`]): a hint, which a killer must bound.
    pub fn is_saving(&self) -> bool {
        self.mapping.is_saving()
    }
}

fn iter_occupied(entries: &[Entry]) -> impl Iterator<Item = (EntryId, &Entry)> + '_ {
    entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_occupied())
        .map(|(i, e)| (EntryId::from_index(i as u32), e))
}

fn check_capacity(capacity: u32) -> Result<(), ReclaimTableError> {
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(ReclaimTableError::BadCapacity { capacity });
    }
    Ok(())
}
