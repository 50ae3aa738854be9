//! A lean MySQL-protocol session for the connections benchmark clients drive: blocking socket,
//! one reusable buffer each way, prepared statements whose parameter types are sent once and
//! whose rows are counted, never decoded.
//!
//! Why not the `mysql` crate here (it still does every other MariaDB job: admin, loads,
//! footprints)? On two cores client and server share the CPU, so a client's cost per
//! statement is taken from the server. The crate sends every parameter's type with every
//! execution, binds every integer as a 64-bit one, turns every row of a result into owned
//! values, and cannot ask MariaDB (10.6+) to skip resending a statement's column definitions
//! on each execution (`MARIADB_CLIENT_CACHE_METADATA`) — which libmariadb, and so sysbench,
//! does. The wire format is the one the MariaDB and MySQL protocol documentation describe;
//! `mysql_common` (the `mysql` crate's own protocol crate) supplies the password scramble.
//!
//! Multi-statements are off: the server refuses a string holding several statements.
//!
//! It speaks the methods servers ask for: `mysql_native_password`, `caching_sha2_password`
//! (fast authentication, and full authentication with the password encrypted under the
//! server's RSA public key), `sha256_password` (the same key) and MariaDB's `client_ed25519`.
//! Any other method is [`Unsupported`], and the contender fails before anything runs: no
//! benchmark session is ever served by another client.

use crate::engine::target::{Target, TlsMode};
use crate::engine::{Changes, EngineError, Overlap, Result, Session, StmtId, Value};
use crate::engines::wire::recv_buf::{RECV_BUF_BYTES, RecvBuf};
use crate::engines::wire::tls::{Now, Stream};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::Duration;

// Capability flags (protocol documentation names).
const CLIENT_LONG_PASSWORD: u32 = 1; // CLIENT_MYSQL: a MariaDB server leaves it unset
const CLIENT_LONG_FLAG: u32 = 1 << 2;
const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
const CLIENT_PROTOCOL_41: u32 = 1 << 9;
const CLIENT_SSL: u32 = 1 << 11;
const CLIENT_TRANSACTIONS: u32 = 1 << 13;
const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
const CLIENT_PLUGIN_AUTH_LENENC_DATA: u32 = 1 << 21;
const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
/// MariaDB's extended capability `MARIADB_CLIENT_CACHE_METADATA` (bit 36 overall, bit 4 of
/// the extended word).
const MARIADB_CACHE_METADATA: u32 = 1 << 4;

const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;

const MYSQL_TYPE_TINY: u8 = 1;
const MYSQL_TYPE_SHORT: u8 = 2;
const MYSQL_TYPE_LONG: u8 = 3;
const MYSQL_TYPE_FLOAT: u8 = 4;
const MYSQL_TYPE_DOUBLE: u8 = 5;
const MYSQL_TYPE_NULL: u8 = 6;
const MYSQL_TYPE_TIMESTAMP: u8 = 7;
const MYSQL_TYPE_LONGLONG: u8 = 8;
const MYSQL_TYPE_INT24: u8 = 9;
const MYSQL_TYPE_DATE: u8 = 10;
const MYSQL_TYPE_TIME: u8 = 11;
const MYSQL_TYPE_DATETIME: u8 = 12;
const MYSQL_TYPE_YEAR: u8 = 13;
/// A column definition's flag for unsigned integers.
const UNSIGNED_FLAG: u16 = 0x20;
const MYSQL_TYPE_VAR_STRING: u8 = 253;

/// utf8mb4_general_ci, the collation the `mysql` crate and MariaDB's clients default to.
const COLLATION_UTF8MB4: u8 = 45;
/// A payload of this length continues in the next packet.
const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// The server asked for an authentication exchange this client does not speak.
#[derive(Debug)]
pub struct Unsupported(pub String);

/// Why connecting failed.
pub enum ConnectError {
    Unsupported(Unsupported),
    Failed(EngineError),
}

impl From<EngineError> for ConnectError {
    fn from(e: EngineError) -> Self {
        ConnectError::Failed(e)
    }
}

struct Prepared {
    id: u32,
    params: usize,
    /// Parameter types last sent for this statement (two bytes each); re-sent only when
    /// they change.
    sent_types: Option<Vec<u8>>,
    /// Its result's columns, as the server last described them.
    columns: Vec<ColType>,
}

/// A result column's type, as a binary-protocol row encodes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ColType {
    ty: u8,
    unsigned: bool,
}

/// Where the rows of [`WireSession::run_rows`] go: their values, decoded by the columns'
/// types (which a result's definitions replace when the server sends them).
struct Decode<'a> {
    types: &'a mut Vec<ColType>,
    out: &'a mut Vec<Value>,
}

/// One connection and its prepared statements.
pub struct WireSession {
    sock: Stream,
    rb: RecvBuf,
    /// The payload of a packet split over several (over 16 MiB), joined.
    joined: Vec<u8>,
    wbuf: Vec<u8>,
    seq: u8,
    caps: u32,
    cache_metadata: bool,
    /// The server is MariaDB (not MySQL): its OK packets' info strings are length-encoded.
    mariadb: bool,
    stmts: Vec<Prepared>,
}

/// What the server's greeting says.
struct Greeting {
    nonce: Vec<u8>,
    /// Its capability flags.
    caps: u32,
    /// MariaDB's extended capabilities (0 from MySQL).
    ext: u32,
    /// The method named after the nonce, the server's default.
    default_method: Vec<u8>,
}

/// Where a packet's payload is: in the receive buffer or joined from several packets.
#[derive(Clone, Copy)]
enum At {
    Buf((usize, usize)),
    Joined,
}

/// The statement that limits a session's statements to `limit` (`None`: no limit): MariaDB's
/// `max_statement_time` in seconds, or MySQL's `max_execution_time` in milliseconds (which
/// bounds SELECTs only). Shared with the `mysql` crate path.
pub fn timeout_sql(mariadb: bool, limit: Option<std::time::Duration>) -> String {
    let d = limit.unwrap_or_default();
    if mariadb {
        // microseconds, at least one: a limit that rounds to 0 would be none
        let us = d.as_micros().max(u128::from(limit.is_some()));
        format!(
            "SET SESSION max_statement_time = {}.{:06}",
            us / 1_000_000,
            us % 1_000_000
        )
    } else {
        format!(
            "SET SESSION max_execution_time = {}",
            d.as_millis().max(u128::from(limit.is_some()))
        )
    }
}

/// Kind of failure for a server error code, shared with the `mysql` crate path.
pub fn kind_for_code(code: u16) -> &'static str {
    match code {
        1040 => "too_many_connections",
        1213 => "deadlock",
        1205 => "lock_timeout",
        1062 => "constraint",
        1021 | 1114 => "disk_full",
        1091 | 1146 | 1054 | 1064 => "sql",
        // ALGORITHM=... not supported for this change
        1845 | 1846 | 4092 => "unsupported_algorithm",
        // MariaDB's max_statement_time, MySQL's max_execution_time ran out
        1969 | 3024 => crate::engine::TIMEOUT,
        _ => "server",
    }
}

fn io_err(e: std::io::Error) -> EngineError {
    crate::engines::wire::tcp::io_error("mariadb", e)
}

/// Longest wait for the server's greeting and the authentication exchange.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

