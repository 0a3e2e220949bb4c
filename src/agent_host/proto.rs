//! The agent's line protocol, version 1 (docs/agent.md is the reference):
//! `RTS1 <kind> <key>=<value> ... *<crc32>`. This module only turns one
//! line of text into a checked [`Line`] (and a [`Line`] into text); what the
//! lines mean in a session is `session`'s business.
//!
//! A line is accepted only whole: the checksum over everything before ` *`
//! must match, the kind must be one the host knows, every field must be
//! `key=value` with a lower-case key given once and a value of printable
//! ASCII with `%XX` escapes. Lines not starting with `RTS` are noise (a
//! serial console's kernel messages) and are told apart ([`Parsed::Noise`]),
//! never taken for protocol.

/// The protocol this build speaks.
pub(crate) const PROTOCOL: u32 = 1;
const MAGIC: &str = "RTS1";
/// Longest protocol line, from `R` to the last checksum digit.
pub(crate) const MAX_PROTOCOL_LINE: usize = 1024;

/// Kinds the agent sends.
pub(crate) const AGENT_KINDS: &[&str] =
    &["hello", "probe", "ready", "ack", "setup", "begin", "progress", "result", "hist", "tail", "sec", "note", "end", "done", "error", "bye"];
/// Kinds the host sends (a serial console with echo on returns them: ignored).
pub(crate) const HOST_KINDS: &[&str] = &["hi", "plan", "stop", "bye"];

/// One checked protocol line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) kind: String,
    /// In the order sent, values unescaped.
    pub(crate) fields: Vec<(String, String)>,
}

/// What one received line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parsed {
    Line(Line),
    /// Not protocol (does not start with `RTS`).
    Noise,
}

impl Line {
    pub(crate) fn new(kind: &str) -> Line {
        Line { kind: kind.to_string(), fields: Vec::new() }
    }

    /// Add a field (builder style, for the host's lines).
    pub(crate) fn with(mut self, key: &str, value: impl ToString) -> Line {
        self.fields.push((key.to_string(), value.to_string()));
        self
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A required field.
    pub(crate) fn req(&self, key: &str) -> Result<&str, String> {
        self.get(key).ok_or_else(|| format!("no {key}= field"))
    }

    /// A required unsigned number.
    pub(crate) fn num(&self, key: &str) -> Result<u64, String> {
        let v = self.req(key)?;
        v.parse().map_err(|_| format!("{key}={v} is not an unsigned number"))
    }

    /// A required unsigned number up to 128 bits (`sum`, `sumsq`).
    pub(crate) fn num128(&self, key: &str) -> Result<u128, String> {
        let v = self.req(key)?;
        v.parse().map_err(|_| format!("{key}={v} is not an unsigned number"))
    }

    /// `-` or an unsigned number.
    pub(crate) fn opt_num(&self, key: &str) -> Result<Option<u64>, String> {
        match self.req(key)? {
            "-" => Ok(None),
            v => v.parse().map(Some).map_err(|_| format!("{key}={v} is neither - nor an unsigned number")),
        }
    }

    /// The line as sent: fields escaped, checksum appended (no newline).
    pub(crate) fn encode(&self) -> String {
        let mut s = format!("{MAGIC} {}", self.kind);
        for (k, v) in &self.fields {
            s.push(' ');
            s.push_str(k);
            s.push('=');
            escape_into(v, &mut s);
        }
        let crc = crc32fast::hash(s.as_bytes());
        format!("{s} *{crc:08x}")
    }
}

fn escape_into(v: &str, out: &mut String) {
    for b in v.bytes() {
        if (0x21..=0x7e).contains(&b) && !matches!(b, b'%' | b'*' | b'=') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

fn unescape(v: &str) -> Result<String, String> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
                let h = hex.ok_or_else(|| format!("value {v:?}: % is not followed by two hex digits"))?;
                out.push(u8::from_str_radix(h, 16).expect("checked hex"));
                i += 3;
            }
            c if (0x21..=0x7e).contains(&c) && c != b'*' && c != b'=' => {
                out.push(c);
                i += 1;
            }
            c => return Err(format!("value {v:?}: byte 0x{c:02x} must be written %{c:02X}")),
        }
    }
    // Free text (uname's version, messages) may hold UTF-8; anything else is kept lossily.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Check and split one received line (without its line end). `Err` says
