//! Figures of a memory-pressure run, drawn as SVG and PNG:
//!
//! - `active_apps`: apps active over time, one colour per policy (the Marvin paper's
//!   figure 7), with apps alive as thin dashed lines of the same colour;
//! - `resident`: resident memory over time (MiB) per policy, the System's accounted
//!   bytes solid and the process's RSS dashed, with the memory budget as a black line.
//!
//! Text is set in DejaVu Sans, embedded in the binary, so no system font is needed.
//! A figure is first described as data ([`Figure`]), then drawn on either backend.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, ensure, Context};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::series::PolicySeries;

/// The files written by [`write_plots`].
#[derive(Clone, Debug, Default)]
pub struct PlotFiles {
    /// Every file written, SVG and PNG.
    pub files: Vec<PathBuf>,
}

/// Width and height of every figure, in pixels.
const FIGURE_SIZE: (u32, u32) = (1000, 600);
/// Width of the legend panel at the right of each figure.
const LEGEND_WIDTH: u32 = 200;
/// The family name the embedded font is registered under.
pub(crate) const FONT: &str = "sans-serif";
const BYTES_PER_MIB: f64 = (1u64 << 20) as f64;

/// Colours of the three pressure policies, then of any other, in order of appearance.
const POLICY_COLOURS: [(&str, RGBColor); 4] = [
    ("kill", RGBColor(214, 39, 40)),
    ("page-swap", RGBColor(31, 119, 180)),
    // The swap baseline of the process mode, coloured as the model's.
    ("kernel-swap", RGBColor(31, 119, 180)),
    ("marvin", RGBColor(44, 160, 44)),
];
const OTHER_COLOURS: [RGBColor; 4] = [
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];
/// Colour of the legend's line-style key.
const KEY_GREY: RGBColor = RGBColor(90, 90, 90);

/// Writes `active_apps.svg/.png` and `resident.svg/.png` into `dir` (created if
/// missing). Series without samples give empty charts; the budget line is drawn when
/// `budget_bytes` is not zero.
pub fn write_plots(
    dir: &Path,
    series: &[PolicySeries],
    budget_bytes: u64,
) -> anyhow::Result<PlotFiles> {
    write_plots_counted(dir, series, budget_bytes, Counted::Runtime)
}

/// Who counted the resident memory the `resident` figure shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// The in-process model: the System's accounted bytes against its budget.
    Runtime,
    /// The process mode: the cgroup's usage against the limit the kernel enforces.
    Kernel,
}

/// As [`write_plots`], saying who counted the resident memory.
pub fn write_plots_counted(
    dir: &Path,
    series: &[PolicySeries],
    budget_bytes: u64,
    counted: Counted,
) -> anyhow::Result<PlotFiles> {
    register_font()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let figures = [
        ("active_apps", active_apps_figure(series)),
        ("resident", resident_figure(series, budget_bytes, counted)),
    ];
    let mut files = Vec::with_capacity(2 * figures.len());
    for (name, figure) in &figures {
        let svg = dir.join(format!("{name}.svg"));
        draw_to(SVGBackend::new(&svg, FIGURE_SIZE), figure, &svg)?;
        files.push(svg);
        let png = dir.join(format!("{name}.png"));
        draw_to(BitMapBackend::new(&png, FIGURE_SIZE), figure, &png)?;
        files.push(png);
    }
    Ok(PlotFiles { files })
}

/// Registers the embedded DejaVu Sans as the figures' font, once per process (the
/// benchmarks' figures use it too).
pub(crate) fn register_font() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let registered = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    ensure!(
        registered,
        "the embedded DejaVu Sans font could not be loaded"
    );
    Ok(())
}

/// How a line is stroked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stroke {
    Solid,
    Dashed,
}

/// One polyline of a figure, in data coordinates.
#[derive(Clone, Debug)]
struct Line {
    colour: RGBColor,
    stroke: Stroke,
    width: u32,
    points: Vec<(f64, f64)>,
}

/// One row of a figure's legend.
#[derive(Clone, Debug)]
struct LegendEntry {
    label: String,
    colour: RGBColor,
    stroke: Stroke,
    width: u32,
}

/// Everything needed to draw one figure, independent of the backend.
#[derive(Clone, Debug)]
struct Figure {
    title: &'static str,
    y_label: &'static str,
    lines: Vec<Line>,
    /// Horizontal reference lines: value and colour.
    levels: Vec<(f64, RGBColor)>,
    legend: Vec<LegendEntry>,
}

