CREATE TABLE own (a INT);
UPDATE own, other.t SET own.a = 1;
