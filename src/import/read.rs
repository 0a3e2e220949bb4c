//! Reading an input: its opening bytes for format detection
//! ([`read_head`]), its lines one at a time ([`Lines`]), and the field
//! parsers every text format shares ([`uint`], [`decimal_us_to_ns`], ...).
//! Every failure is a [`ParseError`] naming the line (1-based) and what was
//! expected; nothing here panics on any input.

use std::fmt;

use super::format::format_list;

/// The opening `limit` bytes of `r` after any leading byte-order mark and
/// ASCII white space, and how many bytes were skipped: format detection
/// looks at content, and megabytes of blank space before it must not hide it.
/// The mark is kept in the returned bytes when it comes first (detection
/// drops it). Also returns the line breaks skipped, for error positions.
pub(crate) fn read_head(r: impl std::io::Read, limit: usize) -> std::io::Result<(Vec<u8>, u64, usize)> {
    use std::io::{BufRead, Read};
    let mut r = std::io::BufReader::with_capacity(64 << 10, r);
    let (mut skipped, mut lines) = (0u64, 0usize);
    let bom = "\u{feff}".as_bytes();
    let mut head = Vec::new();
    if r.fill_buf()?.starts_with(bom) {
        r.consume(bom.len());
        head.extend_from_slice(bom);
    }
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let n = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let done = n < buf.len();
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
        r.consume(n);
        skipped += n as u64;
        if done {
            break;
        }
    }
    r.take((limit - head.len()) as u64).read_to_end(&mut head)?;
    Ok((head, skipped, lines))
}

/// What went wrong where: `line` is 1-based, 0 when the problem is the file
/// as a whole (e.g. "no RTS| line: truncated?").
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub(crate) line: usize,
    pub(crate) msg: String,
}

impl ParseError {
    pub(crate) fn at(line: usize, msg: impl Into<String>) -> ParseError {
        ParseError { line, msg: msg.into() }
    }
    pub(crate) fn file(msg: impl Into<String>) -> ParseError {
        ParseError { line: 0, msg: msg.into() }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, self.msg)
        } else {
            f.write_str(&self.msg)
        }
    }
}

/// One line of an input (without its end of line), or why it could not be
/// read.
pub(crate) type Line = Result<String, ParseError>;

/// The lines of a reader, one at a time: a leading byte-order mark is
/// dropped, `\r\n` ends a line like `\n`, and invalid UTF-8 is an error
/// naming the line.
pub(crate) struct Lines<R> {
    r: R,
    n: usize,
    buf: Vec<u8>,
    /// Bytes read so far: where the next line starts.
    offset: u64,
}

impl<R: std::io::BufRead> Lines<R> {
    pub(crate) fn new(r: R) -> Lines<R> {
        Lines { r, n: 0, buf: Vec::new(), offset: 0 }
    }
    /// The byte offset of the next line (the bytes read so far).
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }
    /// The reader, for formats read by a parser of their own (JSON, CSV),
    /// with the byte-order mark skipped if nothing was read yet.
    pub(crate) fn reader(&mut self) -> &mut R {
        if self.n == 0 {
            if let Ok(head) = self.r.fill_buf() {
                if head.starts_with("\u{feff}".as_bytes()) {
                    self.r.consume(3);
                }
            }
        }
        &mut self.r
    }
}

/// The longest line a text format may have (1 MiB): the widest tables
/// these tools print ([`super::Hist::MAX_SERIES`] columns of counts) are a
/// few hundred KB; a longer line is an error, not memory.
pub(crate) const MAX_LINE: usize = 1 << 20;

impl<R: std::io::BufRead> Iterator for Lines<R> {
    type Item = Line;
    fn next(&mut self) -> Option<Line> {
        self.buf.clear();
        match std::io::BufRead::read_until(&mut std::io::Read::take(&mut self.r, MAX_LINE as u64 + 1), b'\n', &mut self.buf) {
            Ok(0) => return None,
            Ok(k) => self.offset += k as u64,
            Err(e) => return Some(Err(ParseError::at(self.n + 1, format!("cannot read: {e}")))),
        }
        self.n += 1;
        if self.buf.len() > MAX_LINE {
            return Some(Err(ParseError::at(self.n, format!("a line longer than {MAX_LINE} bytes: no output of these tools has one; check the file"))));
        }
        Some(text_of(&mut self.buf, self.n))
    }
}

