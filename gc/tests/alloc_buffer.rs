//! Per-thread allocation buffers with the collector: objects allocated from several
//! threads' buffers are all reachable and intact after a collection, the heap's counters
//! are the sum of what the threads allocated, a collection never sees `in_use` below the
//! live objects, and a retired buffer gives its handles and memory back.

use std::sync::atomic::Ordering;

use marvin_gc::collect;
use marvin_runtime::ObjKind;
use marvin_runtime::{
    footprint, AllocBuffer, Handle, Heap, HeapConfig, ALLOC_BUFFER_BATCH, ALLOC_BUFFER_GRANT,
};
use marvin_runtime::{AccessKind, Barriers};

fn heap(limit: Option<usize>) -> Heap {
    Heap::new(HeapConfig {
        handle_capacity: 1 << 20,
        limit,
        ..HeapConfig::default()
    })
    .unwrap()
}

/// Allocates as a mutator does: the buffer first, the refilling path when it is used up.
fn alloc(
    h: &Heap,
    buf: &mut AllocBuffer,
    kind: ObjKind,
    class: u32,
    len: u32,
    nrefs: u16,
) -> Handle {
    match h.alloc_fast(buf, kind, class, len, nrefs) {
        Some(x) => x,
        None => h.alloc_buffered(buf, kind, class, len, nrefs).unwrap(),
    }
}

/// A node: slot 0 the next node, slot 1 a value.
fn node(h: &Heap, buf: &mut AllocBuffer, next: u64, value: u64) -> Handle {
    let n = alloc(h, buf, ObjKind::Instance, 1, 2, 1);
    let a = h.access::<Barriers>(n, AccessKind::Write).unwrap();
    a.store_ref(0, next);
    a.obj().words()[1].store(value, Ordering::Relaxed);
    n
}

/// Walks a list from `head`, checking each node's shape and value (`tag * N + i`,
/// counting down) and that no two nodes share memory; returns its length.
fn walk(h: &Heap, head: u64, tag: u64, n: u64, seen: &mut std::collections::HashSet<usize>) -> u64 {
    let mut v = head;
    let mut len = 0;
    while let Some(x) = Handle::from_value(v) {
        let a = h.access::<Barriers>(x, AccessKind::Read).unwrap();
        let o = a.obj();
        assert_eq!(
            (o.kind(), o.len(), o.header().class),
            (ObjKind::Instance, 2, 1)
        );
        assert!(seen.insert(o.addr()), "two nodes at one address");
        assert_eq!(
            o.words()[1].load(Ordering::Relaxed),
            tag * n + (n - 1 - len)
        );
        v = o.words()[0].load(Ordering::Relaxed);
        len += 1;
    }
    len
}

#[test]
fn objects_from_two_threads_buffers_are_reachable_and_intact_and_counted() {
    const N: u64 = 20_000;
    const GARBAGE: u64 = 7_000;
    let h = heap(None);
    let node_bytes = footprint(ObjKind::Instance, 2) as u64;
    let arr_bytes = footprint(ObjKind::IntArray, 5) as u64;
    let heads: Vec<u64> = std::thread::scope(|s| {
        let ts: Vec<_> = (0..2u64)
            .map(|tag| {
                let h = &h;
                s.spawn(move || {
                    let mut buf = AllocBuffer::new();
                    let mut head = 0;
                    for i in 0..N {
                        head = node(h, &mut buf, head, tag * N + i).value();
                        if i < GARBAGE {
                            // Another size class, garbage.
                            alloc(h, &mut buf, ObjKind::IntArray, 0, 5, 0);
                        }
                    }
                    h.retire(&mut buf);
                    assert!(buf.is_empty());
                    head
                })
            })
            .collect();
        ts.into_iter().map(|t| t.join().unwrap()).collect()
    });
    // Accounting: the totals are the sum of what each thread allocated.
    let c = &h.counters;
    assert_eq!(c.allocations.load(Ordering::Relaxed), 2 * (N + GARBAGE));
    let total = 2 * (N * node_bytes + GARBAGE * arr_bytes);
    assert_eq!(c.bytes_allocated.load(Ordering::Relaxed), total);
    assert_eq!(c.since_gc.load(Ordering::Relaxed) as u64, total);
    assert_eq!(
        h.in_use() as u64,
        total,
        "retired buffers hold no allowance"
    );
    // SAFETY: the threads have ended: nothing else runs.
    let r = unsafe { collect(&h, &heads) };
    assert_eq!(r.marked, 2 * N);
    assert_eq!(r.freed_objects, 2 * GARBAGE);
    assert_eq!(h.in_use() as u64, 2 * N * node_bytes);
    let mut seen = std::collections::HashSet::new();
    for (tag, &head) in heads.iter().enumerate() {
        assert_eq!(walk(&h, head, tag as u64, N, &mut seen), N);
    }
}

