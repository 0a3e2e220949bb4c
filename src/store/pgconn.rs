//! How rtscope reaches a PostgreSQL history: the URL given to `--db` or
//! `RTSCOPE_DB`, the password (from the URL, `PGPASSWORD` or the password
//! file, with libpq's rules), the URL as it may be shown (password
//! redacted), and the TLS set-up.
//!
//! Main type: [`Target`], a parsed URL ready to connect. Nothing here ever
//! formats the password: [`Target::shown`] is the URL with the password
//! replaced by `***` (in the user-info part and in a `password=` query
//! parameter), and every message that names the database uses it.
//!
//! The password, as libpq looks for it (libpq-envars, libpq-pgpass):
//! 1. in the URL (`postgresql://user:secret@host/db` or `?password=`);
//! 2. else `PGPASSWORD`;
//! 3. else the password file, `PGPASSFILE` or `~/.pgpass`: lines
//!    `hostname:port:database:username:password`, `#` comments, `*` matches
//!    anything, `\:` and `\\` escape, the first matching line wins. A Unix
//!    socket host matches as `localhost`. As libpq does, a file readable or
//!    writable by group or others (mode beyond 0600) is ignored with a
//!    warning, since anyone on the machine could have read the password.
//!
//! TLS follows `sslmode`: `disable` (plain), `prefer` (the default: TLS when
//! the server offers it) and `require` (TLS or no connection). As in libpq
//! without a root certificate, `prefer` and `require` encrypt but do not
//! verify the server's certificate; `verify-ca` and `verify-full` are refused
//! with a message rather than silently downgraded.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::error::BadInput;

/// The URL schemes that select the PostgreSQL backend.
pub(crate) const SCHEMES: [&str; 2] = ["postgresql://", "postgres://"];

/// How long a connection attempt may take before the database counts as down
/// (unless the URL sets `connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Does this `--db` / `RTSCOPE_DB` value name a PostgreSQL database?
/// The scheme is matched without regard to case, as RFC 3986 says.
pub(crate) fn is_url(s: &str) -> bool {
    url_scheme(s).is_some_and(|sc| SCHEMES.iter().any(|p| p.strip_suffix("://").is_some_and(|p| p.eq_ignore_ascii_case(sc))))
}

/// The scheme of `SCHEME://…` (RFC 3986: a letter, then letters, digits,
/// `+ - .`), or `None` when `s` does not start like a URL.
pub(crate) fn url_scheme(s: &str) -> Option<&str> {
    let (scheme, _) = s.split_once("://")?;
    let mut cs = scheme.chars();
    let ok = cs.next().is_some_and(|c| c.is_ascii_alphabetic()) && cs.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    ok.then_some(scheme)
}

/// A PostgreSQL URL, parsed, with the password looked up.
#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    shown: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // postgres::Config's Debug already hides the password; say so anyway.
        f.debug_struct("Target").field("shown", &self.shown).finish_non_exhaustive()
    }
}

impl Target {
    /// Parse `url` (which [`is_url`]) and find its password. Warnings about
    /// the password file go to standard error.
    pub(crate) fn parse(url: &str) -> Result<Target, BadInput> {
        Target::parse_with(url, &Env::from_process())
    }

