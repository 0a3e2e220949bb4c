use super::bounds::buckets;
use super::*;
use proptest::prelude::*;

fn block(thread: usize, values: &[u64]) -> Block {
    let l = Line::new("result")
        .with("n", thread)
        .with("probe", "timer")
        .with("variant", "-")
        .with("thread", thread)
        .with("cpu", thread)
        .with("interval_ns", 1000)
        .with("samples", values.len())
        .with("overruns", 1)
        .with("min_ns", values.iter().min().unwrap())
        .with("max_ns", values.iter().max().unwrap())
        .with("sum", values.iter().sum::<u64>())
        .with("sumsq", values.iter().map(|v| (*v as u128) * (*v as u128)).sum::<u128>())
        .with("hist", buckets(values).split(',').count())
        .with("tail", values.len())
        .with("tail_k", 8)
        .with("worst", 2)
        .with("sec", 1)
        .with("width_s", 1)
        .with("setup", 0)
        .with("stopped", 0);
    let mut b = Block::start(&l, &Limits::timer(8, 2, 1_000_000_000, 1000)).unwrap();
    let mut sorted = values.to_vec();
    sorted.sort();
    b.add(&Line::new("hist").with("b", buckets(&sorted))).unwrap();
    let tail: Vec<String> = sorted.iter().rev().enumerate().map(|(i, v)| format!("{v}:{i}:{i}:{thread}")).collect();
    b.add(&Line::new("tail").with("s", tail.join(","))).unwrap();
    let sum: u64 = values.iter().sum();
    b.add(&Line::new("sec").with("s", format!("0:{}:{}:{}:{sum}", values.len(), sorted[0], sorted[sorted.len() - 1]))).unwrap();
    b.finish().unwrap();
    b
}

#[test]
fn entries_per_thread_and_merged() {
    let rs = results_of(&[block(0, &[10, 30, 20]), block(1, &[5, 40])], "idle").unwrap();
    assert_eq!(rs.len(), 3);
    let m = &rs[2];
    assert_eq!((m.thread, m.samples, m.overruns, m.min_ns.0, m.max_ns.0), (None, 5, 2, 5, 40));
    assert_eq!(m.histogram.iter().map(|b| b.count).sum::<u64>(), 5);
    assert!((m.mean_ns - 21.0).abs() < 1e-9);
    assert_eq!(m.percentiles_ns["50"], Nanos(20));
    assert_eq!(m.worst.iter().map(|w| w.latency_ns.0).collect::<Vec<_>>(), [40, 30]);
    assert_eq!((m.per_second[0].count, m.per_second[0].min_ns.0, m.per_second[0].max_ns.0), (5, 5, 40));
    assert_eq!(rs[0].percentiles_ns["99"], Nanos(30));
}

proptest! {
    /// Agent blocks merged through the one type give the entry of one
    /// block that holds every sample: counts, buckets, percentiles,
    /// extremes, mean, the tail's latencies and the per-second counts
    /// (distinct values: the helper writes one bucket per value).
    #[test]
    fn merging_blocks_equals_one_block_of_everything(
        values in proptest::collection::btree_set(1u64..5_000_000, 1..=8),
        cuts in proptest::collection::vec(0usize..8, 0..3),
    ) {
        let all: Vec<u64> = values.into_iter().collect();
        let mut at: Vec<usize> = cuts.into_iter().map(|c| c % all.len()).chain([0, all.len()]).collect();
        at.sort();
        at.dedup();
        let blocks: Vec<Block> = at.windows(2).enumerate().map(|(t, w)| block(t, &all[w[0]..w[1]])).collect();
        let merged = results_of(&blocks, "idle").unwrap().pop().unwrap();
        let one = results_of(&[block(0, &all)], "idle").unwrap().remove(0);
        prop_assert_eq!(merged.samples, one.samples);
        prop_assert_eq!(&merged.histogram, &one.histogram);
        prop_assert_eq!(&merged.percentiles_ns, &one.percentiles_ns);
        prop_assert_eq!((merged.min_ns, merged.max_ns), (one.min_ns, one.max_ns));
        prop_assert!((merged.mean_ns - one.mean_ns).abs() <= 1e-9 * one.mean_ns);
        let lat = |r: &ProbeResult| r.tail.samples.iter().map(|s| s.0).collect::<Vec<_>>();
        prop_assert_eq!(lat(&merged), lat(&one));
        prop_assert_eq!(merged.per_second.iter().map(|s| s.count).collect::<Vec<_>>(), one.per_second.iter().map(|s| s.count).collect::<Vec<_>>());
        prop_assert_eq!(merged.overruns, blocks.len() as u64, "one overrun per block");
    }
}

