//! Call-chain sampling while threshold tracing runs (`--trace-stacks HZ`).
//!
//! - [`Sampling::start`] opens one perf software-clock event per measured CPU
//!   (`sys::perf_event::CpuSampler`) and loads the kernel's text symbols from
//!   /proc/kallsyms ([`Kallsyms`]).
//! - The trace collector thread — never a measuring thread — drains the rings
//!   every millisecond ([`Sampling::drain`]) into a per-CPU history of the last
//!   [`HISTORY_NS`]; when a late sample is handed over, the history's samples
//!   around its window are symbolised ([`Sampling::window_samples`]) and go to
//!   the attribution, which puts each under the culprit that held the CPU at
//!   its time (`attribute::attribute_in`), and finds the gaps ([`gaps`]).
//!
//! What it can see: the kernel code path running at each sample (the
//! interrupted instruction and its callers), one sample every `1/HZ` of CPU
//! time, on every task of the CPU, the idle task included. What it cannot: a
//! user task's own frames (only its name: `[user] COMM`), anything shorter than
//! the period between two samples (a path is seen with a probability of its
//! share of the time), and code that runs with interrupts off — the sample
//! waits until they are back on, and lands on the path that re-enabled them
//! (which is what a gap reports).

use std::collections::VecDeque;

use crate::sys::perf_event::CpuSampler;

/// How far back the history of each CPU reaches: longer than any window
/// rtscope traces in practice (a 2 ms hog, a 600 µs console write).
pub(crate) const HISTORY_NS: u64 = 1_000_000_000;

/// At most this many samples per CPU in the history, whatever the rate.
const HISTORY_MAX: usize = 50_000;

/// Kernel frames kept per sample.
const MAX_STACK: u16 = 48;

/// Ring pages per CPU (256 KiB: at 4 kHz and ~200 bytes a sample, 300 ms).
const RING_PAGES: usize = 64;

/// A gap in the samples shorter than this past one period is sampling jitter.
pub(crate) const GAP_MIN_NS: u64 = 50_000;

/// The frame of kernel code whose function is not known (no symbols: `kptr_restrict`).
pub(crate) const KERNEL: &str = "[kernel]";

/// The kernel's text symbols, sorted by address, names in one string.
pub(crate) struct Kallsyms {
    addrs: Vec<(u64, u32)>,
    names: String,
}

impl Kallsyms {
    /// Reads /proc/kallsyms (under `$RTSCOPE_SYSROOT` in the tests, as doctor
    /// reads /proc); an error when it cannot be read or shows no addresses
    /// (`kptr_restrict`, not root).
    pub(crate) fn load() -> Result<Kallsyms, String> {
        let path = crate::sysinfo::SysRoot::from_env().path("/proc/kallsyms");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("/proc/kallsyms: {e}"))?;
        Kallsyms::from_text(&text)
    }

    /// [`Kallsyms::load`]'s rule on what it read: the symbols, or why there are none.
    pub(crate) fn from_text(text: &str) -> Result<Kallsyms, String> {
        let k = Kallsyms::parse(text);
        if k.addrs.is_empty() {
            return Err("/proc/kallsyms shows no addresses (kernel.kptr_restrict; run as root)".into());
        }
        Ok(k)
    }

    /// `ADDR TYPE NAME [MODULE]` lines; text symbols (`t`, `T`, `w`, `W`) with a non-zero address.
    pub(crate) fn parse(text: &str) -> Kallsyms {
        let mut addrs = Vec::new();
        let mut names = String::new();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let (Some(a), Some(ty), Some(name)) = (f.next(), f.next(), f.next()) else { continue };
            if !matches!(ty, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(a, 16) else { continue };
            if addr == 0 {
                continue;
            }
            addrs.push((addr, names.len() as u32));
            names.push_str(name);
            names.push('\n');
        }
        addrs.sort_by_key(|(a, _)| *a);
        Kallsyms { addrs, names }
    }

    /// The function holding `ip` (the closest symbol at or below it), or [`KERNEL`]: an
    /// address is never shown (it would give away where the kernel is loaded, which
    /// `kptr_restrict` hides).
    pub(crate) fn name(&self, ip: u64) -> String {
        let i = self.addrs.partition_point(|(a, _)| *a <= ip);
        match i.checked_sub(1).map(|k| self.addrs[k].1 as usize) {
            Some(off) => self.names[off..].split('\n').next().unwrap_or(KERNEL).to_string(),
            None => KERNEL.to_string(),
        }
    }
}

