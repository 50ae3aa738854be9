CREATE TABLE t (k INT);
UPDATE t AS `x'\` SET k = k ; DROP TABLE prod.victim -- ` ';
