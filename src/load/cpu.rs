//! The `cpu` load: every worker spins on integer and floating-point
//! arithmetic (stress-ng: `--cpu N`, all methods in turn).

use std::path::Path;
use std::sync::atomic::Ordering;

use super::{Counters, Load, WorkerCtx};

pub(crate) struct CpuLoad;

impl Load for CpuLoad {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn run_builtin(&self, ctx: &WorkerCtx<'_>) -> anyhow::Result<Counters> {
        let mut ops = 0u64;
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ ctx.index as u64;
        let mut f = 1.000_001f64;
        while !ctx.stop.load(Ordering::Relaxed) {
            // A batch of ~1 ms of mixed integer (LCG) and FP (sqrt) work
            // between checks of the stop flag.
            for _ in 0..100_000 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                f = (f * 1.000_000_1 + (x >> 40) as f64).sqrt();
            }
            std::hint::black_box((x, f));
            ops += 100_000;
        }
        Ok(Counters::from([("ops".to_string(), ops)]))
    }

    fn stress_ng_args(&self, workers: usize, _dir: &Path) -> Vec<String> {
        vec!["--cpu".into(), workers.to_string()]
    }
}
