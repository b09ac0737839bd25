//! The benchmarks' figures (`marvin bench ... --plot DIR`): a chart of lines over a
//! numeric axis (the paper's figures 6, 9 and 10) or of bars (figure 3), with the
//! published values drawn beside marvin's in black, dashed, where the paper gives them.
//! Written as `NAME.svg` and `NAME.png`, with a one-line caption of the settings in the
//! SVG's `<desc>` and in `NAME.txt`, in the figures' one style: the same colour and marker
//! per column, logarithmic axes ticked at 1-2-5 steps, the legend in a strip below.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::axes::{chart_builder, draw_markers, draw_stroked, styled_mesh, Axis, Frame};
use crate::font::FONT;
use crate::legend::{draw_legend, split_for_legend, LegendEntry};
use crate::style::{column_styles, log_ticks, tick_label, Area, Drawn, Marker, Stroke};
use crate::write::{write_figure, Drawing};

/// One measured (or published) line.
#[derive(Clone, Debug)]
pub struct Curve {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Published values: black, dashed, hollow markers.
    pub published: bool,
}

/// One bar.
#[derive(Clone, Debug)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub published: bool,
}

/// A figure of one benchmark.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File name without extension.
    pub name: &'static str,
    pub title: String,
    pub x_label: &'static str,
    pub y_label: &'static str,
    /// Lines (used when `bars` is empty).
    pub curves: Vec<Curve>,
    /// Bars, one per label, drawn on a log axis (their values span decades).
    pub bars: Vec<Bar>,
    /// Lines: the value axis is logarithmic (values spanning several times each other).
    pub y_log: bool,
    /// The settings, one line.
    pub caption: String,
}

const SIZE: (u32, u32) = (1000, 620);
/// Dashes of the published values' lines.
const PUBLISHED: Stroke = Stroke::Dashed(9, 6);
/// The frame of every chart.
const FRAME: Frame = Frame {
    margin: 18,
    x_labels: 50,
    y_labels: 80,
};

/// The colour and marker of each measured entry (published ones are black), in the
/// figures' shared style, by label.
fn styles<'a>(labels: impl Iterator<Item = (&'a str, bool)>) -> Vec<(RGBColor, Marker)> {
    let all: Vec<(&str, bool)> = labels.collect();
    let ours: Vec<&str> = all.iter().filter(|e| !e.1).map(|e| e.0).collect();
    let mut styled = column_styles(&ours).into_iter();
    all.iter()
        .map(|&(_, published)| {
            if published {
                (BLACK, Marker::Circle)
            } else {
                styled.next().unwrap_or((BLACK, Marker::Circle))
            }
        })
        .collect()
}

impl Chart {
    /// Writes the chart into `dir` (created if missing); returns the files written.
    pub fn write(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        write_figure(dir, self.name, SIZE, self, Some(&self.caption))
    }
}

impl Drawing for Chart {
    fn title(&self) -> &str {
        &self.title
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        if self.bars.is_empty() {
            draw_lines(root, self)
        } else {
            draw_bars(root, self)
        }
    }
}

/// An axis label that says its axis is logarithmic (once).
fn log_label(label: &str) -> String {
    if label.contains("log scale") {
        label.to_owned()
    } else {
        format!("{label} (log scale)")
    }
}

