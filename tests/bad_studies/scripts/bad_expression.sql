\set aid random(1, 10) +* 2
