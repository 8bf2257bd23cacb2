-- Placeholder: version 5 belongs to another change of this release and
-- replaces this file when the branches meet.
SELECT 1;
