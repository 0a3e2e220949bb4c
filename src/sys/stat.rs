//! Directories rtscope creates (result, load and fallback directories):
//! mode 0755 whatever the umask, so a umask of 000 does not leave them
//! world-writable (mkdir(2) applies the umask to 0777 otherwise).

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// `mkdir -p DIR` with mode 0755 for every directory it creates (existing
/// ones are left as they are).
pub fn create_dirs(dir: &Path) -> std::io::Result<()> {
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
