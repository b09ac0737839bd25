//! Android's message-loop API over any [`MessageQueue`]: a [`Looper`] runs the loop on
//! its thread, [`Handler`]s (any thread) send messages and runnables to it, and idle
//! handlers run when nothing is due.
//!
//! - Messages: send now, delayed, at a time, or at the front of the queue (last-in
//!   first-out among front posts); remove and ask by `what` (and object token), or
//!   remove everything of one handler.
//! - Sync barriers ([`Looper::post_sync_barrier`]) hold back synchronous messages;
//!   asynchronous handlers' messages pass.
//! - Idle handlers run once each time the queue becomes idle (nothing due); one that
//!   returns false is unregistered.
//! - Quit and quit-safely from any thread, including a handler on the looper thread.

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::{BarrierToken, DeliQueue, Message, MessageQueue, Next, QueueClosed};

/// Work posted as a closure.
pub type Runnable = Box<dyn FnOnce() + Send>;

/// A message's fields as its handler sees them.
#[derive(Default)]
pub struct HandlerMessage {
    pub what: i64,
    pub arg1: i64,
    pub arg2: i64,
    /// The object token `remove`/`has` can match on.
    pub obj: Option<u64>,
    /// Any data.
    pub data: Option<Box<dyn Any + Send>>,
}

impl HandlerMessage {
    /// A message with just a code.
    pub fn what(what: i64) -> HandlerMessage {
        HandlerMessage {
            what,
            ..HandlerMessage::default()
        }
    }
}

impl fmt::Debug for HandlerMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerMessage")
            .field("what", &self.what)
            .field("arg1", &self.arg1)
            .field("arg2", &self.arg2)
            .field("obj", &self.obj)
            .finish_non_exhaustive()
    }
}

type Callback = Arc<dyn Fn(HandlerMessage) + Send + Sync>;

enum Body {
    Run(Runnable),
    Message(HandlerMessage, Callback),
}

/// What the looper's queue carries.
pub struct Envelope(Body);

/// The queue type a looper runs.
pub type LooperQueue = dyn MessageQueue<Envelope>;

/// `what` of posted runnables (kept apart from message codes).
const RUNNABLE_WHAT: i64 = i64::MIN;

/// Posting after the looper quit.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LooperError {
    #[error("the looper has quit")]
    Quit,
}

impl From<QueueClosed> for LooperError {
    fn from(_: QueueClosed) -> Self {
        LooperError::Quit
    }
}

/// The message loop of one thread.
pub struct Looper {
    queue: Arc<LooperQueue>,
    idle_handlers: RefCell<Vec<Box<dyn FnMut() -> bool>>>,
}

impl Default for Looper {
    fn default() -> Self {
        Looper::new()
    }
}

impl Looper {
    /// A looper over a new DeliQueue.
    pub fn new() -> Looper {
        Looper::with_queue(Arc::new(DeliQueue::<Envelope>::new()))
    }

    /// A looper over the given queue (the legacy queue, for comparisons).
    pub fn with_queue(queue: Arc<LooperQueue>) -> Looper {
        Looper {
            queue,
            idle_handlers: RefCell::new(Vec::new()),
        }
    }

    /// The queue.
    pub fn queue(&self) -> &Arc<LooperQueue> {
        &self.queue
    }

    /// Registers an idle handler; it stays while it returns true.
    pub fn add_idle_handler(&self, handler: impl FnMut() -> bool + 'static) {
        self.idle_handlers.borrow_mut().push(Box::new(handler));
    }

    /// Puts a sync barrier at `when` (queue time).
    pub fn post_sync_barrier(&self, when: u64) -> Result<BarrierToken, LooperError> {
        Ok(self.queue.post_sync_barrier(when)?)
    }

    /// Removes a sync barrier; false when there is none with this token.
    pub fn remove_sync_barrier(&self, token: BarrierToken) -> bool {
        self.queue.remove_sync_barrier(token)
    }

    /// Quits: pending messages are dropped.
    pub fn quit(&self) {
        self.queue.quit();
    }

    /// Quits after delivering what is already due.
    pub fn quit_safely(&self) {
        self.queue.quit_safely();
    }

    /// Runs the loop on this thread until the queue quits.
    pub fn run(&self) {
        let mut idle_due = true;
        loop {
            match self.queue.next() {
                Next::Message { message, .. } => {
                    idle_due = true;
                    match message.payload.0 {
                        Body::Run(runnable) => runnable(),
                        Body::Message(msg, callback) => callback(msg),
                    }
                }
                Next::Idle if idle_due => {
                    // Once per idle period; then look again (idle handlers may post).
                    idle_due = false;
                    self.run_idle_handlers();
                }
                Next::Idle => self.queue.wait(),
                Next::Quit => return,
            }
        }
    }

