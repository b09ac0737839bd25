//! The figures' one font: the embedded DejaVu Sans, registered with plotters under
//! [`FONT`] ([`register_font`]), for the experiment's figures and the benchmarks' alike.

use std::sync::OnceLock;

use anyhow::ensure;
use plotters::style::FontStyle;

/// The family name the embedded font is registered under.
pub const FONT: &str = "sans-serif";

/// Registers the embedded DejaVu Sans as the figures' font, once per process (the
/// benchmarks' figures use it too).
pub fn register_font() -> anyhow::Result<()> {
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