/// A CSV file read one cell at a time (`#` comments, quotes, cells trimmed
/// as `csv`'s `Trim::All` trims them): memory for one cell of at most
/// [`CsvCells::MAX_CELL`] bytes, never for a whole record, so a header of
/// 10 M cells can be refused at its 100 001st one rather than after it is
/// held (a record of `csv` holds its text and 8 bytes per cell).
pub(crate) struct CsvCells<R> {
    r: R,
    core: csv_core::Reader,
    cell: Vec<u8>,
    /// The line a record is named by (`csv`'s record position: the line
    /// after the record before it, comments and blank lines included).
    line: u64,
    record_ended: bool,
}

impl<R: std::io::BufRead> CsvCells<R> {
    /// The longest cell (unquoted, before trimming): a system name or a
    /// number is shorter; a longer one is an error, not memory.
    pub(crate) const MAX_CELL: usize = 256;

    pub(crate) fn new(r: R) -> CsvCells<R> {
        let core = csv_core::ReaderBuilder::new().comment(Some(b'#')).build();
        CsvCells { r, core, cell: vec![0; 64], line: 1, record_ended: false }
    }

    /// The next cell, trimmed, whether it ends its record and the line its
    /// record is named by; `None` at the end of the file.
    pub(crate) fn next_cell(&mut self) -> Result<Option<(&str, bool, usize)>, ParseError> {
        use csv_core::ReadFieldResult::*;
        if self.record_ended {
            self.line = self.core.line();
            self.record_ended = false;
        }
        let (mut len, line) = (0, self.line as usize);
        loop {
            let input = self.r.fill_buf().map_err(|e| ParseError::at(line, format!("cannot read: {e}")))?;
            let (res, nin, nout) = self.core.read_field(input, &mut self.cell[len..]);
            self.r.consume(nin);
            len += nout;
            match res {
                InputEmpty => {}
                OutputFull if self.cell.len() > Self::MAX_CELL => {
                    // The buffer held MAX_CELL + 1 bytes and the cell goes on.
                    return Err(ParseError::at(
                        line,
                        format!("a cell longer than {} bytes: no system name or number is that long; check the file", Self::MAX_CELL),
                    ));
                }
                OutputFull => self.cell.resize((self.cell.len() * 2).min(Self::MAX_CELL + 1), 0),
                Field { record_end } => {
                    self.record_ended = record_end;
                    let text = std::str::from_utf8(&self.cell[..len])
                        .map_err(|e| ParseError::at(line, format!("not valid CSV: not UTF-8 (invalid byte {} bytes into a cell)", e.valid_up_to())))?;
                    return Ok(Some((text.trim(), record_end, line)));
                }
                End => return Ok(None),
            }
        }
    }

    /// The rest of the record whose last cell read was `end`-ing it or not:
    /// how many cells it still had and whether they were all empty (a
    /// record to skip, or to count for a "too many cells" message).
    pub(crate) fn rest_of_record(&mut self, mut end: bool) -> Result<(usize, bool), ParseError> {
        let (mut count, mut empty) = (0, true);
        while !end {
            let (t, e, _) = self.next_cell()?.unwrap_or(("", true, 0));
            (count, empty, end) = (count + 1, empty && t.is_empty(), e);
        }
        Ok((count, empty))
    }

    /// The rest of header line `line`: one system name per cell, the first
    /// in column `first_column`; `room(k)` is asked before the `k`th is
    /// kept (a cap refused as the header is read), and the names are
    /// checked (none empty, none twice).
    pub(crate) fn names(&mut self, line: usize, first_column: usize, room: impl Fn(usize) -> Result<(), ParseError>) -> Result<Vec<String>, ParseError> {
        let mut names = Vec::new();
        let mut end = false;
        while !end {
            let (t, e, _) = self.next_cell()?.unwrap_or(("", true, line));
            room(names.len() + 1)?;
            names.push(t.to_string());
            end = e;
        }
        check_system_names(names.iter().enumerate().map(|(k, s)| (k + first_column, s.as_str())), line)?;
        Ok(names)
    }
}

/// Line `n` as read with its end of line into `buf`: the end of line (and
/// line 1's byte-order mark) dropped, checked to be UTF-8.
fn text_of(buf: &mut Vec<u8>, n: usize) -> Line {
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    }
    let start = if n == 1 && buf.starts_with("\u{feff}".as_bytes()) { 3 } else { 0 };
    match std::str::from_utf8(&buf[start..]) {
        Ok(t) => Ok(t.to_string()),
        Err(e) => Err(ParseError::at(
            n,
            format!("not UTF-8 text (invalid byte at column {}); expected the text output of one of: {}", e.valid_up_to() + 1, format_list()),
        )),
    }
}

