//! Interrupts: whether irqbalance runs, and which busy device IRQs may fire on the measured
//! CPUs (`/proc/interrupts` counts against `/proc/irq/N/smp_affinity_list`).
//!
//! A device interrupt that lands on a measured CPU runs its hard handler (and on non-RT
//! kernels its softirq work) before the woken real-time task; irqbalance moves IRQs around
//! at any time, undoing manual affinity.

use super::{cpus_in, evidence, fmt_cpus, Ctx, Evidence, Finding, Severity};

/// An IRQ that has fired at least this often since boot counts as busy.
pub(crate) const BUSY: u64 = 1000;

/// One numbered line of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IrqLine {
    pub(crate) irq: u32,
    /// Count per CPU number (from the `CPUn` header).
    pub(crate) per_cpu: Vec<(usize, u64)>,
    /// Chip, hardware IRQ and device names, joined by spaces.
    pub(crate) desc: String,
}

impl IrqLine {
    pub(crate) fn total(&self) -> u64 {
        self.per_cpu.iter().map(|(_, n)| n).sum()
    }

    /// The device name, the last word of the description.
    pub(crate) fn device(&self) -> &str {
        self.desc.split_whitespace().last().unwrap_or("?")
    }
}

/// Parses the numbered IRQ lines of `/proc/interrupts`; named lines (LOC, RES, ...) and
/// lines that do not parse are skipped.
pub(crate) fn parse_interrupts(text: &str) -> Vec<IrqLine> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else { return Vec::new() };
    let cols: Vec<usize> = header.split_whitespace().filter_map(|c| c.strip_prefix("CPU")?.parse().ok()).collect();
    let mut out = Vec::new();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else { continue };
        let Ok(irq) = label.trim().parse::<u32>() else { continue };
        let mut toks = rest.split_whitespace();
        let mut per_cpu = Vec::with_capacity(cols.len());
        for &cpu in &cols {
            match toks.clone().next().and_then(|t| t.parse::<u64>().ok()) {
                Some(n) => {
                    toks.next();
                    per_cpu.push((cpu, n));
                }
                None => break,
            }
        }
        let desc = toks.collect::<Vec<_>>().join(" ");
        out.push(IrqLine { irq, per_cpu, desc });
    }
    out
}

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    vec![irqbalance(ctx), affinity(ctx)]
}

/// Whether a process named irqbalance runs (the first found in `/proc/*/comm`).
fn irqbalance(ctx: &Ctx) -> Finding {
    let mut found: Option<(String, String)> = None;
    let mut scanned = 0;
    for pid in ctx.list("/proc").into_iter().filter(|n| n.bytes().all(|b| b.is_ascii_digit())) {
        let path = format!("/proc/{pid}/comm");
        if let Some(comm) = ctx.value(&path) {
            scanned += 1;
            if comm == "irqbalance" {
                found = Some((path, comm));
                break;
            }
        }
    }
    match found {
        Some((path, comm)) => Finding::new("irq.irqbalance", Severity::Warn, "irqbalance is running")
            .why(
                "irqbalance periodically rewrites IRQ affinities to spread load, so device \
                 interrupts can be moved onto the measured CPUs at any moment, undoing isolation.",
            )
            .fix(format!(
                "`systemctl disable --now irqbalance`, or keep it off the measured CPUs with \
                 IRQBALANCE_BANNED_CPULIST={} in /etc/default/irqbalance (or /etc/sysconfig/irqbalance).",
                ctx.cpus_str()
            ))
            .evidence(vec![evidence(&path, Some(&comm))]),
        None => Finding::new("irq.irqbalance", Severity::Ok, "irqbalance is not running")
            .why("IRQ affinities stay where they were set.")
            .evidence(vec![Evidence { path: "/proc/*/comm".into(), value: format!("{scanned} processes, none named irqbalance") }]),
    }
}

/// A busy IRQ whose affinity includes measured CPUs: its line, its affinity list and its
/// count on the measured CPUs.
type Hit = (IrqLine, String, u64);

/// The busy IRQs that may fire on the measured CPUs, the most frequent there first.
fn busy_irqs_on_measured(ctx: &Ctx, text: &str) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    for l in parse_interrupts(text) {
        if l.total() < BUSY {
            continue;
        }
        let aff_path = format!("/proc/irq/{}/smp_affinity_list", l.irq);
        let Some(aff) = ctx.value(&aff_path) else { continue };
        let aff_cpus = cpus_in(&aff);
        if aff_cpus.iter().any(|c| ctx.cpus.contains(c)) {
            let on_measured: u64 = l.per_cpu.iter().filter(|(c, _)| ctx.cpus.contains(c)).map(|(_, n)| n).sum();
            hits.push((l, aff, on_measured));
        }
    }
    hits.sort_by(|a, b| b.2.cmp(&a.2).then(b.0.total().cmp(&a.0.total())));
    hits
}