/// what is wrong with it; the caller names the line.
pub(crate) fn parse(text: &str) -> Result<Parsed, String> {
    if !text.starts_with("RTS") {
        return Ok(Parsed::Noise);
    }
    if text.len() > MAX_PROTOCOL_LINE {
        return Err(format!("{} bytes, longer than the protocol's {MAX_PROTOCOL_LINE}", text.len()));
    }
    let magic = text.split(' ').next().unwrap_or("");
    if magic != MAGIC {
        return Err(format!(
            "the agent speaks protocol {:?}, this rtscope speaks {PROTOCOL} ({MAGIC}); use an agent and rtscope of the same protocol",
            &magic[3..]
        ));
    }
    let (body, crc) = text.rsplit_once(" *").ok_or("no checksum (a line ends with ` *` and 8 hex digits)")?;
    if crc.len() != 8 || !crc.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) {
        return Err(format!("checksum {crc:?} is not 8 lower-case hex digits"));
    }
    let want = crc32fast::hash(body.as_bytes());
    if u32::from_str_radix(crc, 16).ok() != Some(want) {
        return Err(format!("checksum {crc} does not match the line (its CRC-32 is {want:08x}): damaged in transit"));
    }
    let mut words = body.split(' ');
    words.next(); // the magic
    let kind = words.next().unwrap_or("");
    if kind.is_empty() || !kind.bytes().all(|c| c.is_ascii_lowercase() || c == b'-') {
        return Err(format!("kind {kind:?} is not a lower-case word"));
    }
    if !AGENT_KINDS.contains(&kind) && !HOST_KINDS.contains(&kind) {
        return Err(format!("unknown kind {kind:?} (protocol {PROTOCOL} has {})", AGENT_KINDS.join(", ")));
    }
    let mut fields: Vec<(String, String)> = Vec::new();
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("field {w:?} is not key=value (or two spaces in a row)"))?;
        if k.is_empty() || !k.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'.') {
            return Err(format!("key {k:?} is not [a-z0-9_.]+"));
        }
        if fields.iter().any(|(x, _)| x == k) {
            return Err(format!("key {k} appears twice"));
        }
        fields.push((k.to_string(), unescape(v)?));
    }
    Ok(Parsed::Line(Line { kind: kind.to_string(), fields }))
}

/// Split a comma-separated list (`cpus=0,1`); empty → no items.
pub(crate) fn list(v: &str) -> Vec<&str> {
    if v.is_empty() {
        Vec::new()
    } else {
        v.split(',').collect()
    }
}

