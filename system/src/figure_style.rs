//! One figure style for every figure marvin draws (the pressure experiment's
//! `active_apps`, `resident` and `launch_cdf`, and the benchmarks' figures): the
//! Okabe-Ito palette (distinguishable with every common colour-vision deficiency); a
//! colour and marker shape per column, the pressure policies always the same and every
//! other column (a variant, a sweep point, a benchmark's line) a pair of its own, none a
//! policy's ([`column_styles`]); logarithmic axes ticked at 1, 2 and 5 times a power of
//! ten and labelled as plain numbers ([`log_ticks`], [`tick_label`]); and the legend in a
//! strip below the plot, never over the data ([`split_for_legend`], [`draw_legend`]).
//! Every figure module draws through these, and the tests below check them once for all.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::figure_font::FONT;

/// The Okabe-Ito palette's colours.
pub mod okabe_ito {
    use plotters::style::RGBColor;
    pub const ORANGE: RGBColor = RGBColor(230, 159, 0);
    pub const SKY_BLUE: RGBColor = RGBColor(86, 180, 233);
    pub const BLUISH_GREEN: RGBColor = RGBColor(0, 158, 115);
    pub const BLUE: RGBColor = RGBColor(0, 114, 178);
    pub const VERMILLION: RGBColor = RGBColor(213, 94, 0);
    pub const REDDISH_PURPLE: RGBColor = RGBColor(204, 121, 167);
    pub const BLACK: plotters::style::RGBColor = RGBColor(0, 0, 0);
}

/// The shape marking a column's line, so lines differ by more than colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Triangle,
    Square,
    Diamond,
    Cross,
    Plus,
    TriangleDown,
    Hexagon,
}

/// The pressure policies' colours and markers, the same in every figure.
pub const POLICY_STYLES: [(&str, RGBColor, Marker); 5] = [
    ("kill", okabe_ito::VERMILLION, Marker::Triangle),
    ("page-swap", okabe_ito::BLUE, Marker::Square),
    // The swap baseline of the process mode, drawn as the model's.
    ("kernel-swap", okabe_ito::BLUE, Marker::Square),
    ("marvin", okabe_ito::BLUISH_GREEN, Marker::Circle),
    // Kernel swap as phones ship it: a lighter blue than kernel-swap's, its own marker.
    ("zram", okabe_ito::SKY_BLUE, Marker::Hexagon),
];
/// The colours and markers of every other column: none of the policies' markers, so no
/// other column is taken for a policy.
const OTHER_COLOURS: [RGBColor; 4] = [
    okabe_ito::ORANGE,
    okabe_ito::SKY_BLUE,
    okabe_ito::REDDISH_PURPLE,
    okabe_ito::BLACK,
];
const OTHER_MARKERS: [Marker; 4] = [
    Marker::Diamond,
    Marker::Cross,
    Marker::TriangleDown,
    Marker::Plus,
];

/// The colour and marker of each of a figure's columns, by label: a pressure policy's
/// own ([`POLICY_STYLES`]; `marvin-eager` and the like are other columns), and for the
/// others, in order, distinct pairs of the other colours and markers (16 of them before
/// any repeats).
pub fn column_styles(labels: &[&str]) -> Vec<(RGBColor, Marker)> {
    let mut other = 0;
    labels
        .iter()
        .map(
            |label| match POLICY_STYLES.iter().find(|(n, _, _)| n == label) {
                Some(&(_, colour, marker)) => (colour, marker),
                None => {
                    let (q, r) = (other / 4, other % 4);
                    other += 1;
                    (OTHER_COLOURS[r], OTHER_MARKERS[(r + q) % 4])
                }
            },
        )
        .collect()
}

/// Draws `marker` centred at `at` (backend pixels) in `colour`.
pub fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    marker: Marker,
    at: (i32, i32),
    colour: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    const R: i32 = 6;
    let (x, y) = at;
    let fill = colour.filled();
    let stroke = colour.stroke_width(3);
    match marker {
        Marker::Circle => area.draw(&Circle::new(at, R, fill)),
        Marker::Square => area.draw(&Rectangle::new(
            [(x - R + 1, y - R + 1), (x + R - 1, y + R - 1)],
            fill,
        )),
        Marker::Triangle => area.draw(&Polygon::new(
            vec![(x, y - R), (x - R, y + R - 1), (x + R, y + R - 1)],
            fill,
        )),
        Marker::TriangleDown => area.draw(&Polygon::new(
            vec![(x, y + R), (x - R, y - R + 1), (x + R, y - R + 1)],
            fill,
        )),
        Marker::Diamond => area.draw(&Polygon::new(
            vec![(x, y - R), (x + R, y), (x, y + R), (x - R, y)],
            fill,
        )),
        Marker::Cross => {
            area.draw(&PathElement::new([(x - R, y - R), (x + R, y + R)], stroke))?;
            area.draw(&PathElement::new([(x - R, y + R), (x + R, y - R)], stroke))
        }
        Marker::Hexagon => {
            let h = R * 7 / 8;
            area.draw(&Polygon::new(
                vec![
                    (x - R, y),
                    (x - R / 2, y - h),
                    (x + R / 2, y - h),
                    (x + R, y),
                    (x + R / 2, y + h),
                    (x - R / 2, y + h),
                ],
                fill,
            ))
        }
        Marker::Plus => {
            area.draw(&PathElement::new([(x - R, y), (x + R, y)], stroke))?;
            area.draw(&PathElement::new([(x, y - R), (x, y + R)], stroke))
        }
    }
}

