-- The turn said just before a memory's first source turn, in that turn's session: search links
-- neighbouring memories through it. Looking it up for every candidate of every search took two
-- index probes per candidate (0.6-1.0 ms of a search at 100,000 memories, measured in
-- docs/benchmarks.md); a memory stores it once, when it is added.
--   NULL: not recorded (memories stored before this migration, or imported): search looks the
--         turn up as before, so nothing changes for them.
--   0:    the memory's first source turn has no earlier turn in its session, or it has none.
-- Adding a nullable column rewrites nothing, so this migration is instant at any size.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS previous_turn_id bigint;
