//! What a message queue holds and the one trait both queues implement.
//!
//! A [`Message`] is a payload `T` (owned by the queue until delivered) plus a
//! [`MessageKey`] that other threads match on when they remove or look for messages.
//! Other threads never see the payload: predicates take only the key, so a payload is
//! touched by the poster (before posting) and by the looper (when it delivers or drops
//! it), and nobody else.

use std::fmt;
use std::time::Duration;

use thiserror::Error;

/// The fields `remove` and `has` match on (Android's `target`, `what`, `obj`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageKey {
    /// The handler (or any owner) the message is for.
    pub target: u64,
    /// The message code.
    pub what: i64,
    /// An optional object token.
    pub obj: Option<u64>,
}

/// A message: a key, whether it is asynchronous (passes sync barriers), and a payload.
pub struct Message<T> {
    pub key: MessageKey,
    /// Asynchronous messages are not held back by sync barriers.
    pub asynchronous: bool,
    pub payload: T,
}

impl<T> Message<T> {
    /// A synchronous message with no object token.
    pub fn new(target: u64, what: i64, payload: T) -> Message<T> {
        Message {
            key: MessageKey {
                target,
                what,
                obj: None,
            },
            asynchronous: false,
            payload,
        }
    }

    /// Sets the object token.
    pub fn with_obj(mut self, obj: u64) -> Message<T> {
        self.key.obj = Some(obj);
        self
    }

    /// Makes the message asynchronous.
    pub fn asynchronous(mut self) -> Message<T> {
        self.asynchronous = true;
        self
    }
}

impl<T> fmt::Debug for Message<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("key", &self.key)
            .field("asynchronous", &self.asynchronous)
            .finish_non_exhaustive()
    }
}

/// A predicate over message keys, for `remove` and `has`.
pub type KeyFilter<'a> = &'a dyn Fn(&MessageKey) -> bool;

/// What one step of the loop found.
#[derive(Debug)]
pub enum Next<T> {
    /// A message that is due, moved out of the queue: the caller now owns it.
    Message { when: u64, message: Message<T> },
    /// Nothing is due right now; the loop may check its own exit conditions, then
    /// call `wait`.
    Idle,
    /// The queue has quit and is torn down; every later call returns `Quit` too.
    Quit,
}

/// A post after quit: the message comes back to the caller, untouched.
#[derive(Error)]
#[error("the message queue has quit; the message was not posted")]
pub struct PostError<T>(pub Message<T>);

impl<T> fmt::Debug for PostError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PostError").field(&self.0).finish()
    }
}

/// An operation other than a post (a sync barrier) after quit.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("the message queue has quit")]
pub struct QueueClosed;

/// Names a sync barrier, to remove it later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BarrierToken(pub u64);

/// A delay in the queues' nanoseconds (saturating: a delay too long to count is never).
pub(crate) fn delay_nanos(delay: Duration) -> u64 {
    u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX)
}

/// The due time of a front-of-queue post: before every timed message, and the last one
/// posted first among themselves.
pub const FRONT_OF_QUEUE: u64 = 0;

/// A message queue with one looper: any thread posts, removes and asks; one thread
/// (the looper) takes messages with [`next`](MessageQueue::next) and sleeps in
/// [`wait`](MessageQueue::wait).
///
/// Times are nanoseconds on the queue's clock ([`now`](MessageQueue::now)), which never
/// reads 0; a due time of [`FRONT_OF_QUEUE`] (0) means "at the front of the queue".
/// Messages are delivered by due time, then in posting order, except front-of-queue
/// messages, which are last-in first-out among themselves.
pub trait MessageQueue<T: Send + 'static>: Send + Sync {
    /// The queue clock's current time.
    fn now(&self) -> u64;

    /// Posts `message` to be delivered at `when` (or at the front with
    /// [`FRONT_OF_QUEUE`]). After quit the message comes back in the error.
    fn post_at(&self, when: u64, message: Message<T>) -> Result<(), PostError<T>>;

    /// Posts `message` to be delivered `delay` from now.
    fn post_delayed(&self, delay: Duration, message: Message<T>) -> Result<(), PostError<T>> {
        self.post_at(self.now().saturating_add(delay_nanos(delay)), message)
    }

    /// Posts `message` to be delivered as soon as possible, after what is already due.
    fn post(&self, message: Message<T>) -> Result<(), PostError<T>> {
        self.post_at(self.now(), message)
    }

    /// Posts `message` before everything else (last-in first-out among such posts).
    fn post_at_front(&self, message: Message<T>) -> Result<(), PostError<T>> {
        self.post_at(FRONT_OF_QUEUE, message)
    }

    /// Puts a sync barrier at `when`: from when it reaches the front of the queue until
    /// it is removed, synchronous messages are held back; asynchronous ones pass.
    fn post_sync_barrier(&self, when: u64) -> Result<BarrierToken, QueueClosed>;

    /// Removes a sync barrier; false when there is no such pending barrier.
    fn remove_sync_barrier(&self, token: BarrierToken) -> bool;

    /// Removes every pending message whose key matches; returns how many. The payloads
    /// are dropped (by the looper thread, for DeliQueue).
    fn remove(&self, filter: KeyFilter<'_>) -> usize;

    /// Whether some pending message's key matches.
    fn has(&self, filter: KeyFilter<'_>) -> bool;

    /// Quits: every later post fails; pending messages are dropped.
    fn quit(&self);

    /// Quits safely: every later post fails; messages already due are still delivered,
    /// later ones are dropped.
    fn quit_safely(&self);

    /// Whether quit or quit-safely was called.
    fn is_quitting(&self) -> bool;

    /// Wakes the looper if it is waiting, so it re-checks (callable from any thread).
    fn wake(&self);

    /// How many messages (not barriers) are pending.
    fn pending(&self) -> usize;

    /// Whether no message is pending.
    fn is_empty(&self) -> bool {
        self.pending() == 0
    }

    /// Looper only: takes the next due message, or says the queue is idle or has quit.
    /// Never blocks.
    fn next(&self) -> Next<T>;

    /// Looper only: sleeps until a message may be due, a wake-up or quit.
    fn wait(&self);
}