/// Items of a list whose parts are `:`-separated numbers, each of exactly
/// `parts` parts (`-` allowed where `dash` says, read as `None`).
pub(crate) fn tuples(key: &str, v: &str, parts: usize, dash: &[usize]) -> Result<Vec<Vec<Option<u128>>>, String> {
    let mut out = Vec::new();
    for item in list(v) {
        let xs: Vec<&str> = item.split(':').collect();
        if xs.len() != parts {
            return Err(format!("{key}: item {item:?} has {} parts, expected {parts}", xs.len()));
        }
        let mut row = Vec::with_capacity(parts);
        for (i, x) in xs.iter().enumerate() {
            if *x == "-" && dash.contains(&i) {
                row.push(None);
            } else {
                row.push(Some(x.parse::<u128>().map_err(|_| format!("{key}: {x:?} in {item:?} is not an unsigned number"))?));
            }
        }
        out.push(row);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip_and_escapes() {
        let l = Line::new("hello").with("version", "#1 SMP 50%*=x").with("cpus", 2).with("detail", "");
        let text = l.encode();
        assert!(text.starts_with("RTS1 hello version=#1%20SMP%2050%25%2A%3Dx cpus=2 detail= *"), "{text}");
        assert_eq!(parse(&text).unwrap(), Parsed::Line(l));
    }

    #[test]
    fn the_documented_example_checksum() {
        // docs/agent.md: `RTS1 bye *` + crc32(`RTS1 bye`).
        let text = format!("RTS1 bye *{:08x}", crc32fast::hash(b"RTS1 bye"));
        assert_eq!(parse(&text).unwrap(), Parsed::Line(Line::new("bye")));
        assert_eq!(Line::new("bye").encode(), text);
    }

    #[test]
    fn noise_version_and_broken_lines() {
        assert_eq!(parse("[   12.3] usb 1-1: new device").unwrap(), Parsed::Noise);
        assert_eq!(parse("").unwrap(), Parsed::Noise);
        assert!(parse(&Line::new("bye").encode().replace("RTS1", "RTS2")).unwrap_err().contains("protocol \"2\""));
        let good = Line::new("progress").with("samples", 5).encode();
        for bad in [good.replace("samples=5", "samples=6"), good[..good.len() - 1].to_string(), good.replace(" *", " "), good.to_uppercase()] {
            assert!(parse(&bad).is_err(), "{bad}");
        }
        let unknown = Line::new("telemetry").encode();
        assert!(parse(&unknown).unwrap_err().contains("unknown kind"));
        let dup = {
            let body = "RTS1 progress a=1 a=2";
            format!("{body} *{:08x}", crc32fast::hash(body.as_bytes()))
        };
        assert!(parse(&dup).unwrap_err().contains("twice"));
        let raw_eq = {
            let body = "RTS1 progress a=1=2";
            format!("{body} *{:08x}", crc32fast::hash(body.as_bytes()))
        };
        assert!(parse(&raw_eq).is_err());
    }

    #[test]
    fn tuples_parse_and_refuse() {
        assert_eq!(tuples("b", "1:1:3,2048:2049:4", 3, &[]).unwrap(), vec![vec![Some(1), Some(1), Some(3)], vec![Some(2048), Some(2049), Some(4)]]);
        assert_eq!(tuples("s", "5:6:7:-", 4, &[3]).unwrap(), vec![vec![Some(5), Some(6), Some(7), None]]);
        assert!(tuples("b", "1:1", 3, &[]).is_err());
        assert!(tuples("b", "1:x:1", 3, &[]).is_err());
        assert!(tuples("b", "1:-:1", 3, &[]).is_err());
        assert!(tuples("b", "", 3, &[]).unwrap().is_empty());
    }

    fn arb_line() -> impl Strategy<Value = Line> {
        let kind = proptest::sample::select(AGENT_KINDS.to_vec());
        let fields = proptest::collection::vec(("[a-z][a-z0-9_]{0,6}", "\\PC{0,12}"), 0..6);
        (kind, fields).prop_map(|(k, fs)| {
            let mut l = Line::new(k);
            for (key, v) in fs {
                if l.get(&key).is_none() {
                    l = l.with(&key, v);
                }
            }
            l
        })
    }

    proptest! {
        #[test]
        fn every_encoded_line_parses_back(l in arb_line()) {
            let text = l.encode();
            prop_assume!(text.len() <= MAX_PROTOCOL_LINE);
            prop_assert_eq!(parse(&text).unwrap(), Parsed::Line(l));
        }

        /// Truncated anywhere after the magic: never accepted (a cut inside
        /// the checksum or before it cannot match), never a panic.
        #[test]
        fn truncated_lines_are_refused(l in arb_line(), cut in 0usize..2000) {
            let text = l.encode();
            let cut = 4 + cut % (text.len() - 4);
            let t = &text.as_bytes()[..cut];
            let t = String::from_utf8_lossy(t);
            prop_assert!(parse(&t).is_err(), "accepted {:?}", t);
        }

        /// One byte changed (any position, any value): refused or noise, never the same or another line.
        #[test]
        fn one_changed_byte_is_refused(l in arb_line(), at in 0usize..2000, by in 1u8..=255) {
            let text = l.encode();
            let mut b = text.clone().into_bytes();
            let i = at % b.len();
            b[i] ^= by;
            let t = String::from_utf8_lossy(&b).into_owned();
            prop_assume!(t != text);
            match parse(&t) {
                Ok(Parsed::Noise) => prop_assert!(i < 3, "noise only when the magic is hit"),
                Ok(Parsed::Line(x)) => prop_assert!(false, "accepted a damaged line as {:?}", x),
                Err(_) => {}
            }
        }

        /// Fields reordered keep the content but break the checksum.
        #[test]
        fn reordered_fields_are_refused(l in arb_line()) {
            prop_assume!(l.fields.len() >= 2);
            let text = l.encode();
            let mut r = l.clone();
            r.fields.reverse();
            let (body, _) = r.encode().rsplit_once(" *").map(|(b, c)| (b.to_string(), c.to_string())).unwrap();
            let crc = text.rsplit_once(" *").unwrap().1;
            let swapped = format!("{body} *{crc}");
            prop_assume!(swapped != text);
            prop_assert!(parse(&swapped).is_err());
        }

        /// Oversized and arbitrary text: an error or noise, never a panic.
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,2000}", pad in 0usize..1200) {
            let _ = parse(&s);
            let long = format!("RTS1 progress x={} *00000000", "a".repeat(MAX_PROTOCOL_LINE + pad));
            prop_assert!(parse(&long).is_err());
        }
    }
}
