//! A lean PostgreSQL session for the connections benchmark clients drive: a blocking socket,
//! one reusable buffer each way, parameters sent as text (as pgbench sends them), rows
//! counted, never decoded.
//!
//! Why not `tokio-postgres` here (the `postgres` crate still does administration and loads)?
//! On two cores client and server share the CPU, so a client's cost per statement is taken
//! from the server. Driven on a blocking socket, tokio-postgres still passes each request
//! and each response through channels and allocates a buffer per message: about a microsecond
//! a statement more than pgbench at 32 clients. Messages are built and authentication
//! (cleartext, MD5, SCRAM-SHA-256) computed by `postgres-protocol`, the protocol crate
//! tokio-postgres itself is built on; this module only frames, sends and counts.
//!
//! SQL text goes on the extended protocol (an unnamed statement: Parse, Bind, Describe,
//! Execute, Sync in one write), never the simple query protocol: the server refuses a string
//! holding several statements there, so no second statement rides along on a target.

use crate::engine::target::{Target, TlsMode};
use crate::engine::{Changes, EngineError, Overlap, Result, Session, StmtId, Value};
use crate::engines::wire::recv_buf::{RECV_BUF_BYTES, RecvBuf};
use crate::engines::wire::tls::{Now, Stream};
use bytes::BytesMut;
use postgres_protocol::IsNull;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::frontend;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// How long opening the TCP connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the startup and authentication exchange may take. The postmaster forks a backend
/// per connection, one after another: hundreds of clients connecting at once on a busy host
/// wait their turn for many seconds (mysql's handshake allows the same).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Kind of failure for a SQLSTATE, shared with the `postgres` crate path.
pub fn kind_for_sqlstate(code: &str) -> &'static str {
    match code {
        "53300" => "too_many_connections",
        "40P01" => "deadlock",
        "40001" => "serialization",
        "55P03" => "lock_timeout",
        c if c.starts_with("23") => "constraint",
        "53100" => "disk_full",
        "57014" => crate::engine::TIMEOUT,
        c if c.starts_with("42") => "sql",
        _ => "server",
    }
}

fn io_err(e: std::io::Error) -> EngineError {
    crate::engines::wire::tcp::io_error("postgres", e)
}

fn proto_err(what: &str) -> EngineError {
    EngineError::new(
        "client",
        format!("postgres: malformed server message: {what}"),
    )
}

