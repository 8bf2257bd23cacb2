-- ql3 control-plane schema, version 13: reserved for another branch's
-- migration; this file keeps the numbering without gaps until it lands and
-- is replaced by it at the merge.
SELECT 1;
