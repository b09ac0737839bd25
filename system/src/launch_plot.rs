//! The launch figure (`launch_cdf.svg/.png`): the distribution of launch latency per
//! policy, as a cumulative distribution on a logarithmic time axis, so hot launches of
//! a millisecond and cold ones of a second can be read on one figure.

use std::path::{Path, PathBuf};

use marvin_figures::{
    chart_builder, column_styles, dozen, draw_legend, draw_markers, log_ticks, split_for_legend,
    styled_mesh, write_figure, Area, Distribution, Drawing, Drawn, Frame, LegendEntry, Marker,
};
use plotters::prelude::*;

use super::launch::LaunchRecord;

const SIZE: (u32, u32) = (1000, 600);
const FRAME: Frame = Frame {
    margin: 16,
    x_labels: 48,
    y_labels: 72,
};

/// One column's curve: its name, colour, marker and CDF points.
type Curve = (String, RGBColor, Marker, Vec<(f64, f64)>);

/// Each policy's CDF points: (latency in ms, fraction of launches at most that).
pub fn cdf_points(records: &[LaunchRecord]) -> Vec<(f64, f64)> {
    Distribution::of(records.iter().map(|r| r.latency_ns as f64 / 1e6), 1e-3).cdf()
}

/// Writes `launch_cdf.svg` and `launch_cdf.png` into `dir`; returns the files.
pub fn write_cdf(
    dir: &Path,
    policies: &[(String, Vec<LaunchRecord>)],
) -> anyhow::Result<Vec<PathBuf>> {
    write_figure(dir, "launch_cdf", SIZE, &LaunchFigure::of(policies), None)
}

/// The column a run's name belongs to (`kill #1` is repetition 1 of `kill`).
fn column_of(name: &str) -> &str {
    match name.rsplit_once(" #") {
        Some((column, rep)) if rep.bytes().all(|b| b.is_ascii_digit()) => column,
        _ => name,
    }
}

/// The launch figure as data: a curve per column.
struct LaunchFigure {
    curves: Vec<Curve>,
}

impl LaunchFigure {
    /// The launches of a column's repetitions together: one curve, one style per column.
    fn of(policies: &[(String, Vec<LaunchRecord>)]) -> LaunchFigure {
        let mut columns: Vec<(&str, Vec<LaunchRecord>, usize)> = Vec::new();
        for (name, records) in policies {
            let column = column_of(name);
            match columns.iter_mut().find(|c| c.0 == column) {
                Some(c) => {
                    c.1.extend(records.iter().cloned());
                    c.2 += 1;
                }
                None => columns.push((column, records.clone(), 1)),
            }
        }
        let labels: Vec<&str> = columns.iter().map(|c| c.0).collect();
        let curves = columns
            .iter()
            .zip(column_styles(&labels))
            .map(|((name, records, reps), (colour, marker))| {
                let label = if *reps > 1 {
                    format!("{name} ({} launches, {reps} repetitions)", records.len())
                } else {
                    format!("{name} ({})", records.len())
                };
                (label, colour, marker, cdf_points(records))
            })
            .collect();
        LaunchFigure { curves }
    }
}

impl Drawing for LaunchFigure {
    fn title(&self) -> &str {
        "Launch latency (to the first frame)"
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        let curves = &self.curves;
        let xs = || curves.iter().flat_map(|c| c.3.iter().map(|p| p.0));
        let lo = xs().fold(f64::INFINITY, f64::min);
        let hi = xs().fold(0.0, f64::max);
        // Half a step of the 1-2-5 ticks either side of the data, 0.1 ms to 10 s without any.
        let (lo, hi) = if lo.is_finite() && hi > 0.0 {
            (lo / 2.0, hi * 2.0)
        } else {
            (0.1, 10_000.0)
        };
        let legend: Vec<LegendEntry> = curves
            .iter()
            .map(|(label, colour, marker, _)| {
                LegendEntry::line(label.clone(), *colour, Some(*marker))
            })
            .collect();
        let (plot_area, legend_area) = split_for_legend(root, &legend);
        let mut chart = chart_builder(&plot_area, self.title(), FRAME).build_cartesian_2d(
            (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
            0.0..1.0,
        )?;
        styled_mesh(
            &mut chart,
            "launch latency (ms, log scale)",
            "fraction of launches",
        )
        .draw()?;
        for (_, colour, marker, points) in curves {
            // A step function: up at each latency.
            let mut steps = Vec::with_capacity(2 * points.len());
            let mut prev = 0.0;
            for &(x, y) in points {
                steps.push((x, prev));
                steps.push((x, y));
                prev = y;
            }
            chart.draw_series(LineSeries::new(steps, colour.stroke_width(3)))?;
            // Markers at about a dozen of its launches.
            draw_markers(&chart, dozen(points.len(), points.iter()), *marker, *colour)?;
        }
        draw_legend(&legend_area, &legend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::{Brought, LaunchClass};

    fn rec(latency_ns: u64) -> LaunchRecord {
        LaunchRecord {
            app: 0,
            t_s: 0.0,
            class: LaunchClass::Hot,
            latency_ns,
            brought: Brought::default(),
            parts: Default::default(),
        }
    }

    #[test]
    fn the_cdf_rises_to_one_in_latency_order() {
        let p = cdf_points(&[
            rec(3_000_000),
            rec(1_000_000),
            rec(2_000_000),
            rec(2_000_000),
        ]);
        assert_eq!(p, vec![(1.0, 0.25), (2.0, 0.5), (2.0, 0.75), (3.0, 1.0)]);
        assert!(cdf_points(&[]).is_empty());
    }

    #[test]
    fn the_figure_is_written_with_every_policy_named() {
        let dir = tempfile::tempdir().unwrap();
        let files = write_cdf(
            dir.path(),
            &[
                ("kill".into(), vec![rec(900_000_000), rec(1_200_000_000)]),
                ("marvin".into(), vec![rec(2_000_000), rec(40_000_000)]),
                ("page-swap".into(), vec![]),
            ],
        )
        .unwrap();
        assert_eq!(files.len(), 2);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        for name in ["kill (2)", "marvin (2)", "page-swap (0)", "log scale"] {
            assert!(svg.contains(name), "the figure lacks {name}");
        }
        assert!(
            std::fs::metadata(&files[1]).unwrap().len() > 1000,
            "a PNG was drawn"
        );
    }
}