/// A sample ready for attribution: its time, task and symbolised kernel
/// frames, leaf first (empty: the CPU was in user code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sample {
    pub(crate) time_ns: u64,
    pub(crate) tid: u32,
    pub(crate) frames: Vec<String>,
}

/// One CPU's recent samples: time, tid and how many frames, and all their frames in one
/// queue, so keeping a sample allocates nothing once the queues have grown.
#[derive(Default)]
struct History {
    samples: VecDeque<(u64, u32, u16)>,
    frames: VecDeque<u64>,
}

impl History {
    fn push(&mut self, time_ns: u64, tid: u32, ips: &[u64]) {
        self.samples.push_back((time_ns, tid, ips.len() as u16));
        self.frames.extend(ips);
    }

    fn pop_front(&mut self) {
        if let Some((_, _, n)) = self.samples.pop_front() {
            self.frames.drain(..usize::from(n).min(self.frames.len()));
        }
    }

    /// Every sample with its frames, oldest first.
    fn iter(&self) -> impl Iterator<Item = (u64, u32, impl Iterator<Item = u64> + '_)> + '_ {
        let mut at = 0usize;
        self.samples.iter().map(move |&(t, tid, n)| {
            let from = at;
            at += usize::from(n);
            (t, tid, self.frames.range(from..at).copied())
        })
    }
}

/// Frames kept per sample of a witness CPU: the leaf tells user from kernel code, and a
/// chain shorter than this is whole, so an interrupt taken from user mode shows its
/// entry as the outermost frame ([`interrupted_user_mode`]).
const WITNESS_STACK: u16 = 8;

/// At most this many witness CPUs (see [`Sampling::start`]).
const WITNESS_MAX: usize = 3;

/// The sampling of a run: one sampler and one history per measured CPU, and per witness.
pub(crate) struct Sampling {
    pub(crate) period_ns: u64,
    cpus: Vec<(usize, CpuSampler, History)>,
    /// The CPUs sampled only as witnesses (not measured; see [`Sampling::start`]).
    pub(crate) witnesses: Vec<usize>,
    symbols: Kallsyms,
    pub(crate) samples: u64,
    pub(crate) lost: u64,
}

impl Sampling {
    /// Starts sampling `cpus` at `hz`; the error says why it cannot (and the run goes on
    /// without). The symbols come with [`Sampling::set_symbols`], read before the
    /// measurement starts (reading /proc/kallsyms during it delays the measured CPU).
    ///
    /// `witnesses`: other CPUs of a VM sampled too, with only the leaf frame kept, so a
    /// gap on a measured CPU can be compared with what the VM's other vCPUs did in it
    /// (`attribute::witnessed`): when the host stops the whole VM, every busy vCPU stops
    /// sampling at once. A witness that cannot be opened is left out, not an error.
    pub(crate) fn start(cpus: &[usize], witnesses: &[usize], hz: u32) -> Result<Sampling, String> {
        let period_ns = 1_000_000_000 / u64::from(hz.max(1));
        let symbols = Kallsyms { addrs: Vec::new(), names: String::new() };
        let mut out = Vec::new();
        for &cpu in cpus {
            let s = CpuSampler::open(cpu, period_ns, MAX_STACK, RING_PAGES).map_err(|e| {
                format!("perf_event_open (software clock, cpu {cpu}): {e}; needs root or kernel.perf_event_paranoid <= 0, and a kernel with PERF_EVENTS")
            })?;
            out.push((cpu, s, History::default()));
        }
        let mut witnessing = Vec::new();
        for &cpu in witnesses.iter().filter(|c| !cpus.contains(c)).take(WITNESS_MAX) {
            if let Ok(s) = CpuSampler::open(cpu, period_ns, WITNESS_STACK, RING_PAGES) {
                out.push((cpu, s, History::default()));
                witnessing.push(cpu);
            }
        }
        Ok(Sampling { period_ns, cpus: out, witnesses: witnessing, symbols, samples: 0, lost: 0 })
    }

