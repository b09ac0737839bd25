//! The legacy Android `MessageQueue`: one lock around a sorted singly-linked list.
//!
//! A baseline for benchmarks and differential tests, nothing else. Insertion walks the
//! list to its place under the lock (O(n)); removal walks it too. Wake rules are the
//! legacy ones: a post wakes the blocked looper when the message becomes the new head,
//! or when a sync barrier is at the head and the message is the earliest asynchronous
//! one; removing a barrier at the head wakes it unless another barrier follows.
//! Payloads of removed messages are dropped after the lock is released.

use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::{
    BarrierToken, Clock, KeyFilter, Message, MessageKey, MessageQueue, MonotonicClock, Next,
    PostError, QueueClosed, FRONT_OF_QUEUE,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sync,
    Async,
    /// A sync barrier; `key.what` is its token.
    Barrier,
}

struct Node<T> {
    when: u64,
    key: MessageKey,
    kind: Kind,
    payload: Option<T>,
    next: Link<T>,
}

type Link<T> = Option<Box<Node<T>>>;

struct State<T> {
    head: Link<T>,
    pending: usize,
    quitting: bool,
    torn_down: bool,
    /// The looper is waiting (Android's `mBlocked`).
    blocked: bool,
    wake_requested: bool,
    next_barrier: u64,
}

/// The single-lock queue.
pub struct LegacyQueue<T: Send + 'static, C: Clock = MonotonicClock> {
    state: Mutex<State<T>>,
    cond: Condvar,
    clock: C,
}

impl<T: Send + 'static> LegacyQueue<T, MonotonicClock> {
    pub fn new() -> Self {
        LegacyQueue::with_clock(MonotonicClock::new())
    }
}

impl<T: Send + 'static> Default for LegacyQueue<T, MonotonicClock> {
    fn default() -> Self {
        LegacyQueue::new()
    }
}

/// Unlinks a list iteratively (a long list would overflow the stack recursively).
fn drop_list<T>(mut link: Link<T>) {
    while let Some(mut node) = link {
        link = node.next.take();
    }
}

/// Unlinks and returns the first node after `link` that satisfies `pred`.
fn take_first<T>(mut link: &mut Link<T>, pred: impl Fn(&Node<T>) -> bool) -> Link<T> {
    while link.as_ref().is_some_and(|n| !pred(n)) {
        link = &mut link.as_mut().expect("checked above").next;
    }
    let mut node = link.take()?;
    *link = node.next.take();
    Some(node)
}

impl<T: Send + 'static, C: Clock> LegacyQueue<T, C> {
    pub fn with_clock(clock: C) -> Self {
        LegacyQueue {
            state: Mutex::new(State {
                head: None,
                pending: 0,
                quitting: false,
                torn_down: false,
                blocked: false,
                wake_requested: false,
                next_barrier: 1,
            }),
            cond: Condvar::new(),
            clock,
        }
    }

    /// Inserts a node at its place; returns whether the looper must be woken.
    fn insert(state: &mut State<T>, mut node: Box<Node<T>>) -> bool {
        let when = node.when;
        let is_async = node.kind == Kind::Async;
        let goes_first = match &state.head {
            None => true,
            Some(head) => when == FRONT_OF_QUEUE || when < head.when,
        };
        if goes_first {
            node.next = state.head.take();
            state.head = Some(node);
            return state.blocked;
        }
        let head = state.head.as_mut().expect("non-empty");
        let mut need_wake = state.blocked && head.kind == Kind::Barrier && is_async;
        let mut link = &mut head.next;
        while link.as_ref().is_some_and(|n| n.when <= when) {
            let n = link.as_mut().expect("checked above");
            if need_wake && n.kind == Kind::Async {
                need_wake = false;
            }
            link = &mut n.next;
        }
        node.next = link.take();
        *link = Some(node);
        need_wake
    }

    fn wake_looper(&self) {
        self.cond.notify_all();
    }

    /// The next deliverable node's due time (first async one behind a head barrier).
    fn next_due(state: &State<T>) -> Option<u64> {
        let head = state.head.as_deref()?;
        if head.kind != Kind::Barrier {
            return Some(head.when);
        }
        let mut cursor = head.next.as_deref();
        while let Some(n) = cursor {
            if n.kind == Kind::Async {
                return Some(n.when);
            }
            cursor = n.next.as_deref();
        }
        None
    }
}

