SELECT 1;
\frobnicate 3
