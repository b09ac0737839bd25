//! What a swapped object costs its app outside the managed heap, in bytes: the stub's
//! size follows the object's shape (one small fixed allocation, and reference copies
//! only for objects that hold references), and what stubbing and saving an object adds
//! to the native allocator's heap stays under a bound, measured from the allocator
//! itself. One test per binary: the allocator's counts are the whole process's.

mod common;

use std::sync::atomic::Ordering;

use common::{Fixture, WORDS};
use marvin_runtime::{malloc_bytes, stub_bytes, Stub};
use marvin_runtime::{ObjKind, HEADER_BYTES};

/// At most what one stubbed, saved object of data adds to the native heap: its stub
/// (80), its registry slot (16 and a control byte, at the registry's load), its swap
/// file index slot and its share of the index's free list. The layout before (a fixed
/// stub of 112 bytes with a 32-byte slot index) took about 210.
const BYTES_PER_SWAPPED_OBJECT: usize = 168;

#[cfg(target_env = "gnu")]
fn allocated() -> usize {
    // SAFETY: mallinfo2 takes no arguments and only reads the allocator's statistics.
    unsafe { libc::mallinfo2() }.uordblks
}

#[test]
fn a_stub_follows_its_objects_shape_and_a_swapped_object_costs_few_bytes() {
    // The shape: a stub of an object without references is one allocation of the same
    // size whatever the object's length; references add their copies and nothing else.
    assert!(
        std::mem::size_of::<Stub>() <= 56,
        "{}",
        std::mem::size_of::<Stub>()
    );
    assert_eq!(stub_bytes(0), 80);
    assert_eq!(
        stub_bytes(1) - stub_bytes(0),
        malloc_bytes(16) + malloc_bytes(8)
    );
    assert_eq!(
        stub_bytes(256) - stub_bytes(0),
        malloc_bytes(16) + malloc_bytes(256 * 8)
    );

    let f = Fixture::new();
    let heap = &f.heap;
    // An int array (no references), a byte array and a ref array of 256 references.
    let ints = f.ints(1);
    let bytes = heap.alloc(ObjKind::ByteArray, 0, 4076, 0).unwrap();
    let refs = heap.alloc(ObjKind::RefArray, 0, 256, 0).unwrap();
    let (s_ints, s_bytes, s_refs) = (f.stub(ints), f.stub(bytes), f.stub(refs));
    assert_eq!(s_ints.bytes(), HEADER_BYTES + WORDS as usize * 8);
    assert_eq!(s_bytes.bytes(), HEADER_BYTES + 4076);
    assert_eq!(s_refs.bytes(), HEADER_BYTES + 256 * 8);
    assert!(s_ints.refs().is_empty() && s_bytes.refs().is_empty());
    assert_eq!(s_refs.refs().len(), 256);
    drop((s_ints, s_bytes, s_refs));

    // Measured: what stubbing and saving N more objects adds to the allocator's heap.
    #[cfg(target_env = "gnu")]
    {
        const N: u64 = 4000;
        let mut handles = Vec::with_capacity(N as usize);
        handles.extend((0..N).map(|i| f.ints(100 + i)));
        // Let the swap file and its index see a first checkpoint before the count
        // starts, and the registry its first table.
        f.save_all();
        let before = allocated();
        for &h in &handles {
            // SAFETY: single-threaded test: no mutator runs.
            assert!(unsafe { heap.stub_object(h) }.unwrap());
        }
        let saved = f.save_all();
        assert_eq!(saved.saved_objects, N);
        let per_object = (allocated() - before) / N as usize;
        println!("native heap per stubbed, saved object: {per_object} bytes");
        assert!(
            per_object <= BYTES_PER_SWAPPED_OBJECT,
            "{per_object} bytes per swapped object"
        );
        assert!(
            per_object >= stub_bytes(0),
            "the stubs are counted: {per_object}"
        );
        assert_eq!(f.space().len(), N as usize + 3);
        assert_eq!(
            f.space().counters.stubbed_objects.load(Ordering::Relaxed),
            N + 3
        );
    }
    #[cfg(not(target_env = "gnu"))]
    println!("skipped the allocator's count: it needs glibc's mallinfo2");
}
