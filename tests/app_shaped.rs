//! The app-shaped workloads (`builtin:app`, `builtin:feed`, `builtin:media`): each runs with
//! the sizes and shares `docs/experiments.md` states (small objects, large objects, native
//! buffers, measured by the app's own counters), verifies what it reads, and ends with
//! status 3 when one of its objects of any kind is damaged.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workload(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/workloads/{name}.masm"))
}

/// `marvin run FILE` for one round with no waits; its output and `--stats-json`.
fn run(file: &Path, extra: &[&str]) -> (Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_marvin"));
    cmd.arg("run").arg(file);
    for d in ["ROUNDS=1", "ROUND_GAP_MS=0", "DELETE_GAP_MS=0"]
        .iter()
        .chain(extra)
    {
        cmd.args(["-D", d]);
    }
    let out = cmd.arg("--stats-json").arg(&stats).output().unwrap();
    let json = std::fs::read(&stats)
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or(serde_json::Value::Null);
    (out, json)
}

/// A shape's constants, as its file declares them.
struct Shape {
    app_bytes: u64,
    groups: u64,
    drop: u64,
    items: u64,
    small_arrays: u64,
    big_every: u64,
    big_arrays: u64,
    native_bufs: u64,
    native_bytes: u64,
}

impl Shape {
    fn of(name: &str) -> Shape {
        let text = std::fs::read_to_string(workload(name)).unwrap();
        let c = |k: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!(".const {k} ")))
                .unwrap_or_else(|| panic!("{name}: no {k}"))
                .trim()
                .parse()
                .unwrap()
        };
        Shape {
            app_bytes: c("APP_BYTES"),
            groups: c("GROUPS"),
            drop: c("DROP"),
            items: c("ITEMS"),
            small_arrays: c("SMALL_ARRAYS"),
            big_every: c("BIG_EVERY"),
            big_arrays: c("BIG_ARRAYS"),
            native_bufs: c("NATIVE_BUFS"),
            native_bytes: c("NATIVE_BYTES"),
        }
    }

    fn arrays(&self, g: u64) -> Vec<u64> {
        let mut sizes: Vec<u64> = (0..self.small_arrays).map(|a| 2048 << (a % 4)).collect();
        if g.is_multiple_of(self.big_every) {
            let n = self.small_arrays;
            sizes.extend((n..n + self.big_arrays).map(|a| 65536 << ((g + a) % 5)));
        }
        sizes
    }

    /// The documented bytes of group g by kind: small objects (560 bytes an item, the map's
    /// 2,016-byte table, the Group and its two index arrays), large objects (whole pages)
    /// and native buffers.
    fn group(&self, g: u64) -> [u64; 3] {
        let arrays = self.arrays(g);
        let index = |n: u64| (16 + 8 * n).next_multiple_of(16);
        let small =
            self.items * 560 + 2016 + 96 + index(arrays.len() as u64) + index(self.native_bufs);
        let large = arrays.iter().map(|b| b.next_multiple_of(4096)).sum();
        [small, large, self.native_bufs * self.native_bytes]
    }

    /// The bytes of the app after set-up and one round (its first DROP groups rebuilt).
    fn after_one_round(&self) -> [u64; 3] {
        let built = (0..self.groups).chain(0..self.drop);
        built.map(|g| self.group(g)).fold([0; 3], |acc, k| {
            [acc[0] + k[0], acc[1] + k[1], acc[2] + k[2]]
        })
    }
}

fn num(v: &serde_json::Value, path: &str) -> u64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("{path} in {v}"))
}

/// Each shape's share of small objects, large objects and native memory at set-up, as
/// docs/experiments.md states them (percent, to the nearest point).
const SHARES: &[(&str, [u64; 3])] = &[
    ("app", [33, 46, 21]),
    ("feed", [68, 20, 11]),
    ("media", [9, 17, 74]),
];

