//! The `net` load: a loopback TCP stream and a UDP flood, on 127.0.0.1 only
//! (never another host). Each worker streams 64 KiB writes through one TCP
//! connection and sends 1 KiB datagrams to one UDP receiver, interleaved; the
//! receivers drain as fast as they can. Bounded: loopback only, one
//! connection and one UDP socket pair per worker, stopped with the phase.
//! The phase's `system.loopback_tx_packets` shows the traffic. stress-ng:
//! `--sock N` (TCP over IPv4 loopback) and `--udp N` (UDP over IPv4 loopback),
//! on port ranges found free when the phase starts (stress-ng's defaults,
//! 22000 and 7000 up, collide between two loads running at once: one exits
//! with "Address already in use").

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Counters, Load, WorkerCtx};

pub(crate) struct NetLoad;

const TICK: Duration = Duration::from_millis(100);

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

/// Read until EOF, or until `stop` once the socket goes quiet; bytes read.
fn drain(mut r: impl Read, stop: &AtomicBool) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut total = 0u64;
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => total += n as u64,
            Err(e) if timed_out(&e) => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(total);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

impl Load for NetLoad {
    fn name(&self) -> &'static str {
        "net"
    }

    fn run_builtin(&self, ctx: &WorkerCtx<'_>) -> anyhow::Result<Counters> {
        let stop = ctx.stop;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let tcp_addr = listener.local_addr()?;
        let udp_rx = UdpSocket::bind("127.0.0.1:0")?;
        udp_rx.set_read_timeout(Some(TICK))?;
        let udp_addr = udp_rx.local_addr()?;
        std::thread::scope(|s| -> anyhow::Result<Counters> {
            // The UDP reader first: it ends at `stop`, which a refused
            // second thread raises. The TCP reader waits for its connection
            // checking `stop` too: a connect or write that fails below raises
            // it, so no reader is left waiting for the scope to end.
            let udp_reader = ctx.spawn(s, "the UDP reader", || {
                let mut buf = [0u8; 2048];
                let mut got = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if udp_rx.recv(&mut buf).is_ok() {
                        got += 1;
                    }
                }
                got
            })?;
            listener.set_nonblocking(true)?;
            let tcp_reader = ctx.spawn(s, "the TCP reader", move || -> std::io::Result<u64> {
                let c = loop {
                    match listener.accept() {
                        Ok((c, _)) => break c,
                        Err(e) if timed_out(&e) => {
                            if stop.load(Ordering::Relaxed) {
                                return Ok(0);
                            }
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Err(e) => return Err(e),
                    }
                };
                c.set_nonblocking(false)?;
                c.set_read_timeout(Some(TICK))?;
                drain(c, stop)
            })?;
            let send = || -> std::io::Result<(u64, u64)> {
                let mut tcp = TcpStream::connect(tcp_addr)?;
                tcp.set_write_timeout(Some(TICK))?;
                tcp.set_nodelay(true)?;
                let udp = UdpSocket::bind("127.0.0.1:0")?;
                udp.connect(udp_addr)?;
                let block = vec![0xa5u8; 64 << 10];
                let datagram = [0x5au8; 1024];
                let (mut tcp_bytes, mut packets) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    match tcp.write(&block) {
                        Ok(n) => tcp_bytes += n as u64,
                        Err(e) if timed_out(&e) => {}
                        Err(e) => return Err(e),
                    }
                    for _ in 0..32 {
                        // A full receive queue or a transient ENOBUFS drops the
                        // datagram, as a flood does; only sent ones are counted.
                        if udp.send(&datagram).is_ok() {
                            packets += 1;
                        }
                    }
                }
                Ok((tcp_bytes, packets))
            };
            let sent = send();
            if sent.is_err() {
                // The readers end at `stop`; the error is this worker's.
                stop.store(true, Ordering::Relaxed);
            }
            let tcp_read = tcp_reader.join().map_err(|_| anyhow::anyhow!("net load: TCP reader panicked"))??;
            let udp_got = udp_reader.join().map_err(|_| anyhow::anyhow!("net load: UDP reader panicked"))?;
            let (tcp_bytes, packets) = sent?;
            Ok(Counters::from([
                ("tcp_bytes_sent".to_string(), tcp_bytes),
                ("tcp_bytes_received".to_string(), tcp_read),
                ("udp_packets_sent".to_string(), packets),
                ("udp_packets_received".to_string(), udp_got),
            ]))
        })
    }

    fn stress_ng_args(&self, workers: usize, dir: &Path) -> Vec<String> {
        let salt = dir.as_os_str().as_encoded_bytes().iter().fold(u64::from(std::process::id()), |h, &b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let tcp = free_ports(workers, salt, |p| TcpListener::bind(("127.0.0.1", p)).is_ok());
        let udp = free_ports(workers, salt.wrapping_add(7919), |p| UdpSocket::bind(("127.0.0.1", p)).is_ok());
        let mut args = vec!["--sock".into(), workers.to_string(), "--sock-domain".into(), "ipv4".into()];
        if let Some(p) = tcp {
            args.extend(["--sock-port".into(), p.to_string()]);
        }
        args.extend(["--udp".into(), workers.to_string(), "--udp-domain".into(), "ipv4".into()]);
        if let Some(p) = udp {
            args.extend(["--udp-port".into(), p.to_string()]);
        }
        args
    }
}

/// Ports below the kernel's ephemeral range (32768 up by default) that
/// stress-ng's own defaults do not use: a range found here is not taken by
/// an outgoing connection meanwhile.
const PORTS: std::ops::Range<u16> = 10_000..20_000;

/// The first port of `n` consecutive ports that `free` finds free, tried from
/// a start that `salt` spreads over [`PORTS`] (two loads started at once
/// look in different places); `None` when 64 tries found none, and stress-ng
/// keeps its default.
fn free_ports(n: usize, salt: u64, free: impl Fn(u16) -> bool) -> Option<u16> {
    let n = u16::try_from(n.max(1)).ok().filter(|&n| n < PORTS.len() as u16)?;
    let span = u64::from(PORTS.end - PORTS.start - n);
    (0..64u64).find_map(|k| {
        let base = PORTS.start + ((salt.wrapping_add(k.wrapping_mul(104_729))) % span) as u16;
        (base..base + n).all(&free).then_some(base)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stress_ng_gets_port_ranges_that_are_free_and_not_its_defaults() {
        let dir = Path::new("/tmp/.rtscope-load-test");
        let args = NetLoad.stress_ng_args(3, dir);
        let port = |flag: &str| -> u16 {
            let i = args.iter().position(|a| a == flag).unwrap_or_else(|| panic!("{flag} in {args:?}"));
            args[i + 1].parse().unwrap()
        };
        let (tcp, udp) = (port("--sock-port"), port("--udp-port"));
        assert!(PORTS.contains(&tcp) && PORTS.contains(&(tcp + 2)), "{tcp}");
        assert!(PORTS.contains(&udp) && PORTS.contains(&(udp + 2)), "{udp}");
        // A range with one taken port is skipped: the port held here is
        // never inside the range found.
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = held.local_addr().unwrap().port();
        let base = free_ports(4, 1, |p| p != taken && TcpListener::bind(("127.0.0.1", p)).is_ok()).unwrap();
        assert!(!(base..base + 4).contains(&taken));
        // Nothing free: stress-ng keeps its defaults (no port flags).
        assert_eq!(free_ports(2, 5, |_| false), None);
        // Two loads started at once (different directories) look in
        // different places.
        let other = NetLoad.stress_ng_args(3, Path::new("/tmp/.rtscope-load-other"));
        assert_ne!(args, other);
    }
}
