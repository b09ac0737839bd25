//! Unit and stress tests of the reclaim table (the loom model is in tests/loom_reclaim_table.rs).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Barrier};

use super::*;

#[test]
fn insert_publishes_location_and_starts_resident_only() {
    let table = ReclaimTable::anonymous(8).unwrap();
    let id = table.insert(0x7000_0000, 4096, 42).unwrap();
    let e = table.entry(id);
    assert_eq!((e.addr(), e.size(), e.owner()), (0x7000_0000, 4096, 42));
    assert_eq!(e.flags(), EntryFlags::OCCUPIED | EntryFlags::RESIDENT);
    assert!(!e.is_saved() && !e.is_clean() && !e.is_cold() && !e.is_reclaimer_locked());
    assert_eq!(table.len(), 1);
}

#[test]
fn flag_setters_set_and_clear_each_flag_alone() {
    let table = ReclaimTable::anonymous(2).unwrap();
    let e = table.entry(table.insert(1, 2, 3).unwrap());
    type Getter = fn(&Entry) -> bool;
    type Setter = fn(&Entry, bool);
    let knobs: [(Setter, Getter, EntryFlags); 4] = [
        (
            Entry::set_resident,
            Entry::is_resident,
            EntryFlags::RESIDENT,
        ),
        (Entry::set_saved, Entry::is_saved, EntryFlags::SAVED),
        (Entry::set_clean, Entry::is_clean, EntryFlags::CLEAN),
        (Entry::set_cold, Entry::is_cold, EntryFlags::COLD),
    ];
    for (set, get, flag) in knobs {
        let before = e.flags();
        set(e, true);
        assert!(get(e));
        assert_eq!(e.flags(), before | flag);
        set(e, false);
        assert!(!get(e));
        assert_eq!(e.flags(), before.difference(flag));
        set(e, before.contains(flag));
    }
    assert!(e.is_occupied(), "setters never touch OCCUPIED");
}

#[test]
fn reclaimable_needs_every_flag_and_no_lock() {
    let table = ReclaimTable::anonymous(2).unwrap();
    let e = table.entry(table.insert(1, 2, 3).unwrap());
    assert!(!e.looks_reclaimable());
    e.set_saved(true);
    e.set_clean(true);
    assert!(!e.looks_reclaimable(), "not cold yet");
    e.set_cold(true);
    assert!(e.looks_reclaimable());
    {
        let _shared = e.lock_shared().unwrap();
        assert!(!e.looks_reclaimable(), "a shared holder hides it");
        assert!(e.try_lock_reclaimer().is_none());
    }
    let guard = e.try_lock_reclaimer().expect("unlocked entry");
    assert!(guard.is_reclaimable());
    assert!(
        !e.looks_reclaimable(),
        "the reclaimer's own lock hides it from other scans"
    );
    guard.mark_reclaimed();
    assert!(!guard.is_reclaimable(), "no longer resident");
    drop(guard);
    assert!(!e.is_resident() && e.is_occupied() && !e.is_reclaimer_locked());
}

#[test]
fn release_reclaimed_clears_resident_and_unlocks_in_one_step() {
    let table = ReclaimTable::anonymous(2).unwrap();
    let id = table.insert(1, 2, 3).unwrap();
    let other = table.entry(table.insert(4, 5, 6).unwrap());
    let e = table.entry(id);
    for entry in [e, other] {
        entry.set_resident(true);
        entry.set_saved(true);
        entry.set_clean(true);
        entry.set_cold(true);
    }
    let guard = e.try_lock_reclaimer().expect("unlocked entry");
    guard.release_reclaimed();
    assert!(!e.is_resident(), "RESIDENT cleared");
    assert!(!e.is_reclaimer_locked(), "the lock released");
    assert!(e.is_occupied() && e.is_saved() && e.is_clean() && e.is_cold());
    // A runtime thread can take it again, and the neighbour was not touched.
    drop(e.lock_shared().expect("released"));
    assert!(other.is_resident() && other.looks_reclaimable());
}

#[test]
fn flag_changes_never_touch_the_reclaimer_bit() {
    let table = ReclaimTable::anonymous(1).unwrap();
    let e = table.entry(table.insert(1, 2, 3).unwrap());
    let guard = e.try_lock_reclaimer().unwrap();
    e.set_clean(false);
    e.set_cold(true);
    e.lock().remove_flags(EntryFlags::all());
    assert!(e.is_reclaimer_locked());
    drop(guard);
    e.lock().insert_flags(EntryFlags::all());
    assert!(!e.is_reclaimer_locked());
}

