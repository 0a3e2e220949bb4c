//! Virtual machine detection: the `hypervisor` CPU flag, `/sys/hypervisor/type` and the DMI
//! product and vendor names.
//!
//! In a VM every measured latency also contains the time the host did not run the vCPU.

use super::{Ctx, Evidence, Finding, Severity};

const VM_WORDS: &[&str] = &[
    "kvm",
    "qemu",
    "vmware",
    "virtualbox",
    "xen",
    "hyper-v",
    "virtual machine",
    "bochs",
    "amazon ec2",
    "google compute engine",
    "firecracker",
    "cloud hypervisor",
    "parallels",
    "bhyve",
];

/// What helps when the host does not run a vCPU.
pub(crate) const FIX_VM: &str = "Measure on bare metal, or on the host: pin each vCPU thread to a dedicated, \
                 isolated physical CPU and run the vCPU threads SCHED_FIFO on a PREEMPT_RT host \
                 kernel; record the host setup with the results.";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let hv_flag = ctx.host.virtualized;
    let (hv_ev, hv_type) = ctx.read("/sys/hypervisor/type");
    let (pn_ev, product) = ctx.read("/sys/class/dmi/id/product_name");
    let (sv_ev, vendor) = ctx.read("/sys/class/dmi/id/sys_vendor");
    let dmi_vm = [&product, &vendor].iter().filter_map(|v| v.as_deref()).find(|v| {
        let l = v.to_lowercase();
        VM_WORDS.iter().any(|w| l.contains(w))
    });
    let ev = vec![
        Evidence { path: "/proc/cpuinfo".into(), value: if hv_flag { "flags include hypervisor".into() } else { "no hypervisor flag".into() } },
        hv_ev,
        pn_ev,
        sv_ev,
    ];
    let what: Option<String> = if let Some(t) = hv_type.as_deref().filter(|t| !t.is_empty()) {
        Some(t.to_string())
    } else if let Some(d) = dmi_vm {
        Some(d.to_string())
    } else if hv_flag {
        Some("unknown hypervisor".to_string())
    } else {
        None
    };
    let f = match what {
        Some(w) => Finding::new("vm.hypervisor", Severity::Warn, format!("Running in a virtual machine ({w})"))
            .why(
                "Measured latencies include the time the host scheduler did not run this vCPU, \
                 host interrupts and exits to the hypervisor; none of it is visible from inside. \
                 Results describe this VM on this host, not the guest kernel alone.",
            )
            .fix(FIX_VM),
        None => Finding::new("vm.hypervisor", Severity::Ok, "Running on bare metal (no hypervisor detected)")
            .why("No hypervisor flag, /sys/hypervisor/type or VM DMI name: latencies are the hardware's and the kernel's own."),
    };
    vec![f.evidence(ev)]
}
