//! The `net` load: a loopback TCP stream and a UDP flood, on 127.0.0.1 only
//! (never another host). Each worker streams 64 KiB writes through one TCP
//! connection and sends 1 KiB datagrams to one UDP receiver, interleaved; the
//! receivers drain as fast as they can. Bounded: loopback only, one
//! connection and one UDP socket pair per worker, stopped with the phase.
//! The phase's `system.loopback_tx_packets` shows the traffic. stress-ng:
//! `--sock N` (TCP over IPv4 loopback) and `--udp N` (UDP over IPv4 loopback).

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Counters, Load, WorkerCtx};

pub struct NetLoad;

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
            let tcp_reader = s.spawn(move || -> std::io::Result<u64> {
                let (c, _) = listener.accept()?;
                c.set_read_timeout(Some(TICK))?;
                drain(c, stop)
            });
            let udp_reader = s.spawn(|| {
                let mut buf = [0u8; 2048];
                let mut got = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if udp_rx.recv(&mut buf).is_ok() {
                        got += 1;
                    }
                }
                got
            });
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
                    Err(e) => return Err(e.into()),
                }
                for _ in 0..32 {
                    // A full receive queue or a transient ENOBUFS drops the
                    // datagram, as a flood does; only sent ones are counted.
                    if udp.send(&datagram).is_ok() {
                        packets += 1;
                    }
                }
            }
            drop(tcp);
            let tcp_read = tcp_reader.join().map_err(|_| anyhow::anyhow!("net load: TCP reader panicked"))??;
            let udp_got = udp_reader.join().map_err(|_| anyhow::anyhow!("net load: UDP reader panicked"))?;
            Ok(Counters::from([
                ("tcp_bytes_sent".to_string(), tcp_bytes),
                ("tcp_bytes_received".to_string(), tcp_read),
                ("udp_packets_sent".to_string(), packets),
                ("udp_packets_received".to_string(), udp_got),
            ]))
        })
    }

    fn stress_ng_args(&self, workers: usize, _dir: &Path) -> Vec<String> {
        vec![
            "--sock".into(),
            workers.to_string(),
            "--sock-domain".into(),
            "ipv4".into(),
            "--udp".into(),
            workers.to_string(),
            "--udp-domain".into(),
            "ipv4".into(),
        ]
    }
}