fn proto_err(what: &str) -> EngineError {
    EngineError::new(
        "client",
        format!("mariadb: malformed server packet: {what}"),
    )
}

/// A server ERR packet (`0xFF`, code, optional `#` + SQL state, message) as an engine error,
/// worded like the `mysql` crate's.
fn server_err(p: &[u8]) -> EngineError {
    let code = p.get(1..3).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    let (state, msg) = match p.get(3) {
        Some(b'#') if p.len() >= 9 => (String::from_utf8_lossy(&p[4..9]).into_owned(), &p[9..]),
        _ => (String::from("HY000"), p.get(3..).unwrap_or(&[])),
    };
    EngineError::new(
        kind_for_code(code),
        format!(
            "mariadb: ERROR {code} ({state}): {}",
            String::from_utf8_lossy(msg)
        ),
    )
}

/// Reads protocol fields from a payload.
struct Cursor<'a> {
    p: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(p: &'a [u8]) -> Self {
        Cursor { p, at: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .p
            .get(self.at..self.at + n)
            .ok_or_else(|| proto_err("too short"))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// A length-encoded integer; `None` for the NULL marker `0xFB`.
    fn lenenc(&mut self) -> Result<Option<u64>> {
        let v = match self.u8()? {
            0xFB => return Ok(None),
            0xFC => u64::from(self.u16()?),
            0xFD => {
                let b = self.take(3)?;
                u64::from(b[0]) | u64::from(b[1]) << 8 | u64::from(b[2]) << 16
            }
            0xFE => {
                let b = self.take(8)?;
                u64::from_le_bytes(b.try_into().expect("8 bytes"))
            }
            b => u64::from(b),
        };
        Ok(Some(v))
    }
    fn nul_str(&mut self) -> Result<&'a [u8]> {
        let rest = &self.p[self.at.min(self.p.len())..];
        let n = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| proto_err("unterminated string"))?;
        self.at += n + 1;
        Ok(&rest[..n])
    }
    fn rest(&self) -> &'a [u8] {
        &self.p[self.at.min(self.p.len())..]
    }
}

/// The type of a column definition packet (`Protocol::ColumnDefinition41`).
fn column_type(p: &[u8]) -> Result<ColType> {
    let mut c = Cursor::new(p);
    // catalog, schema, table, original table, name, original name
    for _ in 0..6 {
        let n = c.lenenc()?.unwrap_or(0);
        c.take(n as usize)?;
    }
    c.lenenc()?; // length of the fixed fields
    c.u16()?; // character set
    c.u32()?; // display length
    let ty = c.u8()?;
    let flags = c.u16()?;
    Ok(ColType {
        ty,
        unsigned: flags & UNSIGNED_FLAG != 0,
    })
}

/// One binary-protocol row's values, appended to `out` (the format is the protocol
/// documentation's `Binary Protocol Resultset Row`: a NULL bitmap offset by two bits, then
/// each non-NULL value in its type's encoding).
fn decode_binary_row(p: &[u8], cols: &[ColType], out: &mut Vec<Value>) -> Result<()> {
    let bitmap_len = (cols.len() + 7 + 2) / 8;
    let bitmap = p
        .get(1..1 + bitmap_len)
        .ok_or_else(|| proto_err("row's NULL bitmap"))?;
    let mut c = Cursor::new(&p[1 + bitmap_len..]);
    for (i, col) in cols.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            out.push(Value::Null);
            continue;
        }
        let int = |b: &[u8]| -> i64 {
            let mut v = [0u8; 8];
            v[..b.len()].copy_from_slice(b);
            let u = u64::from_le_bytes(v);
            let shift = 64 - 8 * b.len() as u32;
            if col.unsigned || shift == 0 {
                u as i64
            } else {
                ((u << shift) as i64) >> shift
            }
        };
        let v = match col.ty {
            MYSQL_TYPE_TINY => Value::Int(int(c.take(1)?)),
            MYSQL_TYPE_SHORT | MYSQL_TYPE_YEAR => Value::Int(int(c.take(2)?)),
            MYSQL_TYPE_LONG | MYSQL_TYPE_INT24 => Value::Int(int(c.take(4)?)),
            MYSQL_TYPE_LONGLONG => Value::Int(int(c.take(8)?)),
            MYSQL_TYPE_FLOAT => {
                let b = c.take(4)?;
                Value::Text(f32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_string())
            }
            MYSQL_TYPE_DOUBLE => {
                let b = c.take(8)?;
                Value::Text(f64::from_le_bytes(b.try_into().expect("8 bytes")).to_string())
            }
            MYSQL_TYPE_NULL => Value::Null,
            MYSQL_TYPE_TIMESTAMP | MYSQL_TYPE_DATE | MYSQL_TYPE_DATETIME => {
                let n = usize::from(c.u8()?);
                Value::Text(binary_datetime(c.take(n)?))
            }
            MYSQL_TYPE_TIME => {
                let n = usize::from(c.u8()?);
                c.take(n)?;
                Value::Text("(time)".into())
            }
            // decimals, strings, blobs, enums, sets, bits, JSON: length-encoded bytes
            _ => {
                let n = c.lenenc()?.unwrap_or(0);
                Value::Text(String::from_utf8_lossy(c.take(n as usize)?).into_owned())
            }
        };
        out.push(v);
    }
    Ok(())
}

/// A binary DATE/DATETIME/TIMESTAMP (0, 4, 7 or 11 bytes) as `YYYY-MM-DD HH:MM:SS`.
fn binary_datetime(b: &[u8]) -> String {
    let at = |i: usize| u32::from(b.get(i).copied().unwrap_or(0));
    let year = at(0) | at(1) << 8;
    format!(
        "{year:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        at(2),
        at(3),
        at(4),
        at(5),
        at(6)
    )
}

fn put_lenenc(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=250 => out.push(v as u8),
        251..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// The status word of an OK packet (`0x00` or, ending rows, `0xFE`): header, affected rows,
/// last insert id, status.
fn ok_status(p: &[u8]) -> Result<(u64, u16)> {
    let mut c = Cursor::new(p);
    c.u8()?;
    let affected = c.lenenc()?.unwrap_or(0);
    c.lenenc()?;
    Ok((affected, c.u16()?))
}

/// The rest of an OK packet after its status: the warning count (16 bits, so at most
/// 65,535) and the info string, e.g. `Rows matched: 3  Changed: 2  Warnings: 0`. MariaDB
/// sends the info length-encoded. The protocol's description has MySQL, to a client without
/// session tracking (this one), send it to the end of the packet, but MySQL 5.6, 5.7 and 8.0
/// length-encode it too: a length that covers exactly the rest is read as one, else the rest
/// is the info.
fn ok_tail(p: &[u8], mariadb: bool) -> Result<(u16, String)> {
    let mut c = Cursor::new(p);
    c.u8()?;
    c.lenenc()?;
    c.lenenc()?;
    c.u16()?;
    let warnings = if c.rest().len() >= 2 { c.u16()? } else { 0 };
    let info = if c.rest().is_empty() {
        c.rest()
    } else if mariadb {
        let n = c.lenenc()?.unwrap_or(0);
        c.take(n as usize)?
    } else {
        let rest = c.rest();
        let mut d = Cursor::new(rest);
        match d.lenenc() {
            Ok(Some(n)) if d.rest().len() as u64 == n => d.rest(),
            _ => rest,
        }
    };
    Ok((warnings, String::from_utf8_lossy(info).into_owned()))
}

/// The number after `label` in a MariaDB info string (`Rows matched: 81099  Changed: 81099
/// Warnings: 0`, `Records: 3  Deleted: 0  Skipped: 0  Warnings: 3`).
pub fn info_number(info: &str, label: &str) -> Option<u64> {
    let at = info.find(label)? + label.len();
    let rest = info[at..].trim_start_matches(|c: char| c == ':' || c.is_whitespace());
    let digits: &str = &rest[..rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len())];
    digits.parse().ok()
}

