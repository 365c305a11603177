//! `stencil::output` read back independently: the `.vti` files' XML header, offsets and raw
//! bytes parsed here by hand and compared value by value with the grids (x fastest, x the
//! grid's last dimension), for 3-D, 2-D and 1-D grids, f32 and f64, several fields; the PNGs
//! decoded with the `png` crate and checked pixel by pixel; and every misuse an `Err`.
#![cfg(feature = "output")]

use std::collections::HashMap;

use stencil::output::{
    ColourMap, Plane, PngOptions, VtiOptions, render, write_png, write_vti, write_vti_to,
};
use stencil::{Boundary, Element, ErrorKind, Grid};

/// A `.vti` file as read back: the attributes of its elements and each array's values.
struct Vti {
    whole_extent: Vec<usize>,
    piece_extent: Vec<usize>,
    origin: Vec<f64>,
    spacing: Vec<f64>,
    header_attributes: HashMap<String, String>,
    scalars: String,
    /// Name, type and values of every data array, in file order.
    arrays: Vec<(String, String, Vec<f64>)>,
}

/// The value of `name="..."` inside `tag`.
fn attribute(tag: &str, name: &str) -> String {
    let key = format!(" {name}=\"");
    let start = tag.find(&key).unwrap_or_else(|| panic!("{name} in {tag}")) + key.len();
    let len = tag[start..].find('"').expect("closing quote");
    tag[start..start + len].to_string()
}

/// Every tag `<name ...>` of the header, in order.
fn tags<'a>(header: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    let mut found = Vec::new();
    let mut rest = header;
    while let Some(at) = rest.find(&open) {
        let end = rest[at..].find('>').expect("tag end") + at;
        found.push(&rest[at..=end]);
        rest = &rest[end..];
    }
    found
}

fn numbers<T: std::str::FromStr>(text: &str) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    text.split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

fn parse(bytes: &[u8]) -> Vti {
    let marker = b"<AppendedData encoding=\"raw\">";
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("an AppendedData element");
    let header = std::str::from_utf8(&bytes[..at]).expect("an XML header in UTF-8");
    // The raw data start after the first `_` following the marker.
    let underscore = bytes[at..].iter().position(|&b| b == b'_').expect("_") + at;
    let data = &bytes[underscore + 1..];
    let file = tags(header, "VTKFile")[0];
    let header_attributes = ["type", "version", "byte_order", "header_type"]
        .iter()
        .map(|k| (k.to_string(), attribute(file, k)))
        .collect();
    let image = tags(header, "ImageData")[0];
    let piece = tags(header, "Piece")[0];
    let point_data = tags(header, "PointData")[0];
    let arrays = tags(header, "DataArray")
        .into_iter()
        .map(|tag| {
            assert_eq!(attribute(tag, "format"), "appended");
            assert_eq!(attribute(tag, "NumberOfComponents"), "1");
            let offset: usize = attribute(tag, "offset").parse().unwrap();
            let kind = attribute(tag, "type");
            let len = u64::from_le_bytes(data[offset..offset + 8].try_into().unwrap()) as usize;
            let raw = &data[offset + 8..offset + 8 + len];
            let values = match kind.as_str() {
                "Float64" => raw
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
                "Float32" => raw
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
                    .collect(),
                other => panic!("type {other}"),
            };
            (attribute(tag, "Name"), kind, values)
        })
        .collect();
    let tail = b"\n  </AppendedData>\n</VTKFile>\n";
    assert!(bytes.ends_with(tail), "the document is closed");
    Vti {
        whole_extent: numbers(&attribute(image, "WholeExtent")),
        piece_extent: numbers(&attribute(piece, "Extent")),
        origin: numbers(&attribute(image, "Origin")),
        spacing: numbers(&attribute(image, "Spacing")),
        header_attributes,
        scalars: attribute(point_data, "Scalars"),
        arrays,
    }
}

/// A value unique to each interior point, so any permutation of points shows, and a halo of
/// -1, so a halo value written shows too.
fn grid3<T: Element>(shape: [usize; 3], salt: f64) -> Grid<T, 3> {
    let mut g = Grid::<T, 3>::new(shape).unwrap();
    g.set_boundary(Boundary::Dirichlet(T::from_f64(-1.0)));
    g.fill_with(|[i, j, k]| T::from_f64(salt + (i * 10_000 + j * 100 + k) as f64));
    g
}

