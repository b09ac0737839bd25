//! Differential test: random sequences of posts, front posts, removals, queries,
//! barriers, asynchronous messages, single deliveries and drains, run on DeliQueue and on the legacy queue with one
//! virtual clock, must deliver the same messages in the same order and answer every
//! query the same way.

use marvin_deliqueue::LegacyQueue;
use marvin_deliqueue::{BarrierToken, DeliQueue, Message, MessageQueue, Next, VirtualClock};
use proptest::prelude::*;
use std::time::Duration;

#[derive(Debug, Clone)]
enum Op {
    Post {
        delay: u64,
        what: i64,
        obj: Option<u64>,
        asynchronous: bool,
    },
    PostFront {
        what: i64,
    },
    Remove {
        what: i64,
        obj: Option<u64>,
    },
    Has {
        what: i64,
    },
    Barrier {
        delay: u64,
    },
    RemoveBarrier {
        index: usize,
    },
    Advance {
        by: u64,
    },
    Drain,
    /// One `next`: posts then land between deliveries while due messages wait swept.
    NextOne,
    QuitSafely,
    Quit,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..6, 0i64..4, proptest::option::of(0u64..3), any::<bool>()).prop_map(
            |(delay, what, obj, asynchronous)| Op::Post { delay: delay * 10, what, obj, asynchronous }
        ),
        1 => (0i64..4).prop_map(|what| Op::PostFront { what }),
        2 => (0i64..4, proptest::option::of(0u64..3)).prop_map(|(what, obj)| Op::Remove { what, obj }),
        1 => (0i64..4).prop_map(|what| Op::Has { what }),
        1 => (0u64..6).prop_map(|delay| Op::Barrier { delay: delay * 10 }),
        1 => (0usize..4).prop_map(|index| Op::RemoveBarrier { index }),
        2 => (0u64..40).prop_map(|by| Op::Advance { by }),
        2 => Just(Op::Drain),
        3 => Just(Op::NextOne),
        1 => Just(Op::QuitSafely),
        1 => Just(Op::Quit),
    ]
}

/// Everything observable from one op.
#[derive(Debug, PartialEq)]
enum Seen {
    Posted(bool),
    Removed(usize),
    Has(bool),
    Barrier(Option<BarrierToken>),
    BarrierRemoved(bool),
    Delivered(Vec<(u64, u32, bool)>, bool),
    Nothing,
}

struct Run<Q> {
    queue: Q,
    barriers: Vec<BarrierToken>,
    next_id: u32,
}

impl<Q: MessageQueue<u32>> Run<Q> {
    fn apply(&mut self, op: &Op) -> Seen {
        let q = &self.queue;
        match *op {
            Op::Post {
                delay,
                what,
                obj,
                asynchronous,
            } => {
                self.next_id += 1;
                let mut m = Message::new(1, what, self.next_id);
                if let Some(o) = obj {
                    m = m.with_obj(o);
                }
                if asynchronous {
                    m = m.asynchronous();
                }
                // All three ways of posting a timed message (DeliQueue has its own
                // `post` and `post_delayed`, legacy the trait's defaults).
                let posted = match (delay, self.next_id % 2) {
                    (0, _) => q.post(m),
                    (_, 0) => q.post_delayed(Duration::from_nanos(delay), m),
                    _ => q.post_at(self.clock_now() + delay, m),
                };
                Seen::Posted(posted.is_ok())
            }
            Op::PostFront { what } => {
                self.next_id += 1;
                Seen::Posted(q.post_at_front(Message::new(1, what, self.next_id)).is_ok())
            }
            Op::Remove { what, obj } => {
                Seen::Removed(q.remove(&|k| k.what == what && obj.is_none_or(|o| k.obj == Some(o))))
            }
            Op::Has { what } => Seen::Has(q.has(&|k| k.what == what)),
            Op::Barrier { delay } => {
                // From 20 ns in the past (a barrier may hold back messages already due).
                let token = q
                    .post_sync_barrier((self.clock_now() + delay).saturating_sub(20))
                    .ok();
                self.barriers.extend(token);
                Seen::Barrier(token)
            }
            Op::RemoveBarrier { index } => match self.barriers.get(index).copied() {
                Some(token) => Seen::BarrierRemoved(q.remove_sync_barrier(token)),
                None => Seen::Nothing,
            },
            // Both runs share the clock: the test loop moves it once for both.
            Op::Advance { .. } => Seen::Nothing,
            Op::Drain => {
                let mut out = Vec::new();
                let quit = loop {
                    match q.next() {
                        Next::Message { when, message } => {
                            out.push((when, message.payload, message.asynchronous))
                        }
                        Next::Idle => break false,
                        Next::Quit => break true,
                    }
                };
                Seen::Delivered(out, quit)
            }
            Op::NextOne => match q.next() {
                Next::Message { when, message } => {
                    Seen::Delivered(vec![(when, message.payload, message.asynchronous)], false)
                }
                Next::Idle => Seen::Delivered(Vec::new(), false),
                Next::Quit => Seen::Delivered(Vec::new(), true),
            },
            Op::QuitSafely => {
                q.quit_safely();
                Seen::Nothing
            }
            Op::Quit => {
                q.quit();
                Seen::Nothing
            }
        }
    }

    fn clock_now(&self) -> u64 {
        self.queue.now()
    }
}

/// Runs `ops` on both queues, op by op, and checks that they agree throughout.
fn run_both(ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = VirtualClock::new(1_000);
    let mut deli = Run {
        queue: DeliQueue::<u32, _>::with_clock(clock.clone()),
        barriers: Vec::new(),
        next_id: 0,
    };
    let mut legacy = Run {
        queue: LegacyQueue::<u32, _>::with_clock(clock.clone()),
        barriers: Vec::new(),
        next_id: 0,
    };
    for (i, op) in ops.iter().enumerate() {
        if let Op::Advance { by } = op {
            clock.advance(*by);
        }
        let a = deli.apply(op);
        let b = legacy.apply(op);
        prop_assert_eq!(&a, &b, "op #{} {:?}", i, op);
        prop_assert_eq!(
            deli.queue.pending(),
            legacy.queue.pending(),
            "pending after op #{}",
            i
        );
    }
    // Deliver the rest: everything eventually comes out the same.
    clock.advance(1_000_000);
    let a = deli.apply(&Op::Drain);
    let b = legacy.apply(&Op::Drain);
    prop_assert_eq!(a, b);
    prop_assert_eq!(deli.queue.pending(), legacy.queue.pending());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn deliqueue_matches_legacy(ops in proptest::collection::vec(op(), 1..80)) {
        run_both(&ops)?;
    }
}

/// A barrier posted between two deliveries, due before the swept messages left.
#[test]
fn a_barrier_between_deliveries() {
    let post = Op::Post {
        delay: 0,
        what: 0,
        obj: None,
        asynchronous: false,
    };
    let ops = [
        post.clone(),
        post,
        Op::NextOne,
        Op::Barrier { delay: 0 },
        Op::NextOne,
    ];
    run_both(&ops).unwrap();
}
