//! A figure of values over time, described as data and drawn on any backend: lines
//! (solid or dashed, with a marker at about a dozen of their points, broken where a value
//! is NaN), shaded bands (a range at each time), horizontal levels and labelled reference
//! marks, with the legend below. The pressure experiment's `active_apps` and `resident`
//! figures are drawn as these.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::axes::{chart_builder, dozen, draw_markers, draw_stroked, styled_mesh, Frame};
use crate::font::FONT;
use crate::legend::{draw_legend, split_for_legend, LegendEntry};
use crate::style::{Area, Drawn, Marker, Stroke, KEY_GREY, MARK_GREY};
use crate::write::Drawing;

/// The frame of a figure over time.
const FRAME: Frame = Frame {
    margin: 16,
    x_labels: 48,
    y_labels: 72,
};

/// One polyline of a figure, in data coordinates; a point whose value is NaN breaks it
/// (a missing sample: the pen lifts there, [`Line::runs`]).
#[derive(Clone, Debug)]
pub struct Line {
    pub colour: RGBColor,
    pub stroke: Stroke,
    pub width: u32,
    /// Drawn at about a dozen of the line's points (none for `None`).
    pub marker: Option<Marker>,
    pub points: Vec<(f64, f64)>,
}

impl Line {
    /// The runs of the line between its breaks, each drawn on its own so no straight
    /// line crosses a gap.
    pub fn runs(&self) -> impl Iterator<Item = &[(f64, f64)]> {
        self.points
            .split(|p| p.1.is_nan())
            .filter(|run| !run.is_empty())
    }
}

/// A band's time, lowest and highest value.
pub type BandPoint = (f64, f64, f64);

/// A shaded range: at each time, the lowest and highest value.
#[derive(Clone, Debug)]
pub struct Band {
    pub colour: RGBColor,
    pub points: Vec<BandPoint>,
}

/// Everything needed to draw one figure over time, independent of the backend.
#[derive(Clone, Debug)]
pub struct TimeFigure {
    pub title: String,
    pub y_label: String,
    pub bands: Vec<Band>,
    pub lines: Vec<Line>,
    /// Horizontal reference lines: value and colour.
    pub levels: Vec<(f64, RGBColor)>,
    /// Labelled reference levels (published results), drawn dashed in grey with their
    /// label above the line at the left.
    pub marks: Vec<(f64, String)>,
    pub legend: Vec<LegendEntry>,
}

impl TimeFigure {
    /// Whether any line has a point.
    pub fn has_samples(&self) -> bool {
        self.lines.iter().any(|line| !line.points.is_empty())
    }

    /// The axes' ranges: time from 0 (or the earliest sample) to the last sample, values
    /// from 0 to 10 % above the largest (bands, levels and marks included); never empty.
    pub fn ranges(&self) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
        let points = || {
            self.lines
                .iter()
                .flat_map(|line| line.points.iter().copied())
                .chain(
                    self.bands
                        .iter()
                        .flat_map(|b| b.points.iter().map(|p| (p.0, p.2))),
                )
        };
        let x_min = points().map(|p| p.0).fold(0.0, f64::min);
        let x_max = points().map(|p| p.0).fold(x_min, f64::max);
        let y_max = points()
            .map(|p| p.1)
            .chain(self.levels.iter().map(|level| level.0))
            .chain(self.marks.iter().map(|mark| mark.0))
            .fold(0.0, f64::max);
        let x_max = if x_max > x_min { x_max } else { x_min + 1.0 };
        let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
        (x_min..x_max, 0.0..y_max)
    }
}

impl Drawing for TimeFigure {
    fn title(&self) -> &str {
        &self.title
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        let (plot_area, legend_area) = split_for_legend(root, &self.legend);
        let (x_range, y_range) = self.ranges();
        let mut chart =
            chart_builder(&plot_area, &self.title, FRAME).build_cartesian_2d(x_range, y_range)?;
        styled_mesh(&mut chart, "time (s)", &self.y_label).draw()?;
        draw_references(&mut chart, self)?;
        for line in &self.lines {
            draw_line(&mut chart, line)?;
        }
        if !self.has_samples() {
            let (plot_width, plot_height) = plot_area.dim_in_pixel();
            let centre = (plot_width as i32 / 2, plot_height as i32 / 2);
            let style = (FONT, 20)
                .into_font()
                .color(&KEY_GREY)
                .pos(Pos::new(HPos::Center, VPos::Center));
            plot_area.draw(&Text::new("no samples", centre, style))?;
        }
        draw_legend(&legend_area, &self.legend)
    }
}

/// A chart over time on one backend.
type TimeChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws what lies under the lines: the bands, the levels and the labelled marks.
fn draw_references<DB: DrawingBackend>(
    chart: &mut TimeChart<'_, DB>,
    figure: &TimeFigure,
) -> Drawn<DB> {
    let x_range = chart.x_range();
    let (x_start, x_end) = (x_range.start, x_range.end);
    for band in &figure.bands {
        let upper = band.points.iter().map(|p| (p.0, p.2));
        let lower = band.points.iter().rev().map(|p| (p.0, p.1));
        chart.draw_series(std::iter::once(Polygon::new(
            upper.chain(lower).collect::<Vec<_>>(),
            band.colour.mix(0.2).filled(),
        )))?;
    }
    for &(level, colour) in &figure.levels {
        chart.draw_series(LineSeries::new(
            [(x_start, level), (x_end, level)],
            colour.stroke_width(1),
        ))?;
    }
    let span = x_end - x_start;
    let label_style = (FONT, 14)
        .into_font()
        .color(&MARK_GREY)
        .pos(Pos::new(HPos::Left, VPos::Bottom));
    for (level, label) in &figure.marks {
        chart.draw_series(DashedLineSeries::new(
            [(x_start, *level), (x_end, *level)],
            6,
            4,
            MARK_GREY.stroke_width(1),
        ))?;
        chart.draw_series(std::iter::once(Text::new(
            label.clone(),
            (x_start + span * 0.01, *level),
            label_style.clone(),
        )))?;
    }
    Ok(())
}

/// Draws one line: its runs in its stroke, a dot where it is a lone sample, and its
/// marker at about a dozen of its points.
fn draw_line<DB: DrawingBackend>(chart: &mut TimeChart<'_, DB>, line: &Line) -> Drawn<DB> {
    let style = line.colour.stroke_width(line.width);
    for run in line.runs() {
        draw_stroked(chart, run, line.stroke, style)?;
    }
    // A lone sample makes no line: a dot shows it (besides any marker).
    if let [point] = line.points[..] {
        chart.draw_series(std::iter::once(Circle::new(
            point,
            3 + line.width,
            line.colour.filled(),
        )))?;
    }
    if let Some(marker) = line.marker {
        let drawn = line.points.iter().filter(|p| p.1.is_finite());
        draw_markers(chart, dozen(line.points.len(), drawn), marker, line.colour)?;
    }
    Ok(())
}