impl Figure {
    fn has_samples(&self) -> bool {
        self.lines.iter().any(|line| !line.points.is_empty())
    }

    /// The axes' ranges: time from 0 (or the earliest sample) to the last sample, values
    /// from 0 to 10 % above the largest; never empty.
    fn ranges(&self) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
        let points = || self.lines.iter().flat_map(|line| line.points.iter());
        let x_min = points().map(|p| p.0).fold(0.0, f64::min);
        let x_max = points().map(|p| p.0).fold(x_min, f64::max);
        let y_max = points()
            .map(|p| p.1)
            .chain(self.levels.iter().map(|level| level.0))
            .fold(0.0, f64::max);
        let x_max = if x_max > x_min { x_max } else { x_min + 1.0 };
        let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
        (x_min..x_max, 0.0..y_max)
    }
}

/// The colour of `policy`, the `index`-th series of the run.
pub(crate) fn policy_colour(policy: &str, index: usize) -> RGBColor {
    POLICY_COLOURS
        .iter()
        .find(|(name, _)| *name == policy)
        .map(|(_, colour)| *colour)
        .unwrap_or(OTHER_COLOURS[index % OTHER_COLOURS.len()])
}

/// Per policy, a solid and a dashed line with the values `solid` and `dashed` pick
/// from each sample; samples whose time is not finite are left out.
fn policy_lines(
    series: &[PolicySeries],
    solid: impl Fn(&super::series::SeriesPoint) -> f64,
    dashed: impl Fn(&super::series::SeriesPoint) -> f64,
) -> (Vec<Line>, Vec<LegendEntry>) {
    let mut lines = Vec::with_capacity(2 * series.len());
    let mut legend = Vec::with_capacity(series.len());
    for (index, policy_series) in series.iter().enumerate() {
        let colour = policy_colour(&policy_series.policy, index);
        let samples = || policy_series.points.iter().filter(|p| p.t_s.is_finite());
        lines.push(Line {
            colour,
            stroke: Stroke::Solid,
            width: 2,
            points: samples().map(|p| (p.t_s, solid(p))).collect(),
        });
        lines.push(Line {
            colour,
            stroke: Stroke::Dashed,
            width: 1,
            points: samples().map(|p| (p.t_s, dashed(p))).collect(),
        });
        legend.push(LegendEntry {
            label: policy_series.policy.clone(),
            colour,
            stroke: Stroke::Solid,
            width: 3,
        });
    }
    (lines, legend)
}

/// A grey legend row explaining what a line style stands for.
fn style_key(label: &str, stroke: Stroke) -> LegendEntry {
    LegendEntry {
        label: label.to_owned(),
        colour: KEY_GREY,
        stroke,
        width: match stroke {
            Stroke::Solid => 2,
            Stroke::Dashed => 1,
        },
    }
}

/// A byte count in MiB below 10 GiB, in GiB from there, for legend text.
fn size_label(bytes: u64) -> String {
    let mib = bytes as f64 / BYTES_PER_MIB;
    if mib < 10.0 * 1024.0 {
        format!("{} MiB", tick_label(&mib))
    } else {
        format!("{} GiB", tick_label(&(mib / 1024.0)))
    }
}