    /// Takes the kernel's symbols ([`Kallsyms::load`], read without holding the sampling);
    /// until then (or when they cannot be read) frames are addresses. Returns why they
    /// cannot be read.
    pub(crate) fn set_symbols(&mut self, loaded: Result<Kallsyms, String>) -> Option<String> {
        match loaded {
            Ok(k) => {
                self.symbols = k;
                None
            }
            Err(e) => Some(format!("{e}: the samples count, their code paths are not shown (frames are [kernel], never an address)")),
        }
    }

    /// Moves what the rings hold into the histories and forgets what is older than [`HISTORY_NS`].
    pub(crate) fn drain(&mut self) {
        for (cpu, sampler, hist) in self.cpus.iter_mut() {
            let short = self.witnesses.contains(cpu);
            let d = sampler.drain(|t, tid, ips| hist.push(t, tid, if short { &ips[..ips.len().min(usize::from(WITNESS_STACK))] } else { ips }));
            self.samples += d.samples;
            self.lost += d.lost;
            let newest = hist.samples.back().map_or(0, |s| s.0);
            while hist.samples.front().is_some_and(|s| s.0 + HISTORY_NS < newest) || hist.samples.len() > HISTORY_MAX {
                hist.pop_front();
            }
        }
    }

    /// What every sampled CPU but `cpu` did from `start_ns` to `end_ns`: per CPU, its
    /// samples' times, tids and whether each was in user code, in time order — the
    /// evidence `attribute::witnessed` weighs.
    pub(crate) fn witness_samples(&self, cpu: usize, start_ns: u64, end_ns: u64) -> Vec<Vec<Witnessed>> {
        self.cpus
            .iter()
            .filter(|(c, _, _)| *c != cpu)
            .map(|(_, _, hist)| {
                let mut v: Vec<Witnessed> = hist
                    .iter()
                    .filter(|(t, _, _)| (start_ns..=end_ns).contains(t))
                    .map(|(time_ns, tid, ips)| {
                        let ips: Vec<u64> = ips.collect();
                        let whole = ips.len() < usize::from(WITNESS_STACK) && !self.symbols.addrs.is_empty();
                        let user = ips.is_empty() || (whole && interrupted_user_mode(&ips.iter().map(|&ip| self.symbols.name(ip)).collect::<Vec<_>>()));
                        Witnessed { time_ns, tid, user }
                    })
                    .collect();
                v.sort_by_key(|w| w.time_ns);
                v
            })
            .collect()
    }