    fn parse_with(url: &str, env: &Env) -> Result<Target, BadInput> {
        let shown = redact_secrets(url);
        let bad = |why: String| {
            BadInput(format!(
                "--db {shown}: {why}; expected postgresql://USER@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require] \
                 (the password in PGPASSWORD or ~/.pgpass rather than in the URL)"
            ))
        };
        if let Some(mode) = query_param(url, "sslmode").filter(|m| m.starts_with("verify-")) {
            return Err(bad(format!(
                "sslmode={mode} (checking the server's certificate) is not supported yet; sslmode=require encrypts \
                 without checking it"
            )));
        }
        // The parser knows the schemes in lower case only.
        let lowered = match url.split_once("://") {
            Some((scheme, rest)) => format!("{}://{rest}", scheme.to_ascii_lowercase()),
            None => url.to_string(),
        };
        let mut config = postgres::Config::from_str(&lowered).map_err(|e| bad(reason(&e)))?;
        if config.get_hosts().is_empty() {
            // libpq's default: the local Unix socket (Debian's directory).
            config.host_path("/var/run/postgresql");
        }
        if config.get_user().is_none() {
            if let Some(u) = &env.pguser {
                config.user(u);
            } else if let Some(u) = &env.login {
                config.user(u);
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("rtscope");
        if config.get_password().is_none() {
            if let Some(p) = &env.pgpassword {
                config.password(p.as_str());
            } else if let Some(p) = password_from_file(&config, env) {
                config.password(p.as_str());
            }
        }
        Ok(Target { config, shown })
    }

    /// The URL with its password replaced by `***`: what every message shows.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Connect (TLS as `sslmode` says). Errors are exit 2 and give the
    /// server's or the network's reason, never the password.
    ///
    /// The whole connection — TCP, TLS, start-up and authentication — must
    /// finish within `connect_timeout` (the URL's, else [`CONNECT_TIMEOUT`]):
    /// the driver's own timeout covers only the TCP connect, so a server
    /// that accepts and never answers would hang every command. The attempt
    /// runs on a thread of its own; one that times out is left to end when
    /// the server closes the socket (or with the process).
    pub(crate) fn connect(&self) -> Result<postgres::Client, BadInput> {
        let limit = self.config.get_connect_timeout().copied().unwrap_or(CONNECT_TIMEOUT);
        let config = self.config.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new().name("pg-connect".into()).spawn(move || {
            let _ = tx.send(config.connect(tls()));
        });
        let failed = |why: String| {
            BadInput(format!(
                "history database {}: cannot connect: {why}. Check that the server is up and accepts this user \
                 (password from the URL, PGPASSWORD or ~/.pgpass), or use another --db, or --no-store",
                self.shown
            ))
        };
        if let Err(e) = spawned {
            return Err(failed(crate::sys::pthread::spawn_refused("the connecting thread", &e).to_string()));
        }
        match rx.recv_timeout(limit) {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(failed(reason(&e))),
            Err(_) => Err(failed(format!(
                "no answer within {} s (connect_timeout; the server accepted the connection but did not complete the start-up)",
                limit.as_secs_f64()
            ))),
        }
    }
}

/// The reason in a postgres error: the server's message for a database
/// error, else the chain of causes ("error connecting to server: Connection
/// refused (os error 111)").
pub(crate) fn reason(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} ({}: {})", db.message(), db.severity(), db.code().code());
    }
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// `text` with every URL's password replaced by `***`, whatever the scheme
/// and wherever the URL stands (a whole argument, `--db=…`, or inside
/// another argument: `--load "cmd:pgbench postgresql://u:pw@h/db"`), and
/// every `password=` value (a URL's query parameter, a libpq keyword).
///
/// A URL runs from its `://` to the next blank or quote. Its password is
/// everything from the first `:` to the *last* `@` when that `:` comes
/// first: a `?`, `/`, `@` or `:` inside an unescaped password
/// (`postgres://adv2:ab?cdSECRET2@127.0.0.1/db`, a valid URL that connects)
/// cannot end it early and leave part of it shown. The rule may hide more
/// than the password where an `@` follows a port (`u@h:5432/db?o=a@b`); it
/// never hides less.
///
/// The face applies it once to every argument, where the command line is
/// captured, so no path (native, `--target`, `monitor`, `factors`) stores
/// or prints a password; messages name a database through it too.
pub(crate) fn redact_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        out.push_str(&rest[..i + 3]);
        let after = &rest[i + 3..];
        let end = after.find(|c: char| c.is_whitespace() || "\"'`<>".contains(c)).unwrap_or(after.len());
        let body = &after[..end];
        match (body.find(':'), body.rfind('@')) {
            (Some(colon), Some(at)) if colon < at => {
                out.push_str(&body[..colon]);
                out.push_str(":***");
                out.push_str(&body[at..]);
            }
            _ => out.push_str(body),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    redact_password_values(&out)
}

/// Every `password=VALUE` (any case) with its value, up to a blank, quote,
/// `&` or `;`, replaced by `***`.
fn redact_password_values(text: &str) -> String {
    const KEY: &str = "password=";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    // ASCII lowering keeps byte offsets, so positions in `lower` index `text`.
    while let Some(k) = lower[from..].find(KEY) {
        let v = from + k + KEY.len();
        let end = text[v..].find(|c: char| c.is_whitespace() || "\"'`&;".contains(c)).map_or(text.len(), |e| v + e);
        out.push_str(&text[from..v]);
        if end > v {
            out.push_str("***");
        }
        from = end;
    }
    out.push_str(&text[from..]);
    out
}

fn query_param<'a>(url: &'a str, key: &str) -> Option<&'a str> {
    let q = url.split_once('?')?.1;
    q.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// The TLS connector: rustls with the ring provider. `sslmode=require` and
/// `prefer` encrypt without checking the certificate (libpq's meaning of
/// these modes); the handshake signatures are still verified, so the session
/// is bound to the certificate the server presented.
fn tls() -> tokio_postgres_rustls::MakeRustlsConnect {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Unverified(provider)))
        .with_no_client_auth();
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

