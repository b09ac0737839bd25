//! The looper's min-heap of swept nodes, ordered by (due time, insert sequence) with
//! the branchless comparator `signum(when1 - when2) * 2 + signum(seq1 - seq2)`.
//!
//! The heap belongs to the looper alone: no locks, no atomics on its own data. Each
//! node remembers its index (`heap_index`) so any node leaves in O(log n).

use std::ptr::NonNull;

use super::node::{Node, NO_INDEX};

/// A heap entry: the ordering key copied out of the node, so sifting reads no node.
#[derive(Debug)]
pub struct Entry<T> {
    pub when: u64,
    pub seq: i64,
    pub node: NonNull<Node<T>>,
}

impl<T> Clone for Entry<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Entry<T> {}

/// `signum(a - b)` without a branch.
#[inline(always)]
fn signum<N: PartialOrd>(a: N, b: N) -> i32 {
    (a > b) as i32 - (a < b) as i32
}

/// The published comparator: negative when `a` comes first.
#[inline(always)]
pub fn compare<T>(a: &Entry<T>, b: &Entry<T>) -> i32 {
    signum(a.when, b.when) * 2 + signum(a.seq, b.seq)
}

/// A binary min-heap of nodes.
pub struct Heap<T> {
    entries: Vec<Entry<T>>,
}

impl<T> Default for Heap<T> {
    fn default() -> Self {
        Heap {
            entries: Vec::new(),
        }
    }
}

impl<T> Heap<T> {
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The first entry.
    #[inline]
    pub fn peek(&self) -> Option<&Entry<T>> {
        self.entries.first()
    }

    /// All entries, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry<T>> {
        self.entries.iter()
    }

    /// Empties the heap (the nodes are the caller's business).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Inserts a node.
    pub fn push(&mut self, entry: Entry<T>) {
        self.entries.push(entry);
        let last = self.entries.len() - 1;
        self.sift_up(last);
    }

    /// Removes the entry at `index` (a node's `heap_index`) and marks its node as out.
    pub fn remove_at(&mut self, index: usize) -> Entry<T> {
        let removed = self.entries.swap_remove(index);
        set_index(&removed, NO_INDEX);
        if index < self.entries.len() {
            self.place(index);
            let moved = self.sift_up(index);
            if moved == index {
                self.sift_down(index);
            }
        }
        removed
    }

    /// Removes the first entry.
    pub fn pop(&mut self) -> Option<Entry<T>> {
        (!self.entries.is_empty()).then(|| self.remove_at(0))
    }

    fn sift_up(&mut self, mut i: usize) -> usize {
        let item = self.entries[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if compare(&item, &self.entries[parent]) >= 0 {
                break;
            }
            self.entries[i] = self.entries[parent];
            self.place(i);
            i = parent;
        }
        self.entries[i] = item;
        self.place(i);
        i
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.entries.len();
        let item = self.entries[i];
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && compare(&self.entries[right], &self.entries[left]) < 0 {
                right
            } else {
                left
            };
            if compare(&self.entries[child], &item) >= 0 {
                break;
            }
            self.entries[i] = self.entries[child];
            self.place(i);
            i = child;
        }
        self.entries[i] = item;
        self.place(i);
    }

    /// Tells the node at `i` where it now is.
    #[inline(always)]
    fn place(&self, i: usize) {
        set_index(&self.entries[i], i);
    }
}

#[inline(always)]
fn set_index<T>(entry: &Entry<T>, index: usize) {
    // SAFETY: a node in the heap stays allocated until the looper takes it out of the
    // heap and then unlinks and retires it; the heap holds only such nodes.
    let node = unsafe { entry.node.as_ref() };
    node.set_heap_index(index);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::MessageKey;
    use crate::node::{free, into_raw, Kind};

    fn key() -> MessageKey {
        MessageKey {
            target: 0,
            what: 0,
            obj: None,
        }
    }

    #[test]
    fn comparator_orders_by_when_then_seq() {
        let n = NonNull::dangling();
        let e = |when, seq| Entry::<()> { when, seq, node: n };
        assert!(compare(&e(1, 5), &e(2, 0)) < 0);
        assert!(compare(&e(2, 0), &e(1, 5)) > 0);
        assert!(compare(&e(3, 1), &e(3, 2)) < 0);
        assert!(compare(&e(3, -4), &e(3, 1)) < 0);
        assert_eq!(compare(&e(3, 1), &e(3, 1)), 0);
    }

    #[test]
    fn pops_in_order_and_removes_anywhere() {
        let count: usize = if cfg!(miri) { 40 } else { 400 };
        let mut heap = Heap::<()>::default();
        let mut nodes = Vec::new();
        for i in 0..count {
            let when = (i * 7919 % 97) as u64;
            let node = into_raw(Node::<()>::marker(when, Kind::Barrier, key()));
            nodes.push(node);
            heap.push(Entry {
                when,
                seq: i as i64,
                node: NonNull::new(node).unwrap(),
            });
        }
        // Remove every third node through its recorded index.
        for node in nodes.iter().step_by(3) {
            // SAFETY: the node is live until freed at the end of the test.
            let index = unsafe { &**node }.heap_index();
            let e = heap.remove_at(index);
            assert_eq!(e.node.as_ptr(), *node);
        }
        let mut last = (0u64, i64::MIN);
        let mut popped = 0;
        while let Some(e) = heap.pop() {
            assert!((e.when, e.seq) > last);
            last = (e.when, e.seq);
            popped += 1;
        }
        assert_eq!(popped, count - count.div_ceil(3));
        for node in nodes {
            // SAFETY: each node came from `into_raw` and is freed once, here.
            unsafe { free(node) };
        }
    }
}