#[test]
fn a_3d_vti_holds_the_interior_x_fastest_with_x_the_last_dimension() {
    let shape = [3, 4, 5];
    let u = grid3::<f64>(shape, 0.5);
    let v = grid3::<f64>(shape, 0.25);
    let options = VtiOptions {
        origin: [1.0, -2.0, 0.5],
        spacing: [0.1, 0.2, 0.25],
    };
    let mut bytes = Vec::new();
    write_vti_to(&mut bytes, &[("u", &u), ("velocity & more", &v)], &options).unwrap();
    let vti = parse(&bytes);
    assert_eq!(vti.header_attributes["type"], "ImageData");
    assert_eq!(vti.header_attributes["byte_order"], "LittleEndian");
    assert_eq!(vti.header_attributes["header_type"], "UInt64");
    // x spans the last grid dimension (5 points), z the first (3).
    assert_eq!(vti.whole_extent, [0, 4, 0, 3, 0, 2]);
    assert_eq!(vti.piece_extent, vti.whole_extent);
    assert_eq!(vti.origin, [1.0, -2.0, 0.5]);
    assert_eq!(vti.spacing, [0.1, 0.2, 0.25]);
    assert_eq!(vti.scalars, "u");
    assert_eq!(vti.arrays.len(), 2);
    for ((name, kind, values), (want_name, grid)) in vti
        .arrays
        .iter()
        .zip([("u", &u), ("velocity &amp; more", &v)])
    {
        assert_eq!(name, want_name);
        assert_eq!(kind, "Float64");
        assert_eq!(values.len(), 60);
        // VTK's point id: x + nx (y + ny z).
        for z in 0..3 {
            for y in 0..4 {
                for x in 0..5 {
                    let id = x + 5 * (y + 4 * z);
                    assert_eq!(values[id], grid[[z, y, x]], "({x}, {y}, {z})");
                }
            }
        }
    }
}

#[test]
fn f32_2d_and_1d_grids_have_flat_extents() {
    let mut g2 = Grid::<f32, 2>::new([3, 7]).unwrap();
    g2.fill_with(|[i, j]| (i * 7 + j) as f32 * 0.5 - 3.0);
    let mut bytes = Vec::new();
    write_vti_to(&mut bytes, &[("p", &g2)], &VtiOptions::default()).unwrap();
    let vti = parse(&bytes);
    assert_eq!(vti.whole_extent, [0, 6, 0, 2, 0, 0]);
    assert_eq!(vti.origin, [0.0; 3]);
    assert_eq!(vti.spacing, [1.0; 3]);
    let (_, kind, values) = &vti.arrays[0];
    assert_eq!(kind, "Float32");
    for y in 0..3 {
        for x in 0..7 {
            assert_eq!(values[x + 7 * y], g2[[y, x]] as f64, "({x}, {y})");
        }
    }

    let mut g1 = Grid::<f64, 1>::new([9]).unwrap();
    g1.fill_with(|[i]| (i as f64).sqrt());
    let path = std::env::temp_dir().join(format!("stencil-output-{}-1d.vti", std::process::id()));
    write_vti(&path, &[("s", &g1)], &VtiOptions::default()).unwrap();
    let vti = parse(&std::fs::read(&path).unwrap());
    let _ = std::fs::remove_file(&path);
    assert_eq!(vti.whole_extent, [0, 8, 0, 0, 0, 0]);
    assert_eq!(vti.arrays[0].2, g1.to_vec());
}

