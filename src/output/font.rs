//! A 5 by 7 pixel bitmap font of exactly the characters a colour bar's tick labels use:
//! digits, `.`, `-` and `e`. Assumes labels made by [`super::image`]'s formatter, which
//! writes no other character; any other character draws as a blank cell.

/// Width of a glyph in font pixels.
pub(super) const WIDTH: usize = 5;
/// Height of a glyph in font pixels.
pub(super) const HEIGHT: usize = 7;
/// Horizontal advance from one character to the next, in font pixels.
pub(super) const ADVANCE: usize = WIDTH + 1;

/// The rows of `c`'s glyph, top first; bit 4 is the leftmost pixel.
pub(super) fn glyph(c: char) -> [u8; HEIGHT] {
    match c {
        '0' => [0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e],
        '1' => [0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e],
        '2' => [0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f],
        '3' => [0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e],
        '4' => [0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02],
        '5' => [0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e],
        '6' => [0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e],
        '7' => [0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e],
        '9' => [0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c],
        '.' => [0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c],
        '-' => [0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00],
        'e' => [0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e],
        _ => [0; HEIGHT],
    }
}

/// Whether the font pixel at (`row`, `column`) of `c`'s glyph is set.
pub(super) fn pixel(c: char, row: usize, column: usize) -> bool {
    row < HEIGHT && column < WIDTH && glyph(c)[row] & (0x10 >> column) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_character_has_a_distinct_visible_glyph() {
        let chars = "0123456789.-e";
        for a in chars.chars() {
            assert!(glyph(a).iter().any(|&r| r != 0), "{a} is blank");
            assert!(glyph(a).iter().all(|&r| r < 0x20), "{a} is wider than 5");
            for b in chars.chars().filter(|&b| b != a) {
                assert_ne!(glyph(a), glyph(b), "{a} and {b}");
            }
        }
        assert_eq!(glyph('x'), [0; HEIGHT]);
        // The top-left pixel of `7` is set, the bottom-right one is not.
        assert!(pixel('7', 0, 0));
        assert!(!pixel('7', 6, 4));
    }
}