#[test]
fn shared_locks_stack_and_exclude_the_reclaimer() {
    let table = ReclaimTable::anonymous(1).unwrap();
    let e = table.entry(table.insert(1, 2, 3).unwrap());
    let a = e.lock_shared().unwrap();
    let b = e.lock_shared().unwrap();
    assert_eq!(e.lock().shared_count(), 2);
    drop(a);
    assert!(e.try_lock_reclaimer().is_none());
    assert!(
        !e.is_reclaimer_locked(),
        "a failed try leaves no bit behind"
    );
    drop(b);
    assert_eq!(e.lock().shared_count(), 0);
    let r = e.try_lock_reclaimer().unwrap();
    assert!(e.try_lock_reclaimer().is_none(), "one reclaimer at a time");
    assert!(
        e.is_reclaimer_locked(),
        "a second reclaimer's failure keeps the first's bit"
    );
    drop(r);
    assert!(e.try_lock_reclaimer().is_some());
}

#[test]
fn shared_lock_waits_for_the_reclaimer() {
    let table = ReclaimTable::anonymous(1).unwrap();
    let e = table.entry(table.insert(1, 2, 3).unwrap());
    let released = AtomicBool::new(false);
    std::thread::scope(|s| {
        let guard = e.try_lock_reclaimer().unwrap();
        let app = s.spawn(|| {
            let _g = e.lock_shared().unwrap();
            released.load(SeqCst)
        });
        std::thread::yield_now();
        released.store(true, SeqCst);
        drop(guard);
        assert!(
            app.join().unwrap(),
            "the app got its lock before the reclaimer let go"
        );
    });
}

#[test]
fn remove_frees_and_insert_reuses_with_fresh_flags() {
    let table = ReclaimTable::anonymous(2).unwrap();
    let a = table.insert(10, 20, 1).unwrap();
    let e = table.entry(a);
    e.set_saved(true);
    e.set_clean(true);
    e.set_cold(true);
    table.remove(a).unwrap();
    assert!(e.flags().is_empty());
    assert_eq!(table.iter_occupied().count(), 0);
    let b = table.insert(30, 40, 2).unwrap();
    assert_eq!(b, a, "the freed entry is reused first");
    assert_eq!(
        table.entry(b).flags(),
        EntryFlags::OCCUPIED | EntryFlags::RESIDENT
    );
    assert_eq!((table.entry(b).addr(), table.entry(b).owner()), (30, 2));
}

#[test]
fn removing_twice_or_out_of_range_is_an_error() {
    let table = ReclaimTable::anonymous(2).unwrap();
    let a = table.insert(1, 2, 3).unwrap();
    table.remove(a).unwrap();
    assert!(matches!(table.remove(a), Err(ReclaimTableError::NotOccupied { id }) if id == a));
    let far = EntryId::from_index(2);
    let err = table.remove(far).unwrap_err();
    assert!(
        matches!(err, ReclaimTableError::UnknownEntry { .. }),
        "{err}"
    );
    assert!(table.get(far).is_none());
    // The failed removes did not put anything on the free list twice.
    assert!(table.insert(1, 1, 1).is_ok() && table.insert(1, 1, 1).is_ok());
    assert_eq!(table.insert(1, 1, 1), Err(TableFull { capacity: 2 }));
}

#[test]
fn remove_waits_for_a_reclaimer_holding_the_entry() {
    let table = ReclaimTable::anonymous(1).unwrap();
    let id = table.insert(1, 2, 3).unwrap();
    let released = AtomicBool::new(false);
    std::thread::scope(|s| {
        let guard = table.entry(id).try_lock_reclaimer().unwrap();
        let remover = s.spawn(|| {
            table.remove(id).unwrap();
            released.load(SeqCst)
        });
        std::thread::yield_now();
        released.store(true, SeqCst);
        drop(guard);
        assert!(remover.join().unwrap());
    });
    assert!(!table.entry(id).is_occupied());
}

#[test]
fn full_table_reports_its_capacity() {
    let table = ReclaimTable::anonymous(3).unwrap();
    let ids: Vec<_> = (0..3).map(|i| table.insert(i, 1, i).unwrap()).collect();
    let err = table.insert(9, 9, 9).unwrap_err();
    assert_eq!(err, TableFull { capacity: 3 });
    assert!(err.to_string().contains('3'));
    assert_eq!(
        table.iter_occupied().map(|(id, _)| id).collect::<Vec<_>>(),
        ids
    );
}