/// What a MariaDB server said about a change: affected rows as it counted them (changed
/// rows: dbduel never sets CLIENT_FOUND_ROWS), the OK packet's warning count and its info
/// string, read into matched and changed rows.
pub fn changes_from_ok(affected: u64, warnings: u16, info: &str) -> Changes {
    let info = info.trim();
    Changes {
        affected,
        matched: info_number(info, "Rows matched"),
        changed: info_number(info, "Changed"),
        // The info string's count is the server's whole count; the packet's stops at 65,535.
        warnings: Some(info_number(info, "Warnings").unwrap_or(u64::from(warnings))),
        info: (!info.is_empty()).then(|| info.to_string()),
    }
}

impl WireSession {
    /// Connect and authenticate; `Unsupported` when the server wants an authentication
    /// method other than `mysql_native_password`.
    pub fn connect(
        t: &Target,
        db: &str,
        timeout_s: u64,
    ) -> std::result::Result<Self, ConnectError> {
        match Self::connect_once(t, db, timeout_s) {
            Err(ConnectError::Failed(e)) if e.kind == "tls" && t.tls.mode == TlsMode::Prefer => {
                // As the mysql client's PREFERRED: TLS that cannot be had, in clear.
                Self::connect_once(&t.in_clear(), db, timeout_s)
            }
            r => r,
        }
    }

    fn connect_once(
        t: &Target,
        db: &str,
        timeout_s: u64,
    ) -> std::result::Result<Self, ConnectError> {
        let sock = crate::engines::wire::tcp::connect(&t.host, t.port, Duration::from_secs(10))
            .map_err(io_err)?;
        let limit = Some(Duration::from_secs(timeout_s.max(1)));
        // The server speaks first. A connection it never took from an overflowing listen
        // queue (back_log) looks established here but stays silent: give up on the greeting
        // after a while rather than after the query timeout.
        let greeting = HANDSHAKE_TIMEOUT.min(Duration::from_secs(timeout_s.max(1)));
        sock.set_read_timeout(Some(greeting)).map_err(io_err)?;
        sock.set_write_timeout(limit).map_err(io_err)?;
        let mut s = WireSession {
            sock: Stream::Plain(sock),
            rb: RecvBuf::with_capacity(RECV_BUF_BYTES),
            joined: Vec::new(),
            wbuf: Vec::with_capacity(4096),
            seq: 0,
            caps: 0,
            cache_metadata: false,
            mariadb: false,
            stmts: Vec::new(),
        };
        s.handshake(t, db).map_err(|e| match e {
            ConnectError::Failed(e) if crate::engines::wire::tcp::timed_out(&e) => {
                ConnectError::Failed(EngineError::new(
                    "connect_timeout",
                    format!(
                        "mariadb: no answer to the connection handshake within {} s (the server's listen queue, back_log, may have overflowed): {}",
                        greeting.as_secs(),
                        e.message
                    ),
                ))
            }
            e => e,
        })?;
        s.sock.tcp().set_read_timeout(limit).map_err(io_err)?;
        Ok(s)
    }

    /// What TLS the session negotiated: `TLSv1_3 TLS13_AES_256_GCM_SHA384`, or `off`.
    pub fn tls(&self) -> String {
        self.sock.describe()
    }

    /// Whether the server agreed to skip unchanged column definitions (MariaDB 10.6+).
    pub fn caches_metadata(&self) -> bool {
        self.cache_metadata
    }

    fn handshake(&mut self, t: &Target, db: &str) -> std::result::Result<(), ConnectError> {
        let g = self.read_greeting()?;
        let wanted = CLIENT_LONG_PASSWORD
            | CLIENT_LONG_FLAG
            | CLIENT_CONNECT_WITH_DB
            | CLIENT_PROTOCOL_41
            | CLIENT_TRANSACTIONS
            | CLIENT_SECURE_CONNECTION
            // Not CLIENT_MULTI_STATEMENTS (1 << 16): a string holding two statements is a
            // syntax error on the server, so no second statement rides along on a target.
            | CLIENT_MULTI_RESULTS
            | CLIENT_PS_MULTI_RESULTS
            | CLIENT_PLUGIN_AUTH
            | CLIENT_PLUGIN_AUTH_LENENC_DATA
            | CLIENT_DEPRECATE_EOF;
        self.caps = wanted & g.caps;
        // Skipped metadata is only unambiguous without EOF packets after column definitions.
        let ext_caps = if self.caps & CLIENT_DEPRECATE_EOF != 0 {
            g.ext & MARIADB_CACHE_METADATA
        } else {
            0
        };
        self.cache_metadata = ext_caps & MARIADB_CACHE_METADATA != 0;
        self.start_tls(t, g.caps, ext_caps)?;

        let password = t.password.as_ref().map(|p| p.expose()).unwrap_or("");
        // Answer in the server's default method when it is one a first answer can be in
        // (MySQL 8's caching_sha2_password saves a round trip); else in native, and the
        // server switches the account to its own.
        let method: &[u8] = if g.default_method == CACHING_SHA2 {
            CACHING_SHA2
        } else {
            NATIVE
        };
        let tls = self.sock.is_tls();
        let scramble = first_answer(method, &g.nonce, password, tls);
        let mut out = Vec::with_capacity(128);
        self.put_response_header(&mut out, ext_caps);
        out.extend_from_slice(t.user.as_bytes());
        out.push(0);
        if self.caps & CLIENT_PLUGIN_AUTH_LENENC_DATA != 0 {
            put_lenenc(&mut out, scramble.len() as u64);
        } else {
            out.push(scramble.len() as u8);
        }
        out.extend_from_slice(&scramble);
        out.extend_from_slice(db.as_bytes());
        out.push(0);
        // The answer names its method; a server that wants another for this user switches.
        out.extend_from_slice(method);
        out.push(0);
        self.send(&out, self.seq.wrapping_add(1))?;
        self.authenticate(t, method.to_vec(), g.nonce, password)
    }

