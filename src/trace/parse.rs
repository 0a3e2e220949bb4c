//! Parser for ftrace's text output (`per_cpu/cpuN/trace`) into [`Event`]s.
//!
//! A line looks like
//! `   rtscope-hog-1234    [001] d.h1.   903.044888: irq_handler_entry: irq=26 name=ttyS0`:
//! the task current on the CPU (comm-pid), the CPU, flags (optional), the timestamp in
//! seconds with µs (or ns) digits — CLOCK_MONOTONIC with `trace_clock=mono` — the event name
//! and its fields. Only the events attribution needs are decoded; others are kept as
//! [`EventKind::Other`]. Lines that do not parse are skipped, never an error.

/// One decoded trace line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// Timestamp in ns (trace clock; `mono` = CLOCK_MONOTONIC).
    pub(crate) ts_ns: u64,
    pub(crate) cpu: usize,
    /// The task current on the CPU when the event fired (also inside interrupts).
    pub(crate) comm: String,
    pub(crate) pid: u32,
    pub(crate) kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EventKind {
    Switch {
        prev_comm: String,
        prev_pid: u32,
        prev_prio: i32,
        next_comm: String,
        next_pid: u32,
        next_prio: i32,
    },
    /// `target_cpu`: the CPU the woken task is queued on (None when the line lacks it).
    Wakeup {
        comm: String,
        pid: u32,
        prio: i32,
        target_cpu: Option<u32>,
    },
    IrqEntry {
        irq: u32,
        name: String,
    },
    IrqExit {
        irq: u32,
    },
    SoftirqEntry {
        vec: u32,
        name: String,
    },
    SoftirqExit {
        vec: u32,
    },
    /// x86 `irq_vectors` entries: `local_timer`, `reschedule`, `call_function`, ...
    VectorEntry {
        name: String,
    },
    VectorExit {
        name: String,
    },
    /// `power/cpu_idle`: CPU `cpu_id` enters idle state `state`, or leaves idle (`None`: the
    /// kernel's `PWR_EVENT_EXIT`, state 4294967295).
    CpuIdle {
        state: Option<u32>,
        cpu_id: u32,
    },
    Other {
        name: String,
    },
}

/// Parses every event line of a trace text; headers and odd lines are skipped.
pub(crate) fn parse_trace(text: &str) -> Vec<Event> {
    text.lines().filter_map(parse_line).collect()
}

/// Parses one line, `None` when it is not an event line.
/// Whether the trace text's header says every event written is still in the buffer
/// (`# entries-in-buffer/entries-written: N/N`): then the trace reaches back to when the
/// buffer was last cleared. False without the header.
pub(crate) fn nothing_overwritten(text: &str) -> bool {
    text.lines().take_while(|l| l.starts_with('#')).find_map(|l| {
        let counts = l.split("entries-in-buffer/entries-written:").nth(1)?.split_whitespace().next()?;
        let (held, written) = counts.split_once('/')?;
        Some(held.parse::<u64>().ok()? == written.parse::<u64>().ok()?)
    }) == Some(true)
}

