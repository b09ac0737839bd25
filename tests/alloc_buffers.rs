//! Allocation from per-thread buffers, seen from `marvin run --stats-json`: the counts of
//! objects allocated by several threads (spawned ones, which exit, and the main one) add
//! up exactly, with and without collections, and with `--heap-limit` (which allocates
//! one object at a time; several threads under a small limit never run out of memory
//! spuriously).

use std::process::Command;

use serde_json::Value;

/// Four threads (three spawned unless `SPAWN` is 0, and main) each allocate `K` nodes, keeping every
/// `KEEP`-th in a list whose length main prints; the rest is garbage.
const PROGRAM: &str = ".const K 60000
.const KEEP 7
.const SPAWN 1
.class Node
  .field next ref
  .field value int
.end

.method work args=1 locals=3
  push 0
  store 1          ; i
  null
  store 2          ; list
top:
  load 1
  push K
  lt
  jz done
  new Node
  dup
  load 1
  putfield Node.value
  load 1
  push KEEP
  rem
  jnz drop
  dup
  load 2
  putfield Node.next
  store 2
  jmp next
drop:
  pop
next:
  load 1
  push 1
  add
  store 1
  jmp top
done:
  push 0
  store 0          ; the list's length
walk:
  load 2
  null
  refeq
  jnz counted
  load 2
  getfield Node.next
  store 2
  load 0
  push 1
  add
  store 0
  jmp walk
counted:
  load 0
  ret
.end

.method main args=0 locals=0
  push SPAWN
  jz alone
  push 0
  spawn work
  push 1
  spawn work
  push 2
  spawn work
alone:
  push 3
  call work
  print
  push 0
  ret
.end
";

const K: u64 = 60_000;
const KEEP: u64 = 7;
/// A node: a 16-byte header and two 8-byte slots.
const NODE_BYTES: u64 = 32;

/// Runs the program with `extra` flags: its output, and its statistics if it wrote them.
fn run_output(extra: &[&str]) -> (std::process::Output, Option<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("threads.masm");
    std::fs::write(&prog, PROGRAM).unwrap();
    let stats = dir.path().join("stats.json");
    let mut args = vec![
        "run".to_string(),
        prog.display().to_string(),
        "--stats-json".into(),
        stats.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(&args)
        .output()
        .expect("run marvin");
    let stats = std::fs::read_to_string(&stats)
        .ok()
        .map(|json| serde_json::from_str(&json).unwrap());
    (out, stats)
}

/// Runs the program with `extra` flags, which must succeed: its output and statistics.
fn run(extra: &[&str]) -> (String, Value) {
    let (out, stats) = run_output(extra);
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stats.expect("statistics written"),
    )
}

fn n(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

fn check(extra: &[&str], threads: u64) -> Value {
    check_keeping(extra, threads, KEEP)
}

/// As [`check`], for a run with `-D KEEP=keep` among `extra` (or none: [`KEEP`]).
fn check_keeping(extra: &[&str], threads: u64, keep: u64) -> Value {
    let (stdout, stats) = run(extra);
    // Main's list is intact: every kept node is reachable.
    assert_eq!(stdout.trim(), K.div_ceil(keep).to_string());
    let total = threads * K;
    assert_eq!(n(&stats, "allocations"), total, "{stats}");
    assert_eq!(n(&stats, "bytes_allocated"), total * NODE_BYTES, "{stats}");
    // What was freed and what is live add up to what was allocated.
    assert_eq!(
        n(&stats, "objects_freed") * NODE_BYTES + n(&stats, "live_bytes"),
        total * NODE_BYTES,
        "{stats}"
    );
    assert!(n(&stats, "peak_heap_bytes") >= n(&stats, "live_bytes"));
    stats
}

#[test]
fn counts_from_several_threads_buffers_add_up() {
    check(&[], 4);
}

#[test]
fn counts_add_up_across_collections_and_with_a_heap_limit() {
    // 4 x 60 000 nodes of 32 bytes (7.3 MiB, at most 4 x 275 KiB of them live) under a
    // 2 MiB limit: several collections, and every object counted one at a time.
    let stats = check(&["--heap-limit", "2m"], 4);
    assert!(n(&stats, "collections") >= 2, "{stats}");
    assert!(n(&stats, "objects_freed") > 0, "{stats}");
}

#[test]
fn threads_allocating_garbage_under_a_small_limit_never_run_out_of_memory() {
    // Four threads keep one node each and drop 239 996 (7.3 MiB) under a 64 KiB limit: a
    // collection every two thousand nodes or so. The others run again as soon as one
    // thread's collection ends and may fill the heap before that thread allocates, which
    // is no out of memory while so little is live (that failed most runs on a loaded
    // machine). The limit still holds: at most one object per thread goes in above it.
    let limit = 64 << 10;
    let stats = check_keeping(&["--heap-limit", "64k", "-D", "KEEP=1000000"], 4, 1_000_000);
    // Each collection leaves room for at most the limit's worth of allocation.
    assert!(
        n(&stats, "collections") >= 4 * K * NODE_BYTES / (2 * limit),
        "{stats}"
    );
    assert!(
        n(&stats, "peak_heap_bytes") <= limit + 4 * NODE_BYTES,
        "{stats}"
    );
}

#[test]
fn threads_that_keep_more_than_the_limit_run_out_of_memory() {
    // Every node kept: 4 x 60 000 x 32 bytes live cannot fit under 64 KiB, and the run
    // ends with the runtime error (not a hang, not a panic), however the threads race.
    let (out, _) = run_output(&["--heap-limit", "64k", "-D", "KEEP=1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("error: out of memory at work+"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
