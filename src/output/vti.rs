//! VTK ImageData XML (`.vti`) with raw binary appended data: the XML header naming each
//! field, then `_` and, per field, a little-endian `UInt64` byte count followed by the values
//! as little-endian `Float32` or `Float64`, x fastest (see the module documentation of
//! [`crate::output`] for which grid dimension is x).
//!
//! Assumes grids of one to three dimensions whose interior rows ([`Grid::rows`]) come in C
//! order: that order is VTK's point order, so rows are written as they are.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use stencil_core::grid::Grid;
use stencil_core::{ElemType, Element, Error, ErrorKind, Result};

/// Where the grid sits in space, in VTK's `(x, y, z)` order (x: the grid's last dimension;
/// see [`crate::output`]). The default is origin 0 and spacing 1 on every axis.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct VtiOptions {
    /// Coordinates of the interior's first point.
    pub origin: [f64; 3],
    /// Distance between neighbouring points along each axis.
    pub spacing: [f64; 3],
}

impl Default for VtiOptions {
    fn default() -> VtiOptions {
        VtiOptions {
            origin: [0.0; 3],
            spacing: [1.0; 3],
        }
    }
}

/// Writes `fields` (name and grid; at least one, all of one shape) to the file `path` as VTK
/// ImageData with raw appended data, interior points only (see [`write_vti_to`]).
///
/// # Errors
/// [`ErrorKind::Io`] when the file cannot be created or written, else as [`write_vti_to`].
pub fn write_vti<T: Element, const D: usize>(
    path: impl AsRef<Path>,
    fields: &[(&str, &Grid<T, D>)],
    options: &VtiOptions,
) -> Result<()> {
    let path = path.as_ref();
    // Checked before the file is created, so a bad call leaves no empty file behind.
    check(fields, options)?;
    let file = std::fs::File::create(path)
        .map_err(|e| Error::new(ErrorKind::Io, format!("{}: {e}", path.display())))?;
    let mut out = std::io::BufWriter::new(file);
    write_vti_to(&mut out, fields, options)?;
    out.flush()
        .map_err(|e| Error::new(ErrorKind::Io, format!("{}: {e}", path.display())))
}

/// Writes `fields` to `out` as a VTK ImageData XML document with raw appended data: one
/// `Float32` or `Float64` point-data array per field (by the element type), in the order
/// given, the first marked as the active scalars. The values are the interior only, x
/// fastest, little-endian; array headers are `UInt64` byte counts.
///
/// # Errors
/// - [`ErrorKind::BadArgument`]: no fields; a name that is empty or given twice; a
///   non-finite origin or spacing, or a spacing of 0.
/// - [`ErrorKind::ShapeMismatch`]: fields of different interior shapes.
/// - [`ErrorKind::DimensionMismatch`]: grids of no or more than three dimensions.
/// - [`ErrorKind::Io`]: writing to `out` failed.
pub fn write_vti_to<T: Element, const D: usize>(
    out: &mut dyn Write,
    fields: &[(&str, &Grid<T, D>)],
    options: &VtiOptions,
) -> Result<()> {
    check(fields, options)?;
    let shape = fields[0].1.shape();
    let header = header::<T, D>(fields, options, shape);
    out.write_all(header.as_bytes())?;
    out.write_all(b"_")?;
    let n_points: usize = shape.iter().product();
    let size = T::ELEM.size_bytes();
    let mut bytes = Vec::with_capacity(shape[D - 1] * size);
    for (_, grid) in fields {
        out.write_all(&((n_points * size) as u64).to_le_bytes())?;
        for row in grid.rows() {
            bytes.clear();
            for &v in row {
                match T::ELEM {
                    // Exact: an f32 element's `to_f64` is a widening.
                    ElemType::F32 => bytes.extend_from_slice(&(v.to_f64() as f32).to_le_bytes()),
                    ElemType::F64 => bytes.extend_from_slice(&v.to_f64().to_le_bytes()),
                }
            }
            out.write_all(&bytes)?;
        }
    }
    out.write_all(TRAILER)?;
    Ok(())
}

/// The end of the file, after the last field's values.
pub(crate) const TRAILER: &[u8] = b"\n  </AppendedData>\n</VTKFile>\n";

/// Every check of a call, before anything is written.
pub(crate) fn check<T: Element, const D: usize>(
    fields: &[(&str, &Grid<T, D>)],
    options: &VtiOptions,
) -> Result<()> {
    if D == 0 || D > 3 {
        return Err(Error::new(
            ErrorKind::DimensionMismatch,
            format!("VTK ImageData holds 1-D to 3-D grids, not {D}-D"),
        ));
    }
    let Some((_, first)) = fields.first() else {
        return Err(Error::new(ErrorKind::BadArgument, "no fields to write"));
    };
    for (n, (name, grid)) in fields.iter().enumerate() {
        if name.trim().is_empty() {
            return Err(Error::new(ErrorKind::BadArgument, "a field has no name"));
        }
        if fields[..n].iter().any(|(other, _)| other == name) {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!("field `{name}` given twice"),
            ));
        }
        if grid.shape() != first.shape() {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!(
                    "field `{name}` has shape {:?}, the first field {:?}",
                    grid.shape(),
                    first.shape()
                ),
            ));
        }
    }
    let finite = options
        .origin
        .iter()
        .chain(&options.spacing)
        .all(|v| v.is_finite());
    if !finite || options.spacing.contains(&0.0) {
        return Err(Error::new(
            ErrorKind::BadArgument,
            format!("origin and spacing must be finite and spacings non-zero: {options:?}"),
        ));
    }
    Ok(())
}

