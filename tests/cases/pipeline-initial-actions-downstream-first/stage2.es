in long X
out long Y

{ n = 100; !>Y(0); }
( X(x) { !>Y(x + n); } )*