/// Three blocks of 2^63−1 samples of 100 ns merged (unchecked `+=`) to
/// fewer samples than one, with a mean of 300 ns: refused, naming the block.
#[test]
fn blocks_whose_merge_overflows_are_refused() {
    let n = crate::model::MAX_STORED;
    let big = |t: u64| {
        let l = Line::new("result")
            .with("n", t)
            .with("probe", "timer")
            .with("variant", "-")
            .with("thread", t)
            .with("cpu", 0)
            .with("interval_ns", 1)
            .with("samples", n)
            .with("overruns", 0)
            .with("min_ns", 100)
            .with("max_ns", 100)
            .with("sum", 100 * n as u128)
            .with("sumsq", 10_000 * n as u128)
            .with("hist", 1)
            .with("tail", 1)
            .with("tail_k", 1)
            .with("worst", 1)
            .with("sec", 0)
            .with("width_s", 1)
            .with("setup", 0);
        // A plan long enough for 2^63−1 samples at 1 ns (no agent plan is).
        let mut b = Block::start(&l, &Limits::timer(8, 2, u64::MAX, 1)).unwrap();
        b.add(&Line::new("hist").with("b", format!("100:100:{n}"))).unwrap();
        b.add(&Line::new("tail").with("s", "100:0:0:0")).unwrap();
        b.finish().unwrap();
        b
    };
    let e = results_of(&[big(0), big(1), big(2)], "idle").unwrap_err();
    assert!(e.starts_with("result n=1: samples"), "{e}");
    assert_eq!(results_of(&[big(0)], "idle").unwrap()[1].samples, n, "one block alone is whole");
}

#[test]
fn a_block_that_disagrees_with_its_header_is_refused() {
    let mut b = block(0, &[10, 20]);
    b.s.samples = 3;
    assert!(b.finish().unwrap_err().to_string().contains("sum to 2"));
    let mut b = block(0, &[10, 20]);
    assert!(b.add(&Line::new("hist").with("b", "30:30:1")).unwrap_err().to_string().contains("more buckets than hist=2"));
    (b.want_hist, b.want_sec) = (10, 10);
    assert!(b.add(&Line::new("hist").with("b", "5:5:1")).unwrap_err().to_string().contains("does not follow"));
    assert!(b.add(&Line::new("sec").with("s", "0:1:1:1:1")).unwrap_err().to_string().contains("twice"));
    assert!(b.add(&Line::new("hist").with("b", "90:80:1")).unwrap_err().to_string().contains("reversed"));
}

/// The lines of one honest block: its header, then its buckets, tail and
/// per-second slots, and `end`.
fn honest_lines(thread: usize, values: &[u64], width_s: u64) -> Vec<Line> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let tail: Vec<u64> = sorted.iter().rev().take(8).copied().collect();
    let mut sec: BTreeMap<u64, (u64, u64, u64, u128)> = BTreeMap::new();
    for (i, v) in values.iter().enumerate() {
        let t = (i as u64 % 4) * width_s;
        let e = sec.entry(t).or_insert((0, u64::MAX, 0, 0));
        *e = (e.0 + 1, e.1.min(*v), e.2.max(*v), e.3 + u128::from(*v));
    }
    let header = Line::new("result")
        .with("n", thread)
        .with("probe", "timer")
        .with("variant", "-")
        .with("thread", thread)
        .with("cpu", thread % 2)
        .with("interval_ns", 1000)
        .with("samples", values.len())
        .with("overruns", 0)
        .with("min_ns", sorted[0])
        .with("max_ns", sorted[sorted.len() - 1])
        .with("sum", values.iter().map(|v| u128::from(*v)).sum::<u128>())
        .with("sumsq", values.iter().map(|v| u128::from(*v) * u128::from(*v)).sum::<u128>())
        .with("hist", buckets(values).split(',').count())
        .with("tail", tail.len())
        .with("tail_k", 8)
        .with("worst", 2)
        .with("sec", sec.len())
        .with("width_s", width_s)
        .with("setup", 0);
    let mut lines = vec![header];
    lines.push(Line::new("hist").with("b", buckets(&sorted)));
    lines.push(Line::new("tail").with("s", tail.iter().enumerate().map(|(i, v)| format!("{v}:{i}:{i}:{}", thread % 2)).collect::<Vec<_>>().join(",")));
    lines.push(Line::new("sec").with("s", sec.iter().map(|(t, (c, lo, hi, sum))| format!("{t}:{c}:{lo}:{hi}:{sum}")).collect::<Vec<_>>().join(",")));
    lines.push(Line::new("end"));
    lines
}