impl<T: Send + 'static, C: Clock> MessageQueue<T> for LegacyQueue<T, C> {
    fn now(&self) -> u64 {
        self.clock.now()
    }

    fn post_at(&self, when: u64, message: Message<T>) -> Result<(), PostError<T>> {
        let mut state = self.state.lock();
        if state.quitting {
            return Err(PostError(message));
        }
        let node = Box::new(Node {
            when,
            key: message.key,
            kind: if message.asynchronous {
                Kind::Async
            } else {
                Kind::Sync
            },
            payload: Some(message.payload),
            next: None,
        });
        state.pending += 1;
        let need_wake = Self::insert(&mut state, node);
        drop(state);
        if need_wake {
            self.wake_looper();
        }
        Ok(())
    }

    fn post_sync_barrier(&self, when: u64) -> Result<BarrierToken, QueueClosed> {
        let mut state = self.state.lock();
        if state.quitting {
            return Err(QueueClosed);
        }
        let token = state.next_barrier;
        state.next_barrier += 1;
        let mut node = Box::new(Node {
            when,
            key: MessageKey {
                target: 0,
                what: token as i64,
                obj: None,
            },
            kind: Kind::Barrier,
            payload: None,
            next: None,
        });
        // Barriers go after everything due at or before `when` (at the head for 0), and
        // never wake the looper.
        let mut link = &mut state.head;
        if when != FRONT_OF_QUEUE {
            while link.as_ref().is_some_and(|n| n.when <= when) {
                link = &mut link.as_mut().expect("checked above").next;
            }
        }
        node.next = link.take();
        *link = Some(node);
        Ok(BarrierToken(token))
    }

    fn remove_sync_barrier(&self, token: BarrierToken) -> bool {
        let mut state = self.state.lock();
        let is_barrier = |n: &Node<T>| n.kind == Kind::Barrier && n.key.what == token.0 as i64;
        let was_head = state.head.as_deref().is_some_and(is_barrier);
        if take_first(&mut state.head, is_barrier).is_none() {
            return false;
        }
        let need_wake = was_head
            && !state.quitting
            && state
                .head
                .as_deref()
                .is_none_or(|n| n.kind != Kind::Barrier);
        drop(state);
        if need_wake {
            self.wake_looper();
        }
        true
    }

    fn remove(&self, filter: KeyFilter<'_>) -> usize {
        let mut removed = Vec::new();
        {
            let mut state = self.state.lock();
            let matches = |n: &Node<T>| n.kind != Kind::Barrier && filter(&n.key);
            let mut link = &mut state.head;
            while link.is_some() {
                if link.as_deref().is_some_and(matches) {
                    let mut node = link.take().expect("checked above");
                    *link = node.next.take();
                    removed.push(node);
                } else {
                    link = &mut link.as_mut().expect("checked above").next;
                }
            }
            state.pending -= removed.len();
        }
        removed.len()
    }

    fn has(&self, filter: KeyFilter<'_>) -> bool {
        let state = self.state.lock();
        let mut cursor = state.head.as_deref();
        while let Some(n) = cursor {
            if n.kind != Kind::Barrier && filter(&n.key) {
                return true;
            }
            cursor = n.next.as_deref();
        }
        false
    }

    fn quit(&self) {
        let doomed = {
            let mut state = self.state.lock();
            if state.quitting {
                return;
            }
            state.quitting = true;
            state.pending = 0;
            state.head.take()
        };
        self.wake_looper();
        drop_list(doomed);
    }

    fn quit_safely(&self) {
        let doomed = {
            let mut state = self.state.lock();
            if state.quitting {
                return;
            }
            state.quitting = true;
            let now = self.clock.now();
            let mut link = &mut state.head;
            while link.as_ref().is_some_and(|n| n.when <= now) {
                link = &mut link.as_mut().expect("checked above").next;
            }
            let doomed = link.take();
            let mut count = 0;
            let mut cursor = doomed.as_deref();
            while let Some(n) = cursor {
                count += usize::from(n.kind != Kind::Barrier);
                cursor = n.next.as_deref();
            }
            state.pending -= count;
            doomed
        };
        self.wake_looper();
        drop_list(doomed);
    }

    fn is_quitting(&self) -> bool {
        self.state.lock().quitting
    }

    fn wake(&self) {
        self.state.lock().wake_requested = true;
        self.wake_looper();
    }

    fn pending(&self) -> usize {
        self.state.lock().pending
    }

    fn next(&self) -> Next<T> {
        let mut state = self.state.lock();
        if state.torn_down {
            return Next::Quit;
        }
        let now = self.clock.now();
        let barrier_first = state
            .head
            .as_deref()
            .is_some_and(|n| n.kind == Kind::Barrier);
        let due = Self::next_due(&state).is_some_and(|when| when <= now);
        if due {
            let node = if barrier_first {
                let head = state.head.as_mut().expect("barrier at head");
                take_first(&mut head.next, |n| n.kind == Kind::Async)
            } else {
                take_first(&mut state.head, |_| true)
            };
            let mut node = node.expect("a due node exists");
            state.pending -= 1;
            drop(state);
            return Next::Message {
                when: node.when,
                message: Message {
                    key: node.key,
                    asynchronous: node.kind == Kind::Async,
                    payload: node.payload.take().expect("messages carry a payload"),
                },
            };
        }
        if state.quitting {
            state.torn_down = true;
            state.pending = 0;
            let doomed = state.head.take();
            drop(state);
            drop_list(doomed);
            return Next::Quit;
        }
        Next::Idle
    }

    fn wait(&self) {
        let mut state = self.state.lock();
        if std::mem::take(&mut state.wake_requested) || state.quitting || state.torn_down {
            return;
        }
        let deadline = Self::next_due(&state);
        let now = self.clock.now();
        if deadline.is_some_and(|d| d <= now) {
            return;
        }
        state.blocked = true;
        match deadline {
            Some(d) => {
                self.cond
                    .wait_for(&mut state, Duration::from_nanos(d - now));
            }
            None => self.cond.wait(&mut state),
        }
        state.blocked = false;
    }
}