    fn run_idle_handlers(&self) {
        // Taken out while they run, so an idle handler may register another.
        let mut handlers = std::mem::take(&mut *self.idle_handlers.borrow_mut());
        handlers.retain_mut(|h| h());
        let mut slot = self.idle_handlers.borrow_mut();
        handlers.append(&mut slot);
        *slot = handlers;
    }
}

/// Sends messages and runnables to one looper; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Handler {
    queue: Arc<LooperQueue>,
    id: u64,
    callback: Callback,
    asynchronous: bool,
}

static NEXT_HANDLER: AtomicU64 = AtomicU64::new(1);

impl Handler {
    /// A handler whose messages go to `callback` on the looper thread.
    pub fn new(looper: &Looper, callback: impl Fn(HandlerMessage) + Send + Sync + 'static) -> Self {
        Handler {
            queue: looper.queue.clone(),
            // Relaxed: ids need only be unique.
            id: NEXT_HANDLER.fetch_add(1, Ordering::Relaxed),
            callback: Arc::new(callback),
            asynchronous: false,
        }
    }

    /// A handler whose messages are all asynchronous (they pass sync barriers).
    pub fn new_async(
        looper: &Looper,
        callback: impl Fn(HandlerMessage) + Send + Sync + 'static,
    ) -> Self {
        Handler {
            asynchronous: true,
            ..Handler::new(looper, callback)
        }
    }

    fn envelope(&self, what: i64, obj: Option<u64>, body: Body) -> Message<Envelope> {
        let mut m = Message::new(self.id, what, Envelope(body));
        m.key.obj = obj;
        m.asynchronous = self.asynchronous;
        m
    }

    fn message(&self, msg: HandlerMessage) -> Message<Envelope> {
        let (what, obj) = (msg.what, msg.obj);
        self.envelope(what, obj, Body::Message(msg, self.callback.clone()))
    }

    fn runnable(&self, r: impl FnOnce() + Send + 'static) -> Message<Envelope> {
        self.envelope(RUNNABLE_WHAT, None, Body::Run(Box::new(r)))
    }

    fn sent(result: Result<(), crate::PostError<Envelope>>) -> Result<(), LooperError> {
        result.map_err(|_| LooperError::Quit)
    }

    pub fn send_message(&self, msg: HandlerMessage) -> Result<(), LooperError> {
        Self::sent(self.queue.post(self.message(msg)))
    }

    pub fn send_empty_message(&self, what: i64) -> Result<(), LooperError> {
        self.send_message(HandlerMessage::what(what))
    }

    pub fn send_message_delayed(
        &self,
        msg: HandlerMessage,
        delay: Duration,
    ) -> Result<(), LooperError> {
        Self::sent(self.queue.post_delayed(delay, self.message(msg)))
    }

    /// Sends at `when` on the queue's clock (`Looper::queue().now()`).
    pub fn send_message_at_time(&self, msg: HandlerMessage, when: u64) -> Result<(), LooperError> {
        Self::sent(self.queue.post_at(when, self.message(msg)))
    }

    pub fn send_message_at_front_of_queue(&self, msg: HandlerMessage) -> Result<(), LooperError> {
        Self::sent(self.queue.post_at_front(self.message(msg)))
    }

    pub fn post(&self, r: impl FnOnce() + Send + 'static) -> Result<(), LooperError> {
        Self::sent(self.queue.post(self.runnable(r)))
    }

    pub fn post_delayed(
        &self,
        r: impl FnOnce() + Send + 'static,
        delay: Duration,
    ) -> Result<(), LooperError> {
        Self::sent(self.queue.post_delayed(delay, self.runnable(r)))
    }

    pub fn post_at_time(
        &self,
        r: impl FnOnce() + Send + 'static,
        when: u64,
    ) -> Result<(), LooperError> {
        Self::sent(self.queue.post_at(when, self.runnable(r)))
    }

    pub fn post_at_front_of_queue(
        &self,
        r: impl FnOnce() + Send + 'static,
    ) -> Result<(), LooperError> {
        Self::sent(self.queue.post_at_front(self.runnable(r)))
    }

    /// Removes this handler's pending messages with code `what`; returns how many.
    pub fn remove_messages(&self, what: i64) -> usize {
        self.queue
            .remove(&|k| k.target == self.id && k.what == what)
    }

    /// Removes this handler's pending messages with code `what` and object `obj`.
    pub fn remove_messages_with_obj(&self, what: i64, obj: u64) -> usize {
        self.queue
            .remove(&|k| k.target == self.id && k.what == what && k.obj == Some(obj))
    }

