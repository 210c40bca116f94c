in {double x; double y;}[] Poly
out double O

( Poly(p) { p[1].x = 9.0; s = 0.0; for (i: 0, 1) s = s + p[i].x + p[i].y; !>O(s); } )*
