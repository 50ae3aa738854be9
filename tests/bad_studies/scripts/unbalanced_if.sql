\set x 1
\if :x = 1
SELECT 1;
