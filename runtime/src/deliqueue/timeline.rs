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
use crate::sync::atomic::Ordering;

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

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.run.is_empty()
    }

    /// Inserts a node: appended to the run when it sorts after the run's last entry.
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
    pub fn peek(&self) -> Option<&Entry<T>> {
        match self.run_first()? {
            true => self.run.front(),
            false => self.heap.peek(),
        }
    }

    /// Removes the first entry and marks its node as out.
    pub fn pop(&mut self) -> Option<Entry<T>> {
        match self.run_first()? {
            true => self.run.pop_front(),
            false => self.heap.pop(),
        }
    }

    /// Takes `node` out, wherever it is (nothing when it is in neither part).
    pub fn remove(&mut self, node: &Node<T>) {
        // Relaxed: `heap_index` is looper-only data.
        let index = node.heap_index.load(Ordering::Relaxed);
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
            self.heap.remove_at(node.heap_index.load(Ordering::Relaxed));
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