#[test]
fn writing_where_no_file_can_be_is_an_io_error() {
    let g = Grid::<f64, 2>::new([2, 2]).unwrap();
    let path = std::env::temp_dir()
        .join(format!("stencil-output-{}-missing", std::process::id()))
        .join("dir")
        .join("u.vti");
    let err = write_vti(&path, &[("u", &g)], &VtiOptions::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    let err = write_png(path.with_extension("png"), &g, &PngOptions::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
}

/// Decodes a PNG file into (width, height, RGB bytes).
fn decode(path: &std::path::Path) -> (usize, usize, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf.truncate(info.buffer_size());
    (info.width as usize, info.height as usize, buf)
}

#[test]
fn a_png_slice_shows_the_plane_its_colours_and_a_labelled_bar() {
    let shape = [4, 6, 8];
    let u = grid3::<f64>(shape, 0.0);
    let plane = Plane { axis: 1, index: 2 };
    let options = PngOptions {
        plane: Some(plane),
        scale: Some(3),
        ..PngOptions::default()
    };
    let image = render(&u, &options).unwrap();
    assert_eq!(image.scale, 3);
    // The plane j = 2: rows are i (4), columns k (8); range from its extremes.
    let lo = u[[0, 2, 0]];
    let hi = u[[3, 2, 7]];
    assert_eq!(image.range, [lo, hi]);
    let [x0, y0] = image.plot_origin;
    for i in 0..4 {
        for k in 0..8 {
            let t = (u[[i, 2, k]] - lo) / (hi - lo);
            let want = ColourMap::Inferno.colour(t);
            for (dx, dy) in [(0, 0), (2, 2)] {
                let got = image.pixel(x0 + 3 * k + dx, y0 + 3 * i + dy);
                assert_eq!(got, Some(want), "point ({i}, 2, {k})");
            }
        }
    }
    // Right of the plot: the bar's top is the map's maximum colour, its bottom the minimum,
    // and some label pixels are black.
    let right = x0 + 3 * 8;
    let column = (right..image.width)
        .find(|&x| image.pixel(x, y0) == Some(ColourMap::Inferno.colour(1.0)))
        .expect("the bar's top row");
    let bottom = (y0..image.height)
        .rev()
        .find(|&y| image.pixel(column, y) == Some(ColourMap::Inferno.colour(0.0)))
        .expect("the bar's bottom row");
    assert!(bottom > y0 + 100, "a bar at least 128 pixels tall");
    let black = (column + 16..image.width)
        .flat_map(|x| (0..image.height).map(move |y| (x, y)))
        .filter(|&(x, y)| image.pixel(x, y) == Some([0, 0, 0]))
        .count();
    assert!(black > 50, "tick labels drawn: {black} black pixels");

    let path =
        std::env::temp_dir().join(format!("stencil-output-{}-slice.png", std::process::id()));
    write_png(&path, &u, &options).unwrap();
    let (width, height, rgb) = decode(&path);
    let _ = std::fs::remove_file(&path);
    assert_eq!((width, height), (image.width, image.height));
    assert_eq!(rgb, image.rgb);
}

#[test]
fn a_2d_grid_is_drawn_whole_rows_down_without_a_bar_when_asked() {
    let mut g = Grid::<f32, 2>::new([2, 3]).unwrap();
    g.fill_with(|[i, j]| if (i, j) == (1, 2) { 1.0 } else { 0.0 });
    g.set([0, 0], f32::NAN).unwrap();
    let image = render(
        &g,
        &PngOptions {
            colour_bar: false,
            scale: Some(1),
            colour_map: ColourMap::Grey,
            ..PngOptions::default()
        },
    )
    .unwrap();
    assert_eq!((image.width, image.height), (3, 2));
    assert_eq!(image.pixel(2, 1), Some([255, 255, 255]), "row 1, column 2");
    assert_eq!(image.pixel(1, 1), Some([0, 0, 0]));
    assert_eq!(image.pixel(0, 0), Some(stencil::output::NAN_COLOUR));
    // The automatic scale makes the longer side at least 256 pixels.
    let auto = render(&g, &PngOptions::default()).unwrap();
    assert_eq!(auto.scale, 86);
}

#[test]
fn misuse_is_an_error_never_a_panic() {
    let u = grid3::<f64>([3, 4, 5], 0.0);
    let kind = |options: PngOptions| render(&u, &options).unwrap_err().kind();
    let plane = |axis, index| PngOptions {
        plane: Some(Plane { axis, index }),
        ..PngOptions::default()
    };
    assert_eq!(kind(plane(0, 3)), ErrorKind::BadArgument, "index beyond");
    assert_eq!(kind(plane(3, 0)), ErrorKind::BadArgument, "axis beyond");
    assert_eq!(
        kind(PngOptions {
            range: Some([0.0, f64::NAN]),
            ..PngOptions::default()
        }),
        ErrorKind::BadArgument
    );
    assert_eq!(
        kind(PngOptions {
            scale: Some(0),
            ..PngOptions::default()
        }),
        ErrorKind::BadArgument
    );
    let mut nan = Grid::<f64, 2>::new([2, 2]).unwrap();
    nan.fill(f64::NAN);
    let err = render(&nan, &PngOptions::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument, "no finite value: {err}");
    let g2 = Grid::<f64, 2>::new([2, 2]).unwrap();
    assert_eq!(
        render(&g2, &plane(0, 0)).unwrap_err().kind(),
        ErrorKind::BadArgument,
        "a plane of a 2-D grid"
    );
    let g1 = Grid::<f64, 1>::new([4]).unwrap();
    assert_eq!(
        render(&g1, &PngOptions::default()).unwrap_err().kind(),
        ErrorKind::DimensionMismatch
    );
    let mut empty: Vec<u8> = Vec::new();
    let none: &[(&str, &Grid<f64, 3>)] = &[];
    assert_eq!(
        write_vti_to(&mut empty, none, &VtiOptions::default())
            .unwrap_err()
            .kind(),
        ErrorKind::BadArgument
    );
}
