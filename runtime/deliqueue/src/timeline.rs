//! The looper's ordered store of swept nodes: the min-heap ([`super::heap`]) plus a
//! sorted run, a FIFO fast path.
//!
//! The sweep hands nodes over in push order. A node that sorts after the run's last
//! entry (by the same (due time, insert sequence) comparator) is appended to the run;
//! any other node goes into the heap. The run is therefore always sorted, and the first
//! entry overall is the smaller of the heap's top and the run's front. When messages
//! arrive in due order (immediate posts from one thread, a steady timer), they never
//! touch the heap: appending and taking are O(1) and touch no node.
//!
//! A node in the heap records its index in `heap_index`; any other node holds
//! [`NO_INDEX`] there. Removing such a node looks for it in the run (a binary search by
//! due time), and when it is there, first moves the whole run into the heap: each entry
//! moves at most once, so removal stays amortised O(log n).

use std::collections::VecDeque;

use super::heap::{self, Entry, Heap};
use super::node::{Node, NO_INDEX};

/// Swept nodes in delivery order: a heap and a sorted run.
pub struct Timeline<T> {
    heap: Heap<T>,
    run: VecDeque<Entry<T>>,
}

impl<T> Default for Timeline<T> {
    fn default() -> Self {
        Timeline {
            heap: Heap::default(),
            run: VecDeque::new(),
        }
    }
}

impl<T> Timeline<T> {
    pub fn len(&self) -> usize {
        self.heap.len() + self.run.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.run.is_empty()
    }

    /// Inserts a node: appended to the run when it sorts after the run's last entry.
    #[inline]
    pub fn push(&mut self, entry: Entry<T>) {
        if self
            .run
            .back()
            .is_none_or(|last| heap::compare(&entry, last) > 0)
        {
            self.run.push_back(entry);
        } else {
            self.heap.push(entry);
        }
    }

    /// Whether the run's front comes before the heap's top.
    #[inline]
    fn run_first(&self) -> Option<bool> {
        match (self.heap.peek(), self.run.front()) {
            (None, None) => None,
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (Some(h), Some(r)) => Some(heap::compare(r, h) < 0),
        }
    }

    /// The first entry.
    #[inline]
    pub fn peek(&self) -> Option<&Entry<T>> {
        // Messages posted in order never reach the heap: its emptiness is the usual case.
        if self.heap.is_empty() {
            return self.run.front();
        }
        match self.run_first()? {
            true => self.run.front(),
            false => self.heap.peek(),
        }
    }

    /// Removes the first entry and marks its node as out.
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<T>> {
        if self.heap.is_empty() {
            return self.run.pop_front();
        }
        match self.run_first()? {
            true => self.run.pop_front(),
            false => self.heap.pop(),
        }
    }

    /// Takes `node` out, wherever it is (nothing when it is in neither part).
    pub fn remove(&mut self, node: &Node<T>) {
        let index = node.heap_index();
        if index != NO_INDEX {
            self.heap.remove_at(index);
            return;
        }
        let from = self.run.partition_point(|e| e.when < node.when);
        let in_run = self
            .run
            .range(from..)
            .take_while(|e| e.when == node.when)
            .any(|e| std::ptr::eq(e.node.as_ptr(), node));
        if in_run {
            // Fold the run into the heap, which records every node's index.
            for entry in std::mem::take(&mut self.run) {
                self.heap.push(entry);
            }
            self.heap.remove_at(node.heap_index());
        }
    }

    /// All entries, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry<T>> {
        self.heap.iter().chain(self.run.iter())
    }

    /// Empties the timeline (the nodes are the caller's business).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.run.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::ptr::NonNull;

    use super::*;
    use crate::message::MessageKey;
    use crate::node::{free, into_raw, Kind};

    fn node(when: u64) -> *mut Node<()> {
        let key = MessageKey {
            target: 0,
            what: 0,
            obj: None,
        };
        into_raw(Node::marker(when, Kind::Barrier, key))
    }

    /// Pushes in runs and out of order, removes from both parts, and checks every pop
    /// against a sorted reference.
    #[test]
    fn pops_in_comparator_order_with_removals_anywhere() {
        let count: u64 = if cfg!(miri) { 60 } else { 2_000 };
        let mut line = Timeline::<()>::default();
        let mut reference = BTreeSet::new();
        let mut nodes = Vec::new();
        for i in 0..count {
            // Mostly rising due times (runs), sometimes a step back (the heap).
            let when = if i % 7 == 3 { i / 2 } else { i };
            let ptr = node(when);
            nodes.push(ptr);
            let seq = i as i64;
            line.push(Entry {
                when,
                seq,
                node: NonNull::new(ptr).unwrap(),
            });
            reference.insert((when, seq, ptr as usize));
            // Every fifth push, remove an older node (in the run or in the heap).
            if i % 5 == 4 {
                let victim = nodes[(i as usize * 7919) % nodes.len()];
                // SAFETY: the node is alive until freed at the end of the test.
                let victim_ref = unsafe { &*victim };
                if let Some(&entry) = reference.iter().find(|e| e.2 == victim as usize) {
                    line.remove(victim_ref);
                    reference.remove(&entry);
                }
            }
            // Now and then, pop the first entry.
            if i % 3 == 0 {
                let popped = line.pop().expect("not empty");
                let first = *reference.iter().next().unwrap();
                reference.remove(&first);
                assert_eq!((popped.when, popped.seq), (first.0, first.1));
            }
            assert_eq!(line.len(), reference.len());
        }
        for expected in std::mem::take(&mut reference) {
            let popped = line.pop().expect("not empty");
            assert_eq!((popped.when, popped.seq), (expected.0, expected.1));
        }
        assert!(line.is_empty());
        for ptr in nodes {
            // SAFETY: each node came from `into_raw` and is freed once, here.
            unsafe { free(ptr) };
        }
    }

    /// Removing a node that already left (popped) is a no-op.
    #[test]
    fn removing_a_node_no_longer_held_changes_nothing() {
        let mut line = Timeline::<()>::default();
        let (a, b) = (node(10), node(20));
        for (seq, ptr) in [(1, a), (2, b)] {
            // SAFETY: alive until freed below.
            let when = unsafe { &*ptr }.when;
            line.push(Entry {
                when,
                seq,
                node: NonNull::new(ptr).unwrap(),
            });
        }
        assert_eq!(line.pop().map(|e| e.node.as_ptr()), Some(a));
        // SAFETY: alive until freed below.
        line.remove(unsafe { &*a });
        assert_eq!(line.len(), 1);
        assert_eq!(line.pop().map(|e| e.node.as_ptr()), Some(b));
        for ptr in [a, b] {
            // SAFETY: each node came from `into_raw` and is freed once, here.
            unsafe { free(ptr) };
        }
    }
}
