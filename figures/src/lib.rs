//! marvin's figures, one layer that the experiment (`marvin-system`) and the benchmarks
//! (`marvin-sidebyside`) both draw through: one style (the Okabe-Ito palette, a colour
//! and marker per column, 1-2-5 log ticks, the legend in a strip below the plot), one
//! embedded font (DejaVu Sans), one writer (SVG, then PNG with text at the glyphs' true
//! positions, and the settings' caption), and the statistics the figures and tables
//! draw on (distributions, nearest-rank percentiles, the spread over repetitions).
//!
//! A figure is described as data and implements [`Drawing`]; [`write_figure`] writes it.
//! Two kinds of figure are ready made: values over time ([`TimeFigure`]) and the
//! benchmarks' lines or bars beside published values ([`Chart`]).
//!
//! # Surface
//!
//! Public modules: none. Everything a user needs is re-exported below:
//!
//! - writing: [`Drawing`] (drawn on an [`Area`], giving [`Drawn`]), [`write_figure`], [`Png`] (the PNG backend), [`FONT`] and
//!   [`register_font`];
//! - style: [`okabe_ito`], [`Marker`], [`POLICY_STYLES`], [`column_styles`],
//!   [`draw_marker`], [`log_ticks`], [`tick_label`], [`Stroke`], [`DASHED`], [`KEY_GREY`],
//!   [`MARK_GREY`];
//! - legend: [`LegendEntry`], [`split_for_legend`], [`draw_legend`], [`LEGEND_HEIGHT`];
//! - axes: [`Axis`], [`Frame`], [`chart_builder`], [`styled_mesh`], [`draw_stroked`],
//!   [`draw_markers`], [`dozen`];
//! - figures: [`TimeFigure`] with its [`Line`]s and [`Band`]s ([`BandPoint`]); [`Chart`]
//!   with its [`Curve`]s and [`Bar`]s;
//! - statistics: [`Distribution`] (CDF, CCDF, percentile), [`nearest_rank`], [`Spread`].

mod axes;
mod chart;
mod distribution;
mod font;
mod legend;
mod png;
mod spread;
mod style;
mod time_figure;
mod write;

pub use axes::{chart_builder, dozen, draw_markers, draw_stroked, styled_mesh, Axis, Frame};
pub use chart::{Bar, Chart, Curve};
pub use distribution::{nearest_rank, Distribution};
pub use font::{register_font, FONT};
pub use legend::{draw_legend, split_for_legend, LegendEntry, LEGEND_HEIGHT};
pub use png::Png;
pub use spread::Spread;
pub use style::{
    column_styles, draw_marker, log_ticks, okabe_ito, tick_label, Area, Drawn, Marker, Stroke,
    DASHED, KEY_GREY, MARK_GREY, POLICY_STYLES,
};
pub use time_figure::{Band, BandPoint, Line, TimeFigure};
pub use write::{write_figure, Drawing};
