-- 0018: a device's row and its risk row keep room on their page for the versions their updates write.
-- Every batch updates the row of each device it decides (its counter, counts and last-seen time) and the
-- risk row of each device it scores; neither update changes an indexed column, so PostgreSQL can write the
-- new version on the same page without touching the indexes (a HOT update) whenever the page has room.
-- Pages filled to the brim by inserts had none: in ops/bench, 21-36% of these updates were HOT, and each
-- of the others added an entry to every index of its table (three for devices). With 30% of each page
-- kept free, 78-81% were (docs/SCALING.md, "0.9.7"). A catalog change, taken without blocking reads or
-- writes: pages written from now on keep the room; rows already stored move as they are rewritten
-- (docs/UPGRADING.md says how to rewrite them at once).
ALTER TABLE devices SET (fillfactor = 70);
ALTER TABLE device_risk SET (fillfactor = 70);
