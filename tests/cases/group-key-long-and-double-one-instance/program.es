in long A group(double(A)), double B group(B)
out long N

{ n = 0; }
( ( A() | B() ) { n = n + 1; !>N(n); } )*