pub(crate) fn parse_line(line: &str) -> Option<Event> {
    if line.trim_start().starts_with('#') {
        return None;
    }
    // The CPU field `[NNN]` separates the task from the rest; comm may hold spaces or '['.
    let (task, cpu, rest) = split_cpu(line)?;
    let (comm, pid) = task.trim().rsplit_once('-')?;
    let pid: u32 = pid.parse().ok()?;
    let mut toks = rest.split_whitespace().peekable();
    // Optional flags column, then `SECS.FRAC:`.
    let mut ts = None;
    for t in toks.by_ref() {
        if let Some(v) = t.strip_suffix(':').and_then(parse_ts) {
            ts = Some(v);
            break;
        }
    }
    let ts_ns = ts?;
    let name = toks.next()?.strip_suffix(':')?.to_string();
    let payload: Vec<&str> = toks.collect();
    let f = Fields::new(&payload);
    let kind = match name.as_str() {
        "sched_switch" => EventKind::Switch {
            prev_comm: f.get("prev_comm")?.to_string(),
            prev_pid: f.num("prev_pid")?,
            prev_prio: f.num("prev_prio")?,
            next_comm: f.get("next_comm")?.to_string(),
            next_pid: f.num("next_pid")?,
            next_prio: f.num("next_prio")?,
        },
        "sched_wakeup" | "sched_wakeup_new" => {
            EventKind::Wakeup { comm: f.get("comm")?.to_string(), pid: f.num("pid")?, prio: f.num("prio")?, target_cpu: f.num("target_cpu") }
        }
        "irq_handler_entry" => EventKind::IrqEntry { irq: f.num("irq")?, name: f.get("name").unwrap_or("?").to_string() },
        "irq_handler_exit" => EventKind::IrqExit { irq: f.num("irq")? },
        "softirq_entry" => EventKind::SoftirqEntry { vec: f.num("vec")?, name: softirq_name(&payload) },
        "softirq_exit" => EventKind::SoftirqExit { vec: f.num("vec")? },
        "cpu_idle" => {
            let state: u32 = f.num("state")?;
            EventKind::CpuIdle { state: (state != u32::MAX).then_some(state), cpu_id: f.num("cpu_id")? }
        }
        n if n.ends_with("_entry") && !n.starts_with("hrtimer") && !n.starts_with("timer") => {
            EventKind::VectorEntry { name: n.trim_end_matches("_entry").to_string() }
        }
        n if n.ends_with("_exit") && !n.starts_with("hrtimer") && !n.starts_with("timer") => {
            EventKind::VectorExit { name: n.trim_end_matches("_exit").to_string() }
        }
        _ => EventKind::Other { name },
    };
    Some(Event { ts_ns, cpu, comm: comm.to_string(), pid, kind })
}

/// Finds ` [NNN] ` and returns (task part, cpu, rest).
fn split_cpu(line: &str) -> Option<(&str, usize, &str)> {
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(off) = line[i..].find('[') {
        let open = i + off;
        if let Some(close_off) = line[open + 1..].find(']') {
            let close = open + 1 + close_off;
            let inner = &line[open + 1..close];
            let spaced = open > 0 && bytes[open - 1] == b' ' && bytes.get(close + 1).is_none_or(|b| *b == b' ');
            if spaced && !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) {
                return Some((&line[..open], inner.parse().ok()?, &line[close + 1..]));
            }
        }
        i = open + 1;
    }
    None
}

/// `903.044888` → ns; µs (6 digits) or ns (9 digits) fractions.
fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let frac_ns: u64 = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// `vec=7 [action=SCHED]` → `SCHED`.
fn softirq_name(payload: &[&str]) -> String {
    payload.iter().find_map(|t| t.strip_prefix("[action=").map(|a| a.trim_end_matches(']').to_string())).unwrap_or_else(|| "?".into())
}

/// `key=value` fields where values may contain spaces (`prev_comm=Web Content`): a token
/// that starts with `lowercase_key=` opens a field, other tokens continue the previous one.
struct Fields<'a> {
    fields: Vec<(&'a str, String)>,
}

