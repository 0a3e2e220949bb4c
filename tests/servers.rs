//! rtscope's servers under hostile clients (issue 36 items 10 and 11): with
//! a small file-descriptor limit, hundreds of idle and half-sent connections
//! neither stop `serve` answering nor kill `monitor`'s `/metrics`; idle
//! connections are closed by the server; the thread count stays small. Real
//! processes, real sockets on 127.0.0.1. How fast the server answers under
//! 1 000 idle clients is a benchmark figure (bench/serve-idle), not a test.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{fixture, Sandbox};

/// A child killed and reaped on every path.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `cmd` with RLIMIT_NOFILE soft = hard = `fds`.
fn with_fd_limit(cmd: &mut Command, fds: u64) -> &mut Command {
    // SAFETY: the closure runs in the child between fork and exec and only
    // calls setrlimit, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let rl = libc::rlimit { rlim_cur: fds, rlim_max: fds };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// Raise this test process's own soft limit (the hostile side needs the
/// descriptors the server must not run out of).
fn raise_own_limit() -> u64 {
    // SAFETY: plain getrlimit/setrlimit on valid storage.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl);
        rl.rlim_cur = rl.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
        rl.rlim_cur
    }
}

/// `n` hostile connections: every other one silent, the rest half-sent
/// headers (slowloris). Connections the kernel will not take are skipped.
fn hostile(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else { continue };
        if i % 2 == 1 {
            let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ");
        }
        out.push(s);
    }
    out
}

/// GET `path` with `Connection: close`; status and body. Retries a refused
/// or reset connection for up to 30 s (the server may be busy closing the
/// hostile ones); panics if it never answers.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let t = Instant::now();
    loop {
        let attempt = (|| -> std::io::Result<(u16, String)> {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
            s.set_read_timeout(Some(Duration::from_secs(30)))?;
            write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
            let mut raw = Vec::new();
            s.read_to_end(&mut raw)?;
            let text = String::from_utf8_lossy(&raw).to_string();
            let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or_else(|| std::io::Error::other(format!("no status in {text:?}")))?;
            Ok((status, text.split_once("\r\n\r\n").map(|x| x.1.to_string()).unwrap_or_default()))
        })();
        match attempt {
            Ok(a) => return a,
            Err(e) => assert!(t.elapsed() < Duration::from_secs(30), "GET {path} never answered: {e}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The server closes `s` (EOF or reset) within `secs`.
fn closed_by_server(s: &mut TcpStream, secs: u64) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(secs))).unwrap();
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            // A 408 or similar before the close is fine: keep reading.
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn serve_answers_while_hostile_clients_hold_every_descriptor() {
    assert!(raise_own_limit() >= 1200, "this test needs 1 200 descriptors of its own");
    let sb = Sandbox::new();
    let o = sb.cmd().arg("import").arg(fixture("../golden/result-v1.json")).output().unwrap();
    assert!(o.status.success(), "import: {}", String::from_utf8_lossy(&o.stderr));
    let mut cmd = sb.cmd();
    cmd.args(["serve", "--listen", "127.0.0.1:0"]).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Reaped(with_fd_limit(&mut cmd, 256).spawn().unwrap());
    let mut line = String::new();
    BufReader::new(child.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let addr: SocketAddr =
        line.split("http://").nth(1).and_then(|x| x.split('/').next()).and_then(|a| a.parse().ok()).unwrap_or_else(|| panic!("no URL in {line:?}"));

    // 1 000 hostile connections against a 256-descriptor server.
    let mut held = hostile(addr, 1000);
    assert!(held.len() >= 256, "only {} hostile connections made", held.len());
    let (status, body) = get(addr, "/api/runs");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"id\""), "the runs list is empty: {body}");
    // Still listening, and the newest hostile connections are closed once
    // idle (10 s, looked at every second).
    assert_eq!(get(addr, "/").0, 200);
    let last = held.last_mut().unwrap();
    assert!(closed_by_server(last, 40), "an idle connection was kept open past the idle timeout");
    assert!(threads(child.0.id()) < 20, "serve has {} threads", threads(child.0.id()));
    drop(held);

    // SIGINT still stops it cleanly.
    // SAFETY: kill with a valid pid and signal has no memory effects.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "serve did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn metrics_survive_a_burst_of_idle_connections() {
    assert!(raise_own_limit() >= 1200, "this test needs 1 200 descriptors of its own");
    let sb = Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut cmd = sb.cmd();
    cmd.args(["monitor", "--window", "500ms", "-D", "120s", "-t", "1", "-a", "0", "-q", "--no-store", "--listen", &format!("127.0.0.1:{port}"), "--json"])
        .arg(sb.path("m.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = Reaped(with_fd_limit(&mut cmd, 256).spawn().unwrap());
    // Up and serving.
    let t = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(t.elapsed() < Duration::from_secs(60), "monitor never listened on {addr}");
        assert!(child.0.try_wait().unwrap().is_none(), "monitor exited before listening");
        std::thread::sleep(Duration::from_millis(50));
    }
    let held = hostile(addr, 600);
    assert!(held.len() >= 256, "only {} hostile connections made", held.len());
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, 200);
    assert!(body.contains("rtscope_windows_total"), "{body}");
    assert!(threads(child.0.id()) < 40, "monitor has {} threads with {} clients", threads(child.0.id()), held.len());
    drop(held);
    assert_eq!(get(addr, "/metrics").0, 200, "the port stopped answering after the burst");
    assert!(child.0.try_wait().unwrap().is_none(), "monitor died");
    // SAFETY: kill with a valid pid and signal has no memory effects.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    let status = child.0.wait().unwrap();
    let mut err = String::new();
    child.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