/// An ErrorResponse's fields (type byte, NUL-terminated text; a zero byte ends them) as an
/// engine error worded like the `postgres` path's: `SEVERITY: message`.
fn server_err(body: &[u8]) -> EngineError {
    let (mut severity, mut code, mut message) = ("ERROR", "", "");
    let mut rest = body;
    while let Some((&kind, tail)) = rest.split_first() {
        if kind == 0 {
            break;
        }
        let n = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let value = std::str::from_utf8(&tail[..n]).unwrap_or("");
        match kind {
            b'V' => severity = value,
            b'S' if severity == "ERROR" => severity = value,
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
        rest = tail.get(n + 1..).unwrap_or(&[]);
    }
    EngineError::new(
        kind_for_sqlstate(code),
        format!("postgres: {severity}: {message}"),
    )
}

/// The count at the end of a CommandComplete tag (`UPDATE 3`, `INSERT 0 1`), 0 for none.
/// May a cleartext or MD5 password exchange go to `peer`: only when the target's URL says
/// `allow_cleartext=1`, and then only to a loopback address (the socket's own peer, not the
/// name given) or under TLS.
fn weak_password_allowed(t: &Target, peer: Option<std::net::SocketAddr>, tls: bool) -> bool {
    t.allow_cleartext && (tls || peer.is_some_and(|p| p.ip().is_loopback()))
}

/// The server asked for a cleartext (3) or MD5 (5) password where that is not allowed:
/// refused, with how to allow it.
fn weak_password_refused(t: &Target, code: u8, tls: bool) -> EngineError {
    let how = if code == 3 {
        "in cleartext"
    } else {
        "as an MD5 hash"
    };
    let fix = if t.allow_cleartext && !tls {
        "off loopback that needs TLS too: add sslmode=verify-full (with sslrootcert=FILE)"
    } else {
        "add allow_cleartext=1 to the target's URL to send it anyway (off loopback, with TLS)"
    };
    EngineError::new(
        "server",
        format!(
            "postgres: {}:{} asks for the password {how}, which whoever reads or stands in the connection can use; have the server use scram-sha-256, or {fix}",
            t.host, t.port
        ),
    )
}

fn tag_count(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    tag.rsplit(|&b| b == b' ')
        .next()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .unwrap_or(0)
}

/// Does this CommandComplete tag report rows returned rather than rows changed?
fn tag_returns_rows(body: &[u8]) -> bool {
    body.starts_with(b"SELECT") || body.starts_with(b"FETCH") || body.starts_with(b"SHOW")
}

/// The first column of a DataRow, as text (SQL text asks for its results as text).
fn first_column(body: &[u8]) -> Result<Option<String>> {
    let n = body.get(2..6).ok_or_else(|| proto_err("data row"))?;
    let len = i32::from_be_bytes([n[0], n[1], n[2], n[3]]);
    if len < 0 {
        return Ok(None);
    }
    let v = body
        .get(6..6 + len as usize)
        .ok_or_else(|| proto_err("data row"))?;
    Ok(Some(String::from_utf8_lossy(v).into_owned()))
}

/// Every column of a text-format DataRow, appended to `out` (NULL as `Null`).
fn row_values(body: &[u8], out: &mut Vec<Value>) -> Result<()> {
    let n = body.get(..2).ok_or_else(|| proto_err("data row"))?;
    let mut at = 2;
    for _ in 0..u16::from_be_bytes([n[0], n[1]]) {
        let l = body.get(at..at + 4).ok_or_else(|| proto_err("data row"))?;
        let len = i32::from_be_bytes([l[0], l[1], l[2], l[3]]);
        at += 4;
        if len < 0 {
            out.push(Value::Null);
            continue;
        }
        let v = body
            .get(at..at + len as usize)
            .ok_or_else(|| proto_err("data row"))?;
        at += len as usize;
        out.push(Value::Text(String::from_utf8_lossy(v).into_owned()));
    }
    Ok(())
}

/// One connection and the names of its prepared statements.
pub struct PgWire {
    sock: Stream,
    rb: RecvBuf,
    wbuf: BytesMut,
    stmts: Vec<String>,
    /// Why the connection can no longer be used.
    broken: Option<String>,
}

/// What a command's responses came to.
#[derive(Default)]
struct Outcome {
    rows: u64,
    affected: u64,
    returns_rows: bool,
    first: Option<Option<String>>,
    error: Option<EngineError>,
}

impl PgWire {
    /// Connect to `db` on the target's server (TCP, under TLS when the target asks and the
    /// server agrees), with `TCP_NODELAY` and keepalives, and authenticate.
    pub fn connect(t: &Target, db: &str) -> Result<PgWire> {
        match Self::connect_within(t, db, HANDSHAKE_TIMEOUT) {
            // As libpq's prefer: TLS that cannot be had, in clear.
            Err(e) if e.kind == "tls" && t.tls.mode == TlsMode::Prefer => {
                Self::connect_within(&t.in_clear(), db, HANDSHAKE_TIMEOUT)
            }
            r => r,
        }
    }

    fn connect_within(t: &Target, db: &str, handshake: Duration) -> Result<PgWire> {
        let io = |e: std::io::Error| {
            EngineError::new(
                "connection",
                format!("postgres: cannot connect to {}:{}: {e}", t.host, t.port),
            )
        };
        let sock =
            crate::engines::wire::tcp::connect(&t.host, t.port, CONNECT_TIMEOUT).map_err(io)?;
        let on: libc::c_int = 1;
        // SAFETY: setsockopt reads an int of the size given from a live local.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_KEEPALIVE,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        // The handshake must not wait forever on a server that accepted but never answers.
        sock.set_read_timeout(Some(handshake)).map_err(io)?;
        let mut c = PgWire {
            sock: Stream::Plain(sock),
            rb: RecvBuf::with_capacity(RECV_BUF_BYTES),
            wbuf: BytesMut::with_capacity(4096),
            stmts: Vec::new(),
            broken: None,
        };
        c.start_tls(t)
            .and_then(|()| c.startup(t, db))
            .map_err(|e| {
            // only the handshake reads with a timeout
            if crate::engines::wire::tcp::timed_out(&e) {
                EngineError::new(
                    "connect_timeout",
                    format!(
                        "postgres: no answer to the connection handshake within {} s (the server may be swamped by connections opening at once)",
                        handshake.as_secs()
                    ),
                )
            } else {
                e
            }
        })?;
        c.sock.tcp().set_read_timeout(None).map_err(io)?;
        Ok(c)
    }

    /// What TLS the session negotiated: `TLSv1_3 TLS13_AES_256_GCM_SHA384`, or `off`.
    pub fn tls(&self) -> String {
        self.sock.describe()
    }

    /// Ask for TLS when the target does (SSLRequest), and switch to it when the server
    /// agrees (`S`); a server that declines (`N`) is refused when the target requires TLS.
    fn start_tls(&mut self, t: &Target) -> Result<()> {
        use crate::engines::wire::tls;
        let config = tls::client_config(&t.tls).map_err(|m| tls::tls_error("postgres", m))?;
        let Some(config) = config else {
            return Ok(());
        };
        frontend::ssl_request(&mut self.wbuf);
        self.flush()?;
        self.rb.fill(&mut self.sock, 1).map_err(io_err)?;
        let answer = self.rb.unread()[0];
        self.rb.consume(1);
        match answer {
            b'S' => {
                let unread = self.rb.unread().len();
                self.sock.start_tls(config, &t.host, "postgres", unread)
            }
            b'N' if t.tls.mode.requires_tls() => Err(tls::tls_error(
                "postgres",
                format!(
                    "{}:{} does not accept TLS (ssl = off), and the target asks for {}: turn ssl on with a certificate, or give sslmode=prefer to connect in clear",
                    t.host,
                    t.port,
                    t.tls.mode.name()
                ),
            )),
            b'N' => Ok(()),
            _ => Err(proto_err("the answer to SSLRequest")),
        }
    }

    fn startup(&mut self, t: &Target, db: &str) -> Result<()> {
        let params = [
            ("user", t.user.as_str()),
            ("database", db),
            ("application_name", "dbduel"),
            ("client_encoding", "UTF8"),
        ];
        frontend::startup_message(params.iter().copied(), &mut self.wbuf).map_err(io_err)?;
        self.flush()?;
        let mut scram: Option<ScramSha256> = None;
        let mut error = None;
        loop {
            let (tag, at) = self.next()?;
            let body = self.rb.at(at);
            match tag {
                b'R' => {
                    // An authentication request is a few bytes, once a connection.
                    let body = body.to_vec();
                    self.answer_auth(t, &body, &mut scram)?;
                    if !self.wbuf.is_empty() {
                        self.flush()?;
                    }
                }
                b'E' => error = Some(server_err(body)),
                b'Z' => break,
                _ => {} // ParameterStatus, BackendKeyData, notices
            }
            if let Some(e) = error {
                return Err(e); // the server closes the connection after an error here
            }
        }
        Ok(())
    }

    /// Answer one authentication request (`body`: its code, then its data) into `wbuf`:
    /// nothing for OK, the password as the server asks (a cleartext or MD5 one only where
    /// allowed), or the next SCRAM-SHA-256 message.
    fn answer_auth(
        &mut self,
        t: &Target,
        body: &[u8],
        scram: &mut Option<ScramSha256>,
    ) -> Result<()> {
        let password = t.password.as_ref().map(|p| p.expose().as_bytes());
        let need_password = || {
            password.ok_or_else(|| {
                EngineError::new(
                    "server",
                    "postgres: the server asks for a password; give the contender password_env or password_file",
                )
            })
        };
        let code = body.get(..4).ok_or_else(|| proto_err("authentication"))?;
        let data = &body[4..];
        let tls = self.sock.is_tls();
        match i32::from_be_bytes([code[0], code[1], code[2], code[3]]) {
            0 => {}
            3 | 5 if !weak_password_allowed(t, self.sock.tcp().peer_addr().ok(), tls) => {
                return Err(weak_password_refused(t, code[3], tls));
            }
            3 => frontend::password_message(need_password()?, &mut self.wbuf).map_err(io_err)?,
            5 => {
                let salt: [u8; 4] = data.try_into().map_err(|_| proto_err("MD5 salt"))?;
                let hash = md5_hash(t.user.as_bytes(), need_password()?, salt);
                frontend::password_message(hash.as_bytes(), &mut self.wbuf).map_err(io_err)?;
            }
            10 => {
                let offers_scram = data
                    .split(|&b| b == 0)
                    .any(|m| m == SCRAM_SHA_256.as_bytes());
                if !offers_scram {
                    return Err(EngineError::new(
                        "server",
                        "postgres: the server offers no SASL mechanism dbduel speaks (SCRAM-SHA-256 without channel binding)",
                    ));
                }
                let s = ScramSha256::new(need_password()?, ChannelBinding::unsupported());
                frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.wbuf)
                    .map_err(io_err)?;
                *scram = Some(s);
            }
            n @ (11 | 12) => {
                let s = scram.as_mut().ok_or_else(|| proto_err("SASL order"))?;
                let step = if n == 11 {
                    s.update(data)
                } else {
                    s.finish(data)
                };
                step.map_err(|e| EngineError::new("server", format!("postgres: SCRAM: {e}")))?;
                if n == 11 {
                    frontend::sasl_response(s.message(), &mut self.wbuf).map_err(io_err)?;
                }
            }
            n => {
                return Err(EngineError::new(
                    "server",
                    format!("postgres: unsupported authentication request {n}"),
                ));
            }
        }
        Ok(())
    }

    /// Send what `wbuf` holds.
    fn flush(&mut self) -> Result<()> {
        let r = self.sock.write_all(&self.wbuf);
        self.wbuf.clear();
        r.map_err(|e| self.broke(io_err(e)))
    }

    fn broke(&mut self, e: EngineError) -> EngineError {
        self.broken = Some(e.message.clone());
        e
    }

    /// The next backend message: its type byte and where its body is.
    fn next(&mut self) -> Result<(u8, (usize, usize))> {
        let r = (|| -> std::io::Result<_> {
            self.rb.fill(&mut self.sock, 5)?;
            let h = self.rb.unread();
            let tag = h[0];
            let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
            self.rb.fill(&mut self.sock, 1 + len.max(4))?;
            self.rb.consume(5);
            Ok((tag, self.rb.consume(len.saturating_sub(4))))
        })();
        r.map_err(|e| self.broke(io_err(e)))
    }

    /// Read responses up to ReadyForQuery.
    fn read_until_ready(&mut self, want_first: bool) -> Result<Outcome> {
        self.read_until_ready_into(want_first, None)
    }

    /// [`read_until_ready`](Self::read_until_ready), every text row's values appended to
    /// `values` when given.
    fn read_until_ready_into(
        &mut self,
        want_first: bool,
        mut values: Option<&mut Vec<Value>>,
    ) -> Result<Outcome> {
        let mut o = Outcome::default();
        loop {
            let (tag, at) = self.next()?;
            let body = self.rb.at(at);
            match tag {
                b'D' => {
                    if want_first && o.first.is_none() {
                        o.first = Some(first_column(body)?);
                    }
                    if let Some(out) = values.as_deref_mut() {
                        row_values(body, out)?;
                    }
                    o.rows += 1;
                }
                b'T' => o.returns_rows = true,
                b'C' => {
                    if tag_returns_rows(body) {
                        o.returns_rows = true;
                    } else {
                        o.affected += tag_count(body);
                    }
                }
                b'E' if o.error.is_none() => o.error = Some(server_err(body)),
                b'Z' => return Ok(o),
                b'G' => {
                    // COPY FROM STDIN: the server waits for data these sessions never send.
                    // It ignored the Sync sent with the statement while copying, so another
                    // follows the CopyFail for its ReadyForQuery.
                    frontend::copy_fail("dbduel sessions do not copy", &mut self.wbuf)
                        .map_err(io_err)?;
                    frontend::sync(&mut self.wbuf);
                    self.flush()?;
                }
                _ => {} // ParseComplete, BindComplete, NoData, EmptyQuery, notices
            }
        }
    }

    fn check(&self) -> Result<()> {
        match &self.broken {
            Some(why) => Err(EngineError::new(
                "connection",
                format!("postgres: connection closed: {why}"),
            )),
            None => Ok(()),
        }
    }

    /// One statement of SQL text, as an unnamed statement on the extended protocol: results
    /// in text, several statements refused by the server.
    fn one(&mut self, sql: &str, want_first: bool) -> Result<Outcome> {
        self.send_one(sql)?;
        let o = self.read_until_ready(want_first)?;
        match o.error {
            Some(e) => Err(e),
            None => Ok(o),
        }
    }

    /// [`one`](Self::one)'s request: parse, bind, describe, execute, sync; one write.
    fn send_one(&mut self, sql: &str) -> Result<()> {
        self.check()?;
        frontend::parse("", sql, std::iter::empty(), &mut self.wbuf).map_err(io_err)?;
        frontend::bind(
            "",
            "",
            std::iter::empty::<i16>(),
            std::iter::empty::<Value>(),
            |_, _| Ok(IsNull::No),
            [0i16],
            &mut self.wbuf,
        )
        .map_err(|_| EngineError::new("client", "postgres: cannot bind a statement"))?;
        frontend::describe(b'P', "", &mut self.wbuf).map_err(io_err)?;
        frontend::execute("", 0, &mut self.wbuf).map_err(io_err)?;
        frontend::sync(&mut self.wbuf);
        self.flush()
    }
}

