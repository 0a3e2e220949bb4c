//! The comparison in words: the seed-000 sentences ("max under `mixed`: B
//! is 3.2× higher than A") and how ratios and p-values are written.

use super::cell::{Cell, KsTest, RatioRange, Ratios};
use super::{EntryKey, MATERIAL_D};

/// A ratio as shown: `1.10`, or for a ratio of bounds `0.02–50.3`.
pub(crate) fn fmt_ratio_shown(r: f64, range: Option<&RatioRange>) -> String {
    match range {
        Some(g) => format!("{}–{}", fmt_ratio(g.lo), fmt_ratio(g.hi)),
        None => fmt_ratio(r),
    }
}

/// "= 0.012", "= 3.1e-7", "< 1e-300" (a p-value below what f64 holds).
pub(crate) fn fmt_p(p: f64) -> String {
    if p <= 1e-300 {
        "< 1e-300".into()
    } else if p < 0.001 {
        format!("= {p:.1e}")
    } else {
        format!("= {p:.3}")
    }
}

/// "3.2× higher", "3.2× lower", "the same".
pub(crate) fn ratio_words(r: f64) -> String {
    if !r.is_finite() {
        "infinitely higher (the first is 0)".into()
    } else if (r - 1.0).abs() < 0.005 {
        "the same as".into()
    } else if r > 1.0 {
        format!("{}× higher than", fmt_ratio(r))
    } else if r > 0.0 {
        format!("{}× lower than", fmt_ratio(1.0 / r))
    } else {
        "0, against".into()
    }
}

/// Two significant digits below 100, whole numbers above ("320000").
pub(crate) fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{:.0}", r)
    } else if r >= 10.0 {
        format!("{:.1}", r)
    } else {
        format!("{:.2}", r)
    }
}

/// The sentence comparing `system`'s cell `c` of row `k` with the first
/// system's (`first`): ops per second for a throughput entry, else the max,
/// the p99 and the KS verdict. `None` when the cell has no ratio to the first.
pub(super) fn sentence(k: &EntryKey, c: &Cell, system: &str, first: &str) -> Option<String> {
    let rt = c.ratio_to_first.as_ref()?;
    if let Some(ops) = rt.ops {
        // A throughput entry: ops per second, not latency, is the result.
        return Some(format!(
            "ops per second under `{}` ({} {}): {system} completes {}× as many as {first}.",
            k.phase,
            k.probe,
            k.variant.as_deref().unwrap_or("-"),
            fmt_ratio(ops),
        ));
    }
    let entry = match &k.variant {
        Some(v) => format!("{} {v}", k.probe),
        None => k.probe.clone(),
    };
    Some(format!("max under `{}` ({entry}): {system} is {} {first}{}{}.", k.phase, ratio_words(rt.max), p99_words(rt, first), ks_words(c.ks_vs_first.as_ref())))
}

/// " (p99: 1.20× higher than A)", " (p99: a bound, 0.5× to 2.0× A's)", or "".
fn p99_words(rt: &Ratios, first: &str) -> String {
    match (rt.range("p99"), rt.p99) {
        (Some(g), _) => format!(" (p99: a bound, {}× to {}× {first}'s)", fmt_ratio(g.lo), fmt_ratio(g.hi)),
        (None, Some(x)) => format!(" (p99: {} {first})", ratio_words(x)),
        (None, None) => String::new(),
    }
}

