-- MariaDB and MySQL read this file (MariaDB looks for schema.mariadb.sql first).
DROP TABLE IF EXISTS history;
DROP TABLE IF EXISTS accounts;
CREATE TABLE accounts (
  id INTEGER PRIMARY KEY,
  owner VARCHAR(40) NOT NULL,
  city VARCHAR(40),
  balance INTEGER NOT NULL
);
CREATE TABLE history (
  id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY,
  account_id INTEGER NOT NULL,
  delta INTEGER NOT NULL,
  KEY history_account (account_id)
);