    /// Read the server's greeting: what it can do, its nonce and its default method.
    fn read_greeting(&mut self) -> std::result::Result<Greeting, ConnectError> {
        let at = self.read_packet()?;
        let p = self.payload(at).to_vec();
        if p.first() == Some(&0xFF) {
            return Err(server_err(&p).into());
        }
        let mut c = Cursor::new(&p);
        if c.u8()? != 10 {
            return Err(ConnectError::Unsupported(Unsupported(
                "handshake protocol other than 10".into(),
            )));
        }
        c.nul_str()?; // server version
        c.u32()?; // connection id
        let mut nonce = c.take(8)?.to_vec();
        c.u8()?;
        let mut caps = u32::from(c.u16()?);
        c.u8()?; // collation
        c.u16()?; // status
        caps |= u32::from(c.u16()?) << 16;
        let auth_len = c.u8()? as usize;
        c.take(6)?;
        let ext = c.u32()?;
        self.mariadb = caps & CLIENT_LONG_PASSWORD == 0;
        let needed = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH;
        if caps & needed != needed {
            return Err(ConnectError::Unsupported(Unsupported(
                "server without protocol 4.1 plugin authentication".into(),
            )));
        }
        let part2 = auth_len.saturating_sub(9).max(12);
        nonce.extend_from_slice(c.take(part2)?);
        // The account's likely method: the server's default, named after the nonce.
        let rest = c.rest();
        let rest = rest.strip_prefix(&[0]).unwrap_or(rest);
        let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        Ok(Greeting {
            nonce,
            caps,
            ext: if self.mariadb { ext } else { 0 },
            default_method: rest[..end].to_vec(),
        })
    }

    /// The handshake response's fixed part: capabilities, packet size, collation, filler and
    /// MariaDB's extended capabilities (32 bytes; alone, it is the SSL request).
    fn put_response_header(&self, out: &mut Vec<u8>, ext_caps: u32) {
        out.extend_from_slice(&self.caps.to_le_bytes());
        out.extend_from_slice(
            &(crate::engines::mariadb::recipe::MAX_ALLOWED_PACKET as u32).to_le_bytes(),
        );
        out.push(COLLATION_UTF8MB4);
        out.extend_from_slice(&[0; 19]);
        out.extend_from_slice(&ext_caps.to_le_bytes());
    }

    /// Switch to TLS when the target asks for it and the server offers it (`server_caps`
    /// holds CLIENT_SSL): the SSL request, then the TLS handshake, before any password.
    /// A target that requires TLS of a server that does not offer it fails here.
    fn start_tls(
        &mut self,
        t: &Target,
        server_caps: u32,
        ext_caps: u32,
    ) -> std::result::Result<(), ConnectError> {
        use crate::engines::wire::tls;
        let config = tls::client_config(&t.tls).map_err(|m| tls::tls_error("mariadb", m))?;
        let Some(config) = config else {
            return Ok(());
        };
        if server_caps & CLIENT_SSL == 0 {
            if t.tls.mode.requires_tls() {
                return Err(tls::tls_error(
                    "mariadb",
                    format!(
                        "{} does not offer TLS, and the target asks for {}: give the server a certificate (ssl_cert, ssl_key), or ssl-mode=PREFERRED to connect in clear",
                        t.display(),
                        t.tls.mode.name()
                    ),
                )
                .into());
            }
            return Ok(());
        }
        self.caps |= CLIENT_SSL;
        let mut out = Vec::with_capacity(32);
        self.put_response_header(&mut out, ext_caps);
        self.send(&out, self.seq.wrapping_add(1))?;
        let unread = self.rb.unread().len();
        self.sock.start_tls(config, &t.host, "mariadb", unread)?;
        Ok(())
    }

