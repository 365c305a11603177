//! A 2-D slice of a grid as an RGB image through a colour map, with a colour bar whose tick
//! labels are drawn in [`super::font`], and its PNG encoding (the `png` crate).
//!
//! Layout (with the colour bar): a white canvas; the slice at the top left after a margin,
//! each grid point a square of `scale` by `scale` pixels; to its right the bar (maximum at
//! the top), a black frame round it, ticks and their labels.

use std::path::Path;

use stencil_core::grid::Grid;
use stencil_core::{Element, Error, ErrorKind, Result};

use super::font;

/// Which plane of a 3-D grid to draw: the points whose index along grid dimension `axis` is
/// `index`. The two other dimensions, in grid order, become the image's rows and columns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Plane {
    /// The grid dimension held fixed (0, 1 or 2).
    pub axis: usize,
    /// Its index (below the grid's extent along `axis`).
    pub index: usize,
}

/// How values become colours: `t`, the value's place in the range (0 at its minimum, 1 at its
/// maximum), through piecewise-linear stops.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub enum ColourMap {
    /// Black through purple and orange to pale yellow, perceptually ordered (like
    /// matplotlib's inferno); for fields of one sign such as temperatures.
    #[default]
    Inferno,
    /// Blue through light grey to red (like Moreland's cool-warm); for signed fields such as
    /// waves, with the range centred on 0.
    CoolWarm,
    /// Black to white.
    Grey,
}

/// The colour of a point whose value is NaN (mid grey).
pub const NAN_COLOUR: [u8; 3] = [128, 128, 128];

impl ColourMap {
    /// The colour of `t` (clamped to [0, 1]; NaN gives [`NAN_COLOUR`]).
    pub fn colour(self, t: f64) -> [u8; 3] {
        if t.is_nan() {
            return NAN_COLOUR;
        }
        let stops: &[[f64; 3]] = match self {
            ColourMap::Inferno => &[
                [0.0, 0.0, 4.0],
                [40.0, 11.0, 84.0],
                [101.0, 21.0, 110.0],
                [188.0, 55.0, 84.0],
                [249.0, 142.0, 9.0],
                [252.0, 255.0, 164.0],
            ],
            ColourMap::CoolWarm => &[
                [59.0, 76.0, 192.0],
                [141.0, 176.0, 254.0],
                [221.0, 221.0, 221.0],
                [244.0, 154.0, 123.0],
                [180.0, 4.0, 38.0],
            ],
            ColourMap::Grey => &[[0.0, 0.0, 0.0], [255.0, 255.0, 255.0]],
        };
        let t = t.clamp(0.0, 1.0) * (stops.len() - 1) as f64;
        let lo = (t.floor() as usize).min(stops.len() - 2);
        let f = t - lo as f64;
        let mut c = [0u8; 3];
        for (ch, out) in c.iter_mut().enumerate() {
            *out = (stops[lo][ch] * (1.0 - f) + stops[lo + 1][ch] * f).round() as u8;
        }
        c
    }
}

/// How [`render`] draws a slice.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct PngOptions {
    /// The plane of a 3-D grid (`None`: the middle plane of dimension 0, `index = n0 / 2`);
    /// must be `None` for a 2-D grid.
    pub plane: Option<Plane>,
    /// The values mapped to the colour map's ends (`None`: the slice's smallest and largest
    /// finite values). A range of one value is widened by half its magnitude (or by 0.5
    /// about 0) each way.
    pub range: Option<[f64; 2]>,
    /// The colour map.
    pub colour_map: ColourMap,
    /// Whether to draw the colour bar with its scale.
    pub colour_bar: bool,
    /// Pixels per grid point along each side (`None`: the smallest whole number that makes
    /// the slice's longer side at least 256 pixels).
    pub scale: Option<usize>,
}

