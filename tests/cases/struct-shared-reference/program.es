in double Move
out {double x; double y;} Where

{ p = {x: 0.0, y: 0.0}; q = p; }
( Move(d) { q.x = q.x + d; !>Where(p); } )*
