//! How the report spells a number, a count or a command line: the same in every writer and in
//! the chart.

use std::fmt::Write;

use crate::metrics::{Diff, Dist};
use crate::stats::Interval;

/// "12" or "4.2": a count stays whole, a mean keeps one decimal under 100.
pub fn num(x: f64) -> String {
    if x.abs() >= 100.0 || x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x:.1}") }
}

/// "12,345" for big numbers, "4.2" for small ones: ticks and labels read as numbers, not floats.
pub fn readable(x: f64) -> String {
    if x.abs() >= 1000.0 {
        let digits = format!("{:.0}", x.abs());
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if x < 0.0 { format!("-{out}") } else { out }
    } else if x.fract() == 0.0 || x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

pub fn opt_num(x: Option<f64>) -> String {
    x.map(num).unwrap_or_else(|| "—".into())
}

pub fn opt_int(x: Option<u64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_else(|| "—".into())
}

pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// " [lo, hi]", or nothing without an interval.
pub fn ci(i: Option<Interval>, f: fn(f64) -> String) -> String {
    i.map(|i| format!(" [{}, {}]", f(i.lo), f(i.hi))).unwrap_or_default()
}

pub fn signed(x: f64) -> String {
    if x > 0.0 { format!("+{}", num(x)) } else { num(x) }
}

pub fn signed_pct(x: f64) -> String {
    if x > 0.0 { format!("+{:.1}%", x * 100.0) } else { format!("{:.1}%", x * 100.0) }
}

pub fn signed_readable(x: f64) -> String {
    if x > 0.0 { format!("+{}", readable(x)) } else { readable(x) }
}

/// `x [lo, hi]` for a rate, a mean or a difference, "—" when there is none.
pub fn valued(v: Option<f64>, i: Option<Interval>, f: fn(f64) -> String) -> String {
    v.map(|v| format!("{}{}", f(v), ci(i, f))).unwrap_or_else(|| "—".into())
}

/// "median / mean [ci] (n, k null)".
pub fn dist_cell(d: &Dist) -> String {
    if d.n == 0 {
        return if d.missing > 0 { format!("— ({} null)", d.missing) } else { "—".into() };
    }
    let mut s = format!("{} / {}{}", opt_num(d.median), opt_num(d.mean), ci(d.mean_ci95, num));
    if d.missing > 0 {
        write!(s, " ({} null)", d.missing).unwrap();
    }
    s
}

/// "$median / $mean", with the unpriced sessions counted.
pub fn cost_cell(d: &Dist) -> String {
    if d.n == 0 {
        return if d.missing > 0 { format!("— ({} unpriced/null)", d.missing) } else { "—".into() };
    }
    let f = |x: f64| format!("${x:.4}");
    let mut s = format!("{} / {}", d.median.map(f).unwrap_or_default(), d.mean.map(f).unwrap_or_default());
    if d.missing > 0 {
        write!(s, " ({} unpriced/null)", d.missing).unwrap();
    }
    s
}

/// A table's difference cell: the mean [ci] (relative [ci]) · n=…, k null.
pub fn diff_cell(d: &Option<Diff>, rate: bool) -> String {
    let Some(d) = d else { return "—".into() };
    let mut s = if rate {
        format!("{}{}", signed_pct(d.mean), ci(d.ci95, signed_pct))
    } else {
        let mut s = format!("{}{}", signed(d.mean), ci(d.ci95, signed));
        if let Some(r) = d.relative {
            write!(s, " ({}{})", signed_pct(r), ci(d.relative_ci95, signed_pct)).unwrap();
        }
        s
    };
    write!(s, " · n={}", d.n).unwrap();
    if d.missing > 0 {
        write!(s, ", {} null", d.missing).unwrap();
    }
    s
}

/// A difference with its interval and relative change, or "—" (the headline's spelling).
pub fn delta(d: &Option<Diff>) -> String {
    match d {
        None => "—".into(),
        Some(d) => {
            let mut s = valued(Some(d.mean), d.ci95, signed_readable);
            if let Some(r) = d.relative {
                write!(s, " ({}{})", signed_pct(r), ci(d.relative_ci95, signed_pct)).unwrap();
            }
            s
        }
    }
}

/// "reason: count, …" or "—".
pub fn invalid_list(m: &std::collections::BTreeMap<String, usize>) -> String {
    if m.is_empty() { "—".into() } else { m.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ") }
}

pub fn tri(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    }
}

/// "1 pair", "3 pairs".
pub fn pairs(n: usize) -> String {
    if n == 1 { "1 pair".into() } else { format!("{n} pairs") }
}

/// A command line as one string a shell would take back.
pub fn shell_line(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A rate difference as "+12 points [+3, +20] over 14 pairs".
pub fn points_over_pairs(d: &Diff) -> String {
    format!("{:+.0} points{} over {} pair{}", 100.0 * d.mean, ci(d.ci95, |x| format!("{:+.0}", 100.0 * x)), d.n, if d.n == 1 { "" } else { "s" })
}
