//! The reach figures add up: for an app-shaped app (small objects, large objects, native
//! buffers), each kind's resident, reclaimed and swapped bytes and what it freed come to
//! what it allocated: to the byte for large objects (whole pages, measured from the large
//! space's pages, the kernel's page map and the stubs' bytes out, against the heap's own
//! counters), within each native buffer's page rounding (the mapping rounds it up to a
//! page), and by construction for small objects (only their swapped bytes are measured).
//! It holds while the app runs and after Marvin's reclaimer took its cold large objects.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use marvin_app::reach::{measure, Reach};
use marvin_app::{App, Command, RunConfig, SwapMode};
use marvin_interpreter::exec::Loaded;
use marvin_interpreter::{load, verify};
use marvin_swap::PolicyConfig;

/// app.masm, small: 6 groups of 64 items, 4 small arrays, one large array and 2 native
/// buffers each, with `rounds` rounds `gap_ms` apart (it ends after the last).
fn app_shaped(rounds: i64, gap_ms: i64) -> Arc<Loaded> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workloads/app.masm");
    let mut p = load::load(&path).expect("loads");
    let defines = [
        ("GROUPS", 6),
        ("ITEMS", 64),
        ("SMALL_ARRAYS", 4),
        ("NATIVE_BYTES", 10_000),
        ("ROUNDS", rounds),
        ("ROUND_GAP_MS", gap_ms),
        ("DELETE_GAP_MS", 1),
    ];
    let defines: Vec<(String, i64)> = defines.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    p.link(&defines).expect("links");
    Arc::new(Loaded::new(verify::verify(p).expect("verifies")))
}

fn until(app: &App, what: &str, done: impl Fn(&App) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done(app) {
        assert!(Instant::now() < deadline, "{what}");
        assert!(!app.is_ending(), "the app ended: {:?}", app.outcome());
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn adds_up(kind: &str, r: &Reach, slack: u64) {
    let accounted = r.resident + r.reclaimed + r.swapped + r.freed;
    assert!(
        accounted >= r.allocated && accounted - r.allocated <= slack,
        "{kind}: resident {} + reclaimed {} + swapped {} + freed {} = {accounted}, allocated {}",
        r.resident,
        r.reclaimed,
        r.swapped,
        r.freed,
        r.allocated
    );
}

fn check(app: &App) -> [Reach; 3] {
    let [small, large, native] = measure(app);
    adds_up("small objects", &small, 0);
    adds_up("large objects", &large, 0);
    // Each of the 12 live buffers of 10,000 bytes is mapped as 12,288.
    let buffers = app.stats().kinds.native_buffers;
    assert_eq!(buffers, 12);
    adds_up("native buffers", &native, buffers * 2_288);
    assert!(small.live() > 6 * 64 * 560 && large.live() > 0 && native.live() > 0);
    [small, large, native]
}

fn quiet() -> RunConfig {
    RunConfig {
        out: Box::new(std::io::sink()),
        ..RunConfig::default()
    }
}

#[test]
fn resident_swapped_and_freed_add_up_once_the_app_has_dropped_and_rebuilt_everything() {
    // Three rounds rebuild every group (two a round) and free the old ones' buffers; the
    // app then ends by itself and is measured at rest.
    let app = Arc::new(App::new(app_shaped(3, 1), quiet()).expect("app"));
    let running = App::launch(&app, "test-main".into()).expect("launches");
    assert_eq!(running.join(), None);
    assert_eq!(app.mark_count("round"), 4);
    assert_eq!(app.mark_count("verify_failed"), 0);
    let [_, _, native] = check(&app);
    assert_eq!(native.freed, 6 * 2 * 10_000, "every first buffer freed");
}

#[test]
fn reclaimed_large_objects_are_counted_once_and_the_figures_still_add_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Set up, then no round for ten minutes: at rest but for the heap task.
    let app = Arc::new(App::new(app_shaped(0, 600_000), quiet()).expect("app"));
    app.enable_swap(
        dir.path(),
        "app",
        Arc::new(PolicyConfig::default()),
        SwapMode::Objects,
    )
    .expect("swap on");
    let running = App::launch(&app, "test-main".into()).expect("launches");
    until(&app, "set-up", |a| a.mark_count("round") >= 1);
    let before = check(&app);
    assert_eq!(before[1].reclaimed, 0, "nothing reclaimed yet");
    for line in ["bg", "save", "reclaim"] {
        let cmd: Command = line.parse().expect("a command");
        app.apply(cmd).unwrap_or_else(|e| panic!("{line}: {e}"));
    }
    let after = check(&app);
    assert!(after[1].reclaimed > 0, "the reclaim took no large object");
    assert_eq!(after[1].resident + after[1].reclaimed, before[1].resident);
    assert_eq!(after[0].reclaimed + after[2].reclaimed, 0);
    assert!(app.apply(Command::Stop).expect("stops").is_none());
    assert_eq!(running.join(), None);
    assert_eq!(app.mark_count("verify_failed"), 0);
}