/// An axis tick's text: the value with at most two decimals, trailing zeros dropped.
fn tick_label(value: &f64) -> String {
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// Apps active (solid) and alive (dashed) over time, per policy.
fn active_apps_figure(series: &[PolicySeries]) -> Figure {
    let (lines, mut legend) = policy_lines(series, |p| f64::from(p.active), |p| f64::from(p.alive));
    legend.push(style_key("active apps", Stroke::Solid));
    legend.push(style_key("alive apps", Stroke::Dashed));
    Figure {
        title: "Active apps under memory pressure",
        y_label: "apps",
        lines,
        levels: Vec::new(),
        legend,
    }
}

/// Resident memory over time in MiB, per policy: accounted (solid) and RSS (dashed),
/// with the budget as a black line when it is not zero.
fn resident_figure(series: &[PolicySeries], budget_bytes: u64, counted: Counted) -> Figure {
    let mib = |bytes: u64| bytes as f64 / BYTES_PER_MIB;
    let (lines, mut legend) =
        policy_lines(series, |p| mib(p.accounted_bytes), |p| mib(p.rss_bytes));
    let (solid, dashed, level) = match counted {
        Counted::Runtime => ("accounted", "process RSS", "budget"),
        Counted::Kernel => ("cgroup usage", "apps' RSS", "cgroup limit"),
    };
    legend.push(style_key(solid, Stroke::Solid));
    legend.push(style_key(dashed, Stroke::Dashed));
    let mut levels = Vec::new();
    if budget_bytes > 0 {
        levels.push((mib(budget_bytes), BLACK));
        legend.push(LegendEntry {
            label: format!("{level} ({})", size_label(budget_bytes)),
            colour: BLACK,
            stroke: Stroke::Solid,
            width: 1,
        });
    }
    Figure {
        title: "Resident memory under memory pressure",
        y_label: "resident memory (MiB)",
        lines,
        levels,
        legend,
    }
}

/// Draws `figure` on `backend` and writes the file out; `path` names it in errors.
fn draw_to<DB: DrawingBackend>(backend: DB, figure: &Figure, path: &Path) -> anyhow::Result<()> {
    let root = backend.into_drawing_area();
    draw_figure(&root, figure)
        .and_then(|()| root.present())
        .map_err(|e| anyhow!("drawing {}: {e}", path.display()))
}

fn draw_figure<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    figure: &Figure,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let width = root.dim_in_pixel().0;
    let (plot_area, legend_area) = root.split_horizontally(width.saturating_sub(LEGEND_WIDTH));
    let (x_range, y_range) = figure.ranges();
    let (x_start, x_end) = (x_range.start, x_range.end);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(figure.title, (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x_range, y_range)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc(figure.y_label)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label)
        .draw()?;

    for &(level, colour) in &figure.levels {
        chart.draw_series(LineSeries::new(
            [(x_start, level), (x_end, level)],
            colour.stroke_width(1),
        ))?;
    }
    for line in &figure.lines {
        let style = line.colour.stroke_width(line.width);
        match line.stroke {
            Stroke::Solid => {
                chart.draw_series(LineSeries::new(line.points.iter().copied(), style))?;
            }
            Stroke::Dashed => {
                chart.draw_series(DashedLineSeries::new(
                    line.points.iter().copied(),
                    8,
                    5,
                    style,
                ))?;
            }
        }
        // A lone sample makes no line: mark it so it can be seen.
        if let [point] = line.points[..] {
            chart.draw_series(std::iter::once(Circle::new(
                point,
                3 + line.width,
                line.colour.filled(),
            )))?;
        }
    }
    if !figure.has_samples() {
        let (plot_width, plot_height) = plot_area.dim_in_pixel();
        let centre = (plot_width as i32 / 2, plot_height as i32 / 2);
        let style = (FONT, 20)
            .into_font()
            .color(&KEY_GREY)
            .pos(Pos::new(HPos::Center, VPos::Center));
        plot_area.draw(&Text::new("no samples", centre, style))?;
    }
    draw_legend(&legend_area, &figure.legend)
}

