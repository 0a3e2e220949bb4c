//! A real PostgreSQL server for the store tests: Debian's binaries
//! (/usr/lib/postgresql/15/bin), a temp data directory owned by an
//! unprivileged user (the server refuses root), listening on loopback only,
//! password (SCRAM) authentication over TCP, TLS on (self-signed; the role
//! [`TLS_USER`] is refused without it). One server per test binary,
//! started on first use; a watchdog process stops it and removes its
//! directory as soon as the test process is gone, whatever way it ends.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub const BIN: &str = "/usr/lib/postgresql/15/bin";
/// The superuser's password: tests check it never shows up in any output.
pub const PASSWORD: &str = "s3cret-Pw-9f2c";
pub const USER: &str = "rtscope";
/// A role the server accepts over TLS only.
pub const TLS_USER: &str = "tlsonly";

pub struct Server {
    pub port: u16,
    pub dir: PathBuf,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
static NEXT_DB: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Run `cmd` as the unprivileged user when we are root (PostgreSQL refuses
/// to run as root), else as ourselves.
fn as_server_user(program: &str) -> Command {
    if nix::unistd::geteuid().is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn start() -> Result<Server, String> {
    if !Path::new(BIN).join("postgres").exists() {
        return Err(format!("PostgreSQL is not installed ({BIN}/postgres missing; apt-get install -y postgresql)"));
    }
    let dir = std::env::temp_dir().join(format!("rtscope-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let pwfile = dir.join("pw");
    std::fs::write(&pwfile, PASSWORD).map_err(|e| e.to_string())?;
    if nix::unistd::geteuid().is_root() {
        let nobody = nix::unistd::User::from_name("nobody").ok().flatten().ok_or("no user nobody")?;
        let nogroup = nix::unistd::Group::from_name("nogroup").ok().flatten().map(|g| g.gid).unwrap_or(nobody.gid);
        for p in [&dir, &pwfile] {
            nix::unistd::chown(p.as_path(), Some(nobody.uid), Some(nogroup)).map_err(|e| e.to_string())?;
        }
    }
    let data = dir.join("data");
    let out = as_server_user(&format!("{BIN}/initdb"))
        .args(["-D", data.to_str().unwrap(), "-U", USER, "--pwfile", pwfile.to_str().unwrap()])
        .args(["--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("initdb: {}", String::from_utf8_lossy(&out.stderr)));
    }
    // TLS: a self-signed certificate; the role `tlsonly` may only connect
    // over TLS (pg_hba.conf is read top down).
    let (crt, key) = (dir.join("server.crt"), dir.join("server.key"));
    let out = as_server_user("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&crt)
        .output()
        .map_err(|e| format!("openssl: {e}"))?;
    if !out.status.success() {
        return Err(format!("openssl: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let hba = data.join("pg_hba.conf");
    let rules = std::fs::read_to_string(&hba).map_err(|e| e.to_string())?;
    std::fs::write(&hba, format!("hostnossl all {TLS_USER} 127.0.0.1/32 reject\nhostssl all {TLS_USER} 127.0.0.1/32 scram-sha-256\n{rules}"))
        .map_err(|e| e.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?.local_addr().unwrap().port();
    let opts = format!(
        "-h 127.0.0.1 -p {port} -k {} -c fsync=off -c max_connections=60 -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
        dir.display(),
        crt.display(),
        key.display()
    );
    let out = as_server_user(&format!("{BIN}/pg_ctl"))
        .args(["-D", data.to_str().unwrap(), "-l", dir.join("log").to_str().unwrap(), "-o", &opts, "-w", "start"])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
        return Err(format!("pg_ctl start: {}{log}", String::from_utf8_lossy(&out.stderr)));
    }
    // The watchdog: when this test process is gone, stop the server and
    // remove its directory.
    let script = format!(
        "while [ -d /proc/{pid} ]; do sleep 0.5; done; {BIN}/pg_ctl -D {data} -m immediate stop >/dev/null 2>&1; rm -rf {dir}",
        pid = std::process::id(),
        data = data.display(),
        dir = dir.display()
    );
    as_server_user("sh")
        .args(["-c", &script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut c = postgres::Client::connect(&format!("host=127.0.0.1 port={port} user={USER} password={PASSWORD} dbname=postgres"), postgres::NoTls)
        .map_err(|e| e.to_string())?;
    c.batch_execute(&format!("CREATE ROLE {TLS_USER} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")).map_err(|e| e.to_string())?;
    Ok(Server { port, dir })
}

/// The server, or why there is none (the caller skips with the reason).
pub fn server() -> Result<&'static Server, String> {
    SERVER.get_or_init(start).as_ref().map_err(|e| e.clone())
}

/// The URL of a fresh, empty database on the server (password in the URL).
pub fn fresh_db() -> Result<String, String> {
    let s = server()?;
    let name = format!("t{}_{}", std::process::id(), NEXT_DB.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
    let mut c = postgres::Client::connect(&format!("host=127.0.0.1 port={} user={USER} password={PASSWORD} dbname=postgres", s.port), postgres::NoTls)
        .map_err(|e| e.to_string())?;
    c.batch_execute(&format!("CREATE DATABASE {name}")).map_err(|e| e.to_string())?;
    Ok(format!("postgresql://{USER}:{PASSWORD}@127.0.0.1:{}/{name}", s.port))
}

/// A client on `url`'s database, for checks behind the binary's back.
pub fn client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).expect("connect to the test database")
}
