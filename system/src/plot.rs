//! Figures of a memory-pressure run, drawn as SVG and PNG:
//!
//! - `active_apps`: apps active over time, one colour and marker per policy (the Marvin
//!   paper's figure 7), active as thick solid lines and alive as thinner dashed lines
//!   of the same colour drawn on top;
//! - `resident`: resident memory over time (MiB) per policy, the System's accounted
//!   bytes solid and the process's RSS dashed, with the memory budget as a black line.
//!
//! This module turns the run's series into figures over time ([`TimeFigure`]); the
//! figures' layer (`marvin_figures`) draws and writes them in the one style every figure
//! shares: the Okabe-Ito palette and a marker shape per policy, so a figure reads in grey
//! too. With several repetitions, each policy's line is the median over the repetitions
//! at each sample and a shaded band spans their range (lowest to highest). Each figure
//! has a one-line caption with the settings that produced it: in the SVG's `<desc>` and
//! in a sidecar `NAME.txt`.

use std::path::{Path, PathBuf};

use marvin_figures::{
    column_styles, tick_label, write_figure, Band, BandPoint, LegendEntry, Line, Spread, Stroke,
    TimeFigure, DASHED, KEY_GREY, MARK_GREY,
};
use plotters::style::{RGBColor, BLACK};

use super::published::Published;
use super::series::{PolicySeries, SeriesPoint};

/// The files written by [`write_plots`].
#[derive(Clone, Debug, Default)]
pub struct PlotFiles {
    /// Every file written, SVG and PNG (and the caption sidecars).
    pub files: Vec<PathBuf>,
}

/// Width and height of every figure, in pixels.
const FIGURE_SIZE: (u32, u32) = (1000, 640);
const BYTES_PER_MIB: f64 = (1u64 << 20) as f64;

/// Writes `active_apps.svg/.png` and `resident.svg/.png` into `dir` (created if
/// missing). Series without samples give empty charts; the budget line is drawn when
/// `budget_bytes` is not zero.
pub fn write_plots(
    dir: &Path,
    series: &[PolicySeries],
    budget_bytes: u64,
) -> anyhow::Result<PlotFiles> {
    write_plots_counted(dir, series, budget_bytes, Counted::Runtime, "")
}

/// Who counted the resident memory the `resident` figure shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// The in-process model: the System's accounted bytes against its budget.
    Runtime,
    /// The process mode: the cgroup's usage against the limit the kernel enforces.
    Kernel,
}

/// As [`write_plots`], saying who counted the resident memory, with a one-line
/// caption of the settings (none when empty).
pub fn write_plots_counted(
    dir: &Path,
    series: &[PolicySeries],
    budget_bytes: u64,
    counted: Counted,
    caption: &str,
) -> anyhow::Result<PlotFiles> {
    write_plots_published(dir, series, budget_bytes, counted, caption, None)
}

/// As [`write_plots_counted`], with the published results (a `--scale paper` run) as
/// labelled dashed reference levels on the active-apps figure.
pub fn write_plots_published(
    dir: &Path,
    series: &[PolicySeries],
    budget_bytes: u64,
    counted: Counted,
    caption: &str,
    published: Option<&Published>,
) -> anyhow::Result<PlotFiles> {
    let mut active = active_apps_figure(series);
    if let Some(p) = published {
        add_published_marks(&mut active, p);
    }
    let figures = [
        ("active_apps", active),
        ("resident", resident_figure(series, budget_bytes, counted)),
    ];
    let mut files = Vec::with_capacity(3 * figures.len());
    for (name, figure) in &figures {
        files.extend(write_figure(dir, name, FIGURE_SIZE, figure, Some(caption))?);
    }
    Ok(PlotFiles { files })
}

