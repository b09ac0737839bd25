//! The paper's figures drawn from `marvin bench` results (`--plot DIR`): a chart of
//! lines over a numeric axis (figures 6, 9 and 10) or of bars (figure 3), with the
//! published values drawn beside marvin's in black, dashed, where the paper gives them.
//! Written as `NAME.svg` and `NAME.png`, with a one-line caption of the settings in the
//! SVG's `<desc>` and in `NAME.txt`; colours are the Okabe-Ito palette with a marker
//! shape per line, as in the pressure figures.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::system::plot::{add_svg_description, okabe_ito, register_font, FONT};
use crate::system::plot_text::Png;

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
    /// The settings, one line.
    pub caption: String,
}

const SIZE: (u32, u32) = (1000, 620);
const COLOURS: [RGBColor; 5] = [
    okabe_ito::BLUISH_GREEN,
    okabe_ito::VERMILLION,
    okabe_ito::BLUE,
    okabe_ito::ORANGE,
    okabe_ito::REDDISH_PURPLE,
];

/// Checks that `dir` can take the figure's files before a benchmark spends its time
/// (creating nothing: the directory is made when the figure is written).
pub fn prepare(dir: &Path) -> anyhow::Result<()> {
    // The path error itself, so the command ends with status 2 naming the flag.
    crate::cli::paths::check_output_dir("--plot", dir).map_err(anyhow::Error::new)
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

fn tick(v: &f64) -> String {
    let t = format!("{v:.2}");
    t.trim_end_matches('0').trim_end_matches('.').to_owned()
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

fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let points = || {
        chart
            .curves
            .iter()
            .flat_map(|c| c.points.iter())
            .filter(|p| p.0.is_finite() && p.1.is_finite())
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
    let span = (y_max - y_min).max(1e-9);
    let y_range = (y_min - if y_min < 0.0 { 0.1 * span } else { 0.0 })..(y_max + 0.12 * span);
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, (FONT, 24))
        .margin(18)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range, y_range)?;
    c.configure_mesh()
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .draw()?;
    let mut ours = 0;
    for curve in &chart.curves {
        let pts: Vec<(f64, f64)> = curve
            .points
            .iter()
            .copied()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .collect();
        let (colour, width) = if curve.published {
            (BLACK, 2)
        } else {
            ours += 1;
            (COLOURS[(ours - 1) % COLOURS.len()], 3)
        };
        let style = colour.stroke_width(width);
        let series = if curve.published {
            c.draw_series(DashedLineSeries::new(pts.iter().copied(), 9, 6, style))?
        } else {
            c.draw_series(LineSeries::new(pts.iter().copied(), style))?
        };
        let published = curve.published;
        series.label(curve.label.clone()).legend(move |(x, y)| {
            PathElement::new(
                [(x, y), (x + 30, y)],
                colour.stroke_width(if published { 2 } else { 3 }),
            )
        });
        if curve.published {
            c.draw_series(
                pts.iter()
                    .map(|&p| Circle::new(p, 6, colour.stroke_width(2))),
            )?;
        } else {
            c.draw_series(pts.iter().map(|&p| Circle::new(p, 5, colour.filled())))?;
        }
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 16))
        .draw()?;
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    // log10 of the values on a linear axis, ticks labelled with the values.
    let logs: Vec<f64> = chart
        .bars
        .iter()
        .map(|b| b.value.max(1e-9).log10())
        .collect();
    let lo = logs.iter().copied().fold(f64::INFINITY, f64::min).floor() - 0.2;
    let hi = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max) + 0.3;
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
    let y_label = |v: &f64| tick(&10f64.powf(*v));
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, (FONT, 24))
        .margin(18)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.6..(n as f64 - 0.4), lo..hi)?;
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(n.max(1) * 4 + 1)
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .draw()?;
    let mut ours = 0;
    for (i, (bar, log)) in chart.bars.iter().zip(&logs).enumerate() {
        let x = i as f64;
        let rect = [(x - 0.3, lo), (x + 0.3, *log)];
        if bar.published {
            c.draw_series(std::iter::once(Rectangle::new(
                rect,
                RGBColor(200, 200, 200).filled(),
            )))?;
            c.draw_series(std::iter::once(Rectangle::new(rect, BLACK.stroke_width(2))))?;
        } else {
            let colour = COLOURS[ours % COLOURS.len()];
            ours += 1;
            c.draw_series(std::iter::once(Rectangle::new(rect, colour.filled())))?;
        }
        let value = format!("{} ms", tick(&bar.value));
        let style = (FONT, 15)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        c.draw_series(std::iter::once(Text::new(value, (x, *log + 0.03), style)))?;
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
