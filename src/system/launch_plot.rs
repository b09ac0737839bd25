//! The launch figure (`launch_cdf.svg/.png`): the distribution of launch latency per
//! policy, as a cumulative distribution on a logarithmic time axis, so hot launches of
//! a millisecond and cold ones of a second can be read on one figure.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use plotters::prelude::*;

use super::launch::LaunchRecord;
use super::plot::{policy_colour, register_font, FONT};
use super::plot_text::Png;

const SIZE: (u32, u32) = (1000, 600);

/// One policy's curve: its name, colour and CDF points.
type Curve = (String, RGBColor, Vec<(f64, f64)>);

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

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    policies: &[(String, Vec<LaunchRecord>)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let curves: Vec<Curve> = policies
        .iter()
        .enumerate()
        .map(|(i, (name, records))| (name.clone(), policy_colour(name, i), cdf_points(records)))
        .collect();
    let xs = || curves.iter().flat_map(|c| c.2.iter().map(|p| p.0));
    let lo = xs().fold(f64::INFINITY, f64::min);
    let hi = xs().fold(0.0, f64::max);
    // A decade either side of the data, at least 0.1 ms to 10 s without any.
    let (lo, hi) = if lo.is_finite() && hi > 0.0 {
        (lo / 2.0, hi * 2.0)
    } else {
        (0.1, 10_000.0)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption("Launch latency (to the first frame)", (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)?;
    chart
        .configure_mesh()
        .x_desc("launch latency (ms, log scale)")
        .y_desc("fraction of launches")
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    for (name, colour, points) in &curves {
        // A step function: up at each latency.
        let mut steps = Vec::with_capacity(2 * points.len());
        let mut prev = 0.0;
        for &(x, y) in points {
            steps.push((x, prev));
            steps.push((x, y));
            prev = y;
        }
        let colour = *colour;
        chart
            .draw_series(LineSeries::new(steps, colour.stroke_width(2)))?
            .label(format!("{name} ({})", points.len()))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(3))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(90, 90, 90))
        .draw()?;
    root.present()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::launch::{Brought, LaunchClass};

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