    /// The authentication exchange after the response: switches, more data, OK or error.
    fn authenticate(
        &mut self,
        t: &Target,
        mut method: Vec<u8>,
        mut nonce: Vec<u8>,
        password: &str,
    ) -> std::result::Result<(), ConnectError> {
        let tls = self.sock.is_tls();
        // Without TLS, the password goes under a key the server sends only to a server on
        // loopback (or when the target allows it): off loopback, a server in the middle
        // sends its own.
        let keyed_ok = t.allow_cleartext
            || self
                .sock
                .tcp()
                .peer_addr()
                .is_ok_and(|p| p.ip().is_loopback());
        loop {
            let at = self.read_packet()?;
            let p = self.payload(at).to_vec();
            let answer = match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(server_err(&p).into()),
                Some(0xFE) => {
                    // Authentication switch: method name, then its nonce.
                    let mut c = Cursor::new(&p);
                    c.u8()?;
                    method = c.nul_str()?.to_vec();
                    // The method's nonce, and a NUL after it when the server sends one:
                    // only that one is dropped (an ed25519 nonce may end in a 0 of its own).
                    let data = c.rest();
                    let len = if method == ED25519 { 32 } else { 20 };
                    nonce = match data.strip_suffix(&[0]) {
                        Some(d) if d.len() == len => d.to_vec(),
                        _ => data.to_vec(),
                    };
                    if ![NATIVE, CACHING_SHA2, SHA256, ED25519].contains(&method.as_slice()) {
                        return Err(ConnectError::Unsupported(Unsupported(format!(
                            "the server asks account `{}` to authenticate with {}, which dbduel's client does not speak (it speaks mysql_native_password, caching_sha2_password, sha256_password and MariaDB's ed25519): give the account one of those",
                            t.user,
                            String::from_utf8_lossy(&method)
                        ))));
                    }
                    Some(first_answer(&method, &nonce, password, tls))
                }
                // More data for the method under way.
                Some(0x01) => more_data(&method, &p[1..], &nonce, password, tls)?,
                _ => return Err(proto_err("an authentication packet").into()),
            };
            let asks_key = matches!(
                (method.as_slice(), answer.as_deref()),
                (CACHING_SHA2, Some([2])) | (SHA256, Some([1]))
            );
            if asks_key && !keyed_ok {
                return Err(ConnectError::Failed(EngineError::new(
                    "refused",
                    format!(
                        "mariadb: {} asks for account `{}`'s password under an RSA key it would send itself (full authentication without TLS); off loopback a server in the middle could send its own key, so dbduel does not send it: connect with ssl-mode=REQUIRED (or VERIFY_IDENTITY), give the account mysql_native_password, or say allow_cleartext=1 in the target to accept this",
                        t.display(),
                        t.user
                    ),
                )));
            }
            if let Some(answer) = answer.as_deref() {
                self.send(answer, self.seq.wrapping_add(1))?;
            }
        }
    }

    /// Send one command: its payload split into packets of at most 16 MiB, sequence from
    /// `seq`, in one write when it fits.
    fn send(&mut self, payload: &[u8], seq: u8) -> Result<()> {
        self.wbuf.clear();
        let mut seq = seq;
        let mut chunks = payload.chunks(MAX_PAYLOAD).peekable();
        if payload.is_empty() {
            self.wbuf.extend_from_slice(&[0, 0, 0, seq]);
        }
        while let Some(chunk) = chunks.next() {
            let n = chunk.len() as u32;
            self.wbuf.extend_from_slice(&n.to_le_bytes()[..3]);
            self.wbuf.push(seq);
            self.wbuf.extend_from_slice(chunk);
            seq = seq.wrapping_add(1);
            if chunks.peek().is_none() && chunk.len() == MAX_PAYLOAD {
                self.wbuf.extend_from_slice(&[0, 0, 0, seq]);
                seq = seq.wrapping_add(1);
            }
        }
        self.seq = seq.wrapping_sub(1);
        self.sock.write_all(&self.wbuf).map_err(io_err)
    }

    /// Send a command built in `wbuf` after its 4 header bytes (one packet, sequence 0).
    fn send_built(&mut self) -> Result<()> {
        let n = self.wbuf.len() - 4;
        if n >= MAX_PAYLOAD {
            let payload = self.wbuf[4..].to_vec();
            return self.send(&payload, 0);
        }
        self.wbuf[..3].copy_from_slice(&(n as u32).to_le_bytes()[..3]);
        self.wbuf[3] = 0;
        self.seq = 0;
        self.sock.write_all(&self.wbuf).map_err(io_err)
    }

    /// Start building a command in `wbuf`.
    fn begin(&mut self, command: u8) {
        self.wbuf.clear();
        self.wbuf.extend_from_slice(&[0, 0, 0, 0, command]);
    }

    /// Read the next packet (joining a payload split over several).
    fn read_packet(&mut self) -> Result<At> {
        let mut joined = false;
        loop {
            self.rb.fill(&mut self.sock, 4).map_err(io_err)?;
            let h = self.rb.unread();
            let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
            self.seq = h[3];
            self.rb.fill(&mut self.sock, 4 + len).map_err(io_err)?;
            self.rb.consume(4);
            let at = self.rb.consume(len);
            if len < MAX_PAYLOAD && !joined {
                return Ok(At::Buf(at));
            }
            if !joined {
                self.joined.clear();
                joined = true;
            }
            self.joined.extend_from_slice(self.rb.at(at));
            if len < MAX_PAYLOAD {
                return Ok(At::Joined);
            }
        }
    }

    fn payload(&self, at: At) -> &[u8] {
        match at {
            At::Buf(at) => self.rb.at(at),
            At::Joined => &self.joined,
        }
    }

    /// Skip `n` packets (column or parameter definitions).
    fn skip_packets(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            self.read_packet()?;
        }
        Ok(())
    }

    /// Skip the EOF packet that follows definitions when the server still sends them.
    fn skip_eof(&mut self) -> Result<()> {
        if self.caps & CLIENT_DEPRECATE_EOF == 0 {
            self.read_packet()?;
        }
        Ok(())
    }

    /// Read a command's results: every result set's rows counted (`first` set, the first
    /// column of the first row, as text) or, for statements without rows, rows affected.
    fn read_results(&mut self, binary: bool, first: Option<&mut Option<String>>) -> Result<u64> {
        self.read_results_ok(binary, first, None, None)
    }

    /// Read `n` column definitions (and the EOF after them) into `types`.
    fn read_column_types(&mut self, n: u64, types: &mut Vec<ColType>) -> Result<()> {
        types.clear();
        for _ in 0..n {
            let at = self.read_packet()?;
            types.push(column_type(self.payload(at))?);
        }
        self.skip_eof()
    }

    /// [`read_results`](Self::read_results), keeping the last OK packet's warning count and
    /// info string in `ok` when given.
    fn read_results_ok(
        &mut self,
        binary: bool,
        mut first: Option<&mut Option<String>>,
        mut ok: Option<&mut (u16, String)>,
        mut decode: Option<Decode<'_>>,
    ) -> Result<u64> {
        let mut rows = 0u64;
        let mut affected = 0u64;
        let mut has_set = false;
        loop {
            let at = self.read_packet()?;
            let p = self.payload(at);
            let more = match p.first() {
                None => return Err(proto_err("empty packet")),
                Some(0xFF) => return Err(server_err(p)),
                Some(0x00) => {
                    let (n, status) = ok_status(p)?;
                    affected += n;
                    if let Some(slot) = ok.as_deref_mut() {
                        *slot = ok_tail(p, self.mariadb)?;
                    }
                    status & SERVER_MORE_RESULTS_EXISTS != 0
                }
                Some(0xFB) => {
                    return Err(EngineError::new(
                        "client",
                        "mariadb: LOAD DATA LOCAL is not supported on benchmark sessions",
                    ));
                }
                Some(_) => {
                    has_set = true;
                    let (columns, follows) = result_set_header(p, self.cache_metadata)?;
                    match decode.as_mut() {
                        Some(d) if follows => self.read_column_types(columns, d.types)?,
                        _ if follows => {
                            self.skip_packets(columns)?;
                            self.skip_eof()?;
                        }
                        _ => {}
                    }
                    self.read_rows(binary, &mut rows, first.take(), decode.as_mut())?
                }
            };
            if !more {
                return Ok(if has_set { rows } else { affected });
            }
        }
    }

    /// Count rows up to the packet that ends them; true when more results follow.
    fn read_rows(
        &mut self,
        binary: bool,
        rows: &mut u64,
        mut first: Option<&mut Option<String>>,
        mut decode: Option<&mut Decode<'_>>,
    ) -> Result<bool> {
        loop {
            let at = self.read_packet()?;
            let p = self.payload(at);
            match p.first() {
                Some(0xFE) if p.len() < MAX_PAYLOAD => {
                    return Ok(rows_end_status(p, self.caps)? & SERVER_MORE_RESULTS_EXISTS != 0);
                }
                Some(0xFF) => return Err(server_err(p)),
                _ => {
                    if let Some(slot) = first.take() {
                        *slot = first_text_column(p, binary)?;
                    }
                    if let Some(d) = decode.as_deref_mut() {
                        decode_binary_row(p, d.types, d.out)?;
                    }
                    *rows += 1;
                }
            }
        }
    }
}

/// A result set's first packet: its column count, and whether their definitions follow
/// (with cached metadata, one byte says; otherwise they always do).
fn result_set_header(p: &[u8], cache_metadata: bool) -> Result<(u64, bool)> {
    let mut c = Cursor::new(p);
    let columns = c.lenenc()?.ok_or_else(|| proto_err("column count"))?;
    let follows = if cache_metadata && !c.rest().is_empty() {
        c.u8()? != 0
    } else {
        true
    };
    Ok((columns, follows))
}

/// The status word of the packet that ends a result set's rows: an OK packet headed `0xFE`
/// with `CLIENT_DEPRECATE_EOF`, else an EOF packet (header, warnings, status).
fn rows_end_status(p: &[u8], caps: u32) -> Result<u16> {
    if caps & CLIENT_DEPRECATE_EOF != 0 {
        return Ok(ok_status(p)?.1);
    }
    let mut c = Cursor::new(p);
    c.u8()?;
    c.u16()?; // warnings
    c.u16()
}

/// Where [`holds_answer`] is in a command's answer.
enum Scan {
    /// Before a result: an OK, an error or a result set's header comes next.
    Result,
    /// Column definitions (and the EOF after them when `eof`) still to come.
    Definitions {
        left: u64,
        eof: bool,
    },
    Rows,
}

