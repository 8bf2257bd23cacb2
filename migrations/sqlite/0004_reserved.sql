-- ql3-edge schema, version 4 (SQLite): reserved for the scripts folder's
-- migration, which lands on another branch; this file keeps the numbering
-- without gaps until it does and is replaced by it at the merge.
SELECT 1;
