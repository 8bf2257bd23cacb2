-- Placeholder: version 4 belongs to another change of this release and
-- replaces this file when the branches meet.
SELECT 1;