#[test]
fn bad_capacities_are_refused() {
    assert!(matches!(
        ReclaimTable::anonymous(0),
        Err(ReclaimTableError::BadCapacity { .. })
    ));
    let too_big = MAX_CAPACITY + 1;
    assert!(matches!(
        ReclaimTable::anonymous(too_big),
        Err(ReclaimTableError::BadCapacity { .. })
    ));
}

#[test]
fn file_backed_table_is_shared_with_a_second_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reclaim.table");
    let table = ReclaimTable::create(&path, 16).unwrap();
    assert_eq!(table.path(), Some(path.as_path()));
    let a = table.insert(0x1000, 8192, 7).unwrap();
    let b = table.insert(0x9000, 4096, 8).unwrap();
    table.remove(a).unwrap();
    let e = table.entry(b);
    e.set_saved(true);
    e.set_clean(true);
    e.set_cold(true);

    let view = ReclaimTableView::open(&path).unwrap();
    assert_eq!(view.capacity(), 16);
    let seen: Vec<_> = view
        .iter_occupied()
        .map(|(id, e)| (id, e.addr(), e.size(), e.owner()))
        .collect();
    assert_eq!(seen, vec![(b, 0x9000, 4096, 8)]);
    let remote = view.get(b).unwrap();
    assert!(!std::ptr::eq(remote, e), "two distinct mappings");

    // The lock is shared too: a shared hold in the table blocks the view's reclaimer.
    let shared = e.lock_shared().unwrap();
    assert!(remote.try_lock_reclaimer().is_none());
    drop(shared);
    let guard = remote.try_lock_reclaimer().unwrap();
    assert!(e.is_reclaimer_locked());
    assert!(guard.is_reclaimable());
    guard.mark_reclaimed();
    drop(guard);
    assert!(!e.is_resident() && !e.is_reclaimer_locked());

    // The header names the run that made the table.
    let owner = view.owner();
    assert_eq!(owner.pid, std::process::id());
    assert_eq!(owner.run, crate::run_identity::RunIdentity::current().id);

    assert!(!view.is_foreground());
    table.set_foreground(true);
    assert!(view.is_foreground());
    table.set_foreground(false);
    assert!(!view.is_foreground());

    // The saving hint is its own bit: it shows in the view and leaves the foreground
    // flag alone, and the foreground flag leaves it alone.
    assert!(!view.is_saving());
    table.set_saving(true);
    assert!(view.is_saving() && !view.is_foreground());
    table.set_foreground(true);
    assert!(view.is_saving() && view.is_foreground());
    table.set_saving(false);
    assert!(!view.is_saving() && view.is_foreground());
}

#[test]
fn opening_a_file_that_is_not_a_table_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short");
    std::fs::write(&short, b"tiny").unwrap();
    let err = ReclaimTableView::open(&short).unwrap_err();
    assert!(matches!(err, ReclaimTableError::NotATable { .. }), "{err}");

    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, vec![0xabu8; 4096]).unwrap();
    let err = ReclaimTableView::open(&garbage).unwrap_err();
    assert!(err.to_string().contains("magic"), "{err}");

    let path = dir.path().join("cut.table");
    drop(ReclaimTable::create(&path, 100).unwrap());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(64 + 32 * 10)
        .unwrap();
    let err = ReclaimTableView::open(&path).unwrap_err();
    assert!(err.to_string().contains("too short"), "{err}");

    let err = ReclaimTableView::open(&dir.path().join("missing")).unwrap_err();
    assert!(matches!(err, ReclaimTableError::Io { .. }), "{err}");
}

