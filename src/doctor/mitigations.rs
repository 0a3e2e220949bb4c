//! CPU vulnerability mitigations (`/sys/devices/system/cpu/vulnerabilities/*`, `mitigations=`).
//!
//! Mitigations add work to every kernel entry and exit and to context switches (retpolines,
//! buffer clearing, IBPB, page-table isolation), which raises the latency floor. Results are
//! only comparable between hosts with the same mitigation state.

use super::{evidence, Ctx, Finding, Severity};

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let dir = "/sys/devices/system/cpu/vulnerabilities";
    let names = ctx.list(dir);
    let mut mitigated = Vec::new();
    let mut vulnerable = Vec::new();
    let mut ev = vec![ctx.param_evidence("mitigations")];
    for n in &names {
        let path = format!("{dir}/{n}");
        let Some(v) = ctx.value(&path) else { continue };
        if v.starts_with("Mitigation") {
            mitigated.push(n.clone());
            ev.push(evidence(&path, Some(&v)));
        } else if v.starts_with("Vulnerable") {
            vulnerable.push(n.clone());
            ev.push(evidence(&path, Some(&v)));
        }
    }
    let param = ctx.param("mitigations").map(str::to_string);
    let f = if names.is_empty() {
        Finding::new("cpu.mitigations", Severity::Info, "CPU vulnerability state is not exposed by this kernel")
            .why("Without /sys/devices/system/cpu/vulnerabilities rtscope cannot record which mitigations cost time.")
            .evidence(vec![evidence(dir, None)])
    } else if mitigated.is_empty() {
        Finding::new(
            "cpu.mitigations",
            Severity::Info,
            if vulnerable.is_empty() {
                "No CPU vulnerability mitigations active (CPU not affected)".to_string()
            } else {
                format!("Mitigations off: vulnerable to {}", vulnerable.join(", "))
            },
        )
        .why("No mitigation code runs on kernel entry/exit or context switch; latency floors are lower than on a mitigated host — compare only like with like.")
        .evidence(ev)
    } else {
        let mut f =
            Finding::new("cpu.mitigations", Severity::Info, format!("{} CPU vulnerability mitigation(s) active: {}", mitigated.len(), mitigated.join(", ")))
                .why(
                    "Mitigations add work to every system call, interrupt and context switch, raising \
             the latency floor by a few hundred ns to µs. Record them with results and compare \
             only hosts with the same state.",
                )
                .evidence(ev);
        if param.as_deref() != Some("off") {
            f = f.fix("On a dedicated, isolated lab host only: boot with `mitigations=off` (a security trade-off).");
        }
        f
    };
    vec![f]
}
