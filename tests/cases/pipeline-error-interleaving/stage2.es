in long X
out long Y

( X(x) { !>Y(x * 10); } )*
