//! The distribution of some values as the figures draw it and the tables report it: the
//! values sorted once ([`Distribution`]), read as a cumulative distribution
//! ([`Distribution::cdf`]: the share of values at most each one), its complement
//! ([`Distribution::ccdf`]: the share at least each one, thinned for log-log axes) or a
//! nearest-rank percentile ([`nearest_rank`]).

/// Some values, sorted, the non-finite ones left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Distribution {
    sorted: Vec<f64>,
}

impl Distribution {
    /// The distribution of `values`, each at least `floor` (a log axis needs a positive
    /// start: smaller values are drawn at it); non-finite values are left out.
    pub fn of(values: impl IntoIterator<Item = f64>, floor: f64) -> Distribution {
        let mut sorted: Vec<f64> = values
            .into_iter()
            .filter(|v| v.is_finite())
            .map(|v| v.max(floor))
            .collect();
        sorted.sort_by(f64::total_cmp);
        Distribution { sorted }
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The cumulative distribution as (value, share of values at most it), one point a
    /// value from the smallest (share 1/n) to the largest (share 1).
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        let n = self.sorted.len() as f64;
        self.sorted
            .iter()
            .enumerate()
            .map(|(i, &x)| (x, (i + 1) as f64 / n))
            .collect()
    }

    /// The complementary distribution as (value, share of values at least it), from the
    /// smallest value (share 1) to the largest (share 1/n). Points closer than 1% to the
    /// last one kept on both log axes are left out (the line looks the same; an SVG stays
    /// small), except the last.
    pub fn ccdf(&self) -> Vec<(f64, f64)> {
        let n = self.sorted.len() as f64;
        let mut points: Vec<(f64, f64)> = Vec::new();
        for (i, &x) in self.sorted.iter().enumerate() {
            let point = (x, (n - i as f64) / n);
            let is_last = i + 1 == self.sorted.len();
            let close = points
                .last()
                .is_some_and(|&(x, y)| (point.0 / x).ln() < 0.01 && (y / point.1).ln() < 0.01);
            if close && !is_last {
                continue;
            }
            if close && points.len() > 1 {
                points.pop();
            }
            points.push(point);
        }
        points
    }

    /// The `p`-th percentile (0..=100), nearest-rank; `None` when there are no values.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        nearest_rank(&self.sorted, p)
    }
}

/// The `p`-th percentile (0..=100) of `sorted` (ascending), nearest-rank: the smallest
/// value with at least `p`% of the values at most it (the first for `p` 0, the last for
/// 100); `None` when `sorted` is empty.
pub fn nearest_rank<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cdf_rises_to_one_in_value_order() {
        let d = Distribution::of([3.0, 1.0, 2.0, 2.0], 1e-3);
        assert_eq!(
            d.cdf(),
            vec![(1.0, 0.25), (2.0, 0.5), (2.0, 0.75), (3.0, 1.0)]
        );
        assert!(Distribution::of([], 0.0).cdf().is_empty());
    }

    #[test]
    fn values_below_the_floor_and_non_finite_ones() {
        let d = Distribution::of([0.0, f64::NAN, 5.0, f64::INFINITY], 0.5);
        assert_eq!(d.cdf(), vec![(0.5, 0.5), (5.0, 1.0)]);
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn the_ccdf_falls_from_one_to_one_over_n_at_the_largest_value() {
        let d = Distribution::of([2.0, 1.0, 4.0, 1.0], 1e-3);
        assert_eq!(
            d.ccdf(),
            vec![(1.0, 1.0), (1.0, 0.75), (2.0, 0.5), (4.0, 0.25)],
            "a staircase: every value at least 1, then the share at least each larger one"
        );
    }

    #[test]
    fn thinning_keeps_the_ends_and_the_shape() {
        let d = Distribution::of((1..=100_000).map(|i| f64::from(i) / 1e6), 1e-3);
        let points = d.ccdf();
        assert!(points.len() < 2_000, "{} points", points.len());
        assert_eq!(points.first(), Some(&(1e-3, 1.0)));
        assert_eq!(points.last(), Some(&(0.1, 1e-5)));
        assert!(points
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 > w[1].1));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        let p = |q| nearest_rank(&v, q);
        assert_eq!(
            (p(50.0), p(90.0), p(99.0), p(100.0)),
            (Some(50), Some(90), Some(99), Some(100))
        );
        assert_eq!(p(0.0), Some(1), "the 0th is the smallest");
        assert_eq!(nearest_rank(&[7], 99.0), Some(7));
        assert_eq!(nearest_rank::<f64>(&[], 50.0), None);
        assert_eq!(
            Distribution::of([4.0, 1.0, 3.0, 2.0], 0.0).percentile(75.0),
            Some(3.0)
        );
    }
}