/// Busy device IRQs whose affinity includes measured CPUs.
fn affinity(ctx: &Ctx) -> Finding {
    let (int_path, text) = ("/proc/interrupts", ctx.text("/proc/interrupts"));
    let Some(text) = text else {
        return Finding::new("irq.affinity", Severity::Info, "IRQ counts are not exposed by this kernel")
            .why("Without /proc/interrupts rtscope cannot tell which device interrupts reach the measured CPUs.")
            .evidence(vec![evidence(int_path, None)]);
    };
    let hits = busy_irqs_on_measured(ctx, &text);
    let cpus = ctx.cpus_str();
    let mut ev = vec![ctx.param_evidence("irqaffinity")];
    let f = if hits.is_empty() {
        Finding::new("irq.affinity", Severity::Ok, format!("No busy device IRQ (≥{BUSY} since boot) may fire on CPUs {cpus}"))
            .why("Device interrupts are steered to other CPUs, so their handlers do not delay the measured ones.")
    } else {
        for (l, aff, on) in hits.iter().take(10) {
            ev.push(Evidence {
                path: format!("/proc/irq/{}/smp_affinity_list", l.irq),
                value: format!("{aff} ({}, {} interrupts since boot, {on} on CPUs {cpus})", l.device(), l.total()),
            });
        }
        busy_irqs(ctx, &hits)
    };
    f.evidence(ev)
}

/// The fix for device IRQs on the measured CPUs `cpus`: steer `irqs` to the housekeeping
/// CPUs `hk` (also the advice of a traced window an IRQ held: `trace::advice`).
pub(crate) fn fix_irq_affinity(irqs: &[String], hk: &str, cpus: &str) -> String {
    format!(
        "`for i in {}; do echo {hk} > /proc/irq/$i/smp_affinity_list; done` (managed IRQs \
         of multi-queue devices refuse this: use `isolcpus=managed_irq,{cpus}`), and boot \
         with `irqaffinity={hk}` so new IRQs start there.",
        irqs.join(" ")
    )
}

/// The warning for busy IRQs that may fire on measured CPUs (`hits` not empty), with the
/// commands that steer them to the housekeeping CPUs.
fn busy_irqs(ctx: &Ctx, hits: &[Hit]) -> Finding {
    let cpus = ctx.cpus_str();
    let hk = ctx.housekeeping();
    let irqs: Vec<String> = hits.iter().map(|(l, _, _)| l.irq.to_string()).collect();
    let names: Vec<String> = hits.iter().take(5).map(|(l, _, _)| format!("{} ({})", l.irq, l.device())).collect();
    let fix = if hk.is_empty() {
        "Every online CPU is measured, so there is nowhere to move IRQs: leave at least one \
         CPU (e.g. 0) out of --cpus for housekeeping and steer IRQs there."
            .to_string()
    } else {
        fix_irq_affinity(&irqs, &fmt_cpus(&hk), &cpus)
    };
    Finding::new("irq.affinity", Severity::Warn, format!("{} busy IRQ(s) may fire on CPUs {cpus}: {}", hits.len(), names.join(", ")))
        .why(
            "A device interrupt on a measured CPU runs its handler — and on non-RT kernels the \
         softirq work it raises — before the woken real-time task can run.",
        )
        .fix(fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_interrupts() {
        let t = "           CPU0       CPU1       \n  \
                 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n  \
                 28:       5000         7 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config\n \
                 NMI:          0          0   Non-maskable interrupts\n \
                 ERR:          0\n  \
                 29:          3\n";
        let v = parse_interrupts(t);
        assert_eq!(v.len(), 3);
        assert_eq!(v[1].irq, 28);
        assert_eq!(v[1].per_cpu, vec![(0, 5000), (1, 7)]);
        assert_eq!(v[1].total(), 5007);
        assert_eq!(v[1].device(), "virtio0-config");
        assert_eq!(v[2].per_cpu, vec![(0, 3)]);
    }

    #[test]
    fn odd_input_does_not_panic() {
        assert!(parse_interrupts("").is_empty());
        assert!(parse_interrupts("garbage\n:::\n12: x y").len() == 1);
    }
}