impl Default for PngOptions {
    fn default() -> PngOptions {
        PngOptions {
            plane: None,
            range: None,
            colour_map: ColourMap::Inferno,
            colour_bar: true,
            scale: None,
        }
    }
}

/// An RGB image made by [`render`].
#[derive(Clone, PartialEq, Debug)]
pub struct Image {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Pixels, row by row from the top, 3 bytes (red, green, blue) each.
    pub rgb: Vec<u8>,
    /// The values at the colour map's ends, as the bar labels them.
    pub range: [f64; 2],
    /// Pixels per grid point along each side.
    pub scale: usize,
    /// Column and row of the slice's top-left pixel.
    pub plot_origin: [usize; 2],
}

impl Image {
    /// The colour of the pixel at `column`, `row` (`None` outside the image).
    pub fn pixel(&self, column: usize, row: usize) -> Option<[u8; 3]> {
        if column >= self.width || row >= self.height {
            return None;
        }
        let at = 3 * (row * self.width + column);
        Some([self.rgb[at], self.rgb[at + 1], self.rgb[at + 2]])
    }

    /// Writes the image as an 8-bit RGB PNG file.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when the file cannot be created or written.
    pub fn write_png(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let io = |e: &dyn std::fmt::Display| {
            Error::new(ErrorKind::Io, format!("{}: {e}", path.display()))
        };
        let file = std::fs::File::create(path).map_err(|e| io(&e))?;
        let mut encoder = png::Encoder::new(
            std::io::BufWriter::new(file),
            self.width as u32,
            self.height as u32,
        );
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| io(&e))?;
        writer.write_image_data(&self.rgb).map_err(|e| io(&e))?;
        writer.finish().map_err(|e| io(&e))
    }

    fn set(&mut self, column: usize, row: usize, colour: [u8; 3]) {
        if column < self.width && row < self.height {
            let at = 3 * (row * self.width + column);
            self.rgb[at..at + 3].copy_from_slice(&colour);
        }
    }

    fn fill(&mut self, columns: std::ops::Range<usize>, rows: std::ops::Range<usize>, c: [u8; 3]) {
        for row in rows {
            for column in columns.clone() {
                self.set(column, row, c);
            }
        }
    }

    /// Draws `text` with its top-left corner at (`column`, `row`), font pixels `size` wide.
    fn text(&mut self, column: usize, row: usize, text: &str, size: usize) {
        for (n, c) in text.chars().enumerate() {
            let left = column + n * font::ADVANCE * size;
            for r in 0..font::HEIGHT {
                for k in 0..font::WIDTH {
                    if font::pixel(c, r, k) {
                        let (x, y) = (left + k * size, row + r * size);
                        self.fill(x..x + size, y..y + size, BLACK);
                    }
                }
            }
        }
    }
}

const BLACK: [u8; 3] = [0, 0, 0];

/// The longest side, in pixels, of a slice drawn at the automatic scale, at least.
const AUTO_SIDE: usize = 256;

/// The colour bar's least height in pixels (a slice shorter than this gets a taller bar).
const MIN_BAR_HEIGHT: usize = 128;

/// Images beyond this many pixels are refused rather than allocated.
const MAX_PIXELS: usize = 1 << 28;

