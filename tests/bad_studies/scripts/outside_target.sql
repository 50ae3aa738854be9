\set aid random(1, 10)
UPDATE accounts SET b = b + 1 WHERE id = :aid;
SELECT b FROM prod.accounts WHERE id = :aid;