/// Does `buf` hold a command's whole answer (every result, up to the last one's end)? What
/// [`WireSession::read_results`] would read, walked without reading the socket: only then
/// may a thread serving several sessions read it. A packet it cannot make sense of counts
/// as an end, so that the reader reports it.
fn holds_answer(mut buf: &[u8], caps: u32, cache_metadata: bool) -> bool {
    let mut scan = Scan::Result;
    // Whether the last packet was a full one, so that this one goes on with its payload.
    let mut continued = false;
    while buf.len() >= 4 {
        let len = usize::from(buf[0]) | usize::from(buf[1]) << 8 | usize::from(buf[2]) << 16;
        if buf.len() < 4 + len {
            return false;
        }
        let p = &buf[4..4 + len];
        buf = &buf[4 + len..];
        let first = !continued;
        continued = len == MAX_PAYLOAD;
        if !first {
            continue; // the rest of a split payload: its first packet decided
        }
        let more = |status: Result<u16>| status.map(|s| s & SERVER_MORE_RESULTS_EXISTS != 0);
        scan = match (scan, p.first()) {
            (_, None) | (_, Some(0xFF)) => return true,
            (Scan::Result, Some(0x00)) => match more(ok_status(p).map(|(_, s)| s)) {
                Ok(true) => Scan::Result,
                _ => return true,
            },
            (Scan::Result, Some(0xFB)) => return true,
            (Scan::Result, Some(_)) => match result_set_header(p, cache_metadata) {
                Ok((n, true)) => Scan::Definitions {
                    left: n,
                    eof: caps & CLIENT_DEPRECATE_EOF == 0,
                },
                Ok((_, false)) => Scan::Rows,
                Err(_) => return true,
            },
            (Scan::Definitions { left: 0, .. }, _) => Scan::Rows, // the EOF after them
            (
                Scan::Definitions {
                    left: 1,
                    eof: false,
                },
                _,
            ) => Scan::Rows,
            (Scan::Definitions { left, eof }, _) => Scan::Definitions {
                left: left - 1,
                eof,
            },
            (Scan::Rows, Some(0xFE)) if len < MAX_PAYLOAD => match more(rows_end_status(p, caps)) {
                Ok(true) => Scan::Result,
                _ => return true,
            },
            (Scan::Rows, Some(_)) => Scan::Rows,
        };
    }
    false
}

/// The first column of a text-protocol row (a length-encoded string, or NULL).
fn first_text_column(p: &[u8], binary: bool) -> Result<Option<String>> {
    if binary {
        return Err(proto_err("first column of a binary row"));
    }
    let mut c = Cursor::new(p);
    Ok(match c.lenenc()? {
        None => None,
        Some(n) => Some(String::from_utf8_lossy(c.take(n as usize)?).into_owned()),
    })
}

const NATIVE: &[u8] = b"mysql_native_password";
const CACHING_SHA2: &[u8] = b"caching_sha2_password";
const SHA256: &[u8] = b"sha256_password";
const ED25519: &[u8] = b"client_ed25519";

/// The first answer of `method` to `nonce`. A password-less account answers empty in every
/// method but sha256_password's, which sends one zero.
fn first_answer(method: &[u8], nonce: &[u8], password: &str, tls: bool) -> Vec<u8> {
    let pw = password.as_bytes();
    match method {
        CACHING_SHA2 => mysql_common::scramble::scramble_sha256(nonce, pw)
            .map(|s| s.to_vec())
            .unwrap_or_default(),
        SHA256 if pw.is_empty() => vec![0],
        // Under TLS the password itself, ended by a zero; without, only under the server's
        // RSA key: ask for it.
        SHA256 if tls => password.bytes().chain([0]).collect(),
        SHA256 => vec![1],
        ED25519 => mysql_common::scramble::create_response_for_ed25519(pw, nonce).to_vec(),
        _ => native_scramble(nonce, password),
    }
}

/// The answer of `method` to the server's more data (`data`, after its 0x01): for
/// caching_sha2_password, "fast authentication done" (nothing to send: the OK follows),
/// "full authentication wanted" (under TLS the password, ended by a zero; else ask for the
/// server's RSA public key), or that key; for sha256_password the key. Without TLS the
/// password goes only encrypted under the key: XORed with the nonce, with RSA-OAEP (the
/// servers' documented exchange, done by `mysql_common`).
fn more_data(
    method: &[u8],
    data: &[u8],
    nonce: &[u8],
    password: &str,
    tls: bool,
) -> Result<Option<Vec<u8>>> {
    match (method, data) {
        (CACHING_SHA2, [3]) => Ok(None),
        (CACHING_SHA2, [4]) if tls => Ok(Some(password.bytes().chain([0]).collect())),
        (CACHING_SHA2, [4]) => Ok(Some(vec![2])),
        (CACHING_SHA2 | SHA256, key) if key.starts_with(b"-----BEGIN") => {
            let mut plain: Vec<u8> = password.bytes().chain([0]).collect();
            for (i, b) in plain.iter_mut().enumerate() {
                *b ^= nonce.get(i % nonce.len().max(1)).copied().unwrap_or(0);
            }
            // mysql_common panics on a key it cannot read: a server's bad key is an error.
            let key = key.to_vec();
            std::panic::catch_unwind(move || mysql_common::crypto::encrypt(&plain, &key))
                .map(Some)
                .map_err(|_| proto_err("the server's RSA public key"))
        }
        _ => Err(proto_err("more authentication data")),
    }
}

/// The `mysql_native_password` answer to `nonce` (empty for no password).
fn native_scramble(nonce: &[u8], password: &str) -> Vec<u8> {
    let nonce = &nonce[..nonce.len().min(20)];
    mysql_common::scramble::scramble_native(nonce, password.as_bytes())
        .map(|s| s.to_vec())
        .unwrap_or_default()
}

impl Session for WireSession {
    /// MariaDB's `max_statement_time` (seconds, any statement) or MySQL's
    /// `max_execution_time` (milliseconds, SELECTs only): the server cancels the statement.
    fn statement_timeout(&mut self, limit: Option<std::time::Duration>) -> Result<bool> {
        self.execute(&crate::engines::wire::mysql::timeout_sql(
            self.mariadb,
            limit,
        ))?;
        Ok(true)
    }

    fn execute(&mut self, sql: &str) -> Result<u64> {
        self.send_query(sql)?;
        self.read_results(false, None)
    }

    /// The OK packet's affected rows (changed rows), warnings and info string (`Rows matched:
    /// N  Changed: M  Warnings: W`).
    fn execute_counted(&mut self, sql: &str) -> Result<Changes> {
        self.send_query(sql)?;
        let mut ok = (0u16, String::new());
        let affected = self.read_results_ok(false, None, Some(&mut ok), None)?;
        Ok(changes_from_ok(affected, ok.0, &ok.1))
    }

    fn query_i64(&mut self, sql: &str) -> Result<i64> {
        self.send_query(sql)?;
        let mut first = None;
        self.read_results(false, Some(&mut first))?;
        let Some(text) = first else { return Ok(0) };
        text.parse::<i64>()
            .or_else(|_| text.parse::<f64>().map(|f| f as i64))
            .map_err(|_| EngineError::new("client", format!("mariadb: not a number: {text:?}")))
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId> {
        self.begin(COM_STMT_PREPARE);
        self.wbuf.extend_from_slice(sql.as_bytes());
        self.send_built()?;
        let at = self.read_packet()?;
        let p = self.payload(at);
        if p.first() == Some(&0xFF) {
            return Err(server_err(p));
        }
        let mut c = Cursor::new(p);
        c.u8()?;
        let id = c.u32()?;
        let columns = c.u16()?;
        let params = c.u16()?;
        if params > 0 {
            self.skip_packets(u64::from(params))?;
            self.skip_eof()?;
        }
        let mut types = Vec::new();
        if columns > 0 {
            self.read_column_types(u64::from(columns), &mut types)?;
        }
        self.stmts.push(Prepared {
            id,
            params: usize::from(params),
            sent_types: None,
            columns: types,
        });
        Ok(StmtId(self.stmts.len() - 1))
    }

    fn run(&mut self, stmt: StmtId, params: &[Value]) -> Result<u64> {
        self.send_execute(stmt, params)?;
        self.read_results(true, None)
    }

    fn run_rows(&mut self, stmt: StmtId, params: &[Value], out: &mut Vec<Value>) -> Result<u64> {
        out.clear();
        self.send_execute(stmt, params)?;
        // The statement's column types, lent out while the reply is read (a changed result
        // shape replaces them).
        let mut types = std::mem::take(&mut self.stmts[stmt.0].columns);
        let r = self.read_results_ok(
            true,
            None,
            None,
            Some(Decode {
                types: &mut types,
                out,
            }),
        );
        self.stmts[stmt.0].columns = types;
        r
    }

    fn overlap(&mut self) -> Option<&mut dyn Overlap> {
        Some(self)
    }
}

impl Overlap for WireSession {
    fn fd(&self) -> std::os::fd::RawFd {
        self.sock.tcp().as_raw_fd()
    }

