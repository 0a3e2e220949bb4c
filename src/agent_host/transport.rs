//! The three ways to reach an agent, all giving one [`Link`]: a byte stream
//! in (lines the agent writes) and out (lines rtscope writes).
//!
//! - `exec:CMD`: CMD runs through `sh -c` in its own process group (a
//!   Ctrl-C at the terminal reaches rtscope only; rtscope then asks the agent
//!   to stop), talking over its stdin/stdout; its stderr is rtscope's.
//!   Dropping the link closes the agent's stdin, gives it a moment to exit,
//!   then kills the whole group and reaps it: no process outlives rtscope.
//! - `tcp:HOST:PORT`: the agent listens (`rtscope-agent --listen PORT`);
//!   rtscope connects, with a timeout.
//! - `serial:/dev/ttyX[:BAUD]`: the line is opened raw (termios
//!   `cfmakeraw`, 8N1, no modem control, no flow control) at BAUD (115200 by
//!   default).
//!
//! Reading happens on a reader thread that cuts the stream into lines of at
//! most [`MAX_LINE`] bytes and hands them over a channel, so the session can
//! wait for a line and still notice Ctrl-C (and then send `stop`). The
//! channel holds at most [`QUEUED_LINES`]: when the session falls behind, the
//! reader stops reading and the link itself holds the agent back (a pipe, a
//! TCP window, a tty's buffer), so a flood of lines costs the host at most
//! that many lines of memory, never what the agent sent.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::BadInput;

use super::transcript::Transcript;

/// The longest line the host accepts from an agent, in bytes (without the
/// newline); a longer one is malformed (an agent never sends one: its
/// longest, a histogram chunk, stays far below).
pub(crate) const MAX_LINE: usize = super::proto::MAX_PROTOCOL_LINE;

/// Lines the reader thread may hold for the session (at most
/// [`MAX_LINE`] bytes each: 256 KiB with their buffers).
pub(crate) const QUEUED_LINES: usize = 256;

/// How long `tcp:` waits for the connection.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the agent is, as given to `--target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TargetSpec {
    /// A shell command whose stdin/stdout are the agent's.
    Exec(String),
    /// HOST:PORT of an agent in listen mode.
    Tcp(String),
    /// A serial device and its baud rate.
    Serial { path: String, baud: u32 },
}

/// Baud rates a serial line may be given (termios' standard speeds).
pub(crate) const BAUDS: &[u32] =
    &[1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 500000, 576000, 921600, 1000000, 1152000, 1500000, 2000000, 3000000, 4000000];

impl TargetSpec {
    /// `exec:CMD`, `tcp:HOST:PORT` or `serial:PATH[:BAUD]`.
    pub(crate) fn parse(s: &str) -> Result<TargetSpec, BadInput> {
        let usage = "give exec:'CMD' (e.g. exec:'ssh board rtscope-agent'), tcp:HOST:PORT (an agent started with --listen PORT) or serial:/dev/ttyUSB0[:BAUD]";
        let (kind, rest) = s.split_once(':').ok_or_else(|| BadInput(format!("--target {s:?}: no transport; {usage}")))?;
        match kind {
            "exec" if !rest.trim().is_empty() => Ok(TargetSpec::Exec(rest.to_string())),
            "exec" => Err(BadInput(format!("--target {s:?}: no command after exec:; {usage}"))),
            "tcp" => {
                let ok = rest.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
                if !ok {
                    return Err(BadInput(format!("--target {s:?}: expected tcp:HOST:PORT with a port 1-65535, e.g. tcp:127.0.0.1:5927")));
                }
                Ok(TargetSpec::Tcp(rest.to_string()))
            }
            "serial" => {
                let (path, baud) = match rest.rsplit_once(':') {
                    Some((p, b)) if b.bytes().all(|c| c.is_ascii_digit()) && !b.is_empty() => {
                        let baud: u32 = b.parse().map_err(|_| BadInput(format!("--target {s:?}: baud rate {b} is too large")))?;
                        (p, baud)
                    }
                    _ => (rest, 115_200),
                };
                if !path.starts_with('/') {
                    return Err(BadInput(format!("--target {s:?}: expected serial:/dev/ttyX[:BAUD] with an absolute device path")));
                }
                if !BAUDS.contains(&baud) {
                    let list: Vec<String> = BAUDS.iter().map(u32::to_string).collect();
                    return Err(BadInput(format!("--target {s:?}: {baud} is not a baud rate a serial line takes; use one of {}", list.join(", "))));
                }
                Ok(TargetSpec::Serial { path: path.to_string(), baud })
            }
            _ => Err(BadInput(format!("--target {s:?}: unknown transport '{kind}'; {usage}"))),
        }
    }