/// What an adversary does to honest lines (their checksums stay valid:
/// the link is not the adversary, the agent is).
#[derive(Debug, Clone)]
enum Change {
    /// Set field `key` (by index) of line `line` to `value`.
    Field {
        line: usize,
        key: usize,
        value: u128,
    },
    /// Replace the `nth` number inside a tuple field with `value`.
    Tuple {
        line: usize,
        nth: usize,
        value: u128,
    },
    Drop {
        line: usize,
    },
    Repeat {
        line: usize,
    },
    Swap {
        a: usize,
        b: usize,
    },
}

fn edge() -> impl Strategy<Value = u128> {
    prop_oneof![
        0u128..4,
        (0u128..10_000),
        Just(u128::from(u64::MAX)),
        Just(u128::from(u64::MAX) + 1),
        Just(1u128 << 63),
        Just((1u128 << 63) - 1),
        Just(u128::MAX),
        any::<u64>().prop_map(u128::from),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0usize..40, 0usize..20, edge()).prop_map(|(line, key, value)| Change::Field { line, key, value }),
        (0usize..40, 0usize..40, edge()).prop_map(|(line, nth, value)| Change::Tuple { line, nth, value }),
        (0usize..40).prop_map(|line| Change::Drop { line }),
        (0usize..40).prop_map(|line| Change::Repeat { line }),
        (0usize..40, 0usize..40).prop_map(|(a, b)| Change::Swap { a, b }),
    ]
}

fn apply(lines: &mut Vec<Line>, c: &Change) {
    if lines.is_empty() {
        return;
    }
    let n = lines.len();
    match *c {
        Change::Field { line, key, value } => {
            let l = &mut lines[line % n];
            if !l.fields.is_empty() {
                let k = key % l.fields.len();
                l.fields[k].1 = value.to_string();
            }
        }
        Change::Tuple { line, nth, value } => {
            let l = &mut lines[line % n];
            if let Some((_, v)) = l.fields.iter_mut().find(|(k, _)| k == "b" || k == "s") {
                let mut out = String::new();
                for (count, part) in v.split_inclusive([':', ',']).enumerate() {
                    let (num, sep) = part.split_at(part.len() - usize::from(part.ends_with([':', ','])));
                    if count == nth {
                        out.push_str(&value.to_string());
                    } else {
                        out.push_str(num);
                    }
                    out.push_str(sep);
                }
                *v = out;
            }
        }
        Change::Drop { line } => {
            lines.remove(line % n);
        }
        Change::Repeat { line } => {
            let l = lines[line % n].clone();
            lines.insert(line % n, l);
        }
        Change::Swap { a, b } => lines.swap(a % n, b % n),
    }
}

/// As the session takes blocks: `result` starts one, `end` finishes it;
/// the first refusal ends the run, keeping the blocks finished before.
fn take(lines: &[Line], lim: &Limits) -> Vec<Block> {
    let mut done = Vec::new();
    let mut open: Option<Block> = None;
    for l in lines {
        let step = match (l.kind.as_str(), open.as_mut()) {
            ("result", None) => Block::start(l, lim).map(|b| open = Some(b)),
            ("result", Some(_)) => Err(Refusal::Malformed("a result inside a result".into())),
            ("end", Some(b)) => b.finish().map(|()| done.push(open.take().unwrap())),
            ("end", None) => Err(Refusal::Malformed("end outside a block".into())),
            (_, Some(b)) => b.add(l),
            (_, None) => Err(Refusal::Malformed("a line outside a block".into())),
        };
        if step.is_err() {
            break;
        }
        if let Some(b) = open.as_ref() {
            // Memory is bounded by the plan before it is spent.
            assert!(b.s.buckets.len() as u64 <= MAX_BUCKETS.min(b.s.samples));
            assert!(b.tail.len() <= b.tail_k && b.tail_k as u64 <= lim.tail);
            assert!(b.sec.len() as u64 <= lim.seconds(b.s.per_second_width_s).min(b.s.samples));
            assert!(b.setup.len() as u64 <= MAX_SETUP);
        }
    }
    done
}

