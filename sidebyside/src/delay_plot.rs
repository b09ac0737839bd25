//! The dispatch-delay figure of `marvin bench queue --plot DIR`: for each dispatch
//! scenario and queue, the share of messages dispatched later than a given delay after
//! their due time (a complementary CDF), on log-log axes, so that the median and the
//! tail (p99 at 10^-2, the worst at the line's end) read off one picture. Written as
//! `dispatch_delay.svg` and `dispatch_delay.png`.

use std::path::{Path, PathBuf};

use marvin_figures::{
    chart_builder, column_styles, draw_legend, draw_stroked, log_ticks, split_for_legend,
    styled_mesh, write_figure, Area, Distribution, Drawing, Drawn, Frame, LegendEntry, Marker,
    Stroke,
};
use plotters::prelude::*;

use super::sched::LooperPolicy;

/// The delays (ns) of one queue under one looper policy, every message of every run.
#[derive(Debug, Clone)]
pub struct DelaySeries {
    pub policy: LooperPolicy,
    pub implementation: String,
    pub delays_ns: Vec<f64>,
}

const SIZE: (u32, u32) = (1000, 600);
const FRAME: Frame = Frame {
    margin: 16,
    x_labels: 48,
    y_labels: 80,
};
/// Delays below this (ms) are drawn at it: the log axis needs a positive start.
const FLOOR_MS: f64 = 1e-3;

/// Writes the figure into `dir` (created if missing); returns the files written.
pub fn write(dir: &Path, series: &[DelaySeries]) -> anyhow::Result<Vec<PathBuf>> {
    // One colour per queue (the figures' shared style), one dash per looper policy.
    let mut queues: Vec<&str> = Vec::new();
    for s in series {
        if !queues.contains(&s.implementation.as_str()) {
            queues.push(&s.implementation);
        }
    }
    let styles = column_styles(&queues);
    let lines: Vec<CcdfLine> = series
        .iter()
        .map(|s| {
            let q = queues
                .iter()
                .position(|q| *q == s.implementation)
                .unwrap_or(0);
            let colour = styles[q].0;
            let label = format!("{}, {} looper", s.implementation, s.policy);
            // Solid: the normal looper; dashed: FIFO UI; dotted: grouped.
            let stroke = match s.policy {
                LooperPolicy::Normal => Stroke::Solid,
                LooperPolicy::FifoUi => Stroke::Dashed(8, 5),
                LooperPolicy::Grouped => Stroke::Dashed(2, 4),
            };
            (label, colour, stroke, ccdf(&s.delays_ns))
        })
        .collect();
    let x_max = lines
        .iter()
        .flat_map(|l| l.3.iter().map(|p| p.0))
        .fold(1.0, f64::max)
        * 2.0;
    let y_min = lines
        .iter()
        .flat_map(|l| l.3.iter().map(|p| p.1))
        .fold(1.0, f64::min)
        .max(1e-7)
        / 2.0;
    let figure = Figure {
        lines,
        x_max,
        y_min,
    };
    write_figure(dir, "dispatch_delay", SIZE, &figure, None)
}

/// One line: its legend label, colour, stroke and points.
type CcdfLine = (String, RGBColor, Stroke, Vec<(f64, f64)>);

/// The figure as data, drawn on either backend.
struct Figure {
    lines: Vec<CcdfLine>,
    x_max: f64,
    y_min: f64,
}

impl Drawing for Figure {
    fn title(&self) -> &str {
        "Dispatch delay under 8 busy background posters"
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        let legend: Vec<LegendEntry> = self
            .lines
            .iter()
            .map(|(label, colour, stroke, _)| LegendEntry {
                stroke: *stroke,
                width: 2,
                ..LegendEntry::line(label.clone(), *colour, None::<Marker>)
            })
            .collect();
        let (plot_area, legend_area) = split_for_legend(root, &legend);
        let (x_lo, x_hi) = (FLOOR_MS, self.x_max);
        let (y_lo, y_hi) = (self.y_min, 1.0);
        let mut chart = chart_builder(&plot_area, self.title(), FRAME).build_cartesian_2d(
            (x_lo..x_hi)
                .log_scale()
                .with_key_points(log_ticks(x_lo, x_hi)),
            (y_lo..y_hi)
                .log_scale()
                .with_key_points(log_ticks(y_lo, y_hi)),
        )?;
        styled_mesh(
            &mut chart,
            "delay after the due time (ms)",
            "share of messages dispatched later",
        )
        .draw()?;
        for (_, colour, stroke, points) in &self.lines {
            draw_stroked(&mut chart, points, *stroke, colour.stroke_width(2))?;
        }
        draw_legend(&legend_area, &legend)
    }
}

/// The complementary CDF of `delays_ns` as (delay in ms, share of messages at least
/// that late), thinned for the log-log axes ([`Distribution::ccdf`]).
fn ccdf(delays_ns: &[f64]) -> Vec<(f64, f64)> {
    Distribution::of(delays_ns.iter().map(|d| d / 1e6), FLOOR_MS).ccdf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ccdf_falls_from_one_to_one_over_n_at_the_worst_delay() {
        let points = ccdf(&[2e6, 1e6, 4e6, 1e6]);
        assert_eq!(
            points,
            vec![(1.0, 1.0), (1.0, 0.75), (2.0, 0.5), (4.0, 0.25)],
            "a staircase: every message at 1 ms, then the share later than that"
        );
    }

    #[test]
    fn thinning_keeps_the_ends_and_the_shape() {
        let delays: Vec<f64> = (1..=100_000).map(f64::from).collect();
        let points = ccdf(&delays);
        assert!(points.len() < 2_000, "{} points", points.len());
        assert_eq!(points.first(), Some(&(FLOOR_MS, 1.0)));
        assert_eq!(points.last(), Some(&(0.1, 1e-5)));
        assert!(points
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 > w[1].1));
        assert!(
            points.iter().all(|&(x, y)| x >= FLOOR_MS && y > 0.0),
            "log axes"
        );
    }

    #[test]
    fn writes_an_svg_naming_every_series_and_a_png() {
        let dir = tempfile::tempdir().unwrap();
        let series = [
            DelaySeries {
                policy: LooperPolicy::Normal,
                implementation: "deliqueue".into(),
                delays_ns: (1..1000).map(|i| f64::from(i) * 1e3).collect(),
            },
            DelaySeries {
                policy: LooperPolicy::FifoUi,
                implementation: "legacy".into(),
                delays_ns: (1..1000).map(|i| f64::from(i) * 1e4).collect(),
            },
            DelaySeries {
                policy: LooperPolicy::Grouped,
                implementation: "deliqueue".into(),
                delays_ns: (1..1000).map(|i| f64::from(i) * 2e3).collect(),
            },
        ];
        let files = write(dir.path(), &series).unwrap();
        assert_eq!(files.len(), 2);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains("deliqueue, normal looper"),
            "legend names the series"
        );
        assert!(svg.contains("legacy, FIFO UI looper"));
        assert!(svg.contains("deliqueue, top-app group looper"));
        assert!(
            std::fs::metadata(&files[1]).unwrap().len() > 1000,
            "a PNG was drawn"
        );
    }
}