    /// The samples of `cpu` from one period before `start_ns` (so a gap at the window's
    /// start is seen) to `end_ns`, symbolised, in time order.
    pub(crate) fn window_samples(&self, cpu: usize, start_ns: u64, end_ns: u64) -> Vec<Sample> {
        let Some((_, _, hist)) = self.cpus.iter().find(|(c, _, _)| *c == cpu) else { return Vec::new() };
        let from = start_ns.saturating_sub(2 * self.period_ns + GAP_MIN_NS);
        // From the last sample before `from` too, however old: a CPU that took none for a
        // long while before the window (the host did not run it) has its gap start there.
        let first = hist.samples.iter().rposition(|s| s.0 < from).unwrap_or(0);
        let symbolised = !self.symbols.addrs.is_empty();
        let mut v: Vec<Sample> = hist
            .iter()
            .skip(first)
            .filter(|(t, _, _)| *t <= end_ns)
            .map(|(time_ns, tid, ips)| {
                let mut frames: Vec<String> = Vec::new();
                for ip in ips {
                    // Without symbols every frame is "[kernel]": one says it all.
                    if symbolised || frames.is_empty() {
                        frames.push(if symbolised { self.symbols.name(ip) } else { KERNEL.to_string() });
                    }
                }
                Sample { time_ns, tid, frames }
            })
            .collect();
        v.sort_by_key(|s| s.time_ns);
        v
    }
}

/// Whether a sample's call chain is an interrupt's way back to user mode
/// (`irqentry_exit_to_user_mode` on x86, `el0_interrupt` on arm64): the interrupt came
/// while the CPU ran user code, with interrupts on. The gap it ends is then not the
/// task's: a clock due before the interrupt came would have fired in user code, so the
/// CPU did not run (a vCPU resumed with an IPI pending takes it first); one due during
/// the handler was held off by the handler. Without the handler's entry in the trace
/// (vectors are not in the default events) the two cannot be told apart: on a VM such
/// a gap is `not running (host, or interrupts off)`, never the user task's.
///
/// The same holds for a chain that is an interrupt handler with nothing under its entry
/// (x86 `asm_sysvec_*`, `asm_common_interrupt` as the outermost frame; from the kernel
/// the interrupted frames follow the entry): the interrupt came from user mode, and the
/// clock, held off only by the handler, fired where the handler turned interrupts on
/// (`handle_softirqs ← __irq_exit_rcu ← sysvec_apic_timer_interrupt`, seen in the kernel
/// lab on a host busy with builds: `sh` charged 88.9 ms of a 90.7 ms window with 9 of
/// 362 samples).
pub(crate) fn interrupted_user_mode(frames: &[String]) -> bool {
    frames.iter().any(|f| f.starts_with("irqentry_exit_to_user_mode") || f.starts_with("el0_interrupt") || f.starts_with("el0_irq"))
        || frames.last().is_some_and(|f| f.starts_with("asm_sysvec_") || f.starts_with("asm_common_interrupt"))
}

/// One sample of another CPU, as a witness sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Witnessed {
    pub(crate) time_ns: u64,
    pub(crate) tid: u32,
    /// The sample interrupted user code (no kernel frame), or an interrupt handler that
    /// interrupted user code ([`interrupted_user_mode`]).
    pub(crate) user: bool,
}

/// The pseudo-frame that ends a gap still open when the window ended: the CPU took no
/// sample from its due time to the window's end (the late thread's wake-up), so where
/// it resumed is unknown.
pub(crate) const OPEN_AT_END: &str = "(no sample before the window's end)";

/// How long a gap still open at the window's end must be: the clock that would end it
/// may fire just after the late thread woke, so a short one is not a gap; one this long
/// (and at least two periods) is.
const OPEN_GAP_MIN_NS: u64 = 1_000_000;

