in double E group(E / 0.0)
out long N

{ n = 0; }
( E() { n = n + 1; !>N(n); } )*
