//! The fuzz targets in bounded form on stable Rust: every seed of `fuzz/seeds/`, every
//! saved corpus entry and crash reproducer (`fuzz/corpus/`, `fuzz/artifacts/`, when a
//! fuzzing run left them), and a fixed set of mutations of each seed (truncations, byte
//! flips, splices, from a fixed-seed generator) go through the very entry points the
//! fuzzer calls (`marvin_interpreter::fuzzing`). None may panic, and the seeds, which are
//! valid programs, must be accepted, so the replay is known to reach the verifier.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use marvin_interpreter::fuzzing;

/// Mutations per seed.
const MUTATIONS: usize = 1500;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files directly in `dir` (none if it does not exist), sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|es| {
            es.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// xorshift64*: a fixed sequence, so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Deterministic mutations of `seed`, spliced with `other`.
fn mutations(seed: &[u8], other: &[u8], rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(MUTATIONS + seed.len());
    for cut in (0..seed.len()).step_by(seed.len().div_ceil(64).max(1)) {
        out.push(seed[..cut].to_vec());
    }
    const INTERESTING: [u8; 8] = [0, 1, 0x7f, 0x80, 0xff, b'\n', b' ', b'"'];
    for _ in 0..MUTATIONS {
        let mut m = seed.to_vec();
        for _ in 0..1 + rng.below(4) {
            if m.is_empty() {
                break;
            }
            let i = rng.below(m.len());
            match rng.below(5) {
                0 => m[i] ^= 1 << rng.below(8),
                1 => m[i] = INTERESTING[rng.below(INTERESTING.len())],
                2 => {
                    m.remove(i);
                }
                3 => {
                    let b = m[rng.below(m.len())];
                    m.insert(i, b);
                }
                _ => {
                    let j = rng.below(other.len());
                    let k = (j + rng.below(32)).min(other.len());
                    m.splice(i..i, other[j..k].iter().copied());
                }
            }
        }
        out.push(m);
    }
    out
}

fn replay(target: &str, f: fn(&[u8]) -> bool) {
    let seeds = files(&fuzz_dir().join("seeds").join(target));
    assert!(
        !seeds.is_empty(),
        "no seeds in fuzz/seeds/{target}: the replay would test nothing"
    );
    let seed_bytes: Vec<(PathBuf, Vec<u8>)> = seeds
        .iter()
        .map(|p| (p.clone(), std::fs::read(p).unwrap()))
        .collect();
    for (path, bytes) in &seed_bytes {
        assert!(
            f(bytes),
            "seed {} is not accepted: the replay would not reach the verifier",
            path.display()
        );
    }
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    for dir in ["corpus", "artifacts"] {
        for p in files(&fuzz_dir().join(dir).join(target)) {
            inputs.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (i, (path, bytes)) in seed_bytes.iter().enumerate() {
        let other = &seed_bytes[(i + 1) % seed_bytes.len()].1;
        for (n, m) in mutations(bytes, other, &mut rng).into_iter().enumerate() {
            inputs.push((format!("mutation {n} of {}", path.display()), m));
        }
    }
    for (name, input) in &inputs {
        if catch_unwind(AssertUnwindSafe(|| f(input))).is_err() {
            panic!("fuzz target {target} panicked on {name}: {input:?}");
        }
    }
}

#[test]
fn text_target_replays_its_seeds_and_their_mutations() {
    replay("text", fuzzing::text);
}

#[test]
fn binary_target_replays_its_seeds_and_their_mutations() {
    replay("binary", fuzzing::binary);
}