/// libpq's `sslmode=require`: any certificate, valid handshake signatures.
#[derive(Debug)]
struct Unverified(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The environment the password lookup reads (injectable for tests).
#[derive(Debug, Default, Clone)]
struct Env {
    pguser: Option<String>,
    pgpassword: Option<String>,
    pgpassfile: Option<PathBuf>,
    home: Option<PathBuf>,
    login: Option<String>,
}

impl Env {
    fn from_process() -> Env {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Env {
            pguser: var("PGUSER"),
            pgpassword: var("PGPASSWORD"),
            pgpassfile: var("PGPASSFILE").map(PathBuf::from),
            home: var("HOME").map(PathBuf::from),
            login: var("USER").or_else(|| var("LOGNAME")),
        }
    }
}

/// The password for `config` from the password file, if one matches.
fn password_from_file(config: &postgres::Config, env: &Env) -> Option<String> {
    let path = env.pgpassfile.clone().or_else(|| env.home.as_ref().map(|h| h.join(".pgpass")))?;
    let text = read_password_file(&path)?;
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        // libpq matches a Unix-socket connection as "localhost".
        _ => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user().unwrap_or_default();
    let db = config.get_dbname().unwrap_or(user);
    lookup(&text, [&host, &port, db, user])
}

/// The file's text, or `None` (with libpq's warning) when it is missing,
/// not a plain file, or open to group or others.
fn read_password_file(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        eprintln!("warning: password file {} is not a plain file; not using it", path.display());
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "warning: password file {} has group or world access; permissions should be u=rw (0600) or less: \
             not using it (chmod 600 {})",
            path.display(),
            path.display()
        );
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The password of the first line of a password file whose four fields match
/// `want` (host, port, database, user); `*` matches anything.
fn lookup(text: &str, want: [&str; 4]) -> Option<String> {
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split_escaped(line);
        if fields.len() < 5 {
            continue;
        }
        let matches = fields[..4].iter().zip(want).all(|((raw, value), w)| raw == "*" || value == w);
        if matches {
            // The password is the rest of the line: a fifth field may hold ':'s.
            let pw = fields[4..].iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(":");
            return (!pw.is_empty()).then_some(pw);
        }
    }
    None
}