impl<T: Send + 'static, C: Clock> Drop for LegacyQueue<T, C> {
    fn drop(&mut self) {
        drop_list(self.state.get_mut().head.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VirtualClock;

    fn drain(q: &LegacyQueue<u32, VirtualClock>) -> Vec<u32> {
        let mut out = Vec::new();
        while let Next::Message { message, .. } = q.next() {
            out.push(message.payload);
        }
        out
    }

    #[test]
    fn sorted_insertion_front_posts_and_barriers() {
        let clock = VirtualClock::new(100);
        let q = LegacyQueue::with_clock(clock.clone());
        q.post_at(300, Message::new(0, 0, 1)).unwrap();
        q.post_at(200, Message::new(0, 0, 2)).unwrap();
        q.post_at(300, Message::new(0, 0, 3)).unwrap();
        q.post_at_front(Message::new(0, 0, 4)).unwrap();
        q.post_at_front(Message::new(0, 0, 5)).unwrap();
        assert_eq!(drain(&q), vec![5, 4]);
        let barrier = q.post_sync_barrier(250).unwrap();
        q.post_at(260, Message::new(0, 0, 6).asynchronous())
            .unwrap();
        clock.set(1_000);
        assert_eq!(drain(&q), vec![2, 6]);
        assert!(q.remove_sync_barrier(barrier));
        assert_eq!(q.remove(&|k| k.what == 0), 2);
        assert!(q.is_empty());
        q.quit();
        assert!(q.post(Message::new(0, 0, 7)).is_err());
        assert!(matches!(q.next(), Next::Quit));
    }

    #[test]
    fn long_lists_drop_without_recursion() {
        let q = LegacyQueue::new();
        for i in 0..if cfg!(miri) { 100 } else { 200_000 } {
            // Front posts insert in O(1), keeping the test quick.
            q.post_at_front(Message::new(0, 0, i)).unwrap();
        }
        drop(q);
    }
}
