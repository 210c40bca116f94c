in long Count
out long Total

{ t = 0; }
( Count(c) { t = t + c; !>Total(t); } )*