impl Session for PgWire {
    /// `statement_timeout`: the server cancels a statement that runs longer (SQLSTATE 57014).
    fn statement_timeout(&mut self, limit: Option<std::time::Duration>) -> Result<bool> {
        let ms = limit.map_or(0, |d| d.as_millis().max(1));
        self.execute(&format!("SET statement_timeout = {ms}"))?;
        Ok(true)
    }

    /// One statement of SQL text: rows returned, or rows affected.
    fn execute(&mut self, sql: &str) -> Result<u64> {
        let o = self.one(sql, false)?;
        Ok(if o.returns_rows { o.rows } else { o.affected })
    }

    /// The command tag's count (`UPDATE n`): every row the statement matched, changed in
    /// value or not — PostgreSQL writes a new version of each.
    fn execute_counted(&mut self, sql: &str) -> Result<Changes> {
        let o = self.one(sql, false)?;
        if o.returns_rows {
            return Ok(Changes {
                affected: o.rows,
                ..Changes::default()
            });
        }
        Ok(Changes {
            affected: o.affected,
            matched: Some(o.affected),
            ..Changes::default()
        })
    }

    fn query_i64(&mut self, sql: &str) -> Result<i64> {
        let o = self.one(sql, true)?;
        let Some(Some(text)) = o.first else {
            return Ok(0);
        };
        text.parse::<i64>()
            .or_else(|_| text.parse::<f64>().map(|f| f as i64))
            .map_err(|_| EngineError::new("client", format!("postgres: not a number: {text:?}")))
    }