    /// The transport's name as the result records it: exec, tcp, serial.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            TargetSpec::Exec(_) => "exec",
            TargetSpec::Tcp(_) => "tcp",
            TargetSpec::Serial { .. } => "serial",
        }
    }
}

/// How the target is named in messages, transcripts and the result: an exec
/// command's URL passwords redacted (`env DB=postgres://u:***@h/db agent`), as
/// the command line is; the command itself runs as given.
impl std::fmt::Display for TargetSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetSpec::Exec(c) => write!(f, "exec:{}", crate::store::pgconn::redact_secrets(c)),
            TargetSpec::Tcp(a) => write!(f, "tcp:{a}"),
            TargetSpec::Serial { path, baud } => write!(f, "serial:{path}:{baud}"),
        }
    }
}

/// What the reader thread hands over.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// One line, without its line ending (`\n`, `\r\n`); `Err` holds the
    /// first bytes of a line longer than [`MAX_LINE`] (the rest is skipped).
    Line(Result<String, String>),
    /// The stream ended (the agent exited, the connection closed).
    Eof,
    /// Reading failed.
    Failed(String),
}

/// An open connection to an agent.
pub(crate) struct Link {
    lines: Receiver<Incoming>,
    /// The reader thread's kernel thread id (0 until it runs; it stores
    /// it before its first read, so before any line arrives).
    reader_tid: Arc<AtomicI32>,
    out: Option<Box<dyn Write + Send>>,
    child: Option<Child>,
    /// What the link is, for messages: `exec:./agent`, ...
    pub(crate) spec: TargetSpec,
    /// `--target-transcript`: every byte both ways, written when the link closes.
    transcript: Option<Transcript>,
}

