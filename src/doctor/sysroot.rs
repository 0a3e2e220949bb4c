//! `SysRoot`: where the host's `/proc`, `/sys` and `/dev` are read from.
//!
//! Every doctor check reads the host through a `SysRoot` so that tests can point it at a
//! temporary directory holding a fake `proc/` and `sys/` tree. On a real host the base is `/`.
//! Paths are always written as the absolute path the kernel exposes (`/proc/cmdline`); the
//! base is joined in front of them here, and evidence shows the kernel path, never the base.
//!
//! Reading never fails loudly: a missing or unreadable file is `None`, which the checks turn
//! into "not exposed by this kernel".

use std::path::{Path, PathBuf};

/// Environment variable naming a fake root (used by the integration tests).
pub const SYSROOT_ENV: &str = "RTSCOPE_SYSROOT";

/// A base directory under which `/proc`, `/sys` and `/dev` are looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    base: PathBuf,
}

impl Default for SysRoot {
    fn default() -> Self {
        SysRoot::real()
    }
}

impl SysRoot {
    /// The running host (`/`).
    pub fn real() -> SysRoot {
        SysRoot { base: PathBuf::from("/") }
    }

    /// A fake tree rooted at `base` (for tests).
    pub fn new(base: impl Into<PathBuf>) -> SysRoot {
        SysRoot { base: base.into() }
    }

    /// `--root DIR` if given, else `$RTSCOPE_SYSROOT` if set and non-empty, else `/`.
    pub fn from_flag_or_env(flag: Option<&Path>) -> SysRoot {
        if let Some(p) = flag {
            return SysRoot::new(p);
        }
        match std::env::var_os(SYSROOT_ENV) {
            Some(v) if !v.is_empty() => SysRoot::new(v),
            _ => SysRoot::real(),
        }
    }

    /// The on-disk path for a kernel path such as `/proc/cmdline`.
    pub fn path(&self, kernel_path: &str) -> PathBuf {
        self.base.join(kernel_path.trim_start_matches('/'))
    }

    /// Whether the kernel path exists.
    pub fn exists(&self, kernel_path: &str) -> bool {
        self.path(kernel_path).exists()
    }

    /// The file's content with surrounding whitespace trimmed, or `None` when it is missing
    /// or unreadable. Invalid UTF-8 is replaced rather than rejected.
    pub fn read(&self, kernel_path: &str) -> Option<String> {
        let bytes = std::fs::read(self.path(kernel_path)).ok()?;
        Some(String::from_utf8_lossy(&bytes).trim().to_string())
    }

    /// The file's content, untrimmed (for multi-line files such as `/proc/interrupts`).
    pub fn read_raw(&self, kernel_path: &str) -> Option<String> {
        let bytes = std::fs::read(self.path(kernel_path)).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Names of the entries of a directory, sorted; empty when it is missing.
    pub fn list(&self, kernel_dir: &str) -> Vec<String> {
        let mut names: Vec<String> = match std::fs::read_dir(self.path(kernel_dir)) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        names.sort_by(|a, b| natural_cmp(a, b));
        names
    }
}

/// Orders `state10` after `state9` and `cpu10` after `cpu2`.
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn split(s: &str) -> (&str, Option<u64>) {
        let idx = s.find(|c: char| c.is_ascii_digit()).unwrap_or(s.len());
        let (head, tail) = s.split_at(idx);
        (head, tail.parse().ok())
    }
    let (ha, na) = split(a);
    let (hb, nb) = split(b);
    ha.cmp(hb).then(na.cmp(&nb)).then(a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_kernel_paths_under_base() {
        let r = SysRoot::new("/tmp/x");
        assert_eq!(r.path("/proc/cmdline"), PathBuf::from("/tmp/x/proc/cmdline"));
        assert_eq!(SysRoot::real().path("/proc/cmdline"), PathBuf::from("/proc/cmdline"));
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["state10", "state2", "state1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["state1", "state2", "state10"]);
    }
}