    /// A named statement, its parameter types left to the server.
    fn prepare(&mut self, sql: &str) -> Result<StmtId> {
        self.check()?;
        let name = format!("dbduel_{}", self.stmts.len());
        frontend::parse(&name, sql, std::iter::empty(), &mut self.wbuf).map_err(io_err)?;
        frontend::sync(&mut self.wbuf);
        self.flush()?;
        if let Some(e) = self.read_until_ready(false)?.error {
            return Err(e);
        }
        self.stmts.push(name);
        Ok(StmtId(self.stmts.len() - 1))
    }

    /// Bind (parameters as text, results binary), execute, sync: one write, and the rows
    /// returned for a query or the rows changed for a change.
    fn run(&mut self, stmt: StmtId, params: &[Value]) -> Result<u64> {
        self.send_bind_execute(stmt, params, 1)?;
        self.run_result(None)
    }

    /// Results in text format, each row's columns kept.
    fn run_rows(&mut self, stmt: StmtId, params: &[Value], out: &mut Vec<Value>) -> Result<u64> {
        out.clear();
        self.send_bind_execute(stmt, params, 0)?;
        self.run_result(Some(out))
    }

    fn overlap(&mut self) -> Option<&mut dyn Overlap> {
        Some(self)
    }
}

impl Overlap for PgWire {
    fn fd(&self) -> std::os::fd::RawFd {
        self.sock.tcp().as_raw_fd()
    }