/// Where lines start, every [`Marks::EVERY`]th one, noted while a file is
/// read (a few bytes per thousand lines), so a second read can go back to
/// any line ([`Reread`]).
#[derive(Debug, Default)]
pub(crate) struct Marks {
    offsets: Vec<u64>,
    /// The file's length as the first read saw it.
    len: u64,
}

impl Marks {
    const EVERY: usize = 16;

    /// Line `n` (1-based) starts at byte `offset`.
    pub(crate) fn note(&mut self, n: usize, offset: u64) {
        if (n - 1).is_multiple_of(Self::EVERY) {
            self.offsets.push(offset);
        }
    }

    /// The whole file was read: it is `len` bytes long.
    pub(crate) fn end(&mut self, len: u64) {
        self.len = len;
    }
}

/// A reader that can be rewound to its first byte and sought in.
pub(crate) trait ReadSeek: std::io::BufRead + std::io::Seek {}
impl<T: std::io::BufRead + std::io::Seek> ReadSeek for T {}

/// The input read again, line by line number, for a format read in two
/// passes: forward as long as the lines asked for come in order, from the
/// nearest mark before a line otherwise. The file must be the one the
/// first pass read: the same length, and each line what its parser
/// expects there (it says so with [`Reread::changed`]).
pub(crate) struct Reread {
    r: Box<dyn ReadSeek>,
    marks: std::rc::Rc<Marks>,
    /// The number of the line the reader is at.
    next: usize,
    buf: Vec<u8>,
}

impl Reread {
    pub(crate) fn open(mut r: Box<dyn ReadSeek>, marks: std::rc::Rc<Marks>) -> Result<Reread, ParseError> {
        let len = r.seek(std::io::SeekFrom::End(0)).map_err(Reread::cannot)?;
        if len != marks.len {
            return Err(Reread::changed(&format!("{} bytes long, then {len}", marks.len)));
        }
        r.rewind().map_err(Reread::cannot)?;
        Ok(Reread { r, marks, next: 1, buf: Vec::new() })
    }

    /// Line `n` (1-based), as [`Lines`] gives it.
    pub(crate) fn line(&mut self, n: usize) -> Line {
        if n < self.next || n - self.next > 2 * Marks::EVERY {
            let k = (n - 1) / Marks::EVERY;
            let at = *self.marks.offsets.get(k).ok_or_else(|| Reread::changed(&format!("no line {n}")))?;
            self.r.seek(std::io::SeekFrom::Start(at)).map_err(|e| ParseError::at(n, format!("cannot read the file again: {e}")))?;
            self.next = k * Marks::EVERY + 1;
        }
        loop {
            self.buf.clear();
            match self.r.read_until(b'\n', &mut self.buf) {
                Ok(0) => return Err(Reread::changed(&format!("no line {n}"))),
                Ok(_) => {}
                Err(e) => return Err(ParseError::at(self.next, format!("cannot read the file again: {e}"))),
            }
            self.next += 1;
            if self.next > n {
                return text_of(&mut self.buf, n);
            }
        }
    }

    /// The error of a file that cannot be opened or read again.
    pub(crate) fn cannot(e: std::io::Error) -> ParseError {
        ParseError::file(format!("cannot read the file again: {e}"))
    }

    /// The error of a file that is not what the first read saw.
    pub(crate) fn changed(what: &str) -> ParseError {
        ParseError::file(format!("the file changed while it was read ({what}); import it again once it is complete"))
    }
}

/// Drop ANSI cursor-movement escapes (`ESC [ 4 A`), which the rt-tests tools
/// print when refreshing their status lines in a terminal.
/// A line without escapes is returned as it is, not copied.
pub(crate) fn strip_ansi(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\u{1b}') {
        return line.into();
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters, then one final byte in '@'..='~'.
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out.into()
}

/// The system names of a header line `line`, each with its column number:
/// none empty, none twice (a set: a header of 100 000 columns is checked
/// in linear time).
fn check_system_names<'a>(names: impl IntoIterator<Item = (usize, &'a str)>, line: usize) -> Result<(), ParseError> {
    let mut seen = std::collections::HashSet::new();
    for (col, name) in names {
        if name.is_empty() {
            return Err(ParseError::at(line, format!("column {col} has an empty system name")));
        }
        if !seen.insert(name) {
            return Err(ParseError::at(line, format!("system {name:?} appears twice in the header")));
        }
    }
    Ok(())
}

