//! Collector tests on a small hand-built heap.

use marvin_runtime::{AccessKind, Barriers};
use marvin_runtime::{Handle, Heap, HeapConfig};
use marvin_runtime::{HeaderBits, ObjKind};

use crate::collect;

fn heap() -> Heap {
    Heap::new(HeapConfig {
        handle_capacity: 1 << 16,
        ..HeapConfig::default()
    })
    .unwrap()
}

/// A node instance: slot 0 is a reference, slot 1 an int.
fn node(h: &Heap, next: Option<Handle>, value: u64) -> Handle {
    let n = h.alloc(ObjKind::Instance, 1, 2, 1).unwrap();
    let a = h.access::<Barriers>(n, AccessKind::Write).unwrap();
    a.store_ref(0, next.map_or(0, |x| x.value()));
    a.obj().words()[1].store(value, std::sync::atomic::Ordering::Relaxed);
    n
}

#[test]
fn keeps_everything_reachable_and_frees_the_rest() {
    let h = heap();
    let mut list = None;
    for i in 0..100 {
        list = Some(node(&h, list, i));
    }
    let big = h.alloc(ObjKind::ByteArray, 0, 10_000, 0).unwrap();
    for i in 0..50 {
        node(&h, None, i); // garbage
    }
    let garbage_big = h.alloc(ObjKind::IntArray, 0, 4096, 0).unwrap();
    let before = h.in_use();
    // SAFETY: single-threaded test: nothing else runs.
    let r = unsafe { collect(&h, &[list.unwrap().value(), big.value(), 0, 987_654]) };
    assert_eq!(r.marked, 101);
    assert_eq!(r.freed_objects, 51);
    assert!(h.in_use() < before);
    assert!(!h.table().is_live(garbage_big.value()));
    // Walk the list: every value is intact.
    let mut cur = list;
    let mut seen = 0;
    while let Some(n) = cur {
        // SAFETY: single-threaded test, `n` is live.
        let obj = unsafe { h.raw_object(n) }.unwrap();
        assert_eq!(
            obj.words()[1].load(std::sync::atomic::Ordering::Relaxed),
            99 - seen
        );
        assert!(
            !obj.header().bits().contains(HeaderBits::MARKED),
            "marks are cleared"
        );
        seen += 1;
        cur = Handle::from_value(obj.words()[0].load(std::sync::atomic::Ordering::Relaxed));
    }
    assert_eq!(seen, 100);
}

#[test]
fn collection_never_sets_access_bits_and_ages_them() {
    let h = heap();
    let a = node(&h, None, 1);
    let b = node(&h, Some(a), 2);
    // SAFETY: single-threaded test.
    unsafe {
        for x in [a, b] {
            h.raw_object(x)
                .unwrap()
                .header()
                .clear(HeaderBits::READ | HeaderBits::WRITE);
        }
        let r = collect(&h, &[b.value()]);
        assert_eq!(r.marked, 2);
        for x in [a, b] {
            let hdr = h.raw_object(x).unwrap().header();
            assert!(!hdr.bits().intersects(HeaderBits::READ | HeaderBits::WRITE));
            assert_eq!(
                hdr.read_history(),
                0,
                "the collector's reads are not accesses"
            );
        }
        h.access::<Barriers>(a, AccessKind::Read).unwrap();
        let r = collect(&h, &[b.value()]);
        assert_eq!(h.raw_object(a).unwrap().header().read_history(), 1);
        assert_eq!(h.raw_object(b).unwrap().header().read_history(), 0);
        assert!(r.working_set.read_bytes > 0);
        assert_eq!(r.working_set.written_bytes, 0);
    }
}

#[test]
fn cycles_are_collected() {
    let h = heap();
    let a = node(&h, None, 1);
    let b = node(&h, Some(a), 2);
    h.access::<Barriers>(a, AccessKind::Write)
        .unwrap()
        .store_ref(0, b.value());
    // SAFETY: single-threaded test.
    let r = unsafe { collect(&h, &[]) };
    assert_eq!(r.freed_objects, 2);
    assert_eq!(h.in_use(), 0);
}