    fn send_run(&mut self, stmt: StmtId, params: &[Value]) -> Result<()> {
        self.send_bind_execute(stmt, params, 1)
    }

    fn send_text(&mut self, sql: &str) -> Result<()> {
        self.send_one(sql)
    }

    fn try_finish(&mut self) -> Option<Result<u64>> {
        loop {
            if holds_ready(self.rb.unread()) {
                // Every message up to ReadyForQuery is buffered: this reads no socket.
                return Some(self.run_result(None));
            }
            match self.rb.fill_available(&mut Now(&mut self.sock)) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(self.broke(io_err(e)))),
            }
        }
    }
}

/// Does `buf` hold whole messages up to and including a ReadyForQuery?
fn holds_ready(mut buf: &[u8]) -> bool {
    while buf.len() >= 5 {
        let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
        let whole = 1 + len.max(4);
        if buf.len() < whole {
            return false;
        }
        if buf[0] == b'Z' {
            return true;
        }
        buf = &buf[whole..];
    }
    false
}

impl PgWire {
    /// The answer to a statement run: the rows returned for a query (their values appended
    /// to `values` when given), or the rows changed.
    fn run_result(&mut self, values: Option<&mut Vec<Value>>) -> Result<u64> {
        let o = self.read_until_ready_into(false, values)?;
        match o.error {
            Some(e) => Err(e),
            None => Ok(if o.returns_rows { o.rows } else { o.affected }),
        }
    }