/// The series grouped by column label (repetitions together), in order of appearance.
fn by_label(series: &[PolicySeries]) -> Vec<(&str, Vec<&PolicySeries>)> {
    let mut out: Vec<(&str, Vec<&PolicySeries>)> = Vec::new();
    for s in series {
        match out.iter_mut().find(|(l, _)| *l == s.policy) {
            Some((_, reps)) => reps.push(s),
            None => out.push((s.policy.as_str(), vec![s])),
        }
    }
    out
}

/// One value over the repetitions of a column: at each sample index all repetitions
/// share, the median time and value (the line) and the lowest and highest value (the
/// band; none for one repetition). Samples whose time is not finite are left out. Before
/// a sample that came after a gap (in any repetition) the line gets a break: a point
/// whose value is NaN, where the figure lifts its pen ([`Line::runs`]).
fn median_line(
    reps: &[&PolicySeries],
    value: &impl Fn(&SeriesPoint) -> f64,
) -> (Vec<(f64, f64)>, Vec<BandPoint>) {
    let finite: Vec<Vec<&SeriesPoint>> = reps
        .iter()
        .map(|s| s.points.iter().filter(|p| p.t_s.is_finite()).collect())
        .collect();
    if let [only] = &finite[..] {
        let mut line = Vec::with_capacity(only.len());
        for p in only {
            if p.after_gap {
                line.push((p.t_s, f64::NAN));
            }
            line.push((p.t_s, value(p)));
        }
        return (line, Vec::new());
    }
    let len = finite.iter().map(Vec::len).min().unwrap_or(0);
    let mut line = Vec::with_capacity(len);
    let mut band = Vec::with_capacity(len);
    for i in 0..len {
        let t = Spread::of(finite.iter().map(|r| r[i].t_s));
        let v = Spread::of(finite.iter().map(|r| value(r[i])));
        if let (Some(t), Some(v)) = (t, v) {
            if finite.iter().any(|r| r[i].after_gap) {
                line.push((t.median, f64::NAN));
            }
            line.push((t.median, v.median));
            band.push((t.median, v.min, v.max));
        }
    }
    (line, band)
}

/// Per column, a solid and a dashed line with the values `solid` and `dashed` pick
/// from each sample (the median over repetitions, with bands), and a legend row.
fn policy_lines(
    series: &[PolicySeries],
    solid: impl Fn(&SeriesPoint) -> f64,
    dashed: impl Fn(&SeriesPoint) -> f64,
) -> (Vec<Band>, Vec<Line>, Vec<LegendEntry>) {
    let groups = by_label(series);
    let mut bands = Vec::new();
    let mut solids = Vec::with_capacity(groups.len());
    let mut dashes = Vec::with_capacity(groups.len());
    let mut legend = Vec::with_capacity(groups.len());
    let labels: Vec<&str> = groups.iter().map(|g| g.0).collect();
    let styles = column_styles(&labels);
    for ((label, reps), &(colour, marker)) in groups.iter().zip(&styles) {
        let (solid_line, solid_band) = median_line(reps, &solid);
        let (dashed_line, dashed_band) = median_line(reps, &dashed);
        for points in [solid_band, dashed_band] {
            if !points.is_empty() {
                bands.push(Band { colour, points });
            }
        }
        solids.push(Line {
            colour,
            stroke: Stroke::Solid,
            width: 3,
            marker: Some(marker),
            points: solid_line,
        });
        dashes.push(Line {
            colour: darker(colour),
            stroke: DASHED,
            width: 2,
            marker: None,
            points: dashed_line,
        });
        let label = if reps.len() > 1 {
            format!("{label} (median of {})", reps.len())
        } else {
            (*label).to_owned()
        };
        legend.push(LegendEntry::line(label, colour, Some(marker)));
    }
    // Solid lines first, the thinner dashed ones on top, so neither hides the other.
    let mut lines = Vec::with_capacity(2 * groups.len());
    for (s, d) in solids.into_iter().zip(dashes) {
        lines.push(s);
        lines.push(d);
    }
    lines.sort_by_key(|l| l.stroke != Stroke::Solid);
    (bands, lines, legend)
}