/// The invariants of a stored entry, checked here without the one type
/// (whose checks are what is under test).
fn holds(r: &ProbeResult, lim: &Limits) -> Result<(), String> {
    let (lo, hi) = (r.min_ns.0, r.max_ns.0);
    let hist: u64 = r.histogram.iter().map(|b| b.count).sum();
    if hist != r.samples {
        return Err(format!("histogram sums to {hist} of {} samples", r.samples));
    }
    for w in r.histogram.windows(2) {
        if w[0].hi_ns >= w[1].lo_ns {
            return Err("buckets overlap or descend".into());
        }
    }
    if r.per_second.iter().map(|s| s.count).sum::<u64>() != r.samples {
        return Err("per-second counts do not sum to the samples".into());
    }
    if r.samples == 0 {
        return Ok(());
    }
    if lo > hi || !(lo as f64..=hi as f64).contains(&r.mean_ns) || !r.stddev_ns.is_finite() || r.stddev_ns < 0.0 {
        return Err(format!("min {lo} max {hi} mean {} sd {}", r.mean_ns, r.stddev_ns));
    }
    if r.histogram.iter().any(|b| b.count > 0 && (b.hi_ns.0 < lo || b.lo_ns.0 > hi)) {
        return Err("a bucket outside [min, max]".into());
    }
    if r.percentiles_ns.values().any(|p| p.0 < lo || p.0 > hi) {
        return Err(format!("a percentile outside [{lo}, {hi}]: {:?}", r.percentiles_ns));
    }
    if r.per_second.iter().any(|s| s.count == 0 || s.min_ns > s.max_ns || s.min_ns.0 < lo || s.max_ns.0 > hi) {
        return Err("a per-second slot outside [min, max]".into());
    }
    let tail: Vec<u64> = r.tail.samples.iter().map(|t| t.0 .0).collect();
    if tail.iter().any(|t| *t < lo || *t > hi) || tail.windows(2).any(|w| w[0] < w[1]) || tail.len() as u64 > lim.tail.max(1) * 64 {
        return Err(format!("tail {tail:?} in [{lo}, {hi}]"));
    }
    if r.worst.iter().any(|w| w.latency_ns.0 < lo || w.latency_ns.0 > hi) || r.worst.len() as u64 > lim.worst.max(1) * 64 {
        return Err("a worst sample outside [min, max]".into());
    }
    Ok(())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// Hostile block sequences (honest blocks an adversarial agent
    /// changed, with valid checksums): never a panic, memory bounded by
    /// the plan while lines arrive, and what is stored holds every
    /// invariant of a result.
    #[test]
    fn hostile_blocks_store_nothing_broken(
        threads in proptest::collection::vec(proptest::collection::btree_set(1u64..5_000_000, 1..24), 1..4),
        width in 1u64..3,
        changes in proptest::collection::vec(change(), 0..6),
    ) {
        let lim = Limits::timer(8, 2, 10_000_000_000, 1000);
        let mut lines = Vec::new();
        for (t, values) in threads.iter().enumerate() {
            let values: Vec<u64> = values.iter().copied().collect();
            lines.extend(honest_lines(t, &values, width));
        }
        if changes.is_empty() {
            // Honest blocks are all taken.
            proptest::prop_assert_eq!(take(&lines, &lim).len(), threads.len());
        }
        for c in &changes {
            apply(&mut lines, c);
        }
        let blocks = take(&lines, &lim);
        if let Ok(results) = results_of(&blocks, "idle") {
            for r in &results {
                if let Err(e) = holds(r, &lim) {
                    proptest::prop_assert!(false, "{e}: stored from {changes:?}");
                }
            }
        }
    }
}