/// "; the distributions differ (KS D = …, p …)" and its milder forms, or "".
fn ks_words(ks: Option<&KsTest>) -> String {
    let at = |t: &KsTest| t.at_ns.map(|r| format!(", at the coarser resolution of {} us", r.as_micros_f64())).unwrap_or_default();
    match ks {
        Some(t) if t.material() => format!("; the distributions differ (KS D = {:.3}, p {}{})", t.d, fmt_p(t.p), at(t)),
        Some(t) if t.distinguishable => {
            format!("; the distributions differ only a little (KS D = {:.3} < {MATERIAL_D}, p {}{})", t.d, fmt_p(t.p), at(t))
        }
        Some(t) => format!("; the distributions are not distinguishable (KS D = {:.3}, p = {:.2}{})", t.d, t.p, at(t)),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell_with(ratio_to_first: Option<Ratios>, ks_vs_first: Option<KsTest>) -> Cell {
        Cell {
            samples: 100,
            overruns: 0,
            overruns_unknown: false,
            bounds: Vec::new(),
            p50_ns: None,
            p99_ns: None,
            p99_9_ns: None,
            max_ns: crate::model::Nanos(0),
            mean_ns: 0.0,
            stddev_ns: Some(0.0),
            ops_per_s: None,
            ratio_to_first,
            ks_vs_first,
        }
    }

    fn ratios(max: f64, p99: Option<f64>, ops: Option<f64>, ranges: Vec<RatioRange>) -> Ratios {
        Ratios { p50: None, p99, p99_9: None, max, mean: Some(1.0), ops, ranges }
    }

    #[test]
    fn sentences_say_the_max_the_p99_and_the_ks_verdict_or_the_ops() {
        let k = EntryKey { probe: "timer".into(), phase: "mixed".into(), variant: None };
        // The first system's own cell has no ratio: no sentence.
        assert_eq!(sentence(&k, &cell_with(None, None), "A", "A"), None);
        let ks = KsTest { d: 0.25, p: 1e-5, distinguishable: true, at_ns: None };
        let c = cell_with(Some(ratios(3.2, Some(2.0), None, vec![])), Some(ks));
        assert_eq!(
            sentence(&k, &c, "B", "A").unwrap(),
            "max under `mixed` (timer): B is 3.20× higher than A (p99: 2.00× higher than A); the distributions differ (KS D = 0.250, p = 1.0e-5)."
        );
        // A p99 that is a bound is said as the range of its ratio; a KS test that cannot tell says so.
        let bound = vec![RatioRange { label: "p99", lo: 0.5, hi: 20.0 }];
        let ks = KsTest { d: 0.01, p: 0.5, distinguishable: false, at_ns: None };
        let k = EntryKey { variant: Some("posix/same-cpu".into()), probe: "sem".into(), ..k };
        let c = cell_with(Some(ratios(0.5, Some(20.0), None, bound)), Some(ks));
        assert_eq!(
            sentence(&k, &c, "B", "A").unwrap(),
            "max under `mixed` (sem posix/same-cpu): B is 2.00× lower than A (p99: a bound, 0.50× to 20.0× A's); the distributions are not distinguishable (KS D = 0.010, p = 0.50)."
        );
        // A small but distinguishable difference; no p99 and no KS test.
        let ks = KsTest { d: 0.1, p: 1e-9, distinguishable: true, at_ns: None };
        let c = cell_with(Some(ratios(1.0, None, None, vec![])), Some(ks));
        assert!(sentence(&k, &c, "B", "A")
            .unwrap()
            .ends_with(&format!("B is the same as A; the distributions differ only a little (KS D = 0.100 < {MATERIAL_D}, p = 1.0e-9).")));
        let c = cell_with(Some(ratios(1.0, None, None, vec![])), None);
        assert!(sentence(&k, &c, "B", "A").unwrap().ends_with("B is the same as A."));
        // A throughput entry: ops per second, whatever the latency ratios.
        let k = EntryKey { probe: "throughput".into(), phase: "idle".into(), variant: Some("basic".into()) };
        let c = cell_with(Some(ratios(9.0, Some(9.0), Some(1.5), vec![])), None);
        assert_eq!(sentence(&k, &c, "B", "A").unwrap(), "ops per second under `idle` (throughput basic): B completes 1.50× as many as A.");
    }

    #[test]
    fn words() {
        assert_eq!(ratio_words(3.2), "3.20× higher than");
        assert_eq!(ratio_words(1.0 / 320_000.0), "320000× lower than");
        assert_eq!(ratio_words(1.001), "the same as");
    }
}