    fn send_run(&mut self, stmt: StmtId, params: &[Value]) -> Result<()> {
        self.send_execute(stmt, params)
    }

    fn send_text(&mut self, sql: &str) -> Result<()> {
        self.send_query(sql)
    }

    fn try_finish(&mut self) -> Option<Result<u64>> {
        loop {
            if holds_answer(self.rb.unread(), self.caps, self.cache_metadata) {
                // The whole answer is buffered: this reads no socket.
                return Some(self.read_results(true, None));
            }
            match self.rb.fill_available(&mut Now(&mut self.sock)) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(io_err(e))),
            }
        }
    }
}

impl WireSession {
    /// Send COM_QUERY: one statement of SQL text.
    fn send_query(&mut self, sql: &str) -> Result<()> {
        self.begin(COM_QUERY);
        self.wbuf.extend_from_slice(sql.as_bytes());
        self.send_built()
    }

    /// Send COM_STMT_EXECUTE for a prepared statement with its parameters.
    fn send_execute(&mut self, stmt: StmtId, params: &[Value]) -> Result<()> {
        let st = self
            .stmts
            .get_mut(stmt.0)
            .ok_or_else(|| EngineError::new("usage", "unknown prepared statement"))?;
        if params.len() != st.params {
            return Err(EngineError::new(
                "usage",
                format!(
                    "the statement takes {} parameter(s), {} given",
                    st.params,
                    params.len()
                ),
            ));
        }
        // Two bytes a parameter; a multi-row INSERT of TPC-C's 15 order lines takes 135.
        let mut types = [0u8; 512];
        let types = if params.len() * 2 <= types.len() {
            &mut types[..params.len() * 2]
        } else {
            return Err(EngineError::new("usage", "more than 256 parameters"));
        };
        for (i, v) in params.iter().enumerate() {
            types[2 * i] = match v {
                Value::Int(n) if i32::try_from(*n).is_ok() => MYSQL_TYPE_LONG,
                Value::Int(_) => MYSQL_TYPE_LONGLONG,
                Value::Text(_) => MYSQL_TYPE_VAR_STRING,
                Value::Null => MYSQL_TYPE_NULL,
            };
        }
        let send_types = st.sent_types.as_deref() != Some(&*types);
        if send_types {
            st.sent_types = Some(types.to_vec());
        }
        let id = st.id;
        self.begin(COM_STMT_EXECUTE);
        self.wbuf.extend_from_slice(&id.to_le_bytes());
        self.wbuf.push(0); // no cursor
        self.wbuf.extend_from_slice(&1u32.to_le_bytes()); // iteration count
        if !params.is_empty() {
            // the NULL bitmap: bit i for parameter i
            let at = self.wbuf.len();
            self.wbuf
                .extend(std::iter::repeat_n(0u8, params.len().div_ceil(8)));
            for (i, v) in params.iter().enumerate() {
                if matches!(v, Value::Null) {
                    self.wbuf[at + i / 8] |= 1 << (i % 8);
                }
            }
            self.wbuf.push(u8::from(send_types));
            if send_types {
                self.wbuf.extend_from_slice(types);
            }
            for (i, v) in params.iter().enumerate() {
                match v {
                    Value::Int(n) if types[2 * i] == MYSQL_TYPE_LONG => {
                        self.wbuf.extend_from_slice(&(*n as i32).to_le_bytes())
                    }
                    Value::Int(n) => self.wbuf.extend_from_slice(&n.to_le_bytes()),
                    Value::Text(s) => {
                        put_lenenc(&mut self.wbuf, s.len() as u64);
                        self.wbuf.extend_from_slice(s.as_bytes());
                    }
                    // in the bitmap only
                    Value::Null => {}
                }
            }
        }
        self.send_built()
    }
}

