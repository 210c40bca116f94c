in double Reading
out double Average

( Reading(x) { !>Average(x); } )*