impl Link {
    /// Open the transport `spec` names, its bytes copied to `transcript`
    /// if given. An unreachable target is bad input (exit 2): nothing was
    /// measured.
    pub(crate) fn open(spec: &TargetSpec, transcript: Option<Transcript>) -> Result<Link, BadInput> {
        match spec {
            TargetSpec::Exec(cmd) => {
                use std::os::unix::process::CommandExt;
                let mut child = Command::new("sh")
                    .arg("-c")
                    .arg(cmd)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .process_group(0)
                    .spawn()
                    .map_err(|e| BadInput(format!("--target exec:{cmd}: cannot start sh: {e}")))?;
                let out = child.stdin.take().expect("piped");
                let inp = child.stdout.take().expect("piped");
                let (lines, reader_tid) = reader(inp, transcript.clone());
                Ok(Link { lines, reader_tid, out: Some(Box::new(out)), child: Some(child), spec: spec.clone(), transcript })
            }
            TargetSpec::Tcp(addr) => {
                use std::net::ToSocketAddrs;
                let addrs: Vec<_> = addr.to_socket_addrs().map_err(|e| BadInput(format!("--target tcp:{addr}: cannot resolve the address: {e}")))?.collect();
                let mut last = format!("{addr} resolves to no address");
                for a in addrs {
                    match std::net::TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            let r = s.try_clone().map_err(|e| BadInput(format!("--target tcp:{addr}: {e}")))?;
                            let (lines, reader_tid) = reader(r, transcript.clone());
                            return Ok(Link { lines, reader_tid, out: Some(Box::new(s)), child: None, spec: spec.clone(), transcript });
                        }
                        Err(e) => last = format!("{a}: {e}"),
                    }
                }
                Err(BadInput(format!("--target tcp:{addr}: cannot connect ({last}); is the agent running with --listen on that port?")))
            }
            TargetSpec::Serial { path, baud } => {
                let f = open_serial(path, *baud)
                    .map_err(|e| BadInput(format!("--target serial:{path}: {e}; check the device and that you may open it (group dialout)")))?;
                let r = f.try_clone().map_err(|e| BadInput(format!("--target serial:{path}: {e}")))?;
                let (lines, reader_tid) = reader(r, transcript.clone());
                Ok(Link { lines, reader_tid, out: Some(Box::new(f)), child: None, spec: spec.clone(), transcript })
            }
        }
    }

    /// Send one line (the newline is added).
    pub(crate) fn send(&mut self, line: &str) -> std::io::Result<()> {
        let out = self.out.as_mut().ok_or_else(|| std::io::Error::other("the link is closed"))?;
        if let Some(t) = &self.transcript {
            t.sent(line);
        }
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()
    }

    /// The next thing from the agent, waiting at most `wait`; `None` when
    /// nothing came in that time.
    pub(crate) fn next(&self, wait: Duration) -> Option<Incoming> {
        match self.lines.recv_timeout(wait) {
            Ok(x) => Some(x),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            // The reader thread ended after sending Eof or Failed.
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(Incoming::Eof),
        }
    }

    /// The reader thread's kernel thread id, once it runs (it has by the
    /// time the first line arrives).
    pub(crate) fn reader_tid(&self) -> Option<i32> {
        Some(self.reader_tid.load(Ordering::Acquire)).filter(|t| *t != 0)
    }

    /// The process group of the exec command (its shell, and whatever it
    /// started unless that left the group); None for tcp and serial.
    pub(crate) fn group(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The agent process's exit, if the link spawned one and it ended.
    pub(crate) fn exit_status(&mut self) -> Option<String> {
        let c = self.child.as_mut()?;
        match c.try_wait() {
            Ok(Some(st)) => Some(describe_exit(st)),
            _ => None,
        }
    }
}

fn describe_exit(st: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => st.to_string(),
    }
}

