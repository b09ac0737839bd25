//! The legend of every figure: entries of a line sample (with its marker) and a label,
//! in rows across a strip below the plot ([`split_for_legend`]), so no legend ever
//! covers data ([`draw_legend`]).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::font::FONT;
use crate::style::{draw_marker, Area, Drawn, Marker, Stroke};

/// One entry of a figure's legend.
#[derive(Clone, Debug)]
pub struct LegendEntry {
    pub label: String,
    pub colour: RGBColor,
    pub stroke: Stroke,
    pub width: u32,
    pub marker: Option<Marker>,
    /// Markers drawn hollow (the published values of the benchmarks' figures).
    pub hollow: bool,
}

impl LegendEntry {
    /// A solid line of `colour` with `marker`.
    pub fn line(label: impl Into<String>, colour: RGBColor, marker: Option<Marker>) -> Self {
        LegendEntry {
            label: label.into(),
            colour,
            stroke: Stroke::Solid,
            width: 3,
            marker,
            hollow: false,
        }
    }
}

/// Left edge of the legend's entries, the height of one row and the sample's length.
const LEGEND_LEFT: i32 = 88;
const LEGEND_ROW: i32 = 26;
const LEGEND_SAMPLE: i32 = 36;
/// The legend strip's least height (room for three rows).
pub const LEGEND_HEIGHT: u32 = 96;
/// The gap between an entry's sample and its text.
const LEGEND_TEXT_GAP: i32 = 8;

/// The legend's entry width, entries per row and rows: every entry as wide as the
/// longest label needs (about 9 pixels a character at 16 pixels) after its sample.
pub fn legend_layout(entries: &[LegendEntry], width: u32) -> (i32, usize, usize) {
    let longest = entries
        .iter()
        .map(|e| e.label.chars().count())
        .max()
        .unwrap_or(0);
    let entry_width = (LEGEND_SAMPLE + LEGEND_TEXT_GAP + 16 + 9 * longest as i32).max(180);
    let per_row = ((width as i32 - LEGEND_LEFT) / entry_width).max(1) as usize;
    (entry_width, per_row, entries.len().div_ceil(per_row))
}

/// Splits a figure into the plot's area and the legend strip below it (as tall as its
/// rows need), so no legend ever covers data.
pub fn split_for_legend<DB: DrawingBackend>(
    root: &Area<DB>,
    entries: &[LegendEntry],
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let (width, height) = root.dim_in_pixel();
    let (_, _, rows) = legend_layout(entries, width);
    let legend_height = LEGEND_HEIGHT.max(30 + LEGEND_ROW as u32 * rows as u32);
    root.split_vertically(height.saturating_sub(legend_height))
}

/// Draws the legend entries in rows across the strip below the plot: each entry's line
/// sample (with its marker), then its text clear of the sample.
pub fn draw_legend<DB: DrawingBackend>(area: &Area<DB>, entries: &[LegendEntry]) -> Drawn<DB> {
    const TOP: i32 = 14;
    let (entry_width, per_row, _) = legend_layout(entries, area.dim_in_pixel().0);
    let text = (FONT, 16)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (n, entry) in entries.iter().enumerate() {
        let x = LEGEND_LEFT + entry_width * (n % per_row) as i32;
        let y = TOP + LEGEND_ROW * (n / per_row) as i32;
        let style = entry.colour.stroke_width(entry.width);
        match entry.stroke {
            Stroke::Solid => {
                area.draw(&PathElement::new([(x, y), (x + LEGEND_SAMPLE, y)], style))?
            }
            Stroke::Dashed(dash, gap) => {
                let step = (dash + gap).max(1) as usize;
                for start in (x..x + LEGEND_SAMPLE).step_by(step) {
                    let end = (start + dash as i32).min(x + LEGEND_SAMPLE);
                    area.draw(&PathElement::new([(start, y), (end, y)], style))?;
                }
            }
        }
        if let Some(marker) = entry.marker {
            if entry.hollow {
                area.draw(&Circle::new((x + LEGEND_SAMPLE / 2, y), 6, WHITE.filled()))?;
                area.draw(&Circle::new(
                    (x + LEGEND_SAMPLE / 2, y),
                    6,
                    entry.colour.stroke_width(2),
                ))?;
            } else {
                draw_marker(area, marker, (x + LEGEND_SAMPLE / 2, y), entry.colour)?;
            }
        }
        area.draw(&Text::new(
            entry.label.as_str(),
            (x + LEGEND_SAMPLE + LEGEND_TEXT_GAP, y),
            text.clone(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legend_strip_holds_every_entry_below_the_plot() {
        let entries: Vec<LegendEntry> = (0..7)
            .map(|i| LegendEntry::line(format!("a rather long column label {i}"), BLACK, None))
            .collect();
        let (entry_width, per_row, rows) = legend_layout(&entries, 1000);
        assert!(per_row * rows >= entries.len());
        let widest_text = 9 * entries[0].label.chars().count() as i32;
        assert!(
            entry_width >= LEGEND_SAMPLE + LEGEND_TEXT_GAP + widest_text,
            "an entry's text stays clear of the next entry's sample"
        );
        assert!(
            LEGEND_LEFT + entry_width * per_row as i32 <= 1000,
            "inside the figure"
        );
        let mut buf = vec![0u8; 1000 * 600 * 3];
        let root = BitMapBackend::with_buffer(&mut buf, (1000, 600)).into_drawing_area();
        let (plot, legend) = split_for_legend(&root, &entries);
        let (pw, ph) = plot.dim_in_pixel();
        let (lw, lh) = legend.dim_in_pixel();
        assert_eq!((pw, lw), (1000, 1000));
        assert_eq!(ph + lh, 600);
        assert!(
            lh as i32 >= 14 + LEGEND_ROW * rows as i32,
            "every row fits the strip"
        );
    }
}