/// App threads take and drop the shared lock in a loop while a reclaimer thread keeps trying
/// the exclusive lock. Each side records when it is inside and checks the other is not.
///
/// (The raw words are not the invariant: both sides announce themselves before checking, so a
/// holder may briefly see the other side's bit or count while that side is backing off.)
#[test]
fn stress_shared_and_reclaimer_locks_exclude_each_other() {
    let rounds: u32 = if std::env::var_os("MARVIN_STRESS").is_some() {
        5_000_000
    } else {
        200_000
    };
    const APPS: usize = 3;
    let table = Arc::new(ReclaimTable::anonymous(4).unwrap());
    let id = table.insert(1, 2, 3).unwrap();
    let apps_inside = Arc::new(AtomicU32::new(0));
    let reclaimer_inside = Arc::new(AtomicBool::new(false));
    let apps_done = Arc::new(AtomicU32::new(0));
    let start = Arc::new(Barrier::new(APPS + 1));
    let app_locks = Arc::new(AtomicU64::new(0));

    let mut apps = Vec::new();
    for _ in 0..APPS {
        let (table, apps_inside, reclaimer_inside, apps_done, start, app_locks) = (
            table.clone(),
            apps_inside.clone(),
            reclaimer_inside.clone(),
            apps_done.clone(),
            start.clone(),
            app_locks.clone(),
        );
        apps.push(std::thread::spawn(move || {
            let e = table.entry(id);
            start.wait();
            for i in 0..rounds {
                let guard = e.lock_shared().unwrap();
                apps_inside.fetch_add(1, SeqCst);
                assert!(
                    !reclaimer_inside.load(SeqCst),
                    "reclaimer inside with an app"
                );
                apps_inside.fetch_sub(1, SeqCst);
                drop(guard);
                app_locks.fetch_add(1, SeqCst);
                if i % 64 == 0 {
                    std::thread::yield_now();
                }
            }
            apps_done.fetch_add(1, SeqCst);
        }));
    }

    let e = table.entry(id);
    let (mut wins, mut gave_up) = (0u64, 0u64);
    start.wait();
    loop {
        // Done when every app is; an app thread that ended early (it failed) ends the
        // loop too, so a failure is reported at the join, not a hang.
        let finished = apps_done.load(SeqCst) == APPS as u32
            || apps.iter().filter(|a| a.is_finished()).count() > apps_done.load(SeqCst) as usize;
        match e.try_lock_reclaimer() {
            Some(guard) => {
                reclaimer_inside.store(true, SeqCst);
                for _ in 0..4 {
                    assert_eq!(
                        apps_inside.load(SeqCst),
                        0,
                        "an app is inside with the reclaimer"
                    );
                    assert!(e.is_reclaimer_locked(), "only the holder clears the bit");
                    std::hint::spin_loop();
                }
                reclaimer_inside.store(false, SeqCst);
                drop(guard);
                wins += 1;
                // A reclaimer moves on to other entries (and its madvise) after one: on
                // a loaded machine, retaking this one at once for good would starve the
                // apps' shared locks into their bounded give-up.
                std::thread::yield_now();
            }
            None => gave_up += 1,
        }
        if finished {
            break;
        }
    }
    for app in apps {
        app.join().unwrap();
    }
    assert_eq!(app_locks.load(SeqCst), rounds as u64 * APPS as u64);
    assert!(
        wins > 0,
        "the reclaimer got in at least once (after the apps finished at worst)"
    );
    assert_eq!(e.lock().shared_count(), 0);
    assert!(!e.is_reclaimer_locked());
    eprintln!("reclaimer: {wins} locks, {gave_up} give-ups");
}

#[test]
fn a_view_scans_only_up_to_the_published_high_water_mark() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.table");
    let table = ReclaimTable::create(&path, 1024).unwrap();
    let view = ReclaimTableView::open(&path).unwrap();
    assert_eq!(view.high_water(), 0);
    assert_eq!(view.iter_occupied().count(), 0);
    let a = table.insert(0x1000, 4096, 1).unwrap();
    let b = table.insert(0x2000, 4096, 2).unwrap();
    // Entries inserted after the view was opened are seen: the bound lives in the file.
    assert_eq!(view.high_water(), b.index().max(a.index()) + 1);
    assert_eq!(view.iter_occupied().count(), 2);
    table.remove(a).unwrap();
    assert_eq!(view.iter_occupied().count(), 1);
    drop(view);

    // A bound beyond the capacity (a damaged file) is clamped, never read past the table.
    drop(table);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let view = ReclaimTableView::open(&path).unwrap();
    assert_eq!(view.high_water(), 1024);
    assert_eq!(view.iter_occupied().count(), 1);
}

#[test]
fn a_large_table_holds_memory_for_what_it_used_not_its_capacity() {
    let table = ReclaimTable::anonymous(1 << 20).unwrap();
    // One page of header and entries, no free list of a million indices.
    assert_eq!(table.resident_bytes(), 4096);
    let ids: Vec<EntryId> = (0..1000).map(|i| table.insert(i, 1, i).unwrap()).collect();
    let used = table.resident_bytes();
    // 64 bytes of header and 1,000 entries of 32 bytes: 8 pages.
    assert_eq!(used, 8 * 4096);
    for &id in &ids[..500] {
        table.remove(id).unwrap();
    }
    assert_eq!(table.len(), 500);
    // Freed indices are handed out again before fresh ones, highest freed first.
    assert_eq!(table.insert(7, 1, 7).unwrap(), ids[499]);
    assert!(table.resident_bytes() <= used + 500 * 4 + 4096);
    // A full table is still an error.
    let small = ReclaimTable::anonymous(2).unwrap();
    small.insert(1, 1, 1).unwrap();
    small.insert(2, 1, 2).unwrap();
    assert!(small.insert(3, 1, 3).is_err());
}

