//! The benchmark's output: the readable table, JSON lines, and the SVG bar chart.

use std::fmt::Write as _;

/// Median, min and max of a list of times in milliseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stats {
    /// Median.
    pub(crate) median: f64,
    /// Fastest.
    pub(crate) min: f64,
    /// Slowest.
    pub(crate) max: f64,
}

impl Stats {
    /// Statistics of `times` (not empty).
    pub(crate) fn of(mut times: Vec<f64>) -> Stats {
        times.sort_by(f64::total_cmp);
        let n = times.len();
        let median = if n % 2 == 1 {
            times[n / 2]
        } else {
            0.5 * (times[n / 2 - 1] + times[n / 2])
        };
        Stats {
            median,
            min: times[0],
            max: times[n - 1],
        }
    }
}

/// One measured implementation of one workload.
pub(crate) struct Row {
    /// Workload name.
    pub(crate) workload: &'static str,
    /// Implementation name.
    pub(crate) imp: String,
    /// Threads.
    pub(crate) threads: usize,
    /// Times.
    pub(crate) stats: Stats,
    /// Interior points.
    pub(crate) points: usize,
    /// Compulsory bytes per point.
    pub(crate) bytes_per_point: usize,
    /// Non-temporal copy bandwidth with the same threads, GB/s, timed in the same rounds.
    pub(crate) nt_gbs: f64,
    /// Median time of the naive rows+rayon baseline with the same threads.
    pub(crate) naive_rayon_ms: f64,
    /// The schedule, for library rows.
    pub(crate) schedule: Option<String>,
}

impl Row {
    /// Billions of points per second at the median.
    pub(crate) fn gpts(&self) -> f64 {
        self.points as f64 / (self.stats.median * 1e-3) / 1e9
    }
    /// GB/s at compulsory bytes per point, at the median.
    pub(crate) fn gbs(&self) -> f64 {
        self.gpts() * self.bytes_per_point as f64
    }
    /// Achieved over non-temporal copy bandwidth.
    pub(crate) fn roofline_fraction(&self) -> f64 {
        self.gbs() / self.nt_gbs
    }

    /// The row as one JSON object.
    pub(crate) fn json(&self) -> String {
        let mut s = format!(
            "{{\"workload\":\"{}\",\"impl\":\"{}\",\"threads\":{},\"ms_median\":{:.4},\
             \"ms_min\":{:.4},\"ms_max\":{:.4},\"gpts\":{:.4},\"bytes_per_point\":{},\
             \"gbs\":{:.3},\"roofline_fraction\":{:.4},\"speedup_vs_naive_rayon\":{:.3}",
            self.workload,
            self.imp,
            self.threads,
            self.stats.median,
            self.stats.min,
            self.stats.max,
            self.gpts(),
            self.bytes_per_point,
            self.gbs(),
            self.roofline_fraction(),
            self.naive_rayon_ms / self.stats.median,
        );
        // JSON has no NaN: a row measured without a copy bandwidth has no fraction.
        if !self.nt_gbs.is_finite() {
            s = s.replace("\"roofline_fraction\":NaN", "\"roofline_fraction\":null");
        }
        if let Some(schedule) = &self.schedule {
            let _ = write!(s, ",\"schedule\":\"{}\"", schedule.replace('"', "'"));
        }
        s.push('}');
        s
    }
}

/// What first-call tuning did for one workload and thread count, against the exhaustive
/// sweep's best and the default schedule measured in the same run.
pub(crate) struct TunerRow {
    /// Workload name.
    pub(crate) workload: &'static str,
    /// Threads.
    pub(crate) threads: usize,
    /// Trials the first call measured.
    pub(crate) trials: usize,
    /// Schedules in the space (what the exhaustive sweep measured).
    pub(crate) space: usize,
    /// Seconds the first call spent tuning.
    pub(crate) tuning_seconds: f64,
    /// Median ms per sweep of the tuned schedule.
    pub(crate) tuned_ms: f64,
    /// Median ms per sweep of the exhaustive sweep's best schedule.
    pub(crate) best_ms: f64,
    /// Median ms per sweep of the default schedule.
    pub(crate) default_ms: f64,
    /// Whether the first call's tuning was cut short by its budget.
    pub(crate) cut_short: bool,
    /// The first call's evidence in words.
    pub(crate) evidence: String,
    /// The tuned schedule in words.
    pub(crate) schedule: String,
}

impl TunerRow {
    /// The row as one JSON object.
    pub(crate) fn json(&self) -> String {
        format!(
            "{{\"tuner\":\"{}\",\"threads\":{},\"trials\":{},\"space\":{},\"tuning_s\":{:.3},\
             \"cut_short\":{},\"tuned_ms\":{:.4},\"best_ms\":{:.4},\"default_ms\":{:.4},\
             \"tuned_over_best\":{:.3},\"tuned_over_default\":{:.3},\"schedule\":\"{}\",\
             \"evidence\":\"{}\"}}",
            self.workload,
            self.threads,
            self.trials,
            self.space,
            self.tuning_seconds,
            self.cut_short,
            self.tuned_ms,
            self.best_ms,
            self.default_ms,
            self.tuned_ms / self.best_ms,
            self.tuned_ms / self.default_ms,
            self.schedule,
            self.evidence
        )
    }
}