/// A darker shade of `c`, for the dashed line drawn over a solid one of colour `c`
/// (where the two coincide, the dashes still show).
fn darker(c: RGBColor) -> RGBColor {
    let d = |v: u8| (f64::from(v) * 0.55).round() as u8;
    RGBColor(d(c.0), d(c.1), d(c.2))
}

/// A grey legend row explaining what a line style stands for.
fn style_key(label: &str, stroke: Stroke) -> LegendEntry {
    LegendEntry {
        label: label.to_owned(),
        colour: KEY_GREY,
        stroke,
        width: match stroke {
            Stroke::Solid => 3,
            Stroke::Dashed(..) => 2,
        },
        marker: None,
        hollow: false,
    }
}

/// The legend row for the shaded bands, when there are any.
fn band_key(bands: &[Band]) -> Option<LegendEntry> {
    (!bands.is_empty()).then(|| LegendEntry {
        label: "shaded: range of the repetitions".to_owned(),
        colour: RGBColor(205, 205, 205),
        stroke: Stroke::Solid,
        width: 12,
        marker: None,
        hollow: false,
    })
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

/// Apps active (solid) and alive (dashed) over time, per policy.
fn active_apps_figure(series: &[PolicySeries]) -> TimeFigure {
    let (bands, lines, mut legend) =
        policy_lines(series, |p| f64::from(p.active), |p| f64::from(p.alive));
    legend.push(style_key("active apps", Stroke::Solid));
    legend.push(style_key("alive apps", DASHED));
    legend.extend(band_key(&bands));
    TimeFigure {
        title: "Active apps under memory pressure".to_owned(),
        y_label: "apps".to_owned(),
        bands,
        lines,
        levels: Vec::new(),
        marks: Vec::new(),
        legend,
    }
}

/// Adds the published peaks of active apps to the active-apps figure: a dashed grey
/// level per policy with its label (`paper: kill 10`, ...), and a legend row.
fn add_published_marks(figure: &mut TimeFigure, published: &Published) {
    figure.marks = published
        .marks()
        .into_iter()
        .map(|(v, label)| (f64::from(v), label))
        .collect();
    figure.legend.push(LegendEntry {
        label: format!(
            "published peaks (Marvin, ATC'20, fig. 7; {})",
            published.workload()
        ),
        colour: MARK_GREY,
        stroke: DASHED,
        width: 1,
        marker: None,
        hollow: false,
    });
}

/// Resident memory over time in MiB, per policy: accounted (solid) and RSS (dashed),
/// with the budget as a black line when it is not zero.
fn resident_figure(series: &[PolicySeries], budget_bytes: u64, counted: Counted) -> TimeFigure {
    let mib = |bytes: u64| bytes as f64 / BYTES_PER_MIB;
    let (bands, lines, mut legend) =
        policy_lines(series, |p| mib(p.accounted_bytes), |p| mib(p.rss_bytes));
    let (solid, dashed, level) = match counted {
        Counted::Runtime => ("accounted", "process RSS", "budget"),
        Counted::Kernel => ("cgroup usage", "apps' RSS", "cgroup limit"),
    };
    legend.push(style_key(solid, Stroke::Solid));
    legend.push(style_key(dashed, DASHED));
    legend.extend(band_key(&bands));
    let mut levels = Vec::new();
    if budget_bytes > 0 {
        levels.push((mib(budget_bytes), BLACK));
        legend.push(LegendEntry {
            label: format!("{level} ({})", size_label(budget_bytes)),
            colour: BLACK,
            stroke: Stroke::Solid,
            width: 1,
            marker: None,
            hollow: false,
        });
    }
    TimeFigure {
        title: "Resident memory under memory pressure".to_owned(),
        y_label: "resident memory (MiB)".to_owned(),
        bands,
        lines,
        levels,
        marks: Vec::new(),
        legend,
    }
}

#[cfg(test)]
mod tests {
    use super::super::series::SeriesPoint;
    use super::*;
    use marvin_figures::{okabe_ito, Marker, LEGEND_HEIGHT, POLICY_STYLES};

    /// A synthetic run: `kill` loses apps over time, `page-swap` keeps them alive but
    /// idle, `marvin` keeps them alive and active.
    fn three_policies() -> Vec<PolicySeries> {
        let run =
            |policy: &str, active: fn(u32) -> u32, alive: fn(u32) -> u32, mib: u64| PolicySeries {
                rep: 0,
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
            let drawn = ["kill", "page-swap", "marvin"];
            for (policy, colour, _) in POLICY_STYLES.iter().filter(|p| drawn.contains(&p.0)) {
                let n = count_colour(&pixels, *colour);
                assert!(n > 200, "{}: {policy} has {n} pixels", png.display());
            }
            // Text was rendered: dark glyph pixels right of the legend's line samples.
            let legend_dark = pixels
                .chunks_exact(width as usize)
                .skip((height - LEGEND_HEIGHT) as usize)
                .flat_map(|row| &row[130..])
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
            rep: 0,
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
                rep: 0,
                policy: "marvin".into(),
                points: vec![point.clone()],
            },
            PolicySeries {
                rep: 0,
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
        assert!(count_colour(&pixels, okabe_ito::BLUISH_GREEN) > 10);
        let figure = active_apps_figure(&series);
        assert!(
            figure.lines[1].points.is_empty(),
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
        let rss = &figure.lines[3];
        assert_eq!(rss.stroke, DASHED);
        assert_eq!(rss.points[2], (1.0, 52.0));
        let (x, y) = figure.ranges();
        assert_eq!(x, 0.0..29.5);
        assert!(y.end >= 30.0 * 18.0 + 32.0, "largest sample fits");
        assert!(y.end < 30.0 * 18.0 * 1.2 + 32.0, "no needless headroom");

        let active = active_apps_figure(&series);
        let marvin_active = &active.lines[2];
        assert_eq!(marvin_active.colour, okabe_ito::BLUISH_GREEN);
        assert_eq!(marvin_active.points[10], (5.0, 5.0));
        assert_eq!(active.lines[5].points[10], (5.0, 5.0));
        // The dashed alive lines come after (over) every solid active line.
        let strokes: Vec<Stroke> = active.lines.iter().map(|l| l.stroke).collect();
        assert_eq!(strokes[..3], [Stroke::Solid; 3]);
        assert_eq!(strokes[3..], [DASHED; 3]);
        let labels: Vec<&str> = active.legend.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(
            labels,
            ["kill", "page-swap", "marvin", "active apps", "alive apps"]
        );
    }

    #[test]
    fn a_gap_in_the_samples_breaks_the_line() {
        let mut series = three_policies();
        series.truncate(1);
        series[0].points[30].after_gap = true;
        let figure = active_apps_figure(&series);
        let solid = &figure.lines[0];
        let runs: Vec<usize> = solid.runs().map(<[_]>::len).collect();
        assert_eq!(runs, [30, 30], "two runs, split before the late sample");
        let (x, y) = figure.ranges();
        assert!(x.end.is_finite() && y.end.is_finite());
        // Still draws.
        let dir = tempfile::tempdir().unwrap();
        write_plots(dir.path(), &series, 0).unwrap();
    }

    #[test]
    fn repetitions_give_a_median_line_and_a_band() {
        let mut reps = three_policies();
        reps.truncate(1);
        let mut second = reps[0].clone();
        second.rep = 1;
        for p in &mut second.points {
            p.active += 4;
        }
        reps.push(second);
        let figure = active_apps_figure(&reps);
        assert_eq!(figure.legend[0].label, "kill (median of 2)");
        assert_eq!(
            figure.lines.len(),
            2,
            "one solid and one dashed line per column"
        );
        let line = &figure.lines[0];
        let band = &figure.bands[0];
        for (i, p) in reps[0].points.iter().enumerate() {
            let a = f64::from(p.active);
            assert_eq!(line.points[i], (p.t_s, a + 2.0));
            assert_eq!(band.points[i], (p.t_s, a, a + 4.0));
        }
        // The band is drawn: its pale colour is in the PNG.
        let dir = tempfile::tempdir().unwrap();
        write_plots(dir.path(), &reps, 0).unwrap();
        let (_, _, pixels) = decode_png(&dir.path().join("active_apps.png"));
        let c = okabe_ito::VERMILLION;
        let pale = |v: u8| ((f64::from(v) * 0.2) + 255.0 * 0.8).round() as u8;
        let pale = [pale(c.0), pale(c.1), pale(c.2)];
        let n = pixels
            .iter()
            .filter(|p| p.iter().zip(pale).all(|(a, b)| a.abs_diff(b) <= 2))
            .count();
        assert!(n > 500, "band pixels: {n}");
    }

    #[test]
    fn published_marks_are_labelled_on_the_active_apps_figure_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = Published { mixed: false };
        write_plots_published(
            dir.path(),
            &three_policies(),
            1 << 30,
            Counted::Runtime,
            "",
            Some(&p),
        )
        .unwrap();
        let svg = std::fs::read_to_string(dir.path().join("active_apps.svg")).unwrap();
        for label in ["paper: kill 10", "paper: swap 13", "paper: marvin 27"] {
            assert!(svg.contains(label), "{label} missing");
        }
        let resident = std::fs::read_to_string(dir.path().join("resident.svg")).unwrap();
        assert!(!resident.contains("paper:"));
        // The y axis reaches the highest mark, and without --scale paper there are none.
        let mut figure = active_apps_figure(&three_policies());
        assert!(figure.marks.is_empty());
        add_published_marks(&mut figure, &p);
        assert!(figure.ranges().1.end >= 27.0);
    }

    #[test]
    fn captions_go_into_the_svg_and_a_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let caption = "in-process, 4 apps, budget 12 MiB, 2 repetitions <x&y>";
        let out = write_plots_counted(dir.path(), &three_policies(), 0, Counted::Runtime, caption)
            .unwrap();
        assert_eq!(out.files.len(), 6);
        let side = std::fs::read_to_string(dir.path().join("resident.txt")).unwrap();
        assert_eq!(
            side,
            format!("Resident memory under memory pressure: {caption}\n")
        );
        let svg = std::fs::read_to_string(dir.path().join("active_apps.svg")).unwrap();
        assert!(svg.contains("<desc>Active apps under memory pressure: in-process, 4 apps, budget 12 MiB, 2 repetitions &lt;x&amp;y&gt;</desc>"));
        assert!(svg.trim_start().starts_with("<svg"));
    }

    #[test]
    fn variants_get_markers_of_their_own() {
        let mut series = three_policies();
        series[1].policy = "marvin:base".into();
        series[2].policy = "marvin:w2".into();
        let figure = active_apps_figure(&series);
        let markers: Vec<Option<Marker>> = figure.legend[..3].iter().map(|e| e.marker).collect();
        assert_eq!(markers[0], Some(Marker::Triangle), "kill's own");
        for m in &markers[1..] {
            assert!(
                !matches!(
                    m,
                    Some(Marker::Triangle | Marker::Square | Marker::Circle | Marker::Hexagon)
                ),
                "a variant drawn with a policy's marker: {markers:?}"
            );
        }
        assert_ne!(markers[1], markers[2]);
    }

    #[test]
    fn budget_labels_stay_short() {
        assert_eq!(size_label(512 << 20), "512 MiB");
        assert_eq!(size_label(1536 << 20), "1536 MiB");
        assert_eq!(size_label(24 << 30), "24 GiB");
        assert_eq!(size_label((10 << 30) + (512 << 20)), "10.5 GiB");
    }

    #[test]
    fn unwritable_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, b"x").unwrap();
        assert!(write_plots(&file, &three_policies(), 0).is_err());
    }
}
