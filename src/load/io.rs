//! The `io` load: file writes with fsync and reads, in the load's temp dir on
//! the filesystem under test (`--load-dir`, default $TMPDIR, else /var/tmp).
//! Each worker rewrites one file in 256 KiB chunks with an fsync every
//! 4 MiB (and at its end), drops it from the page cache (posix_fadvise
//! DONTNEED) so the read back comes from the device, reads it, and starts
//! over. The files of a load hold at most [`WORKING_SET`] (256 MiB) together:
//! 16 MiB per worker, less when there are more than 16 workers, at least
//! 1 MiB. The volume written over a phase is what the device sustains; the
//! space used is bounded. The directory is removed when the phase ends.
//! stress-ng: `--hdd N --hdd-bytes` the same size, fsync after writes.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::Ordering;

use anyhow::Context;
use nix::fcntl::{posix_fadvise, PosixFadviseAdvice};

use super::{Counters, Load, WorkerCtx};

pub(crate) struct IoLoad;

const CHUNK: usize = 256 << 10;
const FILE: usize = 16 << 20;
const FSYNC_EVERY: usize = 4 << 20;
/// Space the files of one io load use together, at most.
pub(crate) const WORKING_SET: usize = 256 << 20;

/// Size of each worker's file: 16 MiB, or an equal share of [`WORKING_SET`]
/// when there are more than 16 workers, at least 1 MiB (whole chunks).
pub(crate) fn file_bytes(workers: usize) -> usize {
    let share = WORKING_SET / workers.max(1);
    share.clamp(1 << 20, FILE) / CHUNK * CHUNK
}

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
        let file = file_bytes(ctx.workers);
        let mut chunk = vec![0u8; CHUNK];
        let (mut written, mut read, mut fsyncs) = (0u64, 0u64, 0u64);
        'outer: while !ctx.stop.load(Ordering::Relaxed) {
            f.seek(SeekFrom::Start(0))?;
            let mut off = 0;
            while off < file {
                if ctx.stop.load(Ordering::Relaxed) {
                    break 'outer;
                }
                chunk[0] = chunk[0].wrapping_add(1);
                f.write_all(&chunk)?;
                off += CHUNK;
                written += CHUNK as u64;
                if off.is_multiple_of(FSYNC_EVERY) || off == file {
                    f.sync_data()?;
                    fsyncs += 1;
                }
            }
            // Best effort: without it the read back is served from the cache.
            let _ = posix_fadvise(f.as_raw_fd(), 0, file as i64, PosixFadviseAdvice::POSIX_FADV_DONTNEED);
            f.seek(SeekFrom::Start(0))?;
            let mut left = file;
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
        Ok(Counters::from([("bytes_written".to_string(), written), ("bytes_read".to_string(), read), ("fsyncs".to_string(), fsyncs)]))
    }

    fn stress_ng_args(&self, workers: usize, _dir: &Path) -> Vec<String> {
        vec![
            "--hdd".into(),
            workers.to_string(),
            "--hdd-bytes".into(),
            format!("{}K", file_bytes(workers) >> 10),
            "--hdd-opts".into(),
            "fsync,wr-seq,rd-seq".into(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_of_a_load_stay_within_the_working_set() {
        assert_eq!(file_bytes(1), 16 << 20);
        assert_eq!(file_bytes(16), 16 << 20);
        assert_eq!(file_bytes(32), 8 << 20);
        assert_eq!(file_bytes(1000), 1 << 20, "at least 1 MiB");
        for w in [1, 2, 3, 7, 16, 17, 100, 256] {
            assert!(file_bytes(w) * w <= WORKING_SET, "{w} workers");
            assert_eq!(file_bytes(w) % CHUNK, 0);
        }
    }
}
