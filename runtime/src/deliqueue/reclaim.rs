//! When unlinked nodes may be freed: crossbeam-epoch normally; under loom and Miri, a
//! stand-in that keeps every retired node until the queue is dropped, which is
//! trivially safe. (crossbeam-epoch is not built for loom here, and crossbeam-epoch
//! 0.9 itself trips Miri's Stacked Borrows checks inside its own participant list, so
//! Miri checks the queue's own protocol with the stand-in.)

use super::node::Node;

/// A pinned region: nodes reachable now stay allocated until it ends.
#[cfg(not(any(loom, miri)))]
pub struct Guard(crossbeam_epoch::Guard);

#[cfg(any(loom, miri))]
pub struct Guard(());

/// Pins the current thread.
#[inline]
pub fn pin() -> Guard {
    #[cfg(not(any(loom, miri)))]
    return Guard(crossbeam_epoch::pin());
    #[cfg(any(loom, miri))]
    return Guard(());
}

/// The looper's retirement of unlinked nodes.
pub struct Reclaimer<T> {
    #[cfg(any(loom, miri))]
    kept: Vec<*mut Node<T>>,
    _nodes: std::marker::PhantomData<*mut Node<T>>,
}

impl<T> Default for Reclaimer<T> {
    fn default() -> Self {
        Reclaimer {
            #[cfg(any(loom, miri))]
            kept: Vec::new(),
            _nodes: std::marker::PhantomData,
        }
    }
}

impl<T> Reclaimer<T> {
    /// Frees `node` once no thread pinned now can still reach it.
    ///
    /// # Safety
    /// `node` came from `node::into_raw`, is unlinked from the stack and out of every
    /// heap, its payload was moved out or dropped, and it is retired once.
    #[allow(unused_variables)]
    pub unsafe fn retire(&mut self, guard: &Guard, node: *mut Node<T>) {
        #[cfg(not(any(loom, miri)))]
        // SAFETY: by the contract nobody can reach the node from the stack any more, so
        // only threads pinned now can hold it; the epoch runs the free after they unpin.
        // Freeing the memory drops no payload, so running it on any thread is fine.
        unsafe {
            guard.0.defer_unchecked(move || super::node::free(node))
        };
        #[cfg(any(loom, miri))]
        self.kept.push(node);
    }

    /// Frees what the stand-in kept (nothing with epochs). Called from the queue's drop.
    pub fn free_kept(&mut self) {
        #[cfg(any(loom, miri))]
        for node in self.kept.drain(..) {
            // SAFETY: the queue is being dropped: no thread can reach any node.
            unsafe { super::node::free(node) };
        }
    }
}