/// Draws a 2-D slice of `grid` (a plane of a 3-D grid, or a 2-D grid; see [`PngOptions`]) as
/// an image: grid dimension order as the [`crate::output`] documentation says, rows down and
/// columns across, NaN points in [`NAN_COLOUR`].
///
/// # Errors
/// - [`ErrorKind::DimensionMismatch`]: a grid of other than 2 or 3 dimensions.
/// - [`ErrorKind::BadArgument`]: a plane given for a 2-D grid; a plane axis above 2 or an
///   index beyond the grid; a range with a bound that is not finite or a minimum above its
///   maximum; no range given and no finite value in the slice; a scale of 0; an image of more
///   than 2^28 pixels.
pub fn render<T: Element, const D: usize>(
    grid: &Grid<T, D>,
    options: &PngOptions,
) -> Result<Image> {
    let (rows, columns, values) = slice(grid, options.plane)?;
    let range = value_range(&values, options.range)?;
    let scale = match options.scale {
        Some(0) => return Err(Error::new(ErrorKind::BadArgument, "a scale of 0 pixels")),
        Some(s) => s,
        None => AUTO_SIDE.div_ceil(rows.max(columns)).max(1),
    };
    let too_large = || Error::new(ErrorKind::BadArgument, "the image would be too large");
    let plot_w = columns.checked_mul(scale).ok_or_else(too_large)?;
    let plot_h = rows.checked_mul(scale).ok_or_else(too_large)?;
    let bar = options
        .colour_bar
        .then(|| BarLayout::new(plot_w, plot_h, range));
    let (width, height, origin) = match &bar {
        Some(b) => (b.width, b.height, [b.margin, b.margin]),
        None => (plot_w, plot_h, [0, 0]),
    };
    if width.checked_mul(height).is_none_or(|p| p > MAX_PIXELS) {
        return Err(too_large());
    }
    let mut image = Image {
        width,
        height,
        // A white background.
        rgb: vec![255; width * height * 3],
        range,
        scale,
        plot_origin: origin,
    };
    let t = |v: f64| (v - range[0]) / (range[1] - range[0]);
    for r in 0..rows {
        for c in 0..columns {
            let colour = options.colour_map.colour(t(values[r * columns + c]));
            let (x, y) = (origin[0] + c * scale, origin[1] + r * scale);
            image.fill(x..x + scale, y..y + scale, colour);
        }
    }
    if let Some(b) = &bar {
        b.draw(&mut image, options.colour_map);
    }
    Ok(image)
}

/// [`render`]s the slice and writes it to `path` as an 8-bit RGB PNG.
///
/// # Errors
/// As [`render`], and [`ErrorKind::Io`] when the file cannot be written.
pub fn write_png<T: Element, const D: usize>(
    path: impl AsRef<Path>,
    grid: &Grid<T, D>,
    options: &PngOptions,
) -> Result<()> {
    render(grid, options)?.write_png(path)
}

/// Where the colour bar and its labels go, for a plot of `plot_w` by `plot_h` pixels.
struct BarLayout {
    margin: usize,
    /// Font pixels per glyph pixel.
    size: usize,
    bar_x: usize,
    bar_h: usize,
    ticks: Vec<(f64, String)>,
    width: usize,
    height: usize,
    range: [f64; 2],
}

const BAR_GAP: usize = 12;
const BAR_WIDTH: usize = 16;
const TICK_LENGTH: usize = 4;
const LABEL_GAP: usize = 3;

impl BarLayout {
    fn new(plot_w: usize, plot_h: usize, range: [f64; 2]) -> BarLayout {
        let bar_h = plot_h.max(MIN_BAR_HEIGHT);
        let size = if bar_h >= 400 { 2 } else { 1 };
        let margin = 4 + font::HEIGHT * size;
        // As many ticks (2 to 5) as fit with a label's height between them.
        let n_ticks = (bar_h / (3 * font::HEIGHT * size)).clamp(2, 5);
        let ticks: Vec<(f64, String)> = tick_values(range, n_ticks)
            .into_iter()
            .zip(tick_labels(range, n_ticks))
            .collect();
        let label_chars = ticks.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
        let bar_x = margin + plot_w + BAR_GAP;
        let labels_x = bar_x + BAR_WIDTH + TICK_LENGTH + LABEL_GAP;
        BarLayout {
            margin,
            size,
            bar_x,
            bar_h,
            width: labels_x + label_chars * font::ADVANCE * size + margin,
            height: 2 * margin + bar_h.max(plot_h),
            ticks,
            range,
        }
    }