/// Split on unescaped `:`; each field as (raw text, unescaped value), so a
/// literal `\*` is not the wildcard.
fn split_escaped(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut raw, mut val) = (String::new(), String::new());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                raw.push(c);
                if let Some(n) = chars.next() {
                    raw.push(n);
                    val.push(n);
                }
            }
            ':' => out.push((std::mem::take(&mut raw), std::mem::take(&mut val))),
            _ => {
                raw.push(c);
                val.push(c);
            }
        }
    }
    out.push((raw, val));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_select_postgresql() {
        assert!(is_url("postgresql://u@h/db"));
        assert!(is_url("postgres://u@h/db"));
        assert!(!is_url("/var/lib/rtscope/results.db"));
        assert!(!is_url("postgresql.db"));
        // Schemes are case-insensitive (RFC 3986); other schemes are not
        // PostgreSQL, and not file names either (Location::resolve refuses).
        assert!(is_url("POSTGRESQL://u@h/db"));
        assert!(is_url("Postgres://u@h/db"));
        assert!(!is_url("pg://u@h/db"));
        assert_eq!(url_scheme("pg://rt:pw@h/db"), Some("pg"));
        assert_eq!(url_scheme("./pg://x"), None);
        assert_eq!(url_scheme("/tmp/a://b"), None);
        assert!(Target::parse_with("POSTGRESQL://rt@127.0.0.1:5/rt", &env()).is_ok());
    }

    #[test]
    fn redaction_hides_every_form_of_password() {
        assert_eq!(redact_secrets("--db=postgres://alice:s3cret@localhost/rt"), "--db=postgres://alice:***@localhost/rt");
        assert_eq!(redact_secrets("POSTGRESQL://alice:s3cret@h/rt"), "POSTGRESQL://alice:***@h/rt");
        assert_eq!(redact_secrets("postgres-notes.txt"), "postgres-notes.txt");
        assert_eq!(redact_secrets("postgresql://lab:s3cret@db:5432/rt"), "postgresql://lab:***@db:5432/rt");
        assert_eq!(redact_secrets("postgres://lab@db/rt?sslmode=require"), "postgres://lab@db/rt?sslmode=require");
        assert_eq!(redact_secrets("postgresql://lab@db/rt?sslmode=require&password=s3cret"), "postgresql://lab@db/rt?sslmode=require&password=***");
        // An unescaped @ or / in the password does not leak any of it.
        let r = redact_secrets("postgresql://lab:p@ss/w0rd@db/rt");
        assert!(!r.contains("ss/w0rd") && !r.contains("p@ss"), "{r}");
        assert_eq!(redact_secrets("postgresql://db/rt"), "postgresql://db/rt");
        assert_eq!(redact_secrets("postgresql://rt@127.0.0.1:5432/rt"), "postgresql://rt@127.0.0.1:5432/rt");
    }

    #[test]
    fn redaction_finds_every_url_and_every_password_form() {
        let cases = [
            // A `?` in the password: the query split came first and left it whole.
            ("postgres://adv2:ab?cdSECRET2@127.0.0.1/db", "SECRET2", "postgres://adv2:***@127.0.0.1/db"),
            ("--db=postgres://u:a/b?c@dSECRET@h/db", "SECRET", "--db=postgres://u:***@h/db"),
            // Inside another argument, after another word, any scheme, each occurrence.
            ("cmd:pgbench -c 2 postgresql://user:pwSECRET@127.0.0.1/bench", "SECRET", "cmd:pgbench -c 2 postgresql://user:***@127.0.0.1/bench"),
            ("a https://x:SECRET@h/p then mysql://y:SECRET@h2 'redis://:SECRET@h3'", "SECRET", "a https://x:***@h/p then mysql://y:***@h2 'redis://:***@h3'"),
            ("postgres://u@h/db?password=SECRET&sslmode=require", "SECRET", "postgres://u@h/db?password=***&sslmode=require"),
            ("host=h PASSWORD=SECRET dbname=x", "SECRET", "host=h PASSWORD=*** dbname=x"),
            // A URL inside another URL.
            ("postgres://u@h/db?x=http://a:SECRET@c", "SECRET", "postgres://u@h/db?x=http:***@c"),
        ];
        for (arg, secret, want) in cases {
            let r = redact_secrets(arg);
            assert!(!r.contains(secret), "{arg} -> {r}");
            assert_eq!(r, want, "{arg}");
        }
        for plain in ["/tmp/a://b", "exec:ssh board rtscope-agent", "tcp:127.0.0.1:7000", "--cycle=idle:1m,cpu:1m", "user@host:/dir"] {
            assert_eq!(redact_secrets(plain), plain);
        }
    }

    fn env() -> Env {
        Env { login: Some("me".into()), ..Env::default() }
    }

    #[test]
    fn password_precedence_url_then_pgpassword_then_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "db:5432:rt:lab:from-file\n").unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let e = Env { pgpassfile: Some(file.clone()), ..env() };
        let pw = |url: &str, e: &Env| Target::parse_with(url, e).unwrap().config.get_password().map(|p| String::from_utf8_lossy(p).into_owned());
        assert_eq!(pw("postgresql://lab@db/rt", &e).as_deref(), Some("from-file"));
        let with_env = Env { pgpassword: Some("from-env".into()), ..e.clone() };
        assert_eq!(pw("postgresql://lab@db/rt", &with_env).as_deref(), Some("from-env"));
        assert_eq!(pw("postgresql://lab:from-url@db/rt", &with_env).as_deref(), Some("from-url"));
        // Another user: no line matches.
        assert_eq!(pw("postgresql://other@db/rt", &e), None);
        // Group-readable: ignored, as libpq does.
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
        assert_eq!(pw("postgresql://lab@db/rt", &e), None);
    }

    #[test]
    fn password_file_lines_wildcards_escapes_and_defaults() {
        let text = "# comment\n\
                    other:*:*:*:no\n\
                    db:5433:*:lab:port-5433\n\
                    db:*:rt:lab:pw\\:with\\\\colon\n\
                    *:*:*:*:fallback\n";
        assert_eq!(lookup(text, ["db", "5433", "x", "lab"]).as_deref(), Some("port-5433"));
        assert_eq!(lookup(text, ["db", "5432", "rt", "lab"]).as_deref(), Some("pw:with\\colon"));
        assert_eq!(lookup(text, ["elsewhere", "5432", "rt", "lab"]).as_deref(), Some("fallback"));
        // An escaped star is a literal star, not the wildcard.
        assert_eq!(lookup("\\*:*:*:*:x\n", ["db", "1", "d", "u"]), None);
        assert_eq!(lookup("\\*:*:*:*:x\n", ["*", "1", "d", "u"]).as_deref(), Some("x"));
        // The database defaults to the user name, the port to 5432.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "db:5432:lab:lab:default-db\n").unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let t = Target::parse_with("postgresql://lab@db", &Env { pgpassfile: Some(file), ..env() }).unwrap();
        assert_eq!(t.config.get_password(), Some(&b"default-db"[..]));
    }

    #[test]
    fn bad_urls_are_exit_2_without_the_password() {
        let e = Target::parse_with("postgresql://lab:s3cret@db/rt?sslmode=verify-full", &env()).unwrap_err();
        assert!(e.0.contains("verify-full") && !e.0.contains("s3cret"), "{}", e.0);
        let e = Target::parse_with("postgresql://lab:s3cret@db/rt?sslmode=sometimes", &env()).unwrap_err();
        assert!(e.0.contains("lab:***@db") && !e.0.contains("s3cret"), "{}", e.0);
    }
}