#[test]
fn a_reclaimer_bit_nobody_clears_is_an_error_after_the_wait_limit_not_a_hang() {
    let table = ReclaimTable::anonymous(4).unwrap();
    let id = table.insert(0x7000, 4096, 1).unwrap();
    let e = table.entry(id);
    // A reclaimer bit left set (as random bytes in the shared table would leave it).
    std::mem::forget(e.try_lock_reclaimer().unwrap());
    let t0 = std::time::Instant::now();
    assert_eq!(
        e.lock_shared().unwrap_err(),
        EntryError::Stuck(LOCK_WAIT_LIMIT)
    );
    assert!(t0.elapsed() >= LOCK_WAIT_LIMIT);
    // Giving up left nothing held.
    assert_eq!(e.lock().shared_count(), 0);
    // Removing the entry waits the same bounded time, then fails and keeps it taken.
    let err = table.remove(id).unwrap_err();
    assert!(
        matches!(err, ReclaimTableError::Entry { id: i, .. } if i == id),
        "{err}"
    );
    assert!(
        err.to_string().contains("reclaimer lock stayed held"),
        "{err}"
    );
    assert_eq!(table.len(), 1);
    e.lock().unlock_reclaimer();
    table.remove(id).unwrap();
}

#[test]
fn check_refuses_an_entry_that_does_not_describe_its_object() {
    let table = ReclaimTable::anonymous(4).unwrap();
    let (addr, size, owner) = (0x7000_0000, 8192, 9);
    let id = table.insert(addr, size, owner).unwrap();
    let e = table.entry(id);
    let check = || e.lock_shared().unwrap().check(addr, size, owner);
    assert_eq!(check(), Ok(()));
    let corrupt = |what: &str| {
        let err = check().unwrap_err();
        assert!(
            matches!(&err, EntryError::Corrupt(m) if m.contains(what)),
            "{what}: {err}"
        );
    };
    // Location and owner: each compared with what the runtime knows.
    e.lock_shared().unwrap().set_location(addr + 4096, size);
    corrupt("address");
    e.lock_shared().unwrap().set_location(addr, size * 2);
    corrupt("size");
    e.lock_shared().unwrap().set_location(addr, size);
    assert_eq!(
        e.lock_shared()
            .unwrap()
            .check(addr, size, owner + 1)
            .unwrap_err(),
        EntryError::Corrupt(format!("owner {owner:#x}, expected {:#x}", owner + 1))
    );
    // Flags that cannot coexist, or that the runtime never sets.
    e.set_clean(true);
    corrupt("CLEAN but not SAVED");
    e.set_clean(false);
    e.set_resident(false);
    corrupt("never SAVED");
    e.set_saved(true);
    assert_eq!(
        check(),
        Ok(()),
        "out once saved is a state the runtime makes"
    );
    e.lock().insert_flags(EntryFlags::from_bits_retain(1 << 12));
    corrupt("unknown bits");
    e.lock().remove_flags(EntryFlags::from_bits_retain(1 << 12));
    assert_eq!(check(), Ok(()));
}

#[test]
fn a_table_file_has_every_block_allocated_up_front() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.table");
    // 4 MiB of entries, none used yet: a sparse file would hold almost no blocks.
    let table = ReclaimTable::create(&path, 1 << 17).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    // A 64-byte header, then the entries.
    assert_eq!(meta.len(), (64 + (1 << 17) * ENTRY_BYTES) as u64);
    assert!(
        meta.blocks() * 512 >= meta.len(),
        "{} bytes allocated of {}",
        meta.blocks() * 512,
        meta.len()
    );
    drop(table);
}

#[test]
fn only_a_file_system_without_room_is_a_full_disk() {
    let full = |errno| ReclaimTableError::Io {
        op: "reserve the file's space",
        path: "t".into(),
        source: std::io::Error::from_raw_os_error(errno),
    };
    assert!(full(libc::ENOSPC).is_disk_full());
    assert!(full(libc::EFBIG).is_disk_full());
    assert!(!full(libc::EACCES).is_disk_full());
    assert!(!ReclaimTableError::BadCapacity { capacity: 0 }.is_disk_full());
    // A directory that does not exist is not a full disk.
    let err =
        ReclaimTable::create(std::path::Path::new("/nonexistent/dir/app.table"), 4).unwrap_err();
    assert!(!err.is_disk_full(), "{err}");
}