    /// Bind (parameters as text, results in `format`: 0 text, 1 binary), execute, sync: one
    /// write.
    fn send_bind_execute(&mut self, stmt: StmtId, params: &[Value], format: i16) -> Result<()> {
        self.check()?;
        let name = self
            .stmts
            .get(stmt.0)
            .ok_or_else(|| EngineError::new("usage", "unknown prepared statement"))?;
        let mut ints = itoa::Buffer::new();
        frontend::bind(
            "",
            name,
            std::iter::empty::<i16>(), // all parameters as text
            params,
            |v, buf| {
                match v {
                    Value::Int(n) => buf.extend_from_slice(ints.format(*n).as_bytes()),
                    Value::Text(s) => buf.extend_from_slice(s.as_bytes()),
                    Value::Null => return Ok(IsNull::Yes),
                }
                Ok(IsNull::No)
            },
            [format],
            &mut self.wbuf,
        )
        .map_err(|e| {
            EngineError::new(
                "client",
                format!(
                    "postgres: cannot bind parameters: {}",
                    match e {
                        frontend::BindError::Conversion(e) => e.to_string(),
                        frontend::BindError::Serialization(e) => e.to_string(),
                    }
                ),
            )
        })?;
        frontend::execute("", 0, &mut self.wbuf).map_err(io_err)?;
        frontend::sync(&mut self.wbuf);
        self.flush()
    }
}

