-- a schema with a mistake
CREATE TABLE t (a INT);
INSERT INTO t VALUES ('oops);
