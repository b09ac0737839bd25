//! Criterion view of the interpreter benchmark: each program at its quick size under marvin
//! and the installed peers, run as subprocesses exactly as `marvin bench interp --quick`
//! does (the side-by-side table with ratios comes from that command).

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use marvin_sidebyside::{default_dir, run_timed, Implementation, PROGRAMS};

const MARVIN: &str = env!("CARGO_BIN_EXE_marvin");

fn interp(c: &mut Criterion) {
    let dir = default_dir();
    let implementations: Vec<Implementation> = Implementation::ALL
        .into_iter()
        .filter(|imp| {
            let ok = imp.available();
            if !ok {
                eprintln!("note: {} skipped: not installed", imp.name());
            }
            ok
        })
        .collect();
    for p in PROGRAMS {
        let mut group = c.benchmark_group(format!("interp/{}", p.name));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(10));
        for &imp in &implementations {
            let what = format!("{} under {}", p.name, imp.name());
            group.bench_function(BenchmarkId::new(imp.name(), p.quick), |b| {
                b.iter(|| {
                    run_timed(imp.command(Path::new(MARVIN), &dir, p.name, p.quick), &what)
                        .unwrap_or_else(|e| panic!("{e:#}"))
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, interp);
criterion_main!(benches);