/// The ticks of a logarithmic axis from `lo` to `hi`: every 1, 2 and 5 times a power
/// of ten in the range (with at least the decade marks where the range spans more than
/// six decades, so the labels do not crowd).
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let decades = (hi / lo).log10();
    let steps: &[f64] = if decades > 6.0 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut ticks = Vec::new();
    let mut power = lo.log10().floor() as i32;
    while 10f64.powi(power) <= hi {
        for s in steps {
            // Built from the decimal text, so 0.2 is 0.2 and not 0.20000000000000004.
            let v: f64 = format!("{s}e{power}").parse().unwrap_or(f64::NAN);
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                ticks.push(v);
            }
        }
        power += 1;
    }
    ticks
}

/// An axis tick's text: a plain number, with at most two decimals above 1 and as many
/// as the value's first digit needs below (a 1-2-5 tick of 0.002 reads `0.002`),
/// trailing zeros dropped; powers of ten past a million or below a millionth in
/// scientific form.
pub fn tick_label(value: &f64) -> String {
    let v = *value;
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            v.to_string()
        };
    }
    let mag = v.abs();
    if !(1e-6..1e7).contains(&mag) {
        return format!("{v:e}");
    }
    let decimals = if mag >= 1.0 {
        2
    } else {
        (-mag.log10().floor()) as usize + 1
    };
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// How a line is stroked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stroke {
    Solid,
    /// Dash and gap lengths in pixels.
    Dashed(u32, u32),
}

/// The dashes of the pressure figures' dashed lines.
pub const DASHED: Stroke = Stroke::Dashed(8, 5);

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
    root: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let (width, height) = root.dim_in_pixel();
    let (_, _, rows) = legend_layout(entries, width);
    let legend_height = LEGEND_HEIGHT.max(30 + LEGEND_ROW as u32 * rows as u32);
    root.split_vertically(height.saturating_sub(legend_height))
}

/// Draws the legend entries in rows across the strip below the plot: each entry's line
/// sample (with its marker), then its text clear of the sample.
pub fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
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

    const PALETTE: [RGBColor; 7] = [
        okabe_ito::ORANGE,
        okabe_ito::SKY_BLUE,
        okabe_ito::BLUISH_GREEN,
        okabe_ito::BLUE,
        okabe_ito::VERMILLION,
        okabe_ito::REDDISH_PURPLE,
        okabe_ito::BLACK,
    ];

    #[test]
    fn every_column_has_its_own_colour_and_marker_and_no_other_looks_like_a_policy() {
        let labels = [
            "kill",
            "marvin:base",
            "marvin:w2",
            "marvin",
            "marvin-eager",
            "page-swap",
            "a",
            "b",
            "c",
            "d",
            "e",
            "f",
            "g",
            "h",
            "i",
            "j",
            "k",
        ];
        let styles = column_styles(&labels);
        assert_eq!(styles[0], (okabe_ito::VERMILLION, Marker::Triangle));
        assert_eq!(styles[3], (okabe_ito::BLUISH_GREEN, Marker::Circle));
        assert_eq!(styles[5], (okabe_ito::BLUE, Marker::Square));
        let policy_markers: Vec<Marker> = POLICY_STYLES.iter().map(|p| p.2).collect();
        for (i, (colour, marker)) in styles.iter().enumerate() {
            assert!(PALETTE.contains(colour), "{}: not Okabe-Ito", labels[i]);
            let is_policy = POLICY_STYLES.iter().any(|(n, _, _)| *n == labels[i]);
            if !is_policy {
                assert!(
                    !policy_markers.contains(marker),
                    "{} has a policy's marker",
                    labels[i]
                );
            }
            for (j, other) in styles.iter().enumerate().skip(i + 1) {
                assert_ne!(
                    (colour, marker),
                    (&other.0, &other.1),
                    "{} and {} look alike",
                    labels[i],
                    labels[j]
                );
            }
        }
    }

    #[test]
    fn log_ticks_go_in_1_2_5_steps_and_read_as_plain_numbers() {
        assert_eq!(log_ticks(0.3, 60.0), [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        let labels: Vec<String> = log_ticks(0.001, 500.0).iter().map(tick_label).collect();
        assert_eq!(
            labels,
            [
                "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2",
                "5", "10", "20", "50", "100", "200", "500"
            ]
        );
        // Many decades: the decade marks only.
        assert_eq!(log_ticks(1e-3, 1e5).len(), 9);
        assert!(log_ticks(0.0, 1.0).is_empty() && log_ticks(2.0, 1.0).is_empty());
        for t in log_ticks(1e-4, 1e4) {
            let first = t / 10f64.powi(t.log10().floor() as i32);
            assert!(
                [1.0, 2.0, 5.0].iter().any(|s| (first - s).abs() < 1e-9),
                "{t}"
            );
        }
    }

    #[test]
    fn tick_labels_drop_needless_decimals() {
        let labels: Vec<String> = [0.0, 25.0, 2.5, 0.126, -0.0, 1e6, 3162.2776, 0.05, 1e-7]
            .iter()
            .map(tick_label)
            .collect();
        assert_eq!(
            labels,
            ["0", "25", "2.5", "0.13", "0", "1000000", "3162.28", "0.05", "1e-7"]
        );
    }

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
