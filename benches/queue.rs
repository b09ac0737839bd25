//! Criterion benchmark of DeliQueue against the legacy queue and crossbeam-channel
//! (the same scenarios as `marvin bench queue`, fewer of them; each iteration is one
//! whole scenario, timed by the scenario itself so setup stays out).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use marvin_sidebyside::QueueBench as s;

fn per_iteration(c: &mut Criterion, name: &str, f: impl Fn() -> Duration) {
    c.bench_function(name, |b| {
        b.iter_custom(|iters| (0..iters).map(|_| f()).sum())
    });
}

fn queue(c: &mut Criterion) {
    for (deli, imp) in [(true, "deliqueue"), (false, "legacy")] {
        per_iteration(c, &format!("single-thread enqueue+remove/{imp}"), || {
            s::single_thread(deli)
        });
        per_iteration(c, &format!("8x1000 immediate/{imp}"), || {
            s::eight_posters(deli)
        });
        per_iteration(c, &format!("busy insert 1e4 pending/{imp}"), || {
            s::busy(deli, 10_000)
        });
    }
    per_iteration(c, "fifo 1x100000/deliqueue", || s::fifo(true));
    per_iteration(c, "fifo 1x100000/crossbeam-channel", || s::fifo(false));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(2));
    targets = queue
}
criterion_main!(benches);
