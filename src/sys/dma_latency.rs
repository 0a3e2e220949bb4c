//! `/dev/cpu_dma_latency`: ask the kernel's PM QoS for 0 µs exit latency, so
//! the CPUs stay out of deep idle states for as long as the file is open.
//! See Documentation/power/pm_qos_interface.rst.

use std::fs::{File, OpenOptions};
use std::io::Write;

/// Holds /dev/cpu_dma_latency open at the requested value; dropping it
/// releases the request.
#[derive(Debug)]
pub(crate) struct DmaLatencyGuard {
    _file: File,
}

pub(crate) const PATH: &str = "/dev/cpu_dma_latency";

impl DmaLatencyGuard {
    /// Open the device and write `us` as a binary 32-bit value.
    pub(crate) fn hold(us: i32) -> std::io::Result<DmaLatencyGuard> {
        let mut f = OpenOptions::new().write(true).open(PATH)?;
        f.write_all(&us.to_ne_bytes())?;
        Ok(DmaLatencyGuard { _file: f })
    }
}