/// The XML up to and including `<AppendedData encoding="raw">` and its indentation.
fn header<T: Element, const D: usize>(
    fields: &[(&str, &Grid<T, D>)],
    options: &VtiOptions,
    shape: [usize; D],
) -> String {
    let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
    header_of::<T>(&names, options, &shape)
}

/// [`header`] for fields named `names` of interior `shape` (1 to 3 extents) and element type
/// `T`: what precedes the `_` of the appended data.
pub(crate) fn header_of<T: Element>(
    names: &[&str],
    options: &VtiOptions,
    shape: &[usize],
) -> String {
    let d = shape.len();
    // VTK's (x, y, z) extents: x is the grid's last dimension; missing axes have extent 0 0.
    let mut last = [0usize; 3];
    for (axis, extent) in last.iter_mut().enumerate().take(d) {
        *extent = shape[d - 1 - axis] - 1;
    }
    let extent = format!("0 {} 0 {} 0 {}", last[0], last[1], last[2]);
    let triple = |v: [f64; 3]| format!("{} {} {}", v[0], v[1], v[2]);
    let type_name = match T::ELEM {
        ElemType::F32 => "Float32",
        ElemType::F64 => "Float64",
    };
    let n_points: usize = shape.iter().product();
    let block = 8 + n_points * T::ELEM.size_bytes();
    let mut s = String::new();
    // `write!` to a String cannot fail.
    let _ = writeln!(s, "<?xml version=\"1.0\"?>");
    let _ = writeln!(
        s,
        "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" \
         header_type=\"UInt64\">"
    );
    let _ = writeln!(
        s,
        "  <ImageData WholeExtent=\"{extent}\" Origin=\"{}\" Spacing=\"{}\">",
        triple(options.origin),
        triple(options.spacing)
    );
    let _ = writeln!(s, "    <Piece Extent=\"{extent}\">");
    let _ = writeln!(s, "      <PointData Scalars=\"{}\">", escape(names[0]));
    for (n, name) in names.iter().enumerate() {
        let _ = writeln!(
            s,
            "        <DataArray type=\"{type_name}\" Name=\"{}\" NumberOfComponents=\"1\" \
             format=\"appended\" offset=\"{}\"/>",
            escape(name),
            n * block
        );
    }
    let _ = writeln!(s, "      </PointData>");
    let _ = writeln!(s, "      <CellData>\n      </CellData>");
    let _ = writeln!(s, "    </Piece>");
    let _ = writeln!(s, "  </ImageData>");
    let _ = write!(s, "  <AppendedData encoding=\"raw\">\n   ");
    s
}

/// `text` as an XML attribute value.
fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&apos;"),
            c => s.push(c),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_for_xml_attributes() {
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
    }

    #[test]
    fn bad_calls_are_errors_before_anything_is_written() {
        let g = Grid::<f64, 2>::new([3, 4]).unwrap();
        let h = Grid::<f64, 2>::new([4, 3]).unwrap();
        let o = VtiOptions::default();
        let mut out = Vec::new();
        let kind = |r: Result<()>| r.unwrap_err().kind();
        assert_eq!(
            kind(write_vti_to::<f64, 2>(&mut out, &[], &o)),
            ErrorKind::BadArgument
        );
        assert_eq!(
            kind(write_vti_to(&mut out, &[("", &g)], &o)),
            ErrorKind::BadArgument
        );
        assert_eq!(
            kind(write_vti_to(&mut out, &[("u", &g), ("u", &g)], &o)),
            ErrorKind::BadArgument
        );
        assert_eq!(
            kind(write_vti_to(&mut out, &[("u", &g), ("v", &h)], &o)),
            ErrorKind::ShapeMismatch
        );
        let nan = VtiOptions {
            origin: [f64::NAN, 0.0, 0.0],
            ..o
        };
        assert_eq!(
            kind(write_vti_to(&mut out, &[("u", &g)], &nan)),
            ErrorKind::BadArgument
        );
        let flat = VtiOptions {
            spacing: [1.0, 0.0, 1.0],
            ..o
        };
        assert_eq!(
            kind(write_vti_to(&mut out, &[("u", &g)], &flat)),
            ErrorKind::BadArgument
        );
        let g4 = Grid::<f64, 4>::new([2, 2, 2, 2]).unwrap();
        assert_eq!(
            kind(write_vti_to(&mut out, &[("u", &g4)], &o)),
            ErrorKind::DimensionMismatch
        );
        assert!(out.is_empty(), "nothing written");
    }
}
