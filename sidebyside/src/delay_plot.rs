//! The dispatch-delay figure of `marvin bench queue --plot DIR`: for each dispatch
//! scenario and queue, the share of messages dispatched later than a given delay after
//! their due time (a complementary CDF), on log-log axes, so that the median and the
//! tail (p99 at 10^-2, the worst at the line's end) read off one picture. Written as
//! `dispatch_delay.svg` and `dispatch_delay.png`.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::sched::LooperPolicy;
use marvin_system::figure_style::{
    column_styles, draw_legend, log_ticks, split_for_legend, tick_label, LegendEntry, Marker,
    Stroke,
};
use marvin_system::plot::{register_font, FONT};
use marvin_system::plot_text::Png;

/// The delays (ns) of one queue under one looper policy, every message of every run.
#[derive(Debug, Clone)]
pub struct DelaySeries {
    pub policy: LooperPolicy,
    pub implementation: String,
    pub delays_ns: Vec<f64>,
}

const SIZE: (u32, u32) = (1000, 600);
/// Delays below this (ms) are drawn at it: the log axis needs a positive start.
const FLOOR_MS: f64 = 1e-3;

/// Writes the figure into `dir` (created if missing); returns the files written.
pub fn write(dir: &Path, series: &[DelaySeries]) -> anyhow::Result<Vec<PathBuf>> {
    register_font()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
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
    let svg = dir.join("dispatch_delay.svg");
    let png = dir.join("dispatch_delay.png");
    draw(SVGBackend::new(&svg, SIZE).into_drawing_area(), &figure)
        .map_err(|e| anyhow!("drawing {}: {e}", svg.display()))?;
    draw(Png::file(&png, SIZE)?.into_drawing_area(), &figure)
        .map_err(|e| anyhow!("drawing {}: {e}", png.display()))?;
    Ok(vec![svg, png])
}

/// One line: its legend label, colour, stroke and points.
type CcdfLine = (String, RGBColor, Stroke, Vec<(f64, f64)>);

/// The figure as data, drawn on either backend.
struct Figure {
    lines: Vec<CcdfLine>,
    x_max: f64,
    y_min: f64,
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, figure: &Figure) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let legend: Vec<LegendEntry> = figure
        .lines
        .iter()
        .map(|(label, colour, stroke, _)| LegendEntry {
            stroke: *stroke,
            width: 2,
            ..LegendEntry::line(label.clone(), *colour, None::<Marker>)
        })
        .collect();
    let (plot_area, legend_area) = split_for_legend(&root, &legend);
    let (x_lo, x_hi) = (FLOOR_MS, figure.x_max);
    let (y_lo, y_hi) = (figure.y_min, 1.0);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption("Dispatch delay under 8 busy background posters", (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(
            (x_lo..x_hi)
                .log_scale()
                .with_key_points(log_ticks(x_lo, x_hi)),
            (y_lo..y_hi)
                .log_scale()
                .with_key_points(log_ticks(y_lo, y_hi)),
        )
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("delay after the due time (ms)")
        .y_desc("share of messages dispatched later")
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label)
        .draw()
        .map_err(|e| e.to_string())?;
    for (_, colour, stroke, points) in &figure.lines {
        let style = colour.stroke_width(2);
        match *stroke {
            Stroke::Dashed(dash, gap) => chart.draw_series(DashedLineSeries::new(
                points.iter().copied(),
                dash,
                gap,
                style,
            )),
            Stroke::Solid => chart.draw_series(LineSeries::new(points.iter().copied(), style)),
        }
        .map_err(|e| e.to_string())?;
    }
    draw_legend(&legend_area, &legend).map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// The complementary CDF of `delays_ns` as (delay in ms, share of messages at least
/// that late), from the shortest delay (share 1) to the longest (share 1/n). Points
/// closer than 1% to the last one kept on both log axes are left out (the line looks
/// the same; the SVG stays small), except the last.
fn ccdf(delays_ns: &[f64]) -> Vec<(f64, f64)> {
    let mut sorted: Vec<f64> = delays_ns
        .iter()
        .copied()
        .filter(|d| d.is_finite())
        .collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let mut points: Vec<(f64, f64)> = Vec::new();
    for (i, &d) in sorted.iter().enumerate() {
        let point = ((d / 1e6).max(FLOOR_MS), (n - i as f64) / n);
        let is_last = i + 1 == sorted.len();
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
