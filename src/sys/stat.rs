//! Directories rtscope creates (result, load and fallback directories):
//! mode 0755 whatever the umask, so a umask of 000 does not leave them
//! world-writable (mkdir(2) applies the umask to 0777 otherwise).

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Room a result needs, at least: a short run's file is 50–500 KB, its
/// history row as much again; below this a run would measure for nothing
/// and end in the fallback directory, so outputs are refused before it.
pub(crate) const MIN_FREE_BYTES: u64 = 1 << 20;

/// Bytes an unprivileged writer can still use on the filesystem holding
/// `path` (statvfs: available blocks × fragment size).
pub(crate) fn free_bytes(path: &Path) -> std::io::Result<u64> {
    let st = nix::sys::statvfs::statvfs(path).map_err(std::io::Error::from)?;
    Ok((st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64))
}

/// Can this process create and remove files in directory `dir` (access(2)
/// with W_OK|X_OK: permissions and read-only mounts)?
pub(crate) fn dir_writable(dir: &Path) -> bool {
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK).is_ok()
}

/// Can this process write to the existing file `path`?
pub(crate) fn file_writable(path: &Path) -> bool {
    nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// `mkdir -p DIR` with mode 0755 for every directory it creates (existing
/// ones are left as they are).
pub(crate) fn create_dirs(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dirs(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o755).create(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The mode under umask 000 is tested through the binary (tests/run.rs):
    // umask is per process, and unit tests share one.
    #[test]
    fn creates_every_missing_directory_once() {
        let d = tempfile::tempdir().unwrap();
        create_dirs(&d.path().join("a/b/c")).unwrap();
        assert!(d.path().join("a/b/c").is_dir());
        create_dirs(&d.path().join("a/b/c")).unwrap();
        std::fs::write(d.path().join("f"), b"").unwrap();
        assert!(create_dirs(&d.path().join("f/g")).is_err(), "a file in the way is an error");
    }
}
