//! Interleaved rounds for in-process benchmarks that compare implementations (`marvin
//! bench queue`): every implementation runs once untimed (warm-up), then once per round,
//! the order rotating from round to round, so that a slow stretch of a shared host, and
//! whatever the run before leaves behind (caches, freed memory, timer state), falls on
//! every implementation alike; and the per-round ratio to a baseline, whose median
//! cancels any drift slower than a round.

/// Runs implementations `0..count` in interleaved rounds: first one warm-up run of each
/// (in order, its result dropped), then `reps` (at least 1) rounds, round `r` running
/// every implementation once starting from `r % count` (for two: 0 1, 1 0, 0 1, ...).
/// `run(i)` runs implementation `i` once. Returns `results[i][r]`, implementation `i`'s
/// result in round `r`; the first error ends the rounds and is returned.
pub fn interleaved<T, E>(
    count: usize,
    reps: usize,
    mut run: impl FnMut(usize) -> Result<T, E>,
) -> Result<Vec<Vec<T>>, E> {
    let rounds = reps.max(1);
    for i in 0..count {
        run(i)?;
    }
    let mut results: Vec<Vec<T>> = (0..count).map(|_| Vec::with_capacity(rounds)).collect();
    for r in 0..rounds {
        for k in 0..count {
            let i = (r + k) % count;
            results[i].push(run(i)?);
        }
    }
    Ok(results)
}

/// Each round's figure over the baseline's in the same round (`own[r] / base[r]`).
pub fn ratios(own: &[f64], base: &[f64]) -> Vec<f64> {
    own.iter().zip(base).map(|(o, b)| o / b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::median;

    #[test]
    fn rounds_rotate_after_one_warm_up_of_each() {
        let mut calls = Vec::new();
        let results = interleaved(3, 4, |i| -> Result<usize, ()> {
            calls.push(i);
            Ok(calls.len())
        })
        .unwrap();
        assert_eq!(
            calls,
            [0, 1, 2, /* rounds: */ 0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2]
        );
        // results[i][r] is the call number of implementation i's run in round r.
        assert_eq!(results, [[4, 9, 11, 13], [5, 7, 12, 14], [6, 8, 10, 15]]);

        let mut two = Vec::new();
        interleaved(2, 3, |i| -> Result<(), ()> {
            two.push(i);
            Ok(())
        })
        .unwrap();
        assert_eq!(two, [0, 1, 0, 1, 1, 0, 0, 1], "alternating who goes first");
    }

    /// A fake pair of implementations, B taking 0.8 of A's time, on a host whose speed
    /// drifts by a factor of up to 8 between rounds and that is slow in the warm-up: the
    /// median of the per-round ratios is B's true ratio, while the ratio of the medians
    /// (or A's and B's runs taken in blocks, one after the other) is not.
    #[test]
    fn the_round_ratio_cancels_drift_and_the_warm_up() {
        let drift = [1.0, 8.0, 2.0, 4.0, 1.5, 3.0, 3.0, 6.0, 5.0, 4.0];
        let mut calls = 0usize;
        let results = interleaved(2, drift.len(), |i| -> Result<f64, ()> {
            calls += 1;
            // Calls 1-2 are the warm-up; then two calls per round.
            let slow = match calls {
                1 | 2 => 1000.0,
                n => drift[(n - 3) / 2],
            };
            Ok(slow * if i == 0 { 10.0 } else { 8.0 })
        })
        .unwrap();
        assert!(
            !results.iter().flatten().any(|&t| t >= 1000.0),
            "warm-up kept"
        );
        let per_round = ratios(&results[1], &results[0]);
        assert_eq!(per_round.len(), drift.len());
        assert!(
            per_round.iter().all(|r| (r - 0.8).abs() < 1e-12),
            "{per_round:?}"
        );
        assert!((median(&mut per_round.clone()) - 0.8).abs() < 1e-12);

        // Blocks (A's five runs, then B's five) on the same drifting host.
        let a: Vec<f64> = drift[..5].iter().map(|d| d * 10.0).collect();
        let b: Vec<f64> = drift[5..].iter().map(|d| d * 8.0).collect();
        let blocks = median(&mut b.clone()) / median(&mut a.clone());
        assert!(
            (blocks - 0.8).abs() > 0.1,
            "the drift shows in blocks: {blocks}"
        );
    }

    #[test]
    fn the_first_error_ends_the_rounds() {
        let mut calls = 0;
        let out = interleaved(2, 5, |i| {
            calls += 1;
            if calls == 4 {
                Err(format!("implementation {i} failed"))
            } else {
                Ok(1.0)
            }
        });
        assert_eq!(out, Err("implementation 1 failed".to_string()));
        assert_eq!(calls, 4, "nothing runs after the failure");
    }
}
