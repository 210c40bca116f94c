in double X
out {double x; double y;} Pt

( X(v) { !>Pt({y: v * 2.0, x: v}); } )*
