//! The launch figure (`launch_cdf.svg/.png`): the distribution of launch latency per
//! policy, as a cumulative distribution on a logarithmic time axis, so hot launches of
//! a millisecond and cold ones of a second can be read on one figure.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use plotters::prelude::*;

use super::figure_style::{
    column_styles, draw_legend, draw_marker, log_ticks, split_for_legend, tick_label, LegendEntry,
    Marker,
};
use super::launch::LaunchRecord;
use super::plot::{register_font, FONT};
use super::plot_text::Png;

const SIZE: (u32, u32) = (1000, 600);

/// One column's curve: its name, colour, marker and CDF points.
type Curve = (String, RGBColor, Marker, Vec<(f64, f64)>);

/// Each policy's CDF points: (latency in ms, fraction of launches at most that).
pub fn cdf_points(records: &[LaunchRecord]) -> Vec<(f64, f64)> {
    let mut ms: Vec<f64> = records
        .iter()
        .map(|r| (r.latency_ns as f64 / 1e6).max(1e-3))
        .collect();
    ms.sort_by(f64::total_cmp);
    let n = ms.len() as f64;
    ms.iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

/// Writes `launch_cdf.svg` and `launch_cdf.png` into `dir`; returns the files.
pub fn write_cdf(
    dir: &Path,
    policies: &[(String, Vec<LaunchRecord>)],
) -> anyhow::Result<Vec<PathBuf>> {
    register_font()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let svg = dir.join("launch_cdf.svg");
    draw(SVGBackend::new(&svg, SIZE).into_drawing_area(), policies)
        .map_err(|e| anyhow!("drawing {}: {e}", svg.display()))?;
    let png = dir.join("launch_cdf.png");
    draw(Png::file(&png, SIZE)?.into_drawing_area(), policies)
        .map_err(|e| anyhow!("drawing {}: {e}", png.display()))?;
    Ok(vec![svg, png])
}

/// The column a run's name belongs to (`kill #1` is repetition 1 of `kill`).
fn column_of(name: &str) -> &str {
    match name.rsplit_once(" #") {
        Some((column, rep)) if rep.bytes().all(|b| b.is_ascii_digit()) => column,
        _ => name,
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    policies: &[(String, Vec<LaunchRecord>)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    // The launches of a column's repetitions together: one curve, one style per column.
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
    let curves: Vec<Curve> = columns
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
        .map(|(label, colour, marker, _)| LegendEntry::line(label.clone(), *colour, Some(*marker)))
        .collect();
    let (plot_area, legend_area) = split_for_legend(&root, &legend);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption("Launch latency (to the first frame)", (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(
            (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
            0.0..1.0,
        )?;
    chart
        .configure_mesh()
        .x_desc("launch latency (ms, log scale)")
        .y_desc("fraction of launches")
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label)
        .draw()?;
    for (_, colour, marker, points) in &curves {
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
        let step = (points.len() / 12).max(1);
        let plotting = chart.plotting_area();
        let base = plotting.get_base_pixel();
        let area = plotting.strip_coord_spec();
        for point in points.iter().skip(step / 2).step_by(step) {
            let at = plotting.map_coordinate(point);
            draw_marker(&area, *marker, (at.0 - base.0, at.1 - base.1), *colour)?;
        }
    }
    draw_legend(&legend_area, &legend)?;
    root.present()
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
