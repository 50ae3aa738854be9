SELECT SUM(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= {date:DATE}
  AND l_shipdate < {date:DATE_END}
  AND l_discount BETWEEN {DISC_LO} AND {DISC_HI}
  AND l_quantity < {QUANTITY}
