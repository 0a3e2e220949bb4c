//! The `io` load: file writes with fsync and reads, in the load's temp dir on
//! the filesystem under test (`--load-dir`, default the current directory).
//! Each worker writes a 16 MiB file in 256 KiB chunks with an fsync every
//! 4 MiB, drops it from the page cache (posix_fadvise DONTNEED) so the read
//! back comes from the device, reads it, and starts over. The directory is
//! removed when the phase ends. stress-ng: `--hdd N` with fsync after writes.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::Ordering;

use anyhow::Context;
use nix::fcntl::{posix_fadvise, PosixFadviseAdvice};

use super::{Counters, Load, WorkerCtx};

pub struct IoLoad;

const CHUNK: usize = 256 << 10;
const FILE: usize = 16 << 20;
const FSYNC_EVERY: usize = 4 << 20;

impl Load for IoLoad {
    fn name(&self) -> &'static str {
        "io"
    }

    fn run_builtin(&self, ctx: &WorkerCtx<'_>) -> anyhow::Result<Counters> {
        let path = ctx.dir.join(format!("io-{}.dat", ctx.index));
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .with_context(|| format!("io load: creating {}", path.display()))?;
        let mut chunk = vec![0u8; CHUNK];
        let (mut written, mut read, mut fsyncs) = (0u64, 0u64, 0u64);
        'outer: while !ctx.stop.load(Ordering::Relaxed) {
            f.seek(SeekFrom::Start(0))?;
            let mut off = 0;
            while off < FILE {
                if ctx.stop.load(Ordering::Relaxed) {
                    break 'outer;
                }
                chunk[0] = chunk[0].wrapping_add(1);
                f.write_all(&chunk)?;
                off += CHUNK;
                written += CHUNK as u64;
                if off % FSYNC_EVERY == 0 {
                    f.sync_data()?;
                    fsyncs += 1;
                }
            }
            // Best effort: without it the read back is served from the cache.
            let _ = posix_fadvise(f.as_raw_fd(), 0, FILE as i64, PosixFadviseAdvice::POSIX_FADV_DONTNEED);
            f.seek(SeekFrom::Start(0))?;
            let mut left = FILE;
            while left > 0 && !ctx.stop.load(Ordering::Relaxed) {
                let n = f.read(&mut chunk)?;
                if n == 0 {
                    break;
                }
                read += n as u64;
                left = left.saturating_sub(n);
            }
        }
        drop(f);
        let _ = std::fs::remove_file(&path);
        Ok(Counters::from([
            ("bytes_written".to_string(), written),
            ("bytes_read".to_string(), read),
            ("fsyncs".to_string(), fsyncs),
        ]))
    }

    fn stress_ng_args(&self, workers: usize, _dir: &Path) -> Vec<String> {
        vec![
            "--hdd".into(),
            workers.to_string(),
            "--hdd-bytes".into(),
            "16M".into(),
            "--hdd-opts".into(),
            "fsync,wr-seq,rd-seq".into(),
        ]
    }
}
