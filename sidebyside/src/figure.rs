//! The paper's figures drawn from `marvin bench` results (`--plot DIR`): a chart of
//! lines over a numeric axis (figures 6, 9 and 10) or of bars (figure 3), with the
//! published values drawn beside marvin's in black, dashed, where the paper gives them.
//! Written as `NAME.svg` and `NAME.png`, with a one-line caption of the settings in the
//! SVG's `<desc>` and in `NAME.txt`. They are drawn in the pressure figures' style
//! ([`marvin_system::figure_style`]): the same colour and marker per column, logarithmic
//! axes ticked at 1-2-5 steps, the legend in a strip below the plot.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use marvin_system::figure_style::{
    column_styles, draw_legend, draw_marker, log_ticks, split_for_legend, tick_label, LegendEntry,
    Marker, Stroke,
};
use marvin_system::plot::{add_svg_description, register_font, FONT};
use marvin_system::plot_text::Png;

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

/// Checks that `dir` can take the figure's files before a benchmark spends its time
/// (creating nothing: the directory is made when the figure is written).
pub fn prepare(dir: &Path) -> anyhow::Result<()> {
    // The path error itself, so the command ends with status 2 naming the flag.
    marvin_system::paths::check_output_dir("--plot", dir).map_err(anyhow::Error::new)
}

/// Writes the chart into `dir`; returns the files written.
pub fn write(dir: &Path, chart: &Chart) -> anyhow::Result<Vec<PathBuf>> {
    register_font()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let svg = dir.join(format!("{}.svg", chart.name));
    let png = dir.join(format!("{}.png", chart.name));
    let txt = dir.join(format!("{}.txt", chart.name));
    {
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        draw(&root, chart)
            .and_then(|()| root.present())
            .map_err(|e| anyhow!("drawing {}: {e}", svg.display()))?;
    }
    let text = format!("{}: {}", chart.title, chart.caption);
    add_svg_description(&svg, &text)?;
    {
        let root = Png::file(&png, SIZE)?.into_drawing_area();
        draw(&root, chart)
            .and_then(|()| root.present())
            .map_err(|e| anyhow!("drawing {}: {e}", png.display()))?;
    }
    std::fs::write(&txt, format!("{text}\n"))
        .with_context(|| format!("writing {}", txt.display()))?;
    Ok(vec![svg, png, txt])
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    if chart.bars.is_empty() {
        draw_lines(root, chart)
    } else {
        draw_bars(root, chart)
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

fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
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
    let mut builder = ChartBuilder::on(&plot_area);
    builder
        .caption(&chart.title, (FONT, 24))
        .margin(18)
        .x_label_area_size(50)
        .y_label_area_size(80);
    if chart.y_log {
        let lo = points().map(|p| p.1).fold(f64::INFINITY, f64::min).min(1.0) / 1.5;
        let hi = y_max.max(lo * 10.0) * 1.5;
        let mut c = builder.build_cartesian_2d(
            x_range,
            (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
        )?;
        c.configure_mesh()
            .x_desc(chart.x_label)
            .y_desc(log_label(chart.y_label))
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 17))
            .light_line_style(RGBColor(235, 235, 235))
            .x_label_formatter(&tick_label)
            .y_label_formatter(&tick_label)
            .draw()?;
        draw_curves(&mut c, chart, &styles, &finite)?;
    } else {
        let span = (y_max - y_min).max(1e-9);
        let y_range = (y_min - if y_min < 0.0 { 0.1 * span } else { 0.0 })..(y_max + 0.12 * span);
        let mut c = builder.build_cartesian_2d(x_range, y_range)?;
        c.configure_mesh()
            .x_desc(chart.x_label)
            .y_desc(chart.y_label)
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 17))
            .light_line_style(RGBColor(235, 235, 235))
            .x_label_formatter(&tick_label)
            .y_label_formatter(&tick_label)
            .draw()?;
        draw_curves(&mut c, chart, &styles, &finite)?;
    }
    draw_legend(&legend_area, &legend)
}

/// Draws every curve of `chart` on `c`: ours solid with their markers, published ones
/// black, dashed, with hollow circles.
fn draw_curves<DB: DrawingBackend, X, Y>(
    c: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    chart: &Chart,
    styles: &[(RGBColor, Marker)],
    keep: &impl Fn(&&(f64, f64)) -> bool,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (curve, &(colour, marker)) in chart.curves.iter().zip(styles) {
        let pts: Vec<(f64, f64)> = curve.points.iter().filter(keep).copied().collect();
        if curve.published {
            let style = colour.stroke_width(2);
            c.draw_series(DashedLineSeries::new(pts.iter().copied(), 9, 6, style))?;
            c.draw_series(pts.iter().map(|&p| Circle::new(p, 6, WHITE.filled())))?;
            c.draw_series(
                pts.iter()
                    .map(|&p| Circle::new(p, 6, colour.stroke_width(2))),
            )?;
        } else {
            c.draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(3)))?;
            let plotting = c.plotting_area();
            let base = plotting.get_base_pixel();
            let area = plotting.strip_coord_spec();
            for p in &pts {
                let at = plotting.map_coordinate(p);
                draw_marker(&area, marker, (at.0 - base.0, at.1 - base.1), colour)?;
            }
        }
    }
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
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
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, (FONT, 24))
        .margin(18)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(
            -0.6..(n as f64 - 0.4),
            (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
        )?;
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(n.max(1) * 4 + 1)
        .x_desc(chart.x_label)
        .y_desc(log_label(chart.y_label))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&x_label)
        .y_label_formatter(&tick_label)
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
        let files = write(dir.path(), &lines).unwrap();
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
        let files = write(dir.path(), &bars).unwrap();
        assert_eq!(decode(&files[1]), SIZE);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains("paper: Linux swap") && svg.contains("8000 ms"),
            "{svg}"
        );
    }

    #[test]
    fn an_unwritable_plot_directory_is_refused_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(prepare(&file).is_err());
        let new = dir.path().join("new");
        assert!(prepare(&new).is_ok());
        assert!(
            !new.exists(),
            "nothing is created before the figure is written"
        );
    }
}
