//! Text in the PNG figures, drawn with every glyph's left side bearing.
//!
//! plotters' ab_glyph text drawing puts each glyph's outline at the pen position and drops
//! its left side bearing, so narrow letters slide left and words come apart ("tim e (s)").
//! [`Png`] wraps the bitmap backend and draws text itself: the layout box plotters
//! computes (so every label sits where the chart placed it), each glyph's outline at the
//! pen plus its bearing, kerning included. The SVG backend writes text as `<text>` and
//! needs none of this. Every text is set in the embedded DejaVu Sans, the figures' only
//! font.

use std::path::Path;

use ab_glyph::{point, Font, FontRef, ScaleFont};
use anyhow::Context;
use plotters::prelude::BitMapBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

/// The bitmap backend with text drawn at the glyphs' true positions.
pub struct Png<'a> {
    inner: BitMapBackend<'a>,
    font: FontRef<'static>,
}

impl<'a> Png<'a> {
    /// A PNG file of `size` pixels at `path`, written when the drawing is presented.
    pub fn file<P: AsRef<Path> + ?Sized>(path: &'a P, size: (u32, u32)) -> anyhow::Result<Self> {
        Self::wrap(BitMapBackend::new(path, size))
    }

    /// Draws into `inner` (a file or an RGB buffer).
    pub fn wrap(inner: BitMapBackend<'a>) -> anyhow::Result<Self> {
        let font = FontRef::try_from_slice(dejavu::sans::regular())
            .context("the embedded DejaVu Sans font could not be loaded")?;
        Ok(Png { inner, font })
    }

    /// The pixels (x, y, coverage) of `text` set at `size` px, the pen starting at x = 0
    /// and the baseline at `size / 2` (where plotters' own drawing puts it, which its
    /// layout box assumes).
    fn glyph_pixels(&self, text: &str, size: f32) -> Vec<(i32, i32, f32)> {
        let font = self.font.as_scaled(size);
        let mut pixels = Vec::new();
        let mut caret = 0f32;
        let mut previous = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = previous {
                caret += font.kern(p, id);
            }
            previous = Some(id);
            let glyph = id.with_scale_and_position(font.scale(), point(caret, 0.0));
            if let Some(outline) = font.outline_glyph(glyph) {
                // The bounds are where the glyph's ink is: the pen plus the bearing.
                let bounds = outline.px_bounds();
                let (x0, y0) = (bounds.min.x as i32, (size / 2.0 + bounds.min.y) as i32);
                outline.draw(|x, y, coverage| {
                    pixels.push((x0 + x as i32, y0 + y as i32, coverage));
                });
            }
            caret += font.h_advance(id);
        }
        pixels
    }
}

impl DrawingBackend for Png<'_> {
    type ErrorType = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    /// As plotters' default (anchor, rotation, clipping), with the glyphs placed by
    /// [`Png::glyph_pixels`].
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let (w, h) = self.get_size();
        for (x, y, coverage) in self.glyph_pixels(text, style.size() as f32) {
            let (x, y) = transform.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                let ink = BackendColor {
                    alpha: color.alpha * f64::from(coverage),
                    rgb: color.rgb,
                };
                self.inner.draw_pixel((x, y), ink)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::style::{IntoFont, TextStyle, BLACK};

    const W: u32 = 400;
    const H: u32 = 100;

    /// The columns holding ink (any pixel darker than white) in an RGB buffer.
    fn inked_columns(buf: &[u8]) -> Vec<i32> {
        (0..W as i32)
            .filter(|&x| {
                (0..H as usize).any(|y| {
                    let i = (y * W as usize + x as usize) * 3;
                    buf[i] < 200
                })
            })
            .collect()
    }

    /// Draws `text` at 60 px from x = 10 into a white buffer; the inked columns.
    fn draw(text: &str) -> Vec<i32> {
        crate::font::register_font().expect("font");
        let mut buf = vec![255u8; (W * H * 3) as usize];
        {
            let mut png = Png::wrap(BitMapBackend::with_buffer(&mut buf, (W, H))).expect("png");
            let style = TextStyle::from((crate::font::FONT, 60).into_font()).color(&BLACK);
            png.draw_text(text, &style, (10, 20)).expect("text");
            png.present().expect("present");
        }
        inked_columns(&buf)
    }

    #[test]
    fn a_glyph_s_ink_starts_at_the_pen_plus_its_left_bearing() {
        let font = FontRef::try_from_slice(dejavu::sans::regular()).unwrap();
        let font = font.as_scaled(60.0);
        let (i, l) = (font.glyph_id('i'), font.glyph_id('l'));
        let bearing = font.h_side_bearing(i);
        // Big enough to tell "with the bearing" from "without".
        assert!(bearing > 3.0, "{bearing}");
        let ink = draw("i");
        let first = *ink.first().expect("some ink");
        assert!(
            (first - (10 + bearing.floor() as i32)).abs() <= 1,
            "ink from column {first}, the pen at 10, the bearing {bearing}"
        );
        // The second glyph starts one advance (plus its own bearing) after the first.
        let ink = draw("il");
        let second = ink
            .windows(2)
            .find(|w| w[1] > w[0] + 1)
            .map(|w| w[1])
            .expect("two separate glyphs");
        let expected = 10.0 + font.h_advance(i) + font.kern(i, l) + font.h_side_bearing(l);
        assert!(
            (second - expected.floor() as i32).abs() <= 1,
            "second glyph from column {second}, expected about {expected}"
        );
    }
}
