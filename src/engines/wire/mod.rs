//! The lean wire clients benchmark sessions drive: MySQL protocol (MariaDB and MySQL) and
//! PostgreSQL protocol, on blocking sockets with reusable buffers.

pub mod mysql;
pub mod pg;
pub mod recv_buf;
pub mod tcp;
