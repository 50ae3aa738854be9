-- A balance read, with its value kept in :bal by \gset.
\set id random(1, 200)
SELECT balance AS bal FROM accounts WHERE id = :id
\gset
