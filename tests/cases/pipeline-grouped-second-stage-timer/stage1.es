in {string room; double level;} Reading
out string High

( Reading(r) { r.level > 1.0 ? !>High(r.room); } )*
