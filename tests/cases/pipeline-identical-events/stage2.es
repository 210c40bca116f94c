in long X group(X)
out long Y

{ n = 0; }
( X() { n = n + 1; !>Y(n); } )*