impl Drop for Link {
    /// Close the agent's input (an agent ends on end of input), give it a
    /// moment, then kill its process group and reap it.
    fn drop(&mut self) {
        self.out = None;
        if let Some(mut c) = self.child.take() {
            let end = Instant::now() + Duration::from_secs(2);
            while Instant::now() < end {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // The group: sh and whatever it started (the agent, ssh, qemu).
            let pgid = nix::unistd::Pid::from_raw(c.id() as i32);
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            let _ = c.wait();
        }
        if let Some(t) = self.transcript.take() {
            // What the agent wrote before it ended is still in the pipe:
            // let the reader take it to its end (a bounded wait: a tcp or
            // serial peer may never close), then write the transcript.
            let end = Instant::now() + Duration::from_secs(1);
            while let Some(left) = end.checked_duration_since(Instant::now()) {
                if matches!(self.lines.recv_timeout(left), Ok(Incoming::Eof | Incoming::Failed(_)) | Err(_)) {
                    break;
                }
            }
            t.finish();
        }
    }
}

/// The reader thread: bytes → lines of at most [`MAX_LINE`] bytes (and,
/// as read, to the transcript).
fn reader<R: Read + Send + 'static>(mut r: R, transcript: Option<Transcript>) -> (Receiver<Incoming>, Arc<AtomicI32>) {
    let (tx, rx) = mpsc::sync_channel(QUEUED_LINES);
    let tid = Arc::new(AtomicI32::new(0));
    let tid_w = Arc::clone(&tid);
    let refused = tx.clone();
    let spawned = std::thread::Builder::new().name("rtscope-target-read".into()).stack_size(128 * 1024).spawn(move || {
        tid_w.store(crate::sys::sched::current_tid(), Ordering::Release);
        let mut buf = [0u8; 4096];
        let mut line: Vec<u8> = Vec::with_capacity(MAX_LINE + 1);
        let mut oversized = false;
        loop {
            let n = match r.read(&mut buf) {
                Ok(0) => {
                    if let Some(t) = &transcript {
                        t.note(if line.is_empty() { "end of stream" } else { "end of stream (its last line had no newline)" });
                    }
                    // A last line without its newline is the link
                    // dropping mid-line (docs/agent.md, "Session"): not
                    // a line; the end of the stream says what happened.
                    let _ = tx.send(Incoming::Eof);
                    return;
                }
                Ok(n) => {
                    if let Some(t) = &transcript {
                        t.received(&buf[..n]);
                    }
                    n
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // A pty whose other side closed reads EIO: the end.
                Err(e) if e.raw_os_error() == Some(libc::EIO) => {
                    if let Some(t) = &transcript {
                        t.note("end of stream (EIO)");
                    }
                    let _ = tx.send(Incoming::Eof);
                    return;
                }
                Err(e) => {
                    if let Some(t) = &transcript {
                        t.note(&format!("reading failed: {e}"));
                    }
                    let _ = tx.send(Incoming::Failed(e.to_string()));
                    return;
                }
            };
            for &b in &buf[..n] {
                if b == b'\n' {
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    line.truncate(MAX_LINE);
                    let text = String::from_utf8_lossy(&line).into_owned();
                    let item = if oversized { Err(text) } else { Ok(text) };
                    if tx.send(Incoming::Line(item)).is_err() {
                        return;
                    }
                    line.clear();
                    oversized = false;
                } else if line.len() < MAX_LINE || (line.len() == MAX_LINE && b == b'\r') {
                    // The limit is without the line end: a `\r` after
                    // MAX_LINE bytes (a console's `\r\n`) is kept to be
                    // dropped at the `\n`, not counted.
                    line.push(b);
                } else {
                    oversized = true;
                }
            }
        }
    });
    // No reader, no lines: the link's reading fails at once, naming the limit.
    if let Err(e) = spawned {
        let _ = refused.try_send(Incoming::Failed(crate::sys::pthread::spawn_refused("the agent link's reader thread", &e).to_string()));
    }
    (rx, tid)
}

/// Open a serial device raw at `baud`: 8 data bits, no parity, one stop
/// bit, receiver on, modem lines ignored, no flow control, blocking reads of
/// at least one byte.
fn open_serial(path: &str, baud: u32) -> anyhow::Result<std::fs::File> {
    use nix::sys::termios::{self, BaudRate, ControlFlags, SetArg, SpecialCharacterIndices};
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOCTTY).open(path)?;
    let mut t = termios::tcgetattr(&f)?;
    termios::cfmakeraw(&mut t);
    t.control_flags |= ControlFlags::CLOCAL | ControlFlags::CREAD;
    t.control_flags &= !(ControlFlags::CSTOPB | ControlFlags::PARENB | ControlFlags::CRTSCTS);
    t.input_flags &= !(termios::InputFlags::IXON | termios::InputFlags::IXOFF);
    t.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
    t.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    let speed = BaudRate::try_from(baud_constant(baud)).map_err(|e| anyhow::anyhow!("baud {baud}: {e}"))?;
    termios::cfsetspeed(&mut t, speed)?;
    termios::tcsetattr(&f, SetArg::TCSANOW, &t)?;
    Ok(f)
}

