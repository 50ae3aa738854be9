-- One transfer: pgbench's language (see docs/scripts.md). :names are bind parameters.
\set src random(1, 200)
\set dst random(1, 200)
\set amount random(1, 100)
BEGIN;
UPDATE accounts SET balance = balance - :amount WHERE id = :src;
UPDATE accounts SET balance = balance + :amount WHERE id = :dst;
INSERT INTO history (account_id, delta) VALUES (:dst, :amount);
COMMIT;
