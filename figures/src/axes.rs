//! The frame and axes every chart shares: a chart's title and label areas
//! ([`chart_builder`]), its mesh in the figures' type sizes with a light grid and
//! plain-number ticks ([`styled_mesh`]), a line in its stroke ([`draw_stroked`]) and a
//! marker at each of some of a line's points ([`draw_markers`]).

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::font::FONT;
use crate::style::{draw_marker, tick_label, Drawn, Marker, Stroke};

/// The space around a chart: its margin, and the heights of the x labels' and widths of
/// the y labels' areas, in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub margin: u32,
    pub x_labels: u32,
    pub y_labels: u32,
}

/// An axis of plain numbers (linear or logarithmic).
pub trait Axis: Ranged<ValueType = f64> {}

impl<T: Ranged<ValueType = f64>> Axis for T {}

/// The colour of the mesh's light lines.
const GRID: RGBColor = RGBColor(235, 235, 235);

/// A chart on `area` titled `title` (24 px) in `frame`, ready for its coordinates.
pub fn chart_builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    frame: Frame,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, (FONT, 24))
        .margin(frame.margin)
        .x_label_area_size(frame.x_labels)
        .y_label_area_size(frame.y_labels);
    builder
}

/// The mesh of `chart` described by `x_desc` and `y_desc`, in the figures' style (15 px
/// labels, 17 px descriptions, light grid, [`tick_label`] ticks); the caller adds what
/// its chart needs and draws it.
pub fn styled_mesh<'a, 'b, DB, X, Y>(
    chart: &'b mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
) -> MeshStyle<'a, 'b, X, Y, DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(GRID)
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label);
    mesh
}

/// Draws the polyline through `points` with `stroke` in `style`.
pub fn draw_stroked<DB: DrawingBackend, X: Axis, Y: Axis>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    points: &[(f64, f64)],
    stroke: Stroke,
    style: ShapeStyle,
) -> Drawn<DB> {
    let points = points.iter().copied();
    match stroke {
        Stroke::Solid => chart.draw_series(LineSeries::new(points, style))?,
        Stroke::Dashed(dash, gap) => {
            chart.draw_series(DashedLineSeries::new(points, dash, gap, style))?
        }
    };
    Ok(())
}

/// Draws `marker` in `colour` at each of `points` (data coordinates).
pub fn draw_markers<'p, DB: DrawingBackend, X: Axis, Y: Axis>(
    chart: &ChartContext<'_, DB, Cartesian2d<X, Y>>,
    points: impl IntoIterator<Item = &'p (f64, f64)>,
    marker: Marker,
    colour: RGBColor,
) -> Drawn<DB> {
    let plotting = chart.plotting_area();
    let base = plotting.get_base_pixel();
    let area = plotting.strip_coord_spec();
    for point in points {
        let at = plotting.map_coordinate(point);
        draw_marker(&area, marker, (at.0 - base.0, at.1 - base.1), colour)?;
    }
    Ok(())
}

/// About a dozen of `points`, evenly spread, for markers: every `len / 12`-th (at least
/// every one), starting half a step in, where `len` is the line's length.
pub fn dozen<T>(len: usize, points: impl Iterator<Item = T>) -> impl Iterator<Item = T> {
    let step = (len / 12).max(1);
    points.skip(step / 2).step_by(step)
}