    fn draw(&self, image: &mut Image, map: ColourMap) {
        let top = self.margin;
        let x = self.bar_x;
        for y in 0..self.bar_h {
            let t = 1.0 - y as f64 / (self.bar_h - 1).max(1) as f64;
            image.fill(x..x + BAR_WIDTH, top + y..top + y + 1, map.colour(t));
        }
        // The frame, one pixel outside the bar.
        image.fill(x - 1..x + BAR_WIDTH + 1, top - 1..top, BLACK);
        image.fill(
            x - 1..x + BAR_WIDTH + 1,
            top + self.bar_h..top + self.bar_h + 1,
            BLACK,
        );
        image.fill(x - 1..x, top..top + self.bar_h, BLACK);
        image.fill(
            x + BAR_WIDTH..x + BAR_WIDTH + 1,
            top..top + self.bar_h,
            BLACK,
        );
        let span = self.range[1] - self.range[0];
        let label_h = font::HEIGHT * self.size;
        for (value, label) in &self.ticks {
            let t = (value - self.range[0]) / span;
            let y = top + ((1.0 - t) * (self.bar_h - 1) as f64).round() as usize;
            let tick_x = x + BAR_WIDTH;
            image.fill(tick_x..tick_x + TICK_LENGTH, y..y + 1, BLACK);
            let label_y = y.saturating_sub(label_h / 2);
            image.text(tick_x + TICK_LENGTH + LABEL_GAP, label_y, label, self.size);
        }
    }
}

/// `n` values evenly spaced from `range[0]` to `range[1]`, both ends included.
fn tick_values(range: [f64; 2], n: usize) -> Vec<f64> {
    let span = range[1] - range[0];
    (0..n)
        .map(|i| range[0] + span * i as f64 / (n - 1) as f64)
        .collect()
}

/// The labels of [`tick_values`]: fixed-point with enough decimals to tell neighbouring ticks
/// apart, or, for magnitudes of 10^5 and more or below 10^-3, scientific with three
/// significant digits (`1.50e-5`). Only digits, `.`, `-` and `e`: what the font draws.
fn tick_labels(range: [f64; 2], n: usize) -> Vec<String> {
    let step = (range[1] - range[0]) / (n - 1) as f64;
    let magnitude = range[0].abs().max(range[1].abs());
    let scientific = !(1e-3..1e5).contains(&magnitude);
    let decimals = (1 - step.log10().floor() as i64).clamp(0, 6) as usize;
    tick_values(range, n)
        .into_iter()
        .map(|v| {
            // A tick within rounding of 0 is 0, not `-0.00` or `1.23e-17`.
            let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
            let label = if v == 0.0 {
                "0".to_string()
            } else if scientific {
                format!("{v:.2e}")
            } else {
                format!("{v:.decimals$}")
            };
            match label.strip_prefix('-') {
                Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
                _ => label,
            }
        })
        .collect()
}

/// The slice's rows, columns and values (row by row) as `f64`.
fn slice<T: Element, const D: usize>(
    grid: &Grid<T, D>,
    plane: Option<Plane>,
) -> Result<(usize, usize, Vec<f64>)> {
    let shape = grid.shape();
    match (D, plane) {
        (2, None) => Ok((
            shape[0],
            shape[1],
            grid.interior_iter().map(|(_, v)| v.to_f64()).collect(),
        )),
        (2, Some(p)) => Err(Error::new(
            ErrorKind::BadArgument,
            format!("{p:?} given for a 2-D grid, which is drawn whole"),
        )),
        (3, plane) => {
            let p = plane.unwrap_or(Plane {
                axis: 0,
                index: shape[0] / 2,
            });
            if p.axis >= 3 || p.index >= shape[p.axis] {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    format!("{p:?} is outside a grid of shape {shape:?}"),
                ));
            }
            let (a, b) = match p.axis {
                0 => (1, 2),
                1 => (0, 2),
                _ => (0, 1),
            };
            let mut values = Vec::with_capacity(shape[a] * shape[b]);
            let mut point = [0usize; D];
            point[p.axis] = p.index;
            for r in 0..shape[a] {
                for c in 0..shape[b] {
                    point[a] = r;
                    point[b] = c;
                    values.push(grid[point].to_f64());
                }
            }
            Ok((shape[a], shape[b], values))
        }
        _ => Err(Error::new(
            ErrorKind::DimensionMismatch,
            format!("a slice is drawn from a 2-D or 3-D grid, not a {D}-D one"),
        )),
    }
}

