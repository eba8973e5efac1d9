//! LOLWUT's computer art, as Redis 7.0 draws it for `LOLWUT VERSION 5` (Georg Nees's *Schotter*:
//! rows of squares, more rotated and displaced the lower they are, in Braille characters) and
//! `VERSION 6` (a skyline of skyscrapers in the terminal's four grays). The pictures are random,
//! as Redis's are; their size, limits, layout and text are Redis's.

use rand::Rng;

/// A picture of `width` x `height` pixels, each a color number (0 is the background).
struct Canvas {
    width: i64,
    height: i64,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i64, height: i64, color: u8) -> Canvas {
        Canvas { width, height, pixels: vec![color; (width * height) as usize] }
    }

    /// Sets a pixel; outside the canvas, nothing happens.
    fn set(&mut self, x: i64, y: i64, color: u8) {
        if (0..self.width).contains(&x) && (0..self.height).contains(&y) {
            self.pixels[(x + y * self.width) as usize] = color;
        }
    }

    /// A pixel's color; outside the canvas, the background.
    fn get(&self, x: i64, y: i64) -> u8 {
        if (0..self.width).contains(&x) && (0..self.height).contains(&y) {
            self.pixels[(x + y * self.width) as usize]
        } else {
            0
        }
    }

    /// A line from (x1, y1) to (x2, y2), Bresenham's way.
    fn line(&mut self, (mut x, mut y): (i64, i64), (x2, y2): (i64, i64), color: u8) {
        let (dx, dy) = ((x2 - x).abs(), (y2 - y).abs());
        let (sx, sy) = (if x < x2 { 1 } else { -1 }, if y < y2 { 1 } else { -1 });
        let mut err = dx - dy;
        loop {
            self.set(x, y, color);
            if x == x2 && y == y2 {
                return;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x += sx;
            }
            if e2 < dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// A square of side `side` centred on (x, y), turned by `angle` radians: its corners are
    /// on the circle through them, a quarter turn apart.
    fn square(&mut self, x: i64, y: i64, side: f32, angle: f32, color: u8) {
        let radius = (side / std::f32::consts::SQRT_2).round();
        let corner = |j: usize| {
            let k = std::f32::consts::FRAC_PI_4 + angle + j as f32 * std::f32::consts::FRAC_PI_2;
            ((k.sin() * radius + x as f32).round() as i64, (k.cos() * radius + y as f32).round() as i64)
        };
        for j in 0..4 {
            self.line(corner(j), corner((j + 1) % 4), color);
        }
    }
}

/// `LOLWUT VERSION 5 [columns] [squares per row] [squares per column]`: Schotter in Braille, each
/// character two pixels wide and four tall.
pub fn schotter(cols: i64, per_row: i64, per_col: i64) -> String {
    let (cols, per_row, per_col) = (cols.clamp(1, 1000), per_row.clamp(1, 200), per_col.clamp(1, 200));
    let width = cols * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    let height = (side * per_col as f32) as i64 + padding * 2;
    let mut canvas = Canvas::new(width, height, 0);
    let mut rng = rand::rng();
    for y in 0..per_col {
        for x in 0..per_row {
            let mut sx = (x as f32 * side + side / 2.0) as i64 + padding;
            let mut sy = (y as f32 * side + side / 2.0) as i64 + padding;
            let mut angle = 0.0;
            // From the third row down, the squares turn and move more the lower they are.
            if y > 1 {
                let mut jitter = || {
                    let r = rng.random::<f32>() / per_col as f32 * y as f32;
                    if rng.random::<bool>() { -r } else { r }
                };
                let (r1, r2, r3) = (jitter(), jitter(), jitter());
                angle = r1;
                sx = (sx as f32 + r2 * side / 3.0) as i64;
                sy = (sy as f32 + r3 * side / 3.0) as i64;
            }
            canvas.square(sx, sy, side, angle, 1);
        }
    }
    let mut text = String::new();
    for y in (0..canvas.height).step_by(4) {
        for x in (0..canvas.width).step_by(2) {
            // Braille dots: 1 2 3 7 down the left column, 4 5 6 8 down the right.
            let dots = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (0, 3), (1, 3)];
            let bits = dots
                .iter()
                .enumerate()
                .filter(|(_, (dx, dy))| canvas.get(x + dx, y + dy) != 0)
                .fold(0u32, |b, (i, _)| b | 1 << i);
            text.push(char::from_u32(0x2800 + bits).expect("a Braille pattern"));
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
    }
    text.push_str("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
    text.push_str(crate::version::REDIS_VERSION);
    text.push('\n');
    text
}

/// One skyscraper standing on the canvas's bottom row: its roof two pixels narrower on each side,
/// and windows (two pixels wide, one tall, of one of the two grays) inside its walls.
struct Skyscraper {
    x: i64,
    width: i64,
    height: i64,
    windows: bool,
    color: u8,
}

impl Skyscraper {
    fn draw(&self, canvas: &mut Canvas, rng: &mut impl Rng) {
        let bottom = canvas.height - 1;
        let top = bottom - self.height + 1;
        for y in (top..=bottom).rev() {
            for x in self.x..self.x + self.width {
                if y == top && (x <= self.x + 1 || x >= self.x + self.width - 2) {
                    continue;
                }
                let mut color = self.color;
                let inside = x > self.x + 1 && x < self.x + self.width - 2 && y > top + 1 && y < bottom - 1;
                if self.windows && inside {
                    let (relx, rely) = (x - (self.x + 1), y - (top + 1));
                    if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                        color = if relx % 2 != 0 {
                            // The window's second pixel, the same as its first.
                            canvas.get(x - 1, y)
                        } else {
                            loop {
                                let c = rng.random_range(1..=2);
                                if c != self.color {
                                    break c;
                                }
                            }
                        };
                    }
                }
                canvas.set(x, y, color);
            }
        }
    }
}

/// `LOLWUT VERSION 6 [columns] [rows]`: a skyline in the terminal's four grays (ANSI colors, one
/// space per pixel), a parallax of two gray rows of towers behind black ones with lit windows.
pub fn skyline(cols: i64, rows: i64) -> String {
    let (cols, rows) = (cols.clamp(1, 1000), rows.clamp(1, 1000));
    let mut canvas = Canvas::new(cols, rows, 3);
    let mut rng = rand::rng();
    // The background, lighter towers first so that they stay behind.
    for color in [2u8, 1] {
        let mut x = -10;
        while x < canvas.width {
            x += rng.random_range(0..8);
            let width = 10 + rng.random_range(0..9);
            let height = canvas.height / 2 + rng.random_range(0..canvas.height.max(1)) / if color == 2 { 2 } else { 3 };
            Skyscraper { x, width, height, windows: false, color }.draw(&mut canvas, &mut rng);
            x += if color == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut x = -10;
    while x < canvas.width {
        x += rng.random_range(0..8);
        let mut width = 5 + rng.random_range(0..14);
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = canvas.height / 3 + rng.random_range(0..canvas.height.max(1)) / 2;
        Skyscraper { x, width, height, windows: true, color: 0 }.draw(&mut canvas, &mut rng);
        x += width + 5;
    }
    let mut text = String::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            // Foreground and background alike, for the same look on every terminal.
            let code = match canvas.get(x, y) {
                1 => "0;90;100m",
                2 => "0;37;47m",
                3 => "0;97;107m",
                _ => "0;30;40m",
            };
            text.push_str("\x1b[");
            text.push_str(code);
            text.push_str(" \x1b[0m");
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
    }
    text.push_str("\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. ");
    text.push_str(crate::version::REDIS_VERSION);
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One square per row and column of 20 columns (40 x 40 pixels, 2 of padding): nothing is
    /// random in the first rows, so the square is upright, from pixel 2 to 38 each way.
    #[test]
    fn schotter_draws_upright_squares_in_its_first_rows() {
        let art = schotter(20, 1, 1);
        let lines: Vec<Vec<char>> = art.lines().map(|l| l.chars().collect()).collect();
        // Ten rows of characters, an empty line (Redis ends the last row with a newline too, when
        // the height is not one more than a multiple of four), the caption.
        assert_eq!(lines.len(), 12, "{art}");
        assert!(lines[10].is_empty());
        let blank = '\u{2800}';
        for (i, row) in lines[..10].iter().enumerate() {
            assert_eq!(row.len(), 20);
            assert_eq!(row[0], blank, "row {i}: left of the square\n{art}");
            assert_ne!(row[1], blank, "row {i}: the left side\n{art}");
            assert_ne!(row[19], blank, "row {i}: the right side\n{art}");
            let inside_blank = row[2..19].iter().all(|&c| c == blank);
            // The top and bottom edges cross the first and last rows; the rest is hollow.
            assert_eq!(inside_blank, (1..=8).contains(&i), "row {i}\n{art}");
        }
        let caption = lines[11].iter().collect::<String>();
        assert!(caption.starts_with("Georg Nees - schotter, plotter on paper, 1968. Redis ver. "));
    }

    #[test]
    fn schotter_and_skyline_keep_redis_s_limits() {
        let art = schotter(5000, 300, 0);
        assert_eq!(art.lines().next().map(|l| l.chars().count()), Some(1000));
        let sky = skyline(3, 2);
        let rows: Vec<&str> = sky.lines().collect();
        assert_eq!(rows[0].matches(" \x1b[0m").count(), 3);
        assert_eq!(rows[1].matches(" \x1b[0m").count(), 3);
        assert!(rows[2].starts_with("Dedicated to the 8 bit game developers"), "{sky}");
        assert!(skyline(0, 0).lines().next().is_some_and(|l| l.matches(" \x1b[0m").count() == 1));
    }

    /// The skyline stands on the bottom row: something darker than the white sky is there, and
    /// the top row (above every tower: they are at most about five sixths of the height) is sky.
    #[test]
    fn the_skyline_stands_on_the_ground_under_a_sky() {
        let sky = skyline(80, 20);
        let rows: Vec<&str> = sky.lines().collect();
        assert!(rows[19].matches("0;97;107m").count() < 40, "mostly towers: {}", rows[19]);
        assert_eq!(rows[0].matches("0;97;107m").count(), 80, "all sky: {}", rows[0]);
    }
}
