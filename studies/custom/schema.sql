-- Your schema, run by the `sql` step on every contender. This file is the portable one
-- (SQLite reads it); schema.mysql.sql and schema.postgres.sql beside it are read instead
-- on MariaDB/MySQL and PostgreSQL, because an id the engine assigns is written differently.
DROP TABLE IF EXISTS history;
DROP TABLE IF EXISTS accounts;
CREATE TABLE accounts (
  id INTEGER PRIMARY KEY,
  owner VARCHAR(40) NOT NULL,
  city VARCHAR(40),
  balance INTEGER NOT NULL
);
CREATE TABLE history (
  id INTEGER PRIMARY KEY,          -- SQLite assigns it when an INSERT leaves it out
  account_id INTEGER NOT NULL,
  delta INTEGER NOT NULL
);
CREATE INDEX history_account ON history (account_id);