/// The stretches with no sample that end inside `[start_ns, end_ns]`: between
/// two samples `a`, `b` (in time order), the clock was due at `a + period` and
/// fired at `b`; a delay of at least [`GAP_MIN_NS`] is a gap. Each with its due
/// time and `b`'s time. A stretch from the last sample's due time to `end_ns` of at
/// least [`OPEN_GAP_MIN_NS`] and two periods is a gap too, ended by [`OPEN_AT_END`]
/// (a host stop that the late thread's timer ended before the sampling clock fired:
/// a 20 ms window with 0 of 82 samples was charged to the task before).
pub(crate) fn gaps(samples: &[Sample], period_ns: u64, start_ns: u64, end_ns: u64) -> Vec<(crate::model::trace::SampleGap, (u64, u64))> {
    let open_at_end = [OPEN_AT_END.to_string()];
    // The stretch after the last sample, when it is long enough to be a gap already.
    let open = samples
        .last()
        .filter(|s| end_ns.saturating_sub(s.time_ns + period_ns) >= OPEN_GAP_MIN_NS.max(2 * period_ns))
        .map(|s| (s.time_ns, end_ns, &open_at_end[..]));
    samples
        .windows(2)
        .map(|w| (w[0].time_ns, w[1].time_ns, &w[1].frames[..]))
        .chain(open)
        .filter_map(|(before, came, ended_by)| {
            let due = before + period_ns;
            let late = came.checked_sub(due)?;
            (late >= GAP_MIN_NS && came > start_ns && came <= end_ns).then(|| {
                let gap = crate::model::trace::SampleGap {
                    start_after_ns: crate::units::Nanos(due.saturating_sub(start_ns)),
                    length_ns: crate::units::Nanos(late),
                    ended_by: ended_by.to_vec(),
                    not_running: false,
                    maybe_interrupts_off: false,
                    witnessed_ns: None,
                };
                (gap, (due, came))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_names_the_function_holding_an_address() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81d35f00 t read_zero\nffffffff81d36000 T vfs_read\nffffffff82000000 D some_data\n0000000000000000 t hidden\nffffffff81d35000 t write_null [null]\n",
        );
        assert_eq!(k.name(0xffff_ffff_81d3_5f77), "read_zero");
        assert_eq!(k.name(0xffff_ffff_81d3_6000), "vfs_read");
        assert_eq!(k.name(0xffff_ffff_81d3_5001), "write_null");
        // Data symbols are not functions: the last text symbol below holds the address.
        assert_eq!(k.name(0xffff_ffff_8200_0010), "vfs_read");
        assert_eq!(k.name(0x10), "[kernel]", "never an address");
    }

    #[test]
    fn kallsyms_hidden_by_kptr_restrict_gives_no_symbols_and_says_why() {
        // /proc/kallsyms as root reads it under kernel.kptr_restrict=2: every address 0.
        let text = "0000000000000000 T _stext\n0000000000000000 t read_zero\n0000000000000000 T vfs_read [null]\n";
        let e = Kallsyms::from_text(text).err().expect("no symbols");
        assert!(e.contains("kptr_restrict"), "{e}");
        // The sampling keeps going without them and says so (`stacks.unavailable`).
        let said =
            Sampling { period_ns: 250_000, cpus: Vec::new(), witnesses: Vec::new(), symbols: Kallsyms::parse(""), samples: 0, lost: 0 }.set_symbols(Err(e));
        assert!(said.as_deref().is_some_and(|s| s.contains("kptr_restrict") && s.contains("never an address")), "{said:?}");
        // Without symbols a frame is [kernel], never the address it holds.
        let k = Kallsyms::parse(text);
        assert_eq!(k.name(0xffff_ffff_821f_3125), KERNEL);
        assert!(Kallsyms::from_text("ffffffff81000000 T _stext\n").is_ok());
    }

    fn s(t: u64, f: &str) -> Sample {
        Sample { time_ns: t, tid: 1, frames: vec![f.to_string()] }
    }

    #[test]
    fn a_held_off_sample_makes_a_gap_ending_where_it_landed() {
        // 250 µs period; the sample due at 1250 µs came at 1700 µs.
        let v = [s(750_000, "a"), s(1_000_000, "b"), s(1_700_000, "_raw_spin_unlock_irqrestore"), s(1_950_000, "c")];
        let g: Vec<_> = gaps(&v, 250_000, 900_000, 2_000_000).into_iter().map(|(g, _)| g).collect();
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].start_after_ns.0, 350_000);
        assert_eq!(g[0].length_ns.0, 450_000);
        assert_eq!(g[0].ended_by, vec!["_raw_spin_unlock_irqrestore".to_string()]);
        // Jitter under the minimum is no gap; a gap ending before the window is not its.
        assert!(gaps(&v[..2], 250_000, 0, 2_000_000).is_empty());
        assert!(gaps(&v, 250_000, 1_800_000, 2_000_000).is_empty());
    }
}
