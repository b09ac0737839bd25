//! One figure style for every figure marvin draws (the pressure experiment's
//! `active_apps`, `resident` and `launch_cdf`, and the benchmarks' figures): the
//! Okabe-Ito palette (distinguishable with every common colour-vision deficiency); a
//! colour and marker shape per column, the pressure policies always the same and every
//! other column (a variant, a sweep point, a benchmark's line) a pair of its own, none a
//! policy's ([`column_styles`]); logarithmic axes ticked at 1, 2 and 5 times a power of
//! ten and labelled as plain numbers ([`log_ticks`], [`tick_label`]); solid and dashed
//! strokes ([`Stroke`]) and the greys of keys and reference marks. The legend is
//! [`crate::legend`]'s, the axes [`crate::axes`]'. Every figure draws through these, and
//! the tests below check them once for all.

use plotters::coord::Shift;
use plotters::prelude::*;

/// A figure's drawing area on the backend `DB`.
pub type Area<DB> = DrawingArea<DB, Shift>;
/// What drawing on the backend `DB` gives: nothing, or the backend's error.
pub type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

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
    area: &Area<DB>,
    marker: Marker,
    at: (i32, i32),
    colour: RGBColor,
) -> Drawn<DB> {
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

/// Colour of a legend's line-style key and of a figure's "no samples" text.
pub const KEY_GREY: RGBColor = RGBColor(90, 90, 90);
/// Colour of published reference levels.
pub const MARK_GREY: RGBColor = RGBColor(110, 110, 110);

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
}