impl Drop for PgWire {
    /// Say goodbye (Terminate), so the server sees an orderly disconnect.
    fn drop(&mut self) {
        if self.broken.is_none() {
            self.wbuf.clear();
            frontend::terminate(&mut self.wbuf);
            let _ = self.sock.write_all(&self.wbuf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weak_password_exchanges_go_only_where_allowed_and_loopback_or_tls() {
        let mut t = Target {
            scheme: "postgres".into(),
            user: "u".into(),
            host: "db.example".into(),
            port: 5432,
            database: None,
            password: None,
            restart_command: None,
            allow_cleartext: false,
            tls: Default::default(),
        };
        let far = Some("10.1.2.3:5432".parse().unwrap());
        let near = Some("127.0.0.2:5432".parse().unwrap());
        let e = weak_password_refused(&t, 5, false);
        assert!(e.message.contains("as an MD5 hash"), "{}", e.message);
        assert!(e.message.contains("allow_cleartext=1"), "{}", e.message);
        // Not without the target's word, wherever the server is, TLS or not.
        for (peer, tls) in [(far, false), (far, true), (near, false), (None, false)] {
            assert!(!weak_password_allowed(&t, peer, tls), "{peer:?} {tls}");
        }
        t.allow_cleartext = true;
        assert!(weak_password_allowed(&t, near, false));
        assert!(weak_password_allowed(
            &t,
            Some("[::1]:5432".parse().unwrap()),
            false
        ));
        assert!(weak_password_allowed(&t, far, true));
        // Off loopback, in clear: never.
        assert!(!weak_password_allowed(&t, far, false));
        assert!(!weak_password_allowed(&t, None, false));
        let e = weak_password_refused(&t, 3, false);
        assert!(e.message.contains("sslmode=verify-full"), "{}", e.message);
    }

    #[test]
    fn a_server_that_never_answers_the_startup_is_a_connect_timeout_not_a_hang() {
        // Connections wait in the listen queue, never accepted: as a postmaster swamped by
        // connections opening at once.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let t = Target::loopback("postgres", "u", silent.local_addr().expect("addr").port());
        let began = std::time::Instant::now();
        match PgWire::connect_within(&t, "db", Duration::from_secs(1)) {
            Err(e) => {
                assert_eq!(e.kind, "connect_timeout", "{}", e.message);
                assert!(e.message.contains("within 1 s"), "{}", e.message);
            }
            Ok(_) => panic!("a silent server must time out"),
        }
        assert!(began.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn an_answer_is_whole_once_its_ready_for_query_is() {
        // BindComplete, DataRow (one int4 column), CommandComplete, ReadyForQuery
        let mut msgs = vec![b'2', 0, 0, 0, 4];
        msgs.extend([b'D', 0, 0, 0, 14, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7]);
        msgs.extend([b'C', 0, 0, 0, 13]);
        msgs.extend(b"SELECT 1\0");
        msgs.extend([b'Z', 0, 0, 0, 5, b'I']);
        assert!(holds_ready(&msgs));
        for cut in 0..msgs.len() {
            assert!(!holds_ready(&msgs[..cut]), "{cut} bytes");
        }
    }

    #[test]
    fn command_tags_count_what_they_say() {
        assert_eq!(tag_count(b"UPDATE 3\0"), 3);
        assert_eq!(tag_count(b"INSERT 0 1\0"), 1);
        assert_eq!(tag_count(b"BEGIN\0"), 0);
        assert!(tag_returns_rows(b"SELECT 5\0"));
        assert!(!tag_returns_rows(b"DELETE 5\0"));
    }

    #[test]
    fn error_responses_keep_severity_message_and_kind() {
        let body = b"SERROR\0VERROR\0C23505\0Mduplicate key value\0\0";
        let e = server_err(body);
        assert_eq!(e.kind, "constraint");
        assert_eq!(e.message, "postgres: ERROR: duplicate key value");
    }

    #[test]
    fn data_rows_give_their_first_column() {
        let mut row = vec![0, 2];
        row.extend_from_slice(&3i32.to_be_bytes());
        row.extend_from_slice(b"123");
        row.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(first_column(&row).unwrap().as_deref(), Some("123"));
        let null = [0, 1, 0xFF, 0xFF, 0xFF, 0xFF];
        assert_eq!(first_column(&null).unwrap(), None);
    }
}