    /// Removes every pending message and runnable of this handler.
    pub fn remove_all(&self) -> usize {
        self.queue.remove(&|k| k.target == self.id)
    }

    pub fn has_messages(&self, what: i64) -> bool {
        self.queue.has(&|k| k.target == self.id && k.what == what)
    }

    pub fn has_messages_with_obj(&self, what: i64, obj: u64) -> bool {
        self.queue
            .has(&|k| k.target == self.id && k.what == what && k.obj == Some(obj))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::legacy_queue::LegacyQueue;

    fn loopers() -> Vec<Looper> {
        vec![
            Looper::new(),
            Looper::with_queue(Arc::new(LegacyQueue::<Envelope>::new())),
        ]
    }

    fn recorder() -> (
        Arc<Mutex<Vec<i64>>>,
        impl Fn(HandlerMessage) + Send + Sync + Clone,
    ) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        (log, move |m: HandlerMessage| {
            sink.lock().unwrap().push(m.what)
        })
    }

    #[test]
    fn messages_runnables_front_and_removal() {
        for looper in loopers() {
            let (log, record) = recorder();
            let h = Handler::new(&looper, record);
            h.send_empty_message(1).unwrap();
            h.send_message(HandlerMessage {
                what: 2,
                obj: Some(9),
                ..HandlerMessage::default()
            })
            .unwrap();
            h.send_empty_message(3).unwrap();
            h.send_message_at_front_of_queue(HandlerMessage::what(4))
                .unwrap();
            h.send_message_at_front_of_queue(HandlerMessage::what(5))
                .unwrap();
            h.send_message_delayed(HandlerMessage::what(6), Duration::from_secs(3600))
                .unwrap();
            assert!(h.has_messages_with_obj(2, 9));
            assert_eq!(h.remove_messages_with_obj(2, 9), 1);
            assert!(!h.has_messages(2));
            assert_eq!(h.remove_messages(6), 1);
            let (l2, quitter) = (log.clone(), looper.queue().clone());
            h.post(move || {
                l2.lock().unwrap().push(100);
                quitter.quit_safely();
            })
            .unwrap();
            looper.run();
            assert_eq!(*log.lock().unwrap(), vec![5, 4, 1, 3, 100]);
            assert_eq!(h.send_empty_message(7), Err(LooperError::Quit));
        }
    }

    #[test]
    fn idle_handlers_run_when_idle_and_unregister() {
        for looper in loopers() {
            let (log, record) = recorder();
            let h = Handler::new(&looper, record);
            let runs = Arc::new(AtomicU64::new(0));
            let (h2, r2) = (h.clone(), runs.clone());
            // Posts once more on each idle period, then unregisters after the third.
            looper.add_idle_handler(move || {
                let n = r2.fetch_add(1, Ordering::SeqCst) + 1;
                if n < 3 {
                    h2.send_empty_message(n as i64).unwrap();
                    true
                } else {
                    h2.post({
                        let q = h2.queue.clone();
                        move || q.quit()
                    })
                    .unwrap();
                    false
                }
            });
            looper.run();
            assert_eq!(runs.load(Ordering::SeqCst), 3);
            assert_eq!(*log.lock().unwrap(), vec![1, 2]);
        }
    }

    #[test]
    fn barrier_holds_sync_messages_but_not_async_ones() {
        for looper in loopers() {
            let (log, record) = recorder();
            let sync = Handler::new(&looper, record.clone());
            let asynchronous = Handler::new_async(&looper, record);
            let token = looper.post_sync_barrier(looper.queue().now()).unwrap();
            sync.send_empty_message(1).unwrap();
            asynchronous.send_empty_message(2).unwrap();
            let q = looper.queue().clone();
            asynchronous
                .post(move || {
                    assert!(q.remove_sync_barrier(token));
                })
                .unwrap();
            let q = looper.queue().clone();
            sync.post(move || q.quit()).unwrap();
            looper.run();
            assert_eq!(*log.lock().unwrap(), vec![2, 1]);
        }
    }

    #[test]
    fn cross_thread_sends_reach_the_looper() {
        for looper in loopers() {
            let (log, record) = recorder();
            let h = Handler::new(&looper, record);
            let sender = {
                let h = h.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        h.send_empty_message(i).unwrap();
                    }
                    let q = h.queue.clone();
                    h.post(move || q.quit_safely()).unwrap();
                })
            };
            looper.run();
            sender.join().unwrap();
            assert_eq!(*log.lock().unwrap(), (0..50).collect::<Vec<_>>());
        }
    }
}
