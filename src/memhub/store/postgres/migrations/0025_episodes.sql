-- Episodes: every stored turn stays a memory of its own, and consolidation adds facts beside
-- them instead of removing them. What a memory is (kind "episode" or "fact") is read from the
-- role column: episodes have a speaker, facts none. Two kinds of older rows are made to read
-- the same way:
-- * memories stored before migration 0011 kept their role in metadata: copied to the column
--   (memhub owned that metadata key then, so no caller wrote it);
-- * turn memories written while an LLM was configured were labelled memory_type 'turn'; the
--   memory_type is the caller's now, so the label is cleared.
UPDATE memories SET role = metadata ->> 'role'
WHERE role IS NULL AND jsonb_typeof(metadata -> 'role') = 'string';
UPDATE memories SET memory_type = NULL WHERE memory_type = 'turn' AND role IS NOT NULL;
