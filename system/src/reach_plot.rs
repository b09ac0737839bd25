//! The reach figure (`reach.svg/.png`, process mode): for every column, three stacked bars,
//! one per kind of the apps' memory (small objects, large objects, native buffers): how
//! much of it the apps alive at the end held resident, how much Marvin's reclaimer had
//! taken (reclaimed), how much the kernel had swapped, and how much the killer had freed
//! by killing apps. Each column's repetitions are averaged. What a policy's mechanism can
//! reach at all is the caption's and the table's (`crate::reach`).

use std::path::{Path, PathBuf};

use marvin_figures::{okabe_ito, write_figure, Area, Drawing, Drawn, FONT};
use plotters::prelude::*;

use super::summary::Summary;

const SIZE: (u32, u32) = (1000, 600);
const KINDS: [&str; 3] = ["small", "large", "native"];
/// Resident, reclaimed, swapped, killed: the Okabe-Ito palette's grey-safe colours.
const STATES: [(&str, RGBColor); 4] = [
    ("resident", okabe_ito::BLUE),
    ("reclaimed (marvin)", okabe_ito::BLUISH_GREEN),
    ("swapped (kernel)", okabe_ito::ORANGE),
    ("freed by kills", okabe_ito::VERMILLION),
];

/// The reach figure: each column's mean MiB per kind and state ([`columns`]).
struct ReachFigure {
    cols: Vec<(String, [[f64; 4]; 3])>,
}

/// Each column's mean bytes (MiB) per kind and state, in the order of first appearance.
pub fn columns(summaries: &[Summary]) -> Vec<(String, [[f64; 4]; 3])> {
    let mut out: Vec<(String, [[f64; 4]; 3], u32)> = Vec::new();
    for s in summaries {
        let k = s.reach.kinds;
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let v = k.kinds().map(|k| {
            [
                mib(k.resident),
                mib(k.reclaimed),
                mib(k.swapped),
                mib(k.killed),
            ]
        });
        match out.iter_mut().find(|c| c.0 == s.label) {
            Some(c) => {
                for (a, b) in c.1.iter_mut().zip(v) {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                }
                c.2 += 1;
            }
            None => out.push((s.label.clone(), v, 1)),
        }
    }
    out.into_iter()
        .map(|(label, mut v, n)| {
            v.iter_mut().flatten().for_each(|x| *x /= f64::from(n));
            (label, v)
        })
        .collect()
}

/// Writes `reach.svg` and `reach.png` into `dir` when the runs reported their kinds
/// (the process mode); returns the files (none otherwise).
pub fn write(dir: &Path, summaries: &[Summary]) -> anyhow::Result<Vec<PathBuf>> {
    if summaries.iter().all(|s| s.reach.live_bytes == 0) {
        return Ok(Vec::new());
    }
    let figure = ReachFigure {
        cols: columns(summaries),
    };
    write_figure(dir, "reach", SIZE, &figure, None)
}

impl Drawing for ReachFigure {
    fn title(&self) -> &str {
        "the apps' memory by kind at the end: where each policy left it"
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        draw(root, self.title(), &self.cols)
    }
}

fn draw<DB: DrawingBackend>(
    root: &Area<DB>,
    title: &str,
    cols: &[(String, [[f64; 4]; 3])],
) -> Drawn<DB> {
    let top = cols
        .iter()
        .flat_map(|c| c.1.iter().map(|k| k.iter().sum::<f64>()))
        .fold(1.0f64, f64::max)
        * 1.1;
    // Four slots per column: three bars and a gap.
    let slots = (cols.len() * 4) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 22))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..slots, 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc("MiB")
        .label_style((FONT, 15))
        .draw()?;
    for (c, (label, kinds)) in cols.iter().enumerate() {
        let base = (c * 4) as f64 + 0.5;
        for (k, states) in kinds.iter().enumerate() {
            let x = base + k as f64;
            let mut y = 0.0;
            for (s, &v) in states.iter().enumerate() {
                if v > 0.0 {
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(x, y), (x + 0.85, y + v)],
                        STATES[s].1.filled(),
                    )))?;
                }
                y += v;
            }
            chart.draw_series(std::iter::once(Text::new(
                KINDS[k],
                (x + 0.1, y + top * 0.01),
                (FONT, 13).into_font(),
            )))?;
        }
        chart.draw_series(std::iter::once(Text::new(
            label.clone(),
            (base, -top * 0.05),
            (FONT, 16).into_font(),
        )))?;
    }
    // The legend: one swatch per state, along the top.
    for (s, (name, colour)) in STATES.iter().enumerate() {
        let x = 90 + s as i32 * 220;
        root.draw(&Rectangle::new([(x, 40), (x + 14, 54)], colour.filled()))?;
        root.draw(&Text::new(*name, (x + 20, 40), (FONT, 15).into_font()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reach::{AppReach, KindReach, RunReach};

    fn run(label: &str, resident: u64, killed: u64) -> Summary {
        let k = KindReach {
            allocated: resident,
            resident,
            killed,
            ..KindReach::default()
        };
        Summary {
            label: label.into(),
            reach: RunReach {
                kinds: AppReach {
                    small: k,
                    large: k,
                    native: k,
                },
                live_bytes: 3 * resident,
                ..RunReach::default()
            },
            ..Summary::default()
        }
    }

    #[test]
    fn columns_average_their_repetitions_and_the_figure_is_written() {
        let runs = [
            run("kill", 2 << 20, 4 << 20),
            run("kill", 4 << 20, 0),
            run("marvin", 1 << 20, 0),
        ];
        let cols = columns(&runs);
        assert_eq!(cols.len(), 2);
        assert_eq!(cols[0].0, "kill");
        assert_eq!(cols[0].1[0], [3.0, 0.0, 0.0, 2.0]);
        let dir = tempfile::tempdir().unwrap();
        let files = write(dir.path(), &runs).unwrap();
        assert_eq!(files.len(), 2);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.contains("marvin") && svg.contains("native"));
        // The model's runs report no kinds: no figure.
        assert!(write(dir.path(), &[Summary::default()]).unwrap().is_empty());
    }
}
