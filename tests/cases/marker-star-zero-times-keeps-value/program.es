in long A, {} B
out long Last

{ x = -1; }
( A(x)* B() { !>Last(x); } )*