/// Draws the legend rows top-down in the panel right of the plot.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    const TOP: i32 = 70;
    const ROW: i32 = 28;
    const SAMPLE: i32 = 36;
    let text = (FONT, 16)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (row, entry) in entries.iter().enumerate() {
        let y = TOP + ROW * row as i32;
        let style = entry.colour.stroke_width(entry.width);
        match entry.stroke {
            Stroke::Solid => area.draw(&PathElement::new([(8, y), (8 + SAMPLE, y)], style))?,
            Stroke::Dashed => {
                for start in (8..8 + SAMPLE).step_by(13) {
                    area.draw(&PathElement::new([(start, y), (start + 8, y)], style))?;
                }
            }
        }
        area.draw(&Text::new(
            entry.label.as_str(),
            (16 + SAMPLE, y),
            text.clone(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::series::SeriesPoint;
    use super::*;

    /// A synthetic run: `kill` loses apps over time, `page-swap` keeps them alive but
    /// idle, `marvin` keeps them alive and active.
    fn three_policies() -> Vec<PolicySeries> {
        let run =
            |policy: &str, active: fn(u32) -> u32, alive: fn(u32) -> u32, mib: u64| PolicySeries {
                policy: policy.to_owned(),
                points: (0..60)
                    .map(|i| SeriesPoint {
                        t_s: f64::from(i) * 0.5,
                        alive: alive(i),
                        active: active(i),
                        kills: u64::from(i / 10),
                        restarts: u64::from(i / 20),
                        accounted_bytes: u64::from(i.min(30)) * (mib << 20),
                        rss_bytes: u64::from(i.min(30)) * ((mib + 2) << 20) + (32 << 20),
                        swap_written: u64::from(i) * 4096,
                        swap_read: u64::from(i) * 1024,
                        ..SeriesPoint::default()
                    })
                    .collect(),
            };
        vec![
            run("kill", |i| (i / 3).min(8), |i| (i / 2).min(10), 8),
            run("page-swap", |i| (i / 4).min(12), |i| (i / 2).min(24), 16),
            run("marvin", |i| (i / 2).min(22), |i| (i / 2).min(24), 12),
        ]
    }

    /// Decodes a PNG, returning its width, height and RGB pixels.
    fn decode_png(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
        let mut reader = png::Decoder::new(bytes.as_slice()).read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut buf).unwrap();
        assert_eq!(frame.color_type, png::ColorType::Rgb);
        assert_eq!(frame.bit_depth, png::BitDepth::Eight);
        let pixels = buf[..frame.buffer_size()]
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        (frame.width, frame.height, pixels)
    }

    fn count_colour(pixels: &[[u8; 3]], colour: RGBColor) -> usize {
        pixels
            .iter()
            .filter(|p| **p == [colour.0, colour.1, colour.2])
            .count()
    }

    fn expected_files(dir: &Path) -> Vec<PathBuf> {
        [
            "active_apps.svg",
            "active_apps.png",
            "resident.svg",
            "resident.png",
        ]
        .iter()
        .map(|name| dir.join(name))
        .collect()
    }

    #[test]
    fn the_resident_figure_says_who_counted() {
        let labels = |c| -> Vec<String> {
            resident_figure(&three_policies(), 64 << 20, c)
                .legend
                .into_iter()
                .map(|e| e.label)
                .collect()
        };
        let model = labels(Counted::Runtime);
        assert!(model.contains(&"accounted".to_string()), "{model:?}");
        assert!(model.contains(&"budget (64 MiB)".to_string()), "{model:?}");
        let kernel = labels(Counted::Kernel);
        assert!(kernel.contains(&"cgroup usage".to_string()), "{kernel:?}");
        assert!(
            kernel.contains(&"cgroup limit (64 MiB)".to_string()),
            "{kernel:?}"
        );
        assert!(!kernel.contains(&"accounted".to_string()), "{kernel:?}");
    }

    #[test]
    fn three_policies_give_svg_and_png_figures() {
        let dir = tempfile::tempdir().unwrap();
        let out = write_plots(dir.path(), &three_policies(), 512 << 20).unwrap();
        assert_eq!(out.files, expected_files(dir.path()));

        for svg in out.files.iter().filter(|f| f.extension().unwrap() == "svg") {
            let text = std::fs::read_to_string(svg).unwrap();
            assert!(text.starts_with("<svg"), "{}", svg.display());
            for name in ["kill", "page-swap", "marvin", "time (s)"] {
                assert!(text.contains(name), "{} lacks {name}", svg.display());
            }
        }
        let resident_svg = std::fs::read_to_string(dir.path().join("resident.svg")).unwrap();
        assert!(resident_svg.contains("budget (512 MiB)"));

        for png in out.files.iter().filter(|f| f.extension().unwrap() == "png") {
            let (width, height, pixels) = decode_png(png);
            assert_eq!((width, height), FIGURE_SIZE);
            // Every policy's line was drawn in its own colour.
            for (policy, colour) in POLICY_COLOURS {
                let n = count_colour(&pixels, colour);
                assert!(n > 200, "{}: {policy} has {n} pixels", png.display());
            }
            // Text was rendered: dark glyph pixels right of the legend's line samples.
            let legend_dark = pixels
                .chunks_exact(width as usize)
                .flat_map(|row| &row[(width - LEGEND_WIDTH + 50) as usize..])
                .filter(|p| p.iter().all(|&c| c < 100))
                .count();
            assert!(legend_dark > 100, "{}: legend text missing", png.display());
        }
    }

    #[test]
    fn empty_input_gives_empty_charts() {
        let dir = tempfile::tempdir().unwrap();
        let out = write_plots(dir.path(), &[], 0).unwrap();
        assert_eq!(out.files, expected_files(dir.path()));
        let (width, height, _) = decode_png(&dir.path().join("active_apps.png"));
        assert_eq!((width, height), FIGURE_SIZE);

        let no_points = vec![PolicySeries {
            policy: "kill".into(),
            points: vec![],
        }];
        let out = write_plots(dir.path(), &no_points, 1 << 30).unwrap();
        assert_eq!(out.files.len(), 4);
        let svg = std::fs::read_to_string(dir.path().join("active_apps.svg")).unwrap();
        assert!(svg.contains("no samples"));
    }

    #[test]
    fn single_sample_and_non_finite_times_do_not_break_figures() {
        let dir = tempfile::tempdir().unwrap();
        let point = SeriesPoint {
            t_s: 0.0,
            alive: 3,
            active: 2,
            accounted_bytes: 8 << 20,
            rss_bytes: 12 << 20,
            ..SeriesPoint::default()
        };
        let series = vec![
            PolicySeries {
                policy: "marvin".into(),
                points: vec![point.clone()],
            },
            PolicySeries {
                policy: "kill".into(),
                points: vec![
                    SeriesPoint {
                        t_s: f64::NAN,
                        ..point.clone()
                    },
                    SeriesPoint {
                        t_s: f64::INFINITY,
                        ..point
                    },
                ],
            },
        ];
        write_plots(dir.path(), &series, 0).unwrap();
        let (_, _, pixels) = decode_png(&dir.path().join("active_apps.png"));
        // The lone marvin sample is marked.
        assert!(count_colour(&pixels, policy_colour("marvin", 0)) > 10);
        let figure = active_apps_figure(&series);
        assert!(
            figure.lines[2].points.is_empty(),
            "non-finite times dropped"
        );
    }

    #[test]
    fn figures_hold_the_series_values() {
        let series = three_policies();
        let figure = resident_figure(&series, 256 << 20, Counted::Runtime);
        assert_eq!(figure.levels, [(256.0, BLACK)]);
        assert_eq!(figure.lines.len(), 6);
        let accounted = &figure.lines[0];
        assert_eq!(accounted.stroke, Stroke::Solid);
        assert_eq!(accounted.points[2], (1.0, 16.0));
        let rss = &figure.lines[1];
        assert_eq!(rss.stroke, Stroke::Dashed);
        assert_eq!(rss.points[2], (1.0, 52.0));
        let (x, y) = figure.ranges();
        assert_eq!(x, 0.0..29.5);
        assert!(y.end >= 30.0 * 18.0 + 32.0, "largest sample fits");
        assert!(y.end < 30.0 * 18.0 * 1.2 + 32.0, "no needless headroom");

        let active = active_apps_figure(&series);
        let marvin_active = &active.lines[4];
        assert_eq!(marvin_active.colour, policy_colour("marvin", 2));
        assert_eq!(marvin_active.points[10], (5.0, 5.0));
        assert_eq!(active.lines[5].points[10], (5.0, 5.0));
        let labels: Vec<&str> = active.legend.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(
            labels,
            ["kill", "page-swap", "marvin", "active apps", "alive apps"]
        );
    }

    #[test]
    fn tick_labels_drop_needless_decimals() {
        let labels: Vec<String> = [0.0, 25.0, 2.5, 0.126, -0.0, 1e9]
            .iter()
            .map(tick_label)
            .collect();
        assert_eq!(labels, ["0", "25", "2.5", "0.13", "0", "1000000000"]);
    }

    #[test]
    fn budget_labels_stay_short() {
        assert_eq!(size_label(512 << 20), "512 MiB");
        assert_eq!(size_label(1536 << 20), "1536 MiB");
        assert_eq!(size_label(24 << 30), "24 GiB");
        assert_eq!(size_label((10 << 30) + (512 << 20)), "10.5 GiB");
    }

    #[test]
    fn policies_get_distinct_colours() {
        let names = ["kill", "page-swap", "marvin", "other-a", "other-b"];
        let colours: Vec<RGBColor> = names
            .iter()
            .enumerate()
            .map(|(i, name)| policy_colour(name, i))
            .collect();
        for (i, a) in colours.iter().enumerate() {
            for b in &colours[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn unwritable_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, b"x").unwrap();
        assert!(write_plots(&file, &three_policies(), 0).is_err());
    }
}