/// termios' constant for a baud rate of [`BAUDS`].
fn baud_constant(baud: u32) -> libc::speed_t {
    match baud {
        1200 => libc::B1200,
        2400 => libc::B2400,
        4800 => libc::B4800,
        9600 => libc::B9600,
        19200 => libc::B19200,
        38400 => libc::B38400,
        57600 => libc::B57600,
        115200 => libc::B115200,
        230400 => libc::B230400,
        460800 => libc::B460800,
        500000 => libc::B500000,
        576000 => libc::B576000,
        921600 => libc::B921600,
        1000000 => libc::B1000000,
        1152000 => libc::B1152000,
        1500000 => libc::B1500000,
        2000000 => libc::B2000000,
        3000000 => libc::B3000000,
        _ => libc::B4000000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_name_the_input() {
        assert_eq!(TargetSpec::parse("exec:./a --x").unwrap(), TargetSpec::Exec("./a --x".into()));
        assert_eq!(TargetSpec::parse("tcp:127.0.0.1:5927").unwrap(), TargetSpec::Tcp("127.0.0.1:5927".into()));
        assert_eq!(TargetSpec::parse("serial:/dev/ttyUSB0").unwrap(), TargetSpec::Serial { path: "/dev/ttyUSB0".into(), baud: 115200 });
        assert_eq!(TargetSpec::parse("serial:/dev/ttyS1:9600").unwrap(), TargetSpec::Serial { path: "/dev/ttyS1".into(), baud: 9600 });
        for bad in ["exec:", "tcp:host", "tcp::80", "tcp:h:0", "serial:ttyS0", "serial:/dev/ttyS0:1234", "ftp:x", "nothing"] {
            let e = TargetSpec::parse(bad).unwrap_err().0;
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn exec_link_reads_lines_and_reaps_the_child() {
        let spec = TargetSpec::Exec("printf 'a\\r\\nb\\n'; read x; echo \"got $x\"; sleep 30".into());
        let mut l = Link::open(&spec, None).unwrap();
        let mut got = Vec::new();
        while got.len() < 2 {
            match l.next(Duration::from_secs(20)) {
                Some(Incoming::Line(Ok(s))) => got.push(s),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(got, ["a", "b"]);
        l.send("hi").unwrap();
        assert!(matches!(l.next(Duration::from_secs(20)), Some(Incoming::Line(Ok(s))) if s == "got hi"));
        let pid = l.child.as_ref().unwrap().id() as i32;
        drop(l);
        // Reaped: the pid no longer exists as our child.
        assert!(nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), Some(nix::sys::wait::WaitPidFlag::WNOHANG)).is_err());
    }

    #[test]
    fn a_full_length_line_ending_crlf_is_legal() {
        // A console that turns \n into \r\n (NuttX's, many serial ones):
        // the limit counts the line without its end (issue 48, item 1).
        let spec = TargetSpec::Exec(format!(
            "head -c {n} /dev/zero | tr '\\0' x; printf '\\r\\n'; head -c {n} /dev/zero | tr '\\0' y; printf '\\rz\\r\\n'",
            n = MAX_LINE
        ));
        let l = Link::open(&spec, None).unwrap();
        assert!(matches!(l.next(Duration::from_secs(20)), Some(Incoming::Line(Ok(s))) if s.len() == MAX_LINE && s.bytes().all(|b| b == b'x')));
        // A \r inside a line is a byte of it: 1024 + "\rz" is too long.
        assert!(matches!(l.next(Duration::from_secs(20)), Some(Incoming::Line(Err(s))) if s.len() == MAX_LINE && s.bytes().all(|b| b == b'y')));
        assert!(matches!(l.next(Duration::from_secs(20)), Some(Incoming::Eof)));
    }

    #[test]
    fn oversized_line_is_cut_and_flagged() {
        let spec = TargetSpec::Exec(format!("head -c {} /dev/zero | tr '\\0' x; echo; echo ok", MAX_LINE + 10));
        let l = Link::open(&spec, None).unwrap();
        assert!(matches!(l.next(Duration::from_secs(20)), Some(Incoming::Line(Err(s))) if s.len() == MAX_LINE));
        assert!(matches!(l.next(Duration::from_secs(20)), Some(Incoming::Line(Ok(s))) if s == "ok"));
        assert!(matches!(l.next(Duration::from_secs(20)), Some(Incoming::Eof)));
    }
}