/// The tuner's table: trials and time of the first call, and the tuned schedule's median
/// time over the exhaustive best's and the default's (below 1: faster).
pub(crate) fn tuner_table(rows: &[TunerRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nfirst-call tuning (quick, fresh cache):\n{:<13} {:>3} {:>6} {:>5} {:>8} {:>9} {:>9} {:>10} {:>10} {:>10}  schedule",
        "workload",
        "thr",
        "trials",
        "space",
        "tuning s",
        "tuned ms",
        "best ms",
        "default ms",
        "tuned/best",
        "tuned/def"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<13} {:>3} {:>6} {:>5} {:>7.2}{} {:>9.2} {:>9.2} {:>10.2} {:>10.3} {:>10.3}  {}",
            r.workload,
            r.threads,
            r.trials,
            r.space,
            r.tuning_seconds,
            if r.cut_short { "*" } else { " " },
            r.tuned_ms,
            r.best_ms,
            r.default_ms,
            r.tuned_ms / r.best_ms,
            r.tuned_ms / r.default_ms,
            r.schedule
        );
    }
    let _ = writeln!(
        out,
        "(* the first call's tuning was cut short by its time budget)"
    );
    out
}

/// What the layout search (`Launch::search_padding`) measured for one workload and thread
/// count.
pub(crate) struct PaddingRow {
    /// Workload name.
    pub(crate) workload: &'static str,
    /// Threads.
    pub(crate) threads: usize,
    /// Seconds the search took (tuning every padding included).
    pub(crate) seconds: f64,
    /// The search's report.
    pub(crate) report: stencil::PaddingReport,
}

impl PaddingRow {
    /// The row as one JSON object.
    pub(crate) fn json(&self) -> String {
        let ms: Vec<String> = self
            .report
            .candidates
            .iter()
            .map(|t| {
                format!(
                    "{{\"pad_lines\":{},\"ms\":{:.4},\"relative\":{:.4}}}",
                    t.pad_lines,
                    t.seconds_per_sweep * 1e3,
                    t.relative
                )
            })
            .collect();
        format!(
            "{{\"padding_search\":\"{}\",\"threads\":{},\"search_s\":{:.3},\"best_pad_lines\":{},\"candidates\":[{}]}}",
            self.workload,
            self.threads,
            self.seconds,
            self.report.best,
            ms.join(",")
        )
    }
}

/// The layout search's table: each row padding's median ms per sweep under its tuned
/// schedule, and that over the unpadded layout's timed in the same alternating rounds (what
/// the search ranks by).
pub(crate) fn padding_table(rows: &[PaddingRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nrow padding search (ms per sweep of each padding's tuned schedule, x over unpadded):\n{:<13} {:>3} {:>8}  {:>4}  candidates (lines: ms)",
        "workload", "thr", "search s", "best"
    );
    for r in rows {
        let candidates: Vec<String> = r
            .report
            .candidates
            .iter()
            .map(|t| {
                format!(
                    "{}: {:.2} x{:.3}",
                    t.pad_lines,
                    t.seconds_per_sweep * 1e3,
                    t.relative
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "{:<13} {:>3} {:>8.2}  {:>4}  {}",
            r.workload,
            r.threads,
            r.seconds,
            r.report.best,
            candidates.join(", ")
        );
    }
    out
}

/// One STREAM-copy measurement.
pub(crate) struct StreamRow {
    /// `copy-plain` or `copy-nt`.
    pub(crate) stream: &'static str,
    /// Threads.
    pub(crate) threads: usize,
    /// Times.
    pub(crate) stats: Stats,
    /// GB/s at 16 bytes per element (read + write), at the median.
    pub(crate) gbs: f64,
}

impl StreamRow {
    /// The measurement as one JSON object.
    pub(crate) fn json(&self) -> String {
        format!(
            "{{\"stream\":\"{}\",\"threads\":{},\"gbs\":{:.3},\"ms_median\":{:.4},\"ms_min\":{:.4},\"ms_max\":{:.4}}}",
            self.stream, self.threads, self.gbs, self.stats.median, self.stats.min, self.stats.max
        )
    }
}

/// The readable table.
pub(crate) fn table(streams: &[StreamRow], rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "STREAM copy (16 B per element moved):");
    for s in streams {
        let _ = writeln!(
            out,
            "  {:<11} {} thr  {:>7.2} GB/s  (median {:.2} ms, {:.2}-{:.2})",
            s.stream, s.threads, s.gbs, s.stats.median, s.stats.min, s.stats.max
        );
    }
    out.push('\n');
    out.push_str(&rows_table(rows));
    out
}

/// The measured rows alone, grouped by workload (columns as in [`table`]; a row measured
/// without a copy bandwidth shows `-` for it and its fraction).
pub(crate) fn rows_table(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<20} {:<20} {:>3} {:>9} {:>17} {:>7} {:>7} {:>7} {:>8} {:>8}",
        "workload",
        "impl",
        "thr",
        "median ms",
        "min-max ms",
        "GPt/s",
        "GB/s",
        "%NTcopy",
        "x naive",
        "NT GB/s"
    );
    let mut last = "";
    for r in rows {
        if r.workload != last && !last.is_empty() {
            out.push('\n');
        }
        last = r.workload;
        let (fraction, nt) = if r.nt_gbs.is_finite() {
            (
                format!("{:.1}%", 100.0 * r.roofline_fraction()),
                format!("{:.1}", r.nt_gbs),
            )
        } else {
            ("-".to_string(), "-".to_string())
        };
        let _ = writeln!(
            out,
            "{:<20} {:<20} {:>3} {:>9.3} {:>8.3}-{:<8.3} {:>7.3} {:>7.2} {:>7} {:>7.2}x {:>8}",
            r.workload,
            r.imp,
            r.threads,
            r.stats.median,
            r.stats.min,
            r.stats.max,
            r.gpts(),
            r.gbs(),
            fraction,
            r.naive_rayon_ms / r.stats.median,
            nt,
        );
    }
    out
}

