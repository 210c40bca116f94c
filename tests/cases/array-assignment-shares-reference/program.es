in long Set
out long Seen

{ v = new long[2]; v[0] = 1; w = v; }
( Set(x) { v[0] = x; !>Seen(w[0]); } )*