impl Drop for WireSession {
    /// Say goodbye, so the server counts a clean disconnect rather than an aborted client.
    fn drop(&mut self) {
        self.begin(COM_QUIT);
        let _ = self.send_built();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trips_at_every_width() {
        for v in [
            0u64,
            250,
            251,
            0xFFFF,
            0x1_0000,
            0xFF_FFFF,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc(&mut out, v);
            assert_eq!(Cursor::new(&out).lenenc().unwrap(), Some(v), "{v}");
        }
        assert_eq!(Cursor::new(&[0xFB]).lenenc().unwrap(), None);
    }

    #[test]
    fn server_errors_keep_code_state_and_kind() {
        let mut p = vec![0xFF];
        p.extend_from_slice(&1040u16.to_le_bytes());
        p.extend_from_slice(b"#08004Too many connections");
        let e = server_err(&p);
        assert_eq!(e.kind, "too_many_connections");
        assert!(
            e.message
                .contains("ERROR 1040 (08004): Too many connections"),
            "{}",
            e.message
        );
    }

    /// Packets with their headers (sequence numbers are not looked at).
    fn packets(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in payloads {
            out.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
            out.push(0);
            out.extend_from_slice(p);
        }
        out
    }

    /// Whole at its end, and at no cut before it.
    fn whole_only_at_the_end(answer: &[u8], caps: u32, cache_metadata: bool) {
        assert!(holds_answer(answer, caps, cache_metadata));
        for cut in 0..answer.len() {
            assert!(
                !holds_answer(&answer[..cut], caps, cache_metadata),
                "{cut} of {} bytes",
                answer.len()
            );
        }
    }

    #[test]
    fn an_answer_is_whole_once_its_last_result_has_ended() {
        const OK: &[u8] = &[0x00, 1, 0, 2, 0, 0, 0];
        const MORE_OK: &[u8] = &[0x00, 0, 0, 0x0A, 0, 0, 0]; // SERVER_MORE_RESULTS_EXISTS
        const ERR: &[u8] = b"\xff\x28\x04#42000oops";
        const DEF: &[u8] = b"\x03def\x02db\x01t\x01t\x01c\x01c\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00";
        const ROW: &[u8] = &[0x00, 0x00, 7, 0, 0, 0]; // binary: header, null bitmap, an int
        const END_OK: &[u8] = &[0xFE, 0, 0, 2, 0, 0, 0];
        const END_EOF: &[u8] = &[0xFE, 0, 0, 2, 0];
        const MORE_END_OK: &[u8] = &[0xFE, 0, 0, 0x0A, 0, 0, 0];
        let deprecate = CLIENT_DEPRECATE_EOF;
        whole_only_at_the_end(&packets(&[OK]), deprecate, false);
        whole_only_at_the_end(&packets(&[ERR]), deprecate, false);
        whole_only_at_the_end(&packets(&[MORE_OK, OK]), deprecate, false);
        // Two columns, two rows, the rows' end an OK packet headed 0xFE.
        whole_only_at_the_end(
            &packets(&[&[2], DEF, DEF, ROW, ROW, END_OK]),
            deprecate,
            false,
        );
        // An EOF packet after the definitions, and one ending the rows.
        whole_only_at_the_end(&packets(&[&[1], DEF, END_EOF, ROW, END_EOF]), 0, false);
        // Cached metadata: the header's second byte says no definitions follow.
        whole_only_at_the_end(&packets(&[&[1, 0], ROW, END_OK]), deprecate, true);
        whole_only_at_the_end(&packets(&[&[1, 1], DEF, ROW, END_OK]), deprecate, true);
        // A procedure's result set, then its status.
        whole_only_at_the_end(
            &packets(&[&[1], DEF, ROW, MORE_END_OK, OK]),
            deprecate,
            false,
        );
        // An error in place of a row ends it too.
        whole_only_at_the_end(&packets(&[&[1], DEF, ROW, ERR]), deprecate, false);
    }

    #[test]
    fn ok_packets_give_matched_changed_and_the_full_warning_count() {
        // OK: header, affected 2, insert id 0, status, 16-bit warnings, then the info: to
        // the end (MySQL) or length-encoded (MariaDB).
        let info = b"Rows matched: 3  Changed: 2  Warnings: 1";
        let mut p = vec![0x00, 2, 0, 0x02, 0x00, 0x01, 0x00];
        p.extend_from_slice(info);
        assert_eq!(
            ok_tail(&p, false).unwrap(),
            (1, String::from_utf8_lossy(info).into_owned())
        );
        let mut p = vec![0x00, 2, 0, 0x02, 0x00, 0x01, 0x00, info.len() as u8];
        p.extend_from_slice(info);
        // as MySQL 5.6, 5.7 and 8.0 send it: length-encoded, never `0Rows matched: …`
        assert_eq!(
            ok_tail(&p, false).unwrap(),
            (1, String::from_utf8_lossy(info).into_owned())
        );
        let (w, info) = ok_tail(&p, true).unwrap();
        let c = changes_from_ok(2, w, &info);
        assert_eq!(
            (c.affected, c.matched, c.changed, c.warnings),
            (2, Some(3), Some(2), Some(1))
        );
        assert_eq!(
            c.info.as_deref(),
            Some("Rows matched: 3  Changed: 2  Warnings: 1")
        );
        // Past 65,535 the packet's count is capped; the info string has the server's own.
        let c = changes_from_ok(
            641_098,
            65_535,
            "Records: 641098  Deleted: 0  Skipped: 0  Warnings: 641098",
        );
        assert_eq!(c.warnings, Some(641_098));
        assert_eq!(info_number(c.info.as_deref().unwrap(), "Skipped"), Some(0));
        // A statement without an info string: the packet's count, nothing matched or changed.
        let c = changes_from_ok(1, 0, "");
        assert_eq!(
            (c.matched, c.changed, c.warnings, c.info),
            (None, None, Some(0), None)
        );
        assert_eq!(info_number("Rows matched: x", "Rows matched"), None);
    }

    #[test]
    fn a_server_that_never_greets_is_a_connect_timeout_not_a_hang() {
        // Connections wait in the listen queue, never accepted: as when back_log overflows.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let t = Target::loopback("mysql", "root", silent.local_addr().expect("addr").port());
        let began = std::time::Instant::now();
        match WireSession::connect(&t, "db", 1) {
            Err(ConnectError::Failed(e)) => {
                assert_eq!(e.kind, "connect_timeout", "{}", e.message);
                assert!(e.message.contains("back_log"), "{}", e.message);
            }
            _ => panic!("a silent server must time out"),
        }
        assert!(began.elapsed() < Duration::from_secs(5));
    }

    /// One packet: its 3-byte length, its sequence number, its payload.
    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        p.push(seq);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn a_method_it_does_not_speak_is_named_with_the_account() {
        use std::io::{Read, Write};
        // A server whose account wants GSSAPI: it greets, reads the answer, switches.
        let server = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = server.local_addr().expect("addr").port();
        let serve = std::thread::spawn(move || {
            let (mut c, _) = server.accept().expect("accept");
            let caps: u32 = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH;
            let mut g = vec![10];
            g.extend_from_slice(b"10.11.0-test\0");
            g.extend_from_slice(&7u32.to_le_bytes());
            g.extend_from_slice(&[1; 8]);
            g.push(0);
            g.extend_from_slice(&(caps as u16).to_le_bytes());
            g.push(45);
            g.extend_from_slice(&2u16.to_le_bytes());
            g.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
            g.push(21);
            g.extend_from_slice(&[0; 10]);
            g.extend_from_slice(&[2; 12]);
            g.push(0);
            g.extend_from_slice(b"mysql_native_password\0");
            c.write_all(&packet(0, &g)).expect("greet");
            let mut buf = [0u8; 512];
            let _ = c.read(&mut buf).expect("the answer");
            let mut switch = vec![0xFE];
            switch.extend_from_slice(b"auth_gssapi_client\0principal\0");
            c.write_all(&packet(2, &switch)).expect("switch");
            let _ = c.read(&mut buf);
        });
        let mut t = Target::loopback("mysql", "kerb", port);
        t.password = Some(crate::engine::target::Secret::new("pw"));
        match WireSession::connect(&t, "db", 5) {
            Err(ConnectError::Unsupported(u)) => assert!(
                u.0.contains("account `kerb`") && u.0.contains("auth_gssapi_client"),
                "{}",
                u.0
            ),
            Err(ConnectError::Failed(e)) => panic!("failed otherwise: {}", e.message),
            Ok(_) => panic!("logged in"),
        }
        let _ = serve.join();
    }

    #[test]
    fn no_password_answers_empty() {
        assert!(native_scramble(&[7; 20], "").is_empty());
        assert_eq!(native_scramble(&[7; 20], "pw").len(), 20);
    }

    #[test]
    fn full_authentication_sends_the_password_only_inside_tls_else_asks_for_the_key() {
        let nonce = [7u8; 20];
        // caching_sha2_password, "full authentication wanted" (4)
        assert_eq!(
            more_data(CACHING_SHA2, &[4], &nonce, "pw", true).unwrap(),
            Some(b"pw\0".to_vec())
        );
        assert_eq!(
            more_data(CACHING_SHA2, &[4], &nonce, "pw", false).unwrap(),
            Some(vec![2])
        );
        // fast authentication done (3): nothing more to send, TLS or not
        assert_eq!(
            more_data(CACHING_SHA2, &[3], &nonce, "pw", true).unwrap(),
            None
        );
        // sha256_password's first answer
        assert_eq!(first_answer(SHA256, &nonce, "pw", true), b"pw\0".to_vec());
        assert_eq!(first_answer(SHA256, &nonce, "pw", false), vec![1]);
        assert_eq!(first_answer(SHA256, &nonce, "", true), vec![0]);
    }
}