/// The range the colour map spans: `given`, or the finite values' extremes; a range of one
/// value widened (see [`PngOptions::range`]).
fn value_range(values: &[f64], given: Option<[f64; 2]>) -> Result<[f64; 2]> {
    let [lo, hi] = match given {
        Some([lo, hi]) if lo.is_finite() && hi.is_finite() && lo <= hi => [lo, hi],
        Some(r) => {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!("the colour range {r:?} is not a finite, ordered pair"),
            ));
        }
        None => {
            let finite = values.iter().copied().filter(|v| v.is_finite());
            let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
            if lo > hi {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    "no finite value in the slice to scale the colours by",
                ));
            }
            [lo, hi]
        }
    };
    if lo == hi {
        let half = if lo == 0.0 { 0.5 } else { 0.5 * lo.abs() };
        return Ok([lo - half, hi + half]);
    }
    Ok([lo, hi])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_tell_ticks_apart_and_use_only_the_font() {
        assert_eq!(
            tick_labels([0.0, 1.0], 5),
            ["0", "0.25", "0.50", "0.75", "1.00"]
        );
        assert_eq!(tick_labels([-2.0, 2.0], 3), ["-2.0", "0", "2.0"]);
        assert_eq!(
            tick_labels([0.0, 400.0], 5),
            ["0", "100", "200", "300", "400"]
        );
        assert_eq!(tick_labels([0.0, 2e-5], 3), ["0", "1.00e-5", "2.00e-5"]);
        assert_eq!(tick_labels([1e5, 3e5], 2), ["1.00e5", "3.00e5"]);
        for label in tick_labels([-1.234e-7, 5.5e9], 5)
            .iter()
            .chain(&tick_labels([-0.3, 0.1], 5))
        {
            assert!(
                label.chars().all(|c| "0123456789.-e".contains(c)),
                "{label}"
            );
        }
    }

    #[test]
    fn the_range_is_the_finite_extremes_or_an_error() {
        assert_eq!(value_range(&[1.0, f64::NAN, -2.0], None), Ok([-2.0, 1.0]));
        assert_eq!(value_range(&[3.0, 3.0], None), Ok([1.5, 4.5]));
        assert_eq!(value_range(&[0.0], None), Ok([-0.5, 0.5]));
        assert_eq!(value_range(&[1.0], Some([0.0, 2.0])), Ok([0.0, 2.0]));
        for bad in [
            value_range(&[f64::NAN, f64::INFINITY], None),
            value_range(&[1.0], Some([f64::NAN, 1.0])),
            value_range(&[1.0], Some([2.0, 1.0])),
        ] {
            assert_eq!(bad.unwrap_err().kind(), ErrorKind::BadArgument);
        }
    }

    #[test]
    fn colour_maps_run_from_their_first_stop_to_their_last() {
        assert_eq!(ColourMap::Inferno.colour(0.0), [0, 0, 4]);
        assert_eq!(ColourMap::Inferno.colour(1.0), [252, 255, 164]);
        assert_eq!(ColourMap::Inferno.colour(7.0), [252, 255, 164], "clamped");
        assert_eq!(ColourMap::Grey.colour(0.5), [128, 128, 128]);
        assert_eq!(ColourMap::CoolWarm.colour(0.5), [221, 221, 221]);
        assert_eq!(ColourMap::CoolWarm.colour(f64::NAN), NAN_COLOUR);
    }
}