/// A grouped bar chart of GB/s per workload, thread count and implementation, with the
/// non-temporal copy bandwidth of each thread count as a dashed line.
pub(crate) fn svg(streams: &[StreamRow], rows: &[Row]) -> String {
    let imps: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for r in rows {
            if !v.contains(&r.imp.as_str()) {
                v.push(&r.imp);
            }
        }
        v
    };
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for r in rows {
        if !groups.contains(&(r.workload, r.threads)) {
            groups.push((r.workload, r.threads));
        }
    }
    let colours = [
        "#9e9e9e", "#616161", "#64b5f6", "#1565c0", "#ef6c00", "#2e7d32",
    ];
    let max_gbs = rows
        .iter()
        .map(Row::gbs)
        .chain(streams.iter().map(|s| s.gbs))
        .fold(1.0, f64::max)
        * 1.1;
    let (bar, gap, left, top, height) = (14.0, 18.0, 60.0, 40.0, 300.0);
    let group_w = bar * imps.len() as f64 + gap;
    let width = left + group_w * groups.len() as f64 + 20.0;
    let y = |gbs: f64| top + height * (1.0 - gbs / max_gbs);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{:.0}\" \
         font-family=\"sans-serif\" font-size=\"11\">",
        top + height + 110.0
    );
    let _ = writeln!(
        s,
        "<text x=\"{left}\" y=\"20\" font-size=\"14\">GB/s at compulsory bytes per point \
         (dashed: non-temporal STREAM copy)</text>"
    );
    for tick in 0..=5 {
        let v = max_gbs * f64::from(tick) / 5.0;
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{width:.0}\" y1=\"{0:.1}\" y2=\"{0:.1}\" stroke=\"#eee\"/>\
             <text x=\"{1:.0}\" y=\"{0:.1}\" text-anchor=\"end\">{v:.0}</text>",
            y(v),
            left - 4.0
        );
    }
    for (g, (workload, threads)) in groups.iter().enumerate() {
        let x0 = left + g as f64 * group_w;
        for (k, imp) in imps.iter().enumerate() {
            if let Some(r) = rows
                .iter()
                .find(|r| r.workload == *workload && r.threads == *threads && r.imp == *imp)
            {
                let x = x0 + k as f64 * bar;
                let _ = writeln!(
                    s,
                    "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"/>",
                    y(r.gbs()),
                    bar - 1.0,
                    top + height - y(r.gbs()),
                    colours[k % colours.len()]
                );
            }
        }
        if let Some(nt) = streams
            .iter()
            .find(|st| st.stream == "copy-nt" && st.threads == *threads)
        {
            let _ = writeln!(
                s,
                "<line x1=\"{x0:.1}\" x2=\"{:.1}\" y1=\"{1:.1}\" y2=\"{1:.1}\" stroke=\"#c62828\" \
                 stroke-dasharray=\"4 3\"/>",
                x0 + group_w - gap,
                y(nt.gbs)
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{workload}</text>\
             <text x=\"{0:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{threads} thr</text>",
            x0 + (group_w - gap) / 2.0,
            top + height + 15.0,
            top + height + 28.0
        );
    }
    for (k, imp) in imps.iter().enumerate() {
        let ly = top + height + 45.0 + 14.0 * (k / 3) as f64;
        let lx = left + 220.0 * (k % 3) as f64;
        let _ = writeln!(
            s,
            "<rect x=\"{lx:.0}\" y=\"{:.0}\" width=\"10\" height=\"10\" fill=\"{}\"/>\
             <text x=\"{:.0}\" y=\"{ly:.0}\">{imp}</text>",
            ly - 9.0,
            colours[k % colours.len()],
            lx + 14.0
        );
    }
    s.push_str("</svg>\n");
    s
}