fn draw_lines<DB: DrawingBackend>(root: &Area<DB>, chart: &Chart) -> Drawn<DB> {
    let finite =
        |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite() && (!chart.y_log || p.1 > 0.0);
    let points = || {
        chart
            .curves
            .iter()
            .flat_map(|c| c.points.iter())
            .filter(finite)
    };
    let x_max = points().map(|p| p.0).fold(0.0, f64::max);
    let x_min = points().map(|p| p.0).fold(x_max, f64::min).min(0.0);
    let y_max = points().map(|p| p.1).fold(0.0, f64::max);
    let y_min = points().map(|p| p.1).fold(0.0, f64::min);
    let x_range = x_min..(if x_max > x_min {
        x_max * 1.05
    } else {
        x_min + 1.0
    });
    let styles = styles(chart.curves.iter().map(|c| (c.label.as_str(), c.published)));
    let legend: Vec<LegendEntry> = chart
        .curves
        .iter()
        .zip(&styles)
        .map(|(c, &(colour, marker))| LegendEntry {
            label: c.label.clone(),
            colour,
            stroke: if c.published {
                PUBLISHED
            } else {
                Stroke::Solid
            },
            width: if c.published { 2 } else { 3 },
            marker: Some(marker),
            hollow: c.published,
        })
        .collect();
    let (plot_area, legend_area) = split_for_legend(root, &legend);
    let mut builder = chart_builder(&plot_area, &chart.title, FRAME);
    if chart.y_log {
        let lo = points().map(|p| p.1).fold(f64::INFINITY, f64::min).min(1.0) / 1.5;
        let hi = y_max.max(lo * 10.0) * 1.5;
        let mut c = builder.build_cartesian_2d(
            x_range,
            (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
        )?;
        styled_mesh(&mut c, chart.x_label, &log_label(chart.y_label)).draw()?;
        draw_curves(&mut c, chart, &styles, &finite)?;
    } else {
        let span = (y_max - y_min).max(1e-9);
        let y_range = (y_min - if y_min < 0.0 { 0.1 * span } else { 0.0 })..(y_max + 0.12 * span);
        let mut c = builder.build_cartesian_2d(x_range, y_range)?;
        styled_mesh(&mut c, chart.x_label, chart.y_label).draw()?;
        draw_curves(&mut c, chart, &styles, &finite)?;
    }
    draw_legend(&legend_area, &legend)
}

/// Draws every curve of `chart` on `c`: ours solid with their markers, published ones
/// black, dashed, with hollow circles.
fn draw_curves<DB: DrawingBackend, X: Axis, Y: Axis>(
    c: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    chart: &Chart,
    styles: &[(RGBColor, Marker)],
    keep: &impl Fn(&&(f64, f64)) -> bool,
) -> Drawn<DB> {
    for (curve, &(colour, marker)) in chart.curves.iter().zip(styles) {
        let pts: Vec<(f64, f64)> = curve.points.iter().filter(keep).copied().collect();
        if curve.published {
            draw_stroked(c, &pts, PUBLISHED, colour.stroke_width(2))?;
            c.draw_series(pts.iter().map(|&p| Circle::new(p, 6, WHITE.filled())))?;
            c.draw_series(
                pts.iter()
                    .map(|&p| Circle::new(p, 6, colour.stroke_width(2))),
            )?;
        } else {
            draw_stroked(c, &pts, Stroke::Solid, colour.stroke_width(3))?;
            draw_markers(c, &pts, marker, colour)?;
        }
    }
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(root: &Area<DB>, chart: &Chart) -> Drawn<DB> {
    // The values on a logarithmic axis (they span decades), ticked at 1-2-5 steps.
    let values: Vec<f64> = chart.bars.iter().map(|b| b.value.max(1e-9)).collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min) / 2.0;
    let hi = values.iter().copied().fold(0.0, f64::max) * 2.0;
    let n = chart.bars.len();
    let names: Vec<String> = chart.bars.iter().map(|b| b.label.clone()).collect();
    let x_label = move |v: &f64| -> String {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
            names[i as usize].clone()
        } else {
            String::new()
        }
    };
    let styles = styles(chart.bars.iter().map(|b| (b.label.as_str(), b.published)));
    let mut c = chart_builder(root, &chart.title, FRAME).build_cartesian_2d(
        -0.6..(n as f64 - 0.4),
        (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
    )?;
    styled_mesh(&mut c, chart.x_label, &log_label(chart.y_label))
        .disable_x_mesh()
        .x_labels(n.max(1) * 4 + 1)
        .x_label_formatter(&x_label)
        .draw()?;
    for (i, ((bar, value), &(colour, _))) in chart.bars.iter().zip(&values).zip(&styles).enumerate()
    {
        let x = i as f64;
        let rect = [(x - 0.3, lo), (x + 0.3, *value)];
        if bar.published {
            c.draw_series(std::iter::once(Rectangle::new(
                rect,
                RGBColor(200, 200, 200).filled(),
            )))?;
            c.draw_series(std::iter::once(Rectangle::new(rect, BLACK.stroke_width(2))))?;
        } else {
            c.draw_series(std::iter::once(Rectangle::new(rect, colour.filled())))?;
        }
        let text = format!("{} ms", tick_label(&bar.value));
        let style = (FONT, 15)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        c.draw_series(std::iter::once(Text::new(text, (x, *value * 1.05), style)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(path: &Path) -> (u32, u32) {
        let bytes = std::fs::read(path).unwrap();
        let mut reader = png::Decoder::new(bytes.as_slice()).read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut buf).unwrap();
        (frame.width, frame.height)
    }

    #[test]
    fn lines_and_bars_give_decodable_figures_with_captions() {
        let dir = tempfile::tempdir().unwrap();
        let lines = Chart {
            name: "lines",
            title: "Reclaim".into(),
            x_label: "MiB",
            y_label: "ms",
            curves: vec![
                Curve {
                    label: "marvin".into(),
                    points: vec![(250.0, 40.0), (500.0, 90.0)],
                    published: false,
                },
                Curve {
                    label: "published".into(),
                    points: vec![(250.0, 52.0), (500.0, 108.0)],
                    published: true,
                },
            ],
            bars: Vec::new(),
            y_log: false,
            caption: "reps 3".into(),
        };
        let files = lines.write(dir.path()).unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(decode(&files[1]), SIZE);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.contains("<desc>Reclaim: reps 3</desc>") && svg.contains("published"));
        let bars = Chart {
            name: "bars",
            bars: vec![
                Bar {
                    label: "free".into(),
                    value: 120.0,
                    published: false,
                },
                Bar {
                    label: "paper: Linux swap".into(),
                    value: 8000.0,
                    published: true,
                },
            ],
            curves: Vec::new(),
            ..lines
        };
        let files = bars.write(dir.path()).unwrap();
        assert_eq!(decode(&files[1]), SIZE);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains("paper: Linux swap") && svg.contains("8000 ms"),
            "{svg}"
        );
    }
}
