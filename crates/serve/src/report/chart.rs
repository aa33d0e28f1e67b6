//! The token chart: an inline SVG of the surface's size after every event
//! on the active path, with the window and compaction threshold drawn in.

use std::fmt::Write as _;

use abridge_session::Seq;

/// The surface's tokens just after one event on the active path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Point {
    /// The event's seq in the session file.
    pub(crate) seq: Seq,
    /// Tokens to act on after it.
    pub(crate) tokens: u64,
    /// Whether the event was a compaction (replace or rewrite).
    pub(crate) compaction: bool,
}

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 40.0;

/// The chart as an `<svg>` element. The vertical scale fits the data and
/// the threshold; the window is drawn when it fits, else named in a note,
/// so a small session in a large window is still readable.
pub(crate) fn svg(points: &[Point], window: u64, threshold: u64) -> String {
    let max_tokens = points.iter().map(|p| p.tokens).max().unwrap_or(0);
    let top_value = (max_tokens.max(threshold) as f64 * 1.1).max(1.0);
    let y_max = if (window as f64) <= top_value * 1.2 {
        (window as f64 * 1.05).max(top_value)
    } else {
        top_value
    };
    let first = points.first().map_or(0, |p| p.seq) as f64;
    let last = points.last().map_or(1, |p| p.seq) as f64;
    let span = (last - first).max(1.0);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |seq: Seq| LEFT + (seq as f64 - first) / span * plot_w;
    let y = |tokens: f64| TOP + plot_h - tokens / y_max * plot_h;

    let mut out = format!(
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"100%\" role=\"img\" aria-label=\"surface tokens after each event\">\n"
    );
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"#fff\" stroke=\"#bbb\"/>"
    );
    for i in 0..=5 {
        let value = y_max * f64::from(i) / 5.0;
        let py = y(value);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT + plot_w,
            LEFT - 6.0,
            py + 4.0,
            value.round() as u64
        );
    }
    let step = (span / 8.0).ceil().max(1.0) as Seq;
    let (from, to) = (first as Seq, last.max(first) as Seq);
    for seq in (from..=to).step_by(usize::try_from(step).unwrap_or(1)) {
        let px = x(seq);
        let _ = writeln!(
            out,
            "<text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{seq}</text>",
            TOP + plot_h + 16.0
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">event seq</text><text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">tokens</text>",
        LEFT + plot_w / 2.0,
        HEIGHT - 4.0,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    for point in points.iter().filter(|p| p.compaction) {
        let px = x(point.seq);
        let _ = writeln!(
            out,
            "<line class=\"compaction\" x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#d69e2e\" stroke-dasharray=\"3 3\"><title>compaction at #{}</title></line>",
            TOP + plot_h,
            point.seq
        );
    }
    let ty = y(threshold as f64);
    let _ = writeln!(
        out,
        "<line class=\"threshold\" x1=\"{LEFT}\" y1=\"{ty:.1}\" x2=\"{:.1}\" y2=\"{ty:.1}\" stroke=\"#dd6b20\" stroke-dasharray=\"6 4\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" style=\"fill:#dd6b20\">threshold {threshold}</text>",
        LEFT + plot_w,
        LEFT + plot_w - 4.0,
        ty - 4.0
    );
    if (window as f64) <= y_max {
        let wy = y(window as f64);
        let _ = writeln!(
            out,
            "<line class=\"window\" x1=\"{LEFT}\" y1=\"{wy:.1}\" x2=\"{:.1}\" y2=\"{wy:.1}\" stroke=\"#c53030\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" style=\"fill:#c53030\">window {window}</text>",
            LEFT + plot_w,
            LEFT + plot_w - 4.0,
            wy - 4.0
        );
    } else {
        let _ = writeln!(
            out,
            "<text class=\"window\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" style=\"fill:#c53030\">window {window} (above the chart)</text>",
            LEFT + plot_w - 4.0,
            TOP + 12.0
        );
    }
    let line: Vec<String> = points
        .iter()
        .map(|p| format!("{:.1},{:.1}", x(p.seq), y(p.tokens as f64)))
        .collect();
    let _ = writeln!(
        out,
        "<polyline class=\"tokens\" fill=\"none\" stroke=\"#2b6cb0\" stroke-width=\"1.5\" points=\"{}\"/>",
        line.join(" ")
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(seq: Seq, tokens: u64, compaction: bool) -> Point {
        Point {
            seq,
            tokens,
            compaction,
        }
    }

    #[test]
    fn draws_threshold_window_and_one_marker_per_compaction() {
        let points = [
            point(0, 100, false),
            point(1, 900, false),
            point(2, 300, true),
        ];
        let svg = svg(&points, 1000, 800);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("class=\"threshold\""));
        assert!(svg.contains("threshold 800"));
        assert!(svg.contains("class=\"window\" x1"));
        assert_eq!(svg.matches("class=\"compaction\"").count(), 1);
        assert!(svg.contains("compaction at #2"));
    }

    #[test]
    fn a_far_window_is_named_not_drawn() {
        let svg = svg(&[point(0, 10, false), point(5, 20, false)], 200_000, 100);
        assert!(svg.contains("window 200000 (above the chart)"));
    }

    #[test]
    fn empty_and_single_point_sessions_still_draw() {
        assert!(svg(&[], 1000, 800).contains("</svg>"));
        assert!(!svg(&[point(3, 5, false)], 1000, 800).contains("NaN"));
    }
}