impl<'a> Fields<'a> {
    fn new(tokens: &[&'a str]) -> Fields<'a> {
        let mut fields: Vec<(&'a str, String)> = Vec::new();
        for t in tokens {
            if *t == "==>" {
                continue;
            }
            match t.split_once('=') {
                Some((k, v)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') => fields.push((k, v.to_string())),
                _ => {
                    if let Some(last) = fields.last_mut() {
                        last.1.push(' ');
                        last.1.push_str(t);
                    }
                }
            }
        }
        Fields { fields }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
    }

    fn num<T: std::str::FromStr>(&self, key: &str) -> Option<T> {
        // Numbers are one word; a trailing `[action=BLOCK]` is not part of `vec=4`.
        self.get(key)?.split_whitespace().next()?.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_that_lost_nothing_says_so_in_its_header() {
        assert!(nothing_overwritten("# tracer: nop\n#\n# entries-in-buffer/entries-written: 174/174   #P:2\n#\n"));
        assert!(!nothing_overwritten("# tracer: nop\n#\n# entries-in-buffer/entries-written: 170/9012   #P:2\n"));
        assert!(!nothing_overwritten("<idle>-0 [001] d..2. 1.000000: sched_switch: x\n"), "no header: unknown");
    }

    #[test]
    fn parses_captured_lines() {
        let t = "# tracer: nop\n\
 qemu-system-x86-28559   [001] d..2.   903.044911: sched_switch: prev_comm=qemu-system-x86 prev_pid=28559 prev_prio=120 prev_state=R ==> next_comm=memfd:sealed-91 next_pid=13810 next_prio=120\n\
 qemu-system-x86-28558   [001] d.h..   903.046129: irq_handler_entry: irq=36 name=virtio1-req.0\n\
 qemu-system-x86-28558   [001] ..s..   903.046137: softirq_entry: vec=4 [action=BLOCK]\n\
           rustc-30505   [001] d.h..   903.048004: local_timer_entry: vector=236\n\
           rustc-30505   [001] d.h..   903.048006: hrtimer_expire_entry: hrtimer=00000000b6800773 function=tick_nohz_handler now=903048004615\n\
 qemu-system-x86-28558   [001] d.s4.   903.046154: sched_wakeup: comm=bash pid=30699 prio=120 target_cpu=000\n";
        let ev = parse_trace(t);
        assert_eq!(ev.len(), 6);
        assert_eq!(ev[0].ts_ns, 903_044_911_000);
        assert_eq!(ev[0].cpu, 1);
        assert_eq!((ev[0].comm.as_str(), ev[0].pid), ("qemu-system-x86", 28559));
        assert_eq!(
            ev[0].kind,
            EventKind::Switch {
                prev_comm: "qemu-system-x86".into(),
                prev_pid: 28559,
                prev_prio: 120,
                next_comm: "memfd:sealed-91".into(),
                next_pid: 13810,
                next_prio: 120
            }
        );
        assert_eq!(ev[1].kind, EventKind::IrqEntry { irq: 36, name: "virtio1-req.0".into() });
        assert_eq!(ev[2].kind, EventKind::SoftirqEntry { vec: 4, name: "BLOCK".into() });
        assert_eq!(ev[3].kind, EventKind::VectorEntry { name: "local_timer".into() });
        assert_eq!(ev[4].kind, EventKind::Other { name: "hrtimer_expire_entry".into() });
        assert_eq!(ev[5].kind, EventKind::Wakeup { comm: "bash".into(), pid: 30699, prio: 120, target_cpu: Some(0) });
        let idle = parse_trace("          <idle>-0       [001] d..1.    50.000100: cpu_idle: state=1 cpu_id=1\n          <idle>-0       [001] d..1.    50.000300: cpu_idle: state=4294967295 cpu_id=1\n");
        assert_eq!(idle[0].kind, EventKind::CpuIdle { state: Some(1), cpu_id: 1 });
        assert_eq!(idle[1].kind, EventKind::CpuIdle { state: None, cpu_id: 1 });
    }

    #[test]
    fn comm_with_spaces_dashes_and_brackets() {
        let l = "  Web Content-[x]-77   [003] ....  12.000001000: sched_switch: prev_comm=Web Content-[x] prev_pid=77 prev_prio=120 prev_state=S ==> next_comm=swapper/3 next_pid=0 next_prio=120";
        let e = parse_line(l).unwrap();
        assert_eq!((e.comm.as_str(), e.pid, e.cpu, e.ts_ns), ("Web Content-[x]", 77, 3, 12_000_001_000));
        match e.kind {
            EventKind::Switch { prev_comm, next_comm, .. } => {
                assert_eq!(prev_comm, "Web Content-[x]");
                assert_eq!(next_comm, "swapper/3");
            }
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn garbage_is_skipped() {
        assert!(parse_trace("garbage\n[001]\n  x-1 [002] 1.5: \n a-b [001] zz: y\n").is_empty());
        assert_eq!(parse_ts("1.000001"), Some(1_000_001_000));
        assert_eq!(parse_ts("1.0000000001"), None);
    }
}
