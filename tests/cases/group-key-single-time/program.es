in time E group(E)
out long N

{ n = 0; }
( E() { n = n + 1; !>N(n); } )*