#[test]
fn a_collection_with_a_buffer_unsettled_never_takes_in_use_below_the_live() {
    let h = heap(None);
    let mut buf = AllocBuffer::new();
    let keep = node(&h, &mut buf, 0, 0);
    for i in 0..100 {
        node(&h, &mut buf, 0, i);
    }
    let size = footprint(ObjKind::Instance, 2);
    // Nothing booked yet but the grant, charged whole.
    assert_eq!(h.counters.allocations.load(Ordering::Relaxed), 0);
    assert_eq!(buf.unsettled_allocations(), 101);
    assert_eq!(h.in_use(), ALLOC_BUFFER_GRANT);
    assert_eq!(buf.allowance(), ALLOC_BUFFER_GRANT - 101 * size);
    // SAFETY: single-threaded test.
    let r = unsafe { collect(&h, &[keep.value()]) };
    assert_eq!(r.freed_objects, 100);
    // The freed objects came out of the grant: the rest of it and the live node remain.
    assert_eq!(h.in_use(), buf.allowance() + size);
    h.settle(&mut buf);
    assert_eq!(h.in_use(), size);
    assert_eq!(h.counters.allocations.load(Ordering::Relaxed), 101);
    assert_eq!(buf.allowance(), 0);
    // Settling twice books nothing twice.
    h.settle(&mut buf);
    assert_eq!(h.counters.allocations.load(Ordering::Relaxed), 101);
    h.retire(&mut buf);
}

#[test]
fn a_retired_buffer_gives_its_handles_and_blocks_back() {
    let h = heap(None);
    let mut buf = AllocBuffer::new();
    let first = alloc(&h, &mut buf, ObjKind::IntArray, 0, 1, 0);
    let held = buf.cached_handles();
    assert_eq!(held as u32, ALLOC_BUFFER_BATCH - 1);
    h.retire(&mut buf);
    assert!(buf.is_empty());
    // The handles it held are free again: plain allocations get them, and the table
    // hands out no fresh one meanwhile.
    let again: std::collections::HashSet<u64> = (0..held)
        .map(|_| h.alloc(ObjKind::IntArray, 0, 1, 0).unwrap().value())
        .collect();
    assert_eq!(again.len(), held);
    let batch = first.value() + 1..first.value() + 1 + held as u64;
    assert!(again.iter().all(|v| batch.contains(v)), "{again:?}");
    // The buffer can be used again after retiring.
    let x = alloc(&h, &mut buf, ObjKind::IntArray, 0, 1, 0);
    assert!(h.table().is_live(x.value()));
    h.retire(&mut buf);
}

#[test]
fn blocks_freed_by_a_collection_are_reused_by_a_buffer() {
    let h = heap(None);
    let mut buf = AllocBuffer::new();
    let objs: Vec<Handle> = (0..5_000)
        .map(|_| alloc(&h, &mut buf, ObjKind::IntArray, 0, 3, 0))
        .collect();
    let addrs: std::collections::HashSet<usize> = objs
        .iter()
        .map(|&o| {
            h.access::<Barriers>(o, AccessKind::Read)
                .unwrap()
                .obj()
                .addr()
        })
        .collect();
    h.settle(&mut buf);
    // SAFETY: single-threaded test.
    unsafe { collect(&h, &[]) };
    // Use up the rest of the bump region, then the freed blocks come back, zeroed.
    let mut reused = 0;
    for _ in 0..10_000 {
        let o = alloc(&h, &mut buf, ObjKind::IntArray, 0, 3, 0);
        let a = h.access::<Barriers>(o, AccessKind::Read).unwrap();
        assert!(a
            .obj()
            .words()
            .iter()
            .all(|w| w.load(Ordering::Relaxed) == 0));
        a.obj().words()[0].store(u64::MAX, Ordering::Relaxed);
        reused += addrs.contains(&a.obj().addr()) as u32;
    }
    assert!(reused >= 4_000, "only {reused} freed blocks reused");
    h.retire(&mut buf);
}

#[test]
fn a_heap_with_a_limit_allocates_exactly() {
    let h = heap(Some(1 << 20));
    let mut buf = AllocBuffer::new();
    for i in 1..=10 {
        alloc(&h, &mut buf, ObjKind::IntArray, 0, 1, 0);
        assert_eq!(buf.allowance(), 0);
        assert_eq!(h.counters.allocations.load(Ordering::Relaxed), i);
        assert_eq!(h.in_use(), i as usize * footprint(ObjKind::IntArray, 1));
    }
    h.retire(&mut buf);
}

#[test]
fn large_objects_bypass_the_buffer() {
    let h = heap(None);
    let mut buf = AllocBuffer::new();
    assert!(h
        .alloc_fast(&mut buf, ObjKind::ByteArray, 0, 10_000, 0)
        .is_none());
    let big = alloc(&h, &mut buf, ObjKind::ByteArray, 0, 10_000, 0);
    assert_eq!(h.in_use(), footprint(ObjKind::ByteArray, 10_000));
    assert_eq!(h.counters.allocations.load(Ordering::Relaxed), 1);
    assert!(h.table().is_live(big.value()));
    h.retire(&mut buf);
}
