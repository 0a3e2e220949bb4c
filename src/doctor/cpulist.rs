//! Kernel CPU-list syntax (`0-3,5,8-15:2`) as used by `/sys/devices/system/cpu/online`,
//! `smp_affinity_list`, `isolcpus=` and the `--cpus` flag.
//!
//! `parse` is strict (it names what was wrong) and is used for user input; `parse_lenient`
//! skips what it does not understand and is used for kernel files and boot parameters, which
//! may carry flags (`isolcpus=domain,managed_irq,2-3`) or special words (`nohz_full=all`).

/// A validated, sorted, non-empty CPU list given on the command line (`--cpus 1-3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

impl std::str::FromStr for CpuList {
    type Err = String;
    fn from_str(s: &str) -> Result<CpuList, String> {
        let v = parse(s)?;
        if v.is_empty() {
            return Err("the CPU list is empty; give e.g. `1` or `1-3`".into());
        }
        Ok(CpuList(v))
    }
}

/// Parses a CPU list such as `0-3,5` or `0-15:2` (stride). An empty string is an empty list.
pub fn parse(s: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (range, stride) = match part.split_once(':') {
            Some((r, st)) => {
                let st: usize = st
                    .parse()
                    .map_err(|_| format!("`{part}`: stride `{st}` is not a number"))?;
                if st == 0 {
                    return Err(format!("`{part}`: stride must be at least 1"));
                }
                (r, st)
            }
            None => (part, 1),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (num(a, part)?, num(b, part)?),
            None => {
                let n = num(range, part)?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(format!("`{part}`: range start {lo} is above its end {hi}"));
        }
        if hi > 8191 {
            return Err(format!("`{part}`: CPU {hi} is beyond any kernel's limit (8191)"));
        }
        cpus.extend((lo..=hi).step_by(stride));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn num(s: &str, part: &str) -> Result<usize, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{part}`: `{s}` is not a CPU number (expected e.g. 0-3,5)"))
}

/// Parses the CPU numbers out of a kernel value, skipping flag words (`domain`, `nohz`,
/// `managed_irq`) and anything else that is not a CPU range.
pub fn parse_lenient(s: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in s.split(',') {
        if let Ok(mut v) = parse(part) {
            cpus.append(&mut v);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Formats CPUs back into the compact list syntax (`0-3,5`).
pub fn format(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_strides() {
        assert_eq!(parse("0-3,5").unwrap(), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse("0-6:2").unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(parse("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse("3,1,1").unwrap(), vec![1, 3]);
    }

    #[test]
    fn rejects_garbage_naming_it() {
        let e = parse("0-x").unwrap_err();
        assert!(e.contains("`x`"), "{e}");
        assert!(parse("3-1").is_err());
        assert!(parse("99999").is_err());
    }

    #[test]
    fn lenient_skips_flags() {
        assert_eq!(parse_lenient("domain,managed_irq,2-3"), vec![2, 3]);
        assert_eq!(parse_lenient("nohz,1"), vec![1]);
    }

    #[test]
    fn formats_compactly() {
        assert_eq!(format(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(format(&[]), "");
    }
}
