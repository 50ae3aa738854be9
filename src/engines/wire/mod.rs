//! The lean wire clients benchmark sessions drive: MySQL protocol (MariaDB and MySQL) and
//! PostgreSQL protocol, on blocking sockets (in clear or under TLS) with reusable buffers.

pub mod mysql;
pub mod pg;
pub mod recv_buf;
pub mod tcp;
pub mod tls;

/// How results name the client that served a contender's benchmark sessions.
pub const CLIENT: &str = "dbduel wire client";
