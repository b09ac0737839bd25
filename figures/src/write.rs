//! The one path every figure is written by: a figure described as data ([`Drawing`]) is
//! drawn on a white SVG and then on a white PNG ([`crate::Png`], text at the glyphs' true
//! positions) of the same size, and with a caption of the settings that produced it, the
//! caption goes into the SVG's `<desc>` and a sidecar `NAME.txt` ([`write_figure`]).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use plotters::prelude::*;

use crate::font::register_font;
use crate::png::Png;
use crate::style::{Area, Drawn};

/// A figure that can be drawn on any backend.
pub trait Drawing {
    /// The figure's title (the caption's first words).
    fn title(&self) -> &str;

    /// Draws the figure on `root` (already filled white).
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB>;
}

/// Writes `figure` as `NAME.svg` and `NAME.png` of `size` pixels into `dir` (created if
/// missing). With a `caption`, `TITLE: CAPTION` goes into the SVG's `<desc>` and, when
/// the caption is not empty, into `NAME.txt`. Returns the files in that order.
pub fn write_figure(
    dir: &Path,
    name: &str,
    size: (u32, u32),
    figure: &impl Drawing,
    caption: Option<&str>,
) -> anyhow::Result<Vec<PathBuf>> {
    register_font()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let svg = dir.join(format!("{name}.svg"));
    draw_on(SVGBackend::new(&svg, size), figure, &svg)?;
    let described = caption.map(|c| format!("{}: {c}", figure.title()));
    if let Some(text) = &described {
        add_svg_description(&svg, text)?;
    }
    let png = dir.join(format!("{name}.png"));
    draw_on(Png::file(&png, size)?, figure, &png)?;
    let mut files = vec![svg, png];
    if let (Some(text), Some(caption)) = (described, caption) {
        if !caption.is_empty() {
            let txt = dir.join(format!("{name}.txt"));
            std::fs::write(&txt, format!("{text}\n"))
                .with_context(|| format!("writing {}", txt.display()))?;
            files.push(txt);
        }
    }
    Ok(files)
}

/// Draws `figure` on `backend` and writes the file out; `path` names it in errors.
fn draw_on<DB: DrawingBackend>(
    backend: DB,
    figure: &impl Drawing,
    path: &Path,
) -> anyhow::Result<()> {
    let root = backend.into_drawing_area();
    root.fill(&WHITE)
        .and_then(|()| figure.draw(&root))
        .and_then(|()| root.present())
        .map_err(|e| anyhow!("drawing {}: {e}", path.display()))
}

/// Puts `text` into the SVG file as its `<desc>` (the first element inside `<svg>`).
fn add_svg_description(svg: &Path, text: &str) -> anyhow::Result<()> {
    let body =
        std::fs::read_to_string(svg).with_context(|| format!("reading {}", svg.display()))?;
    let Some(open_end) = body
        .find("<svg")
        .and_then(|i| body[i..].find('>').map(|j| i + j + 1))
    else {
        anyhow::bail!("{} is not an SVG file", svg.display());
    };
    let escaped = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let out = format!(
        "{}\n<desc>{escaped}</desc>{}",
        &body[..open_end],
        &body[open_end..]
    );
    std::fs::write(svg, out).with_context(|| format!("writing {}", svg.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A figure of one black square.
    struct Square;

    impl Drawing for Square {
        fn title(&self) -> &str {
            "A square <1>"
        }

        fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
            root.draw(&Rectangle::new([(10, 10), (50, 50)], BLACK.filled()))
        }
    }

    #[test]
    fn a_caption_goes_into_the_svg_and_a_sidecar_and_none_writes_neither() {
        let dir = tempfile::tempdir().unwrap();
        let files = write_figure(dir.path(), "sq", (80, 60), &Square, Some("reps 3")).unwrap();
        let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap()).collect();
        assert_eq!(names, ["sq.svg", "sq.png", "sq.txt"]);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains("<desc>A square &lt;1&gt;: reps 3</desc>"),
            "{svg}"
        );
        let txt = std::fs::read_to_string(&files[2]).unwrap();
        assert_eq!(txt, "A square <1>: reps 3\n");
        let png = std::fs::read(&files[1]).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");

        let other = tempfile::tempdir().unwrap();
        let files = write_figure(other.path(), "sq", (80, 60), &Square, None).unwrap();
        assert_eq!(files.len(), 2);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(!svg.contains("<desc>"));
        let files = write_figure(other.path(), "sq", (80, 60), &Square, Some("")).unwrap();
        assert_eq!(files.len(), 2, "an empty caption writes no sidecar");
    }

    #[test]
    fn a_file_where_the_directory_should_be_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(write_figure(&file, "sq", (80, 60), &Square, None).is_err());
    }
}