/// A non-negative integer field.
pub(crate) fn uint(tok: &str, line: usize, what: &str) -> Result<u64, ParseError> {
    let t = tok.trim();
    if t.starts_with('-') && t.len() > 1 && t[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError::at(line, format!("{what}: {t:?} is negative; expected a count or latency ≥ 0")));
    }
    t.parse::<u64>().map_err(|_| {
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            ParseError::at(line, format!("{what}: {t} is too large (more than 64 bits)"))
        } else {
            ParseError::at(line, format!("{what}: expected a non-negative integer, found {t:?}"))
        }
    })
}

/// A signed integer field.
pub(crate) fn int(tok: &str, line: usize, what: &str) -> Result<i64, ParseError> {
    let t = tok.trim();
    t.parse::<i64>().map_err(|_| ParseError::at(line, format!("{what}: expected an integer, found {t:?}")))
}

/// `v` µs in ns, refusing values that do not fit.
pub(crate) fn us_to_ns(v: u64, line: usize, what: &str) -> Result<u64, ParseError> {
    v.checked_mul(1000).filter(|&n| n <= i64::MAX as u64).ok_or_else(|| ParseError::at(line, format!("{what}: {v} µs is too large")))
}

/// A decimal number of µs ("-1.234", "12", "0.5") as signed ns, exactly for
/// up to 3 decimals (more are rounded half up).
pub(crate) fn decimal_us_to_ns(tok: &str, line: usize, what: &str) -> Result<i64, ParseError> {
    let t = tok.trim();
    let bad = || ParseError::at(line, format!("{what}: expected a number of µs like 12.345, found {t:?}"));
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (int_part, frac) = match body.split_once('.') {
        Some((i, f)) => (i, f),
        None => (body, ""),
    };
    if int_part.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    if !int_part.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let too_big = || ParseError::at(line, format!("{what}: {t} µs is too large"));
    let i: i64 = if int_part.is_empty() { 0 } else { int_part.parse().map_err(|_| too_big())? };
    let mut ns = i.checked_mul(1000).ok_or_else(too_big)?;
    let digits: Vec<i64> = frac.bytes().map(|b| (b - b'0') as i64).collect();
    let mut f = 0i64;
    for k in 0..3 {
        f = f * 10 + digits.get(k).copied().unwrap_or(0);
    }
    if digits.get(3).copied().unwrap_or(0) >= 5 {
        f += 1;
    }
    ns = ns.checked_add(f).ok_or_else(too_big)?;
    Ok(if neg { -ns } else { ns })
}

/// A decimal number (avg columns) as f64, rejecting NaN/inf.
pub(crate) fn float(tok: &str, line: usize, what: &str) -> Result<f64, ParseError> {
    let t = tok.trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(ParseError::at(line, format!("{what}: expected a number, found {t:?}"))),
    }
}

/// Clamp a signed ns latency to the unsigned schema, remembering the most
/// negative value seen for the fidelity note.
pub(crate) fn clamp_negative(v: i64, most_negative: &mut i64) -> u64 {
    if v < 0 {
        *most_negative = (*most_negative).min(v);
        0
    } else {
        v as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_us_is_exact_to_the_ns() {
        assert_eq!(decimal_us_to_ns("1.234", 1, "x").unwrap(), 1234);
        assert_eq!(decimal_us_to_ns("-0.871", 1, "x").unwrap(), -871);
        assert_eq!(decimal_us_to_ns("12", 1, "x").unwrap(), 12000);
        assert_eq!(decimal_us_to_ns("0.5", 1, "x").unwrap(), 500);
        assert_eq!(decimal_us_to_ns("0.0005", 1, "x").unwrap(), 1);
        assert!(decimal_us_to_ns("1.2.3", 1, "x").is_err());
        assert!(decimal_us_to_ns("", 1, "x").is_err());
        assert!(decimal_us_to_ns("99999999999999999999", 1, "x").is_err());
    }

    #[test]
    fn uint_explains_negative_and_huge() {
        assert!(uint("-3", 7, "count").unwrap_err().msg.contains("negative"));
        assert!(uint("99999999999999999999999", 7, "count").unwrap_err().msg.contains("too large"));
        assert_eq!(uint(" 42 ", 7, "count").unwrap(), 42);
    }

    #[test]
    fn ansi_escapes_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[4A#0: ID1"), "#0: ID1");
    }
}
