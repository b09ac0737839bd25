//! The spread of a figure over an experiment's repetitions: median, quartiles and
//! range. Quartiles interpolate linearly between order statistics (numpy's default,
//! R's type 7), so two repetitions give a median halfway between them and an
//! interquartile range of half their distance.

use serde::Serialize;

/// Median, quartiles and range of some values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub n: usize,
    pub median: f64,
    pub q1: f64,
    pub q3: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (non-finite values are left out); `None` when none is left.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let pos = p * (v.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
        };
        Some(Spread {
            n: v.len(),
            median: q(0.5),
            q1: q(0.25),
            q3: q(0.75),
            min: v[0],
            max: v[v.len() - 1],
        })
    }

    /// The interquartile range.
    #[cfg(test)]
    pub fn iqr(&self) -> f64 {
        self.q3 - self.q1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_interpolate() {
        let s = Spread::of([4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!(
            (s.median, s.q1, s.q3, s.min, s.max),
            (3.0, 2.0, 4.0, 1.0, 5.0)
        );
        let two = Spread::of([10.0, 20.0]).unwrap();
        assert_eq!((two.median, two.q1, two.q3), (15.0, 12.5, 17.5));
        assert_eq!(two.iqr(), 5.0);
        let one = Spread::of([7.0]).unwrap();
        assert_eq!((one.median, one.iqr(), one.n), (7.0, 0.0, 1));
    }

    #[test]
    fn empty_and_non_finite_input() {
        assert_eq!(Spread::of([]), None);
        assert_eq!(Spread::of([f64::NAN]), None);
        assert_eq!(Spread::of([f64::NAN, 2.0]).unwrap().n, 1);
    }
}