#[test]
fn each_shape_runs_with_its_documented_sizes_and_shares_and_verifies_what_it_reads() {
    for &(name, shares) in SHARES {
        let shape = Shape::of(name);
        let (out, stats) = run(&workload(name), &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        let want = shape.after_one_round();
        let got = [
            num(&stats, "kinds.small_allocated"),
            num(&stats, "kinds.large_allocated"),
            num(&stats, "kinds.native_allocated"),
        ];
        // Small objects: the documented groups plus the app's State and its group index.
        assert!(
            got[0] >= want[0] && got[0] - want[0] < 1024,
            "{name}: {got:?} {want:?}"
        );
        assert_eq!(got[1..], want[1..], "{name}");
        // The dropped groups' natives were freed, the rest are alive.
        let dropped = shape.drop * shape.native_bufs;
        assert_eq!(
            num(&stats, "kinds.native_freed"),
            dropped * shape.native_bytes
        );
        assert_eq!(
            num(&stats, "kinds.native_buffers"),
            shape.groups * shape.native_bufs
        );
        // The shares at set-up, to the point the docs give.
        let setup: Vec<u64> = (0..3)
            .map(|k| (0..shape.groups).map(|g| shape.group(g)[k]).sum())
            .collect();
        let total: u64 = setup.iter().sum();
        // The size it declares for `--scale` is its set-up's.
        assert_eq!(shape.app_bytes, total, "{name}");
        for k in 0..3 {
            let share = (setup[k] * 100 + total / 2) / total;
            assert_eq!(share, shares[k], "{name}: kind {k}: {setup:?}");
        }
        // Small objects of about 80 bytes on average: every allocation but the arrays.
        let arrays: u64 = (0..shape.groups)
            .chain(0..shape.drop)
            .map(|g| shape.arrays(g).len() as u64)
            .sum();
        let small_objects = num(&stats, "allocations") - arrays;
        let mean = got[0] as f64 / small_objects as f64;
        assert!(
            (76.0..=84.0).contains(&mean),
            "{name}: mean {mean:.1} bytes"
        );
        // Verified: one round drops DROP groups, each checked whole (items, arrays,
        // natives), and the first frame reads an eighth of one group's items.
        let per_group = |g: u64| shape.items + shape.arrays(g).len() as u64 + shape.native_bufs;
        let dropped_units: u64 = (0..shape.drop).map(per_group).sum();
        let frame_items = shape.items / 8;
        assert_eq!(
            num(&stats, "marks.verified"),
            dropped_units + frame_items,
            "{name}"
        );
        assert!(stats["marks"].get("verify_failed").is_none(), "{name}");
        assert_eq!(num(&stats, "marks.frame"), 1);
        assert_eq!(num(&stats, "marks.round"), 2);
    }
}

/// app.masm with `damage` run right after set-up, before the first frame, in `dir`.
fn damaged(dir: &Path, damage: &str) -> PathBuf {
    let text = std::fs::read_to_string(workload("app")).unwrap();
    let text = text.replacen("started:\n", &format!("started:\n{damage}"), 1);
    let file = dir.join("damaged.masm");
    std::fs::write(&file, text).unwrap();
    file
}

fn assert_fails_verification(damage: &str, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (out, stats) = run(&damaged(dir.path(), damage), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{what}: {stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("verification failed"),
        "{what}"
    );
    assert!(num(&stats, "marks.verify_failed") >= 1, "{what}");
}

#[test]
fn a_damaged_object_of_any_kind_fails_with_status_3() {
    // A small object of the group the first frame reads (group 3): its first item's count.
    assert_fails_verification(
        "  load 0\n  getfield State.groups\n  push 3\n  aload\n  getfield Group.items\n  \
         getfield Link.item\n  push 999\n  putfield Item.count\n",
        "small object",
    );
    // A string (a small int array) of group 0's first item, found when the round drops it.
    assert_fails_verification(
        "  load 0\n  getfield State.groups\n  push 0\n  aload\n  getfield Group.items\n  \
         getfield Link.item\n  getfield Item.body\n  push 18\n  push 7\n  astore\n",
        "string",
    );
    // A large object: the first element of group 0's first array.
    assert_fails_verification(
        "  load 0\n  getfield State.groups\n  push 0\n  aload\n  getfield Group.arrays\n  \
         push 0\n  aload\n  push 0\n  push 12345\n  astore\n",
        "large object",
    );
    // A native buffer: one byte of group 0's first, changed by one.
    assert_fails_verification(
        "  load 0\n  getfield State.groups\n  push 0\n  aload\n  getfield Group.natives\n  \
         push 0\n  aload\n  store 1\n  load 1\n  push 100\n  load 1\n  push 100\n  nload\n  \
         push 1\n  add\n  nstore\n",
        "native buffer",
    );
}
